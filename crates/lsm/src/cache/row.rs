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
//! Layout (why it is fast): a hit costs two cache misses, the 32-byte slot in the shard's
//! open-addressing table and one allocation holding the key, the value and the reference count
//! together (comparing the key, counting the reference and copying the value out all touch
//! it). The slot keeps the full hash, so a key is compared only when the hashes agree.
//! [`RowCache::prefetch`] issues both misses for a whole pipeline of reads before the first
//! lookup, so they overlap instead of following one another.
//!
//! Eviction is CLOCK per shard: entries get a second chance if read since the hand passed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_64;

use crate::cache::admission::Doorkeeper;
use crate::cache::slot_table::{Hashed, SlotTable};

const SHARDS: usize = 64;
/// Bookkeeping bytes charged per entry besides key and value: its slot (32 bytes, in a table
/// 3/8 to 3/4 full), the row's reference counts (16) and allocator header, and its CLOCK entry
/// (8).
const ENTRY_OVERHEAD: usize = 96;
/// Slots [`RowCache::evict_outside`] judges per hold of a shard's lock.
const EVICT_CHUNK: usize = 1024;
/// Keys `RowCache::prefetch` handles at once (the rest of a longer list is not prefetched).
pub const PREFETCH_MAX: usize = 64;

/// A cached row: `data` is the key followed by the value. Aligned so that a slot never
/// straddles two cache lines.
#[repr(align(32))]
struct Row {
    hash: u64,
    data: Arc<[u8]>,
    key_len: u32,
    referenced: bool,
}

impl Hashed for Row {
    fn hash(&self) -> u64 {
        self.hash
    }
}

/// `key` then `value` in one new allocation, copied once each.
fn concat(key: &[u8], value: &[u8]) -> Arc<[u8]> {
    let mut data = Arc::<[u8]>::new_uninit_slice(key.len() + value.len());
    let Some(buf) = Arc::get_mut(&mut data) else {
        unreachable!("a new Arc has no other owner")
    };
    let (head, tail) = buf.split_at_mut(key.len());
    // SAFETY: `MaybeUninit<u8>` and `u8` have the same layout, and each half is as long as
    // the slice copied into it.
    unsafe {
        std::ptr::copy_nonoverlapping(key.as_ptr(), head.as_mut_ptr().cast::<u8>(), key.len());
        std::ptr::copy_nonoverlapping(value.as_ptr(), tail.as_mut_ptr().cast::<u8>(), value.len());
    }
    // SAFETY: every byte was written above.
    unsafe { data.assume_init() }
}

impl Row {
    fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    fn charge(&self) -> usize {
        self.data.len() + ENTRY_OVERHEAD
    }
}

/// The value part of a cached row, shared with the cache: a hit copies no bytes and allocates
/// only `Bytes`' small owner header.
struct CachedValue {
    data: Arc<[u8]>,
    at: usize,
}

impl AsRef<[u8]> for CachedValue {
    fn as_ref(&self) -> &[u8] {
        &self.data[self.at..]
    }
}

struct Shard {
    table: SlotTable<Row>,
    /// CLOCK order, by hash. May hold hashes of rows already removed: the hand skips them.
    /// Should two cached keys share a hash, the hand may pick either, which only changes
    /// which row is evicted. Invariant: for every hash, at least as many entries here as rows.
    clock: VecDeque<u64>,
    bytes: usize,
    max_write_seq: u64,
    /// Lookups, counted under the lock the lookup takes anyway.
    hits: u64,
    misses: u64,
}

impl Shard {
    fn find(&self, hash: u64, key: &[u8]) -> Option<usize> {
        self.table.find(hash, |r| r.hash == hash && r.key() == key)
    }

    /// Adds a row known to be absent, unreferenced, charged `charge`.
    fn add(&mut self, hash: u64, key: &[u8], value: &[u8], charge: usize) {
        // An owned copy: a slice would pin the whole block it came from.
        self.table.insert_new(Row {
            hash,
            data: concat(key, value),
            key_len: key.len() as u32,
            referenced: false,
        });
        self.clock.push_back(hash);
        self.bytes += charge;
    }

    fn remove_at(&mut self, i: usize) {
        let row = self.table.remove_at(i);
        self.bytes -= row.charge();
    }
}

/// What [`RowCache::warm`] did with a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmed {
    /// Cached.
    Inserted,
    /// Not cached: already there, too large, or a newer write reached its shard.
    Skipped,
    /// Not cached: its shard has no free room.
    Full,
    /// Not cached: the warm epoch moved on (a focus change; the pass stops).
    Stale,
}

/// A sharded, bounded cache of key → value.
pub struct RowCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
    /// Bumped before [`RowCache::evict_outside`], so that a warm-up pass begun before cannot
    /// put back what the eviction removes (see [`RowCache::warm`]).
    warm_epoch: AtomicU64,
    /// Admits read misses to full shards (see [`RowCache::insert`]).
    doorkeeper: Doorkeeper,
}

/// Row size the doorkeeper's window is counted in: it remembers about as many misses as
/// the cache holds rows of this size (a short key and value with their overhead).
const ADMISSION_ROW_BYTES: usize = 160;

impl RowCache {
    /// A cache of about `capacity` bytes (keys, values and per-entry overhead).
    pub fn new(capacity: usize) -> RowCache {
        RowCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        table: SlotTable::with_capacity(16),
                        clock: VecDeque::new(),
                        bytes: 0,
                        max_write_seq: 0,
                        hits: 0,
                        misses: 0,
                    })
                })
                .collect(),
            shard_capacity: (capacity / SHARDS).max(1),
            warm_epoch: AtomicU64::new(0),
            doorkeeper: Doorkeeper::new(capacity / ADMISSION_ROW_BYTES),
        }
    }

    /// The key's hash and its shard's index. The shard comes from middle bits: the table's
    /// home slot comes from the low ones, which must still vary among one shard's keys.
    fn locate(key: &[u8]) -> (u64, usize) {
        let hash = xxh3_64(key);
        (hash, (hash >> 32) as usize % SHARDS)
    }

    /// The cached value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<Bytes> {
        let (hash, shard) = Self::locate(key);
        let mut s = self.shards[shard].lock();
        let Some(i) = s.find(hash, key) else {
            s.misses += 1;
            return None;
        };
        s.hits += 1;
        let row = s.table.get_mut(i)?;
        row.referenced = true;
        Some(Bytes::from_owner(CachedValue {
            data: Arc::clone(&row.data),
            at: row.key_len as usize,
        }))
    }

    /// Starts loading into the CPU cache what [`RowCache::get`] of each key will touch: first
    /// every key's home slot, then every row those slots point to. A hint only: it changes no
    /// state, and a key whose row moved or went meanwhile just misses the cache as usual.
    pub fn prefetch(&self, keys: &[&[u8]]) {
        let mut at = [(0u64, 0usize); PREFETCH_MAX];
        let keys = &keys[..keys.len().min(PREFETCH_MAX)];
        for (key, at) in keys.iter().zip(at.iter_mut()) {
            *at = Self::locate(key);
            let s = self.shards[at.1].lock();
            crate::prefetch::line(s.table.home_slot(at.0));
        }
        for &(hash, shard) in &at[..keys.len()] {
            let s = self.shards[shard].lock();
            // The first row with this hash: almost always the key's own.
            if let Some(i) = s.table.find(hash, |r| r.hash == hash) {
                if let Some(row) = s.table.get(i) {
                    let data: &[u8] = &row.data;
                    // The allocation's head (reference counts, key) and the value's start.
                    crate::prefetch::line(data.as_ptr());
                    crate::prefetch::line(data.as_ptr().wrapping_add(64));
                }
            }
        }
    }

    /// Caches `value` for `key`, read at published sequence `read_seq`, unless a write newer
    /// than the read was applied to the shard since (see the module invariants). Values above
    /// 1/64 of a shard's capacity are not cached. A full shard takes the row only when the
    /// key missed recently (`cache/admission.rs`), so reads spread over far more keys than
    /// it holds do not churn it.
    pub fn insert(&self, key: &[u8], value: &[u8], read_seq: u64) {
        let charge = key.len() + value.len() + ENTRY_OVERHEAD;
        if charge > self.shard_capacity / 64 {
            return;
        }
        let (hash, shard) = Self::locate(key);
        let mut s = self.shards[shard].lock();
        if s.max_write_seq > read_seq || s.find(hash, key).is_some() {
            return;
        }
        if s.bytes + charge > self.shard_capacity && !self.doorkeeper.seen_before(hash) {
            return;
        }
        s.add(hash, key, value, charge);
        while s.bytes > self.shard_capacity {
            let Some(h) = s.clock.pop_front() else {
                break;
            };
            let Some(i) = s.table.find(h, |r| r.hash == h) else {
                continue;
            };
            let Some(row) = s.table.get_mut(i) else {
                continue;
            };
            if row.referenced {
                row.referenced = false;
                s.clock.push_back(h);
            } else {
                s.remove_at(i);
            }
        }
    }

    /// Caches `value` for `key`, read at published sequence `read_seq`, as
    /// [`RowCache::insert`] does, but only into free room: it never evicts, so warming
    /// (`Db`'s row-cache warm-up) cannot push out a row that reads brought in. The row gets
    /// no second chance until a read references it.
    ///
    /// `epoch` is [`RowCache::warm_epoch`] when the pass began. A row is refused once the
    /// epoch moved on; one accepted before the move is in its shard before the eviction that
    /// follows the move locks that shard, so the eviction sees it.
    pub fn warm(&self, key: &[u8], value: &[u8], read_seq: u64, epoch: u64) -> Warmed {
        let charge = key.len() + value.len() + ENTRY_OVERHEAD;
        if charge > self.shard_capacity / 64 {
            return Warmed::Skipped;
        }
        let (hash, shard) = Self::locate(key);
        let mut s = self.shards[shard].lock();
        if self.warm_epoch.load(Ordering::Acquire) != epoch {
            return Warmed::Stale;
        }
        if s.max_write_seq > read_seq || s.find(hash, key).is_some() {
            return Warmed::Skipped;
        }
        if s.bytes + charge > self.shard_capacity {
            return Warmed::Full;
        }
        s.add(hash, key, value, charge);
        Warmed::Inserted
    }

    /// Whether more than `1/32` of the capacity is free (what makes a warm-up pass worth it).
    pub fn has_room(&self) -> bool {
        let capacity = self.capacity();
        self.usage() + capacity / 32 < capacity
    }

    /// Drops `key` before a write with sequence `seq` to it can be published.
    pub fn invalidate(&self, key: &[u8], seq: u64) {
        let (hash, shard) = Self::locate(key);
        let mut s = self.shards[shard].lock();
        s.max_write_seq = s.max_write_seq.max(seq);
        let Some(i) = s.find(hash, key) else {
            return;
        };
        s.remove_at(i);
        if s.clock.len() > 2 * s.table.len() + 64 {
            let Shard { table, clock, .. } = &mut *s;
            clock.retain(|&h| table.find(h, |r| r.hash == h).is_some());
        }
    }

    /// The current warm epoch (see [`RowCache::warm`]).
    pub fn warm_epoch(&self) -> u64 {
        self.warm_epoch.load(Ordering::Acquire)
    }

    /// Moves the warm epoch on: passes begun before insert nothing more. Call it before
    /// [`RowCache::evict_outside`].
    pub fn next_warm_epoch(&self) -> u64 {
        self.warm_epoch.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Removes the rows whose key is outside `ranges` (see [`in_ranges`]); returns the rows
    /// removed. Each shard is locked for [`EVICT_CHUNK`] slots at a time and the rows are
    /// freed after the lock is released: evicting all 1.23M rows of a full 256 MiB cache held
    /// each shard's lock about 5 ms in one hold, against at most 0.2 ms per chunk (release
    /// build), and a read or a writer's invalidation of a key in that shard waits for the
    /// hold. A read or write between two chunks may move a row across the boundary or grow
    /// the table, which can leave that row in place: it ages out through CLOCK.
    pub fn evict_outside(&self, ranges: &[KeyRange]) -> u64 {
        let mut rows = 0;
        let mut gone: Vec<Row> = Vec::new();
        for shard in self.shards.iter() {
            let mut at = 0;
            loop {
                let mut s = shard.lock();
                if at >= s.table.capacity() {
                    if s.clock.len() > 2 * s.table.len() + 64 {
                        let Shard { table, clock, .. } = &mut *s;
                        clock.retain(|&h| table.find(h, |r| r.hash == h).is_some());
                    }
                    break;
                }
                let mut freed = 0;
                s.table.retain_slots(
                    at..at + EVICT_CHUNK,
                    |r| in_ranges(ranges, r.key()),
                    |r| {
                        freed += r.charge();
                        gone.push(r);
                    },
                );
                s.bytes -= freed;
                drop(s);
                rows += gone.len() as u64;
                gone.clear();
                at += EVICT_CHUNK;
            }
        }
        rows
    }

    /// Lookups that found their key and lookups that did not, since creation.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |(h, m), s| {
            let s = s.lock();
            (h + s.hits, m + s.misses)
        })
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.shard_capacity * SHARDS
    }

    /// Bytes charged now.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().bytes).sum()
    }
}

/// Keys `[start, end)`.
pub type KeyRange = (Vec<u8>, Vec<u8>);

/// Whether `key` lies in one of `ranges`, sorted by start and disjoint.
pub(crate) fn in_ranges(ranges: &[KeyRange], key: &[u8]) -> bool {
    let i = ranges.partition_point(|(start, _)| start.as_slice() <= key);
    i > 0 && key < ranges[i - 1].1.as_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicting_outside_ranges_keeps_exactly_the_rows_inside() {
        let rc = RowCache::new(1 << 20);
        let key = |i: u32| format!("k{i:04}").into_bytes();
        for i in 0..1000 {
            rc.insert(&key(i), b"value", 0);
        }
        let full = rc.usage();
        let ranges = vec![(key(100), key(200)), (key(500), key(510))];
        assert_eq!(rc.evict_outside(&ranges), 890);
        for i in 0..1000 {
            let inside = (100..200).contains(&i) || (500..510).contains(&i);
            assert_eq!(rc.get(&key(i)).is_some(), inside, "key {i}");
        }
        assert_eq!(rc.usage(), full * 110 / 1000);
        // A pass begun before the move inserts nothing more.
        let epoch = rc.warm_epoch();
        assert_eq!(rc.warm(b"late", b"v", 0, epoch), Warmed::Inserted);
        let next = rc.next_warm_epoch();
        assert_eq!(rc.warm(b"later", b"v", 0, epoch), Warmed::Stale);
        assert_eq!(rc.warm(b"later", b"v", 0, next), Warmed::Inserted);
        assert_eq!(rc.evict_outside(&ranges), 2);
        // Rows go and come back as before.
        assert_eq!(rc.evict_outside(&[]), 110);
        assert_eq!(rc.usage(), 0);
        rc.insert(&key(7), b"value", 0);
        assert_eq!(&rc.get(&key(7)).unwrap()[..], b"value");
    }

    #[test]
    fn in_ranges_takes_starts_inclusive_and_ends_exclusive() {
        let r = vec![
            (b"b".to_vec(), b"d".to_vec()),
            (b"f".to_vec(), b"g".to_vec()),
        ];
        for (k, want) in [
            ("a", false),
            ("b", true),
            ("c", true),
            ("d", false),
            ("f", true),
            ("g", false),
        ] {
            assert_eq!(in_ranges(&r, k.as_bytes()), want, "{k}");
        }
        assert!(!in_ranges(&[], b"a"));
    }

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
    fn a_hit_is_the_value_alone_and_outlives_its_row() {
        let c = RowCache::new(1 << 20);
        c.insert(b"key", b"value", 0);
        let v = c.get(b"key").unwrap();
        c.invalidate(b"key", 1);
        assert_eq!(c.get(b"key"), None);
        assert_eq!(&v[..], b"value");
        assert_eq!(c.usage(), 0);
    }

    #[test]
    fn rewriting_one_key_keeps_the_clock_bounded() {
        let c = RowCache::new(1 << 20);
        for seq in 0..10_000u64 {
            c.insert(b"hot", &seq.to_le_bytes(), seq);
            assert_eq!(c.get(b"hot").as_deref(), Some(&seq.to_le_bytes()[..]));
            c.invalidate(b"hot", seq + 1);
        }
        let clock: usize = c.shards.iter().map(|s| s.lock().clock.len()).sum();
        assert!(clock <= 64 + 1, "{clock} clock entries for no row");
    }

    #[test]
    fn eviction_charges_back_every_byte() {
        let c = RowCache::new(64 * 4096);
        for i in 0..50_000u32 {
            c.insert(&i.to_be_bytes(), &[7u8; 40], 0);
            if i % 3 == 0 {
                c.invalidate(&(i / 2).to_be_bytes(), 0);
            }
        }
        let (bytes, rows): (usize, usize) = c.shards.iter().fold((0, 0), |(b, r), s| {
            let s = s.lock();
            (b + s.bytes, r + s.table.len())
        });
        assert_eq!(bytes, rows * (4 + 40 + ENTRY_OVERHEAD));
        assert!(bytes <= 64 * 4096);
    }

    #[test]
    fn a_slot_is_32_bytes_and_never_straddles_a_line() {
        assert_eq!(std::mem::size_of::<Option<Row>>(), 32);
        assert_eq!(std::mem::align_of::<Option<Row>>(), 32);
    }

    #[test]
    fn prefetch_changes_nothing() {
        let c = RowCache::new(1 << 20);
        c.insert(b"a", b"1", 0);
        let keys: Vec<Vec<u8>> = (0..100u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).chain([&b"a"[..]]).collect();
        c.prefetch(&refs);
        c.prefetch(&[]);
        assert_eq!(c.get(b"a").as_deref(), Some(&b"1"[..]));
        assert_eq!(c.get(&0u32.to_be_bytes()), None);
    }

    #[test]
    fn warming_fills_free_room_and_never_evicts() {
        let c = RowCache::new(4 << 20);
        // A row read (and referenced) before the warm-up.
        c.insert(b"hot", &[1u8; 40], 0);
        assert!(c.get(b"hot").is_some());
        let mut full = 0;
        for i in 0..40_000u32 {
            match c.warm(&i.to_be_bytes(), &[7u8; 40], 0, 0) {
                Warmed::Full => full += 1,
                Warmed::Inserted | Warmed::Skipped => {}
                Warmed::Stale => unreachable!("the epoch never moved"),
            }
        }
        assert!(full > 0, "the cache never filled");
        assert!(c.usage() <= 4 << 20);
        assert!(!c.has_room());
        assert!(
            c.get(b"hot").is_some(),
            "warming evicted a row reads brought in"
        );
        // A row already cached is left alone, and a newer write blocks the warm-up as it
        // blocks a read's insert.
        assert_eq!(c.warm(b"hot", &[2u8; 40], 0, 0), Warmed::Skipped);
        assert_eq!(c.get(b"hot").as_deref(), Some(&[1u8; 40][..]));
        let d = RowCache::new(1 << 20);
        d.invalidate(b"k", 10);
        assert_eq!(d.warm(b"k", b"old", 9, 0), Warmed::Skipped);
        assert_eq!(d.get(b"k"), None);
        assert_eq!(d.warm(b"k", b"new", 10, 0), Warmed::Inserted);
        assert_eq!(d.get(b"k").as_deref(), Some(&b"new"[..]));
        assert!(d.has_room());
    }

    #[test]
    fn warmed_rows_are_evicted_before_read_ones() {
        let c = RowCache::new(4 << 20);
        for i in 0..40_000u32 {
            c.warm(&i.to_be_bytes(), &[7u8; 40], 0, 0);
        }
        // Reads of new keys now evict (each admitted on its second miss): unreferenced
        // warmed rows go first.
        c.insert(b"read", &[1u8; 40], 0);
        c.insert(b"read", &[1u8; 40], 0);
        assert!(c.get(b"read").is_some());
        for i in 40_000..80_000u32 {
            c.insert(&i.to_be_bytes(), &[7u8; 40], 0);
            c.insert(&i.to_be_bytes(), &[7u8; 40], 0);
            assert!(
                c.get(b"read").is_some(),
                "a referenced row went before warmed ones"
            );
        }
    }

    #[test]
    fn a_full_cache_admits_a_key_on_its_second_miss() {
        let c = RowCache::new(4 << 20);
        // Twice the capacity, each key missed twice: every shard is full.
        let n = 2 * (4 << 20) / (40 + 4 + ENTRY_OVERHEAD) as u32;
        for i in 0..n {
            c.insert(&i.to_be_bytes(), &[7u8; 40], 0);
            c.insert(&i.to_be_bytes(), &[7u8; 40], 0);
        }
        // A key read again gets in.
        c.insert(b"again", &[1u8; 40], 0);
        c.insert(b"again", &[1u8; 40], 0);
        assert!(c.get(b"again").is_some());
        let cached: Vec<u32> = (0..n)
            .filter(|k| c.get(&k.to_be_bytes()).is_some())
            .collect();
        // One-off reads of other keys leave the cache as it is.
        for j in 1_000_000..1_010_000u32 {
            c.insert(&j.to_be_bytes(), &[7u8; 40], 0);
        }
        let kept = cached
            .iter()
            .filter(|k| c.get(&k.to_be_bytes()).is_some())
            .count();
        assert!(
            kept as f64 > 0.95 * cached.len() as f64,
            "{kept} of {} rows kept",
            cached.len()
        );
    }

    #[test]
    fn large_values_are_not_cached() {
        let c = RowCache::new(64 * 1024);
        c.insert(b"big", &Bytes::from(vec![0u8; 2048]), 0);
        assert_eq!(c.get(b"big"), None);
    }
}
