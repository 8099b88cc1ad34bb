//! HMGET key field [field ...]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HMGET: CommandSpec = cmd(
    "hmget",
    -3,
    &["readonly", "fast"],
    &["@read", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "hash",
        "2.0.0",
        "Reads several fields of a hash at once.",
        "O(N) for N fields named.",
    )
    .args(&[arg("key", Key).key(0), arg("field", Str).multi()]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(h) = k.hash(&args[1])? else {
        return Ok(Reply::Array(vec![Reply::Null; args.len() - 2]));
    };
    let mut out = Vec::with_capacity(args.len() - 2);
    for f in &args[2..] {
        out.push(match checked(h.get(k.keys(), f))? {
            Some(v) => Reply::Bulk(v),
            None => Reply::Null,
        });
    }
    Ok(Reply::Array(out))
}
