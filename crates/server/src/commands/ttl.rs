//! TTL, PTTL, EXPIRETIME, PEXPIRETIME key: -2 missing, -1 no expiry.

use bytes::Bytes;
use rialto_resp::Reply;

use super::R;
use crate::reply::CmdResult;

fn expiry(k: &mut R<'_, '_>, key: &[u8]) -> CmdResult<Result<i64, i64>> {
    Ok(match k.get(key)? {
        None => Err(-2),
        Some(rec) => rec.expire_at_ms.ok_or(-1),
    })
}

/// TTL key: seconds left, rounded to nearest.
pub fn ttl(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let now = k.now_ms();
    Ok(Reply::Integer(match expiry(k, &args[1])? {
        Ok(at) => ((at - now).max(0) + 500) / 1000,
        Err(code) => code,
    }))
}

/// PTTL key: milliseconds left.
pub fn pttl(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let now = k.now_ms();
    Ok(Reply::Integer(match expiry(k, &args[1])? {
        Ok(at) => (at - now).max(0),
        Err(code) => code,
    }))
}

/// EXPIRETIME key: absolute Unix seconds, rounded to nearest as Redis does.
pub fn expiretime(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Integer(match expiry(k, &args[1])? {
        Ok(at) => at.saturating_add(500) / 1000,
        Err(code) => code,
    }))
}

/// PEXPIRETIME key: absolute Unix milliseconds.
pub fn pexpiretime(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Integer(expiry(k, &args[1])?.unwrap_or_else(|c| c)))
}
