//! INCRBYFLOAT key increment — computed in C `long double` by the keyspace, as Redis does, so
//! the stored text matches Redis's digit for digit; keeps the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Double, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const INCRBYFLOAT: CommandSpec = cmd(
    "incrbyfloat",
    3,
    &["write", "denyoom", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "string",
        "2.6.0",
        "Adds a floating-point amount to the number stored at a key.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("increment", Double)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::IncrByFloat {
        key: args[1].clone(),
        incr: args[2].clone(),
    }))
}
