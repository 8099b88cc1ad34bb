//! XRANGE key start end [COUNT count] and XREVRANGE key end start [COUNT count]

use bytes::Bytes;
use rialto_keyspace::Stream;
use rialto_resp::Reply;

use super::stream_util::{entry_reply, range_end, range_start};
use super::util::{checked, is};
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const XRANGE: CommandSpec = cmd("xrange", -4, &["readonly"], &["@read", "@stream", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "stream",
            "5.0.0",
            "Gives a stream's entries within a range of ids, oldest first.",
            "O(N) for N entries returned.",
        )
        .history(&[("6.2.0", "Exclusive ranges.")])
        .args(&[
            arg("key", Key).key(0),
            arg("start", Str),
            arg("end", Str),
            arg("count", Integer).token("COUNT").opt(),
        ]),
    )
    .handler(Handler::Read(xrange));

pub const XREVRANGE: CommandSpec = cmd(
    "xrevrange",
    -4,
    &["readonly"],
    &["@read", "@stream", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Gives a stream's entries within a range of ids, newest first.",
        "O(N) for N entries returned.",
    )
    .history(&[("6.2.0", "Exclusive ranges.")])
    .args(&[
        arg("key", Key).key(0),
        arg("end", Str),
        arg("start", Str),
        arg("count", Integer).token("COUNT").opt(),
    ]),
)
.handler(Handler::Read(xrevrange));

fn xrange(r: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(r, args, false)
}

fn xrevrange(r: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    range(r, args, true)
}

fn range(r: &mut R<'_, '_>, args: &[Bytes], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let start = range_start(start_arg)?;
    let end = range_end(end_arg)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            count = reply::int_arg(&args[j + 1])?.max(0);
            j += 2;
        } else {
            return Err(reply::syntax());
        }
    }
    let Some(s) = checked(Stream::load(r.keys(), &args[1]))? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if count == 0 {
        return Ok(Reply::NullArray);
    }
    let n = if count < 0 { 0 } else { count as u64 };
    let entries = checked(s.range(r.keys(), start, end, n, rev))?;
    Ok(Reply::Array(entries.into_iter().map(entry_reply).collect()))
}
