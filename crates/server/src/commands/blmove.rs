//! BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout

use bytes::Bytes;
use rialto_resp::Reply;

use super::list_util::{side, timeout_ms};
use super::lmove::side_arg;
use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Double, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const BLMOVE: CommandSpec = cmd(
    "blmove",
    6,
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
        "6.2.0",
        "Pops an element from one end of a list and pushes it onto an end of another, waiting for one if the list is empty.",
        "O(1)",
    )
    .args(&[
        arg("source", Key).key(0),
        arg("destination", Key).key(1),
        side_arg("wherefrom"),
        side_arg("whereto"),
        arg("timeout", Double),
    ]),
)
.handler(Handler::Block(run));

/// BLMOVE and BRPOPLPUSH: `src`'s element onto `dst`, waiting up to `timeout`.
pub fn blocking_move(
    at: At,
    src: &Bytes,
    dst: &Bytes,
    ends: (bool, bool),
    timeout: &[u8],
) -> CmdResult<BlockingPop> {
    let timeout_ms = timeout_ms(timeout)?;
    Ok(BlockingPop {
        op: super::lmove::move_op(at, src, dst, ends.0, ends.1)?,
        keys: vec![src.clone()],
        timeout_ms,
        // Redis 7.0 answers a timed-out BLMOVE with a null array, not a null string.
        timed_out: Reply::NullArray,
        may_wait: true,
        in_script: None,
    })
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    let ends = (side(&args[3])?, side(&args[4])?);
    blocking_move(at, &args[1], &args[2], ends, &args[5])
}
