//! Argument helpers shared by several commands.

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
    let amount = reply::int_arg(arg)?;
    if amount <= 0 || (seconds && amount > i64::MAX / 1000) {
        return Err(reply::invalid_expire(cmd));
    }
    let ms = if seconds { amount * 1000 } else { amount };
    let at = if relative {
        ms.checked_add(now_ms)
            .ok_or_else(|| reply::invalid_expire(cmd))?
    } else {
        ms
    };
    if at <= 0 {
        return Err(reply::invalid_expire(cmd));
    }
    Ok(at)
}

/// A keyspace check's failure as the error reply.
pub fn checked<T>(r: rialto_keyspace::Result<T>) -> CmdResult<T> {
    r.map_err(|e| reply::keyspace_error(&e))
}
