//! Every failure found by the property tests, the redis-server comparison or review, kept as a
//! named test.

use bytes::BytesMut;
use rialto_resp::{ProtocolError, Reply, ReplyDecoder, RequestDecoder};

fn requests(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(req) = decoder.decode(&mut buf)? {
        out.push(req.args().iter().map(|a| a.to_vec()).collect());
    }
    Ok(out)
}

/// proptest `inline_requests_round_trip`: an inline request whose first argument starts with
/// `*` is not inline at all; Redis picks the form by the first byte alone.
#[test]
fn inline_line_starting_with_star_is_a_multibulk() {
    assert_eq!(
        requests(b"*\r\n"),
        Err(ProtocolError::InvalidMultibulkLength)
    );
    assert_eq!(requests(b" *\r\n"), Ok(vec![vec![b"*".to_vec()]]));
    assert_eq!(requests(b"\"*\"\r\n"), Ok(vec![vec![b"*".to_vec()]]));
}

/// Review: reading each chunk of a streamed string recursed once per chunk in the buffer, so
/// many small chunks could overflow the stack.
#[test]
fn streamed_string_with_many_chunks_does_not_recurse() {
    let mut input = b"$?\r\n".to_vec();
    for _ in 0..200_000 {
        input.extend_from_slice(b";1\r\nx\r\n");
    }
    input.extend_from_slice(b";0\r\n");
    let got = ReplyDecoder::default().decode(&mut BytesMut::from(&input[..]));
    assert_eq!(got, Ok(Some(Reply::Bulk(vec![b'x'; 200_000].into()))));
}

/// redis-server: before authentication, a command with the wrong number of arguments gets
/// the arity error, not NOAUTH, and an inline request is not held to the 10-argument
/// pre-authentication limit (malformed.txt `unauth-inline-has-no-argument-limit`).
#[test]
fn pre_auth_limits_apply_to_multibulk_only() {
    let mut decoder = RequestDecoder::default();
    decoder.set_pre_auth(true);
    let mut buf = BytesMut::from(&b"ECHO a b c d e f g h i j k l m n\r\n"[..]);
    let req = decoder.decode(&mut buf).unwrap().unwrap();
    assert_eq!(req.args().len(), 15);
}

/// Table check against redis-server: `*-0` is not zero for Redis's `string2ll`.
#[test]
fn minus_zero_count_is_invalid() {
    assert_eq!(
        requests(b"*-0\r\n"),
        Err(ProtocolError::InvalidMultibulkLength)
    );
    assert_eq!(
        requests(b"*1\r\n$-0\r\n"),
        Err(ProtocolError::InvalidBulkLength)
    );
}

// The nested-aggregate preallocation regression measures allocation, so it lives in
// `crates/fuzzing/tests/alloc_regressions.rs`, whose binary installs the per-thread counting
// allocator.
