//! ZRANK key member, ZREVRANK key member
//!
//! On a large set the rank is counted by walking the order keys up to the member: O(rank).

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZRANK: CommandSpec = cmd(
    "zrank",
    3,
    &["readonly", "fast"],
    &["@read", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.0.0",
        "The rank of a member of a sorted set, lowest score first.",
        "O(R) on a large set, for a member of rank R; O(N) on a packed one.",
    )
    .args(&[arg("key", Key).key(0), arg("member", Str)]),
)
.handler(Handler::Read(run_rank));

pub const ZREVRANK: CommandSpec = cmd(
    "zrevrank",
    3,
    &["readonly", "fast"],
    &["@read", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.0.0",
        "The rank of a member of a sorted set, highest score first.",
        "O(R) on a large set, for a member of rank R; O(N) on a packed one.",
    )
    .args(&[arg("key", Key).key(0), arg("member", Str)]),
)
.handler(Handler::Read(run_revrank));

fn rank(k: &mut R<'_, '_>, args: &[Bytes], rev: bool) -> CmdResult {
    let Some(z) = k.zset(&args[1])? else {
        return Ok(Reply::Null);
    };
    Ok(match checked(z.rank(k.keys(), &args[2], rev))? {
        Some(r) => Reply::Integer(r as i64),
        None => Reply::Null,
    })
}

pub fn run_rank(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    rank(k, args, false)
}

pub fn run_revrank(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    rank(k, args, true)
}
