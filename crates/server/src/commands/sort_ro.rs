//! SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
//!
//! SORT without STORE (which is a syntax error here), flagged a read.

use bytes::Bytes;

use super::sort::{parse, reply_of, sort_args, Bad, Refuse, PATTERN_KEYS};
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, Pattern, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeyRef, KeySpec};
use crate::reply::CmdResult;

pub const SORT_RO: CommandSpec = cmd(
    "sort_ro",
    -2,
    &["readonly", "movablekeys"],
    &[
        "@read",
        "@set",
        "@sortedset",
        "@list",
        "@slow",
        "@dangerous",
    ],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"]), PATTERN_KEYS])
.docs(
    doc(
        "generic",
        "7.0.0",
        "SORT without STORE, a read that replicas and read-only scripts may run.",
        "As SORT's.",
    )
    .args(sort_args!()),
)
.getkeys(keys)
.handler(Handler::Read(run));

/// The key sorted: the keys its patterns name are known only from its content.
fn keys(_: &[Bytes]) -> Vec<KeyRef> {
    vec![KeyRef {
        pos: 1,
        flags: &["RO", "access"],
    }]
}

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let p = parse(args, true, Refuse::default()).map_err(Bad::reply)?;
    reply_of(k, &p.sort)
}
