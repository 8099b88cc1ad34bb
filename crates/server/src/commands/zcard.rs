//! ZCARD key

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZCARD: CommandSpec = cmd(
    "zcard",
    2,
    &["readonly", "fast"],
    &["@read", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Counts the members of a sorted set.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Integer(
        k.zset(&args[1])?.map_or(0, |z| z.len()) as i64
    ))
}
