//! The benchmarks and how many operations of what kind each one does ([`Plan`]).
//!
//! Op counts follow db_bench so that results compare with published db_bench numbers:
//! every thread runs the benchmark's whole count (fills: `--writes`, default `--num`;
//! reads: `--reads`, default `--num`; deleterandom: `--num`; fillsync: `--num / 1000`
//! and syncwhilecompacting: `--num / 10` (it stops with its compaction) unless `--writes`
//! is given), and keys are drawn from `[0, --num)`.
//!
//! The two mixed benchmarks: readrandomwriterandom (db_bench's) runs `--reads` ops per
//! thread, each a point read with probability `--readwritepercent`% and else a put, keys
//! from `--key_dist`; phaseshift runs [`PHASES`] one after the other, `--writes` (default
//! `--num`) ops per thread each, all threads switching phase together.

use crate::config::Config;
use crate::dist::KeyDist;
use crate::error::{BenchError, Result};

/// One db_bench benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Benchmark {
    /// Write keys 0, 1, 2, ... into a fresh database.
    FillSeq,
    /// Write uniformly random keys into a fresh database.
    FillRandom,
    /// Write uniformly random keys into the existing database.
    Overwrite,
    /// fillrandom with a WAL sync per write, 1/1000 of the ops.
    FillSync,
    /// fillsync's writes while one more thread compacts the whole key range; the writers
    /// stop when the compaction ends, so every measured commit overlaps it. Their count
    /// (`--num / 10` by default) only bounds a compaction that outlasts them: the commits
    /// should cover the whole compaction, not its first second.
    SyncWhileCompacting,
    /// Point lookups of uniformly random keys.
    ReadRandom,
    /// A forward scan from the first key.
    ReadSeq,
    /// A reverse scan from the last key.
    ReadReverse,
    /// readrandom on `--threads` threads while one more thread overwrites at full speed.
    ReadWhileWriting,
    /// Random reads and puts mixed, `--readwritepercent`% reads.
    ReadRandomWriteRandom,
    /// A write-heavy skewed phase, then a read-heavy uniform one (`PHASES`).
    PhaseShift,
    /// Seek to random keys, then read `--seek_nexts` entries.
    SeekRandom,
    /// Delete uniformly random keys.
    DeleteRandom,
    /// Flush memtables to tables (one timed op).
    Flush,
    /// Compact the whole key range (one timed op).
    Compact,
    /// Print engine statistics and amplification (not timed).
    Stats,
}

impl Benchmark {
    /// Every benchmark, in the order `--help` lists them.
    pub const ALL: [Benchmark; 16] = [
        Benchmark::FillSeq,
        Benchmark::FillRandom,
        Benchmark::Overwrite,
        Benchmark::FillSync,
        Benchmark::SyncWhileCompacting,
        Benchmark::ReadRandom,
        Benchmark::ReadSeq,
        Benchmark::ReadReverse,
        Benchmark::ReadWhileWriting,
        Benchmark::ReadRandomWriteRandom,
        Benchmark::PhaseShift,
        Benchmark::SeekRandom,
        Benchmark::DeleteRandom,
        Benchmark::Flush,
        Benchmark::Compact,
        Benchmark::Stats,
    ];

    /// db_bench's name.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::FillSync => "fillsync",
            Benchmark::SyncWhileCompacting => "syncwhilecompacting",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadSeq => "readseq",
            Benchmark::ReadReverse => "readreverse",
            Benchmark::ReadWhileWriting => "readwhilewriting",
            Benchmark::ReadRandomWriteRandom => "readrandomwriterandom",
            Benchmark::PhaseShift => "phaseshift",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::DeleteRandom => "deleterandom",
            Benchmark::Flush => "flush",
            Benchmark::Compact => "compact",
            Benchmark::Stats => "stats",
        }
    }

    /// The benchmark called `name`, if any.
    pub fn parse(name: &str) -> Option<Benchmark> {
        Benchmark::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Parses `--benchmarks`: comma-separated, blanks ignored (db_bench tolerates trailing
    /// commas); an unknown name is a usage error naming the known ones.
    pub fn parse_list(list: &str) -> Result<Vec<Benchmark>> {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match Benchmark::parse(name) {
                Some(b) => out.push(b),
                None => {
                    let known: Vec<_> = Benchmark::ALL.iter().map(|b| b.name()).collect();
                    return Err(BenchError::usage(format!(
                        "unknown benchmark '{name}' (known: {})",
                        known.join(", ")
                    )));
                }
            }
        }
        if out.is_empty() {
            return Err(BenchError::usage("--benchmarks is empty"));
        }
        Ok(out)
    }

    /// True for benchmarks that start from an empty database.
    pub fn fresh_db(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::FillSync
        )
    }

    /// True for benchmarks that write (their write amplification is worth reporting).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq
                | Benchmark::FillRandom
                | Benchmark::Overwrite
                | Benchmark::FillSync
                | Benchmark::SyncWhileCompacting
                | Benchmark::DeleteRandom
                | Benchmark::ReadWhileWriting
                | Benchmark::ReadRandomWriteRandom
                | Benchmark::PhaseShift
        )
    }

    /// True for benchmarks that time operations and print a report line.
    pub fn is_timed(self) -> bool {
        self != Benchmark::Stats
    }
}

/// One phase of phaseshift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// What the phase is, for the report.
    pub label: &'static str,
    /// Percentage of its ops that are reads (the rest are puts).
    pub read_percent: u8,
    /// Its keys' distribution (zipf: with `--zipf_theta`).
    pub key_dist: KeyDist,
}

/// phaseshift's phases: the first is what TRIAD's write-side techniques are for, the second
/// what they should get out of the way of; the characterizer should notice the change.
pub const PHASES: [Phase; 2] = [
    Phase {
        label: "write-heavy skewed",
        read_percent: 10,
        key_dist: KeyDist::Zipf,
    },
    Phase {
        label: "read-heavy uniform",
        read_percent: 90,
        key_dist: KeyDist::Uniform,
    },
];

/// Order of the keys a writer produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// Indices 0, 1, 2, ... (each thread starts at 0, as in db_bench).
    Sequential,
    /// Drawn from `[0, key_space)` by the plan's key distribution.
    Random,
}

/// What a benchmark's threads do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Puts (or deletes), `batch_size` per write.
    Write {
        /// Key order.
        order: KeyOrder,
        /// Delete instead of put.
        delete: bool,
    },
    /// Point lookups of random keys.
    ReadRandom,
    /// One scan per thread of up to `ops_per_thread` entries.
    Scan {
        /// Descending.
        reverse: bool,
    },
    /// Seeks to random keys.
    Seek,
    /// Random reads on every worker plus one background writer.
    ReadWhileWriting,
    /// Synced random puts on every worker while one more thread compacts everything;
    /// the workers stop when it is done.
    SyncWhileCompacting,
    /// Each op a point read with probability `read_percent`%, else a put.
    Mixed {
        /// Percentage of reads.
        read_percent: u8,
    },
    /// [`PHASES`] in turn, `phase_ops` ops per thread each.
    PhaseShift {
        /// Ops per thread of each phase.
        phase_ops: u64,
    },
    /// One flush.
    Flush,
    /// One full compaction.
    Compact,
    /// Statistics; no operation.
    Stats,
}

/// How a benchmark runs under a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The benchmark.
    pub benchmark: Benchmark,
    /// What the threads do.
    pub op: Op,
    /// Operations each measured thread performs (an upper bound for scans; phaseshift: both
    /// phases together).
    pub ops_per_thread: u64,
    /// Keys are drawn from `[0, key_space)`.
    pub key_space: u64,
    /// How random keys are drawn (phaseshift: per phase instead, see [`PHASES`]).
    pub key_dist: KeyDist,
    /// Measured threads (readwhilewriting adds an unmeasured writer, syncwhilecompacting an
    /// unmeasured compaction).
    pub threads: usize,
    /// Sync every write.
    pub sync: bool,
    /// Start from an empty database.
    pub fresh_db: bool,
}

impl Plan {
    /// The plan of `benchmark` under `cfg`.
    pub fn new(benchmark: Benchmark, cfg: &Config) -> Plan {
        let writes = cfg.writes.unwrap_or(cfg.num);
        let (op, ops, threads, sync) = match benchmark {
            Benchmark::FillSeq => (
                Op::Write {
                    order: KeyOrder::Sequential,
                    delete: false,
                },
                writes,
                cfg.threads,
                cfg.sync,
            ),
            Benchmark::FillRandom | Benchmark::Overwrite => (
                Op::Write {
                    order: KeyOrder::Random,
                    delete: false,
                },
                writes,
                cfg.threads,
                cfg.sync,
            ),
            Benchmark::FillSync => (
                Op::Write {
                    order: KeyOrder::Random,
                    delete: false,
                },
                cfg.writes.unwrap_or((cfg.num / 1000).max(1)),
                cfg.threads,
                true,
            ),
            Benchmark::SyncWhileCompacting => (
                Op::SyncWhileCompacting,
                cfg.writes.unwrap_or((cfg.num / 10).max(1)),
                cfg.threads,
                true,
            ),
            Benchmark::DeleteRandom => (
                Op::Write {
                    order: KeyOrder::Random,
                    delete: true,
                },
                cfg.num,
                cfg.threads,
                cfg.sync,
            ),
            Benchmark::ReadRandom => (Op::ReadRandom, cfg.reads, cfg.threads, false),
            Benchmark::ReadSeq => (Op::Scan { reverse: false }, cfg.reads, cfg.threads, false),
            Benchmark::ReadReverse => (Op::Scan { reverse: true }, cfg.reads, cfg.threads, false),
            Benchmark::ReadWhileWriting => (Op::ReadWhileWriting, cfg.reads, cfg.threads, cfg.sync),
            Benchmark::ReadRandomWriteRandom => (
                Op::Mixed {
                    read_percent: cfg.read_percent,
                },
                cfg.reads,
                cfg.threads,
                cfg.sync,
            ),
            Benchmark::PhaseShift => (
                Op::PhaseShift { phase_ops: writes },
                writes.saturating_mul(PHASES.len() as u64),
                cfg.threads,
                cfg.sync,
            ),
            Benchmark::SeekRandom => (Op::Seek, cfg.reads, cfg.threads, false),
            Benchmark::Flush => (Op::Flush, 1, 1, false),
            Benchmark::Compact => (Op::Compact, 1, 1, false),
            Benchmark::Stats => (Op::Stats, 0, 0, false),
        };
        Plan {
            benchmark,
            op,
            ops_per_thread: ops,
            key_space: cfg.num,
            key_dist: cfg.key_dist,
            threads,
            sync,
            fresh_db: benchmark.fresh_db(),
        }
    }

    /// Operations all measured threads perform together (scans: at most this many).
    #[cfg(test)]
    pub fn total_ops(&self) -> u64 {
        self.ops_per_thread.saturating_mul(self.threads as u64)
    }

    /// Largest key index the plan can write, plus one (sizes the live-key set).
    #[cfg(test)]
    pub fn index_bound(&self) -> u64 {
        match self.op {
            Op::Write {
                order: KeyOrder::Sequential,
                ..
            } => self.ops_per_thread.max(self.key_space),
            _ => self.key_space,
        }
    }

    /// True when the plan draws Zipfian keys (so the runner must prepare the generator).
    pub fn needs_zipf(&self) -> bool {
        match self.op {
            Op::PhaseShift { .. } => PHASES.iter().any(|p| p.key_dist == KeyDist::Zipf),
            Op::Write {
                order: KeyOrder::Random,
                ..
            }
            | Op::ReadRandom
            | Op::ReadWhileWriting
            | Op::SyncWhileCompacting
            | Op::Seek
            | Op::Mixed { .. } => self.key_dist == KeyDist::Zipf,
            _ => false,
        }
    }

    /// True for the benchmarks that time reads and writes apart (and print both).
    pub fn is_mixed(&self) -> bool {
        matches!(self.op, Op::Mixed { .. } | Op::PhaseShift { .. })
    }

    /// What the histogram's "Microseconds per ..." line calls one op.
    pub fn op_label(&self) -> &'static str {
        match self.op {
            Op::Write { delete: true, .. } => "delete",
            Op::Write { .. } | Op::SyncWhileCompacting => "write",
            Op::ReadRandom | Op::Scan { .. } | Op::ReadWhileWriting => "read",
            Op::Seek => "seek",
            Op::Flush => "flush",
            Op::Compact => "compaction",
            Op::Mixed { .. } | Op::PhaseShift { .. } | Op::Stats => "op",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchFlags;

    fn cfg(f: BenchFlags) -> Config {
        Config::from_flags(&BenchFlags { seed: Some(1), ..f }).unwrap()
    }

    #[test]
    fn names_round_trip() {
        for b in Benchmark::ALL {
            assert_eq!(Benchmark::parse(b.name()), Some(b));
        }
        assert_eq!(Benchmark::parse("fillbatch"), None);
        assert_eq!(
            Benchmark::parse_list(" fillseq, readrandom,,").unwrap(),
            vec![Benchmark::FillSeq, Benchmark::ReadRandom]
        );
        let e = Benchmark::parse_list("fillseq,bogus").unwrap_err();
        assert!(e.to_string().contains("unknown benchmark 'bogus'"), "{e}");
        assert!(Benchmark::parse_list(" , ").is_err());
    }

    #[test]
    fn op_counts_follow_db_bench() {
        let c = cfg(BenchFlags {
            num: 10_000,
            threads: 3,
            ..BenchFlags::default()
        });
        let p = |b| Plan::new(b, &c);
        // Every thread runs the whole count.
        assert_eq!(p(Benchmark::FillSeq).ops_per_thread, 10_000);
        assert_eq!(p(Benchmark::FillSeq).total_ops(), 30_000);
        assert_eq!(p(Benchmark::FillRandom).ops_per_thread, 10_000);
        assert_eq!(p(Benchmark::Overwrite).ops_per_thread, 10_000);
        assert_eq!(p(Benchmark::ReadRandom).ops_per_thread, 10_000);
        assert_eq!(p(Benchmark::DeleteRandom).ops_per_thread, 10_000);
        assert_eq!(p(Benchmark::ReadWhileWriting).threads, 3);
        // fillsync: num / 1000, synced.
        let fs = p(Benchmark::FillSync);
        assert_eq!(fs.ops_per_thread, 10);
        assert!(fs.sync && fs.fresh_db);
        assert_eq!(fs.key_space, 10_000);
        // syncwhilecompacting: num / 10 at most (it stops with the compaction), on the
        // existing database.
        let sc = p(Benchmark::SyncWhileCompacting);
        assert_eq!((sc.ops_per_thread, sc.threads), (1000, 3));
        assert!(sc.sync && !sc.fresh_db);
        assert_eq!(sc.op_label(), "write");
        // Fresh databases for fills only.
        assert!(p(Benchmark::FillSeq).fresh_db && p(Benchmark::FillRandom).fresh_db);
        assert!(!p(Benchmark::Overwrite).fresh_db && !p(Benchmark::ReadSeq).fresh_db);
        assert_eq!(p(Benchmark::Compact).total_ops(), 1);
        assert_eq!(p(Benchmark::Stats).total_ops(), 0);
        assert!(!Benchmark::Stats.is_timed());

        let c = cfg(BenchFlags {
            num: 500,
            reads: 7,
            writes: 2000,
            ..BenchFlags::default()
        });
        assert_eq!(Plan::new(Benchmark::ReadRandom, &c).ops_per_thread, 7);
        assert_eq!(Plan::new(Benchmark::ReadSeq, &c).ops_per_thread, 7);
        assert_eq!(Plan::new(Benchmark::SeekRandom, &c).ops_per_thread, 7);
        assert_eq!(Plan::new(Benchmark::FillRandom, &c).ops_per_thread, 2000);
        assert_eq!(Plan::new(Benchmark::FillSync, &c).ops_per_thread, 2000);
        // fillseq beyond --num writes indices up to --writes; random fills stay in [0, num).
        assert_eq!(Plan::new(Benchmark::FillSeq, &c).index_bound(), 2000);
        assert_eq!(Plan::new(Benchmark::FillRandom, &c).index_bound(), 500);
        // fillsync of a tiny --num still does one op.
        let c = cfg(BenchFlags {
            num: 10,
            ..BenchFlags::default()
        });
        assert_eq!(Plan::new(Benchmark::FillSync, &c).ops_per_thread, 1);
    }

    #[test]
    fn plans_of_the_mixed_benchmarks() {
        let c = cfg(BenchFlags {
            num: 1000,
            reads: 300,
            threads: 2,
            readwritepercent: 70,
            ..BenchFlags::default()
        });
        let rw = Plan::new(Benchmark::ReadRandomWriteRandom, &c);
        assert_eq!(rw.op, Op::Mixed { read_percent: 70 });
        assert_eq!((rw.ops_per_thread, rw.threads), (300, 2));
        assert_eq!(rw.total_ops(), 600);
        assert!(rw.is_mixed() && !rw.fresh_db && !rw.needs_zipf());
        assert_eq!((rw.key_space, rw.index_bound()), (1000, 1000));
        assert_eq!(rw.op_label(), "op");

        // phaseshift: --writes (default --num) ops per phase and thread, two phases.
        let ps = Plan::new(Benchmark::PhaseShift, &c);
        assert_eq!(ps.op, Op::PhaseShift { phase_ops: 1000 });
        assert_eq!(ps.ops_per_thread, 2000);
        assert_eq!(ps.total_ops(), 4000);
        assert!(ps.is_mixed() && !ps.fresh_db);
        assert!(
            ps.needs_zipf(),
            "its first phase is skewed whatever --key_dist says"
        );
        let c2 = cfg(BenchFlags {
            num: 1000,
            writes: 50,
            ..BenchFlags::default()
        });
        assert_eq!(
            Plan::new(Benchmark::PhaseShift, &c2).op,
            Op::PhaseShift { phase_ops: 50 }
        );
        assert_eq!(
            PHASES.map(|p| (p.read_percent, p.key_dist)),
            [(10, KeyDist::Zipf), (90, KeyDist::Uniform)]
        );

        // --key_dist reaches every plan that draws random keys, and only those need zipf.
        let z = cfg(BenchFlags {
            key_dist: KeyDist::Zipf,
            ..BenchFlags::default()
        });
        for b in [
            Benchmark::FillRandom,
            Benchmark::Overwrite,
            Benchmark::FillSync,
            Benchmark::SyncWhileCompacting,
            Benchmark::DeleteRandom,
            Benchmark::ReadRandom,
            Benchmark::SeekRandom,
            Benchmark::ReadWhileWriting,
            Benchmark::ReadRandomWriteRandom,
            Benchmark::PhaseShift,
        ] {
            let p = Plan::new(b, &z);
            assert_eq!(p.key_dist, KeyDist::Zipf);
            assert!(p.needs_zipf(), "{}", b.name());
        }
        for b in [
            Benchmark::FillSeq,
            Benchmark::ReadSeq,
            Benchmark::Flush,
            Benchmark::Stats,
        ] {
            assert!(!Plan::new(b, &z).needs_zipf(), "{}", b.name());
        }
        assert!(!Plan::new(Benchmark::ReadRandom, &c).is_mixed());
    }

    #[test]
    fn labels() {
        let c = cfg(BenchFlags::default());
        assert_eq!(Plan::new(Benchmark::FillSeq, &c).op_label(), "write");
        assert_eq!(Plan::new(Benchmark::DeleteRandom, &c).op_label(), "delete");
        assert_eq!(Plan::new(Benchmark::ReadSeq, &c).op_label(), "read");
        assert_eq!(Plan::new(Benchmark::SeekRandom, &c).op_label(), "seek");
    }
}
