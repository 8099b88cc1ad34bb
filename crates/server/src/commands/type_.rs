//! TYPE key — every Rialto value is a string.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const TYPE: CommandSpec = cmd(
    "type",
    2,
    &["readonly", "fast"],
    &["@keyspace", "@read", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Returns the type of the value stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::simple(match k.get(&args[1])? {
        Some(rec) => rec.kind.name(),
        None => "none",
    }))
}
