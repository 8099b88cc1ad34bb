//! ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
//!
//! ZRANGE's parser (WITHSCORES refused); the selection is read and stored in one op.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, ZRange, ZSetOp};

use super::util::checked;
use super::zrange::{parse, Spec};
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZRANGESTORE: CommandSpec = cmd(
    "zrangestore",
    -5,
    &["write", "denyoom"],
    &["@write", "@sortedset", "@slow"],
)
.keys(1, 2, 1)
.key_specs(&[
    KeySpec::single(1, &["OW", "update"]),
    KeySpec::single(2, &["RO", "access"]),
])
.docs(
    doc(
        "sorted-set",
        "6.2.0",
        "Stores a range of a sorted set's members, by rank, score or member, in another key.",
        "As ZRANGE for the range read, plus O(M) writes for M members stored.",
    )
    .args(&[
        arg("dst", Key).key(0),
        arg("src", Key).key(1),
        arg("min", Str),
        arg("max", Str),
        arg("sortby", OneOf).opt().sub(&[
            arg("byscore", PureToken).token("BYSCORE"),
            arg("bylex", PureToken).token("BYLEX"),
        ]),
        arg("rev", PureToken).token("REV").opt(),
        arg("offset_count", Block)
            .token("LIMIT")
            .opt()
            .sub(&[arg("offset", Integer), arg("count", Integer)]),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let req = parse(args, 2, None, None, true)?;
    checked(rialto_keyspace::check_key(&args[1]))?;
    let range = match req.by {
        Spec::Rank(a, b) => ZRange::Rank(a, b),
        Spec::Score(r) => ZRange::Score(r),
        Spec::Lex(r) => ZRange::Lex(r),
    };
    Ok(at.op(OpKind::ZSet(ZSetOp::RangeStore {
        dst: args[1].clone(),
        src: args[2].clone(),
        range,
        rev: req.rev,
        limit: req.limit,
    })))
}
