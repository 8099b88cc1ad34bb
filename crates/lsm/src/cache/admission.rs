//! Admission to a full cache on a second sighting (a TinyLFU doorkeeper).
//!
//! A cache that inserts everything it misses, once full, replaces a cached item with every
//! miss. Under reads spread over far more data than it holds (random keys of a large
//! dataset) that costs an insert, an eviction and their allocations per read, and evicts
//! items read again for items read once. The doorkeeper remembers the items missed in the
//! last `window` misses, in a Bloom filter of two probes; a full cache admits an item only
//! when the doorkeeper has seen it before, so one that is read again soon gets in on its
//! second miss and a one-off read costs two bit tests. Every `window` sightings the filter
//! is cleared, so what it remembers is recent.
//!
//! Lock-free: sightings set bits with `fetch_or`. Races only blur the heuristic (a sighting
//! lost to a concurrent clear, a clear run twice); no cache state depends on it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Filter bits per remembered item: with two probes, about 5% false admissions.
const BITS_PER_ITEM: usize = 8;

/// See the module docs.
pub(crate) struct Doorkeeper {
    words: Box<[AtomicU64]>,
    /// Bits in the filter, less one (their number is a power of two).
    mask: u64,
    sightings: AtomicUsize,
    window: usize,
}

impl Doorkeeper {
    /// A doorkeeper that remembers about the last `window` items it was shown.
    pub(crate) fn new(window: usize) -> Doorkeeper {
        let window = window.max(64);
        let bits = (window * BITS_PER_ITEM).next_power_of_two();
        Doorkeeper {
            // Zeroed memory: a large filter's pages are not touched before bits land there.
            // SAFETY: an all-zero `AtomicU64` is a valid 0.
            words: unsafe { Box::<[AtomicU64]>::new_zeroed_slice(bits / 64).assume_init() },
            mask: bits as u64 - 1,
            sightings: AtomicUsize::new(0),
            window,
        }
    }

    /// Records a sighting of the item of `hash` (any well-mixed 64-bit hash); true when it
    /// was seen before in the window.
    pub(crate) fn seen_before(&self, hash: u64) -> bool {
        let a = hash & self.mask;
        let b = hash.rotate_right(32) & self.mask;
        let seen = self.set(a) & self.set(b);
        if self.sightings.fetch_add(1, Ordering::Relaxed) + 1 >= self.window {
            self.sightings.store(0, Ordering::Relaxed);
            for w in self.words.iter() {
                w.store(0, Ordering::Relaxed);
            }
        }
        seen
    }

    /// Sets bit `i`; whether it was set.
    fn set(&self, i: u64) -> bool {
        let bit = 1u64 << (i % 64);
        self.words[(i / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(i: u64) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())
    }

    #[test]
    fn a_second_sighting_is_admitted_a_first_mostly_not() {
        let d = Doorkeeper::new(10_000);
        let first = (0..5_000).filter(|&i| d.seen_before(mix(i))).count();
        // False admissions only: about 5% of a filter at half its window.
        assert!(first < 250, "{first} first sightings admitted");
        assert!((0..5_000).all(|i| d.seen_before(mix(i))));
    }

    #[test]
    fn the_window_forgets() {
        let d = Doorkeeper::new(1_000);
        assert!(!d.seen_before(mix(1)));
        // A thousand other items close the window and clear the filter.
        for i in 10_000..11_000 {
            d.seen_before(mix(i));
        }
        assert!(!d.seen_before(mix(1)));
        assert!(d.seen_before(mix(1)));
    }
}
