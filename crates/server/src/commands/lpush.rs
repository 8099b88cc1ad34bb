//! LPUSH key element [element ...], RPUSH key element [element ...]

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LPUSH: CommandSpec = cmd(
    "lpush",
    -3,
    &["write", "denyoom", "fast"],
    &["@write", "@list", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "list",
        "1.0.0",
        "Prepends elements to a list, creating it if needed.",
        "O(1) per element.",
    )
    .history(&[("2.4.0", "Accepts multiple `element` arguments.")])
    .args(&[arg("key", Key).key(0), arg("element", Str).multi()]),
)
.handler(Handler::Write(run_left));

pub const RPUSH: CommandSpec = cmd(
    "rpush",
    -3,
    &["write", "denyoom", "fast"],
    &["@write", "@list", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "list",
        "1.0.0",
        "Appends elements to a list, creating it if needed.",
        "O(1) per element.",
    )
    .history(&[("2.4.0", "Accepts multiple `element` arguments.")])
    .args(&[arg("key", Key).key(0), arg("element", Str).multi()]),
)
.handler(Handler::Write(run_right));

/// The push op of LPUSH, RPUSH and their X forms.
pub fn push(at: At, args: &[Bytes], left: bool, existing: bool) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::List(ListOp::Push {
        key: args[1].clone(),
        left,
        existing,
        items: args[2..].to_vec(),
    })))
}

pub fn run_left(at: At, args: &[Bytes]) -> CmdResult<Op> {
    push(at, args, true, false)
}

pub fn run_right(at: At, args: &[Bytes]) -> CmdResult<Op> {
    push(at, args, false, false)
}
