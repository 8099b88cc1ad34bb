//! Runs a benchmark list against one engine: manages the database directory, opens and
//! reopens the engine, drives the threads, and prints db_bench's lines as results come in.
//!
//! Timing follows db_bench: threads prepare (value buffers, generators) before a common
//! start, the clock runs from the start until the last measured thread finishes, micros/op is
//! wall time x threads / ops and ops/sec is ops / wall time.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rialto_engine::{BatchOp, EngineStats};

use crate::config::Config;
use crate::engine::{BenchEngine, EngineConfig, EngineFactory, ScanFrom};
use crate::error::{out_err, BenchError, Result};
use crate::histogram::{format_histogram, new_histogram, record};
use crate::keys::encode_key;
use crate::live::LiveKeys;
use crate::report::{
    bench_view, format_line, format_stats, found_message, process_bytes_written, write_header,
};
use crate::values::ValueGen;
use crate::workload::{Benchmark, KeyOrder, Op, Plan};

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
    /// denominators (see [`crate::report::bench_view`]).
    pub stats: Option<EngineStats>,
    /// Bytes the process handed to `write(2)` since the engine was opened, where the OS
    /// reports it ([`crate::report::process_bytes_written`]).
    pub os_bytes_written: Option<u64>,
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
}

impl<'a> Runner<'a> {
    /// A runner printing to `out`.
    pub fn new(cfg: &'a Config, factory: &'a dyn EngineFactory, out: &'a mut dyn Write) -> Self {
        let capacity = cfg.num.max(cfg.writes.unwrap_or(0));
        Runner {
            cfg,
            factory,
            out,
            engine_cfg: EngineConfig::from_config(cfg),
            engine: None,
            live: LiveKeys::new(capacity),
            live_known: false,
            user_bytes: 0,
            os_written_at_open: None,
            threads_started: 0,
        }
    }

    /// Prints the header, runs every benchmark, closes the engine; returns the timed results.
    pub fn run_all(mut self) -> Result<Vec<BenchResult>> {
        write_header(self.out, self.cfg, &self.factory.describe())?;
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
        let live = self.live_known.then_some(&self.live);
        let engine = self.engine()?;
        let m = match plan.op {
            Op::Flush => measure_single(self.cfg.histogram, || engine.flush())?,
            Op::Compact => measure_single(self.cfg.histogram, || engine.compact_all())?,
            _ => run_threads(engine, self.cfg, live, &plan, seed)?,
        };
        let engine_stats = engine.stats()?;
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
            _ => String::new(),
        };
        let result = BenchResult {
            engine: self.factory.name(),
            benchmark: b,
            ops,
            threads: plan.threads,
            elapsed: m.elapsed,
            bytes: m.workers.bytes,
            message,
            histogram: m.workers.hist,
            stats: Some(stats),
            os_bytes_written: self.os_bytes_since_open(),
        };
        let mut text = result.report_line();
        text.push('\n');
        if let Some(h) = &result.histogram {
            text.push_str(&format_histogram(plan.op_label(), h));
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
        ))
    }

    fn os_bytes_since_open(&self) -> Option<u64> {
        Some(process_bytes_written()?.saturating_sub(self.os_written_at_open?))
    }
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
            last: Instant::now(),
            began: None,
            ended: None,
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

    fn merge(&mut self, other: ThreadStats) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.found += other.found;
        self.user_bytes += other.user_bytes;
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
    user_bytes: u64,
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
        user_bytes: 0,
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
}

impl Ctx<'_> {
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
    seed: u64,
) -> Result<Measured> {
    let ctx = Ctx {
        engine,
        cfg,
        live,
        abort: AtomicBool::new(false),
        running: AtomicUsize::new(plan.threads),
        done: AtomicBool::new(false),
    };
    let with_writer = plan.op == Op::ReadWhileWriting;
    let barrier = Barrier::new(plan.threads + usize::from(with_writer));
    let (workers, writer) = std::thread::scope(|s| {
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
        let workers: Vec<Result<ThreadStats>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked(engine))))
            .collect();
        // Normally set by the last worker already; this covers a worker that panicked.
        ctx.done.store(true, Ordering::Release);
        let writer = writer.map(|h| h.join().unwrap_or_else(|_| Err(panicked(engine))));
        (workers, writer)
    });
    let mut total = ThreadStats::new(cfg.histogram);
    for w in workers {
        total.merge(w?);
    }
    let writer = writer.transpose()?;
    let user_bytes = total.user_bytes + writer.as_ref().map_or(0, |w| w.user_bytes);
    Ok(Measured {
        elapsed: total.elapsed(),
        workers: total,
        writer,
        user_bytes,
    })
}

fn worker(ctx: &Ctx<'_>, plan: &Plan, seed: u64, barrier: &Barrier) -> Result<ThreadStats> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut values = matches!(plan.op, Op::Write { .. })
        .then(|| ValueGen::new(&mut rng, ctx.cfg.compression_ratio, ctx.cfg.value_size));
    let mut stats = ThreadStats::new(ctx.cfg.histogram);
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
                key_space: plan.key_space,
                sync: plan.sync,
            },
            &mut rng,
            values,
            &mut stats,
        ),
        (Op::ReadRandom | Op::ReadWhileWriting, _) => read_random(ctx, plan, &mut rng, &mut stats),
        (Op::Scan { reverse }, _) => scan(ctx, plan, reverse, &mut stats),
        (Op::Seek, _) => seek_random(ctx, plan, &mut rng, &mut stats),
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
    let mut stats = ThreadStats::new(false);
    barrier.wait();
    stats.start();
    let r = write_loop(
        ctx,
        WriteSpec {
            order: KeyOrder::Random,
            delete: false,
            ops: None,
            key_space: plan.key_space,
            sync: plan.sync,
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

/// What a write loop writes.
struct WriteSpec {
    order: KeyOrder,
    delete: bool,
    /// `None`: until the measured threads are done.
    ops: Option<u64>,
    key_space: u64,
    sync: bool,
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
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        indices.clear();
        ranges.clear();
        for (j, key) in keys.iter_mut().take(n).enumerate() {
            let index = match spec.order {
                KeyOrder::Sequential => i + j as u64,
                KeyOrder::Random => rng.gen_range(0..spec.key_space),
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

fn read_random(
    ctx: &Ctx<'_>,
    plan: &Plan,
    rng: &mut SmallRng,
    stats: &mut ThreadStats,
) -> Result<()> {
    let mut key = Vec::with_capacity(ctx.cfg.key_size);
    for _ in 0..plan.ops_per_thread {
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        encode_key(rng.gen_range(0..plan.key_space), ctx.cfg.key_size, &mut key);
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
    rng: &mut SmallRng,
    stats: &mut ThreadStats,
) -> Result<()> {
    let mut key = Vec::with_capacity(ctx.cfg.key_size);
    for _ in 0..plan.ops_per_thread {
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        encode_key(rng.gen_range(0..plan.key_space), ctx.cfg.key_size, &mut key);
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
        total.merge(a);
        total.merge(b);
        assert_eq!(total.elapsed(), Duration::from_millis(75));
        assert_eq!(ThreadStats::new(false).elapsed(), Duration::ZERO);
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
