//! INCR, DECR, INCRBY, DECRBY key [delta] — keep the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const INCR: CommandSpec = cmd(
    "incr",
    2,
    &["write", "denyoom", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "string",
        "1.0.0",
        "Adds one to the integer stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Write(incr));

pub const DECR: CommandSpec = cmd(
    "decr",
    2,
    &["write", "denyoom", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "string",
        "1.0.0",
        "Subtracts one from the integer stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Write(decr));

pub const INCRBY: CommandSpec = cmd(
    "incrby",
    3,
    &["write", "denyoom", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "string",
        "1.0.0",
        "Adds an integer amount to the integer stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("increment", Integer)]),
)
.handler(Handler::Write(incrby));

pub const DECRBY: CommandSpec = cmd(
    "decrby",
    3,
    &["write", "denyoom", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "string",
        "1.0.0",
        "Subtracts an integer amount from the integer stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("decrement", Integer)]),
)
.handler(Handler::Write(decrby));

fn add(at: At, key: &Bytes, delta: i64) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(key))?;
    Ok(at.op(OpKind::IncrBy {
        key: key.clone(),
        delta,
    }))
}

/// INCR key
pub fn incr(at: At, args: &[Bytes]) -> CmdResult<Op> {
    add(at, &args[1], 1)
}

/// DECR key
pub fn decr(at: At, args: &[Bytes]) -> CmdResult<Op> {
    add(at, &args[1], -1)
}

/// INCRBY key delta
pub fn incrby(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let d = reply::int_arg(&args[2])?;
    add(at, &args[1], d)
}

/// DECRBY key delta
pub fn decrby(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let d = reply::int_arg(&args[2])?;
    if d == i64::MIN {
        return Err(Reply::error("ERR decrement would overflow"));
    }
    add(at, &args[1], -d)
}
