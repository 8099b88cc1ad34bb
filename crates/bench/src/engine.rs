//! The seam between the harness and an engine.
//!
//! [`BenchEngine`] is deliberately smaller than `rialto_engine::KvEngine`: it has only what
//! db_bench's workloads do, in a form every engine can provide without generic types or
//! borrowed iterators (RocksDB's iterators borrow the database), so that one harness drives
//! Rialto and RocksDB through the same `dyn` calls and neither gets a cheaper path.

use std::path::Path;

use rialto_engine::{BatchOp, EngineStats};

use crate::config::{CommitPath, CompressionKind, Config, TriadMode};
use crate::error::Result;

/// Where a scan starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanFrom<'a> {
    /// The first key (forward) or the last key (reverse).
    End,
    /// The first key `>= key` (forward) or the last key `<= key` (reverse).
    Key(&'a [u8]),
}

/// What an engine that adapts to its workload (Rialto's TRIAD characterizer) has seen:
/// enough for phaseshift to say how many windows after a phase change the engine noticed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Adaptation {
    /// Windows of operations the engine's characterizer has classified since it opened.
    pub windows: u64,
    /// Class changes, oldest first.
    pub changes: Vec<ClassChange>,
}

/// One class change of an engine's workload characterizer.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassChange {
    /// Number of the window that confirmed the change (windows count from 1).
    pub window: u64,
    /// Class before.
    pub from: String,
    /// Class after.
    pub to: String,
}

/// A callback given each `(key, value)` a scan visits.
pub type Visitor<'a> = &'a mut dyn FnMut(&[u8], &[u8]);

/// What one engine must do for the benchmarks. Every method may be called from many threads.
pub trait BenchEngine: Send + Sync {
    /// Engine name as printed in reports (`rialto`, `rocksdb`).
    fn name(&self) -> &'static str;

    /// Sets `key` to `value`; `sync` makes it durable before returning.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()>;

    /// Applies `ops` atomically as one batch.
    fn write_batch(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()>;

    /// Removes `key`.
    fn delete(&self, key: &[u8], sync: bool) -> Result<()>;

    /// Length of the value of `key`, or `None` when absent. Engines should avoid copying the
    /// value where they can (RocksDB: pinned slices), as db_bench does.
    fn get(&self, key: &[u8]) -> Result<Option<usize>>;

    /// Visits up to `limit` entries in key order (`reverse`: descending) starting at `from`;
    /// returns how many it visited.
    fn scan(
        &self,
        from: ScanFrom<'_>,
        reverse: bool,
        limit: u64,
        visit: Visitor<'_>,
    ) -> Result<u64>;

    /// Seeks to the first key `>= key`, then visits up to `nexts` entries from there (the
    /// first included, as db_bench's seekrandom counts them). Returns whether the seek landed
    /// exactly on `key`.
    fn seek(&self, key: &[u8], nexts: usize, visit: Visitor<'_>) -> Result<bool> {
        let mut found = false;
        let mut first = true;
        let mut seen = 0usize;
        self.scan(
            ScanFrom::Key(key),
            false,
            nexts.max(1) as u64,
            &mut |k, v| {
                if first {
                    found = k == key;
                    first = false;
                }
                if seen < nexts {
                    visit(k, v);
                    seen += 1;
                }
            },
        )?;
        Ok(found)
    }

    /// Writes every memtable out to tables and waits for it.
    fn flush(&self) -> Result<()>;

    /// Compacts the whole key range down the tree and waits for it.
    fn compact_all(&self) -> Result<()>;

    /// Counters since the engine was opened. `user_bytes_written` and `live_data_bytes` are
    /// the engine's own view; the harness replaces them by what it wrote (see `runner`).
    fn stats(&self) -> Result<EngineStats>;

    /// Engine-specific state for the `stats` benchmark (and the end of the mixed
    /// benchmarks), one line each, printed before the amplification line. Default none.
    fn extra_stats(&self) -> Vec<String> {
        Vec::new()
    }

    /// The engine's workload characterizer, for engines that have one. Default none.
    fn adaptation(&self) -> Option<Adaptation> {
        None
    }

    /// True when the engine stores its data through the OS's `write(2)` in this process, so
    /// the process's written bytes measure its write amplification (see
    /// `report::process_bytes_written`). Default true; in-memory engines say no.
    fn writes_through_os(&self) -> bool {
        true
    }

    /// Closes the engine, waiting for background work, and reports a failure to do so.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Settings that every engine is opened with, taken from the flags so that each engine is
/// configured alike.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// Memtable bytes.
    pub write_buffer_size: u64,
    /// Block cache bytes (0: no cache).
    pub cache_size: u64,
    /// Bloom bits per key (0: no filter).
    pub bloom_bits: u32,
    /// Block compression.
    pub compression: CompressionKind,
    /// Target data block size: 4 KiB for every engine.
    pub block_size: usize,
    /// Background flush/compaction threads: 2 for every engine.
    pub background_jobs: usize,
    /// Rialto's commit path for durable writes.
    pub commit: CommitPath,
    /// Rialto's TRIAD techniques (`--triad`; adaptive when not given). Other engines ignore it.
    pub triad: TriadMode,
    /// Rialto's journal-first pacing of flush and compaction writes. Other engines ignore it.
    pub journal_first: bool,
    /// Rialto's `wal_zero_fill_bytes_per_sync`. Other engines ignore it.
    pub wal_zero_fill: u64,
    /// Rialto's `background_nice`. Other engines ignore it.
    pub background_nice: i32,
    /// Rialto's merger `wait_spin`, µs. Other engines ignore it.
    pub wait_spin_us: u64,
    /// Rialto's merger `poll_preempted_after`, µs. Other engines ignore it.
    pub poll_preempted_us: u64,
}

impl EngineConfig {
    /// The engine settings of a run.
    pub fn from_config(cfg: &Config) -> EngineConfig {
        EngineConfig {
            write_buffer_size: cfg.write_buffer_size,
            cache_size: cfg.cache_size,
            bloom_bits: cfg.bloom_bits,
            compression: cfg.compression,
            block_size: 4096,
            background_jobs: 2,
            commit: cfg.commit,
            triad: cfg.triad_mode(),
            journal_first: cfg.journal_first,
            wal_zero_fill: cfg.wal_zero_fill,
            background_nice: cfg.background_nice,
            wait_spin_us: cfg.wait_spin_us,
            poll_preempted_us: cfg.poll_preempted_us,
        }
    }
}

/// Opens engines of one kind.
pub trait EngineFactory: Sync {
    /// Engine name (`rialto`, `rocksdb`).
    fn name(&self) -> &'static str;

    /// Opens (creating if missing) the database in directory `path`.
    fn open(&self, path: &Path, cfg: &EngineConfig) -> Result<Box<dyn BenchEngine>>;

    /// One-line description of the engine's build (version) for the report header.
    fn describe(&self) -> String {
        self.name().to_string()
    }

    /// A TRIAD mode this factory always runs, whatever `--triad` says (the `rialto:MODE`
    /// engines of `bench-compare`). Default none.
    fn triad_override(&self) -> Option<TriadMode> {
        None
    }

    /// True when the engine has TRIAD, so that `--triad` applies to it. Default false.
    fn has_triad(&self) -> bool {
        false
    }
}
