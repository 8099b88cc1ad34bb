//! ZCOUNT key min max

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::zset_util::score_range;
use super::{Handler, R};
use crate::command_table::ArgType::{Double, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZCOUNT: CommandSpec = cmd(
    "zcount",
    4,
    &["readonly", "fast"],
    &["@read", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.0.0",
        "Counts the members of a sorted set within a score range.",
        "A seek, then O(M) for M members in the range.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("min", Double),
        arg("max", Double),
    ]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    // Redis's order: the range, then the key.
    let range = score_range(&args[2], &args[3])?;
    let Some(z) = k.zset(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    Ok(Reply::Integer(
        checked(z.count_score(k.keys(), &range))? as i64
    ))
}
