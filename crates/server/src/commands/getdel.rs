//! GETDEL key

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const GETDEL: CommandSpec = cmd(
    "getdel",
    2,
    &["write", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "delete"])])
.docs(
    doc(
        "string",
        "6.2.0",
        "Returns the string value of a key and removes the key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::GetDel {
        key: args[1].clone(),
    }))
}
