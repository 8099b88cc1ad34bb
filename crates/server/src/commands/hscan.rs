//! HSCAN key cursor [MATCH pattern] [COUNT count]
//!
//! A large hash's fields are ordered by their hash, and the cursor is the hash to resume
//! from: no state is kept between calls, and a field present for the whole scan is returned
//! exactly once. A packed hash (few, short fields) is returned whole with cursor 0, as Redis
//! returns a listpack.

use bytes::Bytes;
use rialto_resp::Reply;

use super::scan::{empty_page, parse_cursor, ScanOptions};
use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key, Pattern};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HSCAN: CommandSpec = cmd("hscan", -3, &["readonly"], &["@read", "@hash", "@slow"])
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output"])
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "hash",
            "2.8.0",
            "Walks a hash's fields and values a page at a time with a cursor.",
            "O(COUNT) per call; O(N) over a whole iteration, for N fields.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("cursor", Integer),
            arg("pattern", Pattern).token("MATCH").opt(),
            arg("count", Integer).token("COUNT").opt(),
        ]),
    )
    .handler(Handler::Read(run));

/// Most fields one call reads, whatever COUNT says.
const MAX_PAGE: usize = 100_000;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    // Redis's order: the cursor, then the key (missing: an empty page; another kind:
    // WRONGTYPE), then the options.
    let cursor = parse_cursor(&args[2]).ok_or_else(|| Reply::error("ERR invalid cursor"))?;
    let Some(h) = k.hash(&args[1])? else {
        return Ok(empty_page());
    };
    let o = ScanOptions::parse(args, 3, false)?;
    let (page, next) = checked(h.page(k.keys(), cursor, o.count.min(MAX_PAGE)))?;
    let mut out = Vec::with_capacity(page.len() * 2);
    for (f, v) in page {
        if o.matches(&f) {
            out.push(Reply::Bulk(f));
            out.push(Reply::Bulk(v));
        }
    }
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(out),
    ]))
}
