//! XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]

use bytes::Bytes;
use rialto_keyspace::{OpKind, StreamOp};
use rialto_resp::Reply;

use super::stream_util::range_start;
use super::util::is;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const XAUTOCLAIM: CommandSpec = cmd(
    "xautoclaim",
    -6,
    &["write", "fast"],
    &["@write", "@stream", "@fast"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RW", "delete"])])
.docs(
    doc(
        "stream",
        "6.2.0",
        "Gives pending entries idle for long enough to another consumer, scanning the group's pending entries from an id; drops those whose entry was deleted.",
        "O(1) per entry examined, at most ten times COUNT.",
    )
    .history(&[("7.0.0", "A third reply element: the ids of deleted entries dropped from the pending entries.")])
    .args(&[
        arg("key", Key).key(0),
        arg("group", Str),
        arg("consumer", Str),
        arg("min-idle-time", Str),
        arg("start", Str),
        arg("count", Integer).token("COUNT").opt(),
        arg("justid", PureToken).token("JUSTID").opt(),
    ]),
)
.handler(Handler::Write(run));

/// Most COUNT Redis accepts (`LONG_MAX` over 16).
const MAX_COUNT: i64 = i64::MAX / 16;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let min_idle = reply::parse_i64(&args[4])
        .ok_or_else(|| Reply::error("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = range_start(&args[5])?;
    let (mut count, mut justid) = (100, false);
    let mut j = 6;
    while j < args.len() {
        let more = j + 1 < args.len();
        if is(&args[j], "count") && more {
            count = reply::parse_i64(&args[j + 1])
                .filter(|n| (1..=MAX_COUNT).contains(n))
                .ok_or_else(|| Reply::error("ERR COUNT must be > 0"))?;
            j += 1;
        } else if is(&args[j], "justid") {
            justid = true;
        } else {
            return Err(reply::syntax());
        }
        j += 1;
    }
    Ok(at.op(OpKind::Stream(StreamOp::AutoClaim {
        key: args[1].clone(),
        group: args[2].clone(),
        consumer: args[3].clone(),
        min_idle: min_idle as u64,
        start,
        count: count as u64,
        justid,
    })))
}
