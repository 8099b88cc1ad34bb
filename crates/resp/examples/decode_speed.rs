//! Rough timing of the hot paths (no benchmark harness in the workspace):
//!
//! ```sh
//! cargo run --release -p rialto-resp --example decode_speed
//! ```

use std::hint::black_box;
use std::time::Instant;

use bytes::BytesMut;
use rialto_resp::{write_bulk, write_request, Protocol, Reply, ReplyDecoder, RequestDecoder};

/// Prints the time per operation of `f`, which performs `ops` operations per call.
fn time(name: &str, iters: u32, ops: u32, mut f: impl FnMut()) {
    for _ in 0..iters / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(iters) / f64::from(ops);
    println!("{name:<48} {ns:>8.1} ns");
}

fn main() {
    let mut get = BytesMut::new();
    write_request(&mut get, &["GET", "user:1234567"]);
    let get = get.freeze();

    let mut decoder = RequestDecoder::default();
    let mut buf = BytesMut::with_capacity(16 * 1024);
    time("decode GET (one request per buffer)", 2_000_000, 1, || {
        buf.clear();
        buf.extend_from_slice(&get);
        black_box(decoder.decode(&mut buf).ok().flatten());
    });

    // 100 pipelined GETs in one read, as a busy connection sees them.
    let mut pipeline = BytesMut::new();
    for _ in 0..100 {
        pipeline.extend_from_slice(&get);
    }
    let pipeline = pipeline.freeze();
    time(
        "decode GET (100 pipelined in one buffer)",
        20_000,
        100,
        || {
            let mut buf = BytesMut::from(&pipeline[..]);
            for _ in 0..100 {
                black_box(decoder.decode(&mut buf).ok().flatten());
            }
        },
    );

    let mut set = BytesMut::new();
    write_request(&mut set, &[&b"SET"[..], b"user:1234567", &[b'v'; 100]]);
    let set = set.freeze();
    time("decode SET 100-byte value", 2_000_000, 1, || {
        buf.clear();
        buf.extend_from_slice(&set);
        black_box(decoder.decode(&mut buf).ok().flatten());
    });

    time("decode inline PING", 2_000_000, 1, || {
        buf.clear();
        buf.extend_from_slice(b"PING\r\n");
        black_box(decoder.decode(&mut buf).ok().flatten());
    });

    let mut out = BytesMut::with_capacity(64 * 1024);
    time("write_bulk 100 bytes", 5_000_000, 1, || {
        if out.len() > 60 * 1024 {
            out.clear();
        }
        write_bulk(&mut out, Protocol::Resp2, black_box(&[b'v'; 100]));
    });

    let reply = Reply::Array((0..10).map(|i| Reply::bulk(format!("value{i}"))).collect());
    let mut encoded = BytesMut::new();
    reply.encode(Protocol::Resp3, &mut encoded);
    let encoded = encoded.freeze();
    let mut reply_decoder = ReplyDecoder::default();
    time("decode reply: array of 10 bulks", 500_000, 1, || {
        let mut buf = BytesMut::from(&encoded[..]);
        black_box(reply_decoder.decode(&mut buf).ok().flatten());
    });
}
