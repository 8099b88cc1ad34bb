//! db_bench's flags ([`BenchFlags`], parsed by clap) and their validated form ([`Config`]).
//!
//! Flag names keep db_bench's underscores (`--key_size`, not `--key-size`) because the point
//! is that a RocksDB user's command line works unchanged; both `--name=value` and
//! `--name value` are accepted, and booleans take `0/1/true/false` like gflags (a bare
//! `--sync` means true).

pub use rialto_lsm::triad::TriadMode;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{ArgAction, ValueEnum};

use crate::dist::{self, KeyDist};
use crate::error::{BenchError, Result};
use crate::keys;
use crate::workload::Benchmark;

/// db_bench's default benchmark list, less what Rialto has no equivalent for.
pub const DEFAULT_BENCHMARKS: &str = "fillseq,fillrandom,readrandom,readseq,readreverse,overwrite,\
readwhilewriting,seekrandom,deleterandom,stats";

/// The flags of `rialto bench` (db_bench's names and defaults).
///
/// Threads: like db_bench, every thread runs the benchmark's whole op count (`--num` writes
/// for a fill, `--reads` reads for a read benchmark), so `--threads=4` does 4x the ops;
/// micros/op is wall time x threads / ops and ops/sec is ops / wall time.
#[derive(Debug, Clone, clap::Args)]
#[command(rename_all = "snake_case")]
pub struct BenchFlags {
    /// Comma-separated benchmarks, run in order: fillseq, fillrandom, overwrite, fillsync,
    /// syncwhilecompacting, readrandom, readseq, readreverse, readwhilewriting,
    /// readrandomwriterandom, phaseshift, seekrandom, deleterandom, flush, compact, stats.
    /// syncwhilecompacting: synced writes (at most --num / 10) on the existing database while one
    /// more thread compacts the whole key range, until it is done. fill* start from an empty database;
    /// with --use_existing_db=1 they are skipped (as db_bench does). readrandomwriterandom:
    /// --reads ops per thread, each a read with probability --readwritepercent, else a put.
    /// phaseshift: per thread, --writes ops (default --num) write-heavy and skewed (10%
    /// reads, zipf --zipf_theta), then as many read-heavy and uniform (90% reads).
    #[arg(long, default_value = DEFAULT_BENCHMARKS, value_name = "LIST")]
    pub benchmarks: String,

    /// Number of keys: keys are drawn from [0, num), and each thread of a fill writes this many.
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    pub num: u64,

    /// Reads per thread of a read benchmark; -1 means --num.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    pub reads: i64,

    /// Writes per thread of a fill or overwrite; -1 means --num (fillsync: --num / 1000;
    /// syncwhilecompacting: --num / 10, ending earlier with its compaction).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    pub writes: i64,

    /// Bytes per key: the index as 8 big-endian bytes, padded with '0' (db_bench's layout).
    #[arg(long, default_value_t = 16, value_name = "BYTES")]
    pub key_size: usize,

    /// Bytes per value.
    #[arg(long, default_value_t = 100, value_name = "BYTES")]
    pub value_size: usize,

    /// Concurrent threads; each runs the benchmark's whole op count (see above).
    /// readwhilewriting runs this many readers plus one writer.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: usize,

    /// Sync the WAL on every write (0/1).
    #[arg(long, value_name = "BOOL", default_value = "false", value_parser = parse_bool,
          num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub sync: bool,

    /// Rialto's commit path for durable writes: `inline` (default; the transaction merger
    /// with async commit, writer threads executing groups themselves, as `rialto serve` does),
    /// `merger` (the same with a dedicated merger thread) or `direct` (the engine's own group
    /// commit, one leader syncing per group). Other engines ignore it.
    #[arg(long, value_enum, default_value_t = CommitPath::Inline, value_name = "PATH")]
    pub commit: CommitPath,

    /// Database directory [default: /tmp/rialtobench-$USER/<engine>]. It is deleted before
    /// fill benchmarks, and only if it is empty or was made by rialto bench.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Use the database as it is: don't delete it at start, skip fill benchmarks (0/1).
    #[arg(long, value_name = "BOOL", default_value = "false", value_parser = parse_bool,
          num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub use_existing_db: bool,

    /// Block cache capacity in bytes; 0 disables the cache.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    pub cache_size: u64,

    /// Bytes of a memtable before it is flushed.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    pub write_buffer_size: u64,

    /// Bloom filter bits per key; 0 disables filters. RocksDB gets a full (not block-based) filter.
    #[arg(long, default_value_t = 10, value_name = "BITS")]
    pub bloom_bits: u32,

    /// Block compression.
    #[arg(long, value_enum, default_value_t = CompressionKind::None, value_name = "TYPE")]
    pub compression_type: CompressionKind,

    /// Print a latency histogram after each benchmark (0/1).
    #[arg(long, value_name = "BOOL", default_value = "false", value_parser = parse_bool,
          num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub histogram: bool,

    /// Seed of the random key and value generators [default: from the clock; 0 also means
    /// from the clock]. The seed used is printed, so a run can be repeated.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Engine to benchmark [default: rialto]. rocksdb needs a build with `--features rocksdb`.
    #[arg(long, value_enum, value_name = "NAME")]
    pub engine: Option<EngineKind>,

    /// Operations per write batch (fills, overwrite, deleterandom, the readwhilewriting writer).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub batch_size: usize,

    /// Entries read after each seek of seekrandom.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seek_nexts: usize,

    /// Values compress to about this fraction of their size (db_bench's generator).
    #[arg(long, default_value_t = 0.5, value_name = "RATIO")]
    pub compression_ratio: f64,

    /// Distribution of every random key: uniform over [0, --num), or zipf (YCSB's scrambled
    /// Zipfian, exponent --zipf_theta: hot keys spread over the key space). Applies to
    /// fillrandom, overwrite, fillsync, deleterandom, readrandom, seekrandom,
    /// readwhilewriting and readrandomwriterandom (phaseshift sets its own per phase).
    #[arg(long, value_enum, default_value_t = KeyDist::Uniform, value_name = "DIST")]
    pub key_dist: KeyDist,

    /// Exponent of --key_dist=zipf and of phaseshift's skewed phase, in (0, 1) (both
    /// excluded): larger is more skewed; 0.99 (YCSB's) sends about two thirds of the ops on
    /// 1M keys to the hottest 1%.
    #[arg(long, default_value_t = dist::DEFAULT_ZIPF_THETA, value_name = "THETA")]
    pub zipf_theta: f64,

    /// Percentage of readrandomwriterandom's ops that are reads (the rest are puts), 0 to 100.
    #[arg(
        long,
        default_value_t = 90,
        allow_negative_numbers = true,
        value_name = "P"
    )]
    pub readwritepercent: i64,

    /// TRIAD techniques of the rialto engine [default: adaptive]: off (classic leveled LSM),
    /// mem (TRIAD-MEM alone: hot keys stay in memory at flushes), disk (TRIAD-DISK alone:
    /// L0 compaction deferred while overlap is low, fixed threshold), log (TRIAD-LOG alone:
    /// flushes index the WAL segment instead of copying values), on (all three, fixed
    /// settings), adaptive (Rialto's default: all three, switched and tuned at run time by
    /// the workload characterizer). Other engines ignore it, with a note.
    #[arg(long, value_parser = parse_triad, value_name = "MODE")]
    pub triad: Option<TriadMode>,

    /// Rialto's journal-first pacing (0/1): flush and compaction writes slow down while WAL
    /// syncs are slow. Default 1, as in Rialto; 0 shows what it protects commits from (see
    /// syncwhilecompacting). Other engines ignore it.
    #[arg(long, value_name = "BOOL", default_value = "true", value_parser = parse_bool,
          num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub journal_first: bool,

    /// Rialto's `wal_zero_fill_bytes_per_sync`: prepare WAL segments ahead as synced zeros
    /// when the log is synced at least once per this many bytes. Default 16384, as in Rialto;
    /// 0 never (segments are only preallocated), for an A/B of what it saves per sync.
    /// Other engines ignore it.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 10)]
    pub wal_zero_fill: u64,

    /// Rialto's `background_nice`: CPU niceness (0..=19) of its flush and compaction threads.
    /// Default 0, as in Rialto. Other engines ignore it.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub background_nice: i32,

    /// Rialto's merger `wait_spin` in microseconds: how long a writer blocked on its commit
    /// (and the syncer gathering writers) polls before sleeping. Default 300, as in Rialto; 0
    /// always sleeps, for an A/B of what polling saves. Other engines ignore it.
    #[arg(long, value_name = "MICROS", default_value_t = 300)]
    pub wait_spin_us: u64,

    /// Rialto's merger `poll_preempted_after` in microseconds: a poll's yield this long means
    /// another thread holds the CPU, and polling stops for a while. Default 500, as in
    /// Rialto; 0 never stops polling. Other engines ignore it.
    #[arg(long, value_name = "MICROS", default_value_t = 500)]
    pub poll_preempted_us: u64,
}

impl Default for BenchFlags {
    fn default() -> Self {
        BenchFlags {
            benchmarks: DEFAULT_BENCHMARKS.to_string(),
            num: 1_000_000,
            reads: -1,
            writes: -1,
            key_size: 16,
            value_size: 100,
            threads: 1,
            sync: false,
            commit: CommitPath::Inline,
            db: None,
            use_existing_db: false,
            cache_size: 64 << 20,
            write_buffer_size: 64 << 20,
            bloom_bits: 10,
            compression_type: CompressionKind::None,
            histogram: false,
            seed: None,
            engine: None,
            batch_size: 1,
            seek_nexts: 0,
            compression_ratio: 0.5,
            key_dist: KeyDist::Uniform,
            zipf_theta: dist::DEFAULT_ZIPF_THETA,
            readwritepercent: 90,
            triad: None,
            journal_first: true,
            wal_zero_fill: 16 << 10,
            background_nice: 0,
            wait_spin_us: 300,
            poll_preempted_us: 500,
        }
    }
}

/// gflags-style booleans: `1/0`, `true/false`, `yes/no`, `on/off`, `t/f`, `y/n`.
/// `--triad`'s value: the engine's mode names.
fn parse_triad(s: &str) -> std::result::Result<TriadMode, String> {
    TriadMode::parse(s).ok_or_else(|| {
        let known: Vec<_> = TriadMode::ALL.iter().map(|m| m.name()).collect();
        format!("'{s}' is not one of {}", known.join(", "))
    })
}

pub fn parse_bool(s: &str) -> std::result::Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" => Ok(true),
        "0" | "false" | "f" | "no" | "n" | "off" => Ok(false),
        _ => Err(format!("expected 0/1 or true/false, got '{s}'")),
    }
}

/// Block compression, named as db_bench's `--compression_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionKind {
    /// No compression.
    None,
    /// LZ4.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl CompressionKind {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            CompressionKind::None => "none",
            CompressionKind::Lz4 => "lz4",
            CompressionKind::Zstd => "zstd",
        }
    }
}

/// How Rialto commits durable writes in a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CommitPath {
    /// Through `rialto_txn::Merger` (async commit) with a merger thread.
    Merger,
    /// Through the merger with inline execution: writer threads execute groups themselves
    /// (`MergerOptions::inline_execution`, what `rialto serve` uses).
    Inline,
    /// Through the engine's own leader/follower group commit.
    Direct,
}

/// Which engine to drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineKind {
    /// Rialto's LSM tree.
    Rialto,
    /// RocksDB (only in builds with the `rocksdb` feature).
    Rocksdb,
    /// Not a database: appends each write to a preallocated file and, with `--sync`,
    /// `fdatasync`s it, one at a time. Its fillsync ops/sec is the disk's durable-write limit
    /// for one writer (1 / fdatasync latency), measured in the same run as the engines.
    Disk,
}

impl EngineKind {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Rialto => "rialto",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Disk => "disk",
        }
    }

    /// Parses a flag value (`rialto`, `rocksdb`).
    pub fn parse(s: &str) -> Result<EngineKind> {
        EngineKind::from_str(s.trim(), true).map_err(|_| {
            BenchError::usage(format!(
                "unknown engine '{s}' (expected rialto, rocksdb or disk)"
            ))
        })
    }
}

/// Validated settings of one run; built from [`BenchFlags`] by [`Config::from_flags`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Benchmarks to run, in order.
    pub benchmarks: Vec<Benchmark>,
    /// Key space and default op count.
    pub num: u64,
    /// Reads per thread.
    pub reads: u64,
    /// Writes per thread of fills; `None` = the benchmark's default (`num`, fillsync `num/1000`).
    pub writes: Option<u64>,
    /// Bytes per key.
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Threads per benchmark.
    pub threads: usize,
    /// Sync every write.
    pub sync: bool,
    /// Rialto's commit path for durable writes.
    pub commit: CommitPath,
    /// Database directory.
    pub db: PathBuf,
    /// Keep the database, skip fills.
    pub use_existing_db: bool,
    /// Block cache bytes.
    pub cache_size: u64,
    /// Memtable bytes.
    pub write_buffer_size: u64,
    /// Bloom bits per key.
    pub bloom_bits: u32,
    /// Block compression.
    pub compression: CompressionKind,
    /// Print latency histograms.
    pub histogram: bool,
    /// Base seed of every generator.
    pub seed: u64,
    /// True when `seed` was taken from the clock.
    pub seed_from_clock: bool,
    /// Engine to drive.
    pub engine: EngineKind,
    /// Ops per write batch.
    pub batch_size: usize,
    /// Entries read after a seek.
    pub seek_nexts: usize,
    /// Target compressed/raw size of values.
    pub compression_ratio: f64,
    /// Distribution of random keys.
    pub key_dist: KeyDist,
    /// Zipf exponent, in (0, 1).
    pub zipf_theta: f64,
    /// Percentage of readrandomwriterandom's ops that are reads.
    pub read_percent: u8,
    /// `--triad` as given; `None`: not given (the rialto engine then runs adaptive).
    pub triad: Option<TriadMode>,
    /// Rialto's journal-first pacing of background writes.
    pub journal_first: bool,
    /// Rialto's `wal_zero_fill_bytes_per_sync`.
    pub wal_zero_fill: u64,
    /// Rialto's `background_nice`.
    pub background_nice: i32,
    /// Rialto's merger `wait_spin`, µs.
    pub wait_spin_us: u64,
    /// Rialto's merger `poll_preempted_after`, µs.
    pub poll_preempted_us: u64,
}

impl Config {
    /// Validates flags: every error here is a usage error, found before anything runs.
    pub fn from_flags(f: &BenchFlags) -> Result<Config> {
        let benchmarks = Benchmark::parse_list(&f.benchmarks)?;
        if f.num == 0 {
            return Err(BenchError::usage("--num must be at least 1"));
        }
        if f.key_size == 0 {
            return Err(BenchError::usage("--key_size must be at least 1"));
        }
        if f.key_size > rialto_engine::MAX_KEY_LEN {
            return Err(BenchError::usage(format!(
                "--key_size={} exceeds the {} byte key limit",
                f.key_size,
                rialto_engine::MAX_KEY_LEN
            )));
        }
        if f.value_size > rialto_engine::MAX_VALUE_LEN {
            return Err(BenchError::usage(format!(
                "--value_size={} exceeds the {} byte value limit",
                f.value_size,
                rialto_engine::MAX_VALUE_LEN
            )));
        }
        let reads = count_flag("reads", f.reads, f.num)?;
        let writes = match f.writes {
            -1 => None,
            w => Some(count_flag("writes", w, f.num)?),
        };
        // Fills with more writes than keys (fillseq) write indices up to `writes`; every index
        // must still map to a distinct key.
        let max_index = f.num.max(writes.unwrap_or(0));
        if max_index > keys::distinct_keys(f.key_size) {
            return Err(BenchError::usage(format!(
                "--key_size={} holds only {} distinct keys, fewer than the {} needed",
                f.key_size,
                keys::distinct_keys(f.key_size),
                max_index
            )));
        }
        if f.threads == 0 {
            return Err(BenchError::usage("--threads must be at least 1"));
        }
        if f.batch_size == 0 {
            return Err(BenchError::usage("--batch_size must be at least 1"));
        }
        if !(f.compression_ratio > 0.0 && f.compression_ratio <= 1.0) {
            return Err(BenchError::usage(format!(
                "--compression_ratio={} must be in (0, 1]",
                f.compression_ratio
            )));
        }
        if !dist::valid_theta(f.zipf_theta) {
            return Err(BenchError::usage(format!(
                "--zipf_theta={} must be in (0, 1), both excluded",
                f.zipf_theta
            )));
        }
        let read_percent = match u8::try_from(f.readwritepercent) {
            Ok(p) if p <= 100 => p,
            _ => {
                return Err(BenchError::usage(format!(
                    "--readwritepercent={} must be a percentage from 0 to 100",
                    f.readwritepercent
                )))
            }
        };
        let (seed, seed_from_clock) = match f.seed {
            Some(s) if s != 0 => (s, false),
            _ => (clock_seed(), true),
        };
        let engine = f.engine.unwrap_or(EngineKind::Rialto);
        let db = f.db.clone().unwrap_or_else(|| default_db_path(engine));
        Ok(Config {
            benchmarks,
            num: f.num,
            reads,
            writes,
            key_size: f.key_size,
            value_size: f.value_size,
            threads: f.threads,
            sync: f.sync,
            commit: f.commit,
            db,
            use_existing_db: f.use_existing_db,
            cache_size: f.cache_size,
            write_buffer_size: f.write_buffer_size,
            bloom_bits: f.bloom_bits,
            compression: f.compression_type,
            histogram: f.histogram,
            seed,
            seed_from_clock,
            engine,
            batch_size: f.batch_size,
            seek_nexts: f.seek_nexts,
            compression_ratio: f.compression_ratio,
            key_dist: f.key_dist,
            zipf_theta: f.zipf_theta,
            read_percent,
            triad: f.triad,
            journal_first: f.journal_first,
            wal_zero_fill: f.wal_zero_fill,
            background_nice: f.background_nice,
            wait_spin_us: f.wait_spin_us,
            poll_preempted_us: f.poll_preempted_us,
        })
    }

    /// The TRIAD mode the rialto engine runs: `--triad`, or adaptive.
    pub fn triad_mode(&self) -> TriadMode {
        self.triad.unwrap_or(TriadMode::Adaptive)
    }

    /// Uncompressed bytes of one entry.
    pub fn entry_bytes(&self) -> u64 {
        (self.key_size + self.value_size) as u64
    }

    /// Size of a value after compression at `compression_ratio`, as db_bench prints it.
    pub fn compressed_value_size(&self) -> usize {
        (self.value_size as f64 * self.compression_ratio + 0.5) as usize
    }
}

/// `-1` means `num`; other negative values are mistakes.
fn count_flag(name: &str, v: i64, num: u64) -> Result<u64> {
    match v {
        -1 => Ok(num),
        v if v < 0 => Err(BenchError::usage(format!(
            "--{name}={v} must be -1 (meaning --num) or a count"
        ))),
        v => Ok(v as u64),
    }
}

/// Nanoseconds since the epoch, mixed so that runs started in the same second still differ.
fn clock_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed);
    // Small, positive, printable seeds are easier to copy back onto a command line.
    (nanos ^ (nanos >> 29)) % 1_000_000_000 + 1
}

/// The process's user id (the owner of `/proc/self`), for when `$USER` is unset (cron, CI).
fn current_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// Help text after the flags of `rialto bench`: the semantics a db_bench user must know.
pub const AFTER_HELP: &str = "\
Semantics follow db_bench: every thread runs the benchmark's whole op count (--threads=4 does
four times the ops of --threads=1); micros/op = wall time x threads / ops and ops/sec = ops /
wall time. Keys are drawn from [0, --num), uniformly or, with --key_dist=zipf, skewed.
fill* benchmarks start from an empty database. Flags take --name=value or --name value;
booleans take 0/1 or true/false.

readrandomwriterandom and phaseshift time reads and writes apart and always print their p50
and p99 (microseconds). phaseshift prints a line per phase and, for rialto, when the workload
characterizer changed class: the class switched N windows after the phase change, where N is
the decision's window minus the window count printed at the start of phase 2.

Examples:
  rialto bench --benchmarks=fillrandom,readrandom,stats --num=1000000 --threads=2 --histogram=1
  rialto bench --benchmarks=fillrandom,readrandomwriterandom,stats --key_dist=zipf --readwritepercent=50
  rialto bench --benchmarks=fillrandom,phaseshift,stats --num=1000000 --triad=adaptive";

/// `/tmp/rialtobench-$USER/<engine>`: per user, so that users of a shared machine never delete
/// each other's databases, and per engine, so that one engine never opens the other's files.
pub fn default_db_path(engine: EngineKind) -> PathBuf {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| current_uid().map_or_else(|| "default".to_string(), |u| u.to_string()));
    let user: String = user
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::env::temp_dir()
        .join(format!("rialtobench-{user}"))
        .join(engine.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        flags: BenchFlags,
    }

    fn parse(args: &[&str]) -> std::result::Result<BenchFlags, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.flags)
    }

    #[test]
    fn defaults_match_db_bench() {
        let f = parse(&[]).unwrap();
        assert_eq!(f.benchmarks, DEFAULT_BENCHMARKS);
        assert_eq!(f.num, 1_000_000);
        assert_eq!((f.reads, f.writes), (-1, -1));
        assert_eq!((f.key_size, f.value_size), (16, 100));
        assert_eq!(f.threads, 1);
        assert!(!f.sync && !f.use_existing_db && !f.histogram);
        assert_eq!(f.cache_size, 64 << 20);
        assert_eq!(f.write_buffer_size, 64 << 20);
        assert_eq!(f.bloom_bits, 10);
        assert_eq!(f.compression_type, CompressionKind::None);
        assert_eq!(f.engine, None);
        assert_eq!((f.batch_size, f.seek_nexts), (1, 0));
        assert_eq!(f.compression_ratio, 0.5);
        assert_eq!(f.seed, None);
        assert_eq!(f.key_dist, KeyDist::Uniform);
        assert_eq!(f.zipf_theta, 0.99);
        assert_eq!(f.readwritepercent, 90);
        assert_eq!(f.triad, None);
        // The hand-written Default agrees with clap's defaults.
        let d = BenchFlags::default();
        assert_eq!(format!("{d:?}"), format!("{f:?}"));
    }

    #[test]
    fn equals_and_space_forms_with_underscores() {
        let f = parse(&[
            "--num=2000",
            "--key_size",
            "20",
            "--value_size=64",
            "--benchmarks=fillseq,readrandom",
            "--compression_type=zstd",
            "--reads",
            "-1",
            "--writes=-1",
            "--use_existing_db=1",
            "--db",
            "/tmp/x",
            "--engine=rocksdb",
            "--seed=42",
            "--seek_nexts=10",
            "--batch_size=8",
            "--compression_ratio=0.25",
            "--write_buffer_size=1048576",
            "--cache_size=0",
            "--bloom_bits=0",
            "--threads=4",
        ])
        .unwrap();
        assert_eq!(f.num, 2000);
        assert_eq!(f.key_size, 20);
        assert_eq!(f.value_size, 64);
        assert_eq!(f.benchmarks, "fillseq,readrandom");
        assert_eq!(f.compression_type, CompressionKind::Zstd);
        assert_eq!(f.reads, -1);
        assert!(f.use_existing_db);
        assert_eq!(f.db.as_deref(), Some(std::path::Path::new("/tmp/x")));
        assert_eq!(f.engine, Some(EngineKind::Rocksdb));
        assert_eq!(f.seed, Some(42));
        assert_eq!((f.seek_nexts, f.batch_size, f.threads), (10, 8, 4));
        assert_eq!(f.compression_ratio, 0.25);
        assert_eq!(
            (f.write_buffer_size, f.cache_size, f.bloom_bits),
            (1 << 20, 0, 0)
        );
    }

    #[test]
    fn triad_workload_flags() {
        let f = parse(&[
            "--key_dist=zipf",
            "--zipf_theta",
            "0.7",
            "--readwritepercent=50",
            "--triad=disk",
            "--benchmarks=readrandomwriterandom,phaseshift",
        ])
        .unwrap();
        assert_eq!(f.key_dist, KeyDist::Zipf);
        assert_eq!(f.zipf_theta, 0.7);
        assert_eq!(f.readwritepercent, 50);
        assert_eq!(f.triad, Some(TriadMode::Disk));
        for (arg, mode) in [
            ("--triad=off", TriadMode::Off),
            ("--triad=mem", TriadMode::Mem),
            ("--triad=log", TriadMode::Log),
            ("--triad=on", TriadMode::On),
            ("--triad=adaptive", TriadMode::Adaptive),
        ] {
            let f = parse(&[arg]).unwrap();
            assert_eq!(f.triad, Some(mode), "{arg}");
            assert_eq!(format!("--triad={}", mode.name()), arg);
        }
        // A negative percentage reaches validation (and its readable error), not clap's.
        assert_eq!(
            parse(&["--readwritepercent", "-5"])
                .unwrap()
                .readwritepercent,
            -5
        );
        assert!(parse(&["--key_dist=pareto"]).is_err());
        assert!(parse(&["--triad=full"]).is_err());
        assert!(parse(&["--zipf_theta=high"]).is_err());

        let c = Config::from_flags(&BenchFlags { seed: Some(1), ..f }).unwrap();
        assert_eq!(c.key_dist, KeyDist::Zipf);
        assert_eq!(c.read_percent, 50);
        assert_eq!(c.triad_mode(), TriadMode::Disk);
        let c = Config::from_flags(&BenchFlags {
            seed: Some(1),
            ..BenchFlags::default()
        })
        .unwrap();
        assert_eq!((c.triad, c.triad_mode()), (None, TriadMode::Adaptive));
        assert_eq!(c.read_percent, 90);
    }

    #[test]
    fn booleans_like_gflags() {
        for (arg, want) in [
            ("--sync=1", true),
            ("--sync=0", false),
            ("--sync=true", true),
            ("--sync=false", false),
            ("--sync", true),
        ] {
            assert_eq!(parse(&[arg]).unwrap().sync, want, "{arg}");
        }
        assert!(parse(&["--histogram", "1"]).unwrap().histogram);
        assert!(!parse(&["--histogram", "0"]).unwrap().histogram);
        // A bare boolean followed by another flag does not swallow it.
        let f = parse(&["--histogram", "--num=5"]).unwrap();
        assert!(f.histogram);
        assert_eq!(f.num, 5);
        assert!(parse(&["--sync=maybe"]).is_err());
    }

    #[test]
    fn unknown_and_malformed_flags_fail() {
        assert!(parse(&["--nosuchflag=1"]).is_err());
        assert!(parse(&["--num=abc"]).is_err());
        assert!(parse(&["--compression_type=snappy"]).is_err());
        assert!(parse(&["--engine=leveldb"]).is_err());
        // Kebab-case is not db_bench's spelling.
        assert!(parse(&["--key-size=8"]).is_err());
    }

    #[test]
    fn validation() {
        let ok = |f: BenchFlags| Config::from_flags(&f);
        let base = BenchFlags {
            seed: Some(7),
            ..BenchFlags::default()
        };
        let c = ok(base.clone()).unwrap();
        assert_eq!(c.reads, 1_000_000);
        assert_eq!(c.writes, None);
        assert_eq!(c.seed, 7);
        assert!(!c.seed_from_clock);
        assert_eq!(c.compressed_value_size(), 50);
        assert_eq!(c.entry_bytes(), 116);
        assert!(c.db.ends_with("rialto"));

        let c = ok(BenchFlags {
            seed: Some(0),
            reads: 10,
            writes: 20,
            ..base.clone()
        })
        .unwrap();
        assert!(c.seed_from_clock && c.seed != 0);
        assert_eq!((c.reads, c.writes), (10, Some(20)));

        for bad in [
            BenchFlags {
                num: 0,
                ..base.clone()
            },
            BenchFlags {
                reads: -2,
                ..base.clone()
            },
            BenchFlags {
                key_size: 0,
                ..base.clone()
            },
            BenchFlags {
                key_size: 2,
                num: 70_000,
                ..base.clone()
            },
            BenchFlags {
                threads: 0,
                ..base.clone()
            },
            BenchFlags {
                batch_size: 0,
                ..base.clone()
            },
            BenchFlags {
                compression_ratio: 0.0,
                ..base.clone()
            },
            BenchFlags {
                compression_ratio: 1.5,
                ..base.clone()
            },
            BenchFlags {
                benchmarks: "fillseq,nosuch".into(),
                ..base.clone()
            },
        ] {
            let e = ok(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
        }
        // The new flags: one readable line naming the flag and the accepted range.
        for theta in [0.0, 1.0, 1.5, -0.2, f64::NAN] {
            let e = ok(BenchFlags {
                zipf_theta: theta,
                ..base.clone()
            })
            .unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert_eq!(
                e.to_string(),
                format!("--zipf_theta={theta} must be in (0, 1), both excluded")
            );
        }
        for p in [-1, 101, 1000] {
            let e = ok(BenchFlags {
                readwritepercent: p,
                ..base.clone()
            })
            .unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert_eq!(
                e.to_string(),
                format!("--readwritepercent={p} must be a percentage from 0 to 100")
            );
        }
        for p in [0, 100] {
            assert!(ok(BenchFlags {
                readwritepercent: p,
                ..base.clone()
            })
            .is_ok());
        }
        // Two-byte keys hold 65536 distinct keys.
        assert!(ok(BenchFlags {
            key_size: 2,
            num: 65_536,
            ..base
        })
        .is_ok());
    }

    #[test]
    fn engine_names() {
        assert_eq!(EngineKind::parse("rocksdb").unwrap(), EngineKind::Rocksdb);
        assert_eq!(EngineKind::parse(" Rialto ").unwrap(), EngineKind::Rialto);
        assert!(EngineKind::parse("lmdb").is_err());
        assert_eq!(CompressionKind::Lz4.name(), "lz4");
    }
}
