//! TRIAD-MEM's choice of hot keys at a flush. Pure: it reads the memtable's entries and
//! returns the keys to keep in memory.
//!
//! A key's update frequency is the number of its entries in the memtable (every write of a
//! key adds one). Keys updated at least `min_updates` times are candidates; the most updated
//! are kept first, while the size of their newest entries fits in the budget (a fraction of
//! the write buffer), so memory stays bounded however skewed the writes are. Ties go to the
//! smaller entry (more keys per byte), then to key order (deterministic).

use std::collections::HashSet;

/// Memory an entry costs beyond its key and value in the memtable (node header and an
/// average tower), for the budget.
pub const ENTRY_OVERHEAD: usize = 40;

/// Collects a memtable's entries and picks its hot keys (see the module docs).
#[derive(Debug, Default)]
pub struct HotSelector {
    current: Vec<u8>,
    /// Entries of `current` so far (0 before the first entry).
    updates: u32,
    /// Cost of `current`'s newest entry.
    size: usize,
    min_updates: u32,
    /// (updates, newest entry cost, key) of every key updated at least `min_updates` times.
    candidates: Vec<(u32, usize, Vec<u8>)>,
}

impl HotSelector {
    /// A selector for keys with at least `min_updates` entries (never fewer than 2: a key
    /// written once is not hot).
    pub fn new(min_updates: u32) -> Self {
        HotSelector {
            min_updates: min_updates.max(2),
            ..HotSelector::default()
        }
    }

    /// Adds an entry: entries come in internal-key order (a key's entries adjacent, newest
    /// first); `bytes` is the entry's key and value length.
    pub fn add(&mut self, user_key: &[u8], bytes: usize) {
        if self.updates > 0 && self.current == user_key {
            self.updates = self.updates.saturating_add(1);
            return;
        }
        self.close();
        self.current.clear();
        self.current.extend_from_slice(user_key);
        self.updates = 1;
        self.size = bytes + ENTRY_OVERHEAD;
    }

    fn close(&mut self) {
        if self.updates >= self.min_updates {
            self.candidates
                .push((self.updates, self.size, self.current.clone()));
        }
        self.updates = 0;
    }

    /// The hot keys: the most updated candidates whose newest entries fit in `budget` bytes.
    pub fn finish(mut self, budget: usize) -> HashSet<Vec<u8>> {
        self.close();
        let mut c = self.candidates;
        c.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut used = 0usize;
        let mut hot = HashSet::new();
        for (_, size, key) in c {
            if used + size > budget {
                // A smaller, less updated entry might still fit, but keeping strictly the
                // most updated keys keeps the set predictable; the budget is a bound.
                break;
            }
            used += size;
            hot.insert(key);
        }
        hot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hot keys among `entries` (`(user key, entry bytes)` in internal-key order), for
    /// `budget` bytes and `min_updates` (see [`HotSelector`]).
    fn select_hot<'a>(
        entries: impl Iterator<Item = (&'a [u8], usize)>,
        budget: usize,
        min_updates: u32,
    ) -> HashSet<Vec<u8>> {
        let mut s = HotSelector::new(min_updates);
        for (k, bytes) in entries {
            s.add(k, bytes);
        }
        s.finish(budget)
    }

    fn entries(spec: &[(&'static str, u32, usize)]) -> Vec<(&'static [u8], usize)> {
        let mut out = Vec::new();
        for &(k, n, size) in spec {
            for _ in 0..n {
                out.push((k.as_bytes(), size));
            }
        }
        out
    }

    #[test]
    fn most_updated_first_within_the_budget() {
        let e = entries(&[("a", 5, 60), ("b", 1, 60), ("c", 9, 60), ("d", 3, 60)]);
        let all = select_hot(e.iter().copied(), 10_000, 2);
        let want: HashSet<Vec<u8>> = [b"a".to_vec(), b"c".to_vec(), b"d".to_vec()].into();
        assert_eq!(all, want, "b was written once: cold");
        // Room for two entries of 100 bytes: the two most updated.
        let two = select_hot(e.iter().copied(), 200, 2);
        let want: HashSet<Vec<u8>> = [b"a".to_vec(), b"c".to_vec()].into();
        assert_eq!(two, want);
        assert!(select_hot(e.iter().copied(), 50, 2).is_empty());
        // A higher bar.
        let six = select_hot(e.iter().copied(), 10_000, 6);
        assert_eq!(six, [b"c".to_vec()].into());
    }

    #[test]
    fn nothing_is_hot_when_every_key_is_written_once() {
        let e = entries(&[("a", 1, 10), ("b", 1, 10), ("c", 1, 10)]);
        assert!(select_hot(e.iter().copied(), 10_000, 2).is_empty());
        // min_updates below 2 still means "updated", never "written once".
        assert!(select_hot(e.iter().copied(), 10_000, 0).is_empty());
        assert!(select_hot(std::iter::empty(), 10_000, 2).is_empty());
    }

    #[test]
    fn ties_prefer_smaller_entries_then_key_order() {
        let e = entries(&[("a", 3, 500), ("b", 3, 100), ("c", 3, 100)]);
        let one = select_hot(e.iter().copied(), 150, 2);
        assert_eq!(one, [b"b".to_vec()].into());
    }
}
