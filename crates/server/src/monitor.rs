//! MONITOR: every command other clients run, as one line each, to the connections that asked.
//!
//! A monitor is a connection with a mailbox (`pubsub.rs`) registered here; each command is
//! formatted once and delivered to every monitor's mailbox, bounded as pub/sub subscribers
//! are (Redis counts monitors as normal clients: `client-output-buffer-limit normal`, or
//! `output-buffer-limit` when that class is unlimited, so a monitor that stops reading never
//! costs memory without bound). With no monitor the only cost on a command's path is
//! [`Monitors::active`], one relaxed load.
//!
//! The line is Redis's: `<secs>.<micros> [<db> <addr>] "arg" ...`, each argument quoted and
//! escaped as `sdscatrepr` does, the source `lua` for a script's commands, and the secrets
//! the slow log hides shown as `(redacted)` ([`crate::slowlog::secret_args`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use crate::pubsub::{Item, Mailbox, ObufLimit};

/// Where a monitored command came from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A client connected over TCP.
    Client(SocketAddr),
    /// A script's `redis.call`.
    Lua,
}

/// The connections in monitor mode.
#[derive(Default)]
pub struct Monitors {
    /// `list.len()`, read without the lock on every command.
    count: AtomicUsize,
    list: RwLock<Vec<Arc<Mailbox>>>,
    limit: Mutex<Option<ObufLimit>>,
}

impl Monitors {
    /// Whether any connection monitors: the one check every command pays.
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Sets the bound of each monitor's pending lines.
    pub fn set_limit(&self, limit: ObufLimit) {
        *self.limit.lock() = Some(limit);
    }

    /// Adds a monitor; `false` if it already is one (MONITOR again is ignored, as in Redis).
    pub fn add(&self, mb: Arc<Mailbox>) -> bool {
        let mut list = self.list.write();
        if list.iter().any(|m| m.id() == mb.id()) {
            return false;
        }
        list.push(mb);
        self.count.store(list.len(), Ordering::Relaxed);
        true
    }

    /// Removes client `id` from the monitors, if it is one (RESET, the connection's end).
    pub fn remove(&self, id: u64) {
        if !self.active() {
            return;
        }
        let mut list = self.list.write();
        list.retain(|m| m.id() != id);
        self.count.store(list.len(), Ordering::Relaxed);
    }

    /// Whether client `id` monitors.
    pub fn contains(&self, id: u64) -> bool {
        self.active() && self.list.read().iter().any(|m| m.id() == id)
    }

    /// Sends `args`, run in database `db`, to every monitor. Callers check [`Self::active`]
    /// first, so that nothing is formatted when nobody monitors.
    pub fn feed(&self, source: Source, db: u8, args: &[Bytes]) {
        let list = self.list.read();
        if list.is_empty() {
            return;
        }
        let limit = self.limit.lock().unwrap_or(FALLBACK_LIMIT);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let line = Bytes::from(line(now.as_secs(), now.subsec_micros(), db, source, args));
        for mb in list.iter() {
            mb.deliver(Item::Monitor(line.clone()), limit);
        }
    }
}

/// The bound used before the server set one: `output-buffer-limit`'s default.
const FALLBACK_LIMIT: ObufLimit = ObufLimit {
    hard: 1 << 30,
    soft: 0,
    soft_secs: 0,
};

/// The bound of a monitor's pending lines: the normal class, or, when that is unlimited
/// (Redis's default), `output-buffer-limit` as a hard limit.
pub fn limit_of(normal: ObufLimit, output_buffer_limit: usize) -> ObufLimit {
    if normal.hard == 0 && normal.soft == 0 {
        ObufLimit {
            hard: output_buffer_limit,
            soft: 0,
            soft_secs: 0,
        }
    } else {
        normal
    }
}

/// One monitor line without the leading `+` and the CRLF.
pub fn line(secs: u64, micros: u32, db: u8, source: Source, args: &[Bytes]) -> Vec<u8> {
    let mut out = format!("{secs}.{micros:06} ").into_bytes();
    match source {
        Source::Client(addr) => out.extend_from_slice(format!("[{db} {addr}]").as_bytes()),
        Source::Lua => out.extend_from_slice(format!("[{db} lua]").as_bytes()),
    }
    let secret = crate::slowlog::secret_args(args);
    for (i, a) in args.iter().enumerate() {
        out.push(b' ');
        if secret.contains(&i) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            quote(a, &mut out);
        }
    }
    out
}

/// Appends `arg` quoted as Redis's `sdscatrepr`: `\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b`
/// escaped, other bytes outside printable ASCII as `\xNN`.
fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in arg {
        match c {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', c]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&[u8]]) -> Vec<Bytes> {
        a.iter().map(|x| Bytes::copy_from_slice(x)).collect()
    }

    #[test]
    fn a_line_is_redis_s() {
        let addr: SocketAddr = "127.0.0.1:50000".parse().expect("addr");
        let l = line(
            1_700_000_000,
            123,
            0,
            Source::Client(addr),
            &args(&[b"SET", b"k", b"v"]),
        );
        assert_eq!(
            l,
            b"1700000000.000123 [0 127.0.0.1:50000] \"SET\" \"k\" \"v\"".to_vec()
        );
        let l = line(5, 999_999, 3, Source::Lua, &args(&[b"get", b"x"]));
        assert_eq!(l, b"5.999999 [3 lua] \"get\" \"x\"".to_vec());
        let v6: SocketAddr = "[::1]:7".parse().expect("addr");
        let l = line(1, 0, 0, Source::Client(v6), &args(&[b"ping"]));
        assert_eq!(l, b"1.000000 [0 [::1]:7] \"ping\"".to_vec());
    }

    #[test]
    fn arguments_are_escaped_as_sdscatrepr() {
        let mut out = Vec::new();
        quote(b"a\x00\"\\\n\r\t\x07\x08\xff \xc3\xa9~\x7f", &mut out);
        assert_eq!(
            out,
            b"\"a\\x00\\\"\\\\\\n\\r\\t\\a\\b\\xff \\xc3\\xa9~\\x7f\"".to_vec()
        );
    }

    #[test]
    fn secrets_are_redacted() {
        let addr: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        let l = line(
            0,
            0,
            0,
            Source::Client(addr),
            &args(&[b"hello", b"3", b"AUTH", b"u", b"p", b"SETNAME", b"n"]),
        );
        assert_eq!(
            String::from_utf8_lossy(&l),
            "0.000000 [0 127.0.0.1:1] \"hello\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"n\""
        );
        let l = line(0, 0, 0, Source::Lua, &args(&[b"auth", b"pw"]));
        assert!(l.ends_with(b"\"auth\" \"(redacted)\""));
    }

    #[test]
    fn the_bound_falls_back_to_the_output_buffer_limit() {
        let unlimited = ObufLimit {
            hard: 0,
            soft: 0,
            soft_secs: 0,
        };
        assert_eq!(limit_of(unlimited, 100).hard, 100);
        let set = ObufLimit {
            hard: 10,
            soft: 5,
            soft_secs: 1,
        };
        assert_eq!(limit_of(set, 100), set);
    }

    #[test]
    fn monitors_come_and_go() {
        let clients = crate::client::Clients::default();
        let hub = crate::pubsub::Hub::default();
        let addr: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        let h = clients.register(addr, addr, -1, "default");
        let mb = hub.mailbox(&h);
        let m = Monitors::default();
        assert!(!m.active());
        assert!(m.add(Arc::clone(&mb)));
        assert!(!m.add(Arc::clone(&mb)), "a second MONITOR is ignored");
        assert!(m.active() && m.contains(h.id));
        m.feed(Source::Lua, 0, &args(&[b"ping"]));
        let got = mb.take();
        assert_eq!(got.len(), 1);
        assert!(matches!(&got[0], Item::Monitor(l) if l.ends_with(b"[0 lua] \"ping\"")));
        m.remove(h.id);
        assert!(!m.active());
    }

    #[test]
    fn a_monitor_that_does_not_read_is_cut_off() {
        let clients = crate::client::Clients::default();
        let hub = crate::pubsub::Hub::default();
        let addr: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        let h = clients.register(addr, addr, -1, "default");
        let m = Monitors::default();
        m.set_limit(ObufLimit {
            hard: 4096,
            soft: 0,
            soft_secs: 0,
        });
        m.add(hub.mailbox(&h));
        for _ in 0..100 {
            m.feed(Source::Lua, 0, &args(&[b"set", b"key", b"value"]));
        }
        assert!(h.killed.load(Ordering::Acquire));
    }
}
