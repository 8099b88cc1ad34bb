//! SADD key member [member ...]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, SetOp};

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SADD: CommandSpec = cmd(
    "sadd",
    -3,
    &["write", "denyoom", "fast"],
    &["@write", "@set", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "insert"])])
.docs(
    doc(
        "set",
        "1.0.0",
        "Puts members into a set, creating the set if needed.",
        "O(N) for N members named.",
    )
    .history(&[("2.4.0", "Accepts multiple `member` arguments.")])
    .args(&[arg("key", Key).key(0), arg("member", Str).multi()]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Sets(SetOp::Add {
        key: args[1].clone(),
        members: args[2..].to_vec(),
    })))
}
