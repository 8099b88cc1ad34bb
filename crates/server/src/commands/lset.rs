//! LSET key index element

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LSET: CommandSpec = cmd(
    "lset",
    4,
    &["write", "denyoom"],
    &["@write", "@list", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "list",
        "1.0.0",
        "Replaces the element of a list at an index.",
        "O(1)",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("index", Integer),
        arg("element", Str),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::List(ListOp::Set {
        key: args[1].clone(),
        index: args[2].clone(),
        value: args[3].clone(),
    })))
}
