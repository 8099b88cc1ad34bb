//! RPOPLPUSH source destination

use bytes::Bytes;
use rialto_keyspace::Op;

use super::{At, Handler};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const RPOPLPUSH: CommandSpec = cmd(
    "rpoplpush",
    3,
    &["write", "denyoom"],
    &["@write", "@list", "@slow"],
)
.keys(1, 2, 1)
.key_specs(&[
    KeySpec::single(1, &["RW", "access", "delete"]),
    KeySpec::single(2, &["RW", "insert"]),
])
.docs(
    doc(
        "list",
        "1.2.0",
        "Pops the last element of a list and pushes it onto the head of another.",
        "O(1)",
    )
    .deprecated("6.2.0", "`LMOVE` with the `RIGHT` and `LEFT` arguments")
    .args(&[arg("source", Key).key(0), arg("destination", Key).key(1)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    super::lmove::move_op(at, &args[1], &args[2], false, true)
}
