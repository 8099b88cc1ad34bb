//! The memtable: recent writes, in internal-key order, in an arena-backed skiplist.
//!
//! One writer at a time (the commit path's leader inserts whole batch groups) and lock-free
//! readers. A memtable is frozen (made immutable) when it reaches the write buffer size and is
//! then flushed to a level-0 table by a background thread; it stays readable until the table is
//! installed in a version.

mod skiplist;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use rialto_engine::{BatchOp, Result, WriteBatch};

use crate::iter::InternalIterator;
use crate::key::{self, SequenceNumber, ValueKind, KIND_SEEK};
pub use skiplist::SkipList;

/// Result of a point lookup in one source (memtable or table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible version is a value.
    Found(Bytes),
    /// The newest visible version is a tombstone: stop looking in older sources.
    Deleted,
    /// This source holds no visible version of the key.
    Absent,
}

/// Entry size the point-lookup index is sized for: one bucket per this many bytes of write
/// buffer (a node of a 20-byte key and a short value takes about 80 bytes), so chains stay
/// about one long. The buckets cost 8 bytes each, 6% of the buffer.
pub const INDEXED_ENTRY_BYTES: usize = 128;

/// A memtable. Shared as `Arc<MemTable>` by the write path, readers and iterators.
pub struct MemTable {
    list: SkipList,
    /// Serializes inserts; the skiplist requires a single writer.
    write_lock: Mutex<()>,
    /// Number of the WAL segment holding this memtable's writes (0 for none).
    wal_number: u64,
    /// Largest sequence number inserted.
    largest_seq: AtomicU64,
}

impl MemTable {
    /// An empty memtable whose writes are logged in WAL segment `wal_number`, without a
    /// point-lookup index (for memtables nobody reads, as recovery's).
    pub fn new(wal_number: u64) -> Self {
        Self::with_list(wal_number, SkipList::new())
    }

    /// An empty memtable for serving reads: its skiplist keeps a hash index of user keys,
    /// sized for a memtable of `write_buffer_size` bytes of entries of about
    /// [`INDEXED_ENTRY_BYTES`] each.
    pub fn indexed(wal_number: u64, write_buffer_size: usize) -> Self {
        let buckets = (write_buffer_size / INDEXED_ENTRY_BYTES).max(64);
        Self::with_list(wal_number, SkipList::with_index(buckets))
    }

    fn with_list(wal_number: u64, list: SkipList) -> Self {
        MemTable {
            list,
            write_lock: Mutex::new(()),
            wal_number,
            largest_seq: AtomicU64::new(0),
        }
    }

    /// WAL segment that holds this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Inserts every operation of `batch`, numbering them from `first_seq`.
    pub fn insert_batch(&self, batch: &WriteBatch, first_seq: SequenceNumber) {
        let count = u64::from(batch.count());
        if count == 0 {
            return;
        }
        // Every internal key in one buffer, then the entries as slices of it.
        let mut ikeys = Vec::with_capacity(count as usize * 32);
        let mut ends = Vec::with_capacity(count as usize);
        for (seq, op) in (first_seq..).zip(batch.iter()) {
            let (k, kind) = match op {
                BatchOp::Put(k, _) => (k, ValueKind::Put),
                BatchOp::Delete(k) => (k, ValueKind::Delete),
            };
            key::append_internal_key(&mut ikeys, k, seq, kind);
            ends.push(ikeys.len());
        }
        let mut entries: Vec<(&[u8], &[u8])> = Vec::with_capacity(ends.len());
        let mut start = 0;
        for (op, &end) in batch.iter().zip(&ends) {
            let value: &[u8] = match op {
                BatchOp::Put(_, v) => v,
                BatchOp::Delete(_) => &[],
            };
            entries.push((&ikeys[start..end], value));
            start = end;
        }
        let _g = self.write_lock.lock();
        // SAFETY: inserts are serialized by `write_lock`; sequence numbers are unique.
        unsafe { self.list.insert_many(&mut entries) };
        self.largest_seq
            .fetch_max(first_seq + count - 1, Ordering::Release);
    }

    /// Inserts one entry. Used by recovery and tests.
    pub fn insert(&self, user_key: &[u8], seq: SequenceNumber, kind: ValueKind, value: &[u8]) {
        let _g = self.write_lock.lock();
        let ikey = key::make_internal_key(user_key, seq, kind);
        // SAFETY: serialized by `write_lock`; callers give unique sequence numbers.
        unsafe { self.list.insert(&ikey, value) };
        self.largest_seq.fetch_max(seq, Ordering::Release);
    }

    /// Newest version of `user_key` with sequence `<= seq`.
    pub fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Lookup {
        match self.newest(user_key, seq) {
            Some((k, v)) => match key::kind_byte(k) {
                b if b == ValueKind::Put as u8 => Lookup::Found(Bytes::copy_from_slice(v)),
                _ => Lookup::Deleted,
            },
            None => Lookup::Absent,
        }
    }

    /// The entry of the newest version of `user_key` with sequence `<= seq`, as (internal
    /// key, value), whether a put or a tombstone.
    pub fn newest(&self, user_key: &[u8], seq: SequenceNumber) -> Option<(&[u8], &[u8])> {
        let mut buf = [0u8; 256];
        let lookup_len = user_key.len() + key::TRAILER_LEN;
        let trailer = key::pack_trailer(seq, KIND_SEEK).to_le_bytes();
        let heap;
        let lookup: &[u8] = if lookup_len <= buf.len() {
            buf[..user_key.len()].copy_from_slice(user_key);
            buf[user_key.len()..lookup_len].copy_from_slice(&trailer);
            &buf[..lookup_len]
        } else {
            heap = key::make_internal_key(user_key, seq, KIND_SEEK);
            &heap
        };
        self.list.seek_point(lookup)
    }

    /// The entry inserted `i`-th, as (internal key, value); `None` if `i >= len()`. Drawing
    /// `i` uniformly below `len()` draws an entry uniformly.
    pub fn entry_at(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.list.entry_at(i)
    }

    /// Bytes of memory used.
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.memory_usage()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when no entry was inserted.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Largest sequence number inserted (0 if empty).
    pub fn largest_seq(&self) -> SequenceNumber {
        self.largest_seq.load(Ordering::Acquire)
    }

    /// An iterator over the entries; it keeps the memtable alive.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        let mem = Arc::clone(self);
        // SAFETY: the cursor borrows the skiplist inside the Arc'd memtable. The memtable is
        // heap-allocated and never moves, and `MemTableIter` drops `cursor` before `_mem`
        // (fields drop in declaration order), so the borrow never outlives the list.
        let cursor = unsafe {
            std::mem::transmute::<skiplist::Cursor<'_>, skiplist::Cursor<'static>>(
                mem.list.cursor(),
            )
        };
        MemTableIter { cursor, _mem: mem }
    }
}

/// Iterator over a memtable. Sees entries inserted after its creation too; callers filter by
/// sequence number for a consistent view.
pub struct MemTableIter {
    cursor: skiplist::Cursor<'static>,
    _mem: Arc<MemTable>,
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.cursor.valid()
    }
    fn seek_to_first(&mut self) {
        self.cursor.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.cursor.seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        self.cursor.seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cursor.seek_for_prev(target)
    }
    fn next(&mut self) {
        self.cursor.next()
    }
    fn prev(&mut self) {
        self.cursor.prev()
    }
    fn key(&self) -> &[u8] {
        self.cursor.key()
    }
    fn value(&self) -> &[u8] {
        self.cursor.value()
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_sees_newest_visible_version() {
        let m = MemTable::new(1);
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.put(b"b", b"x");
        m.insert_batch(&b, 10);
        let mut b = WriteBatch::new();
        b.put(b"a", b"2");
        b.delete(b"b");
        m.insert_batch(&b, 12);
        assert_eq!(m.get(b"a", 11), Lookup::Found(Bytes::from_static(b"1")));
        assert_eq!(m.get(b"a", 12), Lookup::Found(Bytes::from_static(b"2")));
        assert_eq!(m.get(b"b", 12), Lookup::Found(Bytes::from_static(b"x")));
        assert_eq!(m.get(b"b", 13), Lookup::Deleted);
        assert_eq!(m.get(b"a", 9), Lookup::Absent);
        assert_eq!(m.get(b"c", 100), Lookup::Absent);
        assert_eq!(m.largest_seq(), 13);
        let long = vec![b'k'; 1000];
        m.insert(&long, 20, ValueKind::Put, b"v");
        assert_eq!(m.get(&long, 20), Lookup::Found(Bytes::from_static(b"v")));
    }

    #[test]
    fn iterator_walks_in_internal_order() {
        let m = Arc::new(MemTable::new(1));
        m.insert(b"b", 1, ValueKind::Put, b"b1");
        m.insert(b"a", 2, ValueKind::Put, b"a2");
        m.insert(b"a", 3, ValueKind::Delete, b"");
        let mut it = m.iter();
        it.seek_to_first();
        let mut seen = Vec::new();
        while it.valid() {
            let p = key::parse(it.key()).unwrap();
            seen.push((p.user_key.to_vec(), p.seq));
            it.next();
        }
        assert_eq!(
            seen,
            vec![(b"a".to_vec(), 3), (b"a".to_vec(), 2), (b"b".to_vec(), 1)]
        );
    }
}
