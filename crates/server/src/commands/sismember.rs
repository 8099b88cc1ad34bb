//! SISMEMBER key member

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SISMEMBER: CommandSpec = cmd(
    "sismember",
    3,
    &["readonly", "fast"],
    &["@read", "@set", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO"])])
.docs(
    doc("set", "1.0.0", "Tells whether a set has a member.", "O(1)")
        .args(&[arg("key", Key).key(0), arg("member", Str)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(s) = k.set(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    Ok(Reply::Integer(i64::from(checked(
        s.contains(k.keys(), &args[2]),
    )?)))
}
