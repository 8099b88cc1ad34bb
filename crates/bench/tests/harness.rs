//! End-to-end runs of the harness through its public API: small benchmarks against the
//! in-memory test engine (no disk engine involved), and the same against Rialto itself.

// The in-memory engine is the library's own test engine; it refers to `crate::engine` and
// `crate::error`, which these re-exports provide here.
mod engine {
    pub use rialto_bench::{BenchEngine, EngineConfig, EngineFactory, ScanFrom, Visitor};
}
mod error {
    pub use rialto_bench::Result;
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

/// Durable writes beside a full compaction, with the journal-first pacing on and off: the
/// writers stop with the compaction (or at their count) and report commit latencies.
#[test]
fn syncwhilecompacting_on_rialto() {
    for journal_first in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut f = flags(
            &dir.path().join("db"),
            "fillrandom,syncwhilecompacting,readseq",
        );
        f.num = 20_000;
        f.writes = 200;
        f.write_buffer_size = 64 << 10;
        f.journal_first = journal_first;
        f.histogram = true;
        let mut out = Vec::new();
        let results = rialto_bench::run_bench(&f, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let (_, _, _, rest) = line_of(&out, "syncwhilecompacting");
        assert!(rest.contains("(compaction "), "{out}");
        let r = &results[1];
        assert!(r.ops >= 1 && r.ops <= 200, "{}", r.ops);
        assert!(out.contains("Microseconds per write"), "{out}");
    }
}

/// The last report line of `name`, parsed.
fn line_of(out: &str, name: &str) -> (String, f64, u64, String) {
    out.lines()
        .filter_map(parse_line)
        .find(|l| l.0 == name)
        .unwrap_or_else(|| panic!("no {name} line in\n{out}"))
}

#[test]
fn readrandomwriterandom_with_zipf_on_the_memory_engine() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = flags(
        &dir.path().join("db"),
        "fillrandom,readrandomwriterandom,stats",
    );
    f.key_dist = rialto_bench::KeyDist::Zipf;
    f.zipf_theta = 0.9;
    f.readwritepercent = 80;
    f.threads = 2;
    let cfg = Config::from_flags(&f).unwrap();
    let factory = memory::MemFactory::new("mem");
    let mut out = Vec::new();
    let results = Runner::new(&cfg, &factory, &mut out).run_all().unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("KeyDist:    zipf, theta 0.9 (scrambled)\n"),
        "{out}"
    );
    let line = line_of(&out, "readrandomwriterandom");
    assert!(line.1 > 0.0 && line.2 > 0, "{line:?}");
    assert!(line.3.contains(" total:4000 found:"), "{line:?}");
    let mix = results[1].mix.as_ref().unwrap();
    assert_eq!(mix.reads + mix.writes, 4000);
    assert!(mix.reads > 2900 && mix.reads < 3500, "{}", mix.reads);
    // Hot keys were written by the zipf fill: most zipf reads find theirs.
    assert!(
        mix.found * 10 > mix.reads * 8,
        "{} of {}",
        mix.found,
        mix.reads
    );
    assert!(out.contains("\nlatency (us) : read p50 "), "{out}");
    assert!(out.contains(&format!("({} ops); write p50 ", mix.reads)));
    // No TRIAD here, and the stats still end with the amplification line.
    assert!(!out.contains("TRIAD") && !out.contains("triad"));
    assert!(out
        .trim_end()
        .lines()
        .last()
        .unwrap()
        .starts_with("amplification : write "));
}

#[test]
fn readrandomwriterandom_with_zipf_on_rialto() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = flags(
        &dir.path().join("db"),
        "fillrandom,readrandomwriterandom,stats",
    );
    f.key_dist = rialto_bench::KeyDist::Zipf;
    f.readwritepercent = 50;
    f.write_buffer_size = 64 << 10;
    f.cache_size = 1 << 20;
    f.triad = Some(rialto_bench::TriadMode::Disk);
    let mut out = Vec::new();
    let results = rialto_bench::run_bench(&f, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("TRIAD:      disk\n"), "{out}");
    let mix = results[1].mix.as_ref().unwrap();
    assert_eq!(mix.reads + mix.writes, 2000);
    assert!(mix.found > 0);
    assert!(line_of(&out, "readrandomwriterandom")
        .3
        .contains(" total:2000 "));
    assert!(out.contains("\nlatency (us) : read p50 "), "{out}");
    // TRIAD's state after the benchmark and in stats, before the amplification line.
    assert_eq!(
        out.matches("triad : mem off disk on log off adaptive off overlap threshold 0.40")
            .count(),
        2,
        "{out}"
    );
    let tail: Vec<&str> = out.trim_end().lines().rev().take(2).collect();
    assert!(tail[0].starts_with("amplification : write "), "{out}");
    assert!(
        tail[1].starts_with("triad : ") || tail[1].starts_with("written (os)"),
        "{out}"
    );
}

#[test]
fn phaseshift_on_rialto_shows_the_characterizer_switching() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = flags(&dir.path().join("db"), "phaseshift,stats");
    // 30,000 ops per phase: three 10,000-op characterizer windows each, and a class is
    // confirmed after two.
    f.num = 30_000;
    f.cache_size = 4 << 20;
    let mut out = Vec::new();
    let results = rialto_bench::run_bench(&f, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("TRIAD:      adaptive\n"), "{out}");
    let r = &results[0];
    assert_eq!(r.ops, 60_000);
    assert_eq!(r.phases.len(), 2);
    assert_eq!(r.phases[1].ops_before, 30_000);
    // Nothing ran before: phase 1 starts at window 0 and phase 2 after phase 1's three.
    assert_eq!(r.phases[0].windows_at_start, Some(0));
    assert_eq!(r.phases[1].windows_at_start, Some(3));
    let phase1 = out
        .lines()
        .find(|l| l.starts_with("phase 1      : "))
        .unwrap();
    assert!(
        phase1.contains("write-heavy skewed, 10% reads, keys zipf 0.99: 30000 ops, "),
        "{phase1}"
    );
    assert!(phase1.contains(" ops/sec; read p50 "), "{phase1}");
    let phase2 = out
        .lines()
        .find(|l| l.starts_with("phase 2      : "))
        .unwrap();
    assert!(
        phase2.ends_with("began after 30000 ops, at characterizer window 3"),
        "{phase2}"
    );
    // The characterizer's decisions, placed in their phases.
    assert!(out.contains("-> write-heavy-skewed (phase 1, "), "{out}");
    let switch = out
        .lines()
        .find(|l| l.starts_with("characterizer : ") && l.contains("-> read-heavy (phase 2, "))
        .unwrap_or_else(|| panic!("no switch to read-heavy in phase 2:\n{out}"));
    let n: u64 = switch
        .split("(phase 2, ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!((2..=3).contains(&n), "{switch}");
    assert!(out.contains("triad decision : window "), "{out}");
    assert!(
        out.contains("triad workload : read-heavy after 6 windows"),
        "{out}"
    );
}

#[test]
fn triad_modes_on_rialto() {
    for (mode, line) in [
        (
            rialto_bench::TriadMode::Off,
            "triad : mem off disk off log off adaptive off ",
        ),
        (
            rialto_bench::TriadMode::Mem,
            "triad : mem on disk off log off adaptive off ",
        ),
        (
            rialto_bench::TriadMode::Disk,
            "triad : mem off disk on log off adaptive off ",
        ),
        (
            rialto_bench::TriadMode::Log,
            "triad : mem off disk off log on adaptive off ",
        ),
        (
            rialto_bench::TriadMode::On,
            "triad : mem on disk on log on adaptive off ",
        ),
        (
            rialto_bench::TriadMode::Adaptive,
            "triad : mem on disk on log on adaptive on ",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut f = flags(&dir.path().join("db"), "fillrandom,stats");
        f.triad = Some(mode);
        let mut out = Vec::new();
        rialto_bench::run_bench(&f, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(&format!("TRIAD:      {}\n", mode.name())),
            "{out}"
        );
        assert!(out.contains(line), "{out}");
    }
}

#[test]
fn bad_workload_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let base = flags(&dir.path().join("db"), "readrandomwriterandom");
    let mut bad = Vec::new();
    for theta in [0.0, 1.0, 2.5, -1.0] {
        bad.push((
            BenchFlags {
                zipf_theta: theta,
                ..base.clone()
            },
            format!("--zipf_theta={theta} must be in (0, 1), both excluded"),
        ));
    }
    for p in [-10, 101] {
        bad.push((
            BenchFlags {
                readwritepercent: p,
                ..base.clone()
            },
            format!("--readwritepercent={p} must be a percentage from 0 to 100"),
        ));
    }
    for (f, want) in bad {
        let mut out = Vec::new();
        let e = rialto_bench::run_bench(&f, &mut out).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert_eq!(e.to_string(), want);
        assert!(out.is_empty());
    }
}
