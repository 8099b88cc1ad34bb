//! End-to-end runs of the harness through its public API: small benchmarks against the
//! in-memory test engine (no disk engine involved), and the same against Rialto itself.

// The in-memory engine is the library's own test engine; it refers to `crate::engine` and
// `crate::error`, which these re-exports provide here.
mod engine {
    pub use rialto_bench::engine::*;
}
mod error {
    pub use rialto_bench::error::*;
}
#[path = "../src/engines/memory.rs"]
mod memory;

use rialto_bench::{compare, BenchFlags, Config, Runner};

fn flags(db: &std::path::Path, benchmarks: &str) -> BenchFlags {
    BenchFlags {
        benchmarks: benchmarks.into(),
        num: 2000,
        seed: Some(1234),
        db: Some(db.to_path_buf()),
        ..BenchFlags::default()
    }
}

/// Splits a db_bench report line into (name, micros/op, ops/sec, rest).
fn parse_line(line: &str) -> Option<(String, f64, u64, String)> {
    let (name, rest) = line.split_once(" : ")?;
    let (micros, rest) = rest.trim_start().split_once(" micros/op ")?;
    let (ops, rest) = rest.split_once(" ops/sec;")?;
    Some((
        name.trim_end().to_string(),
        micros.parse().ok()?,
        ops.parse().ok()?,
        rest.to_string(),
    ))
}

#[test]
fn small_run_prints_db_bench_report() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::from_flags(&flags(
        &dir.path().join("db"),
        "fillseq,fillrandom,readrandom,readseq,readreverse,overwrite,readwhilewriting,seekrandom,deleterandom,stats",
    ))
    .unwrap();
    let factory = memory::MemFactory::new("mem");
    let mut out = Vec::new();
    let results = Runner::new(&cfg, &factory, &mut out).run_all().unwrap();
    let out = String::from_utf8(out).unwrap();

    assert!(out.contains("Keys:       16 bytes each\n"), "{out}");
    assert!(out.contains("Entries:    2000\n"));
    assert!(out.contains("Seed:       1234\n"));
    let lines: Vec<_> = out.lines().filter_map(parse_line).collect();
    let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "fillseq",
            "fillrandom",
            "readrandom",
            "readseq",
            "readreverse",
            "overwrite",
            "readwhilewriting",
            "seekrandom",
            "deleterandom"
        ]
    );
    assert_eq!(results.len(), 9);
    for (line, r) in lines.iter().zip(&results) {
        assert!(line.1 > 0.0, "{line:?}");
        assert_eq!(line.2, r.ops_per_sec() as u64);
    }
    // Fills report MB/s; lookups report what they found.
    assert!(lines[0].3.ends_with(" MB/s"), "{:?}", lines[0]);
    assert!(lines[2].3.contains(" of 2000 found)"), "{:?}", lines[2]);
    assert_eq!(results[0].ops, 2000);
    assert_eq!(
        results[3].ops, results[4].ops,
        "readseq and readreverse see the same keys"
    );
    assert!(
        out.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("amplification : write "),
        "{out}"
    );
}

#[test]
fn comparison_of_two_engines() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::from_flags(&flags(dir.path(), "fillrandom,readrandom")).unwrap();
    let a = memory::MemFactory::new("left");
    let b = memory::MemFactory::new("right");
    let mut out = Vec::new();
    let report = compare::run(&cfg, dir.path(), &[&a, &b], 3, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("median of 3 rounds"), "{out}");
    assert!(out.contains("left/right"));
    assert_eq!(report.ops_per_sec[0][1].len(), 3);
    assert!(report.median_ops(1, 0).unwrap() > 0.0);
}

/// The real engine, through its adapter: small enough to be quick, large enough to cross
/// a memtable flush with a 64 KiB write buffer.
#[test]
fn rialto_engine_small_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = flags(
        &dir.path().join("db"),
        "fillrandom,readrandom,readseq,readreverse,seekrandom,deleterandom,flush,compact,stats",
    );
    f.write_buffer_size = 64 << 10;
    f.cache_size = 1 << 20;
    f.seek_nexts = 2;
    let mut out = Vec::new();
    let results = rialto_bench::run_bench(&f, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(results[0].ops, 2000);
    // readseq visits exactly the keys that readreverse visits.
    assert_eq!(results[2].ops, results[3].ops);
    assert!(out.contains("** rialto statistics **"), "{out}");
    assert!(out
        .trim_end()
        .lines()
        .last()
        .unwrap()
        .starts_with("amplification : write "));
}
