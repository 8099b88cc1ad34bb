//! HINCRBY key field increment

use bytes::Bytes;
use rialto_keyspace::{HashOp, Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const HINCRBY: CommandSpec = cmd(
    "hincrby",
    4,
    &["write", "denyoom", "fast"],
    &["@write", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "hash",
        "2.0.0",
        "Adds an integer to a hash field's integer value (a missing field counts as 0).",
        "O(1)",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("field", Str),
        arg("increment", Integer),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let delta = reply::int_arg(&args[3])?;
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Hash(HashOp::IncrBy {
        key: args[1].clone(),
        field: args[2].clone(),
        delta,
    })))
}
