//! ZPOPMIN key [count], ZPOPMAX key [count]
//!
//! Without a count, one member and its score as a flat pair; with one, pairs (nested in
//! RESP3), as Redis 7.0 replies.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, ZSetOp};
use rialto_resp::Reply;

use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const ZPOPMIN: CommandSpec = cmd(
    "zpopmin",
    -2,
    &["write", "fast"],
    &["@write", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "delete"])])
.docs(
    doc(
        "sorted-set",
        "5.0.0",
        "Removes and returns the members of lowest score.",
        "O(M) for M members popped.",
    )
    .args(&[arg("key", Key).key(0), arg("count", Integer).opt()]),
)
.handler(Handler::Write(run_min));

pub const ZPOPMAX: CommandSpec = cmd(
    "zpopmax",
    -2,
    &["write", "fast"],
    &["@write", "@sortedset", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "delete"])])
.docs(
    doc(
        "sorted-set",
        "5.0.0",
        "Removes and returns the members of highest score.",
        "O(M) for M members popped.",
    )
    .args(&[arg("key", Key).key(0), arg("count", Integer).opt()]),
)
.handler(Handler::Write(run_max));

fn pop(at: At, args: &[Bytes], max: bool) -> CmdResult<Op> {
    if args.len() > 3 {
        return Err(reply::syntax());
    }
    let count = match args.get(2) {
        None => None,
        // Redis's `getPositiveLongFromObjectOrReply`: one error for both.
        Some(c) => match reply::parse_i64(c) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return Err(Reply::error("ERR value is out of range, must be positive")),
        },
    };
    Ok(at.op(OpKind::ZSet(ZSetOp::Pop {
        key: args[1].clone(),
        max,
        count,
    })))
}

pub fn run_min(at: At, args: &[Bytes]) -> CmdResult<Op> {
    pop(at, args, false)
}

pub fn run_max(at: At, args: &[Bytes]) -> CmdResult<Op> {
    pop(at, args, true)
}
