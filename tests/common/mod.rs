//! What the end-to-end tests share: running the `rialto` binary and a `rialto serve` on a port
//! the kernel picks. (Each test file uses part of it.)
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub fn rialto(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(args)
        .output()
        .expect("rialto runs")
}

pub struct Serve {
    pub child: Child,
    pub port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Stops the server with SHUTDOWN (a clean close) and waits for it to exit 0.
    pub fn stop(mut self) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(b"SHUTDOWN\r\n").unwrap();
        let _ = s.read_to_end(&mut Vec::new());
        assert!(self.child.wait().unwrap().success());
    }
}

/// Starts `rialto serve` on a port the kernel picks and learns it from the log.
pub fn serve(dir: &Path) -> Serve {
    serve_with(dir, &[])
}

/// [`serve`] with more `rialto serve` arguments.
pub fn serve_with(dir: &Path, extra: &[&str]) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(["serve", "--dir"])
        .arg(dir)
        .args(["--port", "0", "--threads", "1"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("ready to accept connections") {
                let _ = tx.send(line.rsplit(':').next().and_then(|p| p.trim().parse().ok()));
            }
        }
    });
    let port: u16 = rx
        .recv_timeout(Duration::from_secs(30))
        .ok()
        .flatten()
        .expect("rialto serve listens");
    Serve { child, port }
}

/// Values of `keys` through one MGET (`None` for a nil).
pub fn mget(port: u16, keys: &[String]) -> Vec<Option<String>> {
    let mut args = vec!["MGET".to_string()];
    args.extend(keys.iter().cloned());
    array(port, &args)
}

/// The reply of a command whose reply is an array of bulk strings (MGET, HMGET, HGETALL in
/// RESP2), `None` for a nil.
#[allow(dead_code)]
pub fn array(port: u16, args: &[String]) -> Vec<Option<String>> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let n: usize = line
        .trim_end()
        .strip_prefix('*')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{args:?}: not an array reply: {line}"));
    (0..n)
        .map(|_| {
            line.clear();
            r.read_line(&mut line).unwrap();
            let len: i64 = line.trim_end()[1..].parse().unwrap();
            if len < 0 {
                return None;
            }
            let mut v = vec![0u8; len as usize + 2];
            r.read_exact(&mut v).unwrap();
            v.truncate(len as usize);
            Some(String::from_utf8(v).unwrap())
        })
        .collect()
}
