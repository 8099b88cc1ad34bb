//! INCR, DECR, INCRBY, DECRBY key [delta] — keep the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::util::checked;
use super::At;
use crate::reply::{self, CmdResult};

fn add(at: At, key: &Bytes, delta: i64) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(key))?;
    Ok(at.op(OpKind::IncrBy {
        key: key.clone(),
        delta,
    }))
}

/// INCR key
pub fn incr(at: At, args: &[Bytes]) -> CmdResult<Op> {
    add(at, &args[1], 1)
}

/// DECR key
pub fn decr(at: At, args: &[Bytes]) -> CmdResult<Op> {
    add(at, &args[1], -1)
}

/// INCRBY key delta
pub fn incrby(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let d = reply::int_arg(&args[2])?;
    add(at, &args[1], d)
}

/// DECRBY key delta
pub fn decrby(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let d = reply::int_arg(&args[2])?;
    if d == i64::MIN {
        return Err(Reply::error("ERR decrement would overflow"));
    }
    add(at, &args[1], -d)
}
