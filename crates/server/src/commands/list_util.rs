//! What the list commands and the blocking pops parse alike.

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use crate::reply::{self, CmdResult};

/// LEFT (true) or RIGHT.
pub fn side(arg: &[u8]) -> CmdResult<bool> {
    if is(arg, "left") {
        Ok(true)
    } else if is(arg, "right") {
        Ok(false)
    } else {
        Err(reply::syntax())
    }
}

/// An integer argument, Redis's "not an integer or out of range" otherwise.
pub fn int(arg: &[u8]) -> CmdResult<i64> {
    reply::parse_i64(arg).ok_or_else(reply::not_integer)
}

/// The optional count of LPOP and RPOP.
pub fn pop_count(arg: Option<&Bytes>) -> CmdResult<Option<u64>> {
    match arg {
        None => Ok(None),
        Some(c) => match reply::parse_i64(c) {
            Some(n) if n >= 0 => Ok(Some(n as u64)),
            _ => Err(Reply::error("ERR value is out of range, must be positive")),
        },
    }
}

/// A blocking command's timeout in seconds (a float since Redis 6.0; 0 waits forever), as
/// milliseconds rounded up, with Redis 7.0's errors: its conversion of a value past the 64-bit
/// range gives a negative number ("timeout is negative"), and a deadline past that range once
/// the current time is added is "out of range".
pub fn timeout_ms(arg: &[u8]) -> CmdResult<Option<u64>> {
    let secs = std::str::from_utf8(arg)
        .ok()
        .filter(|s| !s.is_empty() && !s.starts_with(char::is_whitespace))
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| !v.is_nan())
        .ok_or_else(|| Reply::error("ERR timeout is not a float or out of range"))?;
    let ms = (secs * 1000.0).ceil();
    if ms < 0.0 || ms >= i64::MAX as f64 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    // The current time in milliseconds stays below 2^42 for a century yet.
    if ms > (i64::MAX - (1 << 42)) as f64 {
        return Err(Reply::error("ERR timeout is out of range"));
    }
    Ok((ms > 0.0).then_some(ms as u64))
}

/// LMPOP and ZMPOP's arguments from `args[at]` (numkeys) on: the keys, the word after them
/// (parsed by `side`) and COUNT (default 1).
pub fn mpop_args<T>(
    args: &[Bytes],
    at: usize,
    side: impl Fn(&[u8]) -> CmdResult<T>,
) -> CmdResult<(Vec<Bytes>, T, u64)> {
    let numkeys = reply::parse_i64(&args[at])
        .filter(|&n| n > 0)
        .ok_or_else(|| Reply::error("ERR numkeys should be greater than 0"))?;
    let first = at + 1;
    if numkeys >= (args.len() - first) as i64 {
        return Err(reply::syntax());
    }
    let end = first + numkeys as usize;
    let keys = args[first..end].to_vec();
    let which = side(args.get(end).ok_or_else(reply::syntax)?)?;
    let mut count = None;
    let mut i = end + 1;
    while i < args.len() {
        if is(&args[i], "count") && count.is_none() && i + 1 < args.len() {
            count = Some(
                reply::parse_i64(&args[i + 1])
                    .filter(|&n| n > 0)
                    .ok_or_else(|| Reply::error("ERR count should be greater than 0"))?
                    as u64,
            );
            i += 2;
        } else {
            return Err(reply::syntax());
        }
    }
    for k in &keys {
        super::util::checked(rialto_keyspace::check_key(k))?;
    }
    Ok((keys, which, count.unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: CmdResult<Option<u64>>) -> String {
        match r {
            Err(Reply::Error(e)) => String::from_utf8_lossy(&e).into_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timeouts_parse_as_redis_does() {
        assert_eq!(timeout_ms(b"0").unwrap(), None);
        assert_eq!(timeout_ms(b"0.1").unwrap(), Some(100));
        assert_eq!(timeout_ms(b"1").unwrap(), Some(1000));
        assert_eq!(timeout_ms(b"0.0001").unwrap(), Some(1));
        assert!(err(timeout_ms(b"-1")).contains("negative"));
        assert!(err(timeout_ms(b"abc")).contains("not a float"));
        assert!(err(timeout_ms(b"nan")).contains("not a float"));
        // Past the 64-bit range Redis's conversion turns negative.
        assert!(err(timeout_ms(b"inf")).contains("negative"));
        assert!(err(timeout_ms(b"9223372036854775808")).contains("negative"));
        assert!(err(timeout_ms(b"9223372036854770")).contains("out of range"));
        // Rounded up, as Redis's ceill: a tiny negative timeout is 0, waiting forever.
        assert_eq!(timeout_ms(b"-0.0001").unwrap(), None);
    }

    #[test]
    fn mpop_arguments_are_checked_in_redis_order() {
        let a =
            |s: &str| -> Vec<Bytes> { s.split(' ').map(|w| Bytes::from(w.to_string())).collect() };
        let (keys, left, n) = mpop_args(&a("lmpop 2 a b LEFT COUNT 3"), 1, side).unwrap();
        assert_eq!((keys.len(), left, n), (2, true, 3));
        assert!(mpop_args(&a("lmpop 0 a LEFT"), 1, side).is_err());
        assert!(mpop_args(&a("lmpop 3 a b"), 1, side).is_err());
        assert!(mpop_args(&a("lmpop 1 a UP"), 1, side).is_err());
        assert!(mpop_args(&a("lmpop 1 a LEFT COUNT 0"), 1, side).is_err());
        assert!(mpop_args(&a("lmpop 1 a LEFT COUNT 1 COUNT 2"), 1, side).is_err());
    }
}
