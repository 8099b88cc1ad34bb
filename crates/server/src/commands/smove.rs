//! SMOVE source destination member

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, SetOp};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SMOVE: CommandSpec = cmd("smove", 4, &["write", "fast"], &["@write", "@set", "@fast"])
    .keys(1, 2, 1)
    .key_specs(&[
        KeySpec::single(1, &["RW", "access", "delete"]),
        KeySpec::single(2, &["RW", "insert"]),
    ])
    .docs(
        doc(
            "set",
            "1.0.0",
            "Moves a member from one set to another.",
            "O(1)",
        )
        .args(&[
            arg("source", Key).key(0),
            arg("destination", Key).key(1),
            arg("member", Str),
        ]),
    )
    .handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Sets(SetOp::Move {
        src: args[1].clone(),
        dst: args[2].clone(),
        member: args[3].clone(),
    })))
}
