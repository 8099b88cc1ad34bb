//! HSTRLEN key field

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HSTRLEN: CommandSpec = cmd(
    "hstrlen",
    3,
    &["readonly", "fast"],
    &["@read", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc(
        "hash",
        "3.2.0",
        "Gives the length of a hash field's value.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("field", Str)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(h) = k.hash(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    let len = checked(h.get(k.keys(), &args[2]))?.map_or(0, |v| v.len());
    Ok(Reply::Integer(len as i64))
}
