//! LPUSHX key element [element ...], RPUSHX key element [element ...]

use bytes::Bytes;
use rialto_keyspace::Op;

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LPUSHX: CommandSpec = cmd(
    "lpushx",
    -3,
    &["write", "denyoom", "fast"],
    &["@write", "@list", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "list",
        "2.2.0",
        "Prepends elements to a list only when the list exists.",
        "O(1) per element.",
    )
    .history(&[("4.0.0", "Accepts multiple `element` arguments.")])
    .args(&[arg("key", Key).key(0), arg("element", Str).multi()]),
)
.handler(Handler::Write(run_left));

pub const RPUSHX: CommandSpec = cmd(
    "rpushx",
    -3,
    &["write", "denyoom", "fast"],
    &["@write", "@list", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "list",
        "2.2.0",
        "Appends elements to a list only when the list exists.",
        "O(1) per element.",
    )
    .history(&[("4.0.0", "Accepts multiple `element` arguments.")])
    .args(&[arg("key", Key).key(0), arg("element", Str).multi()]),
)
.handler(Handler::Write(run_right));

pub fn run_left(at: At, args: &[Bytes]) -> CmdResult<Op> {
    super::lpush::push(at, args, true, true)
}

pub fn run_right(at: At, args: &[Bytes]) -> CmdResult<Op> {
    super::lpush::push(at, args, false, true)
}
