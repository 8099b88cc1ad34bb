//! Checks `RequestDecoder` against `tests/malformed.txt`, the table of request streams with the
//! replies redis-server 7 gives them (see the top of that file for the format).
//!
//! A tiny model server runs the two commands the table uses (PING and ECHO, with Redis's
//! arity and authentication checks) on what the decoder returns, and writes
//! `ProtocolError::write_reply` on an error, as the real server will.

use bytes::BytesMut;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rialto_resp::{
    write_bulk, write_error, write_simple, Limits, Protocol, Request, RequestDecoder,
};

struct Case {
    name: String,
    auth: bool,
    input: Vec<u8>,
    reply: Vec<u8>,
    close: bool,
}

fn unescape(text: &str, at: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex = text.get(i + 2..i + 4).unwrap_or("");
                let byte = u8::from_str_radix(hex, 16)
                    .unwrap_or_else(|_| panic!("{at}: bad \\x escape {hex:?}"));
                out.push(byte);
                i += 2;
            }
            other => panic!("{at}: bad escape {other:?}"),
        }
        i += 2;
    }
    out
}

fn parse_table(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut fields: Vec<(String, String, usize)> = Vec::new();
    for (number, line) in text.lines().chain(std::iter::once("")).enumerate() {
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            if !fields.is_empty() {
                cases.push(case_from(std::mem::take(&mut fields)));
            }
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("malformed.txt:{}: expected `key: value`", number + 1));
        let value = value.strip_prefix(' ').unwrap_or(value);
        fields.push((key.to_string(), value.to_string(), number + 1));
    }
    cases
}

fn case_from(fields: Vec<(String, String, usize)>) -> Case {
    let mut case = Case {
        name: String::new(),
        auth: false,
        input: Vec::new(),
        reply: Vec::new(),
        close: false,
    };
    let (mut has_reply, mut has_after) = (false, false);
    for (key, value, line) in fields {
        let at = format!("malformed.txt:{line}");
        match key.as_str() {
            "name" => case.name = value,
            "auth" => case.auth = value == "required",
            "input" => case.input.extend(unescape(&value, &at)),
            "repeat" => {
                let (count, text) = value.split_once(' ').unwrap_or((&value, ""));
                let count: usize = count.parse().unwrap_or_else(|_| panic!("{at}: bad count"));
                case.input.extend(unescape(text, &at).repeat(count));
            }
            "reply" => {
                case.reply = unescape(&value, &at);
                has_reply = true;
            }
            "after" => {
                case.close = match value.as_str() {
                    "close" => true,
                    "open" => false,
                    other => panic!("{at}: bad `after: {other}`"),
                };
                has_after = true;
            }
            other => panic!("{at}: unknown key {other:?}"),
        }
    }
    assert!(
        !case.name.is_empty() && has_reply && has_after,
        "case {:?} lacks name, reply or after",
        case.name
    );
    case
}

/// Runs one request as Redis would answer it.
fn execute(req: &Request, auth_required: bool, out: &mut BytesMut) {
    let p = Protocol::Resp2;
    let args = req.args();
    let name = args[0].to_ascii_lowercase();
    let arity_ok = match name.as_slice() {
        b"ping" => args.len() <= 2,
        b"echo" => args.len() == 2,
        other => panic!("the table may only use PING and ECHO, got {other:?}"),
    };
    if !arity_ok {
        let msg = format!(
            "ERR wrong number of arguments for '{}' command",
            String::from_utf8_lossy(&name)
        );
        write_error(out, p, msg.as_bytes());
    } else if auth_required {
        write_error(out, p, b"NOAUTH Authentication required.");
    } else if args.len() == 1 {
        write_simple(out, p, b"PONG");
    } else {
        write_bulk(out, p, &args[1]);
    }
}

/// Feeds `chunks` to a decoder as successive reads; returns the bytes answered and whether the
/// connection would be closed.
fn serve<'a>(auth: bool, chunks: impl IntoIterator<Item = &'a [u8]>) -> (Vec<u8>, bool) {
    let mut decoder = RequestDecoder::new(Limits::default());
    decoder.set_pre_auth(auth);
    let mut buf = BytesMut::new();
    let mut out = BytesMut::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(req)) => execute(&req, auth, &mut out),
                Ok(None) => break,
                Err(err) => {
                    err.write_reply(&mut out);
                    return (out.to_vec(), true);
                }
            }
        }
    }
    (out.to_vec(), false)
}

fn check(case: &Case, how: &str, got: (Vec<u8>, bool)) {
    assert_eq!(
        (String::from_utf8_lossy(&got.0), got.1),
        (String::from_utf8_lossy(&case.reply), case.close),
        "case {} fed {how}",
        case.name
    );
    assert_eq!(
        got.0, case.reply,
        "case {} fed {how} (raw bytes)",
        case.name
    );
}

fn load() -> Vec<Case> {
    let cases = parse_table(include_str!("malformed.txt"));
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "duplicate case names");
    assert!(cases.len() >= 60, "table lost cases: {}", cases.len());
    cases
}

#[test]
fn every_case_whole() {
    for case in load() {
        check(&case, "at once", serve(case.auth, [case.input.as_slice()]));
    }
}

#[test]
fn every_case_byte_by_byte() {
    for case in load() {
        check(
            &case,
            "byte by byte",
            serve(case.auth, case.input.chunks(1)),
        );
    }
}

#[test]
fn every_case_in_random_chunks() {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    for case in load() {
        for _ in 0..20 {
            let mut chunks = Vec::new();
            let mut rest = case.input.as_slice();
            while !rest.is_empty() {
                let max = if case.input.len() > 4096 { 8192 } else { 8 };
                let n = rng.gen_range(1..=max).min(rest.len());
                let (a, b) = rest.split_at(n);
                chunks.push(a);
                rest = b;
            }
            check(&case, "in random chunks", serve(case.auth, chunks));
        }
    }
}

#[test]
fn every_case_split_in_two_at_every_offset() {
    for case in load() {
        let step = if case.input.len() > 4096 { 997 } else { 1 };
        for at in (0..=case.input.len()).step_by(step) {
            let (a, b) = case.input.split_at(at);
            check(&case, &format!("split at {at}"), serve(case.auth, [a, b]));
        }
    }
}
