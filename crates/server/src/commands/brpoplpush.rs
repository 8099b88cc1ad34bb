//! BRPOPLPUSH source destination timeout

use bytes::Bytes;

use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Double, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const BRPOPLPUSH: CommandSpec = cmd(
    "brpoplpush",
    4,
    &["write", "denyoom", "noscript", "blocking"],
    &["@write", "@list", "@slow", "@blocking"],
)
.keys(1, 2, 1)
.key_specs(&[
    KeySpec::single(1, &["RW", "access", "delete"]),
    KeySpec::single(2, &["RW", "insert"]),
])
.docs(
    doc(
        "list",
        "2.2.0",
        "Pops the last element of a list and pushes it onto the head of another, waiting for one if the list is empty.",
        "O(1)",
    )
    .history(&[("6.0.0", "`timeout` is a float, not an integer.")])
    .deprecated("6.2.0", "`BLMOVE` with the `RIGHT` and `LEFT` arguments")
    .args(&[
        arg("source", Key).key(0),
        arg("destination", Key).key(1),
        arg("timeout", Double),
    ]),
)
.handler(Handler::Block(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    super::blmove::blocking_move(at, &args[1], &args[2], (false, true), &args[3])
}
