//! ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES], and the
//! older forms it covers: ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX,
//! ZREVRANGE.
//!
//! One parser, Redis's `zrangeGenericCommand`: the options, their conflicts and the range are
//! checked before the key is looked at. A rank range on a large set walks the order keys from
//! its end (O(start + count)); a score range seeks to its first score.

use bytes::Bytes;
use rialto_keyspace::{LexRange, ScoreRange, ZRange};
use rialto_resp::Reply;

use super::util::{checked, is};
use super::zset_util::{lex_range, members_reply, score_range};
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Double, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const ZRANGE: CommandSpec = cmd(
    "zrange",
    -4,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Reads members of a sorted set by rank, score or member range.",
        "O(S+M) for M members returned, where S is the start rank of a rank range on a large set, or a seek for a score range.",
    )
    .history(&[("6.2.0", "The `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.")])
    .args(&[
        arg("key", Key).key(0),
        arg("start", Str),
        arg("stop", Str),
        arg("sortby", OneOf).since("6.2.0").opt().sub(&[
            arg("byscore", PureToken).token("BYSCORE"),
            arg("bylex", PureToken).token("BYLEX"),
        ]),
        arg("rev", PureToken).token("REV").since("6.2.0").opt(),
        arg("offset_count", Block).token("LIMIT").since("6.2.0").opt().sub(&[
            arg("offset", Integer),
            arg("count", Integer),
        ]),
        arg("withscores", PureToken).token("WITHSCORES").opt(),
    ]),
)
.handler(Handler::Read(run));

pub const ZRANGEBYSCORE: CommandSpec = cmd(
    "zrangebyscore",
    -4,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "1.0.5",
        "Reads the members of a sorted set within a score range.",
        "A seek to the lower score, then O(M) for M members read (offset included).",
    )
    .deprecated("6.2.0", "`ZRANGE` with its `BYSCORE` option")
    .history(&[("2.0.0", "The `WITHSCORES` option.")])
    .args(&[
        arg("key", Key).key(0),
        arg("min", Double),
        arg("max", Double),
        arg("withscores", PureToken)
            .token("WITHSCORES")
            .since("2.0.0")
            .opt(),
        arg("offset_count", Block)
            .token("LIMIT")
            .opt()
            .sub(&[arg("offset", Integer), arg("count", Integer)]),
    ]),
)
.handler(Handler::Read(run_byscore));

pub const ZREVRANGEBYSCORE: CommandSpec = cmd(
    "zrevrangebyscore",
    -4,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.2.0",
        "Reads the members of a sorted set within a score range, highest first.",
        "A seek to the upper score, then O(M) for M members read (offset included).",
    )
    .deprecated("6.2.0", "`ZRANGE` with its `BYSCORE` and `REV` options")
    .history(&[("2.1.6", "Exclusive `min` and `max` bounds.")])
    .args(&[
        arg("key", Key).key(0),
        arg("max", Double),
        arg("min", Double),
        arg("withscores", PureToken).token("WITHSCORES").opt(),
        arg("offset_count", Block)
            .token("LIMIT")
            .opt()
            .sub(&[arg("offset", Integer), arg("count", Integer)]),
    ]),
)
.handler(Handler::Read(run_revbyscore));

pub const ZRANGEBYLEX: CommandSpec = cmd(
    "zrangebylex",
    -4,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.8.9",
        "Reads the members of a sorted set within a member range, for members sharing one score.",
        "O(S+M): the members before the range are walked, then the M in it.",
    )
    .deprecated("6.2.0", "`ZRANGE` with its `BYLEX` option")
    .args(&[
        arg("key", Key).key(0),
        arg("min", Str),
        arg("max", Str),
        arg("offset_count", Block)
            .token("LIMIT")
            .opt()
            .sub(&[arg("offset", Integer), arg("count", Integer)]),
    ]),
)
.handler(Handler::Read(run_bylex));

pub const ZREVRANGEBYLEX: CommandSpec = cmd(
    "zrevrangebylex",
    -4,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.8.9",
        "Reads the members of a sorted set within a member range, last first, for members sharing one score.",
        "O(S+M): the members after the range are walked, then the M in it.",
    )
    .deprecated("6.2.0", "`ZRANGE` with its `BYLEX` and `REV` options")
    .args(&[
        arg("key", Key).key(0),
        arg("max", Str),
        arg("min", Str),
        arg("offset_count", Block).token("LIMIT").opt().sub(&[
            arg("offset", Integer),
            arg("count", Integer),
        ]),
    ]),
)
.handler(Handler::Read(run_revbylex));

pub const ZREVRANGE: CommandSpec = cmd(
    "zrevrange",
    -4,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Reads members of a sorted set by rank, highest score first.",
        "O(S+M) for M members from rank S on a large set.",
    )
    .deprecated("6.2.0", "`ZRANGE` with its `REV` option")
    .args(&[
        arg("key", Key).key(0),
        arg("start", Integer),
        arg("stop", Integer),
        arg("withscores", PureToken).token("WITHSCORES").opt(),
    ]),
)
.handler(Handler::Read(run_rev));

/// How a range is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Rank,
    Score,
    Lex,
}

/// A parsed range request.
#[derive(Debug, Clone)]
pub struct Request {
    pub by: Spec,
    pub rev: bool,
    /// LIMIT's offset and count (a negative count: no limit; a negative offset: nothing).
    pub limit: Option<(i64, i64)>,
    pub with_scores: bool,
}

/// The range itself.
#[derive(Debug, Clone)]
pub enum Spec {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// Parses `args[start..]` (`src min max [options]`) as Redis does for a command whose form
/// is fixed (`by`, `rev`) or open to the options (`None`); `store` refuses WITHSCORES
/// (ZRANGESTORE).
pub fn parse(
    args: &[Bytes],
    start: usize,
    by: Option<By>,
    rev: Option<bool>,
    store: bool,
) -> CmdResult<Request> {
    let (mut by_opt, mut rev_opt) = (by, rev);
    let (mut limit, mut with_scores) = (None, false);
    let mut j = start + 3;
    while j < args.len() {
        let a = &args[j];
        let left = args.len() - j - 1;
        if !store && is(a, "withscores") {
            with_scores = true;
        } else if is(a, "limit") && left >= 2 {
            let offset = reply::int_arg(&args[j + 1])?;
            let count = reply::int_arg(&args[j + 2])?;
            limit = Some((offset, count));
            j += 2;
        } else if rev_opt.is_none() && is(a, "rev") {
            rev_opt = Some(true);
        } else if by_opt.is_none() && is(a, "bylex") {
            by_opt = Some(By::Lex);
        } else if by_opt.is_none() && is(a, "byscore") {
            by_opt = Some(By::Score);
        } else {
            return Err(reply::syntax());
        }
        j += 1;
    }
    let by = by_opt.unwrap_or(By::Rank);
    let rev = rev_opt.unwrap_or(false);
    // Redis tells "no LIMIT" by a count of -1, so `LIMIT x -1` passes with a rank range.
    if limit.is_some_and(|(_, c)| c != -1) && by == By::Rank {
        return Err(Reply::error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && by == By::Lex {
        return Err(Reply::error(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (&args[start + 1], &args[start + 2]);
    if rev && by != By::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let spec = match by {
        By::Rank => Spec::Rank(reply::int_arg(lo)?, reply::int_arg(hi)?),
        By::Score => Spec::Score(score_range(lo, hi)?),
        By::Lex => Spec::Lex(lex_range(lo, hi)?),
    };
    Ok(Request {
        by: spec,
        rev,
        limit,
        with_scores,
    })
}

/// The members `req` selects from the sorted set at `key` (none if there is no key).
pub fn select(k: &mut R<'_, '_>, key: &[u8], req: &Request) -> CmdResult<Vec<(Bytes, f64)>> {
    let Some(z) = k.zset(key)? else {
        return Ok(Vec::new());
    };
    let range = match &req.by {
        Spec::Rank(a, b) => ZRange::Rank(*a, *b),
        Spec::Score(r) => ZRange::Score(*r),
        Spec::Lex(r) => ZRange::Lex(r.clone()),
    };
    checked(rialto_keyspace::zset_select(
        &z,
        k.keys(),
        &range,
        req.rev,
        req.limit,
    ))
}

fn range(k: &mut R<'_, '_>, args: &[Bytes], by: Option<By>, rev: Option<bool>) -> CmdResult {
    let req = parse(args, 1, by, rev, false)?;
    let items = select(k, &args[1], &req)?;
    Ok(members_reply(items, req.with_scores))
}

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(k, args, None, None)
}

pub fn run_byscore(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(k, args, Some(By::Score), Some(false))
}

pub fn run_revbyscore(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(k, args, Some(By::Score), Some(true))
}

pub fn run_bylex(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(k, args, Some(By::Lex), Some(false))
}

pub fn run_revbylex(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(k, args, Some(By::Lex), Some(true))
}

pub fn run_rev(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(k, args, Some(By::Rank), Some(true))
}
