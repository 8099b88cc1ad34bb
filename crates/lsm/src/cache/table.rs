//! The table cache: open table readers, bounded by the open-file limit.
//!
//! Opening a table reads its footer, index and filter, so readers are kept open and shared.
//! At most `capacity` are open at once; past that the least recently used are closed (their
//! in-flight users keep them alive through their `Arc`). Sharded to keep point lookups from
//! contending on one lock.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use rialto_engine::{Error, Result};
use rialto_io::Fs;

use crate::cache::BlockCache;
use crate::key::ValueKind;
use crate::memtable::Lookup;
use crate::sstable::{BlockFill, BlockReads, TableIter, TableReader};
use crate::triad::cl_table::{ClSource, ResolvingIter};
use crate::version::{table_file_name, FileMeta};

const SHARDS: usize = 16;

/// File numbers are small distinct integers: a multiplicative mix is a good enough hash and
/// much cheaper than SipHash on the point-lookup path.
#[derive(Default)]
struct NumberHasher(u64);

impl Hasher for NumberHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Shard = HashMap<u64, Entry, BuildHasherDefault<NumberHasher>>;

struct Entry {
    reader: Arc<TableReader>,
    /// The segment of a commit-log table (TRIAD-LOG).
    source: Option<Arc<ClSource>>,
    last_use: u64,
}

/// An iterator over one table, values resolved for commit-log tables.
pub type TableCursor = ResolvingIter<TableIter>;

/// Open table readers by file number.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    block_cache: Option<Arc<BlockCache>>,
    verify_checksums: bool,
    shards: Vec<Mutex<Shard>>,
    per_shard_capacity: usize,
    tick: AtomicU64,
}

impl TableCache {
    /// A cache of at most `capacity` open tables of `dir`.
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: PathBuf,
        block_cache: Option<Arc<BlockCache>>,
        capacity: usize,
        verify_checksums: bool,
    ) -> Self {
        TableCache {
            fs,
            dir,
            block_cache,
            verify_checksums,
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            per_shard_capacity: (capacity / SHARDS).max(1),
            tick: AtomicU64::new(0),
        }
    }

    fn shard(&self, number: u64) -> &Mutex<Shard> {
        &self.shards[(number as usize) % SHARDS]
    }

    /// The reader of table `file`, opening it if needed.
    pub fn reader(&self, file: &FileMeta) -> Result<Arc<TableReader>> {
        Ok(self.open(file)?.0)
    }

    /// The reader of table `file` and, for a commit-log table, its segment.
    fn open(&self, file: &FileMeta) -> Result<(Arc<TableReader>, Option<Arc<ClSource>>)> {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        if let Some(e) = self.shard(file.number).lock().get_mut(&file.number) {
            e.last_use = now;
            return Ok((Arc::clone(&e.reader), e.source.clone()));
        }
        // Open outside the lock: it does I/O.
        let name = table_file_name(file.number);
        let f = self
            .fs
            .open_read(&self.dir.join(&name))
            .map_err(|e| Error::io(format!("open table {name}"), e))?;
        if f.len() != file.file_size {
            return Err(Error::corruption(
                name,
                0,
                format!(
                    "file has {} bytes, the manifest says {}",
                    f.len(),
                    file.file_size
                ),
            ));
        }
        let reader = Arc::new(TableReader::open(
            f,
            file.number,
            name.clone(),
            self.block_cache.clone(),
            self.verify_checksums,
        )?);
        // The manifest and the table must agree on whether values are pointers: a pointer
        // returned as a value, or a value taken for a pointer, would be wrong data.
        let recorded = file.cl_segment.map(|s| s.number);
        if reader.properties().cl_segment != recorded {
            return Err(Error::corruption(
                name,
                0,
                format!(
                    "commit-log segment {:?} in the table, {recorded:?} in the manifest",
                    reader.properties().cl_segment
                ),
            ));
        }
        let source = match file.cl_segment {
            Some(seg) => Some(Arc::new(ClSource::open(&*self.fs, &self.dir, seg)?)),
            None => None,
        };
        let mut shard = self.shard(file.number).lock();
        if shard.len() >= self.per_shard_capacity {
            evict_oldest(&mut shard);
        }
        let e = shard.entry(file.number).or_insert(Entry {
            reader,
            source,
            last_use: now,
        });
        Ok((Arc::clone(&e.reader), e.source.clone()))
    }

    /// Point lookup in one table, filling the block cache as `fill` says.
    pub fn get(&self, file: &FileMeta, lookup: &[u8], fill: BlockFill) -> Result<Lookup> {
        let (reader, source) = self.open(file)?;
        Ok(match reader.get_with(lookup, fill)? {
            Some((trailer, value)) => {
                if (trailer & 0xff) as u8 == ValueKind::Put as u8 {
                    match source {
                        Some(src) => Lookup::Found(src.read(&value)?),
                        None => Lookup::Found(value),
                    }
                } else {
                    Lookup::Deleted
                }
            }
            None => Lookup::Absent,
        })
    }

    /// Point lookup in one table that also names the entry found: its trailer, and its
    /// value if it is a put (resolved for a commit-log table).
    pub fn newest(&self, file: &FileMeta, lookup: &[u8]) -> Result<Option<(u64, Option<Bytes>)>> {
        let (reader, source) = self.open(file)?;
        let Some((trailer, value)) = reader.get(lookup)? else {
            return Ok(None);
        };
        if (trailer & 0xff) as u8 != ValueKind::Put as u8 {
            return Ok(Some((trailer, None)));
        }
        let value = match source {
            Some(src) => src.read(&value)?,
            None => value,
        };
        Ok(Some((trailer, Some(value))))
    }

    /// Point lookups of several keys in one table (see [`TableReader::multi_get`]):
    /// `found(j, lookup)` for each of the ascending `lookups` the table decides.
    pub fn multi_get(
        &self,
        file: &FileMeta,
        lookups: &[&[u8]],
        fill: BlockFill,
        mut found: impl FnMut(usize, Lookup),
    ) -> Result<()> {
        let (reader, source) = self.open(file)?;
        let mut err = None;
        reader.multi_get(lookups, fill, |j, (trailer, value)| {
            if err.is_some() {
                return;
            }
            if (trailer & 0xff) as u8 != ValueKind::Put as u8 {
                return found(j, Lookup::Deleted);
            }
            match &source {
                None => found(j, Lookup::Found(value)),
                Some(src) => match src.read(&value) {
                    Ok(v) => found(j, Lookup::Found(v)),
                    Err(e) => err = Some(e),
                },
            }
        })?;
        err.map_or(Ok(()), Err)
    }

    /// An iterator over table `file` (values resolved for a commit-log table).
    pub fn iter(&self, file: &FileMeta, reads: BlockReads) -> Result<TableCursor> {
        let (reader, source) = self.open(file)?;
        Ok(ResolvingIter::new(reader.iter_with(reads), source))
    }

    /// Closes table `number` (after it was deleted).
    pub fn evict(&self, number: u64) {
        self.shard(number).lock().remove(&number);
    }

    /// Number of open tables.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// True when no table is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Closes the least recently used eighth of a full shard (amortizing the scan).
fn evict_oldest(shard: &mut Shard) {
    let mut uses: Vec<u64> = shard.values().map(|e| e.last_use).collect();
    let n = (uses.len() / 8).max(1);
    let (_, cutoff, _) = uses.select_nth_unstable(n - 1);
    let cutoff = *cutoff;
    shard.retain(|_, e| e.last_use > cutoff);
}
