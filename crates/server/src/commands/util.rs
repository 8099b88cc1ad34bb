//! Argument helpers shared by several commands.

use rialto_keyspace::BadTime;

use crate::reply::{self, CmdResult};

/// Whether `arg` equals `word`, ignoring ASCII case (option names).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// An absolute expiry from a SET/GETEX-style option: `EX`/`PX` relative to `now_ms`,
/// `EXAT`/`PXAT` absolute; `seconds` multiplies by 1000. Non-positive amounts and overflow
/// get `ERR invalid expire time in '<cmd>' command`, as in Redis 7.
pub fn expire_option(
    arg: &[u8],
    seconds: bool,
    relative: bool,
    now_ms: i64,
    cmd: &str,
) -> CmdResult<i64> {
    expire_time(arg, seconds, relative, now_ms).map_err(|b| match b {
        BadTime::NotInteger => reply::not_integer(),
        BadTime::OutOfRange => reply::invalid_expire(cmd),
    })
}

/// [`expire_option`], with the reason as data.
pub fn expire_time(arg: &[u8], seconds: bool, relative: bool, now_ms: i64) -> Result<i64, BadTime> {
    let amount = reply::parse_i64(arg).ok_or(BadTime::NotInteger)?;
    if amount <= 0 || (seconds && amount > i64::MAX / 1000) {
        return Err(BadTime::OutOfRange);
    }
    let ms = if seconds { amount * 1000 } else { amount };
    let at = if relative {
        ms.checked_add(now_ms).ok_or(BadTime::OutOfRange)?
    } else {
        ms
    };
    if at <= 0 {
        return Err(BadTime::OutOfRange);
    }
    Ok(at)
}

/// A keyspace check's failure as the error reply.
pub fn checked<T>(r: rialto_keyspace::Result<T>) -> CmdResult<T> {
    r.map_err(|e| reply::keyspace_error(&e))
}
