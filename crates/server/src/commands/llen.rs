//! LLEN key

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LLEN: CommandSpec = cmd(
    "llen",
    2,
    &["readonly", "fast"],
    &["@read", "@list", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc("list", "1.0.0", "Counts the elements of a list.", "O(1)").args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Integer(
        k.list(&args[1])?.map_or(0, |l| l.len()) as i64
    ))
}
