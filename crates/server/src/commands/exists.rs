//! EXISTS key [key ...] — counts repeated keys each time, as Redis does.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const EXISTS: CommandSpec = cmd(
    "exists",
    -2,
    &["readonly", "fast"],
    &["@keyspace", "@read", "@fast"],
)
.keys(1, -1, 1)
.tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
.key_specs(&[KeySpec::range(1, -1, 1, 0, &["RO"])])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Counts how many of the given keys exist.",
        "O(N), N being the number of keys checked.",
    )
    .history(&[("3.0.3", "Takes several keys.")])
    .args(&[arg("key", Key).key(0).multi()]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut n = 0;
    for key in &args[1..] {
        n += i64::from(k.exists(key)?);
    }
    Ok(Reply::Integer(n))
}
