//! The option grammar SET and GETEX share, with Redis 7's exact acceptance rules: an option
//! may repeat (the last value wins) but may not be combined with a conflicting one.

use bytes::Bytes;

use super::util::is;
use crate::reply::{self, CmdResult};

pub const NX: u16 = 1;
pub const XX: u16 = 2;
pub const GET: u16 = 4;
pub const KEEPTTL: u16 = 8;
pub const PERSIST: u16 = 16;
pub const EX: u16 = 32;
pub const PX: u16 = 64;
pub const EXAT: u16 = 128;
pub const PXAT: u16 = 256;

/// Which command is parsing: SET accepts NX XX GET KEEPTTL, GETEX accepts PERSIST.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum For {
    Set,
    GetEx,
}

/// Parsed options: flags and the expiry argument with its flag (EX, PX, EXAT or PXAT).
pub struct Opts<'a> {
    pub flags: u16,
    pub expire: Option<(u16, &'a Bytes)>,
}

pub fn parse<'a>(args: &'a [Bytes], start: usize, cmd: For) -> CmdResult<Opts<'a>> {
    let mut flags = 0u16;
    let mut expire = None;
    let mut j = start;
    let timed = EX | PX | EXAT | PXAT;
    while j < args.len() {
        let a = &args[j];
        let next = args.get(j + 1);
        let set = cmd == For::Set;
        if set && is(a, "nx") && flags & XX == 0 {
            flags |= NX;
        } else if set && is(a, "xx") && flags & NX == 0 {
            flags |= XX;
        } else if set && is(a, "get") {
            flags |= GET;
        } else if set && is(a, "keepttl") && flags & (PERSIST | timed) == 0 {
            flags |= KEEPTTL;
        } else if !set && is(a, "persist") && flags & (timed | KEEPTTL) == 0 {
            flags |= PERSIST;
        } else {
            let unit = [("ex", EX), ("px", PX), ("exat", EXAT), ("pxat", PXAT)]
                .into_iter()
                .find(|(w, _)| is(a, w))
                .map(|(_, f)| f);
            match (unit, next) {
                (Some(f), Some(n)) if flags & (KEEPTTL | PERSIST | (timed & !f)) == 0 => {
                    flags |= f;
                    expire = Some((f, n));
                    j += 1;
                }
                _ => return Err(reply::syntax()),
            }
        }
        j += 1;
    }
    Ok(Opts { flags, expire })
}

/// The absolute expiry the options ask for, or why it is bad.
pub fn expire_time(opts: &Opts<'_>, now_ms: i64) -> Result<Option<i64>, rialto_keyspace::BadTime> {
    let Some((f, arg)) = opts.expire else {
        return Ok(None);
    };
    let seconds = f == EX || f == EXAT;
    let relative = f == EX || f == PX;
    super::util::expire_time(arg, seconds, relative, now_ms).map(Some)
}

/// The absolute expiry the options ask for, validated as Redis 7 does.
pub fn expire_at(opts: &Opts<'_>, now_ms: i64, cmd: &str) -> CmdResult<Option<i64>> {
    let Some((f, arg)) = opts.expire else {
        return Ok(None);
    };
    let seconds = f == EX || f == EXAT;
    let relative = f == EX || f == PX;
    super::util::expire_option(arg, seconds, relative, now_ms, cmd).map(Some)
}
