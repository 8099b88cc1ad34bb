//! LRANGE key start stop

use bytes::Bytes;
use rialto_resp::Reply;

use super::list_util::int;
use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const LRANGE: CommandSpec = cmd("lrange", 4, &["readonly"], &["@read", "@list", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "list",
            "1.0.0",
            "Reads a range of elements of a list (negative indexes count from the tail).",
            "O(S+N) for N elements read from S away from the nearer end.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("start", Integer),
            arg("stop", Integer),
        ]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let (start, stop) = (int(&args[2])?, int(&args[3])?);
    let Some(l) = k.list(&args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let Some((from, to)) = rialto_keyspace::list_span(l.len(), start, stop) else {
        return Ok(Reply::Array(Vec::new()));
    };
    let items = checked(l.range(k.keys(), from, to))?;
    Ok(Reply::Array(items.into_iter().map(Reply::Bulk).collect()))
}
