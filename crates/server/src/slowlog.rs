//! The slow log: the most recent commands that took longer than `slowlog-log-slower-than`
//! microseconds of execution (not counting time spent waiting for durability or the network,
//! as in Redis).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use rialto_resp::Reply;

/// Most arguments kept per entry, and bytes kept per argument (Redis's limits).
const MAX_ARGS: usize = 32;
const MAX_ARG_BYTES: usize = 128;

/// What a logged secret is replaced with, as Redis shows it.
const REDACTED: &[u8] = b"(redacted)";

/// Configuration keys whose values are secrets.
const SECRET_CONFIG_KEYS: &[&str] = &["requirepass", "user"];

/// Which arguments of a command are secrets that a log must not show: AUTH's, HELLO's AUTH
/// user and password, ACL SETUSER's user and rules (they hold passwords), CONFIG SET's values
/// of secret keys, MIGRATE's AUTH password and AUTH2 user and password. The same ones Redis 7.0
/// redacts.
pub fn secret_args(args: &[Bytes]) -> Vec<usize> {
    let is = |a: &Bytes, s: &str| a.eq_ignore_ascii_case(s.as_bytes());
    let Some(cmd) = args.first() else {
        return Vec::new();
    };
    if is(cmd, "auth") {
        return (1..args.len()).collect();
    }
    if is(cmd, "hello") {
        // HELLO [protover [AUTH username password] [SETNAME name]]
        return args
            .iter()
            .enumerate()
            .skip(2)
            .find(|(_, a)| is(a, "auth"))
            .map(|(i, _)| (i + 1..(i + 3).min(args.len())).collect())
            .unwrap_or_default();
    }
    if is(cmd, "migrate") {
        // Its options as MIGRATE parses them: up to KEYS or the first it does not know.
        let mut out = Vec::new();
        let mut j = 6;
        while j < args.len() {
            let more = args.len() - 1 - j;
            if is(&args[j], "auth") && more >= 1 {
                out.push(j + 1);
                j += 1;
            } else if is(&args[j], "auth2") && more >= 2 {
                out.extend([j + 1, j + 2]);
                j += 2;
            } else if !is(&args[j], "copy") && !is(&args[j], "replace") {
                break;
            }
            j += 1;
        }
        return out;
    }
    if is(cmd, "acl") && args.get(1).is_some_and(|a| is(a, "setuser")) {
        return (2..args.len()).collect();
    }
    if is(cmd, "config") && args.get(1).is_some_and(|a| is(a, "set")) {
        return (2..args.len())
            .step_by(2)
            .filter(|&i| SECRET_CONFIG_KEYS.iter().any(|k| is(&args[i], k)))
            .map(|i| i + 1)
            .filter(|&i| i < args.len())
            .collect();
    }
    Vec::new()
}

/// One logged command.
pub struct SlowEntry {
    pub id: u64,
    pub unix_secs: i64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    pub addr: SocketAddr,
    pub name: Option<Bytes>,
}

/// The bounded log. The threshold is read on every command, so it is an atomic outside the
/// entries' lock.
pub struct SlowLog {
    threshold: AtomicI64,
    log: Mutex<Entries>,
}

struct Entries {
    entries: VecDeque<SlowEntry>,
    next_id: u64,
    max_len: usize,
}

impl SlowLog {
    pub fn new() -> SlowLog {
        SlowLog {
            threshold: AtomicI64::new(10_000),
            log: Mutex::new(Entries {
                entries: VecDeque::new(),
                next_id: 0,
                max_len: 128,
            }),
        }
    }

    /// Applies `slowlog-log-slower-than` and `slowlog-max-len`.
    pub fn configure(&self, threshold: i64, max_len: usize) {
        self.threshold.store(threshold, Ordering::Relaxed);
        let mut l = self.log.lock();
        l.max_len = max_len;
        l.entries.truncate(max_len);
    }

    /// The threshold, or `None` when logging is off (negative).
    pub fn threshold_micros(&self) -> Option<u64> {
        u64::try_from(self.threshold.load(Ordering::Relaxed)).ok()
    }

    /// Logs a command (the caller checked the threshold).
    pub fn push(
        &self,
        unix_secs: i64,
        micros: u64,
        args: &[Bytes],
        addr: SocketAddr,
        name: Option<Bytes>,
    ) {
        let mut l = self.log.lock();
        if l.max_len == 0 {
            return;
        }
        let secret = secret_args(args);
        let mut kept: Vec<Bytes> = Vec::with_capacity(args.len().min(MAX_ARGS));
        for (i, a) in args.iter().enumerate() {
            if i == MAX_ARGS - 1 && args.len() > MAX_ARGS {
                kept.push(Bytes::from(format!(
                    "... ({} more arguments)",
                    args.len() - MAX_ARGS + 1
                )));
                break;
            }
            if secret.contains(&i) {
                kept.push(Bytes::from_static(REDACTED));
                continue;
            }
            if a.len() > MAX_ARG_BYTES {
                let mut v = a[..MAX_ARG_BYTES].to_vec();
                v.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - MAX_ARG_BYTES).as_bytes(),
                );
                kept.push(Bytes::from(v));
            } else {
                // Copy: the request buffer this slice points into must not stay alive.
                kept.push(Bytes::copy_from_slice(a));
            }
        }
        let id = l.next_id;
        l.entries.push_front(SlowEntry {
            id,
            unix_secs,
            micros,
            args: kept,
            addr,
            name,
        });
        l.next_id += 1;
        let max = l.max_len;
        l.entries.truncate(max);
    }

    pub fn len(&self) -> usize {
        self.log.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.log.lock().entries.is_empty()
    }

    pub fn reset(&self) {
        self.log.lock().entries.clear();
    }

    /// SLOWLOG GET's reply for the newest `count` entries (all if `None`).
    pub fn get(&self, count: Option<usize>) -> Reply {
        let l = self.log.lock();
        let n = count.unwrap_or(l.entries.len());
        Reply::Array(
            l.entries
                .iter()
                .take(n)
                .map(|e| {
                    Reply::Array(vec![
                        Reply::Integer(e.id as i64),
                        Reply::Integer(e.unix_secs),
                        Reply::Integer(e.micros as i64),
                        Reply::Array(e.args.iter().cloned().map(Reply::Bulk).collect()),
                        Reply::bulk(e.addr.to_string()),
                        Reply::Bulk(e.name.clone().unwrap_or_default()),
                    ])
                })
                .collect(),
        )
    }
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_entries_and_truncates_arguments() {
        let log = SlowLog::new();
        log.configure(0, 2);
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        for i in 0..3 {
            log.push(
                i,
                5,
                &[Bytes::from("get"), Bytes::from(vec![b'x'; 200])],
                addr,
                None,
            );
        }
        assert_eq!(log.len(), 2);
        let Reply::Array(items) = log.get(None) else {
            panic!()
        };
        let Reply::Array(first) = &items[0] else {
            panic!()
        };
        assert_eq!(first[0], Reply::Integer(2));
        let Reply::Array(args) = &first[3] else {
            panic!()
        };
        assert_eq!(
            args[1],
            Reply::Bulk(Bytes::from(format!(
                "{}... (72 more bytes)",
                "x".repeat(128)
            )))
        );
        let many: Vec<Bytes> = (0..40).map(|i| Bytes::from(i.to_string())).collect();
        log.push(9, 1, &many, addr, None);
        let Reply::Array(items) = log.get(Some(1)) else {
            panic!()
        };
        let Reply::Array(e) = &items[0] else { panic!() };
        let Reply::Array(args) = &e[3] else { panic!() };
        assert_eq!(args.len(), 32);
        assert_eq!(args[31], Reply::bulk("... (9 more arguments)"));
        log.configure(-1, 2);
        assert_eq!(log.threshold_micros(), None);
    }

    fn secrets(cmd: &str) -> Vec<usize> {
        let args: Vec<Bytes> = cmd
            .split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        secret_args(&args)
    }

    #[test]
    fn secrets_are_found_where_redis_redacts_them() {
        assert_eq!(secrets("auth pw"), [1]);
        assert_eq!(secrets("AUTH user pw"), [1, 2]);
        assert_eq!(secrets("hello 3 auth u p setname n"), [3, 4]);
        assert_eq!(secrets("HELLO 3 SETNAME n AUTH u p"), [5, 6]);
        assert_eq!(
            secrets("hello 3 auth u"),
            [3],
            "a short HELLO still hides what it has"
        );
        assert_eq!(secrets("HELLO 3"), Vec::<usize>::new());
        assert_eq!(secrets("acl setuser bob on >pw"), [2, 3, 4]);
        assert_eq!(secrets("acl whoami"), Vec::<usize>::new());
        assert_eq!(
            secrets("config set maxclients 10 REQUIREPASS pw hz 5 user u"),
            [5, 9]
        );
        assert_eq!(secrets("config set requirepass"), Vec::<usize>::new());
        assert_eq!(secrets("set auth pw"), Vec::<usize>::new());
    }

    #[test]
    fn migrate_credentials_are_secrets() {
        let args = |s: &str| {
            s.split(' ')
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            secret_args(&args("migrate h 1 k 0 10 COPY AUTH pw")),
            vec![8]
        );
        assert_eq!(
            secret_args(&args("migrate h 1 k 0 10 AUTH2 u pw REPLACE")),
            vec![7, 8]
        );
        assert_eq!(
            secret_args(&args("migrate h 1 k 0 10 KEYS auth x")),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn logged_secrets_are_redacted() {
        let log = SlowLog::new();
        log.configure(0, 8);
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let args: Vec<Bytes> = ["CONFIG", "SET", "requirepass", "s3cret"]
            .map(Bytes::from)
            .to_vec();
        log.push(1, 1, &args, addr, None);
        let text = format!("{:?}", log.get(None));
        assert!(
            !text.contains("s3cret") && text.contains("(redacted)"),
            "{text}"
        );
    }
}
