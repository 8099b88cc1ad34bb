//! Splitting an inline request line into arguments, with the rules of Redis's `sdssplitargs`.
//!
//! - Arguments are separated by runs of C `isspace` bytes (space, `\t`, `\n`, `\v`, `\f`,
//!   `\r`), but an unquoted argument ends only at space, `\t`, `\n` or `\r`: a `\v` or `\f`
//!   inside one is kept.
//! - `"..."` may appear anywhere in an argument; inside it `\xHH` is a byte, `\n \r \t \b \a`
//!   are escapes and `\` before any other byte yields that byte.
//! - `'...'` likewise, with only `\'` as an escape.
//! - A closing quote must be followed by `isspace` or the end of the line, and every quote must
//!   be closed, else the request is refused ("unbalanced quotes").
//!
//! Arguments without quotes are zero-copy slices of the line; quoted ones are copied.

use bytes::Bytes;

/// C `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// One argument being built: a range of the line while it has no quotes, bytes once it has.
enum Arg {
    Range(usize, usize),
    Owned(Vec<u8>),
}

impl Arg {
    /// Appends the byte at `line[pos]`.
    fn push_at(&mut self, line: &[u8], pos: usize) {
        match self {
            Arg::Range(_, end) if *end == pos => *end += 1,
            _ => self.push(line, line.get(pos).copied().unwrap_or(0)),
        }
    }

    /// Appends a byte that is not the next one of the line.
    fn push(&mut self, line: &[u8], b: u8) {
        if let Arg::Range(start, end) = *self {
            *self = Arg::Owned(line.get(start..end).unwrap_or_default().to_vec());
        }
        if let Arg::Owned(v) = self {
            v.push(b);
        }
    }

    fn finish(self, line: &Bytes) -> Bytes {
        match self {
            Arg::Range(start, end) => line.slice(start..end),
            Arg::Owned(v) => Bytes::from(v),
        }
    }
}

/// Splits `line` (without its `\n` or `\r\n`). `None` means unbalanced quotes. The line holds
/// no NUL byte (the decoder never finds a line end past one, as Redis's `strchr`), but a NUL
/// would end the line here as it does in C.
pub fn split_args(line: &Bytes) -> Option<Vec<Bytes>> {
    let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
    let s = line.get(..end).unwrap_or_default();
    let at = |i: usize| s.get(i).copied();
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while at(p).is_some_and(is_space) {
            p += 1;
        }
        if p >= s.len() {
            return Some(args);
        }
        let mut arg = Arg::Range(p, p);
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let c = at(p);
            if in_double {
                match c {
                    None => return None,
                    Some(b'\\') if at(p + 1) == Some(b'x') => {
                        match (at(p + 2).and_then(hex_value), at(p + 3).and_then(hex_value)) {
                            (Some(hi), Some(lo)) => {
                                arg.push(s, hi * 16 + lo);
                                p += 3;
                            }
                            _ => {
                                // `\x` without two hex digits: the default escape, `x`.
                                p += 1;
                                arg.push(s, b'x');
                            }
                        }
                    }
                    Some(b'\\') if at(p + 1).is_some() => {
                        p += 1;
                        let escaped = match at(p).unwrap_or(0) {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        };
                        arg.push(s, escaped);
                    }
                    Some(b'"') => {
                        if at(p + 1).is_some_and(|n| !is_space(n)) {
                            return None;
                        }
                        p += 1;
                        break;
                    }
                    Some(_) => arg.push(s, at(p).unwrap_or(0)),
                }
            } else if in_single {
                match c {
                    None => return None,
                    Some(b'\\') if at(p + 1) == Some(b'\'') => {
                        p += 1;
                        arg.push(s, b'\'');
                    }
                    Some(b'\'') => {
                        if at(p + 1).is_some_and(|n| !is_space(n)) {
                            return None;
                        }
                        p += 1;
                        break;
                    }
                    Some(_) => arg.push(s, at(p).unwrap_or(0)),
                }
            } else {
                match c {
                    None => break,
                    Some(b' ' | b'\n' | b'\r' | b'\t') => {
                        p += 1;
                        break;
                    }
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(_) => arg.push_at(s, p),
                }
            }
            p += 1;
        }
        args.push(arg.finish(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &[u8]) -> Option<Vec<Vec<u8>>> {
        split_args(&Bytes::copy_from_slice(s)).map(|v| v.into_iter().map(|b| b.to_vec()).collect())
    }

    fn ok(s: &[u8], want: &[&[u8]]) {
        let want: Vec<Vec<u8>> = want.iter().map(|w| w.to_vec()).collect();
        assert_eq!(split(s), Some(want), "{:?}", String::from_utf8_lossy(s));
    }

    #[test]
    fn plain_words() {
        ok(b"", &[]);
        ok(b"   \t ", &[]);
        ok(b"GET key", &[b"GET", b"key"]);
        ok(b"  SET  a\tb  ", &[b"SET", b"a", b"b"]);
        ok(b"a\rb", &[b"a", b"b"]);
        // \v and \f are blanks between arguments but not inside one.
        ok(b"\x0ba\x0bb\x0c", &[b"a\x0bb\x0c"]);
    }

    #[test]
    fn double_quotes() {
        ok(br#""hello world""#, &[b"hello world"]);
        ok(br#""""#, &[b""]);
        ok(br#"x"b c""#, &[b"xb c"]);
        ok(
            br#""\x41\x4a\x4A\n\r\t\b\a\\\"\q""#,
            &[b"AJJ\n\r\t\x08\x07\\\"q"],
        );
        ok(br#""\x4g""#, &[b"x4g"]);
        ok(br#""\x""#, &[b"x"]);
        ok(b"\"a\"\x0bb", &[b"a", b"b"]);
    }

    #[test]
    fn single_quotes() {
        ok(br#"'a b' 'it\'s' '\n'"#, &[b"a b", b"it's", b"\\n"]);
        ok(br#"''"#, &[b""]);
    }

    #[test]
    fn unbalanced() {
        for bad in [
            &br#""abc"#[..],
            br#"'abc"#,
            br#""abc"d"#,
            br#"'abc'd"#,
            br#"a "b"#,
            br#"a"b c"d"#,
            br#""abc\""#,
            b"\"a\\",
        ] {
            assert_eq!(split(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn unquoted_args_are_slices_of_the_line() {
        let line = Bytes::from_static(b"GET key");
        let args = split_args(&line).unwrap_or_default();
        assert_eq!(args.len(), 2);
        assert_eq!(args[1].as_ptr(), line[4..].as_ptr());
    }
}
