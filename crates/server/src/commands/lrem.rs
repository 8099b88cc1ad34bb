//! LREM key count element

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::list_util::int;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LREM: CommandSpec = cmd("lrem", 4, &["write"], &["@write", "@list", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "delete"])])
    .docs(
        doc(
            "list",
            "1.0.0",
            "Removes occurrences of an element from a list: `count` from the head, from the tail when negative, all when 0.",
            "O(N) for a list of N elements.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("count", Integer),
            arg("element", Str),
        ]),
    )
    .handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::List(ListOp::Rem {
        key: args[1].clone(),
        count: int(&args[2])?,
        value: args[3].clone(),
    })))
}
