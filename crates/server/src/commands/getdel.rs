//! GETDEL key

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::At;
use crate::reply::CmdResult;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::GetDel {
        key: args[1].clone(),
    }))
}
