//! SETEX key seconds value, PSETEX key milliseconds value: SET with an expiry.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, Set};

use super::util::{checked, expire_option};
use super::At;
use crate::reply::CmdResult;

fn set_with(at: At, args: &[Bytes], seconds: bool, cmd: &str) -> CmdResult<Op> {
    let expire_at_ms = expire_option(&args[2], seconds, true, at.now_ms, cmd)?;
    checked(rialto_keyspace::check_key(&args[1]))?;
    checked(rialto_keyspace::check_value_len(args[3].len()))?;
    Ok(at.op(OpKind::Set(Set {
        key: args[1].clone(),
        value: args[3].clone(),
        expire_at_ms: Some(expire_at_ms),
        keep_ttl: false,
        cond: None,
        get: false,
    })))
}

/// SETEX
pub fn setex(at: At, args: &[Bytes]) -> CmdResult<Op> {
    set_with(at, args, true, "setex")
}

/// PSETEX
pub fn psetex(at: At, args: &[Bytes]) -> CmdResult<Op> {
    set_with(at, args, false, "psetex")
}
