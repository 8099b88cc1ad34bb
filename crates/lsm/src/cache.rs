//! The block cache: one byte-bounded LRU of uncompressed data blocks shared by every table of
//! every database in the process ([`BlockCache::global`] by default), so the process has a
//! single memory budget for cached blocks however many databases it opens.
//!
//! Design:
//! - Sharded by a hash of the key into up to 64 shards (each at least 512 KiB of capacity),
//!   each a `parking_lot::Mutex` over an LRU, so concurrent readers rarely contend.
//! - Each shard is an intrusive doubly-linked list threaded through a slab (`Vec`) of
//!   entries by index, plus a hash map from key to slot: lookup, promotion, insertion and
//!   eviction are O(1) and allocation-free once the slab has grown.
//! - An entry's charge is its block's bytes plus a fixed overhead ([`Block::charge`]). A
//!   shard evicts from the cold end until its usage fits its capacity; a block larger than
//!   a whole shard is not cached at all (the caller keeps its copy).
//! - Keys are `(cache_id, offset)`. Each table reader takes a fresh id from
//!   [`BlockCache::new_cache_id`], so two databases, or a file reopened under the same
//!   number, never see each other's blocks.
//!
//! Counters (hits, misses, usage) live in each shard, next to the lock already taken, so a
//! lookup does not bounce a process-wide counter between cores.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::sstable::Block;

/// Default capacity of the process-wide cache: 64 MiB.
pub const DEFAULT_GLOBAL_CAPACITY: usize = 64 << 20;
const MAX_SHARD_BITS: u32 = 6;
const MIN_SHARD_CAPACITY: usize = 512 << 10;

/// Identifies a cached block: the reader's cache id and the block's offset in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// From [`BlockCache::new_cache_id`], unique per opened table.
    pub cache_id: u64,
    /// Offset of the block in the table file.
    pub offset: u64,
}

impl From<(u64, u64)> for CacheKey {
    fn from((cache_id, offset): (u64, u64)) -> Self {
        CacheKey { cache_id, offset }
    }
}

impl CacheKey {
    /// A key.
    pub const fn new(cache_id: u64, offset: u64) -> Self {
        CacheKey { cache_id, offset }
    }

    #[inline]
    fn hash64(self) -> u64 {
        let x = (self.cache_id ^ self.offset.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let m = u128::from(x) * u128::from(0xd6e8_feb8_6659_fd93u64 ^ self.offset);
        (m as u64) ^ ((m >> 64) as u64)
    }
}

/// A hasher for [`CacheKey`]s: keys are not attacker-chosen, so a multiply-mix replaces
/// SipHash on the hot path.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let m = u128::from(self.0 ^ x) * 0x9e37_79b9_7f4a_7c15u128;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
}

const NIL: u32 = u32::MAX;

struct Entry {
    key: CacheKey,
    block: Option<Block>,
    charge: usize,
    prev: u32,
    next: u32,
}

/// One shard: an LRU list through `slots`; `head` is the most recently used.
struct Lru {
    map: HashMap<CacheKey, u32, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Entry>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    usage: usize,
    capacity: usize,
}

impl Lru {
    fn new(capacity: usize) -> Self {
        Lru {
            map: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            usage: 0,
            capacity,
        }
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = {
            let e = &self.slots[i as usize];
            (e.prev, e.next)
        };
        match prev {
            NIL => self.head = next,
            p => self.slots[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.slots[n as usize].prev = prev,
        }
    }

    fn push_front(&mut self, i: u32) {
        let old = self.head;
        {
            let e = &mut self.slots[i as usize];
            e.prev = NIL;
            e.next = old;
        }
        match old {
            NIL => self.tail = i,
            h => self.slots[h as usize].prev = i,
        }
        self.head = i;
    }

    fn get(&mut self, key: &CacheKey) -> Option<Block> {
        let i = *self.map.get(key)?;
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
        let block = self.slots[i as usize].block.as_ref()?;
        // Before the clone, whose reference count is a miss of its own. Point lookups and
        // seeks read these lines first; a scan from the block's start does not need them,
        // and pays three prefetch instructions for it.
        block.prefetch_for_seek();
        Some(block.clone())
    }

    fn remove_slot(&mut self, i: u32) {
        self.unlink(i);
        let e = &mut self.slots[i as usize];
        e.block = None;
        self.usage -= e.charge;
        e.charge = 0;
        let key = e.key;
        self.map.remove(&key);
        self.free.push(i);
    }

    fn evict_to(&mut self, limit: usize) {
        while self.usage > limit && self.tail != NIL {
            self.remove_slot(self.tail);
        }
    }

    fn insert(&mut self, key: CacheKey, block: Block) {
        let charge = block.charge();
        if charge > self.capacity {
            // Would flush the whole shard and still not fit.
            if let Some(&i) = self.map.get(&key) {
                self.remove_slot(i);
            }
            return;
        }
        if let Some(&i) = self.map.get(&key) {
            let e = &mut self.slots[i as usize];
            self.usage = self.usage - e.charge + charge;
            e.charge = charge;
            e.block = Some(block);
            if self.head != i {
                self.unlink(i);
                self.push_front(i);
            }
        } else {
            self.evict_to(self.capacity - charge);
            let entry = Entry {
                key,
                block: Some(block),
                charge,
                prev: NIL,
                next: NIL,
            };
            let i = match self.free.pop() {
                Some(i) => {
                    self.slots[i as usize] = entry;
                    i
                }
                None => {
                    self.slots.push(entry);
                    (self.slots.len() - 1) as u32
                }
            };
            self.map.insert(key, i);
            self.usage += charge;
            self.push_front(i);
        }
        self.evict_to(self.capacity);
    }

    fn erase_if(&mut self, mut pred: impl FnMut(&CacheKey) -> bool) {
        let doomed: Vec<u32> = self
            .map
            .iter()
            .filter(|(k, _)| pred(k))
            .map(|(_, &i)| i)
            .collect();
        for i in doomed {
            self.remove_slot(i);
        }
    }
}

/// A shard on its own cache lines, with its counters beside its lock.
#[repr(align(128))]
struct Shard {
    lru: Mutex<Lru>,
    hits: AtomicU64,
    misses: AtomicU64,
    usage: AtomicUsize,
}

/// A sharded, byte-bounded LRU cache of uncompressed blocks. See the module docs.
pub struct BlockCache {
    shards: Box<[Shard]>,
    shard_bits: u32,
    capacity: AtomicUsize,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .field("shards", &self.shards.len())
            .finish()
    }
}

static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);
static GLOBAL: Mutex<Option<Arc<BlockCache>>> = Mutex::new(None);
static GLOBAL_CAPACITY: AtomicUsize = AtomicUsize::new(DEFAULT_GLOBAL_CAPACITY);

impl BlockCache {
    /// A cache holding up to `capacity_bytes` of charged blocks. The number of shards is
    /// the largest power of two up to 64 that leaves each shard at least 512 KiB.
    pub fn new(capacity_bytes: usize) -> Arc<BlockCache> {
        let mut shard_bits = 0;
        while shard_bits < MAX_SHARD_BITS
            && (capacity_bytes >> (shard_bits + 1)) >= MIN_SHARD_CAPACITY
        {
            shard_bits += 1;
        }
        let n = 1usize << shard_bits;
        let shards = (0..n)
            .map(|i| Shard {
                lru: Mutex::new(Lru::new(shard_capacity(capacity_bytes, n, i))),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
                usage: AtomicUsize::new(0),
            })
            .collect();
        Arc::new(BlockCache {
            shards,
            shard_bits,
            capacity: AtomicUsize::new(capacity_bytes),
        })
    }

    /// The process-wide cache, created on first use with the capacity last given to
    /// [`set_global_capacity`](Self::set_global_capacity) (default 64 MiB).
    pub fn global() -> Arc<BlockCache> {
        let mut g = GLOBAL.lock();
        g.get_or_insert_with(|| BlockCache::new(GLOBAL_CAPACITY.load(Ordering::Relaxed)))
            .clone()
    }

    /// Sets the capacity of the process-wide cache: before its first use it is created
    /// with this capacity; afterwards it is resized (evicting as needed; the shard count
    /// chosen at creation stays).
    pub fn set_global_capacity(bytes: usize) {
        let g = GLOBAL.lock();
        GLOBAL_CAPACITY.store(bytes, Ordering::Relaxed);
        if let Some(c) = g.as_ref() {
            c.set_capacity(bytes);
        }
    }

    /// A process-wide unique id for a table reader's keys.
    pub fn new_cache_id() -> u64 {
        NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed)
    }

    #[inline]
    fn shard(&self, key: CacheKey) -> &Shard {
        let i = if self.shard_bits == 0 {
            0
        } else {
            (key.hash64() >> (64 - self.shard_bits)) as usize
        };
        &self.shards[i]
    }

    /// The cached block for `key`, marking it most recently used.
    pub fn get(&self, key: impl Into<CacheKey>) -> Option<Block> {
        let key = key.into();
        let shard = self.shard(key);
        let found = shard.lru.lock().get(&key);
        let counter = if found.is_some() {
            &shard.hits
        } else {
            &shard.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `block` under `key` (replacing any previous block), evicting the least
    /// recently used blocks of its shard as needed. A block larger than a shard's capacity
    /// is not cached.
    pub fn insert(&self, key: impl Into<CacheKey>, block: Block) {
        let key = key.into();
        let shard = self.shard(key);
        let mut lru = shard.lru.lock();
        lru.insert(key, block);
        shard.usage.store(lru.usage, Ordering::Relaxed);
    }

    /// Drops every block of `cache_id`. Scans the whole cache (O(entries)): meant for when a
    /// table file is deleted, not for every table close; unused blocks age out anyway.
    pub fn erase_file(&self, cache_id: u64) {
        for shard in self.shards.iter() {
            let mut lru = shard.lru.lock();
            lru.erase_if(|k| k.cache_id == cache_id);
            shard.usage.store(lru.usage, Ordering::Relaxed);
        }
    }

    /// Changes the capacity, evicting as needed.
    pub fn set_capacity(&self, bytes: usize) {
        self.capacity.store(bytes, Ordering::Relaxed);
        let n = self.shards.len();
        for (i, shard) in self.shards.iter().enumerate() {
            let mut lru = shard.lru.lock();
            lru.capacity = shard_capacity(bytes, n, i);
            let cap = lru.capacity;
            lru.evict_to(cap);
            shard.usage.store(lru.usage, Ordering::Relaxed);
        }
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.hits.load(Ordering::Relaxed))
            .sum()
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.misses.load(Ordering::Relaxed))
            .sum()
    }

    /// Bytes charged by cached blocks.
    pub fn usage(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.usage.load(Ordering::Relaxed))
            .sum()
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Number of cached blocks.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lru.lock().map.len()).sum()
    }

    /// True if no block is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Capacity of shard `i` of `n`: an even split, the remainder to the first shards.
fn shard_capacity(total: usize, n: usize, i: usize) -> usize {
    total / n + usize::from(i < total % n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::block::BLOCK_CHARGE_OVERHEAD;
    use bytes::Bytes;

    /// A valid block of `len` bytes (a multiple of 4): no entries, all restart array.
    fn block_of(len: usize) -> Block {
        assert!(len >= 4 && len & 3 == 0);
        let mut v = vec![0u8; len];
        v[len - 4..].copy_from_slice(&((len / 4 - 1) as u32).to_le_bytes());
        Block::new(Bytes::from(v)).expect("valid block")
    }

    #[test]
    fn hit_miss_and_replace() {
        let c = BlockCache::new(1 << 20);
        let k = CacheKey::new(BlockCache::new_cache_id(), 0);
        assert!(c.get(k).is_none());
        c.insert(k, block_of(100));
        assert_eq!(c.get(k).map(|b| b.len()), Some(100));
        assert_eq!((c.hits(), c.misses()), (1, 1));
        assert_eq!(c.usage(), 100 + BLOCK_CHARGE_OVERHEAD);
        c.insert(k, block_of(200));
        assert_eq!(c.usage(), 200 + BLOCK_CHARGE_OVERHEAD);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn evicts_least_recently_used_by_bytes() {
        // Small capacity: a single shard.
        let charge = 1000 + BLOCK_CHARGE_OVERHEAD;
        let c = BlockCache::new(charge * 3);
        assert_eq!(c.shards.len(), 1);
        let id = BlockCache::new_cache_id();
        let k = |o| CacheKey::new(id, o);
        for o in 0..3 {
            c.insert(k(o), block_of(1000));
        }
        assert_eq!(c.len(), 3);
        assert!(c.get(k(0)).is_some()); // 0 becomes most recent; 1 is now coldest
        c.insert(k(3), block_of(1000));
        assert!(c.get(k(1)).is_none());
        assert!(c.get(k(0)).is_some());
        assert!(c.get(k(2)).is_some());
        assert!(c.get(k(3)).is_some());
        assert!(c.usage() <= c.capacity());
        // One block of double size evicts two.
        c.insert(k(4), block_of(2000));
        assert!(c.usage() <= c.capacity());
        assert!(c.get(k(4)).is_some());
        assert_eq!(c.len(), 2);
        // Too large for the shard: not cached, nothing evicted.
        c.insert(k(5), block_of(10_000));
        assert!(c.get(k(5)).is_none());
        assert_eq!(c.len(), 2);
        // Shrinking evicts.
        c.set_capacity(charge);
        assert!(c.usage() <= charge);
        c.set_capacity(0);
        assert_eq!(c.usage(), 0);
        assert!(c.is_empty());
    }

    #[test]
    fn ids_are_unique_and_erase_file_works() {
        let c = BlockCache::new(8 << 20);
        assert_eq!(c.shards.len(), 16);
        let (a, b) = (BlockCache::new_cache_id(), BlockCache::new_cache_id());
        assert_ne!(a, b);
        for o in 0..100 {
            c.insert(CacheKey::new(a, o * 4096), block_of(64));
            c.insert(CacheKey::new(b, o * 4096), block_of(64));
        }
        assert_eq!(c.len(), 200);
        c.erase_file(a);
        assert_eq!(c.len(), 100);
        assert!(c.get(CacheKey::new(a, 0)).is_none());
        assert!(c.get(CacheKey::new(b, 0)).is_some());
        assert_eq!(c.usage(), 100 * (64 + BLOCK_CHARGE_OVERHEAD));
    }

    #[test]
    fn slots_are_reused() {
        let c = BlockCache::new(10 * (64 + BLOCK_CHARGE_OVERHEAD));
        let id = BlockCache::new_cache_id();
        for o in 0..10_000 {
            c.insert(CacheKey::new(id, o), block_of(64));
        }
        assert_eq!(c.len(), 10);
        assert!(c.shards[0].lru.lock().slots.len() <= 11);
    }

    #[test]
    fn global_is_shared_and_resizable() {
        let a = BlockCache::global();
        let b = BlockCache::global();
        assert!(Arc::ptr_eq(&a, &b));
        let before = a.capacity();
        BlockCache::set_global_capacity(before + 4096);
        assert_eq!(b.capacity(), before + 4096);
        BlockCache::set_global_capacity(before);
    }

    #[test]
    fn concurrent_smoke() {
        let c = BlockCache::new(2 << 20);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    let id = 1_000_000 + t % 2;
                    for i in 0..20_000u64 {
                        let k = CacheKey::new(id, (i * 7919) % 3000);
                        match c.get(k) {
                            Some(b) => assert_eq!(b.len(), 1024),
                            None => c.insert(k, block_of(1024)),
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread panicked");
        }
        assert!(c.usage() <= c.capacity());
        assert_eq!(c.hits() + c.misses(), 80_000);
        let counted: usize = c.shards.iter().map(|s| s.lru.lock().usage).sum();
        assert_eq!(counted, c.usage());
    }
}
