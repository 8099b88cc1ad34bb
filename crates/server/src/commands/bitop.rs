//! BITOP AND|OR|XOR|NOT destkey key [key ...]

use bytes::Bytes;
use rialto_keyspace::bits::BitOp;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::util::{checked, is};
use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const BITOP: CommandSpec = cmd(
    "bitop",
    -4,
    &["write", "denyoom"],
    &["@write", "@bitmap", "@slow"],
)
.keys(2, -1, 1)
.key_specs(&[
    KeySpec::single(2, &["OW", "update"]),
    KeySpec::range(3, -1, 1, 0, &["RO", "access"]),
])
.docs(
    doc(
        "bitmap",
        "2.6.0",
        "Combines strings bit by bit (AND, OR, XOR, or NOT of one) into another key.",
        "O(N), N being the longest string's length.",
    )
    .args(&[
        arg("operation", Str),
        arg("destkey", Key).key(0),
        arg("key", Key).key(1).multi(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let op = if is(&args[1], "and") {
        BitOp::And
    } else if is(&args[1], "or") {
        BitOp::Or
    } else if is(&args[1], "xor") {
        BitOp::Xor
    } else if is(&args[1], "not") {
        BitOp::Not
    } else {
        return Err(reply::syntax());
    };
    if op == BitOp::Not && args.len() != 4 {
        return Err(Reply::error(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    checked(rialto_keyspace::check_key(&args[2]))?;
    Ok(at.op(OpKind::BitOp {
        op,
        dst: args[2].clone(),
        keys: args[3..].to_vec(),
    }))
}
