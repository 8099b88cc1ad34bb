//! ZSCORE key member

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZSCORE: CommandSpec = cmd(
    "zscore",
    3,
    &["readonly", "fast"],
    &["@read", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Reads the score of one member of a sorted set.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("member", Str)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(z) = k.zset(&args[1])? else {
        return Ok(Reply::Null);
    };
    Ok(match checked(z.score(k.keys(), &args[2]))? {
        Some(s) => Reply::Double(s),
        None => Reply::Null,
    })
}
