//! Opens a table and serves point lookups and block reads.

use std::cell::Cell;
use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use rialto_engine::{Error, Result};
use rialto_io::RandomAccessFile;

use super::block::{Block, BlockIter};
use super::bloom::{bloom_hash, BloomFilter};
use super::compression::decompress;
use super::format::{
    crc32c, unmask_crc, BlockHandle, CompressionType, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use super::properties::TableProperties;
use super::table_iter::TableIter;
use crate::cache::{BlockCache, CacheKey};
use crate::iter::InternalIterator;
use crate::key::{self, TRAILER_LEN};

/// The index, parsed: separator keys packed in one buffer, binary-searched on every lookup.
///
/// Invariants (checked at open): keys are internal keys in strictly increasing order; every
/// data block handle lies inside the data region of the file. Separator `i` is `>=` every
/// key of block `i` and `<` every key of block `i + 1`.
///
/// The search runs on fingerprints: the 8 bytes of each user key after the prefix all the
/// table's separators share, as a big-endian number (zero-padded). They are 8 bytes apart in
/// one array, where the keys are two dependent loads each (`ends`, then `keys`), and they
/// skip the shared prefix, which in real key sets (`user:`, `features:v3:`) holds no
/// information. Fingerprints preserve order weakly (`a < b` implies `fp(a) <= fp(b)`), so
/// unequal fingerprints decide a comparison. A run of separators with equal fingerprints
/// shares more than the table's prefix: a table holding a few keys of another family (a
/// counter, an expiry key) beside its data keys shares no prefix at all, and its data keys'
/// first 8 bytes are all alike. Such a run gets fingerprints of its own, taken after the
/// prefix its keys share ([`FpLevel::runs`]), so a search stays on fingerprints; short runs
/// fall back to the keys.
#[derive(Debug, Default)]
pub(crate) struct Index {
    keys: Vec<u8>,
    /// `ends[i]` is the end of key `i` in `keys`; it starts where key `i - 1` ends.
    ends: Vec<usize>,
    handles: Vec<BlockHandle>,
    /// The longest prefix of every separator's user key.
    prefix: Vec<u8>,
    /// Fingerprints of every separator after `prefix`.
    fps: FpLevel,
}

/// Fingerprints of separators `start..start + fps.len()`, whose user keys all share their
/// first `offset` bytes, taken after those bytes.
#[derive(Debug, Default)]
struct FpLevel {
    start: usize,
    offset: usize,
    fps: Vec<u64>,
    /// Finer levels for the runs of at least [`RUN_MIN`] equal fingerprints whose keys share
    /// at least `offset + 8` bytes (less means keys shorter than that, told apart by length
    /// only), by `start`. Each is deeper by 8 bytes or more, so levels end.
    runs: Vec<FpLevel>,
}

/// Shortest run of equal fingerprints given a level of its own; shorter ones compare keys.
const RUN_MIN: usize = 4;

/// Up to 8 bytes of `s` as a big-endian number, zero-padded on the right: `a <= b`
/// lexicographically implies `fingerprint(a) <= fingerprint(b)`.
#[inline]
fn fingerprint(s: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = s.len().min(8);
    b[..n].copy_from_slice(&s[..n]);
    u64::from_be_bytes(b)
}

impl FpLevel {
    fn len(&self) -> usize {
        self.fps.len()
    }

    fn memory_usage(&self) -> usize {
        self.fps.capacity() * std::mem::size_of::<u64>()
            + self.runs.capacity() * std::mem::size_of::<FpLevel>()
            + self.runs.iter().map(FpLevel::memory_usage).sum::<usize>()
    }
}

impl Index {
    pub(crate) fn len(&self) -> usize {
        self.handles.len()
    }

    #[inline]
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    #[inline]
    pub(crate) fn handle(&self, i: usize) -> BlockHandle {
        self.handles[i]
    }

    /// Computes the shared prefix and the fingerprints once every key is in.
    fn seal(&mut self) {
        self.prefix.clear();
        self.fps = FpLevel::default();
        let Some(last) = self.len().checked_sub(1) else {
            return;
        };
        // Sorted keys: the prefix shared by the first and the last is shared by all.
        let n = common_prefix(key::user_key(self.key(0)), key::user_key(self.key(last)));
        self.prefix = key::user_key(self.key(0))[..n].to_vec();
        self.fps = self.level(0, self.len(), n);
    }

    /// The level of separators `start..end`, which share their first `offset` bytes.
    fn level(&self, start: usize, end: usize, offset: usize) -> FpLevel {
        let fps: Vec<u64> = (start..end)
            .map(|i| fingerprint(&key::user_key(self.key(i))[offset..]))
            .collect();
        let mut runs = Vec::new();
        let mut i = 0;
        while i < fps.len() {
            let j = i + fps[i..].iter().take_while(|&&f| f == fps[i]).count();
            if j - i >= RUN_MIN {
                let (a, b) = (start + i, start + j - 1);
                let shared = common_prefix(key::user_key(self.key(a)), key::user_key(self.key(b)));
                if shared >= offset + 8 {
                    runs.push(self.level(a, start + j, shared));
                }
            }
            i = j;
        }
        FpLevel {
            start,
            offset,
            fps,
            runs,
        }
    }

    /// First block whose separator is `>= target`: the only block that can hold the first
    /// entry `>= target`. `len()` if `target` is past every block.
    #[inline]
    pub(crate) fn find(&self, target: &[u8]) -> usize {
        debug_assert!(
            self.len() == 0 || self.fps.len() == self.len(),
            "index not sealed"
        );
        if target.len() < TRAILER_LEN {
            return self.find_by_keys(target);
        }
        let uk = key::user_key(target);
        match outside(uk, &self.prefix) {
            Some(std::cmp::Ordering::Less) => 0,
            Some(_) => self.len(),
            None => self.find_in(&self.fps, target, uk),
        }
    }

    /// [`find`](Self::find) among the separators of `level`, whose prefix `uk` has.
    fn find_in(&self, level: &FpLevel, target: &[u8], uk: &[u8]) -> usize {
        let t = fingerprint(&uk[level.offset..]);
        let lo = level.fps.partition_point(|&f| f < t);
        if level.fps.get(lo) != Some(&t) {
            // Separator `lo - 1` is below the target, `lo` above it.
            return level.start + lo;
        }
        // Separators `lo..hi` have the target's fingerprint.
        let at = level.start + lo;
        if let Ok(r) = level.runs.binary_search_by_key(&at, |r| r.start) {
            let run = &level.runs[r];
            let prefix = &key::user_key(self.key(run.start))[..run.offset];
            return match outside(uk, prefix) {
                Some(std::cmp::Ordering::Less) => run.start,
                Some(_) => run.start + run.len(),
                None => self.find_in(run, target, uk),
            };
        }
        let hi = lo + level.fps[lo..].partition_point(|&f| f == t);
        self.find_by_keys_in(at, level.start + hi, target)
    }

    /// [`find`](Self::find) comparing whole keys.
    fn find_by_keys(&self, target: &[u8]) -> usize {
        self.find_by_keys_in(0, self.len(), target)
    }

    /// The first of separators `lo..hi` that is `>= target` (`hi` if none), comparing whole
    /// keys. REQUIRES: every separator before `lo` is `< target`.
    fn find_by_keys_in(&self, mut lo: usize, mut hi: usize, target: &[u8]) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key::compare(self.key(mid), target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn memory_usage(&self) -> usize {
        self.keys.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + self.handles.capacity() * std::mem::size_of::<BlockHandle>()
            + self.prefix.capacity()
            + self.fps.memory_usage()
    }
}

/// Bytes a streaming read (see [`BlockReads::Streaming`]) takes from a table at once.
pub(crate) const READAHEAD_BYTES: usize = 256 << 10;

/// How an iterator reads its table's data blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockReads {
    /// Through the block cache, filling it: reads that may come back to the same blocks
    /// (user scans, point lookups).
    Cached,
    /// Around the block cache, [`READAHEAD_BYTES`] at a time ahead of a forward pass: a pass
    /// over whole tables (compaction, the row-cache warm-up) would otherwise replace the
    /// blocks that point reads keep coming back to with blocks read once, and pay a read
    /// per block.
    Streaming,
}

/// What a point lookup's read of a block the cache misses does to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockFill {
    /// Caches the block (once the cache is full, on its second miss:
    /// [`BlockCache::insert_missed`]).
    Missed,
    /// Caches the block on its second miss only, room or not: a row cache in front keeps the
    /// value the lookup reads, so the block is wanted again only for another of its keys,
    /// and caching it at once would hold most data twice.
    SecondMiss,
}

/// The window of a table that a streaming iterator reads its blocks from.
#[derive(Debug, Default)]
pub(crate) struct Readahead {
    /// File offset of `window[0]`.
    start: u64,
    window: Bytes,
}

/// Bytes `a` and `b` share at their start.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// `None` if `uk` starts with `prefix`; else how every key that does compares with `uk`
/// turned around: `Less` when `uk` sorts before them all (it sorts before the prefix, or is
/// a proper prefix of it), `Greater` when after.
fn outside(uk: &[u8], prefix: &[u8]) -> Option<Ordering> {
    let p = prefix.len();
    if uk.len() >= p && uk[..p] == *prefix {
        return None;
    }
    let n = p.min(uk.len());
    Some(match uk[..n].cmp(&prefix[..n]) {
        Ordering::Greater => Ordering::Greater,
        _ => Ordering::Less,
    })
}

thread_local! {
    /// Key buffer reused by point lookups so that `get` does not allocate.
    static GET_KEY_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Outcome of a point lookup within one block.
enum Probe {
    Found(u64, Bytes),
    Absent,
    /// Every entry of the block is `< lookup`.
    PastEnd,
}

/// An open table. `Send + Sync`; share it as `Arc<TableReader>`.
///
/// The footer, index, filter and properties are read (and always checksum-verified) at open
/// and held in memory; data blocks are read on demand through the block cache, verified
/// when `verify_checksums` is set.
pub struct TableReader {
    file: Arc<dyn RandomAccessFile>,
    file_number: u64,
    pub(crate) file_name: Arc<str>,
    file_size: u64,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    verify_checksums: bool,
    pub(crate) index: Index,
    filter: Option<BloomFilter>,
    props: TableProperties,
    /// End of the data-block region: where the first metadata block starts.
    data_end: u64,
}

impl std::fmt::Debug for TableReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableReader")
            .field("file_name", &self.file_name)
            .field("file_size", &self.file_size)
            .field("num_data_blocks", &self.index.len())
            .field("has_filter", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

impl TableReader {
    /// Opens a table: reads and checks the footer, then loads the index, filter and
    /// properties. Any malformed byte yields `Error::Corruption` naming `file_name` and the
    /// offset of the bad block.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        file_name: String,
        cache: Option<Arc<BlockCache>>,
        verify_checksums: bool,
    ) -> Result<TableReader> {
        let file_size = file.len();
        let mut reader = TableReader {
            file,
            file_number,
            file_name: file_name.into(),
            file_size,
            cache,
            cache_id: BlockCache::new_cache_id(),
            verify_checksums,
            index: Index::default(),
            filter: None,
            props: TableProperties::default(),
            data_end: 0,
        };
        let footer_off = file_size
            .checked_sub(FOOTER_LEN as u64)
            .ok_or_else(|| reader.corruption(0, "file too short to be a table"))?;
        let mut fb = [0u8; FOOTER_LEN];
        reader
            .file
            .read_exact_at(footer_off, &mut fb)
            .map_err(|e| Error::io(format!("read footer of {}", reader.file_name), e))?;
        let footer = Footer::decode(&fb).map_err(|r| reader.corruption(footer_off, r))?;

        let has_filter = footer.filter.size > 0;
        let mut metas = vec![footer.index, footer.properties];
        if has_filter {
            metas.push(footer.filter);
        }
        reader.data_end = metas.iter().map(|h| h.offset).min().unwrap_or(0);

        let index_block = reader.read_block(footer.index, footer_off, true)?;
        reader.index = reader.parse_index(&index_block, footer.index.offset)?;
        if has_filter {
            let data = reader.read_block_contents(footer.filter, footer_off, true)?;
            let filter = BloomFilter::from_contents(&data)
                .map_err(|r| reader.corruption(footer.filter.offset, r))?;
            reader.filter = Some(filter);
        }
        let props_block = reader.read_block(footer.properties, footer_off, true)?;
        reader.props = TableProperties::decode(&props_block)
            .map_err(|r| reader.corruption(footer.properties.offset, r))?;
        if let Some(starts) = &reader.props.block_starts {
            if starts.len() != reader.index.len() + 1 {
                return Err(reader.corruption(
                    footer.properties.offset,
                    "block entry counts disagree with the index",
                ));
            }
        }
        Ok(reader)
    }

    fn corruption(&self, offset: u64, reason: &str) -> Error {
        Error::corruption(&*self.file_name, offset, reason)
    }

    fn parse_index(&self, block: &Block, offset: u64) -> Result<Index> {
        let mut index = Index::default();
        let data_end = self.data_end;
        block
            .for_each_entry(|k, v| {
                if k.len() < TRAILER_LEN {
                    return Err("index key is not an internal key");
                }
                if let Some(prev) = index.len().checked_sub(1) {
                    if key::compare(index.key(prev), k) != Ordering::Less {
                        return Err("index keys out of order");
                    }
                }
                let h = BlockHandle::decode_varint(v).ok_or("malformed block handle")?;
                if !matches!(h.end_with_trailer(), Some(end) if end <= data_end) {
                    return Err("data block handle out of range");
                }
                index.keys.extend_from_slice(k);
                index.ends.push(index.keys.len());
                index.handles.push(h);
                Ok(())
            })
            .map_err(|r| self.corruption(offset, r))?;
        index.seal();
        Ok(index)
    }

    /// Bytes of the block at `h` with its trailer, checked to end by `limit`.
    fn stored_len(&self, h: BlockHandle, limit: u64) -> Result<usize> {
        h.end_with_trailer()
            .filter(|&end| end <= limit)
            .and_then(|_| usize::try_from(h.size).ok())
            .map(|size| size + BLOCK_TRAILER_LEN)
            .ok_or_else(|| self.corruption(h.offset, "block handle out of range"))
    }

    /// Reads the stored contents of the block at `h` (which must end by `limit`), checks
    /// its CRC if `verify`, and decompresses it.
    fn read_block_contents(&self, h: BlockHandle, limit: u64, verify: bool) -> Result<Bytes> {
        let len = self.stored_len(h, limit)?;
        let buf = self.file.read_vec_at(h.offset, len).map_err(|e| {
            Error::io(
                format!("read block at offset {} of {}", h.offset, self.file_name),
                e,
            )
        })?;
        self.decode_stored(h, Bytes::from(buf), verify)
    }

    /// The contents of a stored block (`stored`: the block and its trailer, as read from
    /// `h`): its CRC checked if `verify`, decompressed. An uncompressed block is a slice of
    /// `stored`, not a copy.
    fn decode_stored(&self, h: BlockHandle, mut stored: Bytes, verify: bool) -> Result<Bytes> {
        let size = stored.len() - BLOCK_TRAILER_LEN;
        let ty = stored[size];
        if verify {
            let mut c = [0u8; 4];
            c.copy_from_slice(&stored[size + 1..]);
            if unmask_crc(u32::from_le_bytes(c)) != crc32c(&stored[..=size]) {
                return Err(self.corruption(h.offset, "block checksum mismatch"));
            }
        }
        match CompressionType::from_u8(ty) {
            None => Err(self.corruption(h.offset, "unknown block compression type")),
            Some(CompressionType::None) => {
                stored.truncate(size);
                Ok(stored)
            }
            Some(t) => decompress(t, &stored[..size])
                .map(Bytes::from)
                .map_err(|r| self.corruption(h.offset, r)),
        }
    }

    fn read_block(&self, h: BlockHandle, limit: u64, verify: bool) -> Result<Block> {
        let data = self.read_block_contents(h, limit, verify)?;
        Block::new(data).map_err(|r| self.corruption(h.offset, r))
    }

    /// Data block `i` of the index, through the cache.
    pub(crate) fn data_block(&self, i: usize) -> Result<Block> {
        self.data_block_with(i, BlockFill::Missed)
    }

    /// Data block `i` of the index, through the cache, filling it on a miss as `fill` says.
    fn data_block_with(&self, i: usize, fill: BlockFill) -> Result<Block> {
        let h = self.index.handle(i);
        let ck = CacheKey::new(self.cache_id, h.offset);
        if let Some(cache) = &self.cache {
            if let Some(b) = cache.get(ck) {
                return Ok(b);
            }
        }
        let block = self.read_block(h, self.data_end, self.verify_checksums)?;
        if let Some(cache) = &self.cache {
            match fill {
                BlockFill::Missed => cache.insert_missed(ck, block.clone()),
                BlockFill::SecondMiss => cache.insert_on_second_miss(ck, block.clone()),
            }
        }
        Ok(block)
    }

    /// Data block `i` around the block cache, from `ahead`'s window, which is first moved to
    /// start at the block when it does not hold it: one read of [`READAHEAD_BYTES`] then
    /// serves the blocks that follow. Blocks are slices of the window, not copies.
    pub(crate) fn data_block_streaming(&self, i: usize, ahead: &mut Readahead) -> Result<Block> {
        let h = self.index.handle(i);
        let len = self.stored_len(h, self.data_end)?;
        let end = h.offset + len as u64;
        let window_end = ahead.start + ahead.window.len() as u64;
        if h.offset < ahead.start || end > window_end {
            let want = (self.data_end - h.offset).min(READAHEAD_BYTES as u64) as usize;
            let buf = self
                .file
                .read_vec_at(h.offset, want.max(len))
                .map_err(|e| {
                    Error::io(
                        format!("read blocks at offset {} of {}", h.offset, self.file_name),
                        e,
                    )
                })?;
            ahead.start = h.offset;
            ahead.window = Bytes::from(buf);
        }
        let at = (h.offset - ahead.start) as usize;
        let stored = ahead.window.slice(at..at + len);
        let data = self.decode_stored(h, stored, self.verify_checksums)?;
        Block::new(data).map_err(|r| self.corruption(h.offset, r))
    }

    /// The recorded properties.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// False only if no key with this user key is in the table (bloom filter; always true
    /// for a table written without one).
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        match &self.filter {
            Some(f) => f.may_contain(user_key),
            None => true,
        }
    }

    /// Point lookup: the first entry `>= lookup` (an internal seek key), if its user key is
    /// `user_key(lookup)`; returns its trailer and its value, a zero-copy slice of the
    /// cached block. Checks the bloom filter first. Allocates nothing on a cache hit.
    pub fn get(&self, lookup: &[u8]) -> Result<Option<(u64, Bytes)>> {
        self.get_with(lookup, BlockFill::Missed)
    }

    /// [`get`](Self::get), filling the block cache as `fill` says.
    pub fn get_with(&self, lookup: &[u8], fill: BlockFill) -> Result<Option<(u64, Bytes)>> {
        if lookup.len() < TRAILER_LEN {
            return Err(Error::InvalidArgument(
                "lookup key is not an internal key".into(),
            ));
        }
        let uk = key::user_key(lookup);
        if !self.may_contain(uk) {
            return Ok(None);
        }
        let i = self.index.find(lookup);
        if i >= self.index.len() {
            return Ok(None);
        }
        match self.probe_block(i, lookup, uk, fill)? {
            Probe::Found(t, v) => Ok(Some((t, v))),
            Probe::Absent => Ok(None),
            // Every entry of block `i` is < lookup <= separator `i`. The next block starts
            // after the separator, so its first entry can only have our user key if the
            // separator does (never with `key::separator`, which then returns the block's
            // last key; checked anyway so that any valid separator works).
            Probe::PastEnd
                if i + 1 < self.index.len() && key::user_key(self.index.key(i)) == uk =>
            {
                match self.probe_block(i + 1, lookup, uk, fill)? {
                    Probe::Found(t, v) => Ok(Some((t, v))),
                    _ => Ok(None),
                }
            }
            Probe::PastEnd => Ok(None),
        }
    }

    /// Point lookups of several keys, as [`get`](Self::get) of each: `lookups` are internal
    /// seek keys in ascending order; `found(j, hit)` is called for the `j`-th of them that
    /// the table holds. The keys share the work a table does once per batch: every bloom
    /// probe's line is requested before the first is tested, so their misses overlap, and
    /// keys in one data block read it once.
    pub fn multi_get(
        &self,
        lookups: &[&[u8]],
        fill: BlockFill,
        mut found: impl FnMut(usize, (u64, Bytes)),
    ) -> Result<()> {
        if lookups.iter().any(|l| l.len() < TRAILER_LEN) {
            return Err(Error::InvalidArgument(
                "lookup key is not an internal key".into(),
            ));
        }
        let mut hashes: Vec<u64> = Vec::new();
        if let Some(f) = &self.filter {
            hashes.extend(lookups.iter().map(|l| bloom_hash(key::user_key(l))));
            for &h in &hashes {
                f.prefetch_hash(h);
            }
        }
        let mut block: Option<(usize, Block)> = None;
        for (j, &lookup) in lookups.iter().enumerate() {
            if let (Some(f), Some(&h)) = (&self.filter, hashes.get(j)) {
                if !f.may_contain_hash(h) {
                    continue;
                }
            }
            let i = self.index.find(lookup);
            if i >= self.index.len() {
                // Ascending lookups: every later one is past the table too.
                break;
            }
            let b = match &block {
                Some((at, b)) if *at == i => b.clone(),
                _ => {
                    let b = self.data_block_with(i, fill)?;
                    block = Some((i, b.clone()));
                    b
                }
            };
            let uk = key::user_key(lookup);
            match self.probe_in(b, i, lookup, uk)? {
                Probe::Found(t, v) => found(j, (t, v)),
                Probe::Absent => {}
                // As in `get`: only a separator of the key's own user key lets the next
                // block hold it.
                Probe::PastEnd
                    if i + 1 < self.index.len() && key::user_key(self.index.key(i)) == uk =>
                {
                    if let Probe::Found(t, v) = self.probe_block(i + 1, lookup, uk, fill)? {
                        found(j, (t, v));
                    }
                }
                Probe::PastEnd => {}
            }
        }
        Ok(())
    }

    fn probe_block(&self, i: usize, lookup: &[u8], uk: &[u8], fill: BlockFill) -> Result<Probe> {
        let block = self.data_block_with(i, fill)?;
        self.probe_in(block, i, lookup, uk)
    }

    /// The lookup in `block`, data block `i`.
    fn probe_in(&self, block: Block, i: usize, lookup: &[u8], uk: &[u8]) -> Result<Probe> {
        let mut it = BlockIter::with_key_buf(block, GET_KEY_BUF.take());
        it.seek(lookup);
        let probe = if it.valid() {
            let k = it.key();
            if key::user_key(k) == uk {
                Probe::Found(key::trailer(k), it.value_bytes())
            } else {
                Probe::Absent
            }
        } else {
            Probe::PastEnd
        };
        let err = it.corruption();
        GET_KEY_BUF.set(it.into_key_buf());
        match err {
            Some(r) => Err(self.corruption(self.index.handle(i).offset, r)),
            None => Ok(probe),
        }
    }

    /// The data blocks that may hold entries of user keys in `[lower, upper)`, as a range
    /// of block numbers: from the block of the first entry `>= lower` to the block of the
    /// first entry `>= upper` (every entry below `upper` is in or before it).
    pub(crate) fn blocks_spanning(&self, lower: &[u8], upper: &[u8]) -> std::ops::Range<usize> {
        let Some(end) = self.index.len().checked_sub(1) else {
            return 0..0;
        };
        let seek = |uk: &[u8]| key::make_internal_key(uk, key::MAX_SEQUENCE, key::KIND_SEEK);
        let first = self.index.find(&seek(lower));
        let last = self.index.find(&seek(upper)).min(end);
        first..(last + 1).max(first)
    }

    /// Entry `n` (from 0) of data block `block`, as (internal key, value); `None` if the
    /// block has no more than `n` entries.
    pub(crate) fn block_entry(&self, block: usize, n: usize) -> Result<Option<(Vec<u8>, Bytes)>> {
        let data = self.data_block(block)?;
        let mut it = BlockIter::new(data);
        it.seek_to_first();
        for _ in 0..n {
            if !it.valid() {
                break;
            }
            it.next();
        }
        let out = it.valid().then(|| (it.key().to_vec(), it.value_bytes()));
        match it.corruption() {
            Some(r) => Err(self.corruption(self.index.handle(block).offset, r)),
            None => Ok(out),
        }
    }

    /// An iterator over every entry; it holds a reference to the table.
    pub fn iter(self: &Arc<Self>) -> TableIter {
        TableIter::new(Arc::clone(self), BlockReads::Cached)
    }

    /// An iterator over every entry that reads its blocks as `reads` says.
    pub fn iter_with(self: &Arc<Self>, reads: BlockReads) -> TableIter {
        TableIter::new(Arc::clone(self), reads)
    }

    /// Approximate file offset where `ikey`'s data lives (or would): the offset of the block
    /// that would hold it, or the end of the data blocks if past the last key.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let i = self.index.find(ikey);
        if i < self.index.len() {
            self.index.handle(i).offset
        } else {
            self.data_end
        }
    }

    /// Number the table was opened under.
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// Name used in errors.
    pub fn file_name(&self) -> &str {
        &self.file_name
    }

    /// Bytes of the file.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Id of this reader's blocks in the cache (for [`BlockCache::erase_file`]).
    pub fn cache_id(&self) -> u64 {
        self.cache_id
    }

    /// Number of data blocks.
    pub fn num_data_blocks(&self) -> usize {
        self.index.len()
    }

    /// Bytes held in memory by the index and filter (not counting cached blocks).
    pub fn memory_usage(&self) -> usize {
        self.index.memory_usage()
            + self.filter.as_ref().map_or(0, |f| f.memory_usage())
            + self
                .props
                .block_starts
                .as_ref()
                .map_or(0, |s| s.capacity() * 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn index_of(keys: &[Vec<u8>]) -> Index {
        let mut index = Index::default();
        for (i, k) in keys.iter().enumerate() {
            index.keys.extend_from_slice(k);
            index.ends.push(index.keys.len());
            index.handles.push(BlockHandle {
                offset: i as u64,
                size: 1,
            });
        }
        index.seal();
        index
    }

    /// User keys from a small alphabet with a long shared head, so that prefixes, equal
    /// fingerprints, zero bytes and keys shorter than the prefix all occur.
    fn user_key() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        (
            proptest::sample::select(vec![&b""[..], b"ab", b"abc", b"key:0000", b"key:0001"]),
            proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'0', b'9']), 0..12),
        )
            .prop_map(|(head, tail)| [head, &tail[..]].concat())
    }

    use proptest::strategy::Strategy;

    /// The index of the distinct `uks` finds, for every target and every separator, what a
    /// search by whole keys finds.
    fn check_search(
        mut uks: Vec<Vec<u8>>,
        targets: Vec<(Vec<u8>, u64)>,
    ) -> std::result::Result<(), proptest::test_runner::TestCaseError> {
        uks.sort();
        uks.dedup();
        let keys: Vec<Vec<u8>> = uks
            .iter()
            .map(|u| make_internal_key(u, 2, ValueKind::Put))
            .collect();
        let index = index_of(&keys);
        for (uk, seq) in targets {
            let t = make_internal_key(&uk, seq, ValueKind::Put);
            proptest::prop_assert_eq!(index.find(&t), index.find_by_keys(&t), "{:?}", uk);
        }
        for k in &keys {
            proptest::prop_assert_eq!(index.find(k), index.find_by_keys(k));
        }
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn the_fingerprint_search_finds_what_the_key_search_finds(
            uks in proptest::collection::vec(user_key(), 0..40),
            targets in proptest::collection::vec((user_key(), 0u64..4), 1..40),
        ) {
            check_search(uks, targets)?;
        }
    }

    /// Keys of two families with long heads, so that runs of equal fingerprints get
    /// levels of their own, nested ones included.
    fn family_key() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        (
            proptest::sample::select(vec![
                &b"\x00n"[..],
                b"\x01\x00key:0000",
                b"\x01\x00key:0000abcdefgh",
            ]),
            proptest::collection::vec(proptest::sample::select(vec![0u8, b'0', b'1', b'9']), 0..12),
        )
            .prop_map(|(head, tail)| [head, &tail[..]].concat())
    }

    proptest::proptest! {
        #[test]
        fn runs_of_equal_fingerprints_search_as_the_keys_do(
            uks in proptest::collection::vec(family_key(), 0..300),
            targets in proptest::collection::vec((family_key(), 0u64..4), 1..60),
        ) {
            check_search(uks, targets)?;
        }
    }

    #[test]
    fn data_keys_beside_another_family_search_on_fingerprints() {
        // A counter key and an expiry key around 1,000 data keys: no prefix is shared.
        let mut uks: Vec<Vec<u8>> = vec![b"\x00count".to_vec(), b"\x02expiry".to_vec()];
        uks.extend((0..1000u32).map(|i| format!("\x01\x00key:{:012}", i * 7).into_bytes()));
        uks.sort();
        let keys: Vec<Vec<u8>> = uks
            .iter()
            .map(|u| make_internal_key(u, 1, ValueKind::Put))
            .collect();
        let index = index_of(&keys);
        assert!(index.prefix.is_empty());
        let run = &index.fps.runs[0];
        assert_eq!((run.start, run.len()), (1, 1000));
        assert_eq!(run.offset, b"\x01\x00key:00000000".len());
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(index.find(k), i);
        }
        let t = make_internal_key(b"\x01\x00key:000000000015", 9, ValueKind::Put);
        assert_eq!(index.find(&t), index.find_by_keys(&t));
    }

    #[test]
    fn the_shared_prefix_is_skipped() {
        let keys: Vec<Vec<u8>> = (0..100u32)
            .map(|i| make_internal_key(format!("features:v3:{i:08}").as_bytes(), 1, ValueKind::Put))
            .collect();
        let index = index_of(&keys);
        assert_eq!(index.prefix, b"features:v3:000000");
        let t = make_internal_key(b"features:v3:00000042", 9, ValueKind::Put);
        assert_eq!(index.find(&t), 42);
        let below = make_internal_key(b"features:v2", 9, ValueKind::Put);
        let above = make_internal_key(b"features:v4", 9, ValueKind::Put);
        let short = make_internal_key(b"features:", 9, ValueKind::Put);
        assert_eq!(index.find(&below), 0);
        assert_eq!(index.find(&above), 100);
        assert_eq!(index.find(&short), 0);
    }
}
