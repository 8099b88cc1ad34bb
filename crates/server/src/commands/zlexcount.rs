//! ZLEXCOUNT key min max

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::zset_util::lex_range;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZLEXCOUNT: CommandSpec = cmd(
    "zlexcount",
    4,
    &["readonly", "fast"],
    &["@read", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "2.8.9",
        "Counts the members of a sorted set within a member range.",
        "O(S+M): the members before the range are walked, then the M in it.",
    )
    .args(&[arg("key", Key).key(0), arg("min", Str), arg("max", Str)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let range = lex_range(&args[2], &args[3])?;
    let Some(z) = k.zset(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    Ok(Reply::Integer(
        checked(z.count_lex(k.keys(), &range))? as i64
    ))
}
