//! Writing replies (and client requests) straight into an output buffer, one value or aggregate
//! header at a time, so a server can stream a large reply without building a [`Reply`] tree.
//!
//! Every reply writer takes the connection's [`Protocol`] and writes what Redis 7's `addReply*`
//! functions write for it: under RESP2, maps become flat arrays of 2n elements, sets and pushes
//! arrays, doubles/big numbers/verbatim strings bulk strings, booleans the integers 1 and 0,
//! and the null bulk `$-1` (the null array `*-1`); under RESP3 both nulls are `_`.
//!
//! An aggregate header must be followed by exactly that many values (2n for a map's n pairs,
//! whatever the protocol): the writers do not track nesting.
//!
//! [`Reply`]: crate::Reply

use bytes::{BufMut, BytesMut};

use crate::num::{format_double, format_human_double, put_line_int, put_line_len, DOUBLE_BUF};
use crate::reply::Protocol;

fn put_crlf(buf: &mut BytesMut) {
    buf.extend_from_slice(b"\r\n");
}

/// Appends `prefix`, `text` with `\r` and `\n` replaced by spaces, and CRLF: a line that
/// cannot break the stream whatever the text holds.
fn put_line(buf: &mut BytesMut, prefix: u8, text: &[u8]) {
    buf.reserve(text.len() + 3);
    buf.put_u8(prefix);
    if text.iter().any(|&b| b == b'\r' || b == b'\n') {
        buf.extend(
            text.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
    } else {
        buf.extend_from_slice(text);
    }
    put_crlf(buf);
}

/// A simple string: `+OK\r\n`. `\r` and `\n` in `text` are written as spaces.
pub fn write_simple(buf: &mut BytesMut, _proto: Protocol, text: &[u8]) {
    put_line(buf, b'+', text);
}

/// An error: `-ERR message\r\n`. `message` starts with the error code (`ERR`, `WRONGTYPE`,
/// ...); `\r` and `\n` in it are written as spaces.
pub fn write_error(buf: &mut BytesMut, _proto: Protocol, message: &[u8]) {
    put_line(buf, b'-', message);
}

/// An integer: `:42\r\n`.
pub fn write_int(buf: &mut BytesMut, _proto: Protocol, n: i64) {
    put_line_int(buf, b':', n);
}

/// A bulk string: `$5\r\nhello\r\n`.
pub fn write_bulk(buf: &mut BytesMut, _proto: Protocol, data: &[u8]) {
    buf.reserve(data.len() + 16);
    put_line_len(buf, b'$', data.len());
    buf.extend_from_slice(data);
    put_crlf(buf);
}

/// The null bulk string (a missing key): RESP2 `$-1\r\n`, RESP3 `_\r\n`.
pub fn write_null(buf: &mut BytesMut, proto: Protocol) {
    buf.extend_from_slice(match proto {
        Protocol::Resp2 => b"$-1\r\n",
        Protocol::Resp3 => b"_\r\n",
    });
}

/// The null array (e.g. a timed-out `BLPOP`): RESP2 `*-1\r\n`, RESP3 `_\r\n`.
pub fn write_null_array(buf: &mut BytesMut, proto: Protocol) {
    buf.extend_from_slice(match proto {
        Protocol::Resp2 => b"*-1\r\n",
        Protocol::Resp3 => b"_\r\n",
    });
}

/// An array header: `*<len>\r\n`; `len` values follow.
pub fn write_array_header(buf: &mut BytesMut, _proto: Protocol, len: usize) {
    put_line_len(buf, b'*', len);
}

/// A map header for `pairs` key-value pairs, which follow as 2 × `pairs` values:
/// RESP3 `%<pairs>\r\n`, RESP2 `*<2 × pairs>\r\n`.
pub fn write_map_header(buf: &mut BytesMut, proto: Protocol, pairs: usize) {
    match proto {
        Protocol::Resp2 => put_line_len(buf, b'*', pairs.saturating_mul(2)),
        Protocol::Resp3 => put_line_len(buf, b'%', pairs),
    }
}

/// A set header: RESP3 `~<len>\r\n`, RESP2 `*<len>\r\n`.
pub fn write_set_header(buf: &mut BytesMut, proto: Protocol, len: usize) {
    match proto {
        Protocol::Resp2 => put_line_len(buf, b'*', len),
        Protocol::Resp3 => put_line_len(buf, b'~', len),
    }
}

/// A push header (pub/sub messages, invalidations): RESP3 `><len>\r\n`, RESP2 `*<len>\r\n`.
pub fn write_push_header(buf: &mut BytesMut, proto: Protocol, len: usize) {
    match proto {
        Protocol::Resp2 => put_line_len(buf, b'*', len),
        Protocol::Resp3 => put_line_len(buf, b'>', len),
    }
}

/// An attribute header, `|<pairs>\r\n`, to be followed by 2 × `pairs` values and then the
/// reply they describe. RESP2 has no attributes: nothing is written and `false` returned, and
/// the caller must then skip the pairs and write only the reply (Redis never sends attributes
/// to RESP2 clients).
#[must_use = "under RESP2 the attribute pairs must not be written"]
pub fn write_attribute_header(buf: &mut BytesMut, proto: Protocol, pairs: usize) -> bool {
    match proto {
        Protocol::Resp2 => false,
        Protocol::Resp3 => {
            put_line_len(buf, b'|', pairs);
            true
        }
    }
}

/// A double: RESP3 `,1.5\r\n`, RESP2 the bulk string `$3\r\n1.5\r\n`. Formatted as Redis 7.0's
/// `addReplyDouble`: `inf`, `-inf`, `nan`, otherwise C's `%.17g` (`3`, `-0`,
/// `0.10000000000000001`, `1e+20`).
pub fn write_double(buf: &mut BytesMut, proto: Protocol, d: f64) {
    let mut text = [0u8; DOUBLE_BUF];
    let n = format_double(d, &mut text);
    let text = text.get(..n).unwrap_or_default();
    match proto {
        Protocol::Resp2 => write_bulk(buf, proto, text),
        Protocol::Resp3 => {
            buf.reserve(n + 3);
            buf.put_u8(b',');
            buf.extend_from_slice(text);
            put_crlf(buf);
        }
    }
}

/// A double in Redis's human form ([`format_human_double`]): RESP3 `,text`, RESP2 the bulk
/// string of the text.
pub fn write_human_double(buf: &mut BytesMut, proto: Protocol, d: f64) {
    let text = format_human_double(d);
    match proto {
        Protocol::Resp2 => write_bulk(buf, proto, text.as_bytes()),
        Protocol::Resp3 => {
            buf.reserve(text.len() + 3);
            buf.put_u8(b',');
            buf.extend_from_slice(text.as_bytes());
            put_crlf(buf);
        }
    }
}

/// A boolean: RESP3 `#t\r\n`/`#f\r\n`, RESP2 `:1\r\n`/`:0\r\n`.
pub fn write_bool(buf: &mut BytesMut, proto: Protocol, b: bool) {
    match proto {
        Protocol::Resp2 => write_int(buf, proto, i64::from(b)),
        Protocol::Resp3 => buf.extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
    }
}

/// A big number (`digits` is an optionally signed run of decimal digits): RESP3
/// `(<digits>\r\n`, RESP2 the bulk string of the digits.
pub fn write_big_number(buf: &mut BytesMut, proto: Protocol, digits: &[u8]) {
    match proto {
        Protocol::Resp2 => write_bulk(buf, proto, digits),
        Protocol::Resp3 => put_line(buf, b'(', digits),
    }
}

/// A verbatim string with a 3-byte format (`*b"txt"`, `*b"mkd"`): RESP3
/// `=<len + 4>\r\n<format>:<text>\r\n`, RESP2 the bulk string of `text`.
pub fn write_verbatim(buf: &mut BytesMut, proto: Protocol, format: [u8; 3], text: &[u8]) {
    match proto {
        Protocol::Resp2 => write_bulk(buf, proto, text),
        Protocol::Resp3 => {
            buf.reserve(text.len() + 24);
            put_line_len(buf, b'=', text.len().saturating_add(4));
            buf.extend_from_slice(&format);
            buf.put_u8(b':');
            buf.extend_from_slice(text);
            put_crlf(buf);
        }
    }
}

/// A blob error, whose text may hold any bytes: RESP3 `!<len>\r\n<message>\r\n`, RESP2 a
/// simple error with `\r` and `\n` as spaces.
pub fn write_blob_error(buf: &mut BytesMut, proto: Protocol, message: &[u8]) {
    match proto {
        Protocol::Resp2 => write_error(buf, proto, message),
        Protocol::Resp3 => {
            buf.reserve(message.len() + 16);
            put_line_len(buf, b'!', message.len());
            buf.extend_from_slice(message);
            put_crlf(buf);
        }
    }
}

/// A client request: `*<n>\r\n` then `$<len>\r\n<arg>\r\n` per argument, the form every
/// client sends (the same in RESP2 and RESP3).
pub fn write_request<A: AsRef<[u8]>>(buf: &mut BytesMut, args: &[A]) {
    put_line_len(buf, b'*', args.len());
    for arg in args {
        let arg = arg.as_ref();
        buf.reserve(arg.len() + 16);
        put_line_len(buf, b'$', arg.len());
        buf.extend_from_slice(arg);
        put_crlf(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
        let mut buf = BytesMut::new();
        f(&mut buf);
        buf.to_vec()
    }

    const R2: Protocol = Protocol::Resp2;
    const R3: Protocol = Protocol::Resp3;

    #[test]
    fn scalars_in_both_protocols() {
        for p in [R2, R3] {
            assert_eq!(out(|b| write_simple(b, p, b"OK")), b"+OK\r\n");
            assert_eq!(out(|b| write_simple(b, p, b"a\r\nb")), b"+a  b\r\n");
            assert_eq!(out(|b| write_error(b, p, b"ERR x\ny")), b"-ERR x y\r\n");
            assert_eq!(out(|b| write_int(b, p, -7)), b":-7\r\n");
            assert_eq!(
                out(|b| write_int(b, p, i64::MIN)),
                b":-9223372036854775808\r\n"
            );
            assert_eq!(out(|b| write_bulk(b, p, b"")), b"$0\r\n\r\n");
            assert_eq!(out(|b| write_bulk(b, p, b"a\r\n")), b"$3\r\na\r\n\r\n");
            assert_eq!(out(|b| write_array_header(b, p, 3)), b"*3\r\n");
        }
    }

    #[test]
    fn resp2_downgrades_like_redis() {
        assert_eq!(out(|b| write_null(b, R2)), b"$-1\r\n");
        assert_eq!(out(|b| write_null_array(b, R2)), b"*-1\r\n");
        assert_eq!(out(|b| write_map_header(b, R2, 2)), b"*4\r\n");
        assert_eq!(out(|b| write_set_header(b, R2, 2)), b"*2\r\n");
        assert_eq!(out(|b| write_push_header(b, R2, 3)), b"*3\r\n");
        assert_eq!(out(|b| write_double(b, R2, 1.5)), b"$3\r\n1.5\r\n");
        assert_eq!(
            out(|b| write_double(b, R2, f64::INFINITY)),
            b"$3\r\ninf\r\n"
        );
        assert_eq!(out(|b| write_double(b, R2, -3.0)), b"$2\r\n-3\r\n");
        assert_eq!(out(|b| write_bool(b, R2, true)), b":1\r\n");
        assert_eq!(out(|b| write_bool(b, R2, false)), b":0\r\n");
        assert_eq!(out(|b| write_big_number(b, R2, b"-123")), b"$4\r\n-123\r\n");
        assert_eq!(
            out(|b| write_verbatim(b, R2, *b"txt", b"hi")),
            b"$2\r\nhi\r\n"
        );
        assert_eq!(
            out(|b| write_blob_error(b, R2, b"ERR a\nb")),
            b"-ERR a b\r\n"
        );
        let mut buf = BytesMut::new();
        assert!(!write_attribute_header(&mut buf, R2, 1));
        assert!(buf.is_empty());
    }

    #[test]
    fn resp3_types() {
        assert_eq!(out(|b| write_null(b, R3)), b"_\r\n");
        assert_eq!(out(|b| write_null_array(b, R3)), b"_\r\n");
        assert_eq!(out(|b| write_map_header(b, R3, 2)), b"%2\r\n");
        assert_eq!(out(|b| write_set_header(b, R3, 2)), b"~2\r\n");
        assert_eq!(out(|b| write_push_header(b, R3, 3)), b">3\r\n");
        assert_eq!(
            out(|b| write_double(b, R3, 0.1)),
            b",0.10000000000000001\r\n"
        );
        assert_eq!(
            out(|b| write_double(b, R3, f64::NEG_INFINITY)),
            b",-inf\r\n"
        );
        assert_eq!(out(|b| write_double(b, R3, f64::NAN)), b",nan\r\n");
        assert_eq!(out(|b| write_bool(b, R3, true)), b"#t\r\n");
        assert_eq!(out(|b| write_big_number(b, R3, b"123")), b"(123\r\n");
        assert_eq!(
            out(|b| write_verbatim(b, R3, *b"txt", b"Some string")),
            b"=15\r\ntxt:Some string\r\n"
        );
        assert_eq!(
            out(|b| write_blob_error(b, R3, b"SYNTAX x")),
            b"!8\r\nSYNTAX x\r\n"
        );
        let mut buf = BytesMut::new();
        assert!(write_attribute_header(&mut buf, R3, 1));
        assert_eq!(&buf[..], b"|1\r\n");
    }

    #[test]
    fn requests() {
        assert_eq!(
            out(|b| write_request(b, &["GET", "key"])),
            b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
        );
        assert_eq!(out(|b| write_request::<&[u8]>(b, &[])), b"*0\r\n");
    }
}
