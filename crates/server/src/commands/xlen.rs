//! XLEN key

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const XLEN: CommandSpec = cmd(
    "xlen",
    2,
    &["readonly", "fast"],
    &["@read", "@stream", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Gives how many entries a stream holds.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(run));

fn run(r: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let s = checked(rialto_keyspace::Stream::load(r.keys(), &args[1]))?;
    Ok(Reply::Integer(s.map_or(0, |s| s.len() as i64)))
}
