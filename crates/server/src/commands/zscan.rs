//! ZSCAN key cursor [MATCH pattern] [COUNT count]
//!
//! As HSCAN: a large set's members are ordered by their hash and the cursor is the hash to
//! resume from, so no state is kept between calls; a packed set is returned whole with
//! cursor 0. Scores are strings, as Redis sends them here whatever the protocol (a packed
//! set's integral ones as integers, as a listpack stores them).

use bytes::Bytes;
use rialto_resp::Reply;

use super::scan::{empty_page, parse_cursor, ScanOptions};
use super::util::checked;
use super::zset_util::{packed_score_text, score_text};
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key, Pattern};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZSCAN: CommandSpec = cmd(
    "zscan",
    -3,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.8.0",
        "Walks a sorted set's members and scores a page at a time with a cursor.",
        "O(COUNT) per call; O(N) over a whole iteration, for N members.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("cursor", Integer),
        arg("pattern", Pattern).token("MATCH").opt(),
        arg("count", Integer).token("COUNT").opt(),
    ]),
)
.handler(Handler::Read(run));

/// Most members one call reads, whatever COUNT says.
const MAX_PAGE: usize = 100_000;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let cursor = parse_cursor(&args[2]).ok_or_else(|| Reply::error("ERR invalid cursor"))?;
    let Some(z) = k.zset(&args[1])? else {
        return Ok(empty_page());
    };
    let o = ScanOptions::parse(args, 3, false)?;
    let (page, next) = checked(z.page(k.keys(), cursor, o.count.min(MAX_PAGE)))?;
    // A packed set's scores as a listpack holds them (integers where they can be).
    let text = if z.is_large() {
        score_text
    } else {
        packed_score_text
    };
    let mut out = Vec::with_capacity(page.len() * 2);
    for (m, s) in page {
        if o.matches(&m) {
            out.push(Reply::Bulk(m));
            out.push(Reply::Bulk(text(s)));
        }
    }
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(out),
    ]))
}
