//! ZMSCORE key member [member ...]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZMSCORE: CommandSpec = cmd(
    "zmscore",
    -3,
    &["readonly", "fast"],
    &["@read", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "6.2.0",
        "Reads the scores of several members of a sorted set.",
        "O(M) for M members.",
    )
    .args(&[arg("key", Key).key(0), arg("member", Str).multi()]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let members = &args[2..];
    let Some(z) = k.zset(&args[1])? else {
        return Ok(Reply::Array(vec![Reply::Null; members.len()]));
    };
    let mut out = Vec::with_capacity(members.len());
    for m in members {
        out.push(match checked(z.score(k.keys(), m))? {
            Some(s) => Reply::Double(s),
            None => Reply::Null,
        });
    }
    Ok(Reply::Array(out))
}
