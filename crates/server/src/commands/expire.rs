//! EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX | XX | GT | LT]

use bytes::Bytes;
use rialto_keyspace::{ExpireCond, Op, OpKind};
use rialto_resp::Reply;

use super::util::is;
use super::At;
use crate::reply::{self, CmdResult};

const NX: u8 = 1;
const XX: u8 = 2;
const GT: u8 = 4;
const LT: u8 = 8;

fn expire(at: At, args: &[Bytes], seconds: bool, relative: bool, cmd: &str) -> CmdResult<Op> {
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
            .checked_add(at.now_ms)
            .ok_or_else(|| reply::invalid_expire(cmd))?;
    }
    let cond = ExpireCond {
        nx: flags & NX != 0,
        xx: flags & XX != 0,
        gt: flags & GT != 0,
        lt: flags & LT != 0,
    };
    Ok(at.op(OpKind::Expire {
        key: args[1].clone(),
        at_ms: when,
        cond,
    }))
}

/// EXPIRE key seconds
pub fn expire_cmd(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, true, true, "expire")
}

/// PEXPIRE key milliseconds
pub fn pexpire(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, false, true, "pexpire")
}

/// EXPIREAT key unix-seconds
pub fn expireat(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, true, false, "expireat")
}

/// PEXPIREAT key unix-milliseconds
pub fn pexpireat(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, false, false, "pexpireat")
}
