//! APPEND key value — keeps the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::util::checked;
use super::At;
use crate::reply::CmdResult;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Append {
        key: args[1].clone(),
        value: args[2].clone(),
    }))
}
