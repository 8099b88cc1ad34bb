//! LMOVE source destination LEFT|RIGHT LEFT|RIGHT

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::list_util::side;
use super::{At, Handler};
use crate::command_table::ArgType::{Key, OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, Arg, CommandSpec, KeySpec};
use crate::reply::CmdResult;

/// LEFT or RIGHT, as the docs of LMOVE and BLMOVE name them.
pub const fn side_arg(name: &'static str) -> Arg {
    arg(name, OneOf).sub(SIDES)
}

const SIDES: &[Arg] = &[
    arg("left", PureToken).token("LEFT"),
    arg("right", PureToken).token("RIGHT"),
];

pub const LMOVE: CommandSpec = cmd(
    "lmove",
    5,
    &["write", "denyoom"],
    &["@write", "@list", "@slow"],
)
.keys(1, 2, 1)
.key_specs(&[
    KeySpec::single(1, &["RW", "access", "delete"]),
    KeySpec::single(2, &["RW", "insert"]),
])
.docs(
    doc(
        "list",
        "6.2.0",
        "Pops an element from one end of a list and pushes it onto an end of another.",
        "O(1)",
    )
    .args(&[
        arg("source", Key).key(0),
        arg("destination", Key).key(1),
        side_arg("wherefrom"),
        side_arg("whereto"),
    ]),
)
.handler(Handler::Write(run));

/// The op of LMOVE, RPOPLPUSH and the blocking forms.
pub fn move_op(at: At, src: &Bytes, dst: &Bytes, from_left: bool, to_left: bool) -> CmdResult<Op> {
    super::util::checked(rialto_keyspace::check_key(dst))?;
    Ok(at.op(OpKind::List(ListOp::Move {
        src: src.clone(),
        dst: dst.clone(),
        from_left,
        to_left,
    })))
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let (from, to) = (side(&args[3])?, side(&args[4])?);
    move_op(at, &args[1], &args[2], from, to)
}
