//! DEL key [key ...], UNLINK key [key ...] — identical here: deletion never blocks on memory.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const DEL: CommandSpec = cmd("del", -2, &["write"], &["@keyspace", "@write", "@slow"])
    .keys(1, -1, 1)
    .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["RM", "delete"])])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Removes one or more keys.",
            "O(N) for N keys; removing a collection is O(M) in its elements, a string O(1).",
        )
        .args(&[arg("key", Key).key(0).multi()]),
    )
    .handler(Handler::Write(run));

pub const UNLINK: CommandSpec = cmd(
    "unlink",
    -2,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, -1, 1)
.tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
.key_specs(&[KeySpec::range(1, -1, 1, 0, &["RM", "delete"])])
.docs(
    doc(
        "generic",
        "4.0.0",
        "Removes one or more keys and frees their memory in the background.",
        "O(1) per key now; freeing the memory later is O(M) in the values' allocations.",
    )
    .args(&[arg("key", Key).key(0).multi()]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Del {
        keys: args[1..].to_vec(),
    }))
}
