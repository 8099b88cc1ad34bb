//! Reply encoding (both protocols) and `ReplyDecoder`, byte by byte.

use bytes::{Bytes, BytesMut};
use rialto_resp::{Protocol, Reply, ReplyDecodeError as E, ReplyDecoder, ReplyLimits};

const R2: Protocol = Protocol::Resp2;
const R3: Protocol = Protocol::Resp3;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn encode(reply: &Reply, proto: Protocol) -> Vec<u8> {
    let mut buf = BytesMut::new();
    reply.encode(proto, &mut buf);
    buf.to_vec()
}

/// Decodes all replies in `input`, then checks nothing is left over.
fn decode_all(input: &[u8]) -> Result<Vec<Reply>, E> {
    let mut decoder = ReplyDecoder::default();
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(r) = decoder.decode(&mut buf)? {
        out.push(r);
    }
    assert!(buf.is_empty() && !decoder.in_reply(), "trailing bytes");
    Ok(out)
}

fn decode_one(input: &[u8]) -> Result<Reply, E> {
    let mut all = decode_all(input)?;
    assert_eq!(all.len(), 1);
    Ok(all.remove(0))
}

/// Decodes feeding one byte at a time.
fn decode_bytewise(input: &[u8]) -> Result<Vec<Reply>, E> {
    let mut decoder = ReplyDecoder::default();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for &byte in input {
        buf.extend_from_slice(&[byte]);
        while let Some(r) = decoder.decode(&mut buf)? {
            out.push(r);
        }
    }
    Ok(out)
}

fn hello_reply() -> Reply {
    Reply::Map(vec![
        (Reply::bulk("server"), Reply::bulk("redis")),
        (Reply::bulk("proto"), Reply::Integer(3)),
        (Reply::bulk("modules"), Reply::Array(vec![])),
    ])
}

#[test]
fn encodes_a_map_for_both_protocols() {
    assert_eq!(
        encode(&hello_reply(), R3),
        b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n*0\r\n"
    );
    assert_eq!(
        encode(&hello_reply(), R2),
        b"*6\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n*0\r\n"
    );
}

#[test]
fn encodes_every_type_for_resp3_and_resp2() {
    let cases: Vec<(Reply, &[u8], &[u8])> = vec![
        (Reply::simple("OK"), b"+OK\r\n", b"+OK\r\n"),
        (Reply::error("ERR no"), b"-ERR no\r\n", b"-ERR no\r\n"),
        (Reply::Integer(-3), b":-3\r\n", b":-3\r\n"),
        (Reply::bulk("hi"), b"$2\r\nhi\r\n", b"$2\r\nhi\r\n"),
        (Reply::Null, b"_\r\n", b"$-1\r\n"),
        (Reply::NullArray, b"_\r\n", b"*-1\r\n"),
        (
            Reply::Array(vec![Reply::Integer(1)]),
            b"*1\r\n:1\r\n",
            b"*1\r\n:1\r\n",
        ),
        (
            Reply::Set(vec![Reply::Integer(1)]),
            b"~1\r\n:1\r\n",
            b"*1\r\n:1\r\n",
        ),
        (
            Reply::Push(vec![Reply::Integer(1)]),
            b">1\r\n:1\r\n",
            b"*1\r\n:1\r\n",
        ),
        (Reply::Double(2.5), b",2.5\r\n", b"$3\r\n2.5\r\n"),
        (Reply::Double(10.0), b",10\r\n", b"$2\r\n10\r\n"),
        (Reply::Boolean(true), b"#t\r\n", b":1\r\n"),
        (Reply::Boolean(false), b"#f\r\n", b":0\r\n"),
        (
            Reply::BigNumber(b("-12345678901234567890")),
            b"(-12345678901234567890\r\n",
            b"$21\r\n-12345678901234567890\r\n",
        ),
        (
            Reply::Verbatim {
                format: *b"txt",
                text: b("a\r\nb"),
            },
            b"=8\r\ntxt:a\r\nb\r\n",
            b"$4\r\na\r\nb\r\n",
        ),
        (
            Reply::BlobError(b("ERR a\nb")),
            b"!7\r\nERR a\nb\r\n",
            b"-ERR a b\r\n",
        ),
        (
            Reply::Attribute {
                attrs: vec![(Reply::simple("ttl"), Reply::Integer(5))],
                reply: Box::new(Reply::Integer(7)),
            },
            b"|1\r\n+ttl\r\n:5\r\n:7\r\n",
            b":7\r\n",
        ),
    ];
    for (reply, resp3, resp2) in cases {
        assert_eq!(encode(&reply, R3), resp3, "{reply:?} RESP3");
        assert_eq!(encode(&reply, R2), resp2, "{reply:?} RESP2");
        assert_eq!(decode_one(resp3), Ok(reply.as_received(R3)), "{reply:?}");
        assert_eq!(decode_one(resp2), Ok(reply.as_received(R2)), "{reply:?}");
    }
}

#[test]
fn decodes_resp2_nulls() {
    assert_eq!(decode_one(b"$-1\r\n"), Ok(Reply::Null));
    assert_eq!(decode_one(b"*-1\r\n"), Ok(Reply::NullArray));
    assert_eq!(decode_one(b"_\r\n"), Ok(Reply::Null));
}

#[test]
fn decodes_lenient_numbers() {
    assert_eq!(decode_one(b":+5\r\n"), Ok(Reply::Integer(5)));
    assert_eq!(decode_one(b":007\r\n"), Ok(Reply::Integer(7)));
    assert_eq!(decode_one(b",1e+20\r\n"), Ok(Reply::Double(1e20)));
    assert_eq!(
        decode_one(b",-inf\r\n"),
        Ok(Reply::Double(f64::NEG_INFINITY))
    );
    match decode_one(b",nan\r\n") {
        Ok(Reply::Double(d)) => assert!(d.is_nan()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn decodes_nested_aggregates() {
    let input = b"*3\r\n%1\r\n+k\r\n~2\r\n:1\r\n:2\r\n*0\r\n>2\r\n$-1\r\n|0\r\n#t\r\n";
    let want = Reply::Array(vec![
        Reply::Map(vec![(
            Reply::simple("k"),
            Reply::Set(vec![Reply::Integer(1), Reply::Integer(2)]),
        )]),
        Reply::Array(vec![]),
        Reply::Push(vec![
            Reply::Null,
            Reply::Attribute {
                attrs: vec![],
                reply: Box::new(Reply::Boolean(true)),
            },
        ]),
    ]);
    assert_eq!(decode_one(input), Ok(want.clone()));
    assert_eq!(decode_bytewise(input), Ok(vec![want]));
}

#[test]
fn decodes_streamed_strings_and_aggregates() {
    assert_eq!(
        decode_one(b"$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n"),
        Ok(Reply::bulk("Hello word"))
    );
    assert_eq!(decode_one(b"$?\r\n;0\r\n"), Ok(Reply::bulk("")));
    let input = b"*?\r\n:1\r\n%?\r\n+a\r\n:1\r\n.\r\n$?\r\n;1\r\nx\r\n;0\r\n.\r\n";
    let want = Reply::Array(vec![
        Reply::Integer(1),
        Reply::Map(vec![(Reply::simple("a"), Reply::Integer(1))]),
        Reply::bulk("x"),
    ]);
    assert_eq!(decode_one(input), Ok(want.clone()));
    assert_eq!(decode_bytewise(input), Ok(vec![want]));
    assert_eq!(decode_one(b"~?\r\n.\r\n"), Ok(Reply::Set(vec![])));
}

#[test]
fn pipelined_replies_come_out_in_order() {
    let input = b"+OK\r\n:1\r\n$3\r\nabc\r\n*2\r\n$1\r\na\r\n$-1\r\n";
    let want = vec![
        Reply::simple("OK"),
        Reply::Integer(1),
        Reply::bulk("abc"),
        Reply::Array(vec![Reply::bulk("a"), Reply::Null]),
    ];
    assert_eq!(decode_all(input), Ok(want.clone()));
    assert_eq!(decode_bytewise(input), Ok(want));
}

#[test]
fn bulk_data_is_a_slice_of_the_buffer() {
    let mut buf = BytesMut::from(&b"$5\r\nhello\r\n"[..]);
    let start = buf.as_ptr() as usize;
    match ReplyDecoder::default().decode(&mut buf) {
        Ok(Some(Reply::Bulk(data))) => assert_eq!(data.as_ptr() as usize, start + 4),
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_replies() {
    let cases: &[(&[u8], E)] = &[
        (b"?x\r\n", E::InvalidType(b'?')),
        (b"\r\n", E::InvalidType(b'\r')),
        (b"$x\r\n", E::InvalidLength),
        (b"$-2\r\n", E::InvalidLength),
        (b"%-1\r\n", E::InvalidLength),
        (b"=-1\r\n", E::InvalidLength),
        (b":1.5\r\n", E::InvalidInteger),
        (b":\r\n", E::InvalidInteger),
        (b",abc\r\n", E::InvalidDouble),
        (b"#x\r\n", E::InvalidBoolean),
        (b"(12a\r\n", E::InvalidBigNumber),
        (b"(\r\n", E::InvalidBigNumber),
        (b"_x\r\n", E::InvalidNull),
        (b"=3\r\ntxt\r\n", E::InvalidVerbatim),
        (b"=4\r\ntxt-\r\n", E::InvalidVerbatim),
        (b"+OK\rx", E::MissingCrlf),
        (b"$3\r\nabcde", E::MissingCrlf),
        (b".\r\n", E::UnexpectedEnd),
        (b"*1\r\n.\r\n", E::UnexpectedEnd),
        (b"%?\r\n:1\r\n.\r\n", E::UnexpectedEnd),
        (b"|?\r\n", E::InvalidLength),
        (b"$?\r\n:1\r\n", E::InvalidType(b':')),
    ];
    for &(input, err) in cases {
        let mut buf = BytesMut::from(input);
        let mut decoder = ReplyDecoder::default();
        assert_eq!(
            decoder.decode(&mut buf),
            Err(err),
            "{:?}",
            String::from_utf8_lossy(input)
        );
        // Sticky.
        assert_eq!(
            decoder.decode(&mut BytesMut::from(&b"+OK\r\n"[..])),
            Err(err)
        );
    }
}

#[test]
fn limits() {
    let limits = ReplyLimits {
        max_bulk_len: 4,
        max_aggregate_len: 2,
        max_depth: 2,
        max_line_len: 6,
        ..ReplyLimits::default()
    };
    let run = |input: &[u8]| ReplyDecoder::new(limits).decode(&mut BytesMut::from(input));
    assert_eq!(run(b"$4\r\nabcd\r\n"), Ok(Some(Reply::bulk("abcd"))));
    assert_eq!(run(b"$5\r\n"), Err(E::BulkTooLong));
    assert_eq!(run(b"!5\r\n"), Err(E::BulkTooLong));
    assert_eq!(run(b"$?\r\n;3\r\nabc\r\n;2\r\n"), Err(E::BulkTooLong));
    assert_eq!(run(b"*3\r\n"), Err(E::AggregateTooLong));
    assert_eq!(
        run(b"*2\r\n*1\r\n:1\r\n:2\r\n").map(|r| r.is_some()),
        Ok(true)
    );
    assert_eq!(run(b"*1\r\n*1\r\n*1\r\n"), Err(E::TooDeep));
    // A line's length counts its type byte, not its CRLF.
    assert_eq!(run(b"+abcde\r\n"), Ok(Some(Reply::simple("abcde"))));
    assert_eq!(run(b"+abcdef\r\n"), Err(E::LineTooLong));
    assert_eq!(run(b"+abcdef"), Err(E::LineTooLong));
    assert_eq!(run(b"+abcde"), Ok(None));
}

#[test]
fn deep_nesting_is_refused_without_recursion() {
    let mut input = b"*1\r\n".repeat(100_000);
    input.extend_from_slice(b":1\r\n");
    assert_eq!(
        ReplyDecoder::default().decode(&mut BytesMut::from(&input[..])),
        Err(E::TooDeep)
    );
    let unlimited = ReplyLimits {
        max_depth: usize::MAX,
        ..ReplyLimits::default()
    };
    // 100k levels decode without overflowing the test thread's 2 MiB stack.
    let got = ReplyDecoder::new(unlimited).decode(&mut BytesMut::from(&input[..]));
    assert!(matches!(got, Ok(Some(Reply::Array(_)))));
    // Dropping a Reply recurses, so leak this one instead (a few MiB).
    std::mem::forget(got);
}

#[test]
fn a_claimed_aggregate_length_does_not_preallocate() {
    // Many nested frames each claiming a billion elements: memory stays small (this would
    // abort with out-of-memory if the claims were preallocated).
    let input = b"*1000000000\r\n".repeat(100);
    let mut decoder = ReplyDecoder::default();
    assert_eq!(decoder.decode(&mut BytesMut::from(&input[..])), Ok(None));
    assert!(decoder.in_reply());
}

#[test]
fn big_bulks_reserve_room_up_to_the_cap() {
    let mut buf = BytesMut::from(&b"$536870912\r\n"[..]);
    assert_eq!(ReplyDecoder::default().decode(&mut buf), Ok(None));
    let cap = buf.capacity();
    assert!((1 << 20..=4 << 20).contains(&cap), "capacity {cap}");
}
