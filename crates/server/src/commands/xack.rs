//! XACK key group id [id ...]

use bytes::Bytes;
use rialto_keyspace::{OpKind, StreamOp};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const XACK: CommandSpec = cmd(
    "xack",
    -4,
    &["write", "fast"],
    &["@write", "@stream", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Acknowledges entries pending in a consumer group: they are no longer pending.",
        "O(1) per id.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("group", Str),
        arg("id", Str).multi(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let (ids, bad) = super::xdel::ids(&args[3..]);
    Ok(at.op(OpKind::Stream(StreamOp::Ack {
        key: args[1].clone(),
        group: args[2].clone(),
        ids,
        bad,
    })))
}
