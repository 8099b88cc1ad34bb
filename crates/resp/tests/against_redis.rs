//! Differential test against a running redis-server (ignored by default; needs a server):
//!
//! ```sh
//! redis-server --port 7777 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes
//! redis-server --port 7778 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --requirepass secret
//! RESP_REDIS_ADDR=127.0.0.1:7777 RESP_REDIS_AUTH_ADDR=127.0.0.1:7778 \
//!     cargo test -p rialto-resp --test against_redis -- --ignored
//! ```
//!
//! Sends random, mostly malformed request streams to Redis and checks that `RequestDecoder`
//! splits them into the same commands: Redis answers each command with one reply, so the
//! number of replies, the protocol error that ends the stream (if any) and whether the
//! connection closes must match, and the replies to well-formed PING and ECHO must be exact.
//! Streams are short (< 64 KiB), where Redis's answer does not depend on its read sizes.
//! The soup can only spell the command PING, so no command with side effects ever runs.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rialto_resp::{write_request, Limits, Reply, ReplyDecoder, RequestDecoder};

const QUIET: Duration = Duration::from_millis(100);

fn soup(rng: &mut SmallRng) -> Vec<u8> {
    let alphabet = b"*$-+:0123456789\r\n\r\n\r\n\0 \t\x0b\"'\\xabPINGping";
    const TOKENS: &[&[u8]] = &[
        b"*",
        b"*1\r\n",
        b"*2\r\n",
        b"$",
        b"$4\r\nPING\r\n",
        b"$4\r\nECHO\r\n",
        b"$1\r\nx\r\n",
        b"-",
        b"+",
        b"0",
        b"1",
        b"2",
        b"01",
        b"-1",
        b"\r\n",
        b"\r\n",
        b"\r",
        b"\n",
        b"PING",
        b"ECHO",
        b" ",
        b"\t",
        b"x",
        b"\0",
        b"\"",
        b"'",
        b"\\",
        b"\\x4",
        b"\x0b",
        b"*-",
        b"$-",
        b"*0",
        b"$0",
        b"-0",
        b"*+",
        b"$+",
    ];
    match rng.gen_range(0..4) {
        3 => (0..rng.gen_range(0..30))
            .flat_map(|_| TOKENS[rng.gen_range(0..TOKENS.len())].iter().copied())
            .collect(),
        0 => (0..rng.gen_range(0..120))
            .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
            .collect(),
        1 => (0..rng.gen_range(0..60)).map(|_| rng.gen()).collect(),
        _ => {
            let mut buf = BytesMut::new();
            for _ in 0..rng.gen_range(1..4) {
                let args: Vec<Vec<u8>> = match rng.gen_range(0..3) {
                    0 => vec![b"PING".to_vec()],
                    1 => vec![b"ping".to_vec(), b"x\r\ny".to_vec()],
                    _ => vec![
                        b"ECHO".to_vec(),
                        (0..rng.gen_range(0..8)).map(|_| rng.gen()).collect(),
                    ],
                };
                if rng.gen_bool(0.3) {
                    buf.extend_from_slice(b"PING \"a\\x41\"\r\n");
                } else {
                    write_request(&mut buf, &args);
                }
            }
            let mut v = buf.to_vec();
            for _ in 0..rng.gen_range(0..3) {
                let i = rng.gen_range(0..v.len());
                v[i] = alphabet[rng.gen_range(0..alphabet.len())];
            }
            v
        }
    }
}

/// Sends `input` in one write; returns what came back and whether the server closed.
fn ask(addr: &str, input: &[u8]) -> (Vec<u8>, bool) {
    let mut sock = TcpStream::connect(addr).expect("connect to redis-server");
    sock.write_all(input).expect("send");
    sock.set_read_timeout(Some(QUIET)).expect("timeout");
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        match sock.read(&mut chunk) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                return (got, false)
            }
            Err(_) => return (got, true),
        }
    }
    (got, false)
}

fn check(addr: &str, pre_auth: bool, input: &[u8]) {
    let mut decoder = RequestDecoder::new(Limits::default());
    decoder.set_pre_auth(pre_auth);
    let mut buf = BytesMut::from(input);
    let mut requests = Vec::new();
    let error = loop {
        match decoder.decode(&mut buf) {
            Ok(Some(req)) => requests.push(req),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let (raw, closed) = ask(addr, input);
    let mut replies = Vec::new();
    let mut reply_buf = BytesMut::from(&raw[..]);
    let mut reply_decoder = ReplyDecoder::default();
    while let Ok(Some(r)) = reply_decoder.decode(&mut reply_buf) {
        replies.push(r);
    }
    let ctx = format!(
        "input {:?}\nredis said {:?}",
        String::from_utf8_lossy(input),
        String::from_utf8_lossy(&raw)
    );
    assert!(reply_buf.is_empty(), "{ctx}");
    assert_eq!(
        closed,
        error.is_some(),
        "close state; ours {error:?}\n{ctx}"
    );
    assert_eq!(
        replies.len(),
        requests.len() + usize::from(error.is_some()),
        "reply count; ours {requests:?} {error:?}\n{ctx}"
    );
    if let Some(e) = error {
        let mut want = BytesMut::new();
        e.write_reply(&mut want);
        assert!(raw.ends_with(&want), "error reply; ours {e:?}\n{ctx}");
    }
    for (req, reply) in requests.iter().zip(&replies) {
        let args = req.args();
        let name = args[0].to_ascii_lowercase();
        let want = match (name.as_slice(), args.len(), pre_auth) {
            (b"ping", 1, false) => Reply::simple("PONG"),
            (b"ping" | b"echo", 2, false) => Reply::Bulk(args[1].clone()),
            (b"ping", 1 | 2, true) | (b"echo", 2, true) => {
                Reply::error("NOAUTH Authentication required.")
            }
            _ => continue,
        };
        assert_eq!(reply, &want, "reply to {req:?}\n{ctx}");
    }
}

#[test]
#[ignore = "needs redis-server; see the module docs"]
fn random_streams_split_like_redis() {
    let (Ok(addr), Ok(auth_addr)) = (
        std::env::var("RESP_REDIS_ADDR"),
        std::env::var("RESP_REDIS_AUTH_ADDR"),
    ) else {
        panic!("set RESP_REDIS_ADDR and RESP_REDIS_AUTH_ADDR");
    };
    let cases: u64 = std::env::var("RESP_REDIS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    // A few the random streams rarely reach; malformed.txt has many more.
    let fixed: [&[u8]; 6] = [
        b"*-0\r\n",
        b"*1\r\n$-0\r\n",
        b"PING\r\n*1\r\n$4\r\nPINGxx",
        b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n*1\r\n",
        b"ECHO '\\'' \"\\\"\"\r\n",
        b"*11\r\n",
    ];
    for input in fixed {
        check(&addr, false, input);
        check(&auth_addr, true, input);
    }
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let (addr, auth_addr) = (addr.clone(), auth_addr.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(1000 + t);
                for _ in 0..cases / 8 {
                    let input = soup(&mut rng);
                    let pre_auth = rng.gen_bool(0.3);
                    check(if pre_auth { &auth_addr } else { &addr }, pre_auth, &input);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a case failed");
    }
}
