//! SETNX key value

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SETNX: CommandSpec = cmd(
    "setnx",
    3,
    &["write", "denyoom", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["OW", "insert"])])
.docs(
    doc(
        "string",
        "1.0.0",
        "Stores a string value at a key only when the key is absent.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("value", Str)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::SetNx {
        key: args[1].clone(),
        value: args[2].clone(),
    }))
}
