//! RESP mode: the same writers and checks over the Redis protocol against a `rialto serve`
//! process, which is what the driver kills.
//!
//! Four keys in ten (those whose last byte is a multiple of 3) hold hashes instead of strings: the checked value is the hash's field
//! `v`, written with HSET next to two padding fields, which the server (started with
//! `hash-max-listpack-entries 2`) keeps as keys of their own. Three in ten (last byte 1 more
//! than a multiple of 3) hold lists: a write pushes the value at the head (LPUSH; the script
//! of a multi-key write also trims the list to 50 elements) and the checked value is the head
//! (LINDEX 0); with `list-max-listpack-size 2` they are large lists, an element a key.
//! Overwrites, deletions, trims and the background reclaim of deleted collections' members are
//! then in every kill's way.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rialto_resp::Reply;

use super::super::stores_backend::Remote;
use super::workload::Target;
use super::StressError;

/// Longest wait for a reply: a server that stops answering is a failure, not a hang.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// One connection to the server.
pub struct RespTarget {
    conn: Remote,
    /// Multi-key writes made so far: they alternate between MULTI/EXEC and a script.
    groups: u64,
}

/// The script of a multi-key write: every key set to its value, in one EVAL (ARGV[n + i] is
/// `h` for a hash key, `l` for a list key).
const SET_ALL: &str = "local n = #KEYS \
    for i = 1, n do \
      if ARGV[n + i] == 'h' then \
        redis.call('HSET', KEYS[i], 'v', ARGV[i], 'pad1', ARGV[i], 'pad2', 'x') \
      elseif ARGV[n + i] == 'l' then \
        redis.call('LPUSH', KEYS[i], ARGV[i]) \
        redis.call('LTRIM', KEYS[i], 0, 49) \
      else \
        redis.call('SET', KEYS[i], ARGV[i]) \
      end \
    end \
    return n";

/// Whether `key` holds a hash (four keys in ten, by their last byte).
fn is_hash_key(key: &[u8]) -> bool {
    key.last().is_some_and(|b| b % 3 == 0)
}

/// Whether `key` holds a list (three keys in ten, by their last byte).
fn is_list_key(key: &[u8]) -> bool {
    key.last().is_some_and(|b| b % 3 == 1)
}

/// The command that writes `value` under `key`: SET, HSET of the checked field `v` and two
/// padding fields, or LPUSH.
fn put_args<'a>(key: &'a [u8], value: &'a [u8]) -> Vec<&'a [u8]> {
    if is_hash_key(key) {
        vec![b"HSET", key, b"v", value, b"pad1", value, b"pad2", b"x"]
    } else if is_list_key(key) {
        vec![b"LPUSH", key, value]
    } else {
        vec![b"SET", key, value]
    }
}

impl RespTarget {
    /// Connects to `127.0.0.1:port`.
    pub fn connect(port: u16) -> Result<RespTarget, String> {
        let conn = Remote::connect(&format!("127.0.0.1:{port}")).map_err(|e| e.to_string())?;
        conn.set_read_timeout(REPLY_TIMEOUT)
            .map_err(|e| e.to_string())?;
        Ok(RespTarget { conn, groups: 0 })
    }

    /// The server's DBSIZE.
    pub fn dbsize(&mut self) -> Result<u64, String> {
        match self.conn.call(&["DBSIZE"]) {
            Ok(Reply::Integer(n)) => u64::try_from(n).map_err(|_| format!("DBSIZE replied {n}")),
            Ok(other) => Err(format!("DBSIZE replied {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Asks the server to stop cleanly (SHUTDOWN; the reply is the connection closing).
    pub fn shutdown(mut self) {
        let _ = self.conn.call(&["SHUTDOWN"]);
    }
}

impl Target for RespTarget {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        match self.conn.call(&put_args(key, value)) {
            Ok(Reply::Simple(_) | Reply::Integer(_)) => Ok(()),
            Ok(other) => Err(format!("a write replied {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), String> {
        match self.conn.call(&[&b"DEL"[..], key]) {
            Ok(Reply::Integer(_)) => Ok(()),
            Ok(other) => Err(format!("DEL replied {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// MULTI, a SET per pair, EXEC (pipelined, then every reply checked), or every other
    /// time one EVAL that sets them all.
    fn put_group(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
        self.groups += 1;
        if self.groups.is_multiple_of(2) {
            let n = pairs.len().to_string();
            let mut args: Vec<&[u8]> = vec![b"EVAL", SET_ALL.as_bytes(), n.as_bytes()];
            args.extend(pairs.iter().map(|(k, _)| &k[..]));
            args.extend(pairs.iter().map(|(_, v)| &v[..]));
            args.extend(
                pairs
                    .iter()
                    .map(|(k, _)| match (is_hash_key(k), is_list_key(k)) {
                        (true, _) => &b"h"[..],
                        (_, true) => b"l",
                        _ => b"s",
                    }),
            );
            return match self.conn.call(&args) {
                Ok(Reply::Integer(got)) if got as usize == pairs.len() => Ok(()),
                Ok(other) => Err(format!("EVAL replied {other:?}")),
                Err(e) => Err(e.to_string()),
            };
        }
        self.conn.send(&[&b"MULTI"[..]]);
        for (k, v) in pairs {
            self.conn.send(&put_args(k, v));
        }
        self.conn.send(&[&b"EXEC"[..]]);
        self.conn.flush().map_err(|e| e.to_string())?;
        let mut recv = || self.conn.recv().map_err(|e| e.to_string());
        match recv()? {
            Reply::Simple(_) => {}
            other => return Err(format!("MULTI replied {other:?}")),
        }
        for _ in pairs {
            match recv()? {
                Reply::Simple(_) => {}
                other => return Err(format!("a queued write replied {other:?}")),
            }
        }
        match recv()? {
            Reply::Array(items) if items.len() == pairs.len() => {
                match items
                    .iter()
                    .find(|r| !matches!(r, Reply::Simple(_) | Reply::Integer(_)))
                {
                    None => Ok(()),
                    Some(bad) => Err(format!("a write in EXEC replied {bad:?}")),
                }
            }
            other => Err(format!("EXEC replied {other:?}")),
        }
    }

    fn get_many(&mut self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, String> {
        for k in keys {
            if is_hash_key(k) {
                self.conn.send(&[&b"HGET"[..], k, b"v"]);
            } else if is_list_key(k) {
                self.conn.send(&[&b"LINDEX"[..], k, b"0"]);
            } else {
                self.conn.send(&[&b"GET"[..], k]);
            }
        }
        self.conn.flush().map_err(|e| e.to_string())?;
        keys.iter()
            .map(|_| match self.conn.recv() {
                Ok(Reply::Bulk(b)) => Ok(Some(b.to_vec())),
                Ok(Reply::Null) => Ok(None),
                Ok(other) => Err(format!("a read replied {other:?}")),
                Err(e) => Err(e.to_string()),
            })
            .collect()
    }
}

/// A `rialto serve` process.
pub struct Server {
    pub child: Child,
    /// Its port, once it listens.
    pub port: Option<u16>,
    /// Time from spawn to listening.
    pub recovered: Option<Duration>,
    /// Its stderr lines (the log), read by a thread.
    log: mpsc::Receiver<String>,
    /// Lines read while waiting for it to listen.
    early: Vec<String>,
}

/// How the driver starts servers.
pub struct ServerSpec<'a> {
    pub bin: &'a Path,
    pub dir: &'a Path,
    pub durability: &'a str,
    pub write_buffer_size: usize,
    /// `rialto serve --triad`.
    pub triad: &'a str,
}

impl Server {
    /// Starts a server on a kernel-picked port and waits until it listens or exits (a kill
    /// point may fire during recovery). `kill_points` arms them in the server.
    pub fn start(spec: &ServerSpec<'_>, kill_points: Option<&str>) -> Result<Server, StressError> {
        let start = Instant::now();
        let mut cmd = Command::new(spec.bin);
        cmd.args(["serve", "--dir"])
            .arg(spec.dir.join("db"))
            .args(["--port", "0", "--bind", "127.0.0.1", "--threads", "1"])
            .args(["--appendfsync", spec.durability])
            .args(["--write-buffer-size", &spec.write_buffer_size.to_string()])
            .args(["--triad", spec.triad])
            .args(["--hash-max-listpack-entries", "2"])
            .args(["--list-max-listpack-size", "2"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        match kill_points {
            Some(k) => cmd.env("RIALTO_KILL_POINTS", k),
            None => cmd.env_remove("RIALTO_KILL_POINTS"),
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| StressError::Io(format!("start {}: {e}", spec.bin.display())))?;
        let (tx, log) = mpsc::channel();
        if let Some(stderr) = child.stderr.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut s = Server {
            child,
            port: None,
            recovered: None,
            log,
            early: Vec::new(),
        };
        let deadline = start + Duration::from_secs(120);
        loop {
            match s.log.recv_timeout(Duration::from_millis(20)) {
                Ok(line) => {
                    if line.contains("ready to accept connections") {
                        s.port = line
                            .rsplit(':')
                            .next()
                            .and_then(|p| p.trim().parse::<u16>().ok());
                        s.recovered = Some(start.elapsed());
                        return Ok(s);
                    }
                    // Kept: a kill point during recovery names itself here.
                    s.early.push(line);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(s),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if Instant::now() > deadline {
                let _ = s.child.kill();
                return Err(StressError::Engine(
                    "the server did not listen within 120 s".into(),
                ));
            }
        }
    }

    /// The log lines not returned before (all of them once the process has exited).
    pub fn drain_log(&mut self) -> Vec<String> {
        let mut lines = std::mem::take(&mut self.early);
        lines.extend(self.log.try_iter());
        lines
    }
}
