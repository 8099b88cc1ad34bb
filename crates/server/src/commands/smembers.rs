//! SMEMBERS key

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SMEMBERS: CommandSpec = cmd("smembers", 2, &["readonly"], &["@read", "@set", "@slow"])
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output_order"])
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "set",
            "1.0.0",
            "Reads every member of a set.",
            "O(N) for a set of N members.",
        )
        .args(&[arg("key", Key).key(0)]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(s) = k.set(&args[1])? else {
        return Ok(Reply::Set(Vec::new()));
    };
    let members = checked(s.members(k.keys()))?;
    Ok(Reply::Set(members.into_iter().map(Reply::Bulk).collect()))
}
