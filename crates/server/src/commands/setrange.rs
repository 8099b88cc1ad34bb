//! SETRANGE key offset value — zero-pads, keeps the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::At;
use crate::reply::{self, CmdResult};

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let offset = reply::int_arg(&args[2])?;
    if offset < 0 {
        return Err(Reply::error("ERR offset is out of range"));
    }
    Ok(at.op(OpKind::SetRange {
        key: args[1].clone(),
        offset: offset as u64,
        patch: args[3].clone(),
    }))
}
