//! `rialto bench`: a benchmark harness that RocksDB users can read at once.
//!
//! It takes db_bench's flags (`--benchmarks=fillseq,readrandom --num=1000000 ...`), runs
//! db_bench's workloads with db_bench's key and value shapes, and prints db_bench's report
//! lines, so that numbers from `rialto bench` and from RocksDB's own `db_bench` line up, and
//! so that the same harness can drive RocksDB itself (`--engine=rocksdb`, behind the cargo
//! feature `rocksdb`) for a like-for-like comparison ([`compare`]).
//!
//! Everything here is engine-agnostic and talks to an engine through the small
//! [`BenchEngine`] trait; the adapters live in `engines/`, one small file each, so that the
//! harness compiles and is tested without any particular engine.

// The two commands' namespaces: each has its flags' help text (`AFTER_HELP`), and `compare`
// runs a comparison over any factories (the harness tests pit two in-memory engines).
pub mod compare;
pub mod config;

mod dist;
mod engine;
mod engines;
mod error;
mod histogram;
mod keys;
mod live;
mod report;
mod runner;
mod values;
mod workload;

pub use compare::{CompareFlags, CompareReport};
pub use config::{BenchFlags, CommitPath, CompressionKind, Config, EngineKind, TriadMode};
pub use dist::KeyDist;
pub use engine::{
    Adaptation, BenchEngine, ClassChange, EngineConfig, EngineFactory, ScanFrom, Visitor,
};
#[cfg(feature = "rocksdb")]
pub use engines::rocksdb_load::{PutLoader, SstLoader};
pub use error::{BenchError, Result};
pub use runner::{BenchResult, OpMix, PhaseResult, Runner};
pub use workload::Benchmark;

use std::io::Write;

/// Runs `rialto bench` with parsed flags, writing db_bench's report to `out`.
pub fn run_bench(flags: &BenchFlags, out: &mut dyn Write) -> Result<Vec<BenchResult>> {
    let cfg = Config::from_flags(flags)?;
    let factory = engines::factory(cfg.engine)?;
    Runner::new(&cfg, factory.as_ref(), out).run_all()
}

/// Runs `rialto bench-compare`: every engine of `--engines`, alternately, `--rounds` times,
/// then prints the table of medians.
pub fn run_compare(flags: &CompareFlags, out: &mut dyn Write) -> Result<CompareReport> {
    let cfg = Config::from_flags(&flags.bench)?;
    let factories = flags.engine_factories()?;
    let refs: Vec<&dyn EngineFactory> = factories.iter().map(|f| f.as_ref()).collect();
    let base = flags
        .bench
        .db
        .clone()
        .unwrap_or_else(compare::default_base_dir);
    compare::run(&cfg, &base, &refs, flags.rounds, out)
}
