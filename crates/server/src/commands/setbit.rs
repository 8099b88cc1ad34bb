//! SETBIT key offset value

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const SETBIT: CommandSpec = cmd(
    "setbit",
    4,
    &["write", "denyoom"],
    &["@write", "@bitmap", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "bitmap",
        "2.2.0",
        "Sets or clears one bit of a string, growing it with zero bytes as needed, and gives the bit's old value.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("offset", Integer), arg("value", Integer)]),
)
.handler(Handler::Write(run));

/// A bit offset as Redis takes it: an integer from 0 to 2^32 - 1.
pub(super) fn bit_offset(arg: &[u8]) -> CmdResult<u64> {
    match reply::parse_i64(arg) {
        Some(n) if (0..1i64 << 32).contains(&n) => Ok(n as u64),
        _ => Err(Reply::error(
            "ERR bit offset is not an integer or out of range",
        )),
    }
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let offset = bit_offset(&args[2])?;
    let on = match reply::parse_i64(&args[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(Reply::error("ERR bit is not an integer or out of range")),
    };
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::SetBit {
        key: args[1].clone(),
        offset,
        on,
    }))
}
