//! The block cache: one byte-bounded CLOCK cache of uncompressed data blocks shared by every
//! table of every database in the process ([`BlockCache::global`] by default), so the process
//! has a single memory budget for cached blocks however many databases it opens.
//!
//! Design:
//! - Sharded by a hash of the key into up to 64 shards (each at least 512 KiB of capacity),
//!   each a `parking_lot::Mutex` over its table, so concurrent readers rarely contend.
//! - Each shard is an open-addressing table ([`crate::cache::slot_table`]) whose 64-byte
//!   slots hold the key, the block and its CLOCK bit inline, aligned to a cache line. A hit
//!   reads one slot and writes the bit in the same line: one cache miss. (The LRU it
//!   replaced, a hash map to a slab of list nodes, took five: the map's control bytes and
//!   bucket, the node, and the two neighbours its relinking rewrote. Block-cache hits were
//!   14% of a cold GET on the server's connection thread.)
//! - Eviction is CLOCK: a hand sweeps the slots, clearing the bit of a block read since it
//!   last passed and evicting the first block whose bit is clear. A block is inserted with
//!   its bit set: its slot lies anywhere relative to the hand, and the bit gives it a full
//!   turn of the hand, as inserting behind the hand does in a classic CLOCK.
//! - An entry's charge is its block's bytes plus a fixed overhead ([`Block::charge`]). A
//!   shard evicts until its usage fits its capacity; a block larger than a whole shard is
//!   not cached at all (the caller keeps its copy).
//! - Keys are `(cache_id, offset)`. Each table reader takes a fresh id from
//!   [`BlockCache::new_cache_id`], so two databases, or a file reopened under the same
//!   number, never see each other's blocks.
//!
//! Counters (hits, misses, usage) live in each shard, next to the lock already taken, so a
//! lookup does not bounce a process-wide counter between cores.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::admission::Doorkeeper;
use crate::cache::slot_table::{Hashed, SlotTable};
use crate::sstable::Block;

/// Default capacity of the process-wide cache: 64 MiB.
pub const DEFAULT_GLOBAL_CAPACITY: usize = 64 << 20;
const MAX_SHARD_BITS: u32 = 6;
/// Block size the doorkeeper's window is counted in: it remembers about as many misses as
/// the cache holds blocks of this size.
const ADMISSION_BLOCK_BYTES: usize = 4096;
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

/// The top bit of a stored cache id: the block was read since the hand last passed.
/// Cache ids come from a counter and never reach it.
const REFERENCED: u64 = 1 << 63;

/// A cached block with its key, filling one cache line (see the module docs).
#[repr(align(64))]
struct Entry {
    /// `cache_id`, with [`REFERENCED`] or'ed in.
    id: u64,
    offset: u64,
    block: Block,
}

impl Entry {
    fn key(&self) -> CacheKey {
        CacheKey::new(self.id & !REFERENCED, self.offset)
    }

    fn is(&self, key: &CacheKey) -> bool {
        self.offset == key.offset && self.id & !REFERENCED == key.cache_id
    }
}

impl Hashed for Entry {
    fn hash(&self) -> u64 {
        self.key().hash64()
    }
}

/// One shard: its table and CLOCK hand.
struct Clock {
    table: SlotTable<Entry>,
    /// The slot the hand points at (taken modulo the table's size, which may have grown).
    hand: usize,
    usage: usize,
    capacity: usize,
}

impl Clock {
    fn new(capacity: usize) -> Self {
        Clock {
            table: SlotTable::with_capacity(16),
            hand: 0,
            usage: 0,
            capacity,
        }
    }

    /// The slot of `key`, whose hash is `hash`.
    fn find(&self, hash: u64, key: &CacheKey) -> Option<usize> {
        self.table.find(hash, |e| e.is(key))
    }

    fn get(&mut self, hash: u64, key: &CacheKey) -> Option<Block> {
        let i = self.find(hash, key)?;
        let e = self.table.get_mut(i)?;
        e.id |= REFERENCED;
        // Before the clone, whose reference count is a miss of its own. Point lookups and
        // seeks read these lines first; a scan from the block's start does not need them,
        // and pays three prefetch instructions for it.
        e.block.prefetch_for_seek();
        Some(e.block.clone())
    }

    fn remove_slot(&mut self, i: usize) {
        let e = self.table.remove_at(i);
        self.usage -= e.block.charge();
    }

    /// Evicts until usage is at most `limit`. Terminates: each full turn of the hand either
    /// evicts or clears every bit, after which the next turn evicts.
    fn evict_to(&mut self, limit: usize) {
        while self.usage > limit && self.table.len() > 0 {
            let i = self.hand & (self.table.capacity() - 1);
            match self.table.get_mut(i) {
                Some(e) if e.id & REFERENCED != 0 => {
                    e.id &= !REFERENCED;
                    self.hand = i + 1;
                }
                // The hand stays: removal may shift the next entry into this slot.
                Some(_) => self.remove_slot(i),
                None => self.hand = i + 1,
            }
        }
    }

    fn insert(&mut self, hash: u64, key: CacheKey, block: Block) {
        debug_assert!(key.cache_id & REFERENCED == 0);
        // A replaced block goes first, so that making room cannot evict its successor.
        if let Some(i) = self.find(hash, &key) {
            self.remove_slot(i);
        }
        let charge = block.charge();
        if charge > self.capacity {
            // Would flush the whole shard and still not fit.
            return;
        }
        self.evict_to(self.capacity - charge);
        self.table.insert_new(Entry {
            id: key.cache_id | REFERENCED,
            offset: key.offset,
            block,
        });
        self.usage += charge;
    }

    fn erase_if(&mut self, mut pred: impl FnMut(&CacheKey) -> bool) {
        let doomed: Vec<CacheKey> = self
            .table
            .iter()
            .map(Entry::key)
            .filter(|k| pred(k))
            .collect();
        for key in doomed {
            if let Some(i) = self.find(key.hash64(), &key) {
                self.remove_slot(i);
            }
        }
    }
}

/// A shard on its own cache lines, with its counters beside its lock.
#[repr(align(128))]
struct Shard {
    clock: Mutex<Clock>,
    hits: AtomicU64,
    misses: AtomicU64,
    usage: AtomicUsize,
}

/// A sharded, byte-bounded CLOCK cache of uncompressed blocks. See the module docs.
pub struct BlockCache {
    shards: Box<[Shard]>,
    shard_bits: u32,
    capacity: AtomicUsize,
    /// Admits read misses to full shards ([`BlockCache::insert_missed`]).
    doorkeeper: Doorkeeper,
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
                clock: Mutex::new(Clock::new(shard_capacity(capacity_bytes, n, i))),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
                usage: AtomicUsize::new(0),
            })
            .collect();
        Arc::new(BlockCache {
            shards,
            shard_bits,
            capacity: AtomicUsize::new(capacity_bytes),
            doorkeeper: Doorkeeper::new(capacity_bytes / ADMISSION_BLOCK_BYTES),
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

    /// The key's hash and its shard: the shard from the top bits, the slot in the shard's
    /// table from the low ones.
    #[inline]
    fn shard(&self, key: CacheKey) -> (u64, &Shard) {
        let hash = key.hash64();
        let i = if self.shard_bits == 0 {
            0
        } else {
            (hash >> (64 - self.shard_bits)) as usize
        };
        (hash, &self.shards[i])
    }

    /// The cached block for `key`, marking it read.
    pub fn get(&self, key: impl Into<CacheKey>) -> Option<Block> {
        let key = key.into();
        let (hash, shard) = self.shard(key);
        let found = shard.clock.lock().get(hash, &key);
        let counter = if found.is_some() {
            &shard.hits
        } else {
            &shard.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `block` under `key` (replacing any previous block), evicting blocks of its
    /// shard as needed. A block larger than a shard's capacity is not cached.
    pub fn insert(&self, key: impl Into<CacheKey>, block: Block) {
        let key = key.into();
        let (hash, shard) = self.shard(key);
        let mut clock = shard.clock.lock();
        clock.insert(hash, key, block);
        shard.usage.store(clock.usage, Ordering::Relaxed);
    }

    /// Caches `block`, which a lookup of `key` missed and then read, if its shard has room
    /// for it or the same key missed recently (see `cache/admission.rs`): a full cache
    /// trades a cached block for a block read once only when it is likely to be read again.
    pub fn insert_missed(&self, key: impl Into<CacheKey>, block: Block) {
        let key = key.into();
        let (hash, shard) = self.shard(key);
        let mut clock = shard.clock.lock();
        if clock.usage + block.charge() > clock.capacity && !self.doorkeeper.seen_before(hash) {
            return;
        }
        clock.insert(hash, key, block);
        shard.usage.store(clock.usage, Ordering::Relaxed);
    }

    /// Caches `block`, which a lookup of `key` missed and then read, only if the same key
    /// missed recently: see [`BlockFill::SecondMiss`](crate::sstable::BlockFill).
    pub fn insert_on_second_miss(&self, key: impl Into<CacheKey>, block: Block) {
        let key = key.into();
        let (hash, shard) = self.shard(key);
        if !self.doorkeeper.seen_before(hash) {
            return;
        }
        let mut clock = shard.clock.lock();
        clock.insert(hash, key, block);
        shard.usage.store(clock.usage, Ordering::Relaxed);
    }

    /// Drops every block of `cache_id`. Scans the whole cache (O(entries)): meant for when a
    /// table file is deleted, not for every table close; unused blocks age out anyway.
    pub fn erase_file(&self, cache_id: u64) {
        for shard in self.shards.iter() {
            let mut clock = shard.clock.lock();
            clock.erase_if(|k| k.cache_id == cache_id);
            shard.usage.store(clock.usage, Ordering::Relaxed);
        }
    }

    /// Changes the capacity, evicting as needed.
    pub fn set_capacity(&self, bytes: usize) {
        self.capacity.store(bytes, Ordering::Relaxed);
        let n = self.shards.len();
        for (i, shard) in self.shards.iter().enumerate() {
            let mut clock = shard.clock.lock();
            clock.capacity = shard_capacity(bytes, n, i);
            let cap = clock.capacity;
            clock.evict_to(cap);
            shard.usage.store(clock.usage, Ordering::Relaxed);
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
        self.shards.iter().map(|s| s.clock.lock().table.len()).sum()
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
    fn a_full_cache_takes_a_missed_block_on_its_second_miss() {
        let charge = 1000 + BLOCK_CHARGE_OVERHEAD;
        let c = BlockCache::new(charge * 3);
        let id = BlockCache::new_cache_id();
        let k = |o| CacheKey::new(id, o);
        // Room: taken at once.
        for o in 0..3 {
            c.insert_missed(k(o), block_of(1000));
        }
        assert_eq!(c.len(), 3);
        // Full: a block missed once is not taken, one missed again is.
        c.insert_missed(k(10), block_of(1000));
        assert!(c.get(k(10)).is_none());
        assert_eq!(c.len(), 3);
        c.insert_missed(k(10), block_of(1000));
        assert!(c.get(k(10)).is_some());
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn a_slot_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 64);
        assert_eq!(std::mem::align_of::<Option<Entry>>(), 64);
    }

    #[test]
    fn evicts_an_unread_block_before_a_read_one_by_bytes() {
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
        // A fourth block evicts one of the three; the hand's turn clears the others' bits.
        c.insert(k(3), block_of(1000));
        assert_eq!(c.len(), 3);
        let left: Vec<u64> = c.shards[0]
            .clock
            .lock()
            .table
            .iter()
            .map(|e| e.offset)
            .filter(|&o| o < 3)
            .collect();
        assert_eq!(left.len(), 2);
        // Read one survivor: the next eviction takes the other, the only block unread since
        // the hand passed (block 3 was inserted with its bit set).
        let (read, unread) = (left[0], left[1]);
        assert!(c.get(k(read)).is_some());
        c.insert(k(4), block_of(1000));
        assert!(c.get(k(unread)).is_none());
        assert!(c.get(k(read)).is_some());
        assert!(c.get(k(3)).is_some());
        assert!(c.get(k(4)).is_some());
        assert!(c.usage() <= c.capacity());
        // One block of double size evicts two.
        c.insert(k(5), block_of(2000));
        assert!(c.usage() <= c.capacity());
        assert!(c.get(k(5)).is_some());
        assert_eq!(c.len(), 2);
        // Too large for the shard: not cached, nothing evicted.
        c.insert(k(6), block_of(10_000));
        assert!(c.get(k(6)).is_none());
        assert_eq!(c.len(), 2);
        // Shrinking evicts.
        c.set_capacity(charge);
        assert!(c.usage() <= charge);
        c.set_capacity(0);
        assert_eq!(c.usage(), 0);
        assert!(c.is_empty());
    }

    #[test]
    fn a_block_read_all_the_time_stays() {
        let c = BlockCache::new(64 * (64 + BLOCK_CHARGE_OVERHEAD));
        let id = BlockCache::new_cache_id();
        let hot = CacheKey::new(id, u64::MAX >> 1);
        c.insert(hot, block_of(64));
        for o in 0..100_000 {
            c.insert(CacheKey::new(id, o), block_of(64));
            assert!(c.get(hot).is_some(), "evicted after {o} inserts");
        }
        assert!(c.usage() <= c.capacity());
    }

    proptest::proptest! {
        /// Random inserts, reads, file erasures and resizes of one shard against a map of
        /// what was last inserted: a hit is always the latest block of its key, a block is
        /// there right after its insert, and usage is the sum of the cached charges, within
        /// capacity.
        #[test]
        fn the_cache_never_serves_a_wrong_block(ops in proptest::collection::vec(
            (0u8..4, 0u64..2, 0u64..24, 1usize..40), 1..300)
        ) {
            let c = BlockCache::new(8 * (400 + BLOCK_CHARGE_OVERHEAD));
            proptest::prop_assert_eq!(c.shards.len(), 1);
            let ids = [BlockCache::new_cache_id(), BlockCache::new_cache_id()];
            let mut last = std::collections::HashMap::new();
            for (op, file, offset, words) in ops {
                let key = CacheKey::new(ids[file as usize], offset);
                match op {
                    0 | 1 => {
                        let len = words * 4 * (1 + usize::from(op));
                        c.insert(key, block_of(len));
                        last.insert(key, len);
                        let fits = len + BLOCK_CHARGE_OVERHEAD <= c.capacity();
                        proptest::prop_assert_eq!(c.get(key).is_some(), fits);
                    }
                    2 => {
                        if let Some(b) = c.get(key) {
                            proptest::prop_assert_eq!(Some(&b.len()), last.get(&key));
                        }
                    }
                    _ if words % 8 == 0 => c.set_capacity(words * 100),
                    _ => c.erase_file(ids[file as usize]),
                }
                let clock = c.shards[0].clock.lock();
                let charged: usize = clock.table.iter().map(|e| e.block.charge()).sum();
                proptest::prop_assert_eq!(charged, clock.usage);
                proptest::prop_assert!(clock.usage <= clock.capacity);
                for e in clock.table.iter() {
                    proptest::prop_assert_eq!(Some(&e.block.len()), last.get(&e.key()));
                }
            }
        }
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
        assert!(c.shards[0].clock.lock().table.capacity() <= 16);
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
        let counted: usize = c.shards.iter().map(|s| s.clock.lock().usage).sum();
        assert_eq!(counted, c.usage());
    }
}
