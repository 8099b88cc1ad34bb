//! MSET key value [key value ...], MSETNX key value [key value ...]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::{Block, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const MSET: CommandSpec = cmd(
    "mset",
    -3,
    &["write", "denyoom"],
    &["@write", "@string", "@slow"],
)
.keys(1, -1, 2)
.tips(&[
    "request_policy:multi_shard",
    "response_policy:all_succeeded",
])
.key_specs(&[KeySpec::range(1, -1, 2, 0, &["OW", "update"])])
.docs(
    doc(
        "string",
        "1.0.1",
        "Stores several key-value pairs at once.",
        "O(N), N being the number of keys written.",
    )
    .args(&[arg("key_value", Block)
        .multi()
        .sub(&[arg("key", Key).key(0), arg("value", Str)])]),
)
.handler(Handler::Write(mset));

pub const MSETNX: CommandSpec = cmd(
    "msetnx",
    -3,
    &["write", "denyoom"],
    &["@write", "@string", "@slow"],
)
.keys(1, -1, 2)
.tips(&["request_policy:multi_shard", "response_policy:agg_min"])
.key_specs(&[KeySpec::range(1, -1, 2, 0, &["OW", "insert"])])
.docs(
    doc(
        "string",
        "1.0.1",
        "Stores several key-value pairs at once, only if none of the keys exists yet.",
        "O(N), N being the number of keys written.",
    )
    .args(&[arg("key_value", Block)
        .multi()
        .sub(&[arg("key", Key).key(0), arg("value", Str)])]),
)
.handler(Handler::Write(msetnx));

fn pairs(args: &[Bytes], name: &str) -> CmdResult<Vec<(Bytes, Bytes)>> {
    if args.len().is_multiple_of(2) {
        return Err(reply::wrong_arity(name));
    }
    Ok(args[1..]
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect())
}

/// MSET: blind writes; a later pair for the same key wins.
pub fn mset(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::MSet {
        pairs: pairs(args, "mset")?,
    }))
}

/// MSETNX: all or nothing, only if no key exists.
pub fn msetnx(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::MSetNx {
        pairs: pairs(args, "msetnx")?,
    }))
}
