//! `rialto bench-compare`: the same benchmarks on several engines, alternately, several
//! rounds, then a table of median ops/sec and ratios.
//!
//! Why this shape: run-to-run noise on a shared machine is easily 10%, and a machine that
//! warms up (page cache, CPU frequency) favours whichever engine runs later. So every round
//! runs every engine once on a fresh database with the same seed (same keys and values), the
//! order alternates between rounds (A B, B A, A B, ...), and the table reports medians, which
//! one slow run does not move.

use std::io::Write;
use std::path::Path;

use crate::config::{BenchFlags, Config, EngineKind};
use crate::engine::EngineFactory;
use crate::engines::{self, rialto::RialtoTriadFactory};
use crate::error::{out_err, BenchError, Result};
use crate::runner::{destroy_db, BenchResult, Runner};

/// Flags of `rialto bench-compare`: its own, plus every flag of `rialto bench`.
#[derive(Debug, Clone, clap::Args)]
#[command(rename_all = "snake_case")]
pub struct CompareFlags {
    /// Rounds; each runs every engine once on a fresh database, alternating who goes first.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub rounds: usize,

    /// Engines to compare, comma-separated; ratios are the first engine's over each other's.
    /// `rialto:MODE` (off, mem, disk, log, on, adaptive) is Rialto with that TRIAD mode.
    #[arg(long, default_value = "rialto,rocksdb", value_name = "LIST")]
    pub engines: String,

    /// Benchmark flags (--db is the parent directory of each run's database).
    #[command(flatten)]
    pub bench: BenchFlags,
}

impl CompareFlags {
    /// The engines of `--engines`, checked: known, distinct, at least one, and not mixed up
    /// with `--engine`. `rialto:MODE` is Rialto with TRIAD mode MODE, so that modes can be
    /// compared with one another and with RocksDB in one alternating run.
    pub fn engine_factories(&self) -> Result<Vec<Box<dyn EngineFactory>>> {
        if self.bench.engine.is_some() {
            return Err(BenchError::usage(
                "bench-compare takes --engines=a,b (plural), not --engine",
            ));
        }
        let mut out: Vec<Box<dyn EngineFactory>> = Vec::new();
        for name in self
            .engines
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let f: Box<dyn EngineFactory> = match RialtoTriadFactory::parse(name) {
                Some(f) => Box::new(f),
                None if name.starts_with("rialto:") => {
                    return Err(BenchError::usage(format!(
                        "unknown TRIAD mode in '{name}' (rialto:off, :mem, :disk, :log, :on, :adaptive)"
                    )))
                }
                None => engines::factory(EngineKind::parse(name)?)?,
            };
            if out.iter().any(|o| o.name() == f.name()) {
                return Err(BenchError::usage(format!(
                    "engine '{name}' is listed twice in --engines"
                )));
            }
            out.push(f);
        }
        if out.is_empty() {
            return Err(BenchError::usage("--engines is empty"));
        }
        Ok(out)
    }
}

/// Help text after the flags of `rialto bench-compare`.
pub const AFTER_HELP: &str = "\
Each round runs every engine once on a fresh database (same seed, so the same keys and
values), alternating which engine goes first; the table shows median ops/sec per benchmark,
the ratio of the first engine to each other (> 1: the first is faster) and the median write
amplification at the end of fillrandom. scripts/bench-compare.sh builds RocksDB in and runs this.

Example:
  rialto bench-compare --rounds=3 --benchmarks=fillseq,fillrandom,readrandom --num=1000000";

/// Default parent directory of comparison databases: `/tmp/rialtobench-$USER/compare`.
pub fn default_base_dir() -> std::path::PathBuf {
    crate::config::default_db_path(EngineKind::Rialto)
        .parent()
        .map(|p| p.join("compare"))
        .unwrap_or_else(|| std::env::temp_dir().join("rialtobench-compare"))
}

/// Median of `samples` (mean of the middle two for an even count); `None` when empty.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let mid = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[mid]
    } else {
        (s[mid - 1] + s[mid]) / 2.0
    })
}

/// `a / b`, when both exist and `b` is not zero.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Every sample of a comparison, and the table of medians.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareReport {
    /// Engine names, in `--engines` order.
    pub engines: Vec<String>,
    /// Timed benchmarks, in run order.
    pub benchmarks: Vec<String>,
    /// `ops_per_sec[engine][benchmark]`: one sample per round.
    pub ops_per_sec: Vec<Vec<Vec<f64>>>,
    /// `write_amp[engine][benchmark]`: write amplification since the database was opened,
    /// at the end of each benchmark that writes, per round.
    pub write_amp: Vec<Vec<Vec<f64>>>,
    /// `read_p99_us[engine][benchmark]`: p99 latency of the reads of a mixed benchmark
    /// (readrandomwriterandom, phaseshift) in µs, per round.
    pub read_p99_us: Vec<Vec<Vec<f64>>>,
    /// `syncs_per_op[engine][benchmark]`: WAL syncs during the benchmark / its ops, per round.
    pub syncs_per_op: Vec<Vec<Vec<f64>>>,
    /// `latency_us[engine][benchmark]`: (p50, p99) op latency in µs per round (`--histogram`).
    pub latency_us: Vec<Vec<Vec<(f64, f64)>>>,
    /// Rounds asked for.
    pub rounds: usize,
    /// Threads per benchmark (for the physical-limit line).
    pub threads: usize,
}

impl CompareReport {
    /// An empty report.
    pub fn new(engines: Vec<String>, benchmarks: Vec<String>, rounds: usize) -> Self {
        let n = engines.len();
        let b = benchmarks.len();
        CompareReport {
            engines,
            benchmarks,
            ops_per_sec: vec![vec![Vec::new(); b]; n],
            write_amp: vec![vec![Vec::new(); b]; n],
            read_p99_us: vec![vec![Vec::new(); b]; n],
            syncs_per_op: vec![vec![Vec::new(); b]; n],
            latency_us: vec![vec![Vec::new(); b]; n],
            rounds,
            threads: 1,
        }
    }

    /// Adds one run's results of engine number `engine`. Results come in benchmark order,
    /// one per timed benchmark.
    pub fn add_run(&mut self, engine: usize, results: &[BenchResult]) -> Result<()> {
        let mismatch = || {
            BenchError::engine(
                "bench-compare",
                "collect results",
                "a run's results do not match the benchmark list",
            )
        };
        if engine >= self.engines.len() || results.len() != self.benchmarks.len() {
            return Err(mismatch());
        }
        // The engine counts syncs since it opened; a fill of a fresh database reopens it.
        let mut syncs_before = 0;
        for (i, r) in results.iter().enumerate() {
            if r.benchmark.name() != self.benchmarks[i] {
                return Err(mismatch());
            }
            self.ops_per_sec[engine][i].push(r.ops_per_sec());
            if r.benchmark.fresh_db() {
                syncs_before = 0;
            }
            if let Some(st) = &r.stats {
                let during = st.wal_syncs.saturating_sub(syncs_before);
                self.syncs_per_op[engine][i].push(during as f64 / r.ops.max(1) as f64);
                syncs_before = st.wal_syncs;
            }
            if let Some(h) = &r.histogram {
                let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
                self.latency_us[engine][i].push((us(0.5), us(0.99)));
            }
            if r.benchmark.writes() {
                if let Some(w) = r.write_amplification() {
                    self.write_amp[engine][i].push(w);
                }
            }
            if let Some(m) = &r.mix {
                if m.reads > 0 {
                    self.read_p99_us[engine][i]
                        .push(m.read_latency.value_at_quantile(0.99) as f64 / 1000.0);
                }
            }
        }
        Ok(())
    }

    /// Median ops/sec of engine `e` on benchmark `b`.
    pub fn median_ops(&self, e: usize, b: usize) -> Option<f64> {
        self.ops_per_sec.get(e)?.get(b).and_then(|s| median(s))
    }

    /// Median write amplification of engine `e` after the first fillrandom.
    pub fn median_write_amp(&self, e: usize) -> Option<f64> {
        let b = self.benchmarks.iter().position(|n| n == "fillrandom")?;
        self.write_amp.get(e)?.get(b).and_then(|s| median(s))
    }

    /// The table: one row per benchmark with each engine's median ops/sec and the ratio of
    /// the first engine to each other one, then the write amplification row.
    pub fn table(&self) -> String {
        const NAME_W: usize = 34;
        let col_w: Vec<usize> = self.engines.iter().map(|e| e.len().max(12) + 2).collect();
        let ratio_names: Vec<String> = self
            .engines
            .iter()
            .skip(1)
            .map(|e| format!("{}/{}", self.engines[0], e))
            .collect();
        let ratio_w: Vec<usize> = ratio_names.iter().map(|n| n.len().max(8) + 2).collect();
        let fmt_num = |v: Option<f64>, w: usize, prec: usize| match v {
            Some(v) => format!("{v:>w$.prec$}"),
            None => format!("{:>w$}", "-"),
        };

        let mut s = String::new();
        let first = self.engines.first().map(String::as_str).unwrap_or("");
        s.push_str(&format!(
            "\n===== median of {} rounds: ops/sec (ratio > 1: {first} is faster) =====\n",
            self.rounds
        ));
        let mut header = format!("{:<NAME_W$}", "benchmark");
        for (e, w) in self.engines.iter().zip(&col_w) {
            header.push_str(&format!("{e:>w$}"));
        }
        for (n, w) in ratio_names.iter().zip(&ratio_w) {
            header.push_str(&format!("{n:>w$}"));
        }
        s.push_str(header.trim_end());
        s.push('\n');
        let row = |name: &str, values: Vec<Option<f64>>, prec: usize| {
            let mut line = format!("{name:<NAME_W$}");
            for (v, w) in values.iter().zip(&col_w) {
                line.push_str(&fmt_num(*v, *w, prec));
            }
            for (v, w) in values.iter().skip(1).zip(&ratio_w) {
                line.push_str(&fmt_num(ratio(values[0], *v), *w, 2));
            }
            line.push('\n');
            line
        };
        for (b, name) in self.benchmarks.iter().enumerate() {
            let values = (0..self.engines.len())
                .map(|e| self.median_ops(e, b))
                .collect();
            s.push_str(&row(name, values, 0));
        }
        let mut any_wamp = false;
        for (b, name) in self.benchmarks.iter().enumerate() {
            let wamp: Vec<Option<f64>> = (0..self.engines.len())
                .map(|e| median(&self.write_amp[e][b]))
                .collect();
            if wamp.iter().any(Option::is_some) {
                any_wamp = true;
                s.push_str(&row(&format!("write-amp {name}"), wamp, 2));
            }
        }
        if any_wamp {
            s.push_str(&format!(
                "(write-amp: storage bytes written / user bytes written since the database \
                 opened, at the end of the benchmark; ratio < 1: {first} writes less)\n"
            ));
        } else {
            s.push_str(
                "(no writing benchmark in --benchmarks: no write amplification to compare)\n",
            );
        }
        for (b, name) in self.benchmarks.iter().enumerate() {
            let p99: Vec<Option<f64>> = (0..self.engines.len())
                .map(|e| median(&self.read_p99_us[e][b]))
                .collect();
            if p99.iter().any(Option::is_some) {
                s.push_str(&row(&format!("read p99 us {name}"), p99, 1));
            }
        }
        for (b, name) in self.benchmarks.iter().enumerate() {
            if name == "fillsync"
                || name == "syncwhilecompacting"
                || self.latency_us.iter().any(|e| !e[b].is_empty())
            {
                s.push_str(&self.detail(b));
            }
        }
        s
    }

    /// Commit detail of benchmark `b`: ops/sec, syncs per op and latency per engine, and,
    /// when the `disk` pseudo-engine ran, the physical limit `threads × disk ops/sec`.
    fn detail(&self, b: usize) -> String {
        let med = |v: Vec<f64>| median(&v);
        let fmt = |v: Option<f64>, prec: usize| match v {
            Some(v) => format!("{v:>12.prec$}"),
            None => format!("{:>12}", "-"),
        };
        let mut s = format!(
            "\n===== {} at {} thread(s), median of {} rounds =====\n{:<12}{:>12}{:>12}{:>12}{:>12}\n",
            self.benchmarks[b], self.threads, self.rounds, "engine", "ops/sec", "syncs/op",
            "p50 us", "p99 us"
        );
        for (e, name) in self.engines.iter().enumerate() {
            let lat = &self.latency_us[e][b];
            s.push_str(&format!(
                "{name:<12}{}{}{}{}\n",
                fmt(self.median_ops(e, b), 0),
                fmt(med(self.syncs_per_op[e][b].clone()), 3),
                fmt(med(lat.iter().map(|l| l.0).collect()), 0),
                fmt(med(lat.iter().map(|l| l.1).collect()), 0),
            ));
        }
        if let Some(d) = self.engines.iter().position(|e| e == "disk") {
            if let Some(one) = self.median_ops(d, b) {
                let limit = one * self.threads as f64;
                s.push_str(&format!(
                    "physical limit: {} thread(s) x {one:.0} durable appends/s (1 / fdatasync \
                     latency, measured by `disk` in this run) = {limit:.0} ops/sec\n",
                    self.threads
                ));
                for (e, name) in self.engines.iter().enumerate() {
                    if e != d {
                        if let Some(v) = self.median_ops(e, b) {
                            s.push_str(&format!("{name}/limit = {:.2}\n", v / limit));
                        }
                    }
                }
            }
        }
        s
    }
}

/// Runs the comparison: `rounds` rounds, each running every engine once, in alternating
/// order, on a fresh database under `base`; prints each run's report, then the table.
pub fn run(
    cfg: &Config,
    base: &Path,
    factories: &[&dyn EngineFactory],
    rounds: usize,
    out: &mut dyn Write,
) -> Result<CompareReport> {
    if rounds == 0 {
        return Err(BenchError::usage("--rounds must be at least 1"));
    }
    if cfg.use_existing_db {
        return Err(BenchError::usage(
            "bench-compare always starts from fresh databases; drop --use_existing_db",
        ));
    }
    let benchmarks: Vec<String> = cfg
        .benchmarks
        .iter()
        .filter(|b| b.is_timed())
        .map(|b| b.name().to_string())
        .collect();
    let names = factories.iter().map(|f| f.name().to_string()).collect();
    let mut report = CompareReport::new(names, benchmarks, rounds);
    report.threads = cfg.threads;
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..factories.len()).collect()
        } else {
            (0..factories.len()).rev().collect()
        };
        // Same seed for every engine of a round (same keys, same values); a new one per round.
        let seed = cfg.seed.wrapping_add(round as u64 * 7919);
        for e in order {
            let f = factories[e];
            let mut run_cfg = cfg.clone();
            run_cfg.db = base.join(format!("{}-{}", f.name(), round + 1));
            run_cfg.seed = seed;
            writeln!(
                out,
                "\n===== round {}/{rounds}: {} =====",
                round + 1,
                f.name()
            )
            .map_err(out_err)?;
            let results = Runner::new(&run_cfg, f, out).run_all()?;
            destroy_db(&run_cfg.db)?;
            report.add_run(e, &results)?;
        }
    }
    out.write_all(report.table().as_bytes()).map_err(out_err)?;
    out.flush().map_err(out_err)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::memory::MemFactory;
    use crate::workload::Benchmark;
    use std::time::Duration;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(
            median(&[1.0, 100.0, 2.0]),
            Some(2.0),
            "an outlier does not move it"
        );
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(2.0)), None);
    }

    fn result(b: Benchmark, ops: u64, secs: f64, wamp: Option<f64>) -> BenchResult {
        BenchResult {
            engine: "x",
            benchmark: b,
            ops,
            threads: 1,
            elapsed: Duration::from_secs_f64(secs),
            bytes: 0,
            message: String::new(),
            histogram: None,
            stats: wamp.map(|w| rialto_engine::EngineStats {
                user_bytes_written: 100,
                wal_bytes_written: (w * 100.0) as u64,
                ..Default::default()
            }),
            os_bytes_written: None,
            mix: None,
            phases: Vec::new(),
        }
    }

    #[test]
    fn table_of_medians_and_ratios() {
        let mut r = CompareReport::new(
            vec!["rialto".into(), "rocksdb".into()],
            vec!["fillrandom".into(), "readrandom".into()],
            3,
        );
        for (fill, read, w) in [
            (1000.0, 4000.0, 2.0),
            (900.0, 5000.0, 3.0),
            (1100.0, 4500.0, 2.5),
        ] {
            r.add_run(
                0,
                &[
                    result(Benchmark::FillRandom, fill as u64, 1.0, Some(w)),
                    result(Benchmark::ReadRandom, read as u64, 1.0, None),
                ],
            )
            .unwrap();
        }
        for (fill, read, w) in [
            (500.0, 2000.0, 5.0),
            (400.0, 2500.0, 4.0),
            (600.0, 3000.0, 6.0),
        ] {
            r.add_run(
                1,
                &[
                    result(Benchmark::FillRandom, fill as u64, 1.0, Some(w)),
                    result(Benchmark::ReadRandom, read as u64, 1.0, None),
                ],
            )
            .unwrap();
        }
        assert_eq!(r.median_ops(0, 0), Some(1000.0));
        assert_eq!(r.median_ops(1, 1), Some(2500.0));
        assert_eq!(r.median_write_amp(0), Some(2.5));
        assert_eq!(r.median_write_amp(1), Some(5.0));
        let expected = "
===== median of 3 rounds: ops/sec (ratio > 1: rialto is faster) =====
benchmark                                 rialto       rocksdb  rialto/rocksdb
fillrandom                                  1000           500            2.00
readrandom                                  4500          2500            1.80
write-amp fillrandom                        2.50          5.00            0.50
(write-amp: storage bytes written / user bytes written since the database opened, at the end of the benchmark; ratio < 1: rialto writes less)
";
        assert_eq!(r.table(), expected);
    }

    #[test]
    fn syncs_per_op_count_each_benchmark_alone() {
        let names = ["fillsync", "syncwhilecompacting", "fillsync"];
        let mut r = CompareReport::new(vec!["a".into()], names.map(String::from).to_vec(), 1);
        let with_syncs = |b, ops, syncs| {
            let mut x = result(b, ops, 1.0, Some(1.0));
            x.stats.as_mut().unwrap().wal_syncs = syncs;
            x
        };
        // Cumulative since open; the second fillsync reopened a fresh database.
        r.add_run(
            0,
            &[
                with_syncs(Benchmark::FillSync, 100, 50),
                with_syncs(Benchmark::SyncWhileCompacting, 40, 90),
                with_syncs(Benchmark::FillSync, 10, 10),
            ],
        )
        .unwrap();
        assert_eq!(r.syncs_per_op[0], vec![vec![0.5], vec![1.0], vec![1.0]]);
    }

    #[test]
    fn mismatched_runs_are_rejected() {
        let mut r = CompareReport::new(vec!["a".into()], vec!["fillseq".into()], 1);
        assert!(r.add_run(0, &[]).is_err());
        assert!(r
            .add_run(0, &[result(Benchmark::ReadSeq, 1, 1.0, None)])
            .is_err());
        assert!(r
            .add_run(1, &[result(Benchmark::FillSeq, 1, 1.0, None)])
            .is_err());
        assert!(r
            .add_run(0, &[result(Benchmark::FillSeq, 1, 1.0, None)])
            .is_ok());
        // No write amplification recorded: the table says so instead of a row of dashes.
        assert!(r.table().contains("no writing benchmark"));
    }

    #[test]
    fn engines_flag() {
        let mut f = CompareFlags {
            rounds: 3,
            engines: "rialto, disk, rialto:off,rialto:on".into(),
            bench: BenchFlags::default(),
        };
        let names: Vec<&str> = f
            .engine_factories()
            .unwrap()
            .iter()
            .map(|e| e.name())
            .collect();
        assert_eq!(names, ["rialto", "disk", "rialto:off", "rialto:on"]);
        for bad in [
            "rialto,rialto",
            "rialto,mysql",
            ",",
            "rialto:fast",
            "rialto:on,rialto:on",
        ] {
            f.engines = bad.into();
            assert!(f.engine_factories().is_err(), "{bad}");
        }
        f.engines = "rialto".into();
        f.bench.engine = Some(EngineKind::Rialto);
        assert_eq!(f.engine_factories().err().unwrap().exit_code(), 2);
    }

    #[test]
    fn alternating_rounds_on_fresh_databases() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::from_flags(&BenchFlags {
            benchmarks: "fillrandom,readrandom,stats".into(),
            num: 500,
            seed: Some(3),
            ..BenchFlags::default()
        })
        .unwrap();
        let a = MemFactory::new("alpha");
        let b = MemFactory::new("beta");
        let mut out = Vec::new();
        let report = run(&cfg, dir.path(), &[&a, &b], 3, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let order: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("===== round"))
            .collect();
        assert_eq!(
            order,
            vec![
                "===== round 1/3: alpha =====",
                "===== round 1/3: beta =====",
                "===== round 2/3: beta =====",
                "===== round 2/3: alpha =====",
                "===== round 3/3: alpha =====",
                "===== round 3/3: beta =====",
            ]
        );
        assert_eq!(report.benchmarks, vec!["fillrandom", "readrandom"]);
        for e in 0..2 {
            assert_eq!(report.ops_per_sec[e][0].len(), 3);
            // The memory engine writes each byte once.
            assert_eq!(report.median_write_amp(e), Some(1.0));
        }
        assert!(out.contains("alpha/beta"));
        assert!(out.contains("write-amp fillrandom"));
        // Each run's database is gone afterwards.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let mut bad = cfg.clone();
        bad.use_existing_db = true;
        assert!(run(&bad, dir.path(), &[&a], 1, &mut Vec::new()).is_err());
        assert!(run(&cfg, dir.path(), &[&a], 0, &mut Vec::new()).is_err());
    }
}
