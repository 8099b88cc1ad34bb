//! Which key indices the benchmark run has left in the database.
//!
//! Space amplification needs the live data size, and engines only estimate it (an LSM tree
//! cannot know how many of its entries are shadowed without reading them). The harness
//! knows exactly which indices it wrote and deleted, so it keeps one bit per index: 1M keys
//! cost 128 KiB. Bits are atomics because benchmark threads write concurrently.

use std::sync::atomic::{AtomicU64, Ordering};

/// One bit per key index in `[0, capacity)`.
#[derive(Debug)]
pub struct LiveKeys {
    words: Vec<AtomicU64>,
    capacity: u64,
}

impl LiveKeys {
    /// An empty set able to hold indices below `capacity`.
    pub fn new(capacity: u64) -> Self {
        let words = capacity.div_ceil(64);
        LiveKeys {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            capacity,
        }
    }

    /// Marks `index` live. Indices at or beyond the capacity are ignored (configuration
    /// sizes the set for every index a benchmark can produce).
    pub fn insert(&self, index: u64) {
        if let Some((w, bit)) = self.slot(index) {
            w.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Marks `index` deleted.
    pub fn remove(&self, index: u64) {
        if let Some((w, bit)) = self.slot(index) {
            w.fetch_and(!bit, Ordering::Relaxed);
        }
    }

    /// True when `index` is live.
    #[cfg(test)]
    pub fn contains(&self, index: u64) -> bool {
        self.slot(index)
            .is_some_and(|(w, bit)| w.load(Ordering::Relaxed) & bit != 0)
    }

    /// Number of live indices.
    pub fn len(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }

    /// True when no index is live.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every index.
    pub fn clear(&self) {
        for w in &self.words {
            w.store(0, Ordering::Relaxed);
        }
    }

    fn slot(&self, index: u64) -> Option<(&AtomicU64, u64)> {
        if index >= self.capacity {
            return None;
        }
        let w = self.words.get(usize::try_from(index / 64).ok()?)?;
        Some((w, 1u64 << (index % 64)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_count() {
        let s = LiveKeys::new(130);
        assert!(s.is_empty());
        for i in [0, 63, 64, 129, 129, 500] {
            s.insert(i);
        }
        assert_eq!(s.len(), 4);
        assert!(s.contains(129) && !s.contains(500) && !s.contains(1));
        s.remove(63);
        s.remove(7);
        assert_eq!(s.len(), 3);
        s.clear();
        assert!(s.is_empty());
    }

    #[test]
    fn concurrent_inserts() {
        let s = LiveKeys::new(10_000);
        std::thread::scope(|sc| {
            for t in 0..4u64 {
                let s = &s;
                sc.spawn(move || {
                    for i in (t..10_000).step_by(4) {
                        s.insert(i);
                    }
                });
            }
        });
        assert_eq!(s.len(), 10_000);
    }
}
