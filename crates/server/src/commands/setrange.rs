//! SETRANGE key offset value — zero-pads, keeps the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const SETRANGE: CommandSpec = cmd(
    "setrange",
    4,
    &["write", "denyoom"],
    &["@write", "@string", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "string",
        "2.2.0",
        "Overwrites part of a string value, starting at an offset.",
        "O(1) plus copying the new bytes: O(M) for M bytes written.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("offset", Integer),
        arg("value", Str),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let offset = reply::int_arg(&args[2])?;
    if offset < 0 {
        return Err(Reply::error("ERR offset is out of range"));
    }
    Ok(at.op(OpKind::SetRange {
        key: args[1].clone(),
        offset: offset as u64,
        patch: args[3].clone(),
    }))
}
