//! ZINCRBY key increment member
//!
//! ZADD with INCR, as Redis runs it: the increment's position is read for ZADD's options too
//! (`ZINCRBY key nx member` is a syntax error there as here).

use bytes::Bytes;
use rialto_keyspace::Op;

use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZINCRBY: CommandSpec = cmd(
    "zincrby",
    4,
    &["write", "denyoom", "fast"],
    &["@write", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Adds to the score of one member of a sorted set.",
        "O(log(N)) on a packed set of N members; a few point reads and writes on a large one.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("increment", Integer),
        arg("member", Str),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let op = super::zadd::parse(args, true)?;
    Ok(at.op(op.kind))
}
