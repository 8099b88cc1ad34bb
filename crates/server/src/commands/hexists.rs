//! HEXISTS key field

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HEXISTS: CommandSpec = cmd(
    "hexists",
    3,
    &["readonly", "fast"],
    &["@read", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc("hash", "2.0.0", "Tells whether a hash has a field.", "O(1)")
        .args(&[arg("key", Key).key(0), arg("field", Str)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(h) = k.hash(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    let found = checked(h.get(k.keys(), &args[2]))?.is_some();
    Ok(Reply::Integer(i64::from(found)))
}
