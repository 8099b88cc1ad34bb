//! MGET key [key ...]

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const MGET: CommandSpec = cmd(
    "mget",
    -2,
    &["readonly", "fast"],
    &["@read", "@string", "@fast"],
)
.keys(1, -1, 1)
.tips(&["request_policy:multi_shard"])
.key_specs(&[KeySpec::range(1, -1, 1, 0, &["RO", "access"])])
.docs(
    doc(
        "string",
        "1.0.0",
        "Returns the string values of several keys at once.",
        "O(N), N being the number of keys requested.",
    )
    .args(&[arg("key", Key).key(0).multi()]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let out = k
        .get_many(&args[1..])?
        .into_iter()
        // As Redis: a key of another kind reads as nil here, not as an error.
        .map(|rec| match rec {
            Some(rec) if rec.is_string() => Reply::Bulk(rec.value),
            _ => Reply::Null,
        })
        .collect();
    Ok(Reply::Array(out))
}
