//! STRLEN key

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const STRLEN: CommandSpec = cmd(
    "strlen",
    2,
    &["readonly", "fast"],
    &["@read", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc(
        "string",
        "2.2.0",
        "Returns the length in bytes of the string stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let len = k.get_string(&args[1])?.map_or(0, |r| r.value.len());
    Ok(Reply::Integer(len as i64))
}
