//! HSET key field value [field value ...]

use bytes::Bytes;
use rialto_keyspace::{HashOp, Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const HSET: CommandSpec = cmd(
    "hset",
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
        "Sets fields of a hash to values, creating the hash if needed.",
        "O(N) for N pairs.",
    )
    .history(&[("4.0.0", "Accepts multiple `field` and `value` arguments.")])
    .args(&[
        arg("key", Key).key(0),
        arg("field_value", Block)
            .multi()
            .sub(&[arg("field", Str), arg("value", Str)]),
    ]),
)
.handler(Handler::Write(run));

/// The field-value pairs of HSET and HMSET (`args[2..]`).
pub fn pairs(args: &[Bytes], name: &str) -> CmdResult<Vec<(Bytes, Bytes)>> {
    if !args.len().is_multiple_of(2) {
        return Err(reply::wrong_arity(name));
    }
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(args[2..]
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect())
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Hash(HashOp::Set {
        key: args[1].clone(),
        pairs: pairs(args, "hset")?,
        ok: false,
    })))
}
