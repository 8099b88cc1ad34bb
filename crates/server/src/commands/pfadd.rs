//! PFADD key [element ...]

use bytes::Bytes;
use rialto_keyspace::{HllOp, Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const PFADD: CommandSpec = cmd(
    "pfadd",
    -2,
    &["write", "denyoom", "fast"],
    &["@write", "@hyperloglog", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "hyperloglog",
        "2.8.9",
        "Adds elements to a HyperLogLog, creating it if needed; 1 if its estimate may have changed.",
        "O(1) per element.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("element", Str).opt().multi(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Hll(HllOp::Add {
        key: args[1].clone(),
        elements: args[2..].to_vec(),
        sparse_max: at.hll_sparse_max,
    })))
}
