//! APPEND key value — keeps the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const APPEND: CommandSpec = cmd(
    "append",
    3,
    &["write", "denyoom", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "string",
        "2.0.0",
        "Appends bytes to the end of the string stored at a key.",
        "O(1) amortized: strings grow with spare room, so small appends stay cheap.",
    )
    .args(&[arg("key", Key).key(0), arg("value", Str)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Append {
        key: args[1].clone(),
        value: args[2].clone(),
    }))
}
