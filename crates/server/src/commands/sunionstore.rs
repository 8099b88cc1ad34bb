//! SUNIONSTORE destination key [key ...]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, SetAlgebra, SetOp};

use super::{At, Handler};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SUNIONSTORE: CommandSpec = cmd(
    "sunionstore",
    -3,
    &["write", "denyoom"],
    &["@write", "@set", "@slow"],
)
.keys(1, -1, 1)
.key_specs(&[
    KeySpec::single(1, &["OW", "update"]),
    KeySpec::range(2, -1, 1, 0, &["RO", "access"]),
])
.docs(
    doc(
        "set",
        "1.0.0",
        "Stores the members of any given set in a key, replacing what it held.",
        "O(N) for N members over all the sets.",
    )
    .args(&[
        arg("destination", Key).key(0),
        arg("key", Key).key(1).multi(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Sets(SetOp::Store {
        algebra: SetAlgebra::Union,
        dst: args[1].clone(),
        keys: args[2..].to_vec(),
    })))
}
