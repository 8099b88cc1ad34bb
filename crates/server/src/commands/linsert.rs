//! LINSERT key BEFORE|AFTER pivot element

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::util::is;
use super::{At, Handler};
use crate::command_table::ArgType::{Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const LINSERT: CommandSpec = cmd(
    "linsert",
    5,
    &["write", "denyoom"],
    &["@write", "@list", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "list",
        "2.2.0",
        "Inserts an element before or after the first occurrence of another in a list.",
        "O(N) for N elements read to find the pivot.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("where", OneOf).sub(&[
            arg("before", PureToken).token("BEFORE"),
            arg("after", PureToken).token("AFTER"),
        ]),
        arg("pivot", Str),
        arg("element", Str),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let before = if is(&args[2], "before") {
        true
    } else if is(&args[2], "after") {
        false
    } else {
        return Err(reply::syntax());
    };
    Ok(at.op(OpKind::List(ListOp::Insert {
        key: args[1].clone(),
        before,
        pivot: args[3].clone(),
        value: args[4].clone(),
    })))
}
