//! SETEX key seconds value, PSETEX key milliseconds value

use bytes::Bytes;

use super::util::expire_option;
use super::W;
use crate::reply::{self, CmdResult};
use crate::store::{check_key, check_value_len};

fn set_with(k: &mut W<'_>, args: &[Bytes], seconds: bool, cmd: &str) -> CmdResult {
    let at = expire_option(&args[2], seconds, true, k.now_ms, cmd)?;
    check_key(&args[1])?;
    check_value_len(args[3].len())?;
    k.set(&args[1], &args[3], Some(at));
    Ok(reply::ok())
}

/// SETEX
pub fn setex(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    set_with(k, args, true, "setex")
}

/// PSETEX
pub fn psetex(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    set_with(k, args, false, "psetex")
}
