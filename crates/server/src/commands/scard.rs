//! SCARD key

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SCARD: CommandSpec = cmd(
    "scard",
    2,
    &["readonly", "fast"],
    &["@read", "@set", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(doc("set", "1.0.0", "Counts the members of a set.", "O(1)").args(&[arg("key", Key).key(0)]))
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Integer(match k.set(&args[1])? {
        Some(s) => s.len() as i64,
        None => 0,
    }))
}
