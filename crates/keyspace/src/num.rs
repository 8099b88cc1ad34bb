//! Numbers in arguments, read as Redis reads them (C's `strtod`, `string2d`), for the parsing
//! that happens where an op is applied (a geospatial search's, SORT's weights) and for the
//! server's commands alike.

extern "C" {
    fn strtod(s: *const std::os::raw::c_char, end: *mut *mut std::os::raw::c_char) -> f64;
    fn __errno_location() -> *mut std::os::raw::c_int;
}

/// `ERANGE`, Linux's value.
const ERANGE: std::os::raw::c_int = 34;

/// C's `strtod` over the bytes up to the first NUL (as Redis hands a string to it): the
/// value, how many bytes it read, and whether it set `ERANGE`.
pub fn strtod_prefix(arg: &[u8]) -> (f64, usize, bool) {
    let text = arg.split(|&b| b == 0).next().unwrap_or_default();
    let Ok(c) = std::ffi::CString::new(text) else {
        return (0.0, 0, false);
    };
    let mut end: *mut std::os::raw::c_char = std::ptr::null_mut();
    // SAFETY: `c` is NUL-terminated and outlives the call; strtod only reads it and stores a
    // pointer into it in `end`; errno is this thread's.
    let (value, errno) = unsafe {
        *__errno_location() = 0;
        let v = strtod(c.as_ptr(), &mut end);
        (v, *__errno_location())
    };
    let used = (end as usize).wrapping_sub(c.as_ptr() as usize);
    (value, used, errno == ERANGE)
}

/// A float argument as Redis's `getDoubleFromObject` reads it (`string2d`): the whole text is
/// one number (`inf` and hex forms included), no leading space, no NaN, no overflow or
/// underflow to zero.
pub fn parse_double(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || arg[0].is_ascii_whitespace() || arg[0] == 0x0b || arg[0] == 0x0c {
        return None;
    }
    let (v, used, range) = strtod_prefix(arg);
    let range_err = range && (v.is_infinite() || v == 0.0);
    (used == arg.len() && !range_err && !v.is_nan()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_read_as_redis_reads_them() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"0x10"), Some(16.0));
        for bad in [&b""[..], b" 1", b"1 ", b"nan", b"1e400", b"abc", b"1\x002"] {
            assert_eq!(parse_double(bad), None, "{bad:?}");
        }
        assert_eq!(strtod_prefix(b"12ab"), (12.0, 2, false));
    }
}
