//! A memtable's key filter: a blocked bloom filter over user keys, so a point lookup of a key
//! the memtable does not hold touches one cache line instead of walking the skiplist.
//!
//! Every key has its bits in one 64-byte block (8 words); `PROBES` bits there. One writer at a
//! time (the memtable's insert lock) sets bits with plain loads and stores; readers load.
//!
//! Why a reader never misses a key it could see (no false negatives): the writer sets a key's
//! bits *before* inserting its entry into the skiplist, and entries become visible to readers
//! only through a later release (the published sequence, the super version, or the commit
//! path's locks) that the reader acquired. So whatever entry a reader may find, its bits were
//! set before, and the reader sees them.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// Bits set per key, all in one block.
const PROBES: u32 = 6;
/// Words per block: one 64-byte cache line.
const BLOCK_WORDS: usize = 8;

pub struct KeyFilter {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

impl KeyFilter {
    /// A filter of about `bytes` (rounded down to whole blocks); `None` below one block.
    pub fn new(bytes: usize) -> Option<KeyFilter> {
        let blocks = bytes / (BLOCK_WORDS * 8);
        if blocks == 0 {
            return None;
        }
        Some(KeyFilter {
            words: (0..blocks * BLOCK_WORDS)
                .map(|_| AtomicU64::new(0))
                .collect(),
            blocks: blocks as u64,
        })
    }

    /// The first word of `hash`'s block, and the bit positions (0..512) within it.
    #[inline]
    fn probes(&self, hash: u64) -> (usize, impl Iterator<Item = u32>) {
        // Multiply-shift maps the hash onto the blocks without a division.
        let block = ((u128::from(hash) * u128::from(self.blocks)) >> 64) as usize;
        // Bits from a second mix of the hash, nine at a time (6 × 9 = 54 of 64).
        let mut x = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
        let bits = (0..PROBES).map(move |_| {
            let b = (x & 511) as u32;
            x >>= 9;
            b
        });
        (block * BLOCK_WORDS, bits)
    }

    /// Adds `user_key`. Callers are serialized (the memtable's insert lock).
    pub fn add(&self, user_key: &[u8]) {
        let (base, bits) = self.probes(xxh3_64(user_key));
        for b in bits {
            let w = &self.words[base + (b / 64) as usize];
            // A single writer: load and store suffice, no read-modify-write instruction.
            w.store(
                w.load(Ordering::Relaxed) | (1 << (b % 64)),
                Ordering::Relaxed,
            );
        }
    }

    /// False only if `user_key` was never added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let (base, mut bits) = self.probes(xxh3_64(user_key));
        bits.all(|b| {
            self.words[base + (b / 64) as usize].load(Ordering::Relaxed) & (1 << (b % 64)) != 0
        })
    }

    /// Bytes of memory.
    pub fn memory_usage(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        // 1 MiB for 60,000 keys: about 140 bits per key, so false positives are rare.
        let f = KeyFilter::new(1 << 20).unwrap();
        for i in 0..60_000u32 {
            f.add(format!("key:{i:012}").as_bytes());
        }
        for i in 0..60_000u32 {
            assert!(f.may_contain(format!("key:{i:012}").as_bytes()), "{i}");
        }
        let fp = (60_000..160_000u32)
            .filter(|i| f.may_contain(format!("key:{i:012}").as_bytes()))
            .count();
        assert!(fp < 100, "{fp} false positives in 100,000");
    }

    #[test]
    fn at_18_bits_per_key_false_positives_stay_near_one_percent() {
        // The default's ratio: 1/64 of the write buffer for ~140-byte entries.
        let keys = 10_000u32;
        let f = KeyFilter::new(keys as usize * 18 / 8).unwrap();
        for i in 0..keys {
            f.add(&i.to_le_bytes());
        }
        assert!((0..keys).all(|i| f.may_contain(&i.to_le_bytes())));
        let fp = (keys..keys + 100_000)
            .filter(|i| f.may_contain(&i.to_le_bytes()))
            .count();
        assert!(fp < 2_000, "{fp} false positives in 100,000");
    }

    #[test]
    fn below_one_block_there_is_no_filter() {
        assert!(KeyFilter::new(63).is_none());
        assert_eq!(KeyFilter::new(64).unwrap().memory_usage(), 64);
    }
}
