//! EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX | XX | GT | LT]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::W;
use crate::reply::{self, CmdResult};

const NX: u8 = 1;
const XX: u8 = 2;
const GT: u8 = 4;
const LT: u8 = 8;

fn expire(k: &mut W<'_>, args: &[Bytes], seconds: bool, relative: bool, cmd: &str) -> CmdResult {
    let mut flags = 0u8;
    for a in &args[3..] {
        flags |= if is(a, "nx") {
            NX
        } else if is(a, "xx") {
            XX
        } else if is(a, "gt") {
            GT
        } else if is(a, "lt") {
            LT
        } else {
            return Err(reply::err_string(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(a)
            )));
        };
    }
    if flags & NX != 0 && flags & (XX | GT | LT) != 0 {
        return Err(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if flags & GT != 0 && flags & LT != 0 {
        return Err(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    // Redis validates the options before the time.
    let mut when = reply::int_arg(&args[2])?;
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(reply::invalid_expire(cmd));
        }
        when *= 1000;
    }
    if relative {
        when = when
            .checked_add(k.now_ms)
            .ok_or_else(|| reply::invalid_expire(cmd))?;
    }
    let key = &args[1];
    let Some(rec) = k.get(key)? else {
        return Ok(Reply::Integer(0));
    };
    let cur = rec.expire_at_ms;
    let refused = (flags & NX != 0 && cur.is_some())
        || (flags & XX != 0 && cur.is_none())
        // No TTL counts as infinite: GT never beats it, LT always does.
        || (flags & GT != 0 && cur.is_none_or(|c| when <= c))
        || (flags & LT != 0 && cur.is_some_and(|c| when >= c));
    if refused {
        return Ok(Reply::Integer(0));
    }
    if when <= k.now_ms {
        k.remove(key)?;
    } else {
        k.replace(key, Some(&rec), &rec.value, Some(when));
    }
    Ok(Reply::Integer(1))
}

/// EXPIRE key seconds
pub fn expire_cmd(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    expire(k, args, true, true, "expire")
}

/// PEXPIRE key milliseconds
pub fn pexpire(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    expire(k, args, false, true, "pexpire")
}

/// EXPIREAT key unix-seconds
pub fn expireat(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    expire(k, args, true, false, "expireat")
}

/// PEXPIREAT key unix-milliseconds
pub fn pexpireat(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    expire(k, args, false, false, "pexpireat")
}
