//! LINDEX key index

use bytes::Bytes;
use rialto_resp::Reply;

use super::list_util::int;
use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LINDEX: CommandSpec = cmd("lindex", 3, &["readonly"], &["@read", "@list", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "list",
            "1.0.0",
            "Reads the element of a list at an index (negative: from the tail).",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0), arg("index", Integer)]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    // The key first, then the index, as Redis checks them.
    let Some(l) = k.list(&args[1])? else {
        return Ok(Reply::Null);
    };
    let index = int(&args[2])?;
    let Some(i) = rialto_keyspace::list_position(l.len(), index) else {
        return Ok(Reply::Null);
    };
    Ok(checked(l.get(k.keys(), i))?.map_or(Reply::Null, Reply::Bulk))
}
