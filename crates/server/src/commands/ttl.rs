//! TTL, PTTL, EXPIRETIME, PEXPIRETIME key: -2 missing, -1 no expiry.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const EXPIRETIME: CommandSpec = cmd(
    "expiretime",
    2,
    &["readonly", "fast"],
    &["@keyspace", "@read", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "generic",
        "7.0.0",
        "Returns when a key expires, as a Unix time in seconds.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(expiretime));

pub const PEXPIRETIME: CommandSpec = cmd(
    "pexpiretime",
    2,
    &["readonly", "fast"],
    &["@keyspace", "@read", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "generic",
        "7.0.0",
        "Returns when a key expires, as a Unix time in milliseconds.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(pexpiretime));

pub const TTL: CommandSpec = cmd(
    "ttl",
    2,
    &["readonly", "fast"],
    &["@keyspace", "@read", "@fast"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Returns the remaining time to live of a key, in seconds.",
        "O(1)",
    )
    .history(&[("2.8.0", "Replies -2 when the key does not exist.")])
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(ttl));

pub const PTTL: CommandSpec = cmd(
    "pttl",
    2,
    &["readonly", "fast"],
    &["@keyspace", "@read", "@fast"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "generic",
        "2.6.0",
        "Returns the remaining time to live of a key, in milliseconds.",
        "O(1)",
    )
    .history(&[("2.8.0", "Replies -2 when the key does not exist.")])
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(pttl));

fn expiry(k: &mut R<'_, '_>, key: &[u8]) -> CmdResult<Result<i64, i64>> {
    Ok(match k.get(key)? {
        None => Err(-2),
        Some(rec) => rec.expire_at_ms.ok_or(-1),
    })
}

/// TTL key: seconds left, rounded to nearest.
pub fn ttl(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let now = k.now_ms();
    Ok(Reply::Integer(match expiry(k, &args[1])? {
        Ok(at) => ((at - now).max(0) + 500) / 1000,
        Err(code) => code,
    }))
}

/// PTTL key: milliseconds left.
pub fn pttl(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let now = k.now_ms();
    Ok(Reply::Integer(match expiry(k, &args[1])? {
        Ok(at) => (at - now).max(0),
        Err(code) => code,
    }))
}

/// EXPIRETIME key: absolute Unix seconds, rounded to nearest as Redis does.
pub fn expiretime(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Integer(match expiry(k, &args[1])? {
        Ok(at) => at.saturating_add(500) / 1000,
        Err(code) => code,
    }))
}

/// PEXPIRETIME key: absolute Unix milliseconds.
pub fn pexpiretime(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Integer(expiry(k, &args[1])?.unwrap_or_else(|c| c)))
}
