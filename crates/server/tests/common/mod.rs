//! Shared helpers: a server on a free port in a temporary directory, and raw-socket I/O.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use rialto_server::{CacheSize, Config, RunningServer};

/// A configuration for tests: loopback, free port, two connection threads.
pub fn config(dir: &Path) -> Config {
    Config {
        dir: dir.to_path_buf(),
        port: 0,
        threads: 2,
        write_buffer_size: 4 << 20,
        cache_size: CacheSize::Bytes(8 << 20),
        row_cache_size: CacheSize::Bytes(256 << 20),
        ..Config::default()
    }
}

/// Starts a server with `edit` applied to the test configuration.
pub fn start_with(dir: &Path, edit: impl FnOnce(&mut Config)) -> RunningServer {
    let mut c = config(dir);
    edit(&mut c);
    rialto_server::start(c).expect("server starts")
}

/// Starts a server with the test configuration.
pub fn start(dir: &Path) -> RunningServer {
    start_with(dir, |_| {})
}

/// A `redis` crate connection.
pub fn client(addr: SocketAddr) -> redis::Connection {
    redis::Client::open(format!("redis://{addr}/"))
        .expect("client")
        .get_connection()
        .expect("connect")
}

/// The value of field `name` in an INFO reply; panics (showing the reply) when it is absent.
pub fn info_field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {info}"))
        .to_string()
}

/// A raw socket with a read timeout.
pub fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Sends `input` and reads until `expected_len` bytes arrived or the server went quiet.
pub fn exchange(s: &mut TcpStream, input: &[u8], expected_len: usize) -> Vec<u8> {
    s.write_all(input).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while out.len() < expected_len {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    out
}

/// Whether the server closed the connection (EOF within the timeout).
pub fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(0))
        || matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}
