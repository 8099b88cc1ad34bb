//! The database: ties the WAL, memtables, versions, table cache and background jobs together.
//!
//! Threads and locks:
//! - `writers` (a queue) serializes commits: the writer at the front is the *leader*; it merges
//!   the batches queued behind it into one WAL record (group commit), syncs once if any member
//!   asked for durability, inserts the group into the memtable and publishes the new sequence
//!   number. Only the leader touches the WAL and switches memtables.
//! - `state` guards the version set, the memtable list and background-job bookkeeping. Reads
//!   never take it: they load the current [`SuperVersion`] (memtables + version) lock-free.
//! - Background threads run flushes (oldest immutable memtable first, one at a time) and
//!   compactions (conflict-free tasks from the picker), and install results under `state`.
//!
//! Visibility: a write becomes visible when its sequence number is published, after its WAL
//! record was written (and synced, for durable writes) and inserted into the memtable. The
//! classic path publishes at once; the pipelined path (`PipelinedCommit`, used by the
//! transaction merger) publishes only after a later `sync_log` covered it, so `applied_seq`
//! may run ahead of `visible_seq`. A reader loads the published sequence *before* the super
//! version, so the super version holds every write up to that sequence.

mod idle;
mod ingest;
mod iter;
mod multi_get;
mod recovery;
mod sample;
mod triad;
mod warm;
pub use ingest::{IngestOptions, IngestStats, Ingestion};
pub(crate) use recovery::lock_dir;
pub use sample::Sampler;
mod write;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex, MutexGuard};
use rialto_engine::{
    CommitPoint, EngineStats, Error, IoEvent, IoEventKind, IoRecorder, IoStats, IterOptions,
    KvEngine, PipelinedCommit, Result, WriteBatch, WriteOptions,
};
use rialto_io::{FileLock, Fs};

use crate::cache::table::TableCache;
use crate::cache::BlockCache;
use crate::compaction::picker::{self, CompactionTask, PickerOptions};
use crate::compaction::{self, CacheBudget, Gc, OutputContext, OutputPolicy};
use crate::iter::db::DbIter;
use crate::iter::level::LevelIter;
use crate::iter::merge::MergingIterator;
use crate::iter::{BoxedIter, InternalIterator};
use crate::key::{self, SequenceNumber, ValueKind, KIND_SEEK};
use crate::memtable::{Lookup, MemTable};
use crate::options::{Compression, Options};
use crate::sstable::{BlockFill, BlockReads, TableBuildOptions};
use crate::throttle::JournalFirst;
use crate::triad::cl_table::{ClSegment, PointerIter, SegmentIndex};
use crate::triad::hot::HotSelector;
use crate::version::{FileMeta, Version, VersionEdit, VersionSet};
use crate::wal::prepare::SpareSegment;
use crate::wal::{self, WalWriter};
use write::WriteQueue;

/// What readers load: the memtables and the version, swapped atomically as one.
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub(crate) imms: Vec<Arc<MemTable>>,
    pub(crate) version: Arc<Version>,
}

/// Bookkeeping guarded by `DbInner::state`.
pub(crate) struct State {
    pub(crate) versions: VersionSet,
    pub(crate) mem: Arc<MemTable>,
    /// Immutable memtables, oldest first (flush order).
    pub(crate) imms: Vec<Arc<MemTable>>,
    flush_running: bool,
    running_compactions: usize,
    /// Files under compaction.
    compacting: HashSet<u64>,
    /// Numbers of files being written that no version references yet.
    pending_outputs: HashSet<u64>,
    /// Every version some reader may still use, for deciding which files are obsolete.
    live_versions: Vec<Weak<Version>>,
    /// Obsolete files some thread is removing (see `remove_files`): no other takes them.
    removing: HashSet<String>,
    /// Row-cache warm-up (see `warm.rs`).
    pub(crate) warm: warm::WarmState,
    /// When writes last moved (see `idle.rs`).
    pub(crate) quiet: idle::Quiet,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) user_bytes: AtomicU64,
    pub(crate) wal_bytes: AtomicU64,
    pub(crate) wal_syncs: AtomicU64,
    pub(crate) flush_bytes: AtomicU64,
    pub(crate) compaction_bytes_written: AtomicU64,
    pub(crate) compaction_bytes_read: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) stall_micros: AtomicU64,
    pub(crate) ingest_bytes: AtomicU64,
    /// Zeros written to prepare WAL segments ahead.
    pub(crate) wal_prepare_bytes: AtomicU64,
    /// Rows the row-cache warm-up inserted.
    pub(crate) warmed_rows: AtomicU64,
    /// Compactions started only because writes paused (see `idle.rs`).
    pub(crate) idle_compactions: AtomicU64,
}

pub(crate) struct DbInner {
    pub(crate) opts: Options,
    pub(crate) dir: PathBuf,
    pub(crate) fs: Arc<dyn Fs>,
    _lock: Box<dyn FileLock>,
    pub(crate) tables: Arc<TableCache>,
    block_cache: Option<Arc<BlockCache>>,
    /// Recently read values; every applied write invalidates its keys first.
    pub(crate) row_cache: Option<crate::cache::row::RowCache>,
    pub(crate) state: Mutex<State>,
    /// Wakes background threads.
    bg_cv: Condvar,
    /// Signalled whenever a flush or compaction finishes (or fails).
    done_cv: Condvar,
    sv: ArcSwap<SuperVersion>,
    /// Largest sequence number visible to readers (published).
    pub(crate) visible_seq: AtomicU64,
    /// Largest sequence number logged and inserted into the memtable, published or not.
    /// Invariant: `visible_seq <= applied_seq`; only the commit leader raises it.
    pub(crate) applied_seq: AtomicU64,
    /// I/O counters and timeline.
    pub(crate) io: IoRecorder,
    /// Paces background writes when journal syncs slow down.
    pub(crate) journal_first: Arc<JournalFirst>,
    pub(crate) writers: WriteQueue,
    /// The active segment. Lock order: `state` before `wal` (a memtable switch and
    /// TRIAD-MEM's re-logging hold both); never `state` while holding `wal`.
    pub(crate) wal: Mutex<Option<WalWriter>>,
    /// The next WAL segment, prepared ahead when syncs are frequent.
    pub(crate) spare: SpareSegment,
    /// Set once when a write, sync or background job fails: the engine refuses writes.
    read_only: Mutex<Option<String>>,
    read_only_flag: AtomicBool,
    shutting_down: AtomicBool,
    /// Live snapshots: sequence → count.
    snapshots: Mutex<BTreeMap<SequenceNumber, usize>>,
    pub(crate) counters: Counters,
    /// Point reads and iterators so far: the row-cache warm-up waits for them to pause and
    /// stops when they come (`db/warm.rs`).
    pub(crate) reads: AtomicU64,
    /// Entries every iterator examined, added as each is dropped.
    pub(crate) iter_entries: Arc<AtomicU64>,
    /// TRIAD: the characterizer and the tuning in force.
    pub(crate) triad: triad::TriadState,
    /// The compression of the tables flushes and compactions write from now on
    /// (`Options::compression`, changed by `Db::set_compression`).
    pub(crate) compression: AtomicU8,
}

/// An open LSM database. Cheap to share across threads by reference or `Arc`.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Vec<JoinHandle<()>>,
}

/// A consistent read view. Released when the last clone is dropped.
#[derive(Clone)]
pub struct Snapshot(Arc<SnapshotInner>);

struct SnapshotInner {
    seq: SequenceNumber,
    db: Weak<DbInner>,
}

impl Snapshot {
    /// Sequence number the snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.0.seq
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({})", self.0.seq)
    }
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        if let Some(db) = self.db.upgrade() {
            let mut s = db.snapshots.lock();
            if let Some(c) = s.get_mut(&self.seq) {
                *c -= 1;
                if *c == 0 {
                    s.remove(&self.seq);
                }
            }
        }
    }
}

enum Job {
    Flush(Arc<MemTable>),
    Compact(CompactionTask),
    PrepareWal,
    WarmRows,
}

impl Db {
    /// Opens (or creates, per the options) the database in `path`, recovering from its WAL.
    /// A directory held by another open database fails with [`Error::Locked`].
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = recovery::open(path.as_ref(), opts)?;
        let inner = Arc::new(inner);
        // Zero threads is the inline mode: see `Options::max_background_jobs`.
        let n = inner.opts.max_background_jobs;
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let db = Arc::clone(&inner);
            let t = std::thread::Builder::new()
                .name(format!("rialto-bg-{i}"))
                .spawn(move || {
                    if let Err(e) = rialto_io::lower_thread_priority(db.opts.background_nice) {
                        tracing::warn!(error = %e, "cannot lower a background thread's priority");
                    }
                    db.background_loop()
                })
                .map_err(|e| Error::io("spawn background thread", e))?;
            threads.push(t);
        }
        inner.bg_cv.notify_all();
        if inner.inline_background() {
            // Work recovery left due (an L0 over its trigger) runs now, as a thread would.
            inner.run_background_inline();
        }
        Ok(Db { inner, threads })
    }

    /// A sampler of the published state: its draws return live entries of the user-key
    /// ranges `[lower, upper)` (disjoint), each live key equally likely (see `sample.rs`).
    pub fn sampler(&self, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Sampler> {
        self.inner.record_read();
        Sampler::new(&self.inner, ranges)
    }

    /// Syncs the WAL, stops background work and closes the database.
    pub fn close(mut self) -> Result<()> {
        let r = self.inner.sync_wal();
        self.shutdown(r.is_ok());
        r
    }

    /// Stops background work; with `seal`, seals the active WAL segment (see
    /// [`WalWriter::seal`](crate::wal::WalWriter::seal)) once nothing else writes to it.
    fn shutdown(&mut self, seal: bool) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        {
            let _s = self.inner.state.lock();
            self.inner.bg_cv.notify_all();
            self.inner.done_cv.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if seal {
            self.inner.seal_wal();
        }
        self.inner.release_wal_preallocation();
        // A closed database occupies what it holds; the next open prepares anew.
        SpareSegment::remove_leftovers(&*self.inner.fs, &self.inner.dir);
    }

    /// The reason the engine refuses writes, if it does.
    pub fn read_only_reason(&self) -> Option<String> {
        self.inner.read_only.lock().clone()
    }

    /// A hint that `get` of these keys follows (a pipeline of reads): starts loading their
    /// row-cache entries into the CPU cache so the misses overlap (see `cache/row.rs`). No
    /// effect without a row cache.
    pub fn prefetch(&self, keys: &[&[u8]]) {
        if let Some(rc) = &self.inner.row_cache {
            rc.prefetch(keys);
        }
    }

    /// The compression of the tables flushes and compactions write from now on.
    pub fn compression(&self) -> Compression {
        self.inner.compression()
    }

    /// Changes the compression of the tables flushes and compactions write: those that start
    /// after the change (a table being written keeps the codec it began with). Tables already
    /// written keep theirs; each block records the codec it was written with.
    pub fn set_compression(&self, c: Compression) {
        self.inner
            .compression
            .store(compression_code(c), Ordering::Relaxed);
    }

    /// Database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Makes every acknowledged write durable (syncs the WAL).
    pub fn sync_wal(&self) -> Result<()> {
        self.inner.sync_wal()
    }

    /// Waits until no flush or compaction is pending or running.
    pub fn wait_for_background_work(&self) -> Result<()> {
        let inner = &self.inner;
        let opts = inner.picker_options();
        let mut st = inner.state.lock();
        loop {
            inner.check_writable()?;
            let busy = st.flush_running
                || !st.imms.is_empty()
                || st.running_compactions > 0
                || !st.removing.is_empty()
                || inner.compaction_due(&mut st, &opts);
            if !busy {
                return Ok(());
            }
            inner.wait_for_progress(&mut st);
        }
    }

    /// The I/O totals with only the newest `limit` events of the timeline (`io_stats` copies
    /// all of them): what a frequent poller takes, to hold the recorder's lock briefly.
    pub fn io_stats_recent(&self, limit: usize) -> IoStats {
        let mut s = self.inner.io.recent(limit);
        s.background_rate_limit = self.inner.journal_first.rate();
        s.background_throttled_micros = self.inner.journal_first.throttled_micros();
        s
    }

    /// TRIAD's state: the deferral and the characterizer's class, windows and decisions.
    pub fn triad_stats(&self) -> crate::triad::TriadStats {
        self.inner.triad.stats()
    }

    /// Number of table files at `level`.
    pub fn num_files_at_level(&self, level: usize) -> usize {
        self.inner
            .sv
            .load()
            .version
            .levels
            .get(level)
            .map_or(0, |l| l.len())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.shutdown(false);
    }
}

/// [`Compression`] as `DbInner::compression` holds it.
pub(crate) fn compression_code(c: Compression) -> u8 {
    match c {
        Compression::None => 0,
        Compression::Lz4 => 1,
        Compression::Zstd => 2,
    }
}

fn compression_of(code: u8) -> Compression {
    match code {
        1 => Compression::Lz4,
        2 => Compression::Zstd,
        _ => Compression::None,
    }
}

fn compact_pointers(v: &VersionSet) -> Vec<Vec<u8>> {
    (0..v.current().num_levels())
        .map(|l| v.compact_pointer(l).to_vec())
        .collect()
}

impl DbInner {
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.read_only_flag.load(Ordering::Acquire) {
            let r = self.read_only.lock().clone().unwrap_or_default();
            return Err(Error::ReadOnly(r));
        }
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// The compression of the tables flushes and compactions write from now on.
    pub(crate) fn compression(&self) -> Compression {
        compression_of(self.compression.load(Ordering::Relaxed))
    }

    /// Turns the engine read-only after a failed write, sync or background job. Never undone:
    /// after a failed fsync the state of the file is unknown, so only a reopen (which recovers
    /// from what is really on disk) may write again.
    /// REQUIRES: `state` not held by the caller (see [`DbInner::set_read_only_locked`]).
    /// Turns the engine read-only without notifying waiters, for a caller that must not take
    /// the state lock (it holds the WAL lock); it calls [`DbInner::set_read_only`] after.
    pub(crate) fn mark_read_only(&self, e: &Error) {
        let mut r = self.read_only.lock();
        if r.is_none() {
            tracing::error!(error = %e, "engine turns read-only");
            *r = Some(e.to_string());
            self.read_only_flag.store(true, Ordering::Release);
        }
    }

    pub(crate) fn set_read_only(&self, e: &Error) {
        let st = self.state.lock();
        self.set_read_only_locked(e, &st);
    }

    /// [`DbInner::set_read_only`] for a caller holding `state`; waiters on the condition
    /// variables check the flag under `state`, so notifying under it loses no wakeup.
    pub(crate) fn set_read_only_locked(&self, e: &Error, _st: &State) {
        self.mark_read_only(e);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
    }

    /// Seals the active WAL segment at a clean close, so that damage found in it later is
    /// reported as corruption rather than cut as a torn tail. Best effort: an unsealed segment
    /// recovers the same, only with less proof.
    fn seal_wal(&self) {
        if self.read_only_flag.load(Ordering::Acquire) {
            return;
        }
        let _leader = self.writers.exclusive();
        if let Some(w) = self.wal.lock().as_mut().filter(|w| !w.is_empty()) {
            if let Err(e) = self.timed_sync(|| w.seal()) {
                tracing::warn!(error = %e, "sealing the WAL at close failed");
                self.mark_read_only(&e);
            }
        }
    }

    /// Gives back the space reserved past the end of the active WAL segment (preallocation),
    /// so a closed database occupies what it holds. Best effort: the zeros past the end read as
    /// the segment's clean end anyway, with or without it.
    fn release_wal_preallocation(&self) {
        if self.read_only_flag.load(Ordering::Acquire) {
            // After a failed write or sync the file's state is unknown: leave it to recovery.
            return;
        }
        let _leader = self.writers.exclusive();
        if let Some(w) = self.wal.lock().as_ref() {
            let path = crate::wal::segment_path(&self.dir, w.number());
            if let Err(e) = self.fs.truncate(&path, w.len()) {
                tracing::debug!(error = %e, "releasing the WAL preallocation failed");
            }
        }
    }

    fn sync_wal(&self) -> Result<()> {
        // Take the commit path so no leader writes while we sync.
        let _leader = self.writers.exclusive();
        let r = match self.wal.lock().as_mut() {
            Some(w) => self.timed_sync(|| w.sync()),
            None => Ok(()),
        };
        match r {
            Ok(()) => {
                // Everything applied is durable now.
                self.publish(self.applied_seq.load(Ordering::Acquire));
                Ok(())
            }
            Err(e) => {
                self.set_read_only(&e);
                Err(e)
            }
        }
    }

    pub(crate) fn install_super_version(&self, st: &mut State) {
        let version = st.versions.current();
        st.live_versions.retain(|w| w.strong_count() > 0);
        st.live_versions.push(Arc::downgrade(&version));
        self.sv.store(Arc::new(SuperVersion {
            mem: Arc::clone(&st.mem),
            imms: st.imms.iter().rev().cloned().collect(),
            version,
        }));
    }

    /// The picker's options, with TRIAD-DISK's rule as currently tuned.
    pub(crate) fn picker_options(&self) -> PickerOptions {
        PickerOptions {
            l0_deferral: self.triad.deferral_rule(&self.opts),
            compact_commit_log: !self.triad.log_active(),
            ..PickerOptions::from_options(&self.opts)
        }
    }

    pub(crate) fn notify_background(&self) {
        self.bg_cv.notify_all();
    }

    /// Wakes the background threads from a caller that does not hold the state lock.
    /// Notified under it, so that a thread between its look for work and its wait cannot
    /// miss it. Inline mode runs the work at the next write or flush.
    pub(crate) fn wake_background(&self) {
        let _st = self.state.lock();
        self.bg_cv.notify_all();
    }

    /// The characterizer changed the tuning: the picker may now choose work it deferred (L0
    /// files under a lower overlap threshold, commit-log tables once flushes stop writing
    /// them). In a phase of reads alone no flush or compaction would end to wake the
    /// background threads, and that work would wait for the next write while every read
    /// paid for it. Notified under the state lock, so that a thread between its look for
    /// work and its wait cannot miss it. Inline mode runs it at the next write or flush.
    pub(crate) fn retuned(&self) {
        self.wake_background();
    }

    /// Counts a read for the characterizer, and wakes the background threads if that retuned.
    #[inline]
    fn record_read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        if self.triad.record_read() {
            self.retuned();
        }
    }

    fn record_reads(&self, n: usize) {
        self.reads.fetch_add(n as u64, Ordering::Relaxed);
        if self.triad.record_reads(n as u64) {
            self.retuned();
        }
    }

    /// Whether flushes and compactions run on the calling threads instead of background
    /// threads (`max_background_jobs == 0`).
    pub(crate) fn inline_background(&self) -> bool {
        self.opts.max_background_jobs == 0
    }

    /// Waits until background work made progress, then returns for the caller to re-check
    /// its condition. In inline mode it runs the due work on this thread instead (with the
    /// state lock released); it only sleeps when another thread is running a job, whose end
    /// notifies `done_cv`. The check and the wait happen under one lock hold, so that
    /// notification cannot be missed.
    pub(crate) fn wait_for_progress(&self, st: &mut MutexGuard<'_, State>) {
        if self.inline_background() {
            if MutexGuard::unlocked(st, || self.run_background_inline()) {
                return;
            }
            if !st.flush_running && st.running_compactions == 0 && st.removing.is_empty() {
                return;
            }
        }
        self.bg_cv.notify_all();
        self.done_cv.wait(st);
    }

    /// Inline mode: runs due flushes and compactions on this thread until none is due.
    /// Returns whether any ran.
    pub(crate) fn run_background_inline(&self) -> bool {
        let mut ran = false;
        loop {
            let job = self.next_job(&mut self.state.lock(), &self.picker_options());
            let Some(job) = job else {
                return ran;
            };
            self.run_job(job);
            ran = true;
        }
    }

    fn snapshot_list(&self) -> Vec<SequenceNumber> {
        self.snapshots.lock().keys().copied().collect()
    }

    /// What a flush or compaction must preserve: the live snapshots plus the published
    /// sequence (readers that hold no snapshot read there, and writes above it may still be
    /// unpublished), and the newest applied sequence.
    fn gc_view(&self) -> (Vec<SequenceNumber>, SequenceNumber) {
        let mut s = self.snapshot_list();
        s.push(self.visible_seq.load(Ordering::Acquire));
        (s, self.applied_seq.load(Ordering::Acquire))
    }

    /// The value of `user_key` at `seq`; `fill` says what block reads do to the block cache.
    fn get_at_seq(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        fill: BlockFill,
    ) -> Result<Option<Bytes>> {
        let sv = self.sv.load();
        let mut lookup = Lookup::Absent;
        for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            lookup = m.get(user_key, seq);
            if lookup != Lookup::Absent {
                break;
            }
        }
        if lookup == Lookup::Absent {
            let ikey = key::make_internal_key(user_key, seq, KIND_SEEK);
            lookup = sv.version.get(&self.tables, &ikey, fill)?;
        }
        Ok(match lookup {
            Lookup::Found(v) => Some(v),
            Lookup::Deleted | Lookup::Absent => None,
        })
    }

    // ---- background work ----

    fn background_loop(self: Arc<Self>) {
        loop {
            let job = {
                let mut st = self.state.lock();
                loop {
                    if self.shutting_down.load(Ordering::Acquire) {
                        return;
                    }
                    // Rebuilt each time: the characterizer may have retuned the deferral.
                    let popts = self.picker_options();
                    if let Some(job) = self.next_job(&mut st, &popts) {
                        break job;
                    }
                    // Idle compaction and a warm-up wait for writes to pause, which
                    // notifies nobody.
                    let wait = match (self.idle_wait(&mut st, &popts), self.warm_wait(&mut st)) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    match wait {
                        Some(d) => {
                            self.bg_cv.wait_for(&mut st, d);
                        }
                        None => self.bg_cv.wait(&mut st),
                    }
                }
            };
            self.run_job(job);
        }
    }

    /// The next due job, marked as running in `st`: the oldest immutable memtable's flush
    /// (one at a time, so L0 gets them in order), else a compaction the picker chooses (at
    /// most `max_background_jobs - 1` at once, at least one). None when read-only.
    fn next_job(&self, st: &mut State, popts: &PickerOptions) -> Option<Job> {
        if self.read_only_flag.load(Ordering::Acquire) {
            return None;
        }
        if !st.flush_running {
            if let Some(m) = st.imms.first() {
                let m = Arc::clone(m);
                st.flush_running = true;
                return Some(Job::Flush(m));
            }
        }
        // Before compactions: the spare must be ready by the next switch, and it is bounded
        // work (one segment of zeros).
        if self.spare.claim_job() {
            return Some(Job::PrepareWal);
        }
        let max_compactions = self.opts.max_background_jobs.saturating_sub(1).max(1);
        if st.running_compactions < max_compactions {
            if let Some(t) = self.pick_compaction(st, popts) {
                st.compacting.extend(t.all_inputs().map(|f| f.number));
                st.running_compactions += 1;
                return Some(Job::Compact(t));
            }
        }
        // Last: it only fills free cache room, and nothing else must be due.
        if self.warm_due(st) {
            st.warm.running = true;
            return Some(Job::WarmRows);
        }
        None
    }

    /// Runs a job from [`Self::next_job`]; a failure turns the engine read-only.
    fn run_job(&self, job: Job) {
        let r = match job {
            Job::Flush(m) => self.flush_memtable(&m),
            Job::Compact(t) => self.run_compaction(t),
            Job::PrepareWal => {
                self.prepare_spare();
                Ok(())
            }
            Job::WarmRows => {
                self.warm_rows();
                Ok(())
            }
        };
        if let Err(e) = r {
            if !matches!(e, Error::Closed) {
                self.set_read_only(&e);
            }
        }
        let _st = self.state.lock();
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
    }

    fn output_context<'a>(
        &'a self,
        new_file_number: &'a dyn Fn() -> u64,
        grandparents: &'a [Arc<crate::version::FileMeta>],
        target_file_size: u64,
    ) -> OutputContext<'a> {
        OutputContext {
            fs: &*self.fs,
            dir: &self.dir,
            table_options: TableBuildOptions {
                compression: self.compression(),
                ..TableBuildOptions::from_options(&self.opts)
            },
            compression_for: self.opts.compression_for.as_ref(),
            new_file_number,
            target_file_size,
            grandparents,
            max_grandparent_overlap: PickerOptions::from_options(&self.opts)
                .max_grandparent_overlap(),
            shutting_down: &self.shutting_down,
            policy: self.output_policy(None, true),
            partitioner: self.opts.partitioner.as_ref(),
        }
    }

    /// How background writers write tables: paced behind the journal when the throttle is
    /// on, written back every `bytes_per_sync` (waiting for the previous write-back with
    /// `wait_behind`), cached as `cache` allows.
    fn output_policy(&self, cache: Option<Arc<CacheBudget>>, wait_behind: bool) -> OutputPolicy {
        OutputPolicy {
            throttle: self
                .opts
                .throttle
                .enabled
                .then(|| Arc::clone(&self.journal_first)),
            bytes_per_sync: self.opts.throttle.bytes_per_sync,
            wait_behind,
            cache,
        }
    }

    fn allocate_output(&self) -> u64 {
        let mut st = self.state.lock();
        let n = st.versions.new_file_number();
        st.pending_outputs.insert(n);
        n
    }

    /// Prepares the next WAL segment. A failure costs nothing but the faster syncs: it never
    /// turns the engine read-only (no acknowledged data is involved).
    fn prepare_spare(&self) {
        let throttle = self.opts.throttle.enabled.then_some(&self.journal_first);
        let r = self.spare.prepare(
            &*self.fs,
            &self.dir,
            throttle,
            &self.shutting_down,
            &self.counters.wal_prepare_bytes,
        );
        if let Err(e) = r {
            if !self.shutting_down.load(Ordering::Acquire) {
                tracing::warn!(error = %e, "preparing the next WAL segment failed; the next one is preallocated");
            }
        }
    }

    /// Writes the oldest immutable memtable `m` to an L0 table and installs it.
    fn flush_memtable(&self, m: &Arc<MemTable>) -> Result<()> {
        let r = self.flush_memtable_inner(m);
        let doomed = {
            let mut st = self.state.lock();
            st.flush_running = false;
            if r.is_ok() {
                self.obsolete_files(&mut st)
            } else {
                Vec::new()
            }
        };
        self.remove_files(doomed);
        r
    }

    fn flush_memtable_inner(&self, m: &Arc<MemTable>) -> Result<()> {
        let start = self.opts.clock.now_micros();
        // TRIAD-MEM: hot keys' newest entries are re-logged and moved to the active
        // memtable first; then the table gets everything else.
        let kept = if self.triad.hot_cold_active() {
            self.keep_hot(m)?
        } else {
            HashSet::new()
        };
        // TRIAD-LOG: an index over the memtable's segment instead of a copy of its values.
        let index = if self.triad.log_active() {
            match SegmentIndex::build(&*self.fs, &self.dir, m.wal_number()) {
                Ok(index) => Some(index),
                Err(e) => {
                    tracing::warn!(error = %e, segment = m.wal_number(),
                        "commit-log flush impossible; writing an ordinary table");
                    self.triad.note_log_flush(false);
                    None
                }
            }
        } else {
            None
        };
        let outputs = match &index {
            Some(index) => match self.write_flush_tables(m, &kept, Some(index)) {
                Ok(mut outputs) => {
                    let seg = ClSegment {
                        number: m.wal_number(),
                        size: index.end,
                    };
                    // The segment is now a table's data file: its preallocated tail goes.
                    // Best effort; the bytes past `end` are zeros either way.
                    let path = wal::segment_path(&self.dir, seg.number);
                    if let Err(e) = self.fs.truncate(&path, seg.size) {
                        tracing::debug!(error = %e, "trimming a commit-log segment failed");
                    }
                    for f in &mut outputs {
                        f.cl_segment = Some(seg);
                    }
                    self.triad.note_log_flush(true);
                    outputs
                }
                Err(e) if e.is_corruption() => {
                    // A write the segment does not hold as the memtable does: a bug, never
                    // a reason to lose the flush.
                    tracing::error!(error = %e, "commit-log flush failed; writing an ordinary table");
                    self.triad.note_log_flush(false);
                    self.write_flush_tables(m, &kept, None)?
                }
                Err(e) => return Err(e),
            },
            None => self.write_flush_tables(m, &kept, None)?,
        };
        self.fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io("sync database directory", e))?;
        // Durable tables the manifest does not name: orphans to remove at the next open.
        rialto_killpoint::kill_point("flush.table_written");

        let mut st = self.state.lock();
        debug_assert!(st.imms.first().is_some_and(|f| Arc::ptr_eq(f, m)));
        // Every WAL segment older than the next memtable's is now fully in tables.
        let next_wal = st.imms.get(1).unwrap_or(&st.mem).wal_number();
        let bytes: u64 = outputs.iter().map(|f| f.file_size).sum();
        let edit = VersionEdit {
            log_number: Some(next_wal),
            last_sequence: Some(m.largest_seq()),
            added: outputs.iter().map(|f| (0, f.clone())).collect(),
            ..Default::default()
        };
        let r = st.versions.log_and_apply(edit);
        for f in &outputs {
            st.pending_outputs.remove(&f.number);
        }
        r?;
        st.imms.remove(0);
        self.install_super_version(&mut st);
        self.triad.note_level0(picker::level0_status(
            &st.versions.current(),
            &st.compacting,
            &self.picker_options(),
        ));
        self.io.record(
            IoEvent::new(
                IoEventKind::Flush,
                start,
                self.opts.clock.now_micros().saturating_sub(start),
                bytes,
            )
            .with_tables(
                u32::try_from(outputs.len()).unwrap_or(u32::MAX),
                outputs.iter().map(|f| f.num_entries).sum(),
                0,
            ),
        );
        self.counters
            .flush_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Writes memtable `m` (less the `kept` hot keys' newest entries) to L0 tables: ordinary
    /// ones, or with `index` (its segment's), commit-log tables whose values point into the
    /// segment. The tables are synced; the directory is not yet.
    fn write_flush_tables(
        &self,
        m: &Arc<MemTable>,
        kept: &HashSet<Vec<u8>>,
        index: Option<&SegmentIndex>,
    ) -> Result<Vec<FileMeta>> {
        let (snapshots, last) = self.gc_view();
        let never_bottom = |_: &[u8]| false;
        let mut gc = Gc::new(snapshots, last, &never_bottom);
        let alloc = || self.allocate_output();
        let mut ctx = self.output_context(&alloc, &[], u64::MAX);
        ctx.table_options.cl_segment = index.map(|_| m.wal_number());
        let mut last_user = Vec::new();
        let mut seen = false;
        let mut divert = |ikey: &[u8], _: &[u8]| {
            if kept.is_empty() {
                return false;
            }
            let uk = key::user_key(ikey);
            if seen && last_user == uk {
                // An older version a snapshot still needs: it goes to the table.
                return false;
            }
            seen = true;
            last_user.clear();
            last_user.extend_from_slice(uk);
            // The newest entry of a kept key: `gc` always keeps it, and it lives on in the
            // active memtable now.
            kept.contains(uk)
        };
        // Without an index the values pass through unchanged.
        let mut it = PointerIter::new(m.iter(), index);
        it.seek_to_first();
        compaction::write_tables_diverting(&mut it, &mut gc, &ctx, &mut divert)
    }

    /// TRIAD-MEM: the hot keys of `m`, the memtable being flushed.
    fn hot_keys(&self, m: &Arc<MemTable>) -> HashSet<Vec<u8>> {
        let mut sel = HotSelector::new(self.triad.hot_min_updates());
        let mut it = m.iter();
        it.seek_to_first();
        while it.valid() {
            let k = it.key();
            sel.add(
                key::user_key(k),
                k.len() - key::TRAILER_LEN + it.value().len(),
            );
            it.next();
        }
        sel.finish(self.triad.hot_budget(self.opts.write_buffer_size))
    }

    /// TRIAD-MEM, at the start of the flush of `m` (the oldest immutable memtable): moves
    /// the newest entries of `m`'s hot keys into the active memtable and returns those keys,
    /// which the flush then leaves out of its table.
    ///
    /// Each entry is re-logged, with its own sequence number, to the active memtable's WAL
    /// segment, and inserted there, both under the state and WAL locks (no memtable switch
    /// and no write in between); the sync follows, before the flush can install its edit
    /// (which retires `m`'s segment). Only when `m` is the only immutable memtable: then the
    /// active one directly follows it and holds only newer writes, so the entry keeps its
    /// place in every key's version order, and its record lives exactly as long as the
    /// memtable holding it. Recovery replays a segment into one memtable, so records out
    /// of sequence order within a segment are harmless.
    fn keep_hot(&self, m: &Arc<MemTable>) -> Result<HashSet<Vec<u8>>> {
        if self.state.lock().imms.len() != 1 {
            return Ok(HashSet::new());
        }
        let hot = self.hot_keys(m);
        if hot.is_empty() {
            return Ok(hot);
        }
        // The newest entry of each hot key: the first of its entries in internal-key order.
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(hot.len());
        let mut it = m.iter();
        it.seek_to_first();
        let mut last_user: Option<&Vec<u8>> = None;
        while it.valid() {
            let uk = key::user_key(it.key());
            if last_user.is_none_or(|l| l.as_slice() != uk) {
                last_user = hot.get(uk);
                if last_user.is_some() {
                    entries.push((it.key().to_vec(), it.value().to_vec()));
                }
            }
            it.next();
        }
        let mut bytes = 0u64;
        let syncer = {
            let st = self.state.lock();
            if st.imms.len() != 1 {
                return Ok(HashSet::new());
            }
            let mut wal = self.wal.lock();
            // Checked under the WAL lock: a writer whose append failed turned the engine
            // read-only while holding it, and a record appended after its torn bytes would
            // turn a torn tail into corruption in the middle of the segment.
            self.check_writable()?;
            let w = wal.as_mut().ok_or(Error::Closed)?;
            let mut batch = WriteBatch::new();
            for (ikey, value) in &entries {
                let p = key::parse(ikey).ok_or_else(|| {
                    Error::corruption("memtable", 0, "malformed internal key in a flush")
                })?;
                batch.clear();
                match p.kind {
                    ValueKind::Put => batch.put(p.user_key, value),
                    ValueKind::Delete => batch.delete(p.user_key),
                }
                let (prefix, prefix_len) = wal::batch_prefix(p.seq, 1);
                let before = w.len();
                let logged =
                    w.add_record_parts(wal::KIND_BATCH, &[&prefix[..prefix_len], batch.ops_data()]);
                if let Err(e) = logged {
                    self.set_read_only_locked(&e, &st);
                    return Err(e);
                }
                bytes += w.len() - before;
                st.mem.insert_batch(&batch, p.seq);
            }
            w.syncer()
        };
        if let Err(e) = self.timed_sync(|| syncer.sync()) {
            self.set_read_only(&e);
            return Err(e);
        }
        rialto_killpoint::kill_point("flush.hot_relogged");
        self.counters.wal_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.triad.note_hot(entries.len() as u64, bytes);
        Ok(hot)
    }

    fn run_compaction(&self, task: CompactionTask) -> Result<()> {
        let r = self.run_compaction_inner(&task);
        let doomed = {
            let mut st = self.state.lock();
            for f in task.all_inputs() {
                st.compacting.remove(&f.number);
            }
            st.running_compactions -= 1;
            if r.is_ok() {
                self.obsolete_files(&mut st)
            } else {
                Vec::new()
            }
        };
        self.remove_files(doomed);
        r
    }

    fn run_compaction_inner(&self, task: &CompactionTask) -> Result<()> {
        let out_level = task.output_level();
        let mut edit = VersionEdit::default();
        for f in &task.inputs {
            edit.deleted.push((task.level, f.number));
        }
        for f in &task.next_inputs {
            edit.deleted.push((out_level, f.number));
        }
        if let Some(last) = task.inputs.iter().map(|f| f.largest_user()).max() {
            edit.compact_pointers.push((task.level, last.to_vec()));
        }
        if task.trivial_move {
            for f in &task.inputs {
                edit.added.push((out_level, (**f).clone()));
            }
            let mut st = self.state.lock();
            st.versions.log_and_apply(edit)?;
            self.install_super_version(&mut st);
            return Ok(());
        }

        let start = self.opts.clock.now_micros();
        let version = self.sv.load().version.clone();
        let mut children: Vec<BoxedIter> = Vec::new();
        // Inputs are read once, front to back: around the block cache.
        let reads = BlockReads::Streaming;
        if task.level == 0 {
            for f in &task.inputs {
                children.push(Box::new(self.tables.iter(f, reads)?));
            }
        } else {
            children.push(Box::new(LevelIter::new(
                task.inputs.clone(),
                Arc::clone(&self.tables),
                reads,
            )));
        }
        if !task.next_inputs.is_empty() {
            children.push(Box::new(LevelIter::new(
                task.next_inputs.clone(),
                Arc::clone(&self.tables),
                reads,
            )));
        }
        let mut input = MergingIterator::new(children);
        input.seek_to_first();

        let (snapshots, last) = self.gc_view();
        let bottommost = |uk: &[u8]| version.is_bottommost_for(out_level, uk);
        let mut gc = Gc::new(snapshots, last, &bottommost);
        let alloc = || self.allocate_output();
        let ctx = self.output_context(&alloc, &task.grandparents, self.opts.target_file_size);
        let outputs = compaction::write_tables(&mut input, &mut gc, &ctx)?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io("sync database directory", e))?;
        // Outputs durable, inputs still live: the next open keeps the inputs.
        rialto_killpoint::kill_point("compaction.install");

        let written: u64 = outputs.iter().map(|f| f.file_size).sum();
        let mut st = self.state.lock();
        edit.added
            .extend(outputs.iter().map(|f| (out_level, f.clone())));
        let r = st.versions.log_and_apply(edit);
        for f in &outputs {
            st.pending_outputs.remove(&f.number);
        }
        r?;
        self.install_super_version(&mut st);
        self.io.record(
            IoEvent::new(
                IoEventKind::Compaction,
                start,
                self.opts.clock.now_micros().saturating_sub(start),
                written,
            )
            .with_tables(
                u32::try_from(outputs.len()).unwrap_or(u32::MAX),
                outputs.iter().map(|f| f.num_entries).sum(),
                u8::try_from(out_level).unwrap_or(u8::MAX),
            ),
        );
        self.counters
            .compaction_bytes_written
            .fetch_add(written, Ordering::Relaxed);
        self.counters
            .compaction_bytes_read
            .fetch_add(task.input_bytes(), Ordering::Relaxed);
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            level = task.level,
            inputs = task.inputs.len() + task.next_inputs.len(),
            outputs = outputs.len(),
            dropped = gc.dropped,
            "compaction done"
        );
        Ok(())
    }

    /// Removes files no version, pending output or WAL replay needs, under the state lock.
    /// Errors are ignored (a leftover file is removed at the next open).
    pub(crate) fn delete_obsolete_files(&self, st: &mut State) {
        let doomed = self.obsolete_files(st);
        for name in &doomed {
            let _ = self.fs.remove_file(&self.dir.join(name));
            st.removing.remove(name);
        }
    }

    /// Removes `doomed` (from `obsolete_files`), each gradually (`Options::delete_step_bytes`),
    /// then lets other threads see them again and wakes `wait_for_background_work`. Call
    /// without the state lock: a large file takes a while. Not paced by journal-first: a
    /// removal writes nothing, its cuts alone keep each journal commit short, and a removal
    /// held to a slow disk's pace would hold its background thread (flushes among them) for
    /// minutes. Errors, and a close stopping a removal, leave a file for a later pass or the
    /// next open.
    pub(crate) fn remove_files(&self, doomed: Vec<String>) {
        if doomed.is_empty() {
            return;
        }
        let mut pace = |_: u64| {
            if self.shutting_down.load(Ordering::Acquire) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the database is closing",
                ));
            }
            Ok(())
        };
        for name in &doomed {
            let path = self.dir.join(name);
            let _ = self
                .fs
                .remove_file_gradually(&path, self.opts.delete_step_bytes, &mut pace);
        }
        let mut st = self.state.lock();
        for name in &doomed {
            st.removing.remove(name);
        }
        self.done_cv.notify_all();
    }

    /// Names of the files no version, pending output or WAL replay needs and no other thread
    /// is removing; they count as being removed by the caller from now on (it must pass them
    /// to `remove_files`). Evicts their tables from the table cache.
    pub(crate) fn obsolete_files(&self, st: &mut State) -> Vec<String> {
        st.live_versions.retain(|w| w.strong_count() > 0);
        let mut live: HashSet<u64> = st.pending_outputs.clone();
        // WAL segments serving commit-log tables (TRIAD-LOG) live as long as their tables.
        let mut live_segments: HashSet<u64> = HashSet::new();
        let current = st.versions.current();
        for v in st
            .live_versions
            .iter()
            .filter_map(Weak::upgrade)
            .chain(std::iter::once(current))
        {
            live.extend(v.live_files());
            live_segments.extend(
                v.levels
                    .iter()
                    .flatten()
                    .filter_map(|f| f.cl_segment)
                    .map(|s| s.number),
            );
        }
        let log_number = st.versions.log_number();
        let manifest = st.versions.manifest_number();
        let Ok(names) = self.fs.list_dir(&self.dir) else {
            return Vec::new();
        };
        let mut doomed = Vec::new();
        for name in names {
            let obsolete = match parse_file_name(&name) {
                Some(FileKind::Table(n)) => !live.contains(&n),
                Some(FileKind::Wal(n)) => n < log_number && !live_segments.contains(&n),
                Some(FileKind::Manifest(n)) => n != manifest,
                Some(FileKind::Temp) => true,
                None => false,
            };
            if obsolete && !st.removing.contains(&name) {
                if let Some(FileKind::Table(n)) = parse_file_name(&name) {
                    self.tables.evict(n);
                }
                st.removing.insert(name.clone());
                doomed.push(name);
            }
        }
        doomed
    }
}

/// Kinds of files in a database directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Table(u64),
    Wal(u64),
    Manifest(u64),
    Temp,
}

pub(crate) fn parse_file_name(name: &str) -> Option<FileKind> {
    if let Some(n) = name.strip_suffix(".sst") {
        return n.parse().ok().map(FileKind::Table);
    }
    if let Some(n) = name.strip_suffix(".log") {
        return n.parse().ok().map(FileKind::Wal);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(FileKind::Manifest);
    }
    (name == "CURRENT.tmp").then_some(FileKind::Temp)
}

impl KvEngine for Db {
    type Snapshot = Snapshot;
    type Iter = DbIter;

    fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        self.inner.record_read();
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        let Some(rc) = &self.inner.row_cache else {
            return self.inner.get_at_seq(key, seq, BlockFill::Missed);
        };
        if let Some(v) = rc.get(key) {
            return Ok(Some(v));
        }
        let r = self.inner.get_at_seq(key, seq, BlockFill::SecondMiss)?;
        if let Some(v) = &r {
            rc.insert(key, v, seq);
        }
        Ok(r)
    }

    fn get_at(&self, snapshot: &Snapshot, key: &[u8]) -> Result<Option<Bytes>> {
        self.inner.record_read();
        self.inner
            .get_at_seq(key, snapshot.0.seq, BlockFill::Missed)
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Bytes>>> {
        self.inner.record_reads(keys.len());
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        let Some(rc) = &self.inner.row_cache else {
            return self.inner.multi_get_at_seq(keys, seq, BlockFill::Missed);
        };
        let mut out = Vec::with_capacity(keys.len());
        let mut missed: Vec<usize> = Vec::new();
        for chunk in keys.chunks(crate::PREFETCH_MAX) {
            rc.prefetch(chunk);
            for k in chunk {
                let v = rc.get(k);
                if v.is_none() {
                    missed.push(out.len());
                }
                out.push(v);
            }
        }
        if missed.is_empty() {
            return Ok(out);
        }
        let mkeys: Vec<&[u8]> = missed.iter().map(|&i| keys[i]).collect();
        let read = self
            .inner
            .multi_get_at_seq(&mkeys, seq, BlockFill::SecondMiss)?;
        for (i, v) in missed.into_iter().zip(read) {
            if let Some(v) = &v {
                rc.insert(keys[i], v, seq);
            }
            out[i] = v;
        }
        Ok(out)
    }

    fn multi_get_at(&self, snapshot: &Snapshot, keys: &[&[u8]]) -> Result<Vec<Option<Bytes>>> {
        self.inner.record_reads(keys.len());
        self.inner
            .multi_get_at_seq(keys, snapshot.0.seq, BlockFill::Missed)
    }

    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        self.inner.write(batch, opts)
    }

    fn snapshot(&self) -> Snapshot {
        let mut s = self.inner.snapshots.lock();
        // Read the sequence under the registry lock so a compaction that lists snapshots
        // either sees this one or ran before it existed (then it kept everything up to `seq`).
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        *s.entry(seq).or_insert(0) += 1;
        Snapshot(Arc::new(SnapshotInner {
            seq,
            db: Arc::downgrade(&self.inner),
        }))
    }

    fn iter(&self, opts: IterOptions<Snapshot>) -> Result<DbIter> {
        self.inner.record_read();
        iter::new_iterator(&self.inner, opts)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.flush()?;
        self.inner.compact_range(start, end)
    }

    fn stats(&self) -> EngineStats {
        let inner = &self.inner;
        let c = &inner.counters;
        let version = inner.sv.load().version.clone();
        let levels = version.level_stats();
        let table_bytes: u64 =
            levels.iter().map(|l| l.bytes).sum::<u64>() + version.commit_log_bytes();
        let wal_bytes = inner.wal.lock().as_ref().map_or(0, |w| w.len());
        let (hits, misses) = inner
            .block_cache
            .as_ref()
            .map_or((0, 0), |b| (b.hits(), b.misses()));
        let row = inner.row_cache.as_ref().map_or((0, 0, 0), |r| {
            let (h, m) = r.hits_and_misses();
            (h, m, r.usage())
        });
        EngineStats {
            levels,
            user_bytes_written: c.user_bytes.load(Ordering::Relaxed),
            wal_bytes_written: c.wal_bytes.load(Ordering::Relaxed),
            wal_prepare_bytes_written: c.wal_prepare_bytes.load(Ordering::Relaxed),
            flush_bytes_written: c.flush_bytes.load(Ordering::Relaxed),
            compaction_bytes_written: c.compaction_bytes_written.load(Ordering::Relaxed),
            compaction_bytes_read: c.compaction_bytes_read.load(Ordering::Relaxed),
            ingest_bytes_written: c.ingest_bytes.load(Ordering::Relaxed),
            live_data_bytes: version.estimate_live_bytes(),
            disk_bytes: table_bytes + wal_bytes + inner.spare.disk_bytes(),
            block_cache_hits: hits,
            block_cache_misses: misses,
            row_cache_hits: row.0,
            row_cache_misses: row.1,
            row_cache_bytes: row.2 as u64,
            row_cache_warmed_rows: c.warmed_rows.load(Ordering::Relaxed),
            idle_compactions: c.idle_compactions.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            compactions: c.compactions.load(Ordering::Relaxed),
            stall_micros: c.stall_micros.load(Ordering::Relaxed),
            wal_syncs: c.wal_syncs.load(Ordering::Relaxed),
            iter_entries_examined: inner.iter_entries.load(Ordering::Relaxed),
            read_only_reason: inner.read_only.lock().clone(),
        }
    }
}

impl PipelinedCommit for Db {
    fn log_and_apply(&self, batch: WriteBatch) -> Result<CommitPoint> {
        self.inner.log_and_apply(batch, write::HandOff::Now)
    }

    fn log_and_apply_until_sync(&self, batch: WriteBatch) -> Result<CommitPoint> {
        self.inner.log_and_apply(batch, write::HandOff::AtNextSync)
    }

    fn get_applied(&self, key: &[u8]) -> Result<Option<Bytes>> {
        let seq = self.inner.applied_seq.load(Ordering::Acquire);
        self.inner.get_at_seq(key, seq, BlockFill::Missed)
    }

    fn note_reads(&self, n: u64) {
        self.inner.record_reads(n as usize);
    }

    fn iter_applied(&self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Result<DbIter> {
        iter::applied(&self.inner, lower, upper)
    }

    fn applied_point(&self) -> CommitPoint {
        self.inner.applied_seq.load(Ordering::Acquire)
    }

    fn published_point(&self) -> CommitPoint {
        self.inner.visible_seq.load(Ordering::Acquire)
    }

    fn sync_log(&self) -> Result<CommitPoint> {
        self.inner.sync_log()
    }

    fn publish(&self, point: CommitPoint) {
        self.inner.publish(point)
    }

    fn io_stats(&self) -> IoStats {
        self.io_stats_recent(usize::MAX)
    }
}

impl DbInner {
    /// Switches the memtable (if it holds anything) and waits until every memtable up to it
    /// is flushed.
    fn flush(&self) -> Result<()> {
        let target = self.force_memtable_switch()?;
        let Some(target) = target else {
            return Ok(());
        };
        let mut st = self.state.lock();
        loop {
            if !st.imms.iter().any(|m| Arc::ptr_eq(m, &target)) {
                return Ok(());
            }
            self.check_writable()?;
            self.wait_for_progress(&mut st);
        }
    }

    fn compact_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        let popts = PickerOptions::from_options(&self.opts);
        let max_level = {
            let v = self.state.lock().versions.current();
            (1..v.num_levels())
                .rev()
                .find(|&l| !v.overlapping(l, lo, hi).is_empty())
                .unwrap_or(1)
        };
        for level in 0..max_level {
            loop {
                let task = {
                    let mut st = self.state.lock();
                    self.check_writable()?;
                    let v = st.versions.current();
                    if v.overlapping(level, lo, hi).is_empty() {
                        break;
                    }
                    match picker::pick_manual(&v, level, lo, hi, &st.compacting, &popts) {
                        Some(t) => {
                            st.compacting.extend(t.all_inputs().map(|f| f.number));
                            st.running_compactions += 1;
                            t
                        }
                        None => {
                            // A background compaction holds some of the files; wait for it.
                            self.wait_for_progress(&mut st);
                            continue;
                        }
                    }
                };
                let r = self.run_compaction(task);
                {
                    let _st = self.state.lock();
                    self.done_cv.notify_all();
                    self.bg_cv.notify_all();
                }
                if let Err(e) = r {
                    if !matches!(e, Error::Closed) {
                        self.set_read_only(&e);
                    }
                    return Err(e);
                }
                // One pass over the level is enough: outputs went to level + 1.
                break;
            }
        }
        Ok(())
    }
}
