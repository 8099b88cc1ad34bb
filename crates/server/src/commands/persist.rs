//! PERSIST key

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const PERSIST: CommandSpec = cmd(
    "persist",
    2,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "generic",
        "2.2.0",
        "Clears the expiry of a key so that it is kept until deleted.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Persist {
        key: args[1].clone(),
    }))
}
