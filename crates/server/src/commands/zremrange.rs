//! ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max, ZREMRANGEBYLEX key min max
//!
//! The range is parsed before the key is looked at, as Redis does.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, ZRange, ZSetOp};

use super::zset_util::{lex_range, score_range};
use super::{At, Handler};
use crate::command_table::ArgType::{Double, Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const ZREMRANGEBYRANK: CommandSpec = cmd(
    "zremrangebyrank",
    4,
    &["write"],
    &["@write", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "delete"])])
.docs(
    doc(
        "sorted-set",
        "2.0.0",
        "Removes the members of a sorted set within a rank range.",
        "O(S+M) for M members removed from rank S.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("start", Integer),
        arg("stop", Integer),
    ]),
)
.handler(Handler::Write(run_rank));

pub const ZREMRANGEBYSCORE: CommandSpec = cmd(
    "zremrangebyscore",
    4,
    &["write"],
    &["@write", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "delete"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Removes the members of a sorted set within a score range.",
        "A seek, then O(M) for M members removed.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("min", Double),
        arg("max", Double),
    ]),
)
.handler(Handler::Write(run_score));

pub const ZREMRANGEBYLEX: CommandSpec = cmd(
    "zremrangebylex",
    4,
    &["write"],
    &["@write", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "delete"])])
.docs(
    doc(
        "sorted-set",
        "2.8.9",
        "Removes the members of a sorted set within a member range.",
        "O(S+M): the members before the range are walked, then the M removed.",
    )
    .args(&[arg("key", Key).key(0), arg("min", Str), arg("max", Str)]),
)
.handler(Handler::Write(run_lex));

fn op(at: At, args: &[Bytes], range: ZRange) -> Op {
    at.op(OpKind::ZSet(ZSetOp::RemRange {
        key: args[1].clone(),
        range,
    }))
}

pub fn run_rank(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let (start, stop) = (reply::int_arg(&args[2])?, reply::int_arg(&args[3])?);
    Ok(op(at, args, ZRange::Rank(start, stop)))
}

pub fn run_score(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let range = score_range(&args[2], &args[3])?;
    Ok(op(at, args, ZRange::Score(range)))
}

pub fn run_lex(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let range = lex_range(&args[2], &args[3])?;
    Ok(op(at, args, ZRange::Lex(range)))
}
