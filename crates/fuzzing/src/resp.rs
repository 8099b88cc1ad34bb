//! `resp_decode`: the request decoder (multibulk and inline forms) and the reply decoder of
//! `rialto-resp`, fed the same byte stream.
//!
//! Input layout: four configuration bytes, then the stream.
//! - byte 0: bits 0-2 pick `max_inline_len` (requests) and `max_line_len` (replies), bits 3-5
//!   `max_bulk_len` (both);
//! - byte 1: bits 0-2 `max_multibulk_len` / `max_aggregate_len`, bits 3-5 `max_bulk_prealloc`;
//! - byte 2: bits 0-2 `pre_auth_max_multibulk_len` / `max_depth`, bits 3-5
//!   `pre_auth_max_bulk_len`, bit 6 turns pre-authentication mode on;
//! - byte 3: how the stream is split into reads: 0 is one read, anything else seeds a
//!   pseudo-random split into pieces of 1 to `1 + (byte & 31)` bytes.
//!
//! Each 3-bit choice is a small value (0, 1, 3, 8, 64, 1024, 40 000: the last is above the
//! 32 KiB at which bulk reservation starts) or the default, so every limit's error path and
//! the bulk reservation path are reachable with short inputs.
//!
//! Checked, for each decoder:
//! - no panic;
//! - allocation during a decoding session stays within [`allocation_bound`] (enforced when
//!   the counting allocator of [`crate::alloc_meter`] is installed);
//! - the outcome (the values decoded, then the error or the wait for more bytes) does not
//!   depend on how the stream was split into reads, as both decoders promise;
//! - errors are sticky: the call after an error returns the same error;
//! - every decoded request, encoded as a client sends it, decodes to the same arguments;
//!   every decoded reply, encoded for RESP3 and for RESP2, decodes to
//!   [`Reply::as_received`] of itself;
//! - a request error's reply (`ProtocolError::write_reply`) is one well-formed error reply.

use std::fmt::Write as _;

use bytes::BytesMut;
use rialto_resp::{
    write_request, Limits, Protocol, ProtocolError, Reply, ReplyDecodeError, ReplyDecoder,
    ReplyLimits, Request, RequestDecoder,
};

use crate::alloc_meter;
use crate::input::Input;

/// Small limit values, indexed by a 3-bit choice; choice 7 is the limit's default.
const SMALL: [usize; 7] = [0, 1, 3, 8, 64, 1024, 40_000];

fn pick(choice: u8, default: usize) -> usize {
    SMALL
        .get(usize::from(choice & 7))
        .copied()
        .unwrap_or(default)
}

/// Nesting depths tried for replies: deep enough to exercise the stack of aggregates, shallow
/// enough that the recursive `Reply::encode` and `Drop` of the checks stay far from the
/// stack's end.
const DEPTHS: [usize; 8] = [0, 1, 2, 3, 8, 64, 1024, 128];

/// Most bytes one decoding session may take from the allocator, for `n` bytes received:
///
/// `64 × n + 2 × max_bulk_prealloc + 256 KiB`
///
/// Why each term: the read buffer holds at most `n` bytes and doubles when it grows (`2n`);
/// the arguments or values being built are 32- to 64-byte handles for at least 2 to 3 input
/// bytes each, doubled by vector growth (`≤ 48n`); the bulk reservation reserves at most
/// `max(max_bulk_prealloc, 2 × buffered)` ahead, doubled by `BytesMut` growth
/// (`2 × max_bulk_prealloc + 4n`); the constant covers `BytesMut` reallocating a shared buffer
/// to its remembered original capacity (at most 64 KiB) and the request decoder's 256-slot
/// argument preallocation (8 KiB). A decoder that allocates for a claimed length instead of
/// the bytes received (a 15-byte `$536870912` making it reserve 512 MiB) fails this bound, as
/// did nested aggregate headers that each preallocated slots for the whole buffer (5 MB for
/// 4 KB; fixed, kept as fuzz/regressions/resp_decode/nested-aggregate-prealloc).
fn allocation_bound(n: usize, prealloc: usize) -> usize {
    n.saturating_mul(64)
        .saturating_add(prealloc.saturating_mul(2))
        .saturating_add(256 * 1024)
}

/// The fuzz target. See the [module docs](self).
pub fn resp_decode(data: &[u8]) {
    let mut input = Input::new(data);
    let cfg = [input.u8(), input.u8(), input.u8(), input.u8()];
    let stream = input.rest();
    let limits = Limits {
        max_inline_len: pick(cfg[0], Limits::default().max_inline_len),
        max_bulk_len: pick(cfg[0] >> 3, Limits::default().max_bulk_len),
        max_multibulk_len: pick(cfg[1], Limits::default().max_multibulk_len),
        max_bulk_prealloc: pick(cfg[1] >> 3, Limits::default().max_bulk_prealloc),
        pre_auth_max_multibulk_len: pick(cfg[2], Limits::default().pre_auth_max_multibulk_len),
        pre_auth_max_bulk_len: pick(cfg[2] >> 3, Limits::default().pre_auth_max_bulk_len),
    };
    let pre_auth = cfg[2] & 0x40 != 0;
    check_requests(stream, limits, pre_auth, cfg[3]);
    let reply_limits = ReplyLimits {
        max_line_len: pick(cfg[0], ReplyLimits::default().max_line_len),
        max_bulk_len: limits.max_bulk_len,
        max_aggregate_len: pick(cfg[1], ReplyLimits::default().max_aggregate_len),
        max_bulk_prealloc: limits.max_bulk_prealloc,
        max_depth: DEPTHS[usize::from(cfg[2] & 7)],
    };
    check_replies(stream, reply_limits, cfg[3]);
}

/// What a decoding session produced: how many values, a digest of their `Debug` forms (so
/// that comparing sessions allocates nothing), and the error that ended it, if any.
#[derive(Debug, PartialEq)]
struct Outcome<E> {
    values: usize,
    digest: u64,
    error: Option<E>,
}

/// FNV-1a over formatted text.
struct Digest(u64);

impl std::fmt::Write for Digest {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Ok(())
    }
}

/// The stream cut into reads: whole for `split == 0`, else pseudo-random pieces. Always at
/// least one (possibly empty) piece, so the decoder is called on an empty buffer too.
fn pieces(stream: &[u8], split: u8) -> Vec<&[u8]> {
    if split == 0 || stream.is_empty() {
        return vec![stream];
    }
    let max = 1 + usize::from(split & 31);
    let mut state = u32::from(split).wrapping_mul(0x9e37_79b9) | 1;
    let mut out = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (1 + state as usize % max).min(rest.len());
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
    }
    out
}

/// Feeds `reads` to a decoder one by one, decoding after each until it needs more bytes or
/// fails; `each` sees every decoded value. Checks that errors are sticky.
fn session<T: std::fmt::Debug, E: std::fmt::Debug + PartialEq + Copy>(
    reads: &[&[u8]],
    mut decode: impl FnMut(&mut BytesMut) -> Result<Option<T>, E>,
    mut each: impl FnMut(&T),
) -> Outcome<E> {
    let mut buf = BytesMut::new();
    let mut digest = Digest(0xcbf2_9ce4_8422_2325);
    let mut values = 0;
    for read in reads {
        buf.extend_from_slice(read);
        loop {
            match decode(&mut buf) {
                Ok(Some(v)) => {
                    values += 1;
                    // Writing to `Digest` cannot fail.
                    let _ = write!(digest, "{v:?};");
                    each(&v);
                }
                Ok(None) => break,
                Err(e) => {
                    assert_eq!(decode(&mut buf).err(), Some(e), "errors must be sticky");
                    return Outcome {
                        values,
                        digest: digest.0,
                        error: Some(e),
                    };
                }
            }
        }
    }
    Outcome {
        values,
        digest: digest.0,
        error: None,
    }
}

/// Runs `run` under the allocation meter and checks the bound for `n` received bytes.
fn metered<R>(what: &str, n: usize, prealloc: usize, run: impl FnOnce() -> R) -> R {
    let (result, peak) = alloc_meter::measure(run);
    if let Some(peak) = peak {
        let bound = allocation_bound(n, prealloc);
        assert!(
            peak <= bound,
            "{what}: allocated {peak} bytes for {n} bytes received (bound {bound})"
        );
    }
    result
}

fn check_requests(stream: &[u8], limits: Limits, pre_auth: bool, split: u8) {
    let new_decoder = || {
        let mut d = RequestDecoder::new(limits);
        d.set_pre_auth(pre_auth);
        d
    };
    let prealloc = limits.max_bulk_prealloc;
    let whole = metered("request decoder, one read", stream.len(), prealloc, || {
        let mut d = new_decoder();
        session(&[stream], |b| d.decode(b), |_| {})
    });
    let reads = pieces(stream, split);
    let split_outcome = metered(
        "request decoder, split reads",
        stream.len(),
        prealloc,
        || {
            let mut d = new_decoder();
            session(&reads, |b| d.decode(b), |_| {})
        },
    );
    assert_eq!(whole, split_outcome, "request outcome depends on the split");

    // Not metered: the round trips allocate for their own checks.
    let mut d = new_decoder();
    let checked = session(
        &[stream],
        |b| d.decode(b),
        |r| request_round_trip(r, limits, pre_auth),
    );
    if let Some(e) = checked.error {
        check_error_reply(e);
    }
}

/// A decoded request, encoded as clients send it, decodes to the same arguments. A multibulk
/// request passed the limits, so its canonical (never longer) encoding passes them again;
/// an inline one is re-read with the default limits, since inline requests have no count or
/// bulk limits of their own.
fn request_round_trip(r: &Request, limits: Limits, pre_auth: bool) {
    assert!(!r.args().is_empty(), "a decoded request has arguments");
    let (limits, pre_auth) = if r.is_inline() {
        (Limits::default(), false)
    } else {
        (limits, pre_auth)
    };
    let mut buf = BytesMut::new();
    write_request(&mut buf, r.args());
    let mut d = RequestDecoder::new(limits);
    d.set_pre_auth(pre_auth);
    let again = d.decode(&mut buf);
    assert_eq!(
        again,
        Ok(Some(Request::new(r.args().to_vec()))),
        "request round trip"
    );
    assert!(buf.is_empty(), "round trip left {} bytes", buf.len());
}

/// The reply sent for a protocol error is a single `-ERR Protocol error: ...` line.
fn check_error_reply(e: ProtocolError) {
    let mut buf = BytesMut::new();
    e.write_reply(&mut buf);
    match ReplyDecoder::default().decode(&mut buf) {
        Ok(Some(Reply::Error(text))) => {
            assert!(text.starts_with(b"ERR Protocol error: "), "{text:?}");
        }
        other => panic!("error reply of {e:?} decodes as {other:?}"),
    }
    assert!(buf.is_empty(), "error reply of {e:?} has trailing bytes");
}

fn check_replies(stream: &[u8], limits: ReplyLimits, split: u8) {
    let prealloc = limits.max_bulk_prealloc;
    let whole = metered("reply decoder, one read", stream.len(), prealloc, || {
        let mut d = ReplyDecoder::new(limits);
        session(&[stream], |b| d.decode(b), |_| {})
    });
    let reads = pieces(stream, split);
    let split_outcome = metered("reply decoder, split reads", stream.len(), prealloc, || {
        let mut d = ReplyDecoder::new(limits);
        session(&reads, |b| d.decode(b), |_| {})
    });
    assert_eq!(whole, split_outcome, "reply outcome depends on the split");

    let mut d = ReplyDecoder::new(limits);
    let checked: Outcome<ReplyDecodeError> = session(&[stream], |b| d.decode(b), reply_round_trip);
    assert_eq!(checked, whole);
}

/// A decoded reply, encoded for each protocol, decodes to what a peer of that protocol
/// receives. Limits are the defaults, deep enough for any reply the fuzzed decoder accepted.
fn reply_round_trip(r: &Reply) {
    for proto in [Protocol::Resp3, Protocol::Resp2] {
        let mut buf = BytesMut::new();
        r.encode(proto, &mut buf);
        let mut d = ReplyDecoder::new(ReplyLimits {
            max_depth: 2048,
            ..ReplyLimits::default()
        });
        let again = match d.decode(&mut buf) {
            Ok(Some(again)) => again,
            other => panic!("{r:?} encoded for {proto:?} decodes as {other:?}"),
        };
        let want = r.as_received(proto);
        assert!(
            same(&again, &want),
            "{proto:?} round trip: got {again:?}, want {want:?}"
        );
        assert!(
            buf.is_empty(),
            "{proto:?} round trip left {} bytes",
            buf.len()
        );
    }
}

/// Reply equality in which NaN equals NaN (`Reply`'s `PartialEq` follows `f64`'s) and zeros
/// of different signs differ (the encoding keeps the sign).
fn same(a: &Reply, b: &Reply) -> bool {
    let lists =
        |x: &[Reply], y: &[Reply]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
    let pairs = |x: &[(Reply, Reply)], y: &[(Reply, Reply)]| {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
    };
    match (a, b) {
        (Reply::Double(x), Reply::Double(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Reply::Array(x), Reply::Array(y))
        | (Reply::Set(x), Reply::Set(y))
        | (Reply::Push(x), Reply::Push(y)) => lists(x, y),
        (Reply::Map(x), Reply::Map(y)) | (Reply::Pairs(x), Reply::Pairs(y)) => pairs(x, y),
        (
            Reply::Attribute {
                attrs: a1,
                reply: r1,
            },
            Reply::Attribute {
                attrs: a2,
                reply: r2,
            },
        ) => pairs(a1, a2) && same(r1, r2),
        _ => a == b,
    }
}
