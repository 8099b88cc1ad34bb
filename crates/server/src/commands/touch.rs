//! TOUCH key [key ...] — counts the keys that exist, repeated ones each time. Rialto keeps no
//! access times (it evicts nothing), so there is nothing else to update.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const TOUCH: CommandSpec = cmd(
    "touch",
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
        "3.2.1",
        "Marks keys as used and counts how many of them exist.",
        "O(N), N being the number of keys given.",
    )
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
