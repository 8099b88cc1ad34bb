//! HSETNX key field value

use bytes::Bytes;
use rialto_keyspace::{HashOp, Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const HSETNX: CommandSpec = cmd(
    "hsetnx",
    4,
    &["write", "denyoom", "fast"],
    &["@write", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "hash",
        "2.0.0",
        "Sets a field of a hash only if it has no value yet.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("field", Str), arg("value", Str)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Hash(HashOp::SetNx {
        key: args[1].clone(),
        field: args[2].clone(),
        value: args[3].clone(),
    })))
}
