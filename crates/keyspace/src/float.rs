//! INCRBYFLOAT's arithmetic, in C `long double` as Redis computes it (`csrc/longdouble.c`), so
//! the stored text matches Redis's digit for digit.

use crate::error::{Error, Result};

extern "C" {
    fn rialto_ld_add(
        cur: *const u8,
        cur_len: usize,
        incr: *const u8,
        incr_len: usize,
        out: *mut u8,
        out_len: usize,
    ) -> std::os::raw::c_long;
}

/// `cur + incr` formatted as Redis formats it.
pub fn add(cur: &[u8], incr: &[u8]) -> Result<Vec<u8>> {
    let mut out = vec![0u8; 5 * 1024 + 64];
    // SAFETY: every pointer is valid for the length passed with it; the C side writes at most
    // `out.len()` bytes and reads at most the given input lengths.
    let n = unsafe {
        rialto_ld_add(
            cur.as_ptr(),
            cur.len(),
            incr.as_ptr(),
            incr.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    };
    match n {
        -1 => Err(Error::NotFloat),
        -2 => Err(Error::NanOrInfinity),
        n if n < 0 => Err(Error::FloatTooLong),
        n => {
            out.truncate(n as usize);
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::add;

    fn s(cur: &str, incr: &str) -> String {
        String::from_utf8(add(cur.as_bytes(), incr.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn formats_as_redis() {
        assert_eq!(s("10.50", "0.1"), "10.6");
        assert_eq!(s("0", "5.0e3"), "5000");
        assert_eq!(s("3", "-3"), "0");
        assert_eq!(s("0.1", "0.2"), "0.3");
        assert!(add(b"1", b"abc").is_err());
        assert!(add(b"1", b" 1").is_err());
        assert!(add(b"1", b"nan").is_err());
        assert!(add(b"1", b"").is_err());
        assert!(add(b"1e4932", b"1e4932").is_err());
    }
}
