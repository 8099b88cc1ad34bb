//! PFMERGE destkey sourcekey [sourcekey ...]

use bytes::Bytes;
use rialto_keyspace::{HllOp, Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const PFMERGE: CommandSpec = cmd(
    "pfmerge",
    -2,
    &["write", "denyoom"],
    &["@write", "@hyperloglog", "@slow"],
)
.keys(1, -1, 1)
.key_specs(&[
    KeySpec::single(1, &["RW", "access", "insert"]),
    KeySpec::range(2, -1, 1, 0, &["RO", "access"]),
])
.docs(
    doc(
        "hyperloglog",
        "2.8.9",
        "Merges HyperLogLogs into the destination, which then estimates their union.",
        "O(N) for N HyperLogLogs, with a large constant.",
    )
    .args(&[
        arg("destkey", Key).key(0),
        arg("sourcekey", Key).key(1).multi(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Hll(HllOp::Merge {
        dst: args[1].clone(),
        keys: args[2..].to_vec(),
        sparse_max: at.hll_sparse_max,
    })))
}
