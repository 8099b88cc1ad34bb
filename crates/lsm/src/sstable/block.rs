//! Blocks: sorted runs of key/value entries with prefix-compressed keys and restart points.
//!
//! ```text
//! block    := entry* restarts: u32 LE * n | n: u32 LE
//! entry    := shared: varint32 | unshared: varint32 | value_len: varint32
//!             | key_delta: [u8; unshared] | value: [u8; value_len]
//! ```
//!
//! An entry's key is the first `shared` bytes of the previous entry's key followed by
//! `key_delta`. Every `restart_interval`-th entry is a *restart point*: it stores its key in
//! full (`shared == 0`) and its offset is listed in `restarts`, so a seek binary-searches the
//! restart points and then scans at most `restart_interval` entries.
//!
//! Invariants checked by [`Block::new`] (so iterators can rely on them): the restart array
//! fits in the block, restart offsets are strictly increasing, the first is 0, and all lie
//! inside the entry region. Entries themselves are bounds-checked as they are decoded; a
//! malformed entry turns the iterator invalid with a corruption status, never a panic.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use rialto_engine::{Error, Result};

use super::coding::{get_varint32, put_varint32, read_u32_le};
use crate::iter::InternalIterator;
use crate::key::{self, TRAILER_LEN};

/// Bytes of bookkeeping charged to the cache per block on top of its contents (the cache
/// entry, the hash-map slot and the shared buffer header).
pub const BLOCK_CHARGE_OVERHEAD: usize = 128;

/// Builds the uncompressed contents of one block. Keys must be added in the order the
/// reader will use (the table builder checks internal-key order).
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    num_entries: usize,
}

impl BlockBuilder {
    /// A builder writing a full key every `restart_interval` entries (at least 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            num_entries: 0,
        }
    }

    /// Appends an entry. REQUIRES: the block stays below 4 GiB (the table builder bounds
    /// keys, values and block sizes so that it does).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter >= self.restart_interval {
            debug_assert!(self.buf.len() <= u32::MAX as usize);
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        } else {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        };
        let unshared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, unshared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Size of the contents [`finish`](Self::finish) would return now.
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + self.restarts.len() * 4 + 4
    }

    /// True if no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// Entries added since the last reset.
    pub fn num_entries(&self) -> usize {
        self.num_entries
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart array and returns the finished contents. Call
    /// [`reset`](Self::reset) before adding again.
    pub fn finish(&mut self) -> &[u8] {
        for r in &self.restarts {
            self.buf.extend_from_slice(&r.to_le_bytes());
        }
        self.buf
            .extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        &self.buf
    }

    /// Empties the builder, keeping its allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
    }
}

/// Uncompressed, validated block contents. Cheap to clone (a reference-counted buffer);
/// this is what the block cache holds.
#[derive(Clone, Debug)]
pub struct Block {
    data: Bytes,
    /// Offset of the restart array = end of the entry region.
    restarts: usize,
    num_restarts: usize,
}

impl Block {
    /// Validates the restart array of `data`; the error names the failed check.
    pub fn new(data: Bytes) -> std::result::Result<Block, &'static str> {
        let len = data.len();
        let n = len
            .checked_sub(4)
            .and_then(|p| read_u32_le(&data, p))
            .ok_or("block too short for its restart count")? as usize;
        let restarts = n
            .checked_mul(4)
            .and_then(|b| b.checked_add(4))
            .and_then(|b| len.checked_sub(b))
            .ok_or("restart array larger than the block")?;
        if restarts == 0 {
            // No entries: the restart array (conventionally `[0]`) is irrelevant.
            return Ok(Block {
                data,
                restarts: 0,
                num_restarts: 0,
            });
        }
        if n == 0 {
            return Err("entries without restart points");
        }
        let mut prev: Option<usize> = None;
        for i in 0..n {
            let r = read_u32_le(&data, restarts + 4 * i).ok_or("restart array truncated")? as usize;
            let ok = match prev {
                None => r == 0,
                Some(p) => r > p && r < restarts,
            };
            if !ok {
                return Err("restart points out of order or out of range");
            }
            prev = Some(r);
        }
        Ok(Block {
            data,
            restarts,
            num_restarts: n,
        })
    }

    /// The whole contents (entries and restart array).
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// Bytes of the contents.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True if the block has no entries.
    pub fn is_empty(&self) -> bool {
        self.restarts == 0
    }

    /// What the block costs a cache: contents plus [`BLOCK_CHARGE_OVERHEAD`].
    pub fn charge(&self) -> usize {
        self.data.len() + BLOCK_CHARGE_OVERHEAD
    }

    /// Starts loading the restart array and the entries around the middle restart point,
    /// the first lines a seek reads, so that their misses overlap the caller's.
    #[inline]
    pub fn prefetch_for_seek(&self) {
        crate::prefetch::bytes(&self.data[self.restarts..], 2);
        if self.num_restarts > 1 {
            // Without the array loaded, the middle restart's offset is not known; its
            // proportional position in the entry region is a close guess.
            crate::prefetch::line(self.data.as_ptr().wrapping_add(self.restarts / 2));
        }
    }

    /// An iterator over internal-key entries.
    pub fn iter(&self) -> BlockIter {
        BlockIter::new(self.clone())
    }

    #[inline]
    fn restart_point(&self, i: usize) -> usize {
        // In range: validated by `new`.
        let p = self.restarts + 4 * i;
        let b = &self.data[p..p + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    }

    /// Decodes the entry header at `off`: `(shared, unshared, value_len, header_len)`,
    /// checked to fit in the entry region.
    #[inline]
    fn decode_entry(&self, off: usize) -> Option<(usize, usize, usize, usize)> {
        let region = self.data.get(off..self.restarts)?;
        let (shared, unshared, vlen, hdr) =
            if region.len() >= 3 && (region[0] | region[1] | region[2]) < 0x80 {
                (
                    region[0] as usize,
                    region[1] as usize,
                    region[2] as usize,
                    3,
                )
            } else {
                let (s, a) = get_varint32(region)?;
                let (u, b) = get_varint32(&region[a..])?;
                let (v, c) = get_varint32(&region[a + b..])?;
                (s as usize, u as usize, v as usize, a + b + c)
            };
        let body = unshared.checked_add(vlen)?;
        (hdr.checked_add(body)? <= region.len()).then_some((shared, unshared, vlen, hdr))
    }

    /// The full key stored at restart point `i`; `None` if the entry is malformed or not a
    /// full key.
    #[inline]
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let off = self.restart_point(i);
        let (shared, unshared, _, hdr) = self.decode_entry(off)?;
        if shared != 0 {
            return None;
        }
        let start = off + hdr;
        Some(&self.data[start..start + unshared])
    }

    /// Calls `f(key, value)` for every entry in order, keys of any length. Used for blocks
    /// whose keys are not internal keys (properties) and for loading the index.
    pub fn for_each_entry(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> std::result::Result<(), &'static str>,
    ) -> std::result::Result<(), &'static str> {
        let mut key = Vec::new();
        let mut off = 0;
        while off < self.restarts {
            let (shared, unshared, vlen, hdr) =
                self.decode_entry(off).ok_or("malformed block entry")?;
            if shared > key.len() {
                return Err("entry shares more bytes than the previous key has");
            }
            let k = off + hdr;
            key.truncate(shared);
            key.extend_from_slice(&self.data[k..k + unshared]);
            f(&key, &self.data[k + unshared..k + unshared + vlen])?;
            off = k + unshared + vlen;
        }
        Ok(())
    }
}

/// A cursor over a block whose keys are internal keys ([`crate::key::compare`] order).
///
/// Seeks binary-search the restart points, then scan; `prev` rescans from the restart point
/// before the current entry. Corruption makes the iterator invalid for good, with the
/// reason in [`status`](InternalIterator::status).
pub struct BlockIter {
    block: Block,
    /// Offset of the current entry; `block.restarts` when not valid.
    current: usize,
    /// Offset of the entry after the current one.
    next_off: usize,
    /// Restart region holding `current`.
    restart_index: usize,
    key: Vec<u8>,
    value_start: usize,
    value_end: usize,
    err: Option<&'static str>,
    /// File and block offset named in corruption errors.
    file: Option<Arc<str>>,
    block_offset: u64,
}

impl BlockIter {
    /// An unpositioned iterator over `block`.
    pub fn new(block: Block) -> Self {
        BlockIter::with_key_buf(block, Vec::new())
    }

    /// Like [`new`](Self::new), reusing `key_buf`'s allocation for the current key.
    pub fn with_key_buf(block: Block, mut key_buf: Vec<u8>) -> Self {
        key_buf.clear();
        let current = block.restarts;
        BlockIter {
            block,
            current,
            next_off: current,
            restart_index: 0,
            key: key_buf,
            value_start: 0,
            value_end: 0,
            err: None,
            file: None,
            block_offset: 0,
        }
    }

    /// Names the file and block offset that corruption errors report.
    pub fn set_context(&mut self, file: Arc<str>, block_offset: u64) {
        self.file = Some(file);
        self.block_offset = block_offset;
    }

    /// Switches to another block, keeping the key buffer and the context's file name.
    pub fn reset(&mut self, block: Block, block_offset: u64) {
        self.current = block.restarts;
        self.next_off = self.current;
        self.block = block;
        self.block_offset = block_offset;
        self.restart_index = 0;
        self.key.clear();
        self.value_start = 0;
        self.value_end = 0;
        self.err = None;
    }

    /// Gives back the key buffer for reuse.
    pub fn into_key_buf(self) -> Vec<u8> {
        self.key
    }

    /// The current value as a zero-copy slice of the block. REQUIRES: `valid()`.
    pub fn value_bytes(&self) -> Bytes {
        self.block.data.slice(self.value_start..self.value_end)
    }

    /// Reason of the corruption met, if any.
    pub fn corruption(&self) -> Option<&'static str> {
        self.err
    }

    #[inline]
    fn invalidate(&mut self) {
        self.current = self.block.restarts;
        self.next_off = self.current;
    }

    fn fail(&mut self, reason: &'static str) {
        self.err.get_or_insert(reason);
        self.invalidate();
    }

    #[inline]
    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next_off = self.block.restart_point(i);
    }

    /// Decodes the entry at `next_off` into the current position. False (and invalid) at
    /// the end of the block or on corruption.
    #[inline]
    fn parse_next(&mut self) -> bool {
        let off = self.next_off;
        if off >= self.block.restarts {
            self.invalidate();
            return false;
        }
        let Some((shared, unshared, vlen, hdr)) = self.block.decode_entry(off) else {
            self.fail("malformed block entry");
            return false;
        };
        if shared > self.key.len() {
            self.fail("entry shares more bytes than the previous key has");
            return false;
        }
        let k = off + hdr;
        self.key.truncate(shared);
        self.key
            .extend_from_slice(&self.block.data[k..k + unshared]);
        if self.key.len() < TRAILER_LEN {
            self.fail("key shorter than an internal-key trailer");
            return false;
        }
        self.current = off;
        self.value_start = k + unshared;
        self.value_end = self.value_start + vlen;
        self.next_off = self.value_end;
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= off
        {
            self.restart_index += 1;
        }
        true
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.current < self.block.restarts
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() || self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() || self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next_off < self.block.restarts {}
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() || self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        // Last restart point whose key is < target (or 0).
        let (mut lo, mut hi) = (0, self.block.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            match self.block.restart_key(mid) {
                Some(k) if k.len() >= TRAILER_LEN => {
                    if key::compare(k, target) == Ordering::Less {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                _ => {
                    self.fail("malformed restart point entry");
                    return;
                }
            }
        }
        self.seek_to_restart(lo);
        // The scan below reads its restart interval entry by entry, each header found only
        // once the previous entry is decoded: in a block not yet in the CPU cache that is one
        // miss after another. Loading the interval's lines up front overlaps them.
        let end = if lo + 1 < self.block.num_restarts {
            self.block.restart_point(lo + 1)
        } else {
            self.block.restarts
        };
        crate::prefetch::bytes(&self.block.data[self.next_off..end], 64);
        while self.parse_next() {
            if key::compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if key::compare(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.parse_next();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next() && self.next_off < original {}
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.block.data[self.value_start..self.value_end]
    }

    fn status(&self) -> Result<()> {
        match self.err {
            None => Ok(()),
            Some(reason) => Err(Error::corruption(
                self.file.as_deref().unwrap_or("<block>"),
                self.block_offset,
                reason,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use rand::{Rng, SeedableRng};

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Block {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        let est = b.estimated_size();
        let data = b.finish().to_vec();
        assert_eq!(data.len(), est);
        Block::new(Bytes::from(data)).expect("valid block")
    }

    fn random_entries(n: usize, seed: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut keys: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let len = rng.gen_range(0..20);
                let uk: Vec<u8> = (0..len).map(|_| rng.gen_range(b'a'..=b'e')).collect();
                make_internal_key(&uk, rng.gen_range(0..1000), ValueKind::Put)
            })
            .collect();
        keys.sort_by(|a, b| key::compare(a, b));
        keys.dedup();
        keys.into_iter()
            .map(|k| {
                let vlen = rng.gen_range(0..40);
                let v = (0..vlen).map(|_| rng.gen()).collect();
                (k, v)
            })
            .collect()
    }

    fn collect_forward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn collect_backward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        out.reverse();
        out
    }

    #[test]
    fn round_trip_random_keys_and_intervals() {
        for (seed, interval) in [(1u64, 1usize), (2, 2), (3, 16), (4, 100), (5, 3)] {
            let entries = random_entries(2000, seed);
            let block = build(&entries, interval);
            let mut it = block.iter();
            assert_eq!(collect_forward(&mut it), entries, "interval {interval}");
            assert_eq!(collect_backward(&mut it), entries, "interval {interval}");
            it.status().expect("no corruption");
            // Seek to every key, and to a key just before / after it.
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            for _ in 0..500 {
                let i = rng.gen_range(0..entries.len());
                let target = &entries[i].0;
                it.seek(target);
                assert!(it.valid());
                assert_eq!(it.key(), &target[..]);
                it.seek_for_prev(target);
                assert_eq!(it.key(), &target[..]);
                // A target just after entry i: same user key, trailer one smaller.
                let t = key::trailer(target);
                if t > 0 {
                    let mut after = key::user_key(target).to_vec();
                    after.extend_from_slice(&(t - 1).to_le_bytes());
                    it.seek(&after);
                    if i + 1 < entries.len() {
                        assert_eq!(it.key(), &entries[i + 1].0[..]);
                    } else {
                        assert!(!it.valid());
                    }
                    it.seek_for_prev(&after);
                    assert_eq!(it.key(), &target[..]);
                }
            }
            // Mixed direction walk.
            it.seek(&entries[entries.len() / 2].0);
            it.next();
            it.prev();
            assert_eq!(it.key(), &entries[entries.len() / 2].0[..]);
            it.prev();
            it.next();
            assert_eq!(it.key(), &entries[entries.len() / 2].0[..]);
        }
    }

    #[test]
    fn empty_block() {
        let block = build(&[], 16);
        assert!(block.is_empty());
        let mut it = block.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(&make_internal_key(b"a", 1, ValueKind::Put));
        assert!(!it.valid());
        it.seek_for_prev(&make_internal_key(b"a", 1, ValueKind::Put));
        assert!(!it.valid());
        it.status().expect("ok");
    }

    #[test]
    fn single_entry_edges() {
        let k = make_internal_key(b"m", 5, ValueKind::Put);
        let block = build(&[(k.clone(), b"v".to_vec())], 16);
        let mut it = block.iter();
        let before = make_internal_key(b"a", 1, ValueKind::Put);
        let after = make_internal_key(b"z", 1, ValueKind::Put);
        it.seek(&before);
        assert_eq!(it.key(), &k[..]);
        assert_eq!(it.value(), b"v");
        it.prev();
        assert!(!it.valid());
        it.seek(&after);
        assert!(!it.valid());
        it.seek_for_prev(&after);
        assert_eq!(it.key(), &k[..]);
        it.next();
        assert!(!it.valid());
        it.seek_for_prev(&before);
        assert!(!it.valid());
        // Newer sequence of the same user key sorts before; older after.
        it.seek(&make_internal_key(b"m", 9, ValueKind::Put));
        assert_eq!(it.key(), &k[..]);
        it.seek(&make_internal_key(b"m", 4, ValueKind::Put));
        assert!(!it.valid());
        it.seek_for_prev(&make_internal_key(b"m", 4, ValueKind::Put));
        assert_eq!(it.key(), &k[..]);
        assert_eq!(&it.value_bytes()[..], b"v");
    }

    #[test]
    fn for_each_entry_sees_all() {
        let entries = random_entries(300, 9);
        let block = build(&entries, 7);
        let mut seen = Vec::new();
        block
            .for_each_entry(|k, v| {
                seen.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .expect("ok");
        assert_eq!(seen, entries);
    }

    #[test]
    fn bad_restart_arrays_are_rejected() {
        assert!(Block::new(Bytes::from_static(&[1, 2])).is_err());
        // n = 1000 restarts in an 8-byte block.
        assert!(Block::new(Bytes::from(vec![0, 0, 0, 0, 0xe8, 3, 0, 0])).is_err());
        let entries = random_entries(50, 3);
        let mut b = BlockBuilder::new(4);
        for (k, v) in &entries {
            b.add(k, v);
        }
        let good = b.finish().to_vec();
        let n = good.len();
        let mut bad = good.clone();
        bad[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes()); // beyond the entries
        assert!(Block::new(Bytes::from(bad)).is_err());
        let mut bad = good.clone();
        bad[n - 8..n - 4].copy_from_slice(&0u32.to_le_bytes()); // not increasing
        assert!(Block::new(Bytes::from(bad)).is_err());
    }

    #[test]
    fn every_byte_flip_is_safe() {
        let entries = random_entries(60, 11);
        let mut b = BlockBuilder::new(4);
        for (k, v) in &entries {
            b.add(k, v);
        }
        let good = b.finish().to_vec();
        for i in 0..good.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= mask;
                let Ok(block) = Block::new(Bytes::from(bad)) else {
                    continue;
                };
                let mut it = block.iter();
                // Must terminate without panicking in both directions.
                let mut steps = 0;
                it.seek_to_first();
                while it.valid() && steps < 10_000 {
                    it.next();
                    steps += 1;
                }
                it = block.iter();
                it.seek_to_last();
                while it.valid() && steps < 20_000 {
                    it.prev();
                    steps += 1;
                }
                it = block.iter();
                for (k, _) in entries.iter().step_by(7) {
                    it.seek(k);
                    it.seek_for_prev(k);
                }
                let _ = block.for_each_entry(|_, _| Ok(()));
            }
        }
    }
}
