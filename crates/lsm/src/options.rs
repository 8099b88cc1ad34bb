//! Options of an LSM database. Every option states its default and its trade-off.

use std::sync::Arc;

use rialto_io::{Clock, FsRef, PosixFs, SystemClock};

use crate::cache::BlockCache;
use crate::throttle::ThrottleOptions;
use crate::triad::TriadOptions;

/// Block compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// No compression (default): fastest reads and writes, most space.
    #[default]
    None,
    /// LZ4: cheap, ~2x on typical data.
    Lz4,
    /// Zstandard (level 3 by default): smaller than LZ4, more CPU on writes and reads.
    Zstd,
}

impl Compression {
    /// Parses the db_bench names `none`, `lz4`, `zstd`.
    pub fn parse(s: &str) -> Option<Compression> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "no" => Some(Compression::None),
            "lz4" => Some(Compression::Lz4),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The name [`Compression::parse`] reads back: `none`, `lz4` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// Chooses the compression of a table a flush or compaction writes from the first user key
/// it holds; `None` leaves the database's ([`crate::Db::compression`]). With a
/// [`Partitioner`], a table holds one partition, so a codec chosen by partition covers the
/// whole table.
pub type CompressionFor = Arc<dyn Fn(&[u8]) -> Option<Compression> + Send + Sync>;

/// What recovery does when the WAL is damaged in bytes proven durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalRecovery {
    /// Default: fail the open with a Corruption error naming the file and offset. A torn
    /// write (a bad record that no later record proves durable, see `wal`) is always cut: it
    /// was never acknowledged as durable.
    #[default]
    Strict,
    /// Recover every record up to the first corrupt one and drop the rest (point-in-time
    /// recovery). Acknowledged writes after the damage are lost: the caller asked for it.
    Salvage,
}

/// Options of an LSM database.
#[derive(Clone)]
pub struct Options {
    /// File system (default: the real one). Tests pass a `MemFs`.
    pub fs: FsRef,
    /// Clock (default: the system's).
    pub clock: Arc<dyn Clock>,
    /// Create the database if the directory holds none. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Bytes a memtable holds before it is frozen and flushed. Default 64 MiB. Larger: fewer,
    /// larger L0 files and less write amplification; more memory and longer recovery.
    pub write_buffer_size: usize,
    /// Memtables (mutable + immutable) kept before writers wait for a flush. Default 2.
    pub max_write_buffer_number: usize,
    /// Target uncompressed bytes of a data block. Default 4 KiB. Larger: smaller index, better
    /// compression and scans; more bytes read per point lookup.
    pub block_size: usize,
    /// Keys between restart points in a data block. Default 16. Smaller: faster seeks in a
    /// block, less prefix compression.
    pub block_restart_interval: usize,
    /// [`Options::block_restart_interval`] of the tables an ingestion (a batch push) writes.
    /// Default 32. Those tables are written once, sorted, and usually hold a whole dataset, so
    /// the space matters more: with 25-byte engine keys, 32 instead of 16 saves about 0.5 byte
    /// per record (fewer whole keys and restart offsets), for a scan of up to 32 instead of 16
    /// entries inside a block on a lookup.
    pub ingest_block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters. Default 10 (about 1% false positives).
    pub bloom_bits_per_key: u32,
    /// Block compression of the tables flushes and compactions write. Default none. Changeable
    /// while the database runs ([`crate::Db::set_compression`]): tables written after the
    /// change use the new codec, those already written keep theirs (every block records its
    /// own). An ingestion chooses its own ([`crate::IngestOptions::compression`]).
    pub compression: Compression,
    /// Overrides [`Options::compression`] for some tables, by their first key. Default
    /// `None`. The server's keyspace writes each store's version tables with the store's
    /// codec this way.
    pub compression_for: Option<CompressionFor>,
    /// Shared block cache. Default: the process-wide cache ([`BlockCache::global`]), so every
    /// database opened in a process shares one memory budget.
    pub block_cache: Option<Arc<BlockCache>>,
    /// Bytes of the row cache of recently read values (`Db::get` only). Default 0: off. A hot
    /// key then costs one hash lookup instead of a memtable walk and table probes; every write
    /// takes a shard lock per key to invalidate it. See `cache/row.rs`.
    pub row_cache_size: usize,
    /// Warm the row cache up: once writes have paused for `row_cache_warm_quiet_ms` and no
    /// flush or compaction is running or due, a background pass reads the newest values in
    /// key order into the row cache's free room, until it has none (it never evicts a row).
    /// A pass runs again only after new data (a write, flush, compaction or ingestion).
    /// Default `true`; no effect without a row cache. A dataset that fits in the row cache is
    /// then served from it from the start (after a bulk load or a restart) instead of from
    /// the memtable and table blocks key by key as reads first touch them; the price is a
    /// background scan of up to the row cache's size in data after each burst of writes.
    pub row_cache_warm: bool,
    /// How long writes must pause before a row-cache warm-up pass starts. Default 1000 ms.
    /// Shorter: warm sooner after a load; longer: fewer passes under bursty writes.
    pub row_cache_warm_quiet_ms: u64,
    /// Pay deferred compaction once writes pause: after this many milliseconds without a
    /// write, the picker does what TRIAD's read tuning would (L0's commit-log tables are
    /// rewritten into ordinary tables, and TRIAD-DISK's deferral is lifted so L0 at its
    /// trigger compacts whatever the overlap), so reads that follow a load find a compacted
    /// tree instead of triggering that work, and sharing the CPU with it. Default 1000;
    /// 0: off (deferred work waits for the characterizer to see reads dominate). Shorter:
    /// the tree settles sooner; a pause that short between write bursts then pays
    /// compactions TRIAD would have deferred (more write amplification). Never in inline
    /// mode (`max_background_jobs == 0`).
    pub idle_compaction_quiet_ms: u64,
    /// Table files kept open at once. Default: derived from the process's open-file limit
    /// (half of `RLIMIT_NOFILE`, at least 64). Tables beyond it are reopened on demand.
    pub max_open_files: usize,
    /// Number of L0 files that triggers an L0→L1 compaction. Default 4.
    pub level0_compaction_trigger: usize,
    /// L0 files at which each write is delayed (1 ms per write batch group). Default 20.
    pub level0_slowdown_trigger: usize,
    /// L0 files at which writes wait until compaction catches up. Default 36.
    pub level0_stop_trigger: usize,
    /// Target size of L1. Default 256 MiB. Each deeper level is `level_size_multiplier` larger.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between levels. Default 10. Larger: fewer levels, more write amplification.
    pub level_size_multiplier: u64,
    /// Number of levels. Default 7.
    pub num_levels: usize,
    /// Target size of a table file written by compaction. Default 64 MiB.
    pub target_file_size: u64,
    /// Background threads for flushes and compactions. Default 2 (one flush, one compaction).
    ///
    /// 0 is the inline mode: no threads; a flush (and the compactions then due) runs on the
    /// writing thread that switches the memtable, and `flush`, `compact_range` and
    /// `wait_for_background_work` run due work themselves. Deterministic, for tests,
    /// simulation and fuzzing; a write that fills the memtable pays for the flush and any
    /// compaction, so it is not for serving.
    pub max_background_jobs: usize,
    /// CPU niceness of the background threads (0..=19). Default 0 (same as the caller).
    /// Higher: on a machine with few cores, flushes and compactions yield the CPU to the
    /// threads that commit and read, so a commit's latency does not include waiting behind a
    /// compaction for a core; the price is slower background work under CPU contention,
    /// which the write slowdown and stop triggers then turn into write stalls.
    pub background_nice: i32,
    /// Reserve disk space for each WAL segment up front (about 1.1 × `write_buffer_size`), so
    /// appends do not grow the file and an `fdatasync` of a durable write commits no new size
    /// (ext4 still commits the conversion of the reserved, unwritten extents, so the gain over
    /// appending is small; see design §3.1). Costs that disk space for the live segment even
    /// when it holds little. Default `true`.
    pub wal_preallocate: bool,
    /// Obsolete files (WAL segments, tables a flush, compaction or dropped range left) are
    /// removed by cutting this many bytes off their end at a time, paced like background
    /// writes, outside the engine's locks (`Fs::remove_file_gradually`). Default 8 MiB. On a
    /// file system that discards freed blocks in its journal commits (ext4 `-o discard`),
    /// removing a 73 MiB segment at once held a concurrent WAL `fdatasync` for 14-28 ms; in
    /// 8 MiB cuts for at most 3.6 ms (design §3.1). Smaller: shorter holds, more system calls
    /// per removal. 0: remove at once.
    pub delete_step_bytes: u64,
    /// Prepare the next WAL segment ahead as a file of zeros, written and synced in the
    /// background, when the active segment syncs at least once per this many bytes of log.
    /// Default 16 KiB; 0 never (segments are then only preallocated). Needs
    /// `wal_preallocate`. Over blocks already written an `fdatasync` commits data alone,
    /// about 100 µs against 150–170 µs into fallocated space on the test machine (design
    /// §3.1); the price is writing each segment twice (the zeros first, paced like flushes),
    /// which the default only pays for where syncs are frequent: about where the syncs saved
    /// outweigh the extra sequential write. Larger: prepare for sparser syncs too. Measured
    /// here: fillsync with 4 KiB values at one thread 1.29× faster, 100-byte values at 1-8
    /// threads 1.07-1.10×, no change where commits are CPU-bound (32 threads on 2 cores).
    /// Whatever this says, the engine stops preparing once the first prepared segment's
    /// syncs measure no faster than the first unprepared one's (design §3.1).
    pub wal_zero_fill_bytes_per_sync: u64,
    /// What recovery does with a WAL damaged before its tail. Default strict.
    pub wal_recovery: WalRecovery,
    /// Verify block checksums on every read. Default `true`: a flipped bit is reported as
    /// Corruption, never returned as data. Costs one CRC32C pass per block read from disk.
    pub verify_checksums: bool,
    /// Pacing of flush and compaction writes for the journal's sake (see `throttle.rs`).
    /// Default: on, with the defaults listed there.
    pub throttle: ThrottleOptions,
    /// I/O events (journal writes and syncs, flushes, compactions) kept for
    /// `Db::io_stats`. Default 4096 (about 160 KiB). 0 keeps only totals.
    pub io_timeline_capacity: usize,
    /// Splits the key space into partitions that no table file straddles: flushes and
    /// compactions cut their output where a key's partition differs from the previous key's.
    /// Default `None` (one partition). Trade-off: more, smaller files at partition boundaries;
    /// in exchange a partition never written before overlaps no file, so an ingestion into it
    /// can always link its tables into the bottom level, and a dead partition's files can be
    /// dropped whole. Must not change over a database's life.
    pub partitioner: Option<Partitioner>,
    /// TRIAD techniques and the workload characterizer (see [`crate::triad`]). Default:
    /// TRIAD-DISK on, tuned by the characterizer.
    pub triad: TriadOptions,
}

/// Returns the length of a user key's partition prefix: two keys are in the same partition
/// when those prefixes are equal.
pub type Partitioner = Arc<dyn Fn(&[u8]) -> usize + Send + Sync>;

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("block_size", &self.block_size)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("compression", &self.compression)
            .field("max_open_files", &self.max_open_files)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Bytes reserved for a WAL segment when `wal_preallocate` is on: the memtable's size and
    /// a tenth more (a segment holds one memtable's writes; records are a little smaller than
    /// their memtable entries, and a segment that outgrows it just extends).
    pub fn wal_preallocation_bytes(&self) -> u64 {
        if self.wal_preallocate {
            let b = self.write_buffer_size as u64;
            b + b / 10
        } else {
            0
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fs: Arc::new(PosixFs::new()),
            clock: Arc::new(SystemClock::new()),
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            block_size: 4096,
            block_restart_interval: 16,
            ingest_block_restart_interval: 32,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            compression_for: None,
            block_cache: None,
            row_cache_size: 0,
            row_cache_warm: true,
            row_cache_warm_quiet_ms: 1000,
            idle_compaction_quiet_ms: 1000,
            max_open_files: default_max_open_files(),
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 20,
            level0_stop_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            level_size_multiplier: 10,
            num_levels: 7,
            target_file_size: 64 << 20,
            max_background_jobs: 2,
            background_nice: 0,
            wal_preallocate: true,
            delete_step_bytes: 8 << 20,
            wal_zero_fill_bytes_per_sync: 16 << 10,
            wal_recovery: WalRecovery::Strict,
            verify_checksums: true,
            throttle: ThrottleOptions::default(),
            io_timeline_capacity: rialto_engine::DEFAULT_TIMELINE_CAPACITY,
            partitioner: None,
            triad: TriadOptions::default(),
        }
    }
}

/// Half of the soft open-file limit (the rest is left for sockets and logs), at least 64.
pub fn default_max_open_files() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if rc != 0 {
        return 500;
    }
    let cur = usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX);
    (cur / 2).clamp(64, 1 << 20)
}
