//! Allocation regressions: decoding a few bytes must not reserve memory for what the bytes
//! merely claim. Measured with the per-thread counting allocator, so the other tests the
//! harness runs at the same time do not count (a process-wide count made this flaky in CI).

use bytes::BytesMut;
use rialto_fuzzing::alloc_meter::{self, CountingAllocator};
use rialto_resp::{Reply, ReplyDecoder};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

/// Fuzzing (`resp_decode`, fuzz/regressions/resp_decode/nested-aggregate-prealloc): each nested
/// aggregate header preallocated slots for the whole buffer again, so 128 nested `*1000`
/// headers (under 1 KB) reserved ~128 × 1000 reply slots (megabytes). Now the open frames
/// together reserve at most a slot per 3 buffered bytes.
#[test]
fn nested_aggregate_headers_do_not_each_preallocate_the_buffer() {
    let input: Vec<u8> = b"*1000\r\n".repeat(128);
    let mut buf = BytesMut::from(&input[..]);
    let mut decoder = ReplyDecoder::default();
    let (outcome, peak) = alloc_meter::measure(|| decoder.decode(&mut buf));
    assert_eq!(outcome, Ok(None));
    let peak = peak.expect("the counting allocator is installed");
    let slot = std::mem::size_of::<Reply>();
    assert!(
        peak <= (input.len() / 3 + 128) * slot + 64 * 1024,
        "{peak} bytes allocated for {} bytes of headers",
        input.len()
    );
}
