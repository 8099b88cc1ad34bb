//! Runs a benchmark list against one engine: manages the database directory, opens and
//! reopens the engine, drives the threads, and prints db_bench's lines as results come in.
//!
//! Timing follows db_bench: threads prepare (value buffers, generators) before a common
//! start, the clock runs from the start until the last measured thread finishes, micros/op is
//! wall time x threads / ops and ops/sec is ops / wall time.

use std::fs;
use std::io::{self, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rialto_engine::{BatchOp, EngineStats};

use crate::config::Config;
use crate::dist::{KeyDist, KeyGen, Zipf};
use crate::engine::{BenchEngine, EngineConfig, EngineFactory, ScanFrom};
use crate::error::{out_err, BenchError, Result};
use crate::histogram::{format_histogram, new_histogram, record};
use crate::keys::encode_key;
use crate::live::LiveKeys;
use crate::report::{
    bench_view, compaction_message, format_line, format_stats, found_message, latency_line,
    mix_message, percentiles_us, process_bytes_written, write_header,
};
use crate::values::ValueGen;
use crate::workload::{Benchmark, KeyOrder, Op, Phase, Plan, PHASES};

/// Name of the file that marks a directory as made by the harness, and so safe to delete.
pub const MARKER: &str = "RIALTOBENCH";

/// The outcome of one timed benchmark.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// Engine that ran it.
    pub engine: &'static str,
    /// The benchmark.
    pub benchmark: Benchmark,
    /// Operations done by the measured threads.
    pub ops: u64,
    /// Measured threads.
    pub threads: usize,
    /// Wall time from the common start to the last measured thread's end.
    pub elapsed: Duration,
    /// Key and value bytes moved (written, or read back).
    pub bytes: u64,
    /// db_bench's trailing message, e.g. `(632000 of 1000000 found)`.
    pub message: String,
    /// Latencies in nanoseconds, with `--histogram=1`.
    pub histogram: Option<Histogram<u64>>,
    /// Engine statistics right after the benchmark, with the harness's amplification
    /// denominators (see `report::bench_view`).
    pub stats: Option<EngineStats>,
    /// Bytes the process handed to `write(2)` since the engine was opened, where the OS
    /// reports it (`report::process_bytes_written`).
    pub os_bytes_written: Option<u64>,
    /// Reads and writes apart, for readrandomwriterandom and phaseshift.
    pub mix: Option<OpMix>,
    /// phaseshift's phases, in order (empty for other benchmarks).
    pub phases: Vec<PhaseResult>,
}

/// The reads and writes of a mixed benchmark, timed apart (latencies in nanoseconds).
#[derive(Debug, Clone)]
pub struct OpMix {
    /// Point reads done.
    pub reads: u64,
    /// Puts done.
    pub writes: u64,
    /// Reads that found their key.
    pub found: u64,
    /// Latency of each read.
    pub read_latency: Histogram<u64>,
    /// Latency of each put.
    pub write_latency: Histogram<u64>,
}

impl OpMix {
    /// No ops.
    pub fn empty() -> OpMix {
        OpMix {
            reads: 0,
            writes: 0,
            found: 0,
            read_latency: new_histogram(),
            write_latency: new_histogram(),
        }
    }

    /// `latency (us) : read p50 .. p99 .. (N ops); write p50 .. p99 .. (N ops)`.
    pub fn latency_line(&self) -> String {
        latency_line(&self.read_latency, &self.write_latency)
    }
}

/// One phase of phaseshift.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// What the phase did.
    pub phase: Phase,
    /// Its key distribution, as printed (`zipf 0.99`, `uniform`).
    pub keys: String,
    /// Operations of all threads in the phase.
    pub ops: u64,
    /// From the phase's first op to its last, over all threads.
    pub elapsed: Duration,
    /// Its reads and writes.
    pub mix: OpMix,
    /// Operations of the benchmark (all threads) done before the phase began.
    pub ops_before: u64,
    /// Windows the engine's workload characterizer had classified when the phase began
    /// (engines with one only).
    pub windows_at_start: Option<u64>,
}

impl PhaseResult {
    /// Operations per wall-clock second of the phase.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The phase's report line; `number` counts from 1.
    pub fn report_line(&self, number: usize) -> String {
        let mut s = format!(
            "{:<12} : {}, {}% reads, keys {}: {} ops, {:.0} ops/sec; read {} us; write {} us; \
             began after {} ops",
            format!("phase {number}"),
            self.phase.label,
            self.phase.read_percent,
            self.keys,
            self.ops,
            self.ops_per_sec(),
            percentiles_us(&self.mix.read_latency),
            percentiles_us(&self.mix.write_latency),
            self.ops_before,
        );
        if let Some(w) = self.windows_at_start {
            s.push_str(&format!(", at characterizer window {w}"));
        }
        s
    }
}

impl BenchResult {
    /// db_bench's micros/op: wall time x threads / ops (ops of 0 count as 1, as db_bench).
    pub fn micros_per_op(&self) -> f64 {
        self.elapsed.as_secs_f64() * 1e6 * self.threads as f64 / self.ops.max(1) as f64
    }

    /// Operations per wall-clock second.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// MiB moved per wall-clock second, when bytes were moved.
    pub fn mb_per_sec(&self) -> Option<f64> {
        (self.bytes > 0)
            .then(|| self.bytes as f64 / 1048576.0 / self.elapsed.as_secs_f64().max(1e-9))
    }

    /// Write amplification as of the end of this benchmark: bytes written to storage per
    /// key/value byte written by the benchmarks. Measured by the OS where it can be (the same
    /// way for every engine), else as the engine counts it.
    pub fn write_amplification(&self) -> Option<f64> {
        let stats = self.stats.as_ref()?;
        Some(match self.os_bytes_written {
            Some(os) => crate::report::ratio(os, stats.user_bytes_written),
            None => stats.write_amplification(),
        })
    }

    /// db_bench's report line.
    pub fn report_line(&self) -> String {
        format_line(
            self.benchmark.name(),
            self.micros_per_op(),
            self.ops_per_sec() as u64,
            self.mb_per_sec(),
            &self.message,
        )
    }
}

/// Runs the benchmarks of one configuration against engines of one factory.
pub struct Runner<'a> {
    cfg: &'a Config,
    factory: &'a dyn EngineFactory,
    out: &'a mut dyn Write,
    engine_cfg: EngineConfig,
    engine: Option<Box<dyn BenchEngine>>,
    /// Indices the run left in the database; meaningful only when `live_known`.
    live: LiveKeys,
    /// False after opening a database the harness did not fill (`--use_existing_db`).
    live_known: bool,
    /// Key and value bytes written since the engine was opened.
    user_bytes: u64,
    /// The process's `write(2)` byte count when the engine was opened.
    os_written_at_open: Option<u64>,
    /// Threads started so far: each thread's generator is seeded with `seed + this`, so no
    /// two threads of a run, nor two benchmarks, draw the same keys.
    threads_started: u64,
    /// The Zipfian generator over `[0, num)`, made when a benchmark first needs it.
    zipf: Option<Zipf>,
}

impl<'a> Runner<'a> {
    /// A runner printing to `out`.
    pub fn new(cfg: &'a Config, factory: &'a dyn EngineFactory, out: &'a mut dyn Write) -> Self {
        let capacity = cfg.num.max(cfg.writes.unwrap_or(0));
        Runner {
            cfg,
            factory,
            out,
            engine_cfg: EngineConfig {
                triad: factory.triad_override().unwrap_or(cfg.triad_mode()),
                ..EngineConfig::from_config(cfg)
            },
            engine: None,
            live: LiveKeys::new(capacity),
            live_known: false,
            user_bytes: 0,
            os_written_at_open: None,
            threads_started: 0,
            zipf: None,
        }
    }

    /// Prints the header, runs every benchmark, closes the engine; returns the timed results.
    pub fn run_all(mut self) -> Result<Vec<BenchResult>> {
        let notes = self.header_notes();
        write_header(self.out, self.cfg, &self.factory.describe(), &notes)?;
        // Like db_bench: start from an empty database unless told to keep it.
        if self.cfg.use_existing_db {
            self.open_existing()?;
        } else {
            self.open_fresh()?;
        }
        let mut results = Vec::new();
        for &b in &self.cfg.benchmarks {
            if let Some(r) = self.run_one(b)? {
                results.push(r);
            }
        }
        if let Some(e) = self.engine.take() {
            e.close()?;
        }
        Ok(results)
    }

    /// Engine-specific header lines: the TRIAD mode, or a note that `--triad` is ignored.
    fn header_notes(&self) -> Vec<String> {
        if self.factory.has_triad() {
            vec![format!("TRIAD:      {}", self.engine_cfg.triad.name())]
        } else if let Some(mode) = self.cfg.triad {
            vec![format!(
                "Note:       --triad={} ignored: the {} engine has no TRIAD",
                mode.name(),
                self.factory.name()
            )]
        } else {
            Vec::new()
        }
    }

    /// The Zipfian generator of the key space (its `zeta` is summed once per run).
    fn zipf(&mut self) -> Result<Zipf> {
        if let Some(z) = self.zipf {
            return Ok(z);
        }
        let z = Zipf::new(self.cfg.num, self.cfg.zipf_theta).ok_or_else(|| {
            BenchError::usage(format!(
                "--zipf_theta={} must be in (0, 1), both excluded",
                self.cfg.zipf_theta
            ))
        })?;
        self.zipf = Some(z);
        Ok(z)
    }

    fn engine(&self) -> Result<&dyn BenchEngine> {
        self.engine
            .as_deref()
            .ok_or_else(|| BenchError::engine(self.factory.name(), "run", "engine is not open"))
    }

    fn open_fresh(&mut self) -> Result<()> {
        if let Some(e) = self.engine.take() {
            e.close()?;
        }
        destroy_db(&self.cfg.db)?;
        create_db_dir(&self.cfg.db)?;
        self.open_engine()?;
        self.live.clear();
        self.live_known = true;
        Ok(())
    }

    fn open_existing(&mut self) -> Result<()> {
        if !self.cfg.db.exists() {
            create_db_dir(&self.cfg.db)?;
        }
        self.open_engine()?;
        self.live_known = false;
        Ok(())
    }

    fn open_engine(&mut self) -> Result<()> {
        self.engine = Some(self.factory.open(&self.cfg.db, &self.engine_cfg)?);
        self.user_bytes = 0;
        self.os_written_at_open = self
            .engine
            .as_ref()
            .filter(|e| e.writes_through_os())
            .and_then(|_| process_bytes_written());
        Ok(())
    }

    fn print(&mut self, text: &str) -> Result<()> {
        self.out.write_all(text.as_bytes()).map_err(out_err)?;
        self.out.flush().map_err(out_err)
    }

    /// Runs one benchmark; `None` for benchmarks that print no report line.
    fn run_one(&mut self, b: Benchmark) -> Result<Option<BenchResult>> {
        let plan = Plan::new(b, self.cfg);
        if plan.op == Op::Stats {
            let text = self.stats_text()?;
            self.print(&format!("{text}\n"))?;
            return Ok(None);
        }
        if plan.fresh_db {
            if self.cfg.use_existing_db {
                // db_bench's behaviour: a fill would destroy the database the user asked to keep.
                self.print(&format!(
                    "{:<12} : skipped (--use_existing_db is true)\n",
                    b.name()
                ))?;
                return Ok(None);
            }
            self.open_fresh()?;
        }
        let seed = self.cfg.seed.wrapping_add(self.threads_started);
        self.threads_started += plan.threads as u64 + 1;
        let zipf = if plan.needs_zipf() {
            Some(self.zipf()?)
        } else {
            None
        };
        let live = self.live_known.then_some(&self.live);
        let engine = self.engine()?;
        let m = match plan.op {
            Op::Flush => measure_single(self.cfg.histogram, || engine.flush())?,
            Op::Compact => measure_single(self.cfg.histogram, || engine.compact_all())?,
            Op::PhaseShift { phase_ops } => {
                run_phase_shift(engine, self.cfg, live, &plan, phase_ops, zipf, seed)?
            }
            _ => run_threads(engine, self.cfg, live, &plan, zipf, seed)?,
        };
        let engine_stats = engine.stats()?;
        let adaptation = if m.phases.is_empty() {
            None
        } else {
            engine.adaptation()
        };
        let extra = if plan.is_mixed() {
            engine.extra_stats()
        } else {
            Vec::new()
        };
        self.user_bytes += m.user_bytes;
        let live_keys = self.live_known.then(|| self.live.len());
        let stats = bench_view(
            &engine_stats,
            self.user_bytes,
            live_keys,
            self.cfg.entry_bytes(),
        );
        let ops = m.workers.ops;
        let message = match plan.op {
            Op::ReadRandom | Op::Seek => found_message(m.workers.found, ops),
            Op::ReadWhileWriting => {
                let (w, secs) = m
                    .writer
                    .as_ref()
                    .map_or((0, 0.0), |w| (w.ops, w.elapsed().as_secs_f64()));
                format!(
                    "{} (writer: {w} ops, {:.0} ops/sec)",
                    found_message(m.workers.found, ops),
                    w as f64 / secs.max(1e-9)
                )
            }
            Op::Mixed { .. } | Op::PhaseShift { .. } => {
                mix_message(m.workers.reads, m.workers.writes, m.workers.found)
            }
            Op::SyncWhileCompacting => compaction_message(m.compaction, m.elapsed),
            _ => String::new(),
        };
        let mut ops_before = 0;
        let phases: Vec<PhaseResult> = m
            .phases
            .iter()
            .zip(PHASES)
            .map(|(pm, phase)| {
                let r = PhaseResult {
                    phase,
                    keys: pm.keys.describe(),
                    ops: pm.stats.ops,
                    elapsed: pm.stats.elapsed(),
                    mix: pm.stats.op_mix().unwrap_or_else(OpMix::empty),
                    ops_before,
                    windows_at_start: pm.windows_at_start,
                };
                ops_before += pm.stats.ops;
                r
            })
            .collect();
        let result = BenchResult {
            engine: self.factory.name(),
            benchmark: b,
            ops,
            threads: plan.threads,
            elapsed: m.elapsed,
            bytes: m.workers.bytes,
            message,
            mix: m.workers.op_mix(),
            histogram: m.workers.hist,
            stats: Some(stats),
            os_bytes_written: self.os_bytes_since_open(),
            phases,
        };
        let mut text = result.report_line();
        text.push('\n');
        if let Some(mix) = &result.mix {
            text.push_str(&mix.latency_line());
            text.push('\n');
        }
        if let Some(h) = &result.histogram {
            text.push_str(&format_histogram(plan.op_label(), h));
            text.push('\n');
        }
        for (i, p) in result.phases.iter().enumerate() {
            text.push_str(&p.report_line(i + 1));
            text.push('\n');
        }
        for line in class_changes(&result.phases, adaptation.as_ref())
            .iter()
            .chain(&extra)
        {
            text.push_str(line);
            text.push('\n');
        }
        self.print(&text)?;
        Ok(Some(result))
    }

    fn stats_text(&self) -> Result<String> {
        let engine = self.engine()?;
        let raw = engine.stats()?;
        let live_keys = self.live_known.then(|| self.live.len());
        let view = bench_view(&raw, self.user_bytes, live_keys, self.cfg.entry_bytes());
        Ok(format_stats(
            engine.name(),
            &view,
            &raw,
            live_keys,
            self.os_bytes_since_open(),
            &engine.extra_stats(),
        ))
    }

    fn os_bytes_since_open(&self) -> Option<u64> {
        Some(process_bytes_written()?.saturating_sub(self.os_written_at_open?))
    }
}

/// phaseshift's account of the engine's class changes since the benchmark began, each placed
/// in its phase: `characterizer : window 5: write-heavy-skewed -> read-heavy (phase 2, 2
/// windows after it began)`. Nothing for engines without a characterizer.
fn class_changes(
    phases: &[PhaseResult],
    adaptation: Option<&crate::engine::Adaptation>,
) -> Vec<String> {
    let Some(a) = adaptation else {
        return Vec::new();
    };
    let Some(first) = phases.first().and_then(|p| p.windows_at_start) else {
        return Vec::new();
    };
    let mut lines: Vec<String> = a
        .changes
        .iter()
        .filter(|c| c.window > first)
        .map(|c| {
            // The last phase that had begun when the window closed.
            let (n, start) = phases
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.windows_at_start.map(|w| (i + 1, w)))
                .rev()
                .find(|&(_, w)| w < c.window)
                .unwrap_or((1, first));
            format!(
                "characterizer : window {}: {} -> {} (phase {n}, {} windows after it began)",
                c.window,
                c.from,
                c.to,
                c.window - start
            )
        })
        .collect();
    if let Some(last) = phases.last().and_then(|p| p.windows_at_start) {
        if !a.changes.iter().any(|c| c.window > last) {
            lines.push(format!(
                "characterizer : no class change in phase {} ({} windows in it)",
                phases.len(),
                a.windows.saturating_sub(last)
            ));
        }
    }
    lines
}

/// Deletes a benchmark database directory. Refuses a non-empty directory without the
/// harness's marker file: `--db` is user input, and a typo must not erase someone's data.
pub fn destroy_db(path: &Path) -> Result<()> {
    let mut entries = match fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(BenchError::io(format!("read {}", path.display()), e)),
    };
    let empty = entries.next().is_none();
    if !empty && !path.join(MARKER).is_file() {
        return Err(BenchError::usage(format!(
            "refusing to delete {}: it is not empty and has no {MARKER} file, so rialto bench \
             did not make it; delete it yourself or pass another --db",
            path.display()
        )));
    }
    fs::remove_dir_all(path).map_err(|e| BenchError::io(format!("delete {}", path.display()), e))
}

/// Creates a database directory with the harness's marker in it.
pub fn create_db_dir(path: &Path) -> Result<()> {
    fs::create_dir_all(path)
        .map_err(|e| BenchError::io(format!("create {}", path.display()), e))?;
    let marker = path.join(MARKER);
    fs::write(
        &marker,
        b"Made by `rialto bench`, which deletes this directory before fill benchmarks.\n",
    )
    .map_err(|e| BenchError::io(format!("write {}", marker.display()), e))
}

/// Counters of one thread (or, merged, of all measured threads).
#[derive(Debug)]
struct ThreadStats {
    ops: u64,
    bytes: u64,
    found: u64,
    user_bytes: u64,
    hist: Option<Histogram<u64>>,
    /// Mixed benchmarks: reads and writes counted and timed apart.
    reads: u64,
    writes: u64,
    read_hist: Option<Histogram<u64>>,
    write_hist: Option<Histogram<u64>>,
    last: Instant,
    /// When the thread started its ops (merged: the earliest start).
    began: Option<Instant>,
    /// When the thread finished its ops (merged: the latest end).
    ended: Option<Instant>,
}

impl ThreadStats {
    fn new(histogram: bool) -> Self {
        ThreadStats {
            ops: 0,
            bytes: 0,
            found: 0,
            user_bytes: 0,
            hist: histogram.then(new_histogram),
            reads: 0,
            writes: 0,
            read_hist: None,
            write_hist: None,
            last: Instant::now(),
            began: None,
            ended: None,
        }
    }

    /// Stats of a mixed benchmark: reads and writes always timed apart.
    fn new_mixed(histogram: bool) -> Self {
        ThreadStats {
            read_hist: Some(new_histogram()),
            write_hist: Some(new_histogram()),
            ..ThreadStats::new(histogram)
        }
    }

    /// Stats of `plan`'s threads.
    fn for_plan(plan: &Plan, histogram: bool) -> Self {
        if plan.is_mixed() {
            ThreadStats::new_mixed(histogram)
        } else {
            ThreadStats::new(histogram)
        }
    }

    /// Marks the start of the thread's timed work.
    fn start(&mut self) {
        let now = Instant::now();
        self.last = now;
        self.began = Some(now);
    }

    /// Marks the end of the thread's timed work.
    fn stop(&mut self) {
        self.ended = Some(Instant::now());
    }

    /// From the earliest start to the latest end. Each thread takes its own times, as
    /// db_bench does: a coordinating thread that reads the clock after releasing the workers
    /// can be descheduled on a busy machine and miss part (or all) of their run.
    fn elapsed(&self) -> Duration {
        match (self.began, self.ended) {
            (Some(b), Some(e)) => e.saturating_duration_since(b),
            _ => Duration::ZERO,
        }
    }

    /// Counts `n` finished ops; with a histogram, records the time since the previous call
    /// (like db_bench, a batch is one sample).
    fn finished(&mut self, n: u64) {
        self.ops += n;
        if let Some(h) = &mut self.hist {
            let now = Instant::now();
            record(h, now.duration_since(self.last).as_nanos() as u64);
            self.last = now;
        }
    }

    /// Counts one finished read (`read`) or write of a mixed benchmark, timed since the
    /// previous op.
    fn finished_mixed(&mut self, read: bool) {
        self.ops += 1;
        let now = Instant::now();
        let ns = now.duration_since(self.last).as_nanos() as u64;
        self.last = now;
        if let Some(h) = &mut self.hist {
            record(h, ns);
        }
        let (count, hist) = if read {
            (&mut self.reads, &mut self.read_hist)
        } else {
            (&mut self.writes, &mut self.write_hist)
        };
        *count += 1;
        if let Some(h) = hist {
            record(h, ns);
        }
    }

    /// The reads and writes apart, for stats of a mixed benchmark.
    fn op_mix(&self) -> Option<OpMix> {
        Some(OpMix {
            reads: self.reads,
            writes: self.writes,
            found: self.found,
            read_latency: self.read_hist.clone()?,
            write_latency: self.write_hist.clone()?,
        })
    }

    fn merge(&mut self, other: &ThreadStats) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.found += other.found;
        self.user_bytes += other.user_bytes;
        self.reads += other.reads;
        self.writes += other.writes;
        for (h, o) in [
            (&mut self.read_hist, &other.read_hist),
            (&mut self.write_hist, &other.write_hist),
        ] {
            if let (Some(h), Some(o)) = (h, o) {
                // Auto-resizing histograms: adding cannot run out of range.
                let _ = h.add(o);
            }
        }
        self.began = match (self.began, other.began) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.ended = match (self.ended, other.ended) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if let (Some(h), Some(o)) = (&mut self.hist, &other.hist) {
            // Both histograms auto-resize, so adding cannot run out of range.
            let _ = h.add(o);
        }
    }
}

/// What a benchmark measured.
struct Measured {
    elapsed: Duration,
    workers: ThreadStats,
    writer: Option<ThreadStats>,
    /// How long syncwhilecompacting's compaction ran.
    compaction: Option<Duration>,
    user_bytes: u64,
    /// phaseshift's phases (the workers' stats are their sum).
    phases: Vec<PhaseMeasured>,
}

/// One phase of phaseshift, all threads merged.
struct PhaseMeasured {
    stats: ThreadStats,
    keys: KeyGen,
    windows_at_start: Option<u64>,
}

fn measure_single(histogram: bool, op: impl FnOnce() -> Result<()>) -> Result<Measured> {
    let mut s = ThreadStats::new(histogram);
    s.start();
    op()?;
    s.finished(1);
    s.stop();
    Ok(Measured {
        elapsed: s.elapsed(),
        workers: s,
        writer: None,
        compaction: None,
        user_bytes: 0,
        phases: Vec::new(),
    })
}

/// Shared state of the threads of one benchmark.
struct Ctx<'e> {
    engine: &'e dyn BenchEngine,
    cfg: &'e Config,
    live: Option<&'e LiveKeys>,
    /// Set when any thread fails, so the others stop instead of finishing their count.
    abort: AtomicBool,
    /// Measured threads still running; the last one to finish sets `done`.
    running: AtomicUsize,
    /// Set when the measured threads are done; stops readwhilewriting's writer.
    done: AtomicBool,
    /// Set when syncwhilecompacting's compaction is done; stops the measured writers.
    background_done: AtomicBool,
    /// The Zipfian generator, when the plan draws Zipfian keys.
    zipf: Option<Zipf>,
}

impl<'e> Ctx<'e> {
    /// The shared state of `threads` measured threads.
    fn new(
        engine: &'e dyn BenchEngine,
        cfg: &'e Config,
        live: Option<&'e LiveKeys>,
        threads: usize,
        zipf: Option<Zipf>,
    ) -> Self {
        Ctx {
            engine,
            cfg,
            live,
            abort: AtomicBool::new(false),
            running: AtomicUsize::new(threads),
            done: AtomicBool::new(false),
            background_done: AtomicBool::new(false),
            zipf,
        }
    }

    /// The generator of keys drawn from `dist` over `[0, key_space)`. The runner makes the
    /// Zipfian generator for every plan that draws random keys from it
    /// ([`Plan::needs_zipf`]); the others (fillseq, scans) get a uniform one they never use.
    fn key_gen(&self, dist: KeyDist, key_space: u64) -> KeyGen {
        match (dist, self.zipf) {
            (KeyDist::Zipf, Some(z)) => {
                debug_assert_eq!(z.n(), key_space);
                KeyGen::Zipf(z)
            }
            _ => KeyGen::Uniform { n: key_space },
        }
    }

    /// Called by each measured thread when it is done, whether it succeeded or not.
    fn worker_done(&self) {
        if self.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.store(true, Ordering::Release);
        }
    }
}

fn panicked(engine: &dyn BenchEngine) -> BenchError {
    BenchError::engine(engine.name(), "benchmark thread", "panicked")
}

fn run_threads(
    engine: &dyn BenchEngine,
    cfg: &Config,
    live: Option<&LiveKeys>,
    plan: &Plan,
    zipf: Option<Zipf>,
    seed: u64,
) -> Result<Measured> {
    let ctx = Ctx::new(engine, cfg, live, plan.threads, zipf);
    let with_writer = plan.op == Op::ReadWhileWriting;
    let with_compaction = plan.op == Op::SyncWhileCompacting;
    let barrier = Barrier::new(plan.threads + usize::from(with_writer || with_compaction));
    let (workers, writer, compaction) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.threads)
            .map(|t| {
                let (ctx, barrier) = (&ctx, &barrier);
                s.spawn(move || worker(ctx, plan, seed.wrapping_add(t as u64), barrier))
            })
            .collect();
        let writer = with_writer.then(|| {
            let (ctx, barrier) = (&ctx, &barrier);
            let wseed = seed.wrapping_add(plan.threads as u64);
            s.spawn(move || background_writer(ctx, plan, wseed, barrier))
        });
        let compaction = with_compaction.then(|| {
            let (ctx, barrier) = (&ctx, &barrier);
            s.spawn(move || background_compaction(ctx, barrier))
        });
        let workers: Vec<Result<ThreadStats>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked(engine))))
            .collect();
        // Normally set by the last worker already; this covers a worker that panicked.
        ctx.done.store(true, Ordering::Release);
        let writer = writer.map(|h| h.join().unwrap_or_else(|_| Err(panicked(engine))));
        let compaction = compaction.map(|h| h.join().unwrap_or_else(|_| Err(panicked(engine))));
        (workers, writer, compaction)
    });
    let mut total = ThreadStats::for_plan(plan, cfg.histogram);
    for w in workers {
        total.merge(&w?);
    }
    let writer = writer.transpose()?;
    let compaction = compaction.transpose()?;
    let user_bytes = total.user_bytes + writer.as_ref().map_or(0, |w| w.user_bytes);
    Ok(Measured {
        elapsed: total.elapsed(),
        workers: total,
        writer,
        compaction,
        user_bytes,
        phases: Vec::new(),
    })
}

fn worker(ctx: &Ctx<'_>, plan: &Plan, seed: u64, barrier: &Barrier) -> Result<ThreadStats> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut values = matches!(
        plan.op,
        Op::Write { .. } | Op::Mixed { .. } | Op::SyncWhileCompacting
    )
    .then(|| ValueGen::new(&mut rng, ctx.cfg.compression_ratio, ctx.cfg.value_size));
    let keys = ctx.key_gen(plan.key_dist, plan.key_space);
    let mut stats = ThreadStats::for_plan(plan, ctx.cfg.histogram);
    // Everything above is preparation; the clock starts when every thread is here.
    barrier.wait();
    stats.start();
    let r = match (plan.op, values.as_mut()) {
        (Op::Write { order, delete }, Some(values)) => write_loop(
            ctx,
            WriteSpec {
                order,
                delete,
                ops: Some(plan.ops_per_thread),
                keys,
                sync: plan.sync,
                until_background: false,
            },
            &mut rng,
            values,
            &mut stats,
        ),
        (Op::SyncWhileCompacting, Some(values)) => write_loop(
            ctx,
            WriteSpec {
                order: KeyOrder::Random,
                delete: false,
                ops: Some(plan.ops_per_thread),
                keys,
                sync: true,
                until_background: true,
            },
            &mut rng,
            values,
            &mut stats,
        ),
        (Op::Mixed { read_percent }, Some(values)) => mixed_loop(
            ctx,
            MixSpec {
                keys,
                read_percent,
                ops: plan.ops_per_thread,
                sync: plan.sync,
            },
            &mut rng,
            values,
            &mut stats,
        ),
        (Op::ReadRandom | Op::ReadWhileWriting, _) => {
            read_random(ctx, plan, keys, &mut rng, &mut stats)
        }
        (Op::Scan { reverse }, _) => scan(ctx, plan, reverse, &mut stats),
        (Op::Seek, _) => seek_random(ctx, plan, keys, &mut rng, &mut stats),
        _ => Ok(()),
    };
    stats.stop();
    ctx.worker_done();
    if r.is_err() {
        ctx.abort.store(true, Ordering::Relaxed);
    }
    r.map(|()| stats)
}

/// readwhilewriting's writer: random overwrites at full speed until the readers finish.
fn background_writer(
    ctx: &Ctx<'_>,
    plan: &Plan,
    seed: u64,
    barrier: &Barrier,
) -> Result<ThreadStats> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut values = ValueGen::new(&mut rng, ctx.cfg.compression_ratio, ctx.cfg.value_size);
    let keys = ctx.key_gen(plan.key_dist, plan.key_space);
    let mut stats = ThreadStats::new(false);
    barrier.wait();
    stats.start();
    let r = write_loop(
        ctx,
        WriteSpec {
            order: KeyOrder::Random,
            delete: false,
            ops: None,
            keys,
            sync: plan.sync,
            until_background: false,
        },
        &mut rng,
        &mut values,
        &mut stats,
    );
    stats.stop();
    if r.is_err() {
        ctx.abort.store(true, Ordering::Relaxed);
    }
    r.map(|()| stats)
}

/// syncwhilecompacting's compaction: one full compaction, started with the measured
/// writers; returns how long it took.
fn background_compaction(ctx: &Ctx<'_>, barrier: &Barrier) -> Result<Duration> {
    barrier.wait();
    let started = Instant::now();
    let r = ctx.engine.compact_all();
    ctx.background_done.store(true, Ordering::Release);
    if r.is_err() {
        ctx.abort.store(true, Ordering::Relaxed);
    }
    r.map(|()| started.elapsed())
}

/// What a write loop writes.
struct WriteSpec {
    order: KeyOrder,
    delete: bool,
    /// `None`: until the measured threads are done.
    ops: Option<u64>,
    /// Where random keys come from.
    keys: KeyGen,
    sync: bool,
    /// Also stop, after at least one write, once the background compaction is done.
    until_background: bool,
}

fn write_loop(
    ctx: &Ctx<'_>,
    spec: WriteSpec,
    rng: &mut SmallRng,
    values: &mut ValueGen,
    stats: &mut ThreadStats,
) -> Result<()> {
    let cfg = ctx.cfg;
    let batch = cfg.batch_size;
    let mut keys: Vec<Vec<u8>> = (0..batch)
        .map(|_| Vec::with_capacity(cfg.key_size))
        .collect();
    let mut ranges = Vec::with_capacity(batch);
    let mut indices = Vec::with_capacity(batch);
    let mut i = 0u64;
    loop {
        let n = match spec.ops {
            Some(total) if i >= total => break,
            Some(total) => (batch as u64).min(total - i) as usize,
            None if ctx.done.load(Ordering::Acquire) => break,
            None => batch,
        };
        if ctx.abort.load(Ordering::Relaxed)
            || (spec.until_background && i > 0 && ctx.background_done.load(Ordering::Acquire))
        {
            break;
        }
        indices.clear();
        ranges.clear();
        for (j, key) in keys.iter_mut().take(n).enumerate() {
            let index = match spec.order {
                KeyOrder::Sequential => i + j as u64,
                KeyOrder::Random => spec.keys.next(rng),
            };
            encode_key(index, cfg.key_size, key);
            indices.push(index);
            if !spec.delete {
                ranges.push(values.next_range(cfg.value_size));
            }
        }
        let data = values.data();
        if n == 1 {
            if spec.delete {
                ctx.engine.delete(&keys[0], spec.sync)?;
            } else {
                ctx.engine
                    .put(&keys[0], &data[ranges[0].clone()], spec.sync)?;
            }
        } else {
            let ops: Vec<BatchOp<'_>> = keys[..n]
                .iter()
                .enumerate()
                .map(|(j, k)| {
                    if spec.delete {
                        BatchOp::Delete(k)
                    } else {
                        BatchOp::Put(k, &data[ranges[j].clone()])
                    }
                })
                .collect();
            ctx.engine.write_batch(&ops, spec.sync)?;
        }
        let n64 = n as u64;
        if spec.delete {
            stats.user_bytes += n64 * cfg.key_size as u64;
        } else {
            let b = n64 * (cfg.key_size + cfg.value_size) as u64;
            stats.bytes += b;
            stats.user_bytes += b;
        }
        if let Some(live) = ctx.live {
            for &index in &indices {
                if spec.delete {
                    live.remove(index);
                } else {
                    live.insert(index);
                }
            }
        }
        stats.finished(n64);
        i += n64;
    }
    Ok(())
}

/// What a mixed loop does.
struct MixSpec {
    keys: KeyGen,
    /// Percentage of reads; the other ops are puts.
    read_percent: u8,
    ops: u64,
    sync: bool,
}

/// readrandomwriterandom's loop (and each phase of phaseshift): every op is a point read
/// with probability `read_percent`%, else a put, of a key from `keys`; each is timed into
/// the reads' or the writes' histogram.
fn mixed_loop(
    ctx: &Ctx<'_>,
    spec: MixSpec,
    rng: &mut SmallRng,
    values: &mut ValueGen,
    stats: &mut ThreadStats,
) -> Result<()> {
    let cfg = ctx.cfg;
    let mut key = Vec::with_capacity(cfg.key_size);
    for _ in 0..spec.ops {
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        let read = rng.gen_range(0..100u8) < spec.read_percent;
        let index = spec.keys.next(rng);
        encode_key(index, cfg.key_size, &mut key);
        if read {
            if let Some(len) = ctx.engine.get(&key)? {
                stats.found += 1;
                stats.bytes += (key.len() + len) as u64;
            }
        } else {
            let value = values.next(cfg.value_size);
            ctx.engine.put(&key, value, spec.sync)?;
            let b = (cfg.key_size + cfg.value_size) as u64;
            stats.bytes += b;
            stats.user_bytes += b;
            if let Some(live) = ctx.live {
                live.insert(index);
            }
        }
        stats.finished_mixed(read);
    }
    Ok(())
}

/// phaseshift: every thread runs [`PHASES`] in turn, `phase_ops` ops each; all threads finish
/// a phase before any begins the next, and in between one of them reads the engine's
/// characterizer, so that the report can say how many windows the engine took to notice.
fn run_phase_shift(
    engine: &dyn BenchEngine,
    cfg: &Config,
    live: Option<&LiveKeys>,
    plan: &Plan,
    phase_ops: u64,
    zipf: Option<Zipf>,
    seed: u64,
) -> Result<Measured> {
    let ctx = Ctx::new(engine, cfg, live, plan.threads, zipf);
    let barrier = Barrier::new(plan.threads);
    // Windows at the start of each phase; the first is read before any thread runs.
    let windows = Mutex::new(vec![engine.adaptation().map(|a| a.windows)]);
    let per_thread: Vec<Result<Vec<ThreadStats>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.threads)
            .map(|t| {
                let (ctx, barrier, windows) = (&ctx, &barrier, &windows);
                let seed = seed.wrapping_add(t as u64);
                s.spawn(move || phase_worker(ctx, plan, phase_ops, seed, barrier, windows))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked(engine))))
            .collect()
    });
    let mut phases: Vec<PhaseMeasured> = PHASES
        .iter()
        .zip(windows.into_inner())
        .map(|(p, w)| PhaseMeasured {
            stats: ThreadStats::new_mixed(cfg.histogram),
            keys: ctx.key_gen(p.key_dist, plan.key_space),
            windows_at_start: w,
        })
        .collect();
    for t in per_thread {
        for (p, s) in phases.iter_mut().zip(t?) {
            p.stats.merge(&s);
        }
    }
    let mut total = ThreadStats::new_mixed(cfg.histogram);
    for p in &phases {
        total.merge(&p.stats);
    }
    Ok(Measured {
        elapsed: total.elapsed(),
        user_bytes: total.user_bytes,
        workers: total,
        writer: None,
        compaction: None,
        phases,
    })
}

fn phase_worker(
    ctx: &Ctx<'_>,
    plan: &Plan,
    phase_ops: u64,
    seed: u64,
    barrier: &Barrier,
    windows: &Mutex<Vec<Option<u64>>>,
) -> Result<Vec<ThreadStats>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut values = ValueGen::new(&mut rng, ctx.cfg.compression_ratio, ctx.cfg.value_size);
    let mut out = Vec::with_capacity(PHASES.len());
    let mut result = Ok(());
    barrier.wait();
    for (i, phase) in PHASES.iter().enumerate() {
        if i > 0 && barrier.wait().is_leader() {
            // Every thread is between phases: no op is in flight.
            windows
                .lock()
                .push(ctx.engine.adaptation().map(|a| a.windows));
        }
        if i > 0 {
            barrier.wait();
        }
        let mut stats = ThreadStats::new_mixed(ctx.cfg.histogram);
        stats.start();
        if result.is_ok() {
            let spec = MixSpec {
                keys: ctx.key_gen(phase.key_dist, plan.key_space),
                read_percent: phase.read_percent,
                ops: phase_ops,
                sync: plan.sync,
            };
            // A panic must not leave the other threads waiting at the next phase's barrier.
            result = catch_unwind(AssertUnwindSafe(|| {
                mixed_loop(ctx, spec, &mut rng, &mut values, &mut stats)
            }))
            .unwrap_or_else(|_| Err(panicked(ctx.engine)));
            if result.is_err() {
                ctx.abort.store(true, Ordering::Relaxed);
            }
        }
        stats.stop();
        out.push(stats);
    }
    ctx.worker_done();
    result.map(|()| out)
}

fn read_random(
    ctx: &Ctx<'_>,
    plan: &Plan,
    keys: KeyGen,
    rng: &mut SmallRng,
    stats: &mut ThreadStats,
) -> Result<()> {
    let mut key = Vec::with_capacity(ctx.cfg.key_size);
    for _ in 0..plan.ops_per_thread {
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        encode_key(keys.next(rng), ctx.cfg.key_size, &mut key);
        if let Some(len) = ctx.engine.get(&key)? {
            stats.found += 1;
            stats.bytes += (key.len() + len) as u64;
        }
        stats.finished(1);
    }
    Ok(())
}

fn scan(ctx: &Ctx<'_>, plan: &Plan, reverse: bool, stats: &mut ThreadStats) -> Result<()> {
    ctx.engine
        .scan(ScanFrom::End, reverse, plan.ops_per_thread, &mut |k, v| {
            stats.bytes += (k.len() + v.len()) as u64;
            stats.finished(1);
        })?;
    Ok(())
}

fn seek_random(
    ctx: &Ctx<'_>,
    plan: &Plan,
    keys: KeyGen,
    rng: &mut SmallRng,
    stats: &mut ThreadStats,
) -> Result<()> {
    let mut key = Vec::with_capacity(ctx.cfg.key_size);
    for _ in 0..plan.ops_per_thread {
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        encode_key(keys.next(rng), ctx.cfg.key_size, &mut key);
        let mut bytes = 0u64;
        let found = ctx.engine.seek(&key, ctx.cfg.seek_nexts, &mut |k, v| {
            bytes += (k.len() + v.len()) as u64;
        })?;
        stats.bytes += bytes;
        stats.found += u64::from(found);
        stats.finished(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchFlags;
    use crate::engines::memory::MemFactory;

    fn config(dir: &Path, benchmarks: &str, extra: impl FnOnce(&mut BenchFlags)) -> Config {
        let mut f = BenchFlags {
            benchmarks: benchmarks.into(),
            num: 2000,
            seed: Some(42),
            db: Some(dir.join("db")),
            ..BenchFlags::default()
        };
        extra(&mut f);
        Config::from_flags(&f).unwrap()
    }

    fn run(cfg: &Config, factory: &MemFactory) -> (Vec<BenchResult>, String) {
        let mut out = Vec::new();
        let results = Runner::new(cfg, factory, &mut out).run_all().unwrap();
        (results, String::from_utf8(out).unwrap())
    }

    fn by_name<'r>(results: &'r [BenchResult], name: &str) -> &'r BenchResult {
        results
            .iter()
            .find(|r| r.benchmark.name() == name)
            .unwrap_or_else(|| panic!("no result for {name}"))
    }

    #[test]
    fn fills_then_reads_see_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(
            dir.path(),
            "fillseq,readrandom,readseq,readreverse,seekrandom,stats",
            |f| {
                f.seek_nexts = 3;
            },
        );
        let factory = MemFactory::new("mem");
        let (results, out) = run(&cfg, &factory);
        assert_eq!(results.len(), 5);
        let fill = by_name(&results, "fillseq");
        assert_eq!(fill.ops, 2000);
        assert_eq!(fill.bytes, 2000 * 116);
        // fillseq wrote every key, so every read finds its key.
        let rr = by_name(&results, "readrandom");
        assert_eq!(rr.message, "(2000 of 2000 found)");
        assert_eq!(by_name(&results, "readseq").ops, 2000);
        assert_eq!(by_name(&results, "readreverse").ops, 2000);
        let seek = by_name(&results, "seekrandom");
        assert_eq!(seek.message, "(2000 of 2000 found)");
        // Three entries per seek, except near the end of the key space.
        assert!(seek.bytes > 2000 * 116 * 2 && seek.bytes <= 2000 * 116 * 3);
        assert!(out.contains("** mem statistics **"), "{out}");
        assert!(out.contains("live keys : 2000 (counted by the bench)"));
        // The memory engine writes each byte once and stores exactly the live data.
        assert!(
            out.contains("amplification : write 1.00 space 1.00"),
            "{out}"
        );
        for r in &results {
            assert!(
                out.contains(&r.report_line()),
                "missing line for {}",
                r.benchmark.name()
            );
        }
    }

    #[test]
    fn random_fill_overwrite_delete() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(
            dir.path(),
            "fillrandom,overwrite,readrandom,deleterandom,readseq",
            |f| {
                f.batch_size = 7;
            },
        );
        let factory = MemFactory::new("mem");
        let (results, _) = run(&cfg, &factory);
        let fill = by_name(&results, "fillrandom");
        assert_eq!(fill.ops, 2000);
        // Random keys collide: about 1 - 1/e of the key space is written.
        let found: Vec<u64> = by_name(&results, "readrandom")
            .message
            .trim_matches(|c| c == '(' || c == ')')
            .split(' ')
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1], 2000);
        assert!(found[0] > 1300 && found[0] < 1900, "{found:?}");
        let del = by_name(&results, "deleterandom");
        assert_eq!(del.ops, 2000);
        assert_eq!(del.bytes, 0, "deletes move no value bytes, so no MB/s");
        let left = by_name(&results, "readseq").ops;
        assert!(left < 2000 && left > 0);
        // The live-key set agrees with the engine after random writes and deletes.
        let stats = by_name(&results, "readseq").stats.clone().unwrap();
        assert_eq!(stats.live_data_bytes, left * 116);
        // User bytes: fills and overwrites write key+value, deletes write the key.
        assert_eq!(stats.user_bytes_written, 2 * 2000 * 116 + 2000 * 16);
    }

    #[test]
    fn syncwhilecompacting_writes_until_the_compaction_ends() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), "fillrandom,syncwhilecompacting", |f| {
            f.threads = 2;
            f.writes = 50;
        });
        let factory = MemFactory::new("mem");
        let (results, out) = run(&cfg, &factory);
        let r = by_name(&results, "syncwhilecompacting");
        // The memory engine compacts at once: each writer still commits once, and none
        // runs past its count.
        assert!(r.ops >= 2 && r.ops <= 100, "{}", r.ops);
        assert!(r.message.starts_with("(compaction "), "{}", r.message);
        assert!(out.contains(&r.report_line()));
    }

    #[test]
    fn threads_each_run_the_whole_count() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(
            dir.path(),
            "fillrandom,readrandom,readwhilewriting,fillsync",
            |f| {
                f.threads = 3;
                f.histogram = true;
            },
        );
        let factory = MemFactory::new("mem");
        let (results, out) = run(&cfg, &factory);
        assert_eq!(by_name(&results, "fillrandom").ops, 6000);
        assert_eq!(by_name(&results, "readrandom").ops, 6000);
        let rww = by_name(&results, "readwhilewriting");
        assert_eq!(rww.ops, 6000, "the writer's ops are not counted");
        assert_eq!(rww.threads, 3);
        assert!(
            rww.message.contains("of 6000 found) (writer: "),
            "{}",
            rww.message
        );
        let fs = by_name(&results, "fillsync");
        assert_eq!(fs.ops, 3 * 2);
        assert_eq!(fs.histogram.as_ref().map(|h| h.len()), Some(6));
        assert!(out.contains("Microseconds per write:"));
        assert!(out.contains("Microseconds per read:"));
        let r = by_name(&results, "readrandom");
        let expect = r.elapsed.as_secs_f64() * 1e6 * 3.0 / 6000.0;
        assert!((r.micros_per_op() - expect).abs() < 1e-9);
    }

    #[test]
    fn use_existing_db_keeps_data_and_skips_fills() {
        let dir = tempfile::tempdir().unwrap();
        let factory = MemFactory::new("mem");
        let cfg = config(dir.path(), "fillseq", |_| {});
        run(&cfg, &factory);
        let cfg = config(
            dir.path(),
            "fillrandom,readrandom,stats,flush,compact",
            |f| {
                f.use_existing_db = true;
            },
        );
        let (results, out) = run(&cfg, &factory);
        assert!(
            out.contains("fillrandom   : skipped (--use_existing_db is true)"),
            "{out}"
        );
        assert_eq!(
            by_name(&results, "readrandom").message,
            "(2000 of 2000 found)"
        );
        assert!(out.contains("live keys : unknown"));
        assert_eq!(by_name(&results, "compact").ops, 1);
        assert_eq!(by_name(&results, "flush").ops, 1);
        // Without --use_existing_db the database starts empty, like db_bench.
        let cfg = config(dir.path(), "readrandom", |_| {});
        let (results, _) = run(&cfg, &factory);
        assert_eq!(by_name(&results, "readrandom").message, "(0 of 2000 found)");
    }

    #[test]
    fn refuses_to_delete_foreign_directories() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        fs::create_dir_all(&db).unwrap();
        fs::write(db.join("precious.txt"), b"data").unwrap();
        let cfg = config(dir.path(), "fillseq", |_| {});
        let factory = MemFactory::new("mem");
        let mut out = Vec::new();
        let err = Runner::new(&cfg, &factory, &mut out).run_all().unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("refusing to delete"), "{err}");
        assert!(db.join("precious.txt").exists());
        // Empty and marked directories are fine.
        fs::remove_file(db.join("precious.txt")).unwrap();
        destroy_db(&db).unwrap();
        assert!(!db.exists());
        create_db_dir(&db).unwrap();
        fs::write(db.join("000001.sst"), b"x").unwrap();
        destroy_db(&db).unwrap();
        assert!(!db.exists());
        destroy_db(&db).unwrap();
    }

    #[test]
    fn elapsed_spans_earliest_start_to_latest_end() {
        let t0 = Instant::now();
        let mut a = ThreadStats::new(false);
        let mut b = ThreadStats::new(false);
        a.began = Some(t0 + Duration::from_millis(5));
        a.ended = Some(t0 + Duration::from_millis(50));
        b.began = Some(t0 + Duration::from_millis(10));
        b.ended = Some(t0 + Duration::from_millis(80));
        let mut total = ThreadStats::new(false);
        total.merge(&a);
        total.merge(&b);
        assert_eq!(total.elapsed(), Duration::from_millis(75));
        assert_eq!(ThreadStats::new(false).elapsed(), Duration::ZERO);
    }

    #[test]
    fn readrandomwriterandom_mixes_and_times_apart() {
        let dir = tempfile::tempdir().unwrap();
        let factory = MemFactory::new("mem");
        let cfg = config(
            dir.path(),
            "fillrandom,readrandomwriterandom,readseq",
            |f| {
                f.threads = 2;
                f.readwritepercent = 70;
                f.key_dist = KeyDist::Zipf;
            },
        );
        let (results, out) = run(&cfg, &factory);
        let rw = by_name(&results, "readrandomwriterandom");
        assert_eq!(rw.ops, 4000);
        let mix = rw.mix.as_ref().unwrap();
        assert_eq!(mix.reads + mix.writes, 4000);
        assert!(mix.reads > 2500 && mix.reads < 3100, "{}", mix.reads);
        assert_eq!(mix.read_latency.len(), mix.reads);
        assert_eq!(mix.write_latency.len(), mix.writes);
        assert_eq!(
            rw.message,
            format!(
                "( reads:{} writes:{} total:4000 found:{})",
                mix.reads, mix.writes, mix.found
            )
        );
        assert!(mix.found > 0 && mix.found <= mix.reads);
        // Always printed, without --histogram.
        assert!(rw.histogram.is_none());
        assert!(out.contains(&format!("{}\nlatency (us) : read p50 ", rw.report_line())));
        assert!(
            out.contains(&format!("({} ops); write p50 ", mix.reads)),
            "{out}"
        );
        assert!(out.contains("KeyDist:    zipf, theta 0.99 (scrambled)"));
        // The live-key set follows the puts: the engine holds exactly what it says (each of
        // the two readseq threads scans every key).
        let left = by_name(&results, "readseq");
        assert_eq!(
            left.stats.as_ref().unwrap().live_data_bytes,
            left.ops / 2 * 116
        );
        // Non-mixed benchmarks have no mix.
        assert!(by_name(&results, "fillrandom").mix.is_none());

        for (p, reads) in [(100, 2000), (0, 0)] {
            let cfg = config(dir.path(), "readrandomwriterandom", |f| {
                f.readwritepercent = p;
            });
            let (results, out) = run(&cfg, &factory);
            let mix = results[0].mix.as_ref().unwrap();
            assert_eq!((mix.reads, mix.writes), (reads, 2000 - reads));
            if p == 100 {
                assert!(out.contains("write p50 - p99 - (0 ops)"), "{out}");
            }
        }
    }

    #[test]
    fn zipf_keys_concentrate_on_few_keys() {
        let dir = tempfile::tempdir().unwrap();
        let factory = MemFactory::new("mem");
        let distinct = |dist: KeyDist| {
            let cfg = config(dir.path(), "fillrandom,readseq", |f| {
                f.key_dist = dist;
            });
            by_name(&run(&cfg, &factory).0, "readseq").ops
        };
        let uniform = distinct(KeyDist::Uniform);
        let zipf = distinct(KeyDist::Zipf);
        // 2000 uniform draws over 2000 keys hit about 1 - 1/e of them; zipf 0.99 far fewer.
        assert!(uniform > 1100, "{uniform}");
        assert!(zipf < uniform * 3 / 4, "{zipf} vs {uniform}");
        // Same seed, same keys.
        assert_eq!(zipf, distinct(KeyDist::Zipf));
    }

    #[test]
    fn phaseshift_runs_both_phases_on_every_thread() {
        let dir = tempfile::tempdir().unwrap();
        let factory = MemFactory::new("mem");
        let cfg = config(dir.path(), "phaseshift", |f| {
            f.threads = 2;
            f.writes = 1500;
            f.triad = Some(crate::config::TriadMode::Disk);
        });
        let (results, out) = run(&cfg, &factory);
        let r = &results[0];
        assert_eq!(r.ops, 6000);
        assert_eq!(r.phases.len(), 2);
        let (p1, p2) = (&r.phases[0], &r.phases[1]);
        assert_eq!((p1.ops, p2.ops), (3000, 3000));
        assert_eq!((p1.ops_before, p2.ops_before), (0, 3000));
        assert!(p1.mix.reads < 500 && p2.mix.reads > 2500, "{p1:?} {p2:?}");
        assert_eq!(p1.keys, "zipf 0.99");
        assert_eq!(p2.keys, "uniform");
        assert_eq!(
            p2.windows_at_start, None,
            "the memory engine has no characterizer"
        );
        let mix = r.mix.as_ref().unwrap();
        assert_eq!(mix.reads, p1.mix.reads + p2.mix.reads);
        assert!(r.elapsed >= p1.elapsed && r.elapsed >= p2.elapsed);
        assert!(out.contains(&p1.report_line(1)), "{out}");
        assert!(out.contains(&p2.report_line(2)));
        assert!(
            p1.report_line(1).starts_with(
                "phase 1      : write-heavy skewed, 10% reads, keys zipf 0.99: 3000 ops, "
            ),
            "{}",
            p1.report_line(1)
        );
        assert!(p2.report_line(2).ends_with("; began after 3000 ops"));
        assert!(!out.contains("characterizer"));
        // --triad is Rialto's: other engines say they ignore it.
        assert!(out.contains("Note:       --triad=disk ignored: the mem engine has no TRIAD\n"));
        let cfg = config(dir.path(), "readrandom", |_| {});
        assert!(!run(&cfg, &factory).1.contains("--triad"));
    }

    #[test]
    fn class_changes_are_placed_in_their_phase() {
        use crate::engine::{Adaptation, ClassChange};
        let phase = |n: usize, w: u64| PhaseResult {
            phase: PHASES[n],
            keys: String::new(),
            ops: 0,
            elapsed: Duration::ZERO,
            mix: OpMix::empty(),
            ops_before: 0,
            windows_at_start: Some(w),
        };
        let change = |window: u64, from: &str, to: &str| ClassChange {
            window,
            from: from.into(),
            to: to.into(),
        };
        let phases = [phase(0, 10), phase(1, 13)];
        let a = Adaptation {
            windows: 17,
            changes: vec![
                change(4, "balanced", "read-heavy"),
                change(12, "read-heavy", "write-heavy-skewed"),
                change(15, "write-heavy-skewed", "read-heavy"),
            ],
        };
        assert_eq!(
            class_changes(&phases, Some(&a)),
            vec![
                "characterizer : window 12: read-heavy -> write-heavy-skewed (phase 1, 2 windows after it began)",
                "characterizer : window 15: write-heavy-skewed -> read-heavy (phase 2, 2 windows after it began)",
            ]
        );
        let a = Adaptation {
            windows: 17,
            changes: vec![change(12, "balanced", "write-heavy-skewed")],
        };
        assert_eq!(
            class_changes(&phases, Some(&a))[1],
            "characterizer : no class change in phase 2 (4 windows in it)"
        );
        assert!(class_changes(&phases, None).is_empty());
    }

    #[test]
    fn same_seed_same_keys() {
        let dir = tempfile::tempdir().unwrap();
        let factory = MemFactory::new("mem");
        let cfg = config(dir.path(), "fillrandom,readseq", |_| {});
        let a = by_name(&run(&cfg, &factory).0, "readseq").ops;
        let b = by_name(&run(&cfg, &factory).0, "readseq").ops;
        assert_eq!(a, b);
    }
}
