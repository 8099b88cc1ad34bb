//! Error replies counted as Redis 7.0 counts them, for error-rate alerts: every error reply
//! sent (`INFO stats` `total_error_replies`), by its prefix (`INFO errorstats`,
//! `errorstat_ERR:count=3`), and per command, `rejected_calls` (refused before it ran:
//! unknown subcommand, arity, NOAUTH, NOPERM, BUSY, a cluster redirection...) apart from
//! `failed_calls` (it ran and answered an error) in `INFO commandstats`. The per-command
//! counters live in the command registry; this module holds the rest and the rules.
//!
//! Thread safety: counting takes one short lock (errors are the rare path); reading takes it
//! too. CONFIG RESETSTAT zeroes everything.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rialto_resp::Reply;

use crate::server::Shared;

/// Distinct prefixes tracked. Error texts can come from users (a script's
/// `redis.error_reply`), so the table is bounded as later Redis versions bound it: the
/// first prefix past the limit empties it and stops tracking until CONFIG RESETSTAT, with
/// `errorstat_ERRORSTATS_DISABLED:count=1` and a log line saying so; the total keeps
/// counting.
pub const MAX_PREFIXES: usize = 128;

/// How far into an error text its prefix may end, as in Redis (32 bytes with the `-`).
const PREFIX_WINDOW: usize = 31;

/// Error replies sent, in total and by prefix.
#[derive(Default)]
pub struct ErrorStats {
    total: AtomicU64,
    by_prefix: Mutex<Prefixes>,
}

#[derive(Default)]
struct Prefixes {
    counts: BTreeMap<Vec<u8>, u64>,
    /// Over [`MAX_PREFIXES`]: only the total counts.
    disabled: bool,
}

impl ErrorStats {
    /// Counts one error reply of text `text` (`ERR syntax error`, without the `-`).
    pub fn count(&self, text: &[u8]) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let prefix = prefix(text);
        let mut p = self.by_prefix.lock();
        if p.disabled {
            return;
        }
        if let Some(n) = p.counts.get_mut(prefix) {
            *n += 1;
            return;
        }
        if p.counts.len() >= MAX_PREFIXES {
            let seen: Vec<String> = p
                .counts
                .keys()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            tracing::warn!(
                limit = MAX_PREFIXES,
                prefixes = %seen.join(" "),
                "INFO errorstats stopped counting by prefix: more distinct error prefixes than the limit; total_error_replies still counts every error, and CONFIG RESETSTAT starts again"
            );
            p.counts.clear();
            p.counts.insert(b"ERRORSTATS_DISABLED".to_vec(), 1);
            p.disabled = true;
            return;
        }
        p.counts.insert(prefix.to_vec(), 1);
    }

    /// Error replies since start (or the last reset).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// `(prefix, count)` in prefix order, as INFO errorstats lists them.
    pub fn by_prefix(&self) -> Vec<(String, u64)> {
        self.by_prefix
            .lock()
            .counts
            .iter()
            .map(|(k, n)| (String::from_utf8_lossy(k).into_owned(), *n))
            .collect()
    }

    /// The `INFO errorstats` section.
    pub fn render(&self, out: &mut String) {
        out.push_str("# Errorstats\r\n");
        for (prefix, n) in self.by_prefix() {
            let _ = write!(out, "errorstat_{prefix}:count={n}\r\n");
        }
    }

    /// Zeroes every count and tracks prefixes again (CONFIG RESETSTAT).
    pub fn reset(&self) {
        self.total.store(0, Ordering::Relaxed);
        *self.by_prefix.lock() = Prefixes::default();
    }
}

/// An error's prefix as Redis takes it: what precedes the first space within the first 31
/// bytes, or `ERR` when there is none (a script's `{err='X'}`, say).
pub fn prefix(text: &[u8]) -> &[u8] {
    let window = &text[..text.len().min(PREFIX_WINDOW)];
    match window.iter().position(|&b| b == b' ') {
        Some(end) => &text[..end],
        None => b"ERR",
    }
}

/// The text of an error reply, if `r` is one.
fn error_text(r: &Reply) -> Option<&[u8]> {
    match r {
        Reply::Error(e) => Some(e),
        _ => None,
    }
}

/// The command or subcommand of statistics slot `slot` ran and answered `reply`: an error
/// counts as a failed call of it and as an error reply.
pub fn ran(shared: &Shared, slot: usize, reply: &Reply) {
    if let Some(text) = error_text(reply) {
        shared.errors.count(text);
    }
    failed(shared, slot, reply);
}

/// Slot `slot`'s command ran and answered `reply`, an error reply already counted as one (a
/// script's error that one of its calls answered): only a failed call of it.
pub fn failed(shared: &Shared, slot: usize, reply: &Reply) {
    if error_text(reply).is_some() {
        if let Some(e) = shared.registry.entry(slot) {
            e.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A request was refused before it ran with `reply`: a rejected call of slot `slot` when it
/// was known (an unknown command has none; one refused before its subcommand was resolved
/// counts on its container) and an error reply.
pub fn rejected(shared: &Shared, slot: Option<usize>, reply: &Reply) {
    if let Some(text) = error_text(reply) {
        shared.errors.count(text);
        if let Some(e) = slot.and_then(|s| shared.registry.entry(s)) {
            e.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The replies of a transaction's commands (EXEC's array, `slots[i]` running the command of
/// `replies[i]`): each error is a failed call of its command, as each ran inside EXEC;
/// `counted` lists the positions of scripts' errors already counted as error replies.
pub fn ran_in_exec(shared: &Shared, slots: &[usize], reply: &Reply, counted: &[usize]) {
    if let Reply::Array(replies) = reply {
        for (pos, (slot, r)) in slots.iter().zip(replies).enumerate() {
            if counted.contains(&pos) {
                failed(shared, *slot, r);
            } else {
                ran(shared, *slot, r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_taken_as_redis_takes_them() {
        assert_eq!(prefix(b"ERR syntax error"), b"ERR");
        assert_eq!(prefix(b"WRONGTYPE Operation against a key"), b"WRONGTYPE");
        assert_eq!(prefix(b"NOPERM this user has no permissions"), b"NOPERM");
        // No space: ERR.
        assert_eq!(prefix(b"X"), b"ERR");
        assert_eq!(prefix(b""), b"ERR");
        // A space past the window does not count.
        let long = format!("{} tail", "A".repeat(31));
        assert_eq!(prefix(long.as_bytes()), b"ERR");
        let edge = format!("{} tail", "A".repeat(30));
        assert_eq!(prefix(edge.as_bytes()), "A".repeat(30).as_bytes());
    }

    #[test]
    fn counts_by_prefix_in_order_and_resets() {
        let s = ErrorStats::default();
        for e in [
            &b"WRONGTYPE x"[..],
            b"ERR a",
            b"ERR b",
            b"NOPERM c",
            b"MY bad",
        ] {
            s.count(e);
        }
        assert_eq!(s.total(), 5);
        let mut out = String::new();
        s.render(&mut out);
        assert_eq!(
            out,
            "# Errorstats\r\nerrorstat_ERR:count=2\r\nerrorstat_MY:count=1\r\nerrorstat_NOPERM:count=1\r\nerrorstat_WRONGTYPE:count=1\r\n"
        );
        s.reset();
        assert_eq!(s.total(), 0);
        assert!(s.by_prefix().is_empty());
    }

    #[test]
    fn too_many_prefixes_stop_the_table_but_not_the_total() {
        let s = ErrorStats::default();
        for i in 0..MAX_PREFIXES {
            s.count(format!("E{i} x").as_bytes());
        }
        assert_eq!(s.by_prefix().len(), MAX_PREFIXES);
        s.count(b"E0 again");
        assert_eq!(s.by_prefix().len(), MAX_PREFIXES);
        s.count(b"ONEMORE x");
        assert_eq!(s.by_prefix(), vec![("ERRORSTATS_DISABLED".to_string(), 1)]);
        s.count(b"ERR after");
        assert_eq!(s.by_prefix(), vec![("ERRORSTATS_DISABLED".to_string(), 1)]);
        assert_eq!(s.total() as usize, MAX_PREFIXES + 3);
        s.reset();
        s.count(b"ERR x");
        assert_eq!(s.by_prefix(), vec![("ERR".to_string(), 1)]);
    }
}
