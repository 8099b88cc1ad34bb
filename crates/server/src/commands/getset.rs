//! GETSET key value — sets and returns the old value; the TTL is dropped (SET key value GET).

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, Set};

use super::At;
use crate::reply::CmdResult;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Set(Set {
        key: args[1].clone(),
        value: args[2].clone(),
        expire_at_ms: None,
        keep_ttl: false,
        cond: None,
        get: true,
    })))
}
