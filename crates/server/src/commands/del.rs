//! DEL key [key ...], UNLINK key [key ...] — identical here: deletion never blocks on memory.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::At;
use crate::reply::CmdResult;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Del {
        keys: args[1..].to_vec(),
    }))
}
