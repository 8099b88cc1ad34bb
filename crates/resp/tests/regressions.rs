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

/// Fuzzing (`resp_decode`, fuzz/regressions/resp_decode/nested-aggregate-prealloc): each nested
/// aggregate header preallocated slots for the whole buffer again, so 128 nested `*1000`
/// headers (under 1 KB) reserved ~128 × 1000 reply slots (megabytes). Now the open frames
/// together reserve at most a slot per 3 buffered bytes; the allocation is measured by the
/// counting allocator below.
#[test]
fn nested_aggregate_headers_do_not_each_preallocate_the_buffer() {
    let input: Vec<u8> = b"*1000\r\n".repeat(128);
    let mut buf = BytesMut::from(&input[..]);
    let mut decoder = ReplyDecoder::default();
    let before = counting::allocated();
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    let used = counting::allocated() - before;
    let slot = std::mem::size_of::<Reply>();
    assert!(
        used <= (input.len() / 3 + 128) * slot + 64 * 1024,
        "{used} bytes allocated for {} bytes of headers",
        input.len()
    );
}

/// Bytes allocated so far by this test binary (frees not subtracted: an upper bound on what
/// a call kept).
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting;
    static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

    // SAFETY: forwards to the system allocator unchanged; only counts.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
            // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `System.alloc` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
            // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    pub fn allocated() -> usize {
        ALLOCATED.load(Ordering::Relaxed)
    }
}
