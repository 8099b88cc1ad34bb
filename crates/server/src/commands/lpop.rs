//! LPOP key [count], RPOP key [count]

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::list_util::pop_count;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const LPOP: CommandSpec = cmd(
    "lpop",
    -2,
    &["write", "fast"],
    &["@write", "@list", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "delete"])])
.docs(
    doc(
        "list",
        "1.0.0",
        "Removes and returns the first elements of a list.",
        "O(N) for N elements popped.",
    )
    .history(&[("6.2.0", "Added the `count` argument.")])
    .args(&[
        arg("key", Key).key(0),
        arg("count", Integer).since("6.2.0").opt(),
    ]),
)
.handler(Handler::Write(run_left));

pub const RPOP: CommandSpec = cmd(
    "rpop",
    -2,
    &["write", "fast"],
    &["@write", "@list", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "delete"])])
.docs(
    doc(
        "list",
        "1.0.0",
        "Removes and returns the last elements of a list.",
        "O(N) for N elements popped.",
    )
    .history(&[("6.2.0", "Added the `count` argument.")])
    .args(&[
        arg("key", Key).key(0),
        arg("count", Integer).since("6.2.0").opt(),
    ]),
)
.handler(Handler::Write(run_right));

fn pop(at: At, args: &[Bytes], left: bool) -> CmdResult<Op> {
    if args.len() > 3 {
        return Err(reply::wrong_arity(if left { "lpop" } else { "rpop" }));
    }
    Ok(at.op(OpKind::List(ListOp::Pop {
        key: args[1].clone(),
        left,
        count: pop_count(args.get(2))?,
    })))
}

pub fn run_left(at: At, args: &[Bytes]) -> CmdResult<Op> {
    pop(at, args, true)
}

pub fn run_right(at: At, args: &[Bytes]) -> CmdResult<Op> {
    pop(at, args, false)
}
