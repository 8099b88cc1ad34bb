//! INCR, DECR, INCRBY, DECRBY key [delta] — keep the TTL.

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::stored_int;
use super::W;
use crate::reply::{self, CmdResult};
use crate::store::check_key;

fn add(k: &mut W<'_>, key: &Bytes, delta: i64) -> CmdResult {
    check_key(key)?;
    let old = k.get(key)?;
    let cur = match &old {
        Some(r) => stored_int(&r.value)?,
        None => 0,
    };
    let new = cur
        .checked_add(delta)
        .ok_or_else(|| Reply::error("ERR increment or decrement would overflow"))?;
    let at = old.as_ref().and_then(|r| r.expire_at_ms);
    k.replace(key, old.as_ref(), new.to_string().as_bytes(), at);
    Ok(Reply::Integer(new))
}

/// INCR key
pub fn incr(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    add(k, &args[1], 1)
}

/// DECR key
pub fn decr(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    add(k, &args[1], -1)
}

/// INCRBY key delta
pub fn incrby(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let d = reply::int_arg(&args[2])?;
    add(k, &args[1], d)
}

/// DECRBY key delta
pub fn decrby(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let d = reply::int_arg(&args[2])?;
    if d == i64::MIN {
        return Err(Reply::error("ERR decrement would overflow"));
    }
    add(k, &args[1], -d)
}
