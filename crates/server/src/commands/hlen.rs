//! HLEN key

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HLEN: CommandSpec = cmd(
    "hlen",
    2,
    &["readonly", "fast"],
    &["@read", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(doc("hash", "2.0.0", "Counts the fields of a hash.", "O(1)").args(&[arg("key", Key).key(0)]))
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let n = k.hash(&args[1])?.map_or(0, |h| h.len());
    Ok(Reply::Integer(n as i64))
}
