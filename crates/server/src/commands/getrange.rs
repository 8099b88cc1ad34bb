//! GETRANGE key start end — inclusive, negative indexes count from the end (Redis 7 rules).

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const GETRANGE: CommandSpec = cmd("getrange", 4, &["readonly"], &["@read", "@string", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "string",
            "2.4.0",
            "Returns the part of a string value between two offsets.",
            "O(N), N being the length of the returned part, so effectively O(1) for short ranges.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("start", Integer),
            arg("end", Integer),
        ]),
    )
    .handler(Handler::Read(run));

pub const SUBSTR: CommandSpec = cmd("substr", 4, &["readonly"], &["@read", "@string", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Returns the part of a string value between two offsets (the old name of GETRANGE).",
            "O(N), N being the length of the returned part, so effectively O(1) for short ranges.",
        )
        .deprecated("2.0.0", "`GETRANGE`")
        .args(&[
            arg("key", Key).key(0),
            arg("start", Integer),
            arg("end", Integer),
        ]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut start = reply::int_arg(&args[2])?;
    let mut end = reply::int_arg(&args[3])?;
    let Some(rec) = k.get_string(&args[1])? else {
        return Ok(Reply::Bulk(Bytes::new()));
    };
    let len = rec.value.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    Ok(Reply::Bulk(rec.value.slice(start as usize..=end as usize)))
}
