//! Bounded-memory external sort of key/value records.
//!
//! Batch pushes load tens of millions of records, possibly more than fit in memory, and need
//! them as one stream in key order to write SSTables from. A [`Sorter`] takes records in any
//! order through [`Sorter::add`]; [`Sorter::finish`] returns a [`Sorted`] stream that yields
//! every key once, in ascending unsigned-byte order. Keys that were added more than once are
//! resolved by [`DuplicatePolicy`]: the record added last wins, or the sort fails with
//! [`SortError::DuplicateKey`]. Every file is reached through a [`rialto_io::Fs`].
//!
//! # Algorithm
//!
//! Records are copied into an *arena* of large chunks, and a compact 32-byte index entry per
//! record (chunk, offset, lengths, insertion sequence number, and the first eight key bytes as
//! an integer) is appended to an index. Sorting sorts the index only (`sort_unstable_by`,
//! prefix first, then the key bytes, then sequence number descending); the key and value bytes
//! never move. When a buffer is full it is handed to a background thread, which sorts it and
//! writes it out as a *run* file, while [`Sorter::add`] fills a second buffer (double
//! buffering); `add` waits only if the previous spill is still running when the second buffer
//! is full in turn. Runs are named `rialto-sort-<pid>-<sorter>-<n>.run` in
//! [`SortOptions::tmp_dir`].
//!
//! [`Sorter::finish`] sorts the last buffer in memory (in two halves on two threads when it is
//! large) and never writes it out. If nothing was spilled, the output is streamed straight
//! from memory. If the first spill is still running when `finish` is called, it is called off
//! (its partial file removed) and its buffer, already sorted, is merged from memory too: both
//! buffers fit in the limit, and there are no runs to read. Otherwise a k-way merge (a loser
//! tree over the cached key prefixes of the sources) combines the in-memory buffer with the
//! runs, while a read-ahead thread reads and checksums the next block of each run. The number
//! of runs read at once is capped (the *fan-in*, at most 64); when there are more, `finish`
//! first merges the smallest runs into bigger ones until few enough remain (multi-pass merge).
//!
//! `finish` publishes its work as it goes, for another thread to read through
//! [`Sorter::watch`] ([`FinishProgress`]): the records it sorts in memory, writes for the spill
//! it waits for and merges in each pass, and those done (counted per block written). Each
//! spill times its sort and write, so that the rest can be estimated at this sort's own speed;
//! an input sorted wholly in memory has no spill, and so no estimate.
//!
//! Duplicate keys meet in the merge: the merge order puts the highest sequence number first
//! among equal keys, so `LastWins` keeps the first and drops the rest, and `Error` fails when
//! it sees the second. Spills with `LastWins` already drop duplicates within their buffer.
//! Because sequence numbers are stored in run files, duplicates split across runs are
//! resolved the same way. With `Error`, [`SortError::DuplicateKey`] comes from
//! [`Sorted::next`] (after the first record of that key was returned), or from
//! [`Sorter::finish`] when an intermediate merge pass finds it.
//!
//! # Memory accounting
//!
//! [`SortOptions::memory_limit`] bounds the record data and index held in memory. It is split
//! in two halves, one per buffer: a buffer counts the key and value bytes copied into its
//! arena (plus the unused tails of chunks it has filled) and the *capacity* of its index, and
//! is spilled before a record would take it past half the limit. The index grows towards the
//! record count the rest of the budget should hold, instead of doubling, so that unused
//! capacity does not eat the budget.
//!
//! The trade-off of double buffering: runs are half as long as one buffer could make them, and
//! an input is sure to be sorted without writing anything only if it fits in *half* the limit
//! (up to the whole limit if `finish` comes while the first spill is still running); in
//! exchange, runs are sorted and written on a second core while the caller keeps adding.
//!
//! During the merge the last buffer (at most half the limit) stays in memory, and each run
//! being read holds two blocks (the one parsed and the one read ahead): block size and fan-in
//! are chosen so that the readers take at most the other half. Blocks are 256 KiB for limits
//! of 32 MiB and more, and shrink (down to 4 KiB) below. On top of the limit come small fixed
//! costs: the block being written, the file layer's buffers, and, for a record larger than a
//! block, a block of that record's size. Limits below a few hundred KiB work but are not
//! honoured exactly (a buffer always takes at least one record, a merge reads at least two
//! runs).
//!
//! # Run file format
//!
//! A run file is a sequence of blocks of about the block size (256 KiB):
//!
//! ```text
//! block   := len: u32 LE | crc: u32 LE | payload[len]        (len > 0)
//! crc     := crc32c(len as 4 LE bytes ++ payload)             (plain crc32c, not masked)
//! payload := record+
//! record  := varint key_len | varint value_len | varint seq | key | value
//! ```
//!
//! Varints are LEB128 (7 bits per byte, least significant first). Records are in merge order
//! (key ascending, sequence number descending) and never straddle blocks; a record bigger than
//! a block gets a block of its own. The reader reads each block with one `read_exact_at`
//! (which also fetches the next block's header), checks its checksum before parsing it, and
//! checks the file's length and record count against what was written, so a damaged or
//! truncated file gives [`SortError::Corrupt`], never wrong data. Runs are temporary: they are
//! not synced, and each is removed as soon as it has been read to its end, and in any case
//! when the [`Sorter`] or [`Sorted`] holding it is dropped, whether it succeeded or failed.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod buffer;
mod error;
mod merge;
mod progress;
mod run;

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use rialto_io::FsRef;

use buffer::{
    key_in, sort_entries, sort_failed, sort_in_parts, touch_records, value_in, Buffer, Frozen,
    TOUCH_BATCH,
};
use merge::{Merger, Source};
use progress::{merge_plan, FinishCounters, Tally};
use run::{ReadAhead, Run, RunReader, RunWriter};

pub use error::SortError;
pub use progress::{FinishProgress, SortWatch};

/// What to do with several records of one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DuplicatePolicy {
    /// Fail with [`SortError::DuplicateKey`].
    Error,
    /// Keep the record added last; drop the others.
    LastWins,
}

/// How a [`Sorter`] works.
#[derive(Clone, Debug)]
pub struct SortOptions {
    /// Bytes of record data and index held in memory, across both buffers (default 256 MiB).
    /// See the crate docs for how it is counted and split.
    pub memory_limit: usize,
    /// Directory where runs are spilled; created if missing.
    pub tmp_dir: PathBuf,
    /// What to do with duplicate keys (default [`DuplicatePolicy::Error`]).
    pub duplicates: DuplicatePolicy,
    /// Longer keys are rejected by [`Sorter::add`] (default 65,536; at most 1 GiB is
    /// honoured).
    pub max_key_len: usize,
    /// Longer values are rejected by [`Sorter::add`] (default 512 MiB; at most 2 GiB is
    /// honoured).
    pub max_value_len: usize,
}

impl Default for SortOptions {
    fn default() -> Self {
        SortOptions {
            memory_limit: 256 << 20,
            tmp_dir: std::env::temp_dir().join("rialto-sort"),
            duplicates: DuplicatePolicy::Error,
            max_key_len: 65_536,
            max_value_len: 512 << 20,
        }
    }
}

/// What a sort did so far.
#[derive(Clone, Debug, Default)]
pub struct SortStats {
    /// Records added.
    pub records: u64,
    /// Runs written from memory buffers (and completed) so far; merge passes not included.
    pub runs_spilled: u64,
    /// Bytes written to run files, by spills and intermediate merge passes.
    pub bytes_spilled: u64,
    /// Records dropped under [`DuplicatePolicy::LastWins`] because a later one had their key.
    pub duplicates_dropped: u64,
}

/// Counters shared with the spill thread.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    runs_spilled: AtomicU64,
    bytes_spilled: AtomicU64,
    duplicates_dropped: AtomicU64,
    finish: FinishCounters,
}

impl Counters {
    fn stats(&self, records: u64) -> SortStats {
        SortStats {
            records,
            runs_spilled: self.runs_spilled.load(Ordering::Relaxed),
            bytes_spilled: self.bytes_spilled.load(Ordering::Relaxed),
            duplicates_dropped: self.duplicates_dropped.load(Ordering::Relaxed),
        }
    }
}

/// Largest key length honoured, whatever the options say (block lengths are `u32`).
const KEY_LEN_CAP: usize = 1 << 30;
/// Largest value length honoured, whatever the options say.
const VALUE_LEN_CAP: usize = 1 << 31;
/// Largest and smallest run block size.
const MAX_BLOCK_SIZE: usize = 256 << 10;
const MIN_BLOCK_SIZE: usize = 4 << 10;
/// Most runs read at once by a merge.
const MAX_FAN_IN: usize = 64;

/// Sizes derived from the options.
#[derive(Clone, Debug)]
struct Config {
    /// Memory budget of one buffer: half the limit.
    budget: usize,
    block_size: usize,
    fan_in: usize,
    chunk_size: usize,
    max_key_len: usize,
    max_value_len: usize,
    duplicates: DuplicatePolicy,
    #[cfg(test)]
    panic_in_spill: bool,
    #[cfg(test)]
    spill_delay: std::time::Duration,
}

impl Config {
    fn new(opts: &SortOptions) -> Self {
        let budget = (opts.memory_limit / 2).max(1);
        let block_size = (budget / MAX_FAN_IN).clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE);
        Config {
            budget,
            block_size,
            // Each run being read holds two blocks: the one parsed and the one read ahead.
            fan_in: (budget / (2 * block_size)).clamp(2, MAX_FAN_IN),
            chunk_size: (budget / 16).clamp(4 << 10, 4 << 20),
            max_key_len: opts.max_key_len.min(KEY_LEN_CAP),
            max_value_len: opts.max_value_len.min(VALUE_LEN_CAP),
            duplicates: opts.duplicates,
            #[cfg(test)]
            panic_in_spill: false,
            #[cfg(test)]
            spill_delay: std::time::Duration::ZERO,
        }
    }
}

/// Distinguishes the run files of sorters of one process sharing a directory.
static NEXT_SORTER_ID: AtomicU64 = AtomicU64::new(0);

/// What a spill thread gives back.
enum SpillOutcome {
    /// The run was written; the buffer comes back emptied, for reuse.
    Written(Run, Buffer),
    /// The spill was cancelled: the buffer comes back whole and sorted, and no file is left.
    Cancelled(Buffer),
    /// Writing failed; the partial file was removed.
    Failed(SortError),
}

/// What [`Sorter::wait_spill`] found.
enum Joined {
    /// No spill was running.
    Nothing,
    /// The spill wrote its run; here is its buffer, emptied.
    Emptied(Buffer),
    /// The spill was cancelled; here is its buffer, whole and sorted.
    Cancelled(Buffer),
}

/// A spill in progress.
struct Spill {
    handle: JoinHandle<SpillOutcome>,
    /// Asks the thread to stop writing (checked before each block).
    cancel: Arc<AtomicBool>,
    /// The records and memory of the buffer it writes.
    records: u64,
    bytes: u64,
}

/// Collects records and sorts them; see the crate docs.
pub struct Sorter {
    fs: FsRef,
    tmp_dir: PathBuf,
    cfg: Config,
    /// The buffer `add` fills.
    active: Buffer,
    inflight: Option<Spill>,
    runs: Vec<Run>,
    next_seq: u64,
    records: u64,
    counters: Arc<Counters>,
    failed: bool,
    file_prefix: String,
    next_file: u64,
}

impl fmt::Debug for Sorter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sorter")
            .field("tmp_dir", &self.tmp_dir)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Sorter {
    /// A sorter spilling to `opts.tmp_dir` on `fs` (the directory is created if missing).
    pub fn new(fs: FsRef, opts: SortOptions) -> Result<Sorter, SortError> {
        fs.create_dir_all(&opts.tmp_dir)
            .map_err(|e| SortError::io(&opts.tmp_dir, e))?;
        let cfg = Config::new(&opts);
        let id = NEXT_SORTER_ID.fetch_add(1, Ordering::Relaxed);
        Ok(Sorter {
            fs,
            active: Buffer::new(cfg.chunk_size),
            tmp_dir: opts.tmp_dir,
            cfg,
            inflight: None,
            runs: Vec::new(),
            next_seq: 0,
            records: 0,
            counters: Arc::default(),
            failed: false,
            file_prefix: format!("rialto-sort-{}-{id}", std::process::id()),
            next_file: 0,
        })
    }

    /// Adds a record. Fails for an empty or too long key or a too long value (the sorter
    /// stays usable), or when spilling failed (the sorter is then unusable).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<(), SortError> {
        if self.failed {
            return Err(SortError::failed_earlier(&self.tmp_dir));
        }
        if key.is_empty() {
            return Err(SortError::EmptyKey);
        }
        if key.len() > self.cfg.max_key_len {
            return Err(SortError::KeyTooLong {
                len: key.len(),
                max: self.cfg.max_key_len,
            });
        }
        if value.len() > self.cfg.max_value_len {
            return Err(SortError::ValueTooLong {
                len: value.len(),
                max: self.cfg.max_value_len,
            });
        }
        if !self.active.fits(key.len() + value.len(), self.cfg.budget) {
            if let Err(e) = self.spill() {
                self.failed = true;
                return Err(e);
            }
        }
        self.active.push(key, value, self.next_seq, self.cfg.budget);
        self.next_seq += 1;
        self.records += 1;
        Ok(())
    }

    /// What was done so far. `runs_spilled` counts completed spills.
    pub fn stats(&self) -> SortStats {
        self.counters.stats(self.records)
    }

    /// A handle on how far [`Sorter::finish`] is, to read from another thread while it runs.
    pub fn watch(&self) -> SortWatch {
        SortWatch(Arc::clone(&self.counters))
    }

    /// Sorts what remains in memory, merges runs down to the fan-in if needed, and returns
    /// the sorted stream. Its progress is published as it goes (see [`Sorter::watch`]).
    pub fn finish(mut self) -> Result<Sorted, SortError> {
        if self.failed {
            return Err(SortError::failed_earlier(&self.tmp_dir));
        }
        let in_memory = self.active.entries.len() as u64;
        self.plan_finish(in_memory, self.inflight.as_ref());
        // A spill still running when it is the first one is called off: its buffer is in
        // memory anyway, and with no run to read both buffers stay within the limit. The
        // input is then sorted without writing anything (all of it, if the spill was still
        // sorting).
        let cancel = self.runs.is_empty();
        if let (true, Some(spill)) = (cancel, &self.inflight) {
            spill.cancel.store(true, Ordering::Relaxed);
        }
        // Sort the last buffer while a spill may still be writing the previous one.
        let active = std::mem::replace(&mut self.active, Buffer::new(0));
        let (chunks, mut entries) = active.into_parts();
        let parts =
            sort_in_parts(&chunks, &mut entries).map_err(|m| sort_failed(&self.tmp_dir, m))?;
        let fc = &self.counters.finish;
        fc.in_memory_sorted.store(in_memory, Ordering::Relaxed);
        let frozen = Arc::new(Frozen { chunks, entries });
        let mut sources: Vec<Source> = Vec::new();
        match self.wait_spill(cancel)? {
            Joined::Nothing | Joined::Emptied(_) => {}
            Joined::Cancelled(buf) => {
                let (chunks, entries) = buf.into_parts();
                let end = entries.len();
                sources.push(Source::mem(Arc::new(Frozen { chunks, entries }), 0, end));
            }
        }
        // The spill waited for is done, and the runs are now known exactly.
        self.plan_finish(in_memory, None);
        sources.extend(
            parts
                .into_iter()
                .filter(|&(start, end)| start < end)
                .map(|(start, end)| Source::mem(Arc::clone(&frozen), start, end)),
        );
        drop(frozen);
        self.reduce_runs()?;
        let read_ahead = ReadAhead::start();
        for run in std::mem::take(&mut self.runs) {
            let reader = RunReader::open(&self.fs, run, read_ahead.clone())?;
            sources.push(Source::Run(Box::new(reader)));
        }
        Ok(Sorted {
            merger: Merger::new(
                sources,
                self.cfg.duplicates,
                Arc::clone(&self.counters),
                self.tmp_dir.clone(),
            ),
            records: self.records,
            counters: Arc::clone(&self.counters),
        })
    }

    /// Publishes `finish`'s work: the last buffer's `in_memory` records, the records of
    /// `inflight` (the spill still to wait for, if any; once it is done, counted as done)
    /// and the merge passes the runs (with `inflight`'s) need.
    fn plan_finish(&self, in_memory: u64, inflight: Option<&Spill>) {
        let fc = &self.counters.finish;
        let spill_records = match inflight {
            Some(s) => s.records,
            None => fc.spill_records.load(Ordering::Relaxed),
        };
        let mut runs: Vec<(u64, u64)> = self.runs.iter().map(|r| (r.len, r.records)).collect();
        // A first spill still running is called off and merged from memory: no run.
        if let (Some(s), false) = (inflight, self.runs.is_empty()) {
            runs.push((s.bytes, s.records));
        }
        let (passes, merge_records) = merge_plan(&runs, self.cfg.fan_in);
        fc.in_memory.store(in_memory, Ordering::Relaxed);
        fc.spill_records.store(spill_records, Ordering::Relaxed);
        if inflight.is_none() {
            fc.spill_written.store(spill_records, Ordering::Relaxed);
        }
        fc.merge_passes.store(passes, Ordering::Relaxed);
        fc.records
            .store(in_memory + spill_records + merge_records, Ordering::Relaxed);
    }

    fn next_path(&mut self) -> PathBuf {
        let n = self.next_file;
        self.next_file += 1;
        self.tmp_dir
            .join(format!("{}-{n:06}.run", self.file_prefix))
    }

    /// Waits for the spill in progress, if any, after asking it to stop if `cancel`. A
    /// written run joins `self.runs`; a failure is returned as the error.
    fn wait_spill(&mut self, cancel: bool) -> Result<Joined, SortError> {
        let Some(spill) = self.inflight.take() else {
            return Ok(Joined::Nothing);
        };
        if cancel {
            spill.cancel.store(true, Ordering::Relaxed);
        }
        match spill.handle.join() {
            Ok(SpillOutcome::Written(run, buf)) => {
                self.runs.push(run);
                Ok(Joined::Emptied(buf))
            }
            Ok(SpillOutcome::Failed(e)) => Err(e),
            Ok(SpillOutcome::Cancelled(buf)) => Ok(Joined::Cancelled(buf)),
            Err(payload) => Err(SortError::io(
                &self.tmp_dir,
                std::io::Error::other(format!(
                    "sort spill thread panicked: {}",
                    buffer::panic_message(&*payload)
                )),
            )),
        }
    }

    /// Hands the full buffer to a spill thread, after the previous spill finished, and goes on
    /// with the buffer that spill emptied.
    fn spill(&mut self) -> Result<(), SortError> {
        let next = match self.wait_spill(false)? {
            Joined::Emptied(buf) => buf,
            // Not cancelled, so not reached; a cancelled buffer holds records to keep.
            Joined::Cancelled(_) => return Err(SortError::failed_earlier(&self.tmp_dir)),
            Joined::Nothing => Buffer::new(self.cfg.chunk_size),
        };
        let full = std::mem::replace(&mut self.active, next);
        let (records, bytes) = (full.entries.len() as u64, full.mem_used() as u64);
        let path = self.next_path();
        let fs = Arc::clone(&self.fs);
        let cfg = self.cfg.clone();
        let counters = Arc::clone(&self.counters);
        let cancel = Arc::new(AtomicBool::new(false));
        let thread_cancel = Arc::clone(&cancel);
        let handle = std::thread::Builder::new()
            .name("rialto-sort-spill".into())
            .spawn(move || {
                let mut buf = full;
                let began = Instant::now();
                counters.finish.spill_written.store(0, Ordering::Relaxed);
                let spilled = spill_buffer(&fs, path, &cfg, &mut buf, &counters, &thread_cancel);
                match spilled {
                    Ok(run) => {
                        // The sort's speed, for an estimate of `finish`.
                        counters.finish.spilled(records, began.elapsed());
                        buf.recycle();
                        SpillOutcome::Written(run, buf)
                    }
                    // Every error comes after the sort: the buffer is whole and sorted.
                    Err(_) if thread_cancel.load(Ordering::Relaxed) => SpillOutcome::Cancelled(buf),
                    Err(e) => SpillOutcome::Failed(e),
                }
            })
            .map_err(|e| SortError::io(&self.tmp_dir, e))?;
        self.inflight = Some(Spill {
            handle,
            cancel,
            records,
            bytes,
        });
        Ok(())
    }

    /// Merges the smallest runs together until at most `fan_in` remain. The first merge takes
    /// just enough runs for every later one to take a full `fan_in`.
    fn reduce_runs(&mut self) -> Result<(), SortError> {
        let fan_in = self.cfg.fan_in;
        while self.runs.len() > fan_in {
            self.runs.sort_by_key(|r| std::cmp::Reverse(r.len));
            let excess = self.runs.len() - fan_in;
            let take = fan_in.min(excess + 1);
            let group = self.runs.split_off(self.runs.len() - take);
            let merged = self.merge_runs(group)?;
            self.runs.push(merged);
            let passes = &self.counters.finish.merge_passes;
            passes.store(
                passes.load(Ordering::Relaxed).saturating_sub(1),
                Ordering::Relaxed,
            );
        }
        Ok(())
    }

    fn merge_runs(&mut self, group: Vec<Run>) -> Result<Run, SortError> {
        let mut sources = Vec::with_capacity(group.len());
        let read_ahead = ReadAhead::start();
        for run in group {
            let reader = RunReader::open(&self.fs, run, read_ahead.clone())?;
            sources.push(Source::Run(Box::new(reader)));
        }
        let mut merger = Merger::new(
            sources,
            self.cfg.duplicates,
            Arc::clone(&self.counters),
            self.tmp_dir.clone(),
        );
        let path = self.next_path();
        let mut writer = RunWriter::create(
            &self.fs,
            path,
            self.cfg.block_size,
            Arc::clone(&self.counters),
            Tally::Merge,
            None,
        )?;
        while let Some((key, value, seq)) = merger.next()? {
            writer.add(key, value, seq)?;
        }
        writer.finish()
    }
}

impl Drop for Sorter {
    fn drop(&mut self) {
        // Stop a running spill early and wait for it, so that its file is gone when the
        // sorter is.
        if let Some(spill) = self.inflight.take() {
            spill.cancel.store(true, Ordering::Relaxed);
            let _ = spill.handle.join();
        }
    }
}

/// Sorts a full buffer and writes it as a run (on the spill thread). Fails only after the
/// buffer is sorted.
fn spill_buffer(
    fs: &FsRef,
    path: PathBuf,
    cfg: &Config,
    buf: &mut Buffer,
    counters: &Arc<Counters>,
    cancel: &Arc<AtomicBool>,
) -> Result<Run, SortError> {
    #[cfg(test)]
    {
        std::thread::sleep(cfg.spill_delay);
        if cfg.panic_in_spill {
            panic!("injected spill panic");
        }
    }
    sort_entries(&buf.chunks, &mut buf.entries);
    if cancel.load(Ordering::Relaxed) {
        return Err(SortError::io(
            &path,
            std::io::Error::other("sort cancelled"),
        ));
    }
    let mut writer = RunWriter::create(
        fs,
        path,
        cfg.block_size,
        Arc::clone(counters),
        Tally::Spill,
        Some(Arc::clone(cancel)),
    )?;
    let mut dropped = 0;
    let mut prev: Option<&[u8]> = None;
    for batch in buf.entries.chunks(TOUCH_BATCH) {
        touch_records(&buf.chunks, batch);
        for e in batch {
            let key = key_in(&buf.chunks, e);
            if cfg.duplicates == DuplicatePolicy::LastWins && prev == Some(key) {
                // Sorted by sequence descending among equal keys: the kept one came first.
                dropped += 1;
                continue;
            }
            writer.add(key, value_in(&buf.chunks, e), e.seq)?;
            prev = Some(key);
        }
    }
    let run = writer.finish()?;
    counters
        .duplicates_dropped
        .fetch_add(dropped, Ordering::Relaxed);
    counters.runs_spilled.fetch_add(1, Ordering::Relaxed);
    Ok(run)
}

/// The sorted records, streamed from memory and run files. Run files left are removed when
/// this is dropped.
pub struct Sorted {
    merger: Merger,
    records: u64,
    counters: Arc<Counters>,
}

impl fmt::Debug for Sorted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sorted")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Sorted {
    /// The next record, or None at the end. Borrowed until the next call.
    ///
    /// After an error every later call fails too.
    #[allow(clippy::should_implement_trait, clippy::type_complexity)]
    pub fn next(&mut self) -> Result<Option<(&[u8], &[u8])>, SortError> {
        Ok(self.merger.next()?.map(|(k, v, _)| (k, v)))
    }

    /// What the sort did; `duplicates_dropped` grows as the stream is read.
    pub fn stats(&self) -> SortStats {
        self.counters.stats(self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_io::MemFs;

    fn opts(limit: usize) -> SortOptions {
        SortOptions {
            memory_limit: limit,
            tmp_dir: "/tmp/sort".into(),
            ..SortOptions::default()
        }
    }

    #[test]
    fn config_scales_with_the_limit() {
        let c = Config::new(&SortOptions::default());
        assert_eq!((c.block_size, c.fan_in), (256 << 10, 64));
        let c = Config::new(&opts(64 << 10));
        assert_eq!((c.block_size, c.fan_in), (4 << 10, 4));
        let c = Config::new(&opts(0));
        assert_eq!((c.block_size, c.fan_in), (4 << 10, 2));
    }

    #[test]
    fn spill_thread_panic_becomes_an_error() {
        let mem = MemFs::new();
        let mut s = Sorter::new(Arc::new(mem.clone()), opts(4096)).unwrap();
        s.cfg.panic_in_spill = true;
        let mut err = None;
        for i in 0..1000u32 {
            if let Err(e) = s.add(&i.to_be_bytes(), &[0; 100]) {
                err = Some(e);
                break;
            }
        }
        let err = err.expect("the panic was reported by add");
        assert!(err.to_string().contains("panicked"), "{err}");
        assert!(s.add(b"k", b"v").is_err());
        assert!(s.finish().is_err());
        assert!(mem.file_names("/tmp/sort").is_empty());
    }

    #[test]
    fn finish_calls_off_the_first_spill() {
        let mem = MemFs::new();
        let mut s = Sorter::new(Arc::new(mem.clone()), opts(64 << 10)).unwrap();
        s.cfg.spill_delay = std::time::Duration::from_millis(100);
        let mut expect = Vec::new();
        for i in (0..400u32).rev() {
            let (k, v) = (i.to_be_bytes(), [i as u8; 80]);
            s.add(&k, &v).unwrap();
            expect.push((k.to_vec(), v.to_vec()));
        }
        expect.reverse();
        assert!(s.inflight.is_some());
        let mut sorted = s.finish().unwrap();
        let mut out = Vec::new();
        while let Some((k, v)) = sorted.next().unwrap() {
            out.push((k.to_vec(), v.to_vec()));
        }
        assert_eq!(out, expect);
        assert_eq!(sorted.stats().runs_spilled, 0);
        assert_eq!(mem.op_count(rialto_io::FaultOp::Create), 0);
    }

    #[test]
    fn later_spills_are_waited_for() {
        let mem = MemFs::new();
        let mut s = Sorter::new(Arc::new(mem.clone()), opts(64 << 10)).unwrap();
        s.cfg.spill_delay = std::time::Duration::from_millis(20);
        for i in (0..2000u32).rev() {
            s.add(&i.to_be_bytes(), &[i as u8; 80]).unwrap();
        }
        assert!(s.inflight.is_some() && !s.runs.is_empty());
        let mut sorted = s.finish().unwrap();
        let mut n = 0u32;
        while let Some((k, v)) = sorted.next().unwrap() {
            assert_eq!((k, v), (&n.to_be_bytes()[..], &[n as u8; 80][..]));
            n += 1;
        }
        assert_eq!(n, 2000);
        let runs = sorted.stats().runs_spilled;
        assert!(runs >= 5, "{runs}");
        // Every spill wrote its run (and a merge pass wrote more: 7 runs, fan-in 4).
        assert!(mem.op_count(rialto_io::FaultOp::Create) > runs);
    }

    #[test]
    fn spills_time_themselves_and_finish_publishes_its_work() {
        let mem = MemFs::new();
        let mut s = Sorter::new(Arc::new(mem.clone()), opts(64 << 10)).unwrap();
        let watch = s.watch();
        for i in (0..2000u32).rev() {
            s.add(&i.to_be_bytes(), &[i as u8; 80]).unwrap();
        }
        let before = watch.finish_progress();
        assert_eq!((before.records, before.done), (0, 0));
        assert!(before.spill_records_per_s.is_some_and(|r| r > 0));
        let sorted = s.finish().unwrap();
        let p = watch.finish_progress();
        // The last buffer, the spill waited for, and the merge passes (7 runs, fan-in 4).
        assert!(p.in_memory > 0 && p.records > p.in_memory, "{p:?}");
        assert_eq!((p.done, p.merge_passes), (p.records, 0));
        assert_eq!(p.eta(), Some(std::time::Duration::ZERO));
        drop(sorted);

        // Sorted in memory: no speed to go by, so no estimate.
        let mut s = Sorter::new(Arc::new(mem), opts(1 << 20)).unwrap();
        let watch = s.watch();
        for i in 0..100u32 {
            s.add(&i.to_be_bytes(), b"v").unwrap();
        }
        let _sorted = s.finish().unwrap();
        let p = watch.finish_progress();
        assert_eq!((p.records, p.done, p.in_memory), (100, 100, 100));
        assert_eq!((p.spill_records_per_s, p.eta()), (None, None));
    }

    #[test]
    fn types_are_send() {
        fn is_send<T: Send>() {}
        is_send::<Sorter>();
        is_send::<Sorted>();
    }
}
