//! SREM key member [member ...]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, SetOp};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SREM: CommandSpec = cmd("srem", -3, &["write", "fast"], &["@write", "@set", "@fast"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "delete"])])
    .docs(
        doc(
            "set",
            "1.0.0",
            "Takes members out of a set; the set goes with its last member.",
            "O(N) for N members named.",
        )
        .history(&[("2.4.0", "Accepts multiple `member` arguments.")])
        .args(&[arg("key", Key).key(0), arg("member", Str).multi()]),
    )
    .handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Sets(SetOp::Rem {
        key: args[1].clone(),
        members: args[2..].to_vec(),
    })))
}
