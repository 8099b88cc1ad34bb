//! ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, ZAddFlags, ZSetOp};
use rialto_resp::Reply;

use super::util::{checked, is};
use super::zset_util::score_arg;
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Double, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const ZADD: CommandSpec = cmd(
    "zadd",
    -4,
    &["write", "denyoom", "fast"],
    &["@write", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Adds members with scores to a sorted set, or changes their scores.",
        "O(log(N)) per member added or moved on a packed set of N members; on a large one, a few point reads and writes per member.",
    )
    .history(&[("2.4.0", "Accepts several score and member pairs."), ("3.0.2", "The `XX`, `NX`, `CH` and `INCR` options."), ("6.2.0", "The `GT` and `LT` options.")])
    .args(&[
        arg("key", Key).key(0),
        arg("condition", OneOf).since("3.0.2").opt().sub(&[
            arg("nx", PureToken).token("NX"),
            arg("xx", PureToken).token("XX"),
        ]),
        arg("comparison", OneOf).since("6.2.0").opt().sub(&[
            arg("gt", PureToken).token("GT"),
            arg("lt", PureToken).token("LT"),
        ]),
        arg("change", PureToken).token("CH").since("3.0.2").opt(),
        arg("increment", PureToken).token("INCR").since("3.0.2").opt(),
        arg("score_member", Block).multi().sub(&[
            arg("score", Double),
            arg("member", Str),
        ]),
    ]),
)
.handler(Handler::Write(run));

/// ZADD's request from `args[2..]` on, as Redis reads it: options first (any order, any
/// repeats), then score and member pairs; the options' conflicts and every score are checked
/// before the key is looked at. ZINCRBY is this with `incr` set.
pub fn parse(args: &[Bytes], incr: bool) -> CmdResult<Op> {
    let mut f = ZAddFlags {
        incr,
        ..ZAddFlags::default()
    };
    let mut i = 2;
    while let Some(a) = args.get(i) {
        match () {
            _ if is(a, "nx") => f.nx = true,
            _ if is(a, "xx") => f.xx = true,
            _ if is(a, "ch") => f.ch = true,
            _ if is(a, "incr") => f.incr = true,
            _ if is(a, "gt") => f.gt = true,
            _ if is(a, "lt") => f.lt = true,
            _ => break,
        }
        i += 1;
    }
    let rest = &args[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(reply::syntax());
    }
    if f.nx && f.xx {
        return Err(Reply::error(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if ((f.gt || f.lt) && f.nx) || (f.gt && f.lt) {
        return Err(Reply::error(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && rest.len() > 2 {
        return Err(Reply::error(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let mut items = Vec::with_capacity(rest.len() / 2);
    for pair in rest.chunks_exact(2) {
        items.push((score_arg(&pair[0])?, pair[1].clone()));
    }
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(Op::new(
        0,
        0,
        OpKind::ZSet(ZSetOp::Add {
            key: args[1].clone(),
            flags: f,
            items,
        }),
    ))
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let op = parse(args, false)?;
    Ok(at.op(op.kind))
}
