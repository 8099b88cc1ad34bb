//! SETEX key seconds value, PSETEX key milliseconds value: SET with an expiry.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, Set};

use super::util::{checked, expire_option};
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SETEX: CommandSpec = cmd(
    "setex",
    4,
    &["write", "denyoom"],
    &["@write", "@string", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["OW", "update"])])
.docs(
    doc(
        "string",
        "2.0.0",
        "Stores a string value at a key with a time to live in seconds.",
        "O(1)",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("seconds", Integer),
        arg("value", Str),
    ]),
)
.handler(Handler::Write(setex));

pub const PSETEX: CommandSpec = cmd(
    "psetex",
    4,
    &["write", "denyoom"],
    &["@write", "@string", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["OW", "update"])])
.docs(
    doc(
        "string",
        "2.6.0",
        "Stores a string value at a key with a time to live in milliseconds.",
        "O(1)",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("milliseconds", Integer),
        arg("value", Str),
    ]),
)
.handler(Handler::Write(psetex));

fn set_with(at: At, args: &[Bytes], seconds: bool, cmd: &str) -> CmdResult<Op> {
    let expire_at_ms = expire_option(&args[2], seconds, true, at.now_ms, cmd)?;
    checked(rialto_keyspace::check_key(&args[1]))?;
    checked(rialto_keyspace::check_value_len(args[3].len()))?;
    Ok(at.op(OpKind::Set(Set {
        key: args[1].clone(),
        value: args[3].clone(),
        expire_at_ms: Some(expire_at_ms),
        keep_ttl: false,
        cond: None,
        get: false,
    })))
}

/// SETEX
pub fn setex(at: At, args: &[Bytes]) -> CmdResult<Op> {
    set_with(at, args, true, "setex")
}

/// PSETEX
pub fn psetex(at: At, args: &[Bytes]) -> CmdResult<Op> {
    set_with(at, args, false, "psetex")
}
