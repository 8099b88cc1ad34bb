//! GETSET key value — sets and returns the old value; the TTL is dropped (SET key value GET).

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, Set};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const GETSET: CommandSpec = cmd(
    "getset",
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
        "Stores a new string value at a key and returns the value it replaced.",
        "O(1)",
    )
    .deprecated("6.2.0", "`SET` with its `GET` option")
    .args(&[arg("key", Key).key(0), arg("value", Str)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Set(Set {
        key: args[1].clone(),
        value: args[2].clone(),
        expire_at_ms: None,
        keep_ttl: false,
        cond: None,
        get: true,
    })))
}
