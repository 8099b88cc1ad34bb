//! Number parsing and formatting by hand, on the hot path of every request and reply.

use bytes::{BufMut, BytesMut};

/// Parses `s` exactly as Redis's `string2ll` does: an optional `-`, then `0` alone or a digit
/// 1-9 followed by digits, fitting an `i64`, in fewer than 21 bytes. No `+`, no spaces, no
/// leading zeros, no `-0`.
pub fn parse_redis_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let (&first, rest) = digits.split_first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let magnitude = accumulate(u64::from(first - b'0'), rest)?;
    apply_sign(negative, magnitude)
}

/// Parses a RESP integer or length as sent by any server: an optional sign, then one or more
/// digits (leading zeros allowed), fitting an `i64`.
pub(crate) fn parse_resp_int(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    apply_sign(negative, accumulate(0, digits)?)
}

fn accumulate(mut v: u64, digits: &[u8]) -> Option<u64> {
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

fn apply_sign(negative: bool, magnitude: u64) -> Option<i64> {
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Writes `v` in decimal into the end of `out`, returning where the digits start.
fn format_i64(v: i64, out: &mut [u8; 20]) -> usize {
    let mut n = v.unsigned_abs();
    let mut pos = out.len();
    loop {
        pos -= 1;
        out[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        pos -= 1;
        out[pos] = b'-';
    }
    pos
}

/// Appends `<prefix><v>\r\n`.
pub(crate) fn put_line_int(buf: &mut BytesMut, prefix: u8, v: i64) {
    let mut digits = [0u8; 20];
    let start = format_i64(v, &mut digits);
    let digits = &digits[start..];
    buf.reserve(digits.len() + 3);
    buf.put_u8(prefix);
    buf.extend_from_slice(digits);
    buf.extend_from_slice(b"\r\n");
}

/// Appends `<prefix><len>\r\n` for a length.
pub(crate) fn put_line_len(buf: &mut BytesMut, prefix: u8, len: usize) {
    put_line_int(buf, prefix, i64::try_from(len).unwrap_or(i64::MAX));
}

/// Room for any double Redis formats: "-" + 17 digits + "." + "e-308" and change.
pub(crate) const DOUBLE_BUF: usize = 32;

/// Formats `d` as Redis 7.0's `addReplyDouble` does: `inf`, `-inf`, `nan`, and otherwise C's
/// `%.17g` (17 significant digits, trailing zeros dropped; plain when the exponent is in
/// -4..17, else `1.5e-07`, `1e+20`): `3`, `-0`, `0.10000000000000001`. Returns the length
/// written into `out`.
///
/// Redis 7.2 switched to the shortest round-trip digits (`0.1`); both read back as `d`.
pub(crate) fn format_double(d: f64, out: &mut [u8; DOUBLE_BUF]) -> usize {
    let mut w = Cursor { out, len: 0 };
    if d.is_nan() {
        w.put(b"nan");
    } else if d.is_infinite() {
        w.put(if d < 0.0 { b"-inf" } else { b"inf" });
    } else {
        format_g17(d, &mut w);
    }
    w.len
}

/// `d` as Redis's `ld2string(..., LD_STR_HUMAN)` writes it: 17 digits after the point
/// (exact decimal rounding, ties to even, as printf), then trailing zeros and a bare point
/// dropped, and `-0` written `0`: `13.36138933897018433`, `2`, `-0.5`.
pub fn format_human_double(d: f64) -> String {
    if !d.is_finite() {
        return if d.is_nan() {
            "nan".into()
        } else if d < 0.0 {
            "-inf".into()
        } else {
            "inf".into()
        };
    }
    let mut s = format!("{d:.17}");
    if s.contains('.') {
        let keep = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(keep);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

/// C's `%.17g` of finite `d`.
fn format_g17(d: f64, w: &mut Cursor<'_>) {
    use std::io::Write as _;
    const PRECISION: i64 = 17;
    // `{:.16e}` rounds to 17 significant digits exactly as printf does: `-d.dddde-7`.
    let mut sci = [0u8; DOUBLE_BUF + 8];
    let sci_len = {
        let mut slice = &mut sci[..];
        let before = slice.len();
        if write!(slice, "{d:.16e}").is_err() {
            return;
        }
        before - slice.len()
    };
    let sci = &sci[..sci_len];
    let Some(e_at) = sci.iter().position(|&b| b == b'e') else {
        return;
    };
    let (mantissa, exponent) = (&sci[..e_at], &sci[e_at + 1..]);
    let exponent = parse_resp_int(exponent).unwrap_or(0);
    let (negative, mantissa) = match mantissa.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, mantissa),
    };
    let mut digits = [0u8; PRECISION as usize];
    let mut n = 0usize;
    for &c in mantissa.iter().filter(|c| c.is_ascii_digit()) {
        if n < digits.len() {
            digits[n] = c;
            n += 1;
        }
    }
    // %g drops trailing zeros (the first digit stays: it is nonzero unless `d` is zero).
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    let digits = &digits[..n];
    if negative {
        w.put(b"-");
    }
    if (-4..PRECISION).contains(&exponent) {
        if exponent < 0 {
            w.put(b"0.");
            for _ in 0..(-exponent - 1) {
                w.put(b"0");
            }
            w.put(digits);
        } else {
            let int_len = exponent as usize + 1;
            if digits.len() <= int_len {
                w.put(digits);
                for _ in digits.len()..int_len {
                    w.put(b"0");
                }
            } else {
                let (int, frac) = digits.split_at(int_len);
                w.put(int);
                w.put(b".");
                w.put(frac);
            }
        }
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        w.put(first);
        if !rest.is_empty() {
            w.put(b".");
            w.put(rest);
        }
        w.put(if exponent < 0 { b"e-" } else { b"e+" });
        let exp = exponent.abs();
        if exp < 10 {
            w.put(b"0");
        }
        let mut e = [0u8; 20];
        let start = format_i64(exp, &mut e);
        w.put(&e[start..]);
    }
}

/// A bounded writer: bytes past the end are dropped (cannot happen for doubles, whose longest
/// form is 24 bytes).
struct Cursor<'a> {
    out: &'a mut [u8; DOUBLE_BUF],
    len: usize,
}

impl Cursor<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let end = (self.len + bytes.len()).min(DOUBLE_BUF);
        let n = end - self.len;
        self.out[self.len..end].copy_from_slice(&bytes[..n]);
        self.len = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis(s: &str) -> Option<i64> {
        parse_redis_int(s.as_bytes())
    }

    #[test]
    fn human_doubles_read_as_redis_writes_them() {
        // GEOPOS of Palermo as redis-server 7.0 replies it.
        assert_eq!(
            format_human_double(13.361_389_338_970_184),
            "13.36138933897018433"
        );
        assert_eq!(format_human_double(2.0), "2");
        assert_eq!(format_human_double(-0.5), "-0.5");
        assert_eq!(format_human_double(-0.0), "0");
        assert_eq!(format_human_double(1e-18), "0");
        assert_eq!(format_human_double(0.1), "0.10000000000000001");
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(redis("0"), Some(0));
        assert_eq!(redis("12"), Some(12));
        assert_eq!(redis("-1"), Some(-1));
        assert_eq!(redis("9223372036854775807"), Some(i64::MAX));
        assert_eq!(redis("-9223372036854775808"), Some(i64::MIN));
        for bad in [
            "",
            "-",
            "+1",
            "01",
            "-0",
            "00",
            " 1",
            "1 ",
            "1a",
            "9223372036854775808",
            "-9223372036854775809",
            "18446744073709551616",
            "000000000000000000001",
        ] {
            assert_eq!(redis(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn resp_int_rules() {
        assert_eq!(parse_resp_int(b"+5"), Some(5));
        assert_eq!(parse_resp_int(b"007"), Some(7));
        assert_eq!(parse_resp_int(b"-0"), Some(0));
        assert_eq!(parse_resp_int(b"-"), None);
        assert_eq!(parse_resp_int(b""), None);
        assert_eq!(parse_resp_int(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_resp_int(b"9223372036854775808"), None);
    }

    fn double(d: f64) -> String {
        let mut out = [0u8; DOUBLE_BUF];
        let n = format_double(d, &mut out);
        String::from_utf8_lossy(&out[..n]).into_owned()
    }

    #[test]
    fn doubles_like_redis_7_0() {
        let cases: &[(f64, &str)] = &[
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-42.0, "-42"),
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (0.30000000000000004, "0.30000000000000004"),
            (-0.001, "-0.001"),
            (2.5e-3, "0.0025000000000000001"),
            (1e-4, "0.0001"),
            (1e-7, "9.9999999999999995e-08"),
            (1.5e-7, "1.4999999999999999e-07"),
            (1e20, "1e+20"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (4611686018427387904.0, "4.6116860184273879e+18"),
            (1e300, "1.0000000000000001e+300"),
            (123456.7, "123456.7"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "4.9406564584124654e-324"),
        ];
        for &(d, want) in cases {
            assert_eq!(double(d), want, "{d:e}");
            let back: f64 = want.parse().unwrap_or(f64::NAN);
            assert!(back == d || (d.is_nan() && back.is_nan()));
        }
    }
}
