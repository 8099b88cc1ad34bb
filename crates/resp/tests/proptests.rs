//! Property tests: replies round-trip through encode and decode in both protocols, requests
//! round-trip through both request forms, and no byte sequence makes either decoder panic or
//! answer differently depending on how the bytes were split into reads.

use bytes::{Bytes, BytesMut};
use proptest::collection::vec;
use proptest::prelude::*;
use rialto_resp::{
    write_request, Limits, Protocol, ProtocolError, Reply, ReplyDecodeError, ReplyDecoder,
    ReplyLimits, RequestDecoder,
};

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn big_number() -> impl Strategy<Value = Bytes> {
    "-?[1-9][0-9]{0,40}|0".prop_map(Bytes::from)
}

fn reply() -> impl Strategy<Value = Reply> {
    let leaf = prop_oneof![
        bytes(12).prop_map(Reply::Simple),
        bytes(12).prop_map(Reply::Error),
        any::<i64>().prop_map(Reply::Integer),
        bytes(40).prop_map(Reply::Bulk),
        Just(Reply::Null),
        Just(Reply::NullArray),
        any::<f64>().prop_map(Reply::Double),
        prop_oneof![
            Just(0.1),
            Just(-0.0),
            Just(1e300),
            Just(5e-324),
            Just(1.5e-7)
        ]
        .prop_map(Reply::Double),
        any::<bool>().prop_map(Reply::Boolean),
        big_number().prop_map(Reply::BigNumber),
        (any::<[u8; 3]>(), bytes(20)).prop_map(|(format, text)| Reply::Verbatim { format, text }),
        bytes(20).prop_map(Reply::BlobError),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Reply::Array),
            vec(inner.clone(), 0..6).prop_map(Reply::Set),
            vec(inner.clone(), 0..6).prop_map(Reply::Push),
            vec((inner.clone(), inner.clone()), 0..4).prop_map(Reply::Map),
            (vec((inner.clone(), inner.clone()), 0..3), inner).prop_map(|(attrs, reply)| {
                Reply::Attribute {
                    attrs,
                    reply: Box::new(reply),
                }
            }),
        ]
    })
}

/// Equality with doubles compared bit for bit (NaN equals NaN, 0 differs from -0).
fn same(a: &Reply, b: &Reply) -> bool {
    let all =
        |x: &[Reply], y: &[Reply]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
    let pairs = |x: &[(Reply, Reply)], y: &[(Reply, Reply)]| {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
    };
    match (a, b) {
        (Reply::Double(x), Reply::Double(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Reply::Array(x), Reply::Array(y))
        | (Reply::Set(x), Reply::Set(y))
        | (Reply::Push(x), Reply::Push(y)) => all(x, y),
        (Reply::Map(x), Reply::Map(y)) => pairs(x, y),
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

/// Splits `data` at the given cut points (taken modulo its length, sorted).
fn split<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for p in points {
        out.push(&data[start..p]);
        start = p;
    }
    out.push(&data[start..]);
    out
}

fn decode_replies(chunks: &[&[u8]], limits: ReplyLimits) -> (Vec<Reply>, Option<ReplyDecodeError>) {
    let mut decoder = ReplyDecoder::new(limits);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(r)) => out.push(r),
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

type Requests = (Vec<Vec<Bytes>>, Option<ProtocolError>);

fn decode_requests(chunks: &[&[u8]], limits: Limits, pre_auth: bool) -> Requests {
    let mut decoder = RequestDecoder::new(limits);
    decoder.set_pre_auth(pre_auth);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(r)) => out.push(r.into_args()),
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

/// Bytes mostly from the protocol's own alphabet, so the soup reaches deep states.
fn soup() -> impl Strategy<Value = Vec<u8>> {
    let alphabet = b"*$:+-_,#(=!%~>|.?;0123456789\r\n\r\n\0 \t\x0b\"'\\xabPING";
    let protocol_byte = proptest::sample::select(alphabet.to_vec());
    prop_oneof![
        vec(any::<u8>(), 0..200),
        vec(protocol_byte, 0..200),
        // Valid requests with damage.
        (
            vec(vec(any::<u8>(), 0..10), 1..4),
            vec((any::<usize>(), any::<u8>()), 0..3)
        )
            .prop_map(|(args, damage)| {
                let mut buf = BytesMut::new();
                write_request(&mut buf, &args);
                let mut v = buf.to_vec();
                for (at, b) in damage {
                    let i = at % v.len();
                    v[i] = b;
                }
                v
            }),
    ]
}

fn small_limits() -> Limits {
    Limits {
        max_bulk_len: 16,
        max_multibulk_len: 4,
        max_inline_len: 12,
        pre_auth_max_multibulk_len: 2,
        pre_auth_max_bulk_len: 4,
        max_bulk_prealloc: 8,
    }
}

fn small_reply_limits() -> ReplyLimits {
    ReplyLimits {
        max_bulk_len: 16,
        max_aggregate_len: 4,
        max_depth: 3,
        max_line_len: 12,
        max_bulk_prealloc: 8,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn replies_round_trip(replies in vec(reply(), 1..5), cuts in vec(any::<usize>(), 0..6)) {
        for proto in [Protocol::Resp3, Protocol::Resp2] {
            let mut buf = BytesMut::new();
            for r in &replies {
                r.encode(proto, &mut buf);
            }
            let (got, err) = decode_replies(&split(&buf, &cuts), ReplyLimits::default());
            prop_assert_eq!(err, None);
            prop_assert_eq!(got.len(), replies.len());
            for (g, r) in got.iter().zip(&replies) {
                let want = r.as_received(proto);
                prop_assert!(same(g, &want), "{:?}: got {:?}, want {:?}", proto, g, want);
                // Decoding what was received and encoding it again gives the same bytes.
                let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
                g.encode(proto, &mut a);
                want.encode(proto, &mut b);
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn multibulk_requests_round_trip(
        requests in vec(vec(vec(any::<u8>(), 0..50), 1..8), 1..6),
        cuts in vec(any::<usize>(), 0..8),
    ) {
        let mut buf = BytesMut::new();
        for r in &requests {
            write_request(&mut buf, r);
        }
        let (got, err) = decode_requests(&split(&buf, &cuts), Limits::default(), false);
        prop_assert_eq!(err, None);
        let got: Vec<Vec<Vec<u8>>> =
            got.into_iter().map(|r| r.into_iter().map(|a| a.to_vec()).collect()).collect();
        prop_assert_eq!(got, requests);
    }

    #[test]
    fn inline_requests_round_trip(
        requests in vec(vec(vec(any::<u8>(), 0..12), 1..6), 1..5),
        style in any::<u8>(),
        cuts in vec(any::<usize>(), 0..8),
    ) {
        // Each argument written plain when it can be, else double-quoted with \xHH escapes,
        // or single-quoted when it has no quote or backslash.
        let mut stream = Vec::new();
        for args in &requests {
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    stream.push(if style % 2 == 0 { b' ' } else { b'\t' });
                }
                // A line starting with `*` would be a multibulk request.
                let starts_with_star = arg.first() == Some(&b'*') && i == 0;
                let plain = !arg.is_empty()
                    && !starts_with_star
                    && arg.iter().all(|&b| b.is_ascii_graphic() && !b"\"'\\".contains(&b));
                let single = arg.iter().all(|&b| !b"'\\\0\n".contains(&b));
                if plain && style % 3 != 0 {
                    stream.extend_from_slice(arg);
                } else if single && style % 5 == 0 {
                    stream.push(b'\'');
                    stream.extend_from_slice(arg);
                    stream.push(b'\'');
                } else {
                    stream.push(b'"');
                    for b in arg {
                        stream.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                    }
                    stream.push(b'"');
                }
            }
            stream.extend_from_slice(if style % 7 == 0 { b"\n" } else { b"\r\n" });
        }
        let (got, err) = decode_requests(&split(&stream, &cuts), Limits::default(), false);
        prop_assert_eq!(err, None);
        let got: Vec<Vec<Vec<u8>>> =
            got.into_iter().map(|r| r.into_iter().map(|a| a.to_vec()).collect()).collect();
        prop_assert_eq!(got, requests);
    }

    #[test]
    fn request_decoder_never_panics_and_ignores_read_sizes(
        data in soup(),
        cuts in vec(any::<usize>(), 0..10),
        small in any::<bool>(),
        pre_auth in any::<bool>(),
    ) {
        let limits = if small { small_limits() } else { Limits::default() };
        let whole = decode_requests(&[&data], limits, pre_auth);
        prop_assert_eq!(&decode_requests(&split(&data, &cuts), limits, pre_auth), &whole);
        let bytewise: Vec<&[u8]> = data.chunks(1).collect();
        prop_assert_eq!(&decode_requests(&bytewise, limits, pre_auth), &whole);
    }

    #[test]
    fn reply_decoder_never_panics_and_ignores_read_sizes(
        data in soup(),
        cuts in vec(any::<usize>(), 0..10),
        small in any::<bool>(),
    ) {
        let limits = if small { small_reply_limits() } else { ReplyLimits::default() };
        let whole = decode_replies(&[&data], limits);
        let (parts, err) = decode_replies(&split(&data, &cuts), limits);
        prop_assert_eq!(err, whole.1);
        prop_assert_eq!(parts.len(), whole.0.len());
        for (a, b) in parts.iter().zip(&whole.0) {
            prop_assert!(same(a, b));
        }
        let bytewise: Vec<&[u8]> = data.chunks(1).collect();
        let (parts, err) = decode_replies(&bytewise, limits);
        prop_assert_eq!(err, whole.1);
        prop_assert_eq!(parts.len(), whole.0.len());
    }
}
