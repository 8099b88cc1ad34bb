//! The engine seam: small traits and shared types that every Rialto storage engine implements
//! (the LSM tree today; the B+tree later), and a conformance suite ([`conformance`]) that every
//! engine must pass.
//!
//! This crate depends on no engine. Keep the trait surface small: everything a server, the
//! transaction merger or a benchmark needs, and nothing an engine could keep to itself.

mod batch;
pub mod conformance;
mod error;
mod io_stats;
pub mod model;
mod stats;

pub use batch::{BatchMark, BatchOp, WriteBatch, WriteBatchIter};
pub use bytes::Bytes;
pub use error::{Error, Result};
pub use io_stats::{
    IoEvent, IoEventKind, IoRecorder, IoStats, IoTotals, BACKGROUND_CAPACITY,
    DEFAULT_TIMELINE_CAPACITY,
};
pub use stats::{EngineStats, LevelStats};

/// Largest key an engine accepts: 64 KiB.
pub const MAX_KEY_LEN: usize = 64 * 1024;
/// Largest value an engine accepts: 512 MiB (the Redis bulk-string limit).
pub const MAX_VALUE_LEN: usize = 512 * 1024 * 1024;

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Make the write durable (fdatasync of the WAL) before acknowledging it.
    /// Default `false`: acknowledged writes survive a process crash but not a power loss.
    pub sync: bool,
}

impl WriteOptions {
    /// Durable writes.
    pub const SYNC: WriteOptions = WriteOptions { sync: true };
}

/// Bounds and snapshot of an iterator. `lower` is inclusive, `upper` exclusive.
#[derive(Debug, Clone)]
pub struct IterOptions<S> {
    /// Inclusive lower bound; `None` is unbounded.
    pub lower: Option<Vec<u8>>,
    /// Exclusive upper bound; `None` is unbounded.
    pub upper: Option<Vec<u8>>,
    /// View to read; `None` reads the latest committed state when the iterator is created.
    pub snapshot: Option<S>,
}

impl<S> Default for IterOptions<S> {
    fn default() -> Self {
        IterOptions {
            lower: None,
            upper: None,
            snapshot: None,
        }
    }
}

/// A cursor over a consistent view of the keys within its bounds, in key order.
///
/// A fresh iterator is not positioned; call a `seek*` first. Errors met while moving
/// make the iterator invalid and are reported by [`EngineIterator::status`].
pub trait EngineIterator {
    /// Positions at the first key within bounds.
    fn seek_to_first(&mut self);
    /// Positions at the last key within bounds.
    fn seek_to_last(&mut self);
    /// Positions at the first key `>= key`.
    fn seek(&mut self, key: &[u8]);
    /// Positions at the last key `<= key`.
    fn seek_for_prev(&mut self, key: &[u8]);
    /// Moves to the next key. REQUIRES: `valid()`.
    fn next(&mut self);
    /// Moves to the previous key. REQUIRES: `valid()`.
    fn prev(&mut self);
    /// True when positioned at a key.
    fn valid(&self) -> bool;
    /// Current key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// Current value. REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

/// A key-value storage engine: ordered byte keys, atomic batches, snapshots.
///
/// Thread-safety: every method may be called concurrently from many threads.
pub trait KvEngine: Send + Sync + 'static {
    /// A consistent view; released when dropped.
    type Snapshot: Clone + Send + Sync;
    /// Iterator type.
    type Iter: EngineIterator + Send;

    /// Value of `key` in the latest committed state.
    fn get(&self, key: &[u8]) -> Result<Option<Bytes>>;
    /// Value of `key` as of `snapshot`.
    fn get_at(&self, snapshot: &Self::Snapshot, key: &[u8]) -> Result<Option<Bytes>>;
    /// Values of `keys` (duplicates allowed), in their order, all read in one committed
    /// state: what `get_at` of each at a snapshot taken first returns. Engines share the
    /// work of a batch where they can.
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Bytes>>> {
        let s = self.snapshot();
        self.multi_get_at(&s, keys)
    }
    /// Values of `keys` as of `snapshot`.
    fn multi_get_at(
        &self,
        snapshot: &Self::Snapshot,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<Bytes>>> {
        keys.iter().map(|k| self.get_at(snapshot, k)).collect()
    }
    /// Applies every operation of `batch` atomically.
    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()>;
    /// Sets `key` to `value`.
    fn put(&self, key: &[u8], value: &[u8], opts: WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b, opts)
    }
    /// Removes `key`.
    fn delete(&self, key: &[u8], opts: WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b, opts)
    }
    /// Takes a snapshot of the latest committed state.
    fn snapshot(&self) -> Self::Snapshot;
    /// An iterator over a consistent view.
    fn iter(&self, opts: IterOptions<Self::Snapshot>) -> Result<Self::Iter>;
    /// Makes every write so far durable and persisted in tables (memtables flushed).
    fn flush(&self) -> Result<()>;
    /// Compacts every table overlapping `[start, end]` (`None` = unbounded) down the tree.
    fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()>;
    /// Current statistics.
    fn stats(&self) -> EngineStats;
}

/// A point in an engine's commit order: every write up to it is included. Increases with
/// every logged write; for the LSM engine it is the sequence number of the last operation.
pub type CommitPoint = u64;

/// An engine whose commit splits into *log and apply*, *sync* and *publish*, so that a
/// transaction merger can log group N+1 while group N's sync is in flight (RavenDB's async
/// commit), and make each group visible only once it is durable.
///
/// Threads: one committer calls [`PipelinedCommit::log_and_apply`] at a time (the merger);
/// [`PipelinedCommit::sync_log`] and [`PipelinedCommit::publish`] may run concurrently with it
/// from another thread. Readers ([`KvEngine::get`], iterators, snapshots) see published writes
/// only and never wait for a sync.
pub trait PipelinedCommit: KvEngine {
    /// Writes `batch` to the journal as one write handed to the operating system (not synced)
    /// and applies it, invisible to readers until published. Returns its commit point (the
    /// current applied point for an empty batch). On an I/O error the engine turns read-only.
    fn log_and_apply(&self, batch: WriteBatch) -> Result<CommitPoint>;
    /// [`PipelinedCommit::log_and_apply`] for a caller that tells nobody about the write
    /// before a later [`PipelinedCommit::sync_log`] covers it: the journal write may stay in
    /// the process until that sync (one `write(2)` for all the groups one sync covers), so a
    /// process crash loses only unacknowledged writes. The default hands it over at once.
    fn log_and_apply_until_sync(&self, batch: WriteBatch) -> Result<CommitPoint> {
        self.log_and_apply(batch)
    }
    /// Reads the newest applied state, published or not: what read-modify-write operations
    /// executed by the committer build on.
    fn get_applied(&self, key: &[u8]) -> Result<Option<Bytes>>;
    /// Counts `n` reads the committer made for operations (not for bookkeeping) in the
    /// workload the engine tunes itself to, as reads through [`KvEngine`] count. The default
    /// counts nothing.
    fn note_reads(&self, n: u64) {
        let _ = n;
    }
    /// Iterates the newest applied state, published or not, between `lower` (inclusive) and
    /// `upper` (exclusive): the view of the committer, for operations that walk a range.
    /// REQUIRES: called by the committer between groups, so the applied state holds still.
    fn iter_applied(&self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Result<Self::Iter>;
    /// The newest applied commit point.
    fn applied_point(&self) -> CommitPoint;
    /// The newest published commit point (what readers see).
    fn published_point(&self) -> CommitPoint;
    /// Makes every write applied before the call durable (one `fdatasync`) and returns the
    /// commit point now durable. On error the engine turns read-only and stays so: no later
    /// sync is trusted (fsyncgate).
    fn sync_log(&self) -> Result<CommitPoint>;
    /// Makes every write up to `point` visible to readers. REQUIRES: `point` was applied.
    fn publish(&self, point: CommitPoint);
    /// Counters and timeline of journal, flush and compaction I/O.
    fn io_stats(&self) -> IoStats;
}
