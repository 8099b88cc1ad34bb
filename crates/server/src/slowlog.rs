//! The slow log: the most recent commands that took longer than `slowlog-log-slower-than`
//! microseconds of execution (not counting time spent waiting for durability or the network,
//! as in Redis).

use std::collections::VecDeque;
use std::net::SocketAddr;

use bytes::Bytes;
use rialto_resp::Reply;

/// Most arguments kept per entry, and bytes kept per argument (Redis's limits).
const MAX_ARGS: usize = 32;
const MAX_ARG_BYTES: usize = 128;

/// One logged command.
pub struct SlowEntry {
    pub id: u64,
    pub unix_secs: i64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    pub addr: SocketAddr,
    pub name: Option<Bytes>,
}

/// The bounded log.
pub struct SlowLog {
    entries: VecDeque<SlowEntry>,
    next_id: u64,
    threshold: i64,
    max_len: usize,
}

impl SlowLog {
    pub fn new() -> SlowLog {
        SlowLog {
            entries: VecDeque::new(),
            next_id: 0,
            threshold: 10_000,
            max_len: 128,
        }
    }

    /// Applies `slowlog-log-slower-than` and `slowlog-max-len`.
    pub fn configure(&mut self, threshold: i64, max_len: usize) {
        self.threshold = threshold;
        self.max_len = max_len;
        self.entries.truncate(max_len);
    }

    /// The threshold, or `None` when logging is off (negative).
    pub fn threshold_micros(&self) -> Option<u64> {
        u64::try_from(self.threshold).ok()
    }

    /// Logs a command (the caller checked the threshold).
    pub fn push(
        &mut self,
        unix_secs: i64,
        micros: u64,
        args: &[Bytes],
        addr: SocketAddr,
        name: Option<Bytes>,
    ) {
        if self.max_len == 0 {
            return;
        }
        let mut kept: Vec<Bytes> = Vec::with_capacity(args.len().min(MAX_ARGS));
        for (i, a) in args.iter().enumerate() {
            if i == MAX_ARGS - 1 && args.len() > MAX_ARGS {
                kept.push(Bytes::from(format!(
                    "... ({} more arguments)",
                    args.len() - MAX_ARGS + 1
                )));
                break;
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
        self.entries.push_front(SlowEntry {
            id: self.next_id,
            unix_secs,
            micros,
            args: kept,
            addr,
            name,
        });
        self.next_id += 1;
        self.entries.truncate(self.max_len);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// SLOWLOG GET's reply for the newest `count` entries (all if `None`).
    pub fn get(&self, count: Option<usize>) -> Reply {
        let n = count.unwrap_or(self.entries.len());
        Reply::Array(
            self.entries
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
        let mut log = SlowLog::new();
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
}
