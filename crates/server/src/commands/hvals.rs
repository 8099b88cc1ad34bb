//! HVALS key

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HVALS: CommandSpec = cmd("hvals", 2, &["readonly"], &["@read", "@hash", "@slow"])
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output_order"])
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "hash",
            "2.0.0",
            "Lists the values of a hash's fields.",
            "O(N) for a hash of N fields.",
        )
        .args(&[arg("key", Key).key(0)]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(h) = k.hash(&args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let entries = checked(h.entries(k.keys()))?;
    Ok(Reply::Array(
        entries.into_iter().map(|(_, v)| Reply::Bulk(v)).collect(),
    ))
}
