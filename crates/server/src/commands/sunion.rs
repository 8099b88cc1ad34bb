//! SUNION key [key ...]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SUNION: CommandSpec = cmd("sunion", -2, &["readonly"], &["@read", "@set", "@slow"])
    .keys(1, -1, 1)
    .tips(&["nondeterministic_output_order"])
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["RO", "access"])])
    .docs(
        doc(
            "set",
            "1.0.0",
            "Reads the members of any given set.",
            "O(N) for N members over all the sets.",
        )
        .args(&[arg("key", Key).key(0).multi()]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let members = checked(rialto_keyspace::set_union_or_diff(
        k.keys(),
        &args[1..],
        false,
    ))?;
    Ok(Reply::Set(members.into_iter().map(Reply::Bulk).collect()))
}
