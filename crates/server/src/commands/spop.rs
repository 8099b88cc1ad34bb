//! SPOP key [count]
//!
//! A write whose members are picked at random: the seed is chosen here, where the command
//! arrives, and travels in the op, so every node applying it pops the same members.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, SetOp};
use rialto_resp::Reply;

use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const SPOP: CommandSpec = cmd("spop", -2, &["write", "fast"], &["@write", "@set", "@fast"])
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output"])
    .key_specs(&[KeySpec::single(1, &["RW", "access", "delete"])])
    .docs(
        doc(
            "set",
            "1.0.0",
            "Takes random members out of a set and returns them.",
            "O(1) without a count; O(N) for a count of N.",
        )
        .history(&[("3.2.0", "Added the `count` argument.")])
        .args(&[
            arg("key", Key).key(0),
            arg("count", Integer).since("3.2.0").opt(),
        ]),
    )
    .handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let count = match args {
        [_, _] => None,
        [_, _, c] => {
            // As Redis: any count that is no non-negative integer gets this one error.
            let positive = || Reply::error("ERR value is out of range, must be positive");
            let n = reply::parse_i64(c).ok_or_else(positive)?;
            Some(u64::try_from(n).map_err(|_| positive())?)
        }
        _ => return Err(reply::syntax()),
    };
    Ok(at.op(OpKind::Sets(SetOp::Pop {
        key: args[1].clone(),
        count,
        seed: rand::random(),
    })))
}
