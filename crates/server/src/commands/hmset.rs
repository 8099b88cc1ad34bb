//! HMSET key field value [field value ...] — HSET replying OK.

use bytes::Bytes;
use rialto_keyspace::{HashOp, Op, OpKind};

use super::hset::pairs;
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HMSET: CommandSpec = cmd(
    "hmset",
    -4,
    &["write", "denyoom", "fast"],
    &["@write", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "hash",
        "2.0.0",
        "Sets fields of a hash to values (HSET replying OK).",
        "O(N) for N pairs.",
    )
    .deprecated("4.0.0", "`HSET` with multiple field-value pairs")
    .args(&[
        arg("key", Key).key(0),
        arg("field_value", Block)
            .multi()
            .sub(&[arg("field", Str), arg("value", Str)]),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Hash(HashOp::Set {
        key: args[1].clone(),
        pairs: pairs(args, "hmset")?,
        ok: true,
    })))
}
