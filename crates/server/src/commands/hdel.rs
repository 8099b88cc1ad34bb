//! HDEL key field [field ...]

use bytes::Bytes;
use rialto_keyspace::{HashOp, Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HDEL: CommandSpec = cmd(
    "hdel",
    -3,
    &["write", "fast"],
    &["@write", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "delete"])])
.docs(
    doc(
        "hash",
        "2.0.0",
        "Removes fields from a hash; the hash goes with its last field.",
        "O(N) for N fields named.",
    )
    .history(&[("2.4.0", "Accepts multiple `field` arguments.")])
    .args(&[arg("key", Key).key(0), arg("field", Str).multi()]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Hash(HashOp::Del {
        key: args[1].clone(),
        fields: args[2..].to_vec(),
    })))
}
