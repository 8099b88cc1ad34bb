//! The row cache: recently read values by key, so a hot key costs one hash lookup instead of a
//! skiplist walk and table probes (Venice's hot-key cache; RocksDB's `row_cache`). Only
//! latest-state reads (`Db::get`) use it; snapshot and merger reads do not.
//!
//! Invariants (why a hit is never stale and never shows an unpublished write):
//! - A writer invalidates every key of a batch — removes it and raises its shard's
//!   `max_write_seq` to the batch's last sequence — before the batch can be published.
//! - A reader inserts a value it read at published sequence `s` only if its shard's
//!   `max_write_seq <= s`, checked under the shard lock. A write the reader could have missed
//!   has a sequence above `s` and was either invalidated already (the check refuses) or will
//!   be (removing the entry).
//! - So a cached value is a published value with no newer published write to its key.
//!
//! Eviction is CLOCK per shard: entries get a second chance if read since the hand passed.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use parking_lot::Mutex;
use xxhash_rust::xxh3::{xxh3_64, Xxh3DefaultBuilder};

const SHARDS: usize = 64;
/// Bookkeeping bytes charged per entry besides key and value.
const ENTRY_OVERHEAD: usize = 64;

struct Entry {
    value: Bytes,
    referenced: bool,
}

struct Shard {
    map: HashMap<Box<[u8]>, Entry, Xxh3DefaultBuilder>,
    /// CLOCK order; may hold keys already removed (skipped, and compacted when it grows).
    clock: VecDeque<Box<[u8]>>,
    bytes: usize,
    max_write_seq: u64,
}

/// A sharded, bounded cache of key → value.
pub struct RowCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
}

impl RowCache {
    /// A cache of about `capacity` bytes (keys, values and per-entry overhead).
    pub fn new(capacity: usize) -> RowCache {
        RowCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::with_hasher(Xxh3DefaultBuilder),
                        clock: VecDeque::new(),
                        bytes: 0,
                        max_write_seq: 0,
                    })
                })
                .collect(),
            shard_capacity: (capacity / SHARDS).max(1),
        }
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Shard> {
        &self.shards[(xxh3_64(key) as usize) % SHARDS]
    }

    /// The cached value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<Bytes> {
        let mut s = self.shard(key).lock();
        let e = s.map.get_mut(key)?;
        e.referenced = true;
        Some(e.value.clone())
    }

    /// Caches `value` for `key`, read at published sequence `read_seq`, unless a write newer
    /// than the read was applied to the shard since (see the module invariants). Values above
    /// 1/64 of a shard's capacity are not cached.
    pub fn insert(&self, key: &[u8], value: &Bytes, read_seq: u64) {
        let charge = key.len() + value.len() + ENTRY_OVERHEAD;
        if charge > self.shard_capacity / 64 {
            return;
        }
        let mut s = self.shard(key).lock();
        if s.max_write_seq > read_seq || s.map.contains_key(key) {
            return;
        }
        // An owned copy: a slice would pin the whole block it came from.
        s.map.insert(
            key.into(),
            Entry {
                value: Bytes::copy_from_slice(value),
                referenced: false,
            },
        );
        s.clock.push_back(key.into());
        s.bytes += charge;
        while s.bytes > self.shard_capacity {
            let Some(k) = s.clock.pop_front() else {
                break;
            };
            let give_chance = match s.map.get_mut(&k) {
                None => continue,
                Some(e) if e.referenced => {
                    e.referenced = false;
                    true
                }
                Some(_) => false,
            };
            if give_chance {
                s.clock.push_back(k);
            } else if let Some(e) = s.map.remove(&k) {
                s.bytes -= k.len() + e.value.len() + ENTRY_OVERHEAD;
            }
        }
    }

    /// Drops `key` before a write with sequence `seq` to it can be published.
    pub fn invalidate(&self, key: &[u8], seq: u64) {
        let mut s = self.shard(key).lock();
        s.max_write_seq = s.max_write_seq.max(seq);
        if let Some(e) = s.map.remove(key) {
            s.bytes -= key.len() + e.value.len() + ENTRY_OVERHEAD;
            if s.clock.len() > 2 * s.map.len() + 64 {
                let Shard { map, clock, .. } = &mut *s;
                clock.retain(|k| map.contains_key(k));
            }
        }
    }

    /// Bytes charged now.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_newer_than_the_read_blocks_the_insert() {
        let c = RowCache::new(1 << 20);
        c.invalidate(b"k", 10);
        c.insert(b"k", &Bytes::from_static(b"old"), 9);
        assert_eq!(c.get(b"k"), None);
        c.insert(b"k", &Bytes::from_static(b"new"), 10);
        assert_eq!(c.get(b"k"), Some(Bytes::from_static(b"new")));
        c.invalidate(b"k", 11);
        assert_eq!(c.get(b"k"), None);
    }

    #[test]
    fn memory_stays_bounded_and_hot_keys_stay() {
        let c = RowCache::new(64 * 64 * 1024);
        let v = Bytes::from(vec![1u8; 100]);
        for i in 0..100_000u32 {
            c.insert(&i.to_be_bytes(), &v, 0);
            // Key 7 is read all the time.
            if c.get(&7u32.to_be_bytes()).is_none() {
                c.insert(&7u32.to_be_bytes(), &v, 0);
            }
        }
        assert!(c.usage() <= 64 * 64 * 1024, "{}", c.usage());
        assert!(c.get(&7u32.to_be_bytes()).is_some());
    }

    #[test]
    fn large_values_are_not_cached() {
        let c = RowCache::new(64 * 1024);
        c.insert(b"big", &Bytes::from(vec![0u8; 2048]), 0);
        assert_eq!(c.get(b"big"), None);
    }
}
