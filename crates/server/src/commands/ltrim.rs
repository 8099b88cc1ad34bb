//! LTRIM key start stop

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::list_util::int;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LTRIM: CommandSpec = cmd("ltrim", 4, &["write"], &["@write", "@list", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "delete"])])
    .docs(
        doc(
            "list",
            "1.0.0",
            "Keeps only a range of elements of a list, deleting it when the range is empty.",
            "O(N) for N elements removed.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("start", Integer),
            arg("stop", Integer),
        ]),
    )
    .handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::List(ListOp::Trim {
        key: args[1].clone(),
        start: int(&args[2])?,
        stop: int(&args[3])?,
    })))
}
