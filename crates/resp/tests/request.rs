//! Byte-level tests of `RequestDecoder`: both forms, every limit, every error, partial input.
//! The table in `malformed.txt` (checked by `malformed.rs`) holds the cases verified against
//! redis-server; these cover what the table cannot (non-default limits, buffer handling).

use bytes::{Bytes, BytesMut};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rialto_resp::{write_request, Limits, ProtocolError, Request, RequestDecoder};

type Outcome = Result<Vec<Vec<Vec<u8>>>, (Vec<Vec<Vec<u8>>>, ProtocolError)>;

/// Decodes everything in `chunks` fed as successive reads: the requests' arguments, and the
/// error that stopped decoding, if any.
fn feed_with(decoder: &mut RequestDecoder, chunks: &[&[u8]]) -> Outcome {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(req)) => out.push(req.args().iter().map(|a| a.to_vec()).collect()),
                Ok(None) => break,
                Err(e) => return Err((out, e)),
            }
        }
    }
    Ok(out)
}

fn feed(input: &[u8]) -> Outcome {
    feed_with(&mut RequestDecoder::default(), &[input])
}

fn args(list: &[&str]) -> Vec<Vec<u8>> {
    list.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn decode_one(input: &[u8]) -> Result<Option<Request>, ProtocolError> {
    RequestDecoder::default().decode(&mut BytesMut::from(input))
}

#[test]
fn multibulk_get() {
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"[..]);
    let req = RequestDecoder::default().decode(&mut buf).unwrap().unwrap();
    assert_eq!(req.args(), &[Bytes::from("GET"), Bytes::from("key")]);
    assert!(!req.is_inline());
    assert!(buf.is_empty());
}

#[test]
fn multibulk_arguments_are_slices_of_the_read_buffer() {
    let mut buf = BytesMut::with_capacity(64);
    buf.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n");
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + 64;
    let req = RequestDecoder::default().decode(&mut buf).unwrap().unwrap();
    for arg in req.args() {
        assert!(
            range.contains(&(arg.as_ptr() as usize)),
            "argument was copied"
        );
    }
}

#[test]
fn inline_request() {
    let req = decode_one(b"SET k \"a b\"\r\n").unwrap().unwrap();
    assert!(req.is_inline());
    assert_eq!(
        req.args(),
        &[Bytes::from("SET"), Bytes::from("k"), Bytes::from("a b")]
    );
}

#[test]
fn pipelined_mixed_forms() {
    let input = b"*1\r\n$4\r\nPING\r\nECHO hi\n\r\n*0\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nQUIT\r\n";
    assert_eq!(
        feed(input),
        Ok(vec![
            args(&["PING"]),
            args(&["ECHO", "hi"]),
            args(&["GET", "k"]),
            args(&["QUIT"])
        ])
    );
}

#[test]
fn empty_requests_are_skipped() {
    assert_eq!(feed(b"*0\r\n*-1\r\n*-7\r\n\r\n\n \t\r\n"), Ok(vec![]));
    assert_eq!(feed(b""), Ok(vec![]));
}

#[test]
fn incomplete_input_keeps_its_bytes_until_complete() {
    let full = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::new();
    for (i, &b) in full.iter().enumerate() {
        buf.extend_from_slice(&[b]);
        let got = decoder.decode(&mut buf).unwrap();
        if i + 1 < full.len() {
            assert!(got.is_none(), "request returned early at byte {i}");
        } else {
            assert_eq!(got.unwrap().args().len(), 3);
        }
    }
    assert!(!decoder.in_request());
}

#[test]
fn in_request_reports_a_partly_consumed_multibulk() {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$3\r\nke"[..]);
    assert!(decoder.decode(&mut buf).unwrap().is_none());
    assert!(decoder.in_request());
    buf.extend_from_slice(b"y\r\n");
    assert!(decoder.decode(&mut buf).unwrap().is_some());
    assert!(!decoder.in_request());
}

#[test]
fn valid_stream_fed_one_byte_at_a_time_and_in_random_chunks() {
    let mut stream = BytesMut::new();
    let mut want = Vec::new();
    let mut rng = SmallRng::seed_from_u64(7);
    for i in 0..200 {
        let n = rng.gen_range(1..6);
        let list: Vec<Vec<u8>> = (0..n)
            .map(|j| {
                let len = if (i + j) % 37 == 0 {
                    40_000
                } else {
                    rng.gen_range(0..20)
                };
                (0..len).map(|_| rng.gen()).collect()
            })
            .collect();
        if i % 5 == 0 {
            // Inline form for plain words.
            let words: Vec<Vec<u8>> = (0..n).map(|k| format!("w{i}x{k}").into_bytes()).collect();
            stream.extend_from_slice(&words.join(&b' '));
            stream.extend_from_slice(b"\r\n");
            want.push(words);
        } else {
            write_request(&mut stream, &list);
            want.push(list);
        }
    }
    let whole = feed(&stream);
    assert_eq!(whole, Ok(want));
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(feed_with(&mut RequestDecoder::default(), &bytes), whole);
    for _ in 0..20 {
        let mut chunks = Vec::new();
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let n = rng.gen_range(1..3000).min(rest.len());
            chunks.push(&rest[..n]);
            rest = &rest[n..];
        }
        assert_eq!(feed_with(&mut RequestDecoder::default(), &chunks), whole);
    }
}

#[test]
fn a_huge_multibulk_in_small_reads_is_not_rescanned() {
    // 300k elements in 1 KiB reads: rescanning from the start on each read would take
    // minutes; incremental decoding takes milliseconds.
    let list: Vec<String> = (0..300_000).map(|i| i.to_string()).collect();
    let mut stream = BytesMut::new();
    write_request(&mut stream, &list);
    let chunks: Vec<&[u8]> = stream.chunks(1024).collect();
    let got = feed_with(&mut RequestDecoder::default(), &chunks).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].len(), 300_000);
    assert_eq!(got[0][299_999], b"299999");
}

#[test]
fn error_texts_are_redis_7s() {
    let cases = [
        (
            ProtocolError::InvalidMultibulkLength,
            "Protocol error: invalid multibulk length",
        ),
        (
            ProtocolError::InvalidBulkLength,
            "Protocol error: invalid bulk length",
        ),
        (
            ProtocolError::ExpectedDollar(b'x'),
            "Protocol error: expected '$', got 'x'",
        ),
        (
            ProtocolError::ExpectedDollar(b'\r'),
            "Protocol error: expected '$', got ' '",
        ),
        (
            ProtocolError::TooBigMultibulkCountString,
            "Protocol error: too big mbulk count string",
        ),
        (
            ProtocolError::TooBigBulkCountString,
            "Protocol error: too big bulk count string",
        ),
        (
            ProtocolError::TooBigInlineRequest,
            "Protocol error: too big inline request",
        ),
        (
            ProtocolError::UnbalancedQuotes,
            "Protocol error: unbalanced quotes in request",
        ),
        (
            ProtocolError::UnauthenticatedMultibulkLength,
            "Protocol error: unauthenticated multibulk length",
        ),
        (
            ProtocolError::UnauthenticatedBulkLength,
            "Protocol error: unauthenticated bulk length",
        ),
    ];
    for (err, text) in cases {
        assert_eq!(err.to_string(), text);
        let mut buf = BytesMut::new();
        err.write_reply(&mut buf);
        assert_eq!(&buf[..], format!("-ERR {text}\r\n").as_bytes());
    }
    let mut buf = BytesMut::new();
    ProtocolError::ExpectedDollar(0xe9).write_reply(&mut buf);
    assert_eq!(
        &buf[..],
        b"-ERR Protocol error: expected '$', got '\xe9'\r\n"
    );
    assert_eq!(
        ProtocolError::ExpectedDollar(0xe9).to_string(),
        "Protocol error: expected '$', got '\u{e9}'"
    );
}

#[test]
fn errors_are_sticky() {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(&b"*x\r\n"[..]);
    assert_eq!(
        decoder.decode(&mut buf),
        Err(ProtocolError::InvalidMultibulkLength)
    );
    let mut fresh = BytesMut::from(&b"PING\r\n"[..]);
    assert_eq!(
        decoder.decode(&mut fresh),
        Err(ProtocolError::InvalidMultibulkLength)
    );
}

#[test]
fn max_bulk_len() {
    let limits = Limits {
        max_bulk_len: 10,
        ..Limits::default()
    };
    let ok = b"*1\r\n$10\r\n0123456789\r\n";
    assert_eq!(
        feed_with(&mut RequestDecoder::new(limits), &[ok])
            .unwrap()
            .len(),
        1
    );
    let too_long = b"*1\r\n$11\r\n";
    assert_eq!(
        feed_with(&mut RequestDecoder::new(limits), &[too_long]),
        Err((vec![], ProtocolError::InvalidBulkLength))
    );
    // The default is Redis's 512 MiB.
    assert_eq!(decode_one(b"*1\r\n$536870912\r\n"), Ok(None));
    assert_eq!(
        decode_one(b"*1\r\n$536870913\r\n"),
        Err(ProtocolError::InvalidBulkLength)
    );
    assert_eq!(
        decode_one(b"*1\r\n$9223372036854775807\r\n"),
        Err(ProtocolError::InvalidBulkLength)
    );
    assert_eq!(
        decode_one(b"*1\r\n$9223372036854775808\r\n"),
        Err(ProtocolError::InvalidBulkLength)
    );
}

#[test]
fn max_multibulk_len() {
    // Default 1024 * 1024: above it Rialto refuses where Redis (INT_MAX) would wait.
    assert_eq!(decode_one(b"*1048576\r\n"), Ok(None));
    assert_eq!(
        decode_one(b"*1048577\r\n"),
        Err(ProtocolError::InvalidMultibulkLength)
    );
    assert_eq!(
        decode_one(b"*2147483648\r\n"),
        Err(ProtocolError::InvalidMultibulkLength)
    );
    let redis_like = Limits {
        max_multibulk_len: i32::MAX as usize,
        ..Limits::default()
    };
    let mut decoder = RequestDecoder::new(redis_like);
    assert_eq!(
        decoder.decode(&mut BytesMut::from(&b"*2147483647\r\n"[..])),
        Ok(None)
    );
    let small = Limits {
        max_multibulk_len: 2,
        ..Limits::default()
    };
    let input = b"*2\r\n$1\r\na\r\n$1\r\nb\r\n*3\r\n";
    assert_eq!(
        feed_with(&mut RequestDecoder::new(small), &[input]),
        Err((
            vec![args(&["a", "b"])],
            ProtocolError::InvalidMultibulkLength
        ))
    );
}

#[test]
fn max_inline_len_bounds_every_line() {
    let limits = Limits {
        max_inline_len: 8,
        ..Limits::default()
    };
    let run = |input: &[u8]| feed_with(&mut RequestDecoder::new(limits), &[input]);
    // Inline: 8 bytes before the newline pass (a `\r` counts), 9 do not.
    assert_eq!(run(b"PING abc\n"), Ok(vec![args(&["PING", "abc"])]));
    assert_eq!(
        run(b"PING abc\r\n"),
        Err((vec![], ProtocolError::TooBigInlineRequest))
    );
    assert_eq!(
        run(b"PING abcd\n"),
        Err((vec![], ProtocolError::TooBigInlineRequest))
    );
    assert_eq!(run(b"PING abc"), Ok(vec![]));
    assert_eq!(
        run(b"PING abcd"),
        Err((vec![], ProtocolError::TooBigInlineRequest))
    );
    // Count line: up to 8 bytes before its `\r`.
    assert_eq!(
        run(b"*0000000\r\n"),
        Err((vec![], ProtocolError::InvalidMultibulkLength))
    );
    assert_eq!(
        run(b"*00000000\r\n"),
        Err((vec![], ProtocolError::TooBigMultibulkCountString))
    );
    assert_eq!(
        run(b"*00000000"),
        Err((vec![], ProtocolError::TooBigMultibulkCountString))
    );
    assert_eq!(run(b"*0000000"), Ok(vec![]));
    // Bulk length line likewise.
    assert_eq!(
        run(b"*1\r\n$0000000\r\n"),
        Err((vec![], ProtocolError::InvalidBulkLength))
    );
    assert_eq!(
        run(b"*1\r\n$00000000\r\n"),
        Err((vec![], ProtocolError::TooBigBulkCountString))
    );
    assert_eq!(
        run(b"*1\r\n$00000000"),
        Err((vec![], ProtocolError::TooBigBulkCountString))
    );
}

#[test]
fn the_answer_does_not_depend_on_read_sizes_for_long_lines() {
    // Redis with 16 KiB reads accepts this 70 KiB line when its end arrives in the read that
    // crosses 64 KiB; this decoder answers as Redis with 1-byte reads: refused, always.
    let mut line = vec![b'a'; 70 * 1024];
    line.extend_from_slice(b"\r\n");
    assert_eq!(
        feed(&line),
        Err((vec![], ProtocolError::TooBigInlineRequest))
    );
    let chunks: Vec<&[u8]> = line.chunks(16 * 1024).collect();
    assert_eq!(
        feed_with(&mut RequestDecoder::default(), &chunks),
        Err((vec![], ProtocolError::TooBigInlineRequest))
    );
}

#[test]
fn pre_auth_limits() {
    let mut decoder = RequestDecoder::default();
    decoder.set_pre_auth(true);
    assert!(decoder.pre_auth());
    let ten = write(&["x"; 10]);
    assert_eq!(feed_with(&mut decoder, &[&ten]).unwrap().len(), 1);
    assert_eq!(
        feed_with(&mut decoder, &[b"*11\r\n"]),
        Err((vec![], ProtocolError::UnauthenticatedMultibulkLength))
    );

    let mut decoder = RequestDecoder::default();
    decoder.set_pre_auth(true);
    let big = write(&[vec![b'v'; 16384]]);
    assert_eq!(feed_with(&mut decoder, &[&big]).unwrap().len(), 1);
    assert_eq!(
        feed_with(&mut decoder, &[b"*1\r\n$16385\r\n"]),
        Err((vec![], ProtocolError::UnauthenticatedBulkLength))
    );

    // Custom pre-auth limits.
    let limits = Limits {
        pre_auth_max_multibulk_len: 2,
        pre_auth_max_bulk_len: 4,
        ..Limits::default()
    };
    let mut decoder = RequestDecoder::new(limits);
    decoder.set_pre_auth(true);
    assert_eq!(
        feed_with(&mut decoder, &[b"*3\r\n"]),
        Err((vec![], ProtocolError::UnauthenticatedMultibulkLength))
    );
    let mut decoder = RequestDecoder::new(limits);
    decoder.set_pre_auth(true);
    assert_eq!(
        feed_with(&mut decoder, &[b"*2\r\n$4\r\nAUTH\r\n$5\r\n"]),
        Err((vec![], ProtocolError::UnauthenticatedBulkLength))
    );
}

#[test]
fn pre_auth_switches_off_between_requests() {
    // AUTH pipelined with a large request: the large one is parsed after AUTH ran, as in Redis.
    let mut stream = write(&["AUTH", "secret"]);
    stream.extend_from_slice(&write(&["k"; 20]));
    let mut decoder = RequestDecoder::default();
    decoder.set_pre_auth(true);
    let mut buf = BytesMut::from(&stream[..]);
    let auth = decoder.decode(&mut buf).unwrap().unwrap();
    assert_eq!(auth.args()[0], "AUTH");
    decoder.set_pre_auth(false);
    assert_eq!(decoder.decode(&mut buf).unwrap().unwrap().args().len(), 20);
}

#[test]
fn big_bulks_reserve_room_but_only_up_to_the_prealloc_cap() {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(&b"*1\r\n$100000\r\n"[..]);
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    assert!(
        buf.capacity() >= 100_002,
        "room reserved for the announced bulk"
    );

    // A 512 MiB claim reserves about max_bulk_prealloc, not 512 MiB.
    let mut buf = BytesMut::from(&b"*1\r\n$536870912\r\n"[..]);
    assert_eq!(RequestDecoder::default().decode(&mut buf), Ok(None));
    let cap = buf.capacity();
    assert!((1 << 20..=4 << 20).contains(&cap), "capacity {cap}");

    // Below 32 KiB nothing is reserved ahead of the data.
    let mut buf = BytesMut::from(&b"*1\r\n$30000\r\n"[..]);
    assert_eq!(RequestDecoder::default().decode(&mut buf), Ok(None));
    assert!(buf.capacity() < 30_000);
}

#[test]
fn a_big_bulk_arrives_whole_when_fed_gradually() {
    let value = vec![7u8; 3 << 20];
    let stream = write(&[b"SET".to_vec(), b"k".to_vec(), value.clone()]);
    let chunks: Vec<&[u8]> = stream.chunks(64 * 1024).collect();
    let got = feed_with(&mut RequestDecoder::default(), &chunks).unwrap();
    assert_eq!(got, vec![vec![b"SET".to_vec(), b"k".to_vec(), value]]);
}

#[test]
fn request_encode_round_trips() {
    let req = Request::new(vec![
        Bytes::from("SET"),
        Bytes::from(""),
        Bytes::from(vec![0u8, 13, 10]),
    ]);
    let mut buf = BytesMut::new();
    req.encode(&mut buf);
    assert_eq!(&buf[..], b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$3\r\n\x00\r\n\r\n");
    assert_eq!(RequestDecoder::default().decode(&mut buf), Ok(Some(req)));
}

fn write<A: AsRef<[u8]>>(list: &[A]) -> Vec<u8> {
    let mut buf = BytesMut::new();
    write_request(&mut buf, list);
    buf.to_vec()
}
