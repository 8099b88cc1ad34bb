//! GET key

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const GET: CommandSpec = cmd(
    "get",
    2,
    &["readonly", "fast"],
    &["@read", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "string",
        "1.0.0",
        "Returns the string value stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(match k.get_string(&args[1])? {
        Some(rec) => Reply::Bulk(rec.value),
        None => Reply::Null,
    })
}
