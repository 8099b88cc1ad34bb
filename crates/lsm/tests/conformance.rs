//! The engine conformance suite, run against the LSM engine on the real file system and on
//! the in-memory one, with buffers small enough that flushes and compactions happen.

use std::path::Path;
use std::sync::Arc;

use rialto_engine::conformance::{self, EngineFactory};
use rialto_engine::Result;
use rialto_io::MemFs;
use rialto_lsm::triad::{CharacterizerConfig, TriadOptions};
use rialto_lsm::{Db, Options};

fn small(fs: Option<MemFs>) -> Options {
    let mut o = Options {
        write_buffer_size: 32 << 10,
        target_file_size: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        level0_compaction_trigger: 2,
        ..Options::default()
    };
    if let Some(fs) = fs {
        o.fs = Arc::new(fs);
    }
    o
}

struct Posix;

impl EngineFactory for Posix {
    type Engine = Db;
    fn open(&self, dir: &Path) -> Result<Db> {
        Db::open(dir, small(None))
    }
}

struct Mem(MemFs);

impl EngineFactory for Mem {
    type Engine = Db;
    fn open(&self, dir: &Path) -> Result<Db> {
        Db::open(dir, small(Some(self.0.clone())))
    }
}

#[test]
fn conformance_posix() {
    conformance::run_all(&Posix);
}

#[test]
fn conformance_memfs() {
    conformance::run_all(&Mem(MemFs::new()));
}

/// With the row cache on (a small one, so eviction happens): cached reads must never differ
/// from the tree's.
struct MemRowCache(MemFs);

impl EngineFactory for MemRowCache {
    type Engine = Db;
    fn open(&self, dir: &Path) -> Result<Db> {
        Db::open(
            dir,
            Options {
                row_cache_size: 64 << 10,
                ..small(Some(self.0.clone()))
            },
        )
    }
}

#[test]
fn conformance_memfs_row_cache() {
    conformance::run_all(&MemRowCache(MemFs::new()));
}

/// With a row cache that warm-up passes fill all the time (no quiet period): a warmed row
/// must never differ from the tree either.
struct MemRowCacheWarm(MemFs);

impl EngineFactory for MemRowCacheWarm {
    type Engine = Db;
    fn open(&self, dir: &Path) -> Result<Db> {
        Db::open(
            dir,
            Options {
                row_cache_size: 4 << 20,
                row_cache_warm_quiet_ms: 0,
                ..small(Some(self.0.clone()))
            },
        )
    }
}

#[test]
fn conformance_memfs_row_cache_warm() {
    conformance::run_all(&MemRowCacheWarm(MemFs::new()));
}

/// Inline mode (`max_background_jobs: 0`): no threads; writers, `flush` and `compact_range`
/// run the flushes and compactions themselves.
struct MemInline(MemFs);

impl EngineFactory for MemInline {
    type Engine = Db;
    fn open(&self, dir: &Path) -> Result<Db> {
        Db::open(
            dir,
            Options {
                max_background_jobs: 0,
                ..small(Some(self.0.clone()))
            },
        )
    }
}

#[test]
fn conformance_memfs_inline_background() {
    conformance::run_all(&MemInline(MemFs::new()));
}

/// TRIAD-DISK deferring as much as it may (threshold 1: every L0 compaction waits until L0
/// holds 8 files), and the characterizer retuning every 100 operations: neither may change
/// what a reader sees.
struct MemTriad(MemFs, TriadOptions);

impl EngineFactory for MemTriad {
    type Engine = Db;
    fn open(&self, dir: &Path) -> Result<Db> {
        Db::open(
            dir,
            Options {
                triad: self.1.clone(),
                level0_slowdown_trigger: 16,
                level0_stop_trigger: 24,
                ..small(Some(self.0.clone()))
            },
        )
    }
}

#[test]
fn conformance_memfs_triad_disk_always_deferring() {
    let triad = TriadOptions {
        disk: true,
        adaptive: false,
        overlap_threshold: 1.0,
        max_deferred_l0_files: 8,
        ..TriadOptions::default()
    };
    conformance::run_all(&MemTriad(MemFs::new(), triad));
}

#[test]
fn conformance_memfs_triad_mem_always_on() {
    let triad = TriadOptions {
        mem: true,
        hot_fraction: 0.5,
        adaptive: false,
        ..TriadOptions::off()
    };
    conformance::run_all(&MemTriad(MemFs::new(), triad));
}

#[test]
fn conformance_memfs_triad_log_always_on() {
    let triad = TriadOptions {
        log: true,
        adaptive: false,
        ..TriadOptions::off()
    };
    conformance::run_all(&MemTriad(MemFs::new(), triad));
}

#[test]
fn conformance_posix_triad_everything_on() {
    let triad = TriadOptions {
        adaptive: false,
        hot_fraction: 0.3,
        ..TriadOptions::default()
    };
    conformance::run_all(&PosixTriad(triad));
}

/// On the real file system (preallocated segments trimmed, `pread` of values).
struct PosixTriad(TriadOptions);

impl EngineFactory for PosixTriad {
    type Engine = Db;
    fn open(&self, dir: &Path) -> Result<Db> {
        Db::open(
            dir,
            Options {
                triad: self.0.clone(),
                ..small(None)
            },
        )
    }
}

#[test]
fn conformance_memfs_triad_adaptive_small_windows() {
    let triad = TriadOptions {
        characterizer: CharacterizerConfig {
            window_ops: 100,
            confirm_windows: 1,
            ..CharacterizerConfig::default()
        },
        ..TriadOptions::default()
    };
    conformance::run_all(&MemTriad(MemFs::new(), triad));
}

#[test]
fn conformance_memfs_triad_off() {
    conformance::run_all(&MemTriad(MemFs::new(), TriadOptions::off()));
}

/// The limits themselves: a 64 KiB key with a 512 MiB value round-trips through the WAL,
/// the memtable, a flush, compaction and reopen (about 15 s and 2 GiB of memory).
#[test]
fn max_size_value_512_mib() {
    let dir = tempfile::tempdir().unwrap();
    conformance::check_max_size_values(
        &Posix,
        &dir.path().join("db"),
        rialto_engine::MAX_VALUE_LEN,
    );
}
