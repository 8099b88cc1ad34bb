//! ZREM key member [member ...]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, ZSetOp};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const ZREM: CommandSpec = cmd(
    "zrem",
    -3,
    &["write", "fast"],
    &["@write", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "delete"])])
.docs(
    doc(
        "sorted-set",
        "1.2.0",
        "Removes members from a sorted set.",
        "O(M) point reads and writes for M members (O(M*N) on a packed set of N).",
    )
    .history(&[("2.4.0", "Accepts several members.")])
    .args(&[arg("key", Key).key(0), arg("member", Str).multi()]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::ZSet(ZSetOp::Rem {
        key: args[1].clone(),
        members: args[2..].to_vec(),
    })))
}
