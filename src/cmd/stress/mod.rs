//! `rialto stress`: crash testing as RocksDB's db_stress does it. Writer threads update a
//! fixed key space; every value encodes its key, its version and a checksum; an expected
//! state that survives the kill records each write before it is made and after it is
//! acknowledged. A driver kills the process under test with SIGKILL at a random moment (or
//! lets a kill point inside the engine fire), restarts it and verifies that every key holds
//! its last acknowledged state, or the state of the write that was in flight: nothing
//! acknowledged lost, nothing never written present.
//!
//! Four modes: `engine` kills a worker process that runs the embedded engine and merger;
//! `resp` kills a `rialto serve` while the driver's own threads write over RESP; `power` runs
//! the engine in this process on a simulated disk and cuts its power, which loses or tears
//! every unsynced byte (see `power`); `cluster` injects node and broker faults into a local
//! cluster on Kafka (see `cluster`).
//! Seeded: the seed is printed, and the same seed replays the same choices (the moment a
//! kill lands still depends on timing).

mod cluster;
mod engine;
mod expected;
mod power;
mod resp;
mod value;
mod verify;
mod workload;

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rialto_killpoint::splitmix64;
use rialto_txn::Durability;

use expected::Expected;
use verify::Report;
use workload::{verify, Stop, Writer};

/// Arguments of `rialto stress`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What is killed: `engine` (a worker process running the embedded engine), `resp` (a
    /// `rialto serve` written to over the Redis protocol) or `power` (the engine in this
    /// process on a simulated disk whose power is cut: every unsynced byte is lost or torn,
    /// as a prefix or as any subset of its sectors; needs --durability always).
    /// `cluster` starts a local cluster on Kafka (scripts/cluster.sh: 3 brokers, 3 nodes) and
    /// injects --faults into it while threads INCR counters in every partition.
    #[arg(long, default_value = "engine", value_parser = ["engine", "resp", "power", "cluster"])]
    pub mode: String,
    /// Cluster mode's faults, picked at random per cycle: kill (SIGKILL of a partition's
    /// master, restarted after 6 s), stop (SIGSTOP of a master for 6 s, then SIGCONT), broker
    /// (SIGKILL of a Kafka broker, restarted after 5 s).
    #[arg(long, default_value = "kill,stop,broker")]
    pub faults: String,
    /// Working directory: the database in DIR/db, the expected state in DIR/expected.
    /// Emptied at the start unless --resume.
    #[arg(long, default_value = "stress")]
    pub dir: PathBuf,
    /// Kill-and-verify cycles.
    #[arg(long, default_value_t = 20)]
    pub cycles: u64,
    /// Seed of every random choice (default: from the clock; printed either way).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Writer threads (each owns the keys i with i % threads == its index).
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Keys in the key space.
    #[arg(long, default_value_t = 10_000)]
    pub keys: u32,
    /// Largest value, bytes (sizes vary from 12 up to this).
    #[arg(long, default_value_t = 256)]
    pub max_value: usize,
    /// When writes are acknowledged: always (after an fdatasync), everysec or no. A process
    /// kill must lose nothing acknowledged in every mode.
    #[arg(long, default_value = "always", value_parser = ["always", "everysec", "no"])]
    pub durability: String,
    /// Shortest time a cycle writes before the kill, ms.
    #[arg(long, default_value_t = 50)]
    pub min_run_ms: u64,
    /// Longest time a cycle writes before the kill, ms.
    #[arg(long, default_value_t = 500)]
    pub max_run_ms: u64,
    /// Arm one of the engine's kill points in half of the cycles (0: never): points every
    /// write passes (WAL, merger) kill with probability 1/N per hit, the others (flush,
    /// table, manifest, compaction) within their first three hits. Debug builds have them; a release build needs `--features kill-points`.
    #[arg(long, default_value_t = 0)]
    pub kill_points_one_in: u64,
    /// Memtable size, bytes: small, so flushes and compactions happen every cycle.
    #[arg(long, default_value_t = 256 << 10)]
    pub write_buffer_size: usize,
    /// TRIAD techniques of the engine under test: off, mem, disk, log, on or adaptive (the
    /// engine's default, which only turns them on once the characterizer has seen two
    /// 10,000-operation windows). `on` puts every flush through TRIAD-MEM's re-logging and
    /// TRIAD-LOG's commit-log tables.
    #[arg(long, default_value = "adaptive", value_parser = ["off", "mem", "disk", "log", "on", "adaptive"])]
    pub triad: String,
    /// Keep DIR's database and expected state from an earlier run.
    #[arg(long)]
    pub resume: bool,
    /// Internal: run as the engine-mode worker.
    #[arg(long, hide = true)]
    pub worker: bool,
    /// Internal: the worker verifies and exits.
    #[arg(long, hide = true)]
    pub verify_only: bool,
}

/// Why `rialto stress` failed.
#[derive(Debug)]
pub enum StressError {
    /// Bad arguments.
    Usage(String),
    /// Files of the tool itself.
    Io(String),
    /// The engine or server failed in a way a kill does not explain.
    Engine(String),
    /// Data lost or made up: the thing this tool exists to find.
    Violation(String),
}

impl fmt::Display for StressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StressError::Usage(m) | StressError::Io(m) | StressError::Engine(m) => {
                write!(f, "{m}")
            }
            StressError::Violation(m) => write!(f, "VIOLATION: {m}"),
        }
    }
}

impl crate::cli::CliError for StressError {
    fn exit_code(&self) -> u8 {
        match self {
            StressError::Usage(_) => 2,
            StressError::Violation(_) => 3,
            _ => 1,
        }
    }
}

/// A failure of the expected-state file.
fn state_err(e: std::io::Error) -> StressError {
    StressError::Io(format!("expected state: {e}"))
}

/// A failure waiting for a child process.
fn wait_err(e: std::io::Error) -> StressError {
    StressError::Io(format!("wait: {e}"))
}

/// The line both modes print after a verification.
fn verified_line(r: &Report) -> String {
    format!(
        "verified keys={} present={} in-flight-landed={} lost={} phantom={} torn={}",
        r.keys, r.present, r.pending_landed, r.lost, r.phantom, r.torn
    )
}

/// How a cycle ended.
enum Ending {
    /// The driver's SIGKILL.
    Signal,
    /// A kill point fired (its name).
    Point(String),
}

/// What the driver gathers.
#[derive(Default)]
struct Tally {
    cycles: u64,
    by_signal: u64,
    by_point: BTreeMap<String, u64>,
    recovery_ms: Vec<f64>,
    keys_verified: u64,
    landed: u64,
}

impl Tally {
    fn end(&mut self, e: Ending) {
        self.cycles += 1;
        match e {
            Ending::Signal => self.by_signal += 1,
            Ending::Point(p) => *self.by_point.entry(p).or_default() += 1,
        }
    }

    fn verified(&mut self, r: &Report) {
        self.keys_verified += r.keys;
        self.landed += r.pending_landed;
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs `rialto stress`.
pub fn run(args: Args) -> Result<(), StressError> {
    let durability = Durability::parse(&args.durability)
        .ok_or_else(|| StressError::Usage(format!("--durability {}", args.durability)))?;
    if args.threads == 0 || args.threads > expected::MAX_THREADS || args.keys < args.threads {
        return Err(StressError::Usage(format!(
            "--threads must be 1..={} and at most --keys",
            expected::MAX_THREADS
        )));
    }
    if args.min_run_ms > args.max_run_ms {
        return Err(StressError::Usage(
            "--min-run-ms must not exceed --max-run-ms".into(),
        ));
    }
    if args.worker {
        return engine::worker(engine::WorkerArgs {
            dir: &args.dir,
            keys: args.keys,
            threads: args.threads,
            seed: args.seed.unwrap_or(0),
            max_value: args.max_value,
            durability,
            write_buffer_size: args.write_buffer_size,
            triad: &args.triad,
            verify_only: args.verify_only,
        });
    }
    if args.mode == "power" {
        if durability != Durability::Always {
            return Err(StressError::Usage(
                "--mode power needs --durability always (without a sync, a power loss may lose acknowledged writes)".into(),
            ));
        }
        if args.resume || args.kill_points_one_in > 0 {
            return Err(StressError::Usage(
                "--mode power keeps its disk in memory: --resume and --kill-points-one-in do not apply".into(),
            ));
        }
    }
    if args.kill_points_one_in > 0 && !rialto_killpoint::compiled_in() {
        return Err(StressError::Usage(
            "--kill-points-one-in needs a debug build or a release build with `--features kill-points`".into(),
        ));
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    println!(
        "stress: mode {} seed {seed} (replay with --seed {seed}), {} cycles, {} threads, {} keys, durability {}",
        args.mode, args.cycles, args.threads, args.keys, args.durability
    );
    if !args.resume {
        for p in [args.dir.join("db"), args.dir.join("expected")] {
            let r = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            if let Err(e) = r {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(StressError::Io(format!("remove {}: {e}", p.display())));
                }
            }
        }
    }
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| StressError::Io(format!("create {}: {e}", args.dir.display())))?;
    if args.mode == "cluster" {
        return cluster::run(&args.dir, args.cycles, args.threads, seed, &args.faults);
    }
    if args.mode == "power" {
        return power_summary(&args, seed);
    }
    let bin = std::env::current_exe()
        .map_err(|e| StressError::Io(format!("cannot find this executable: {e}")))?;
    let mut tally = Tally::default();
    let started = Instant::now();
    for cycle in 0..args.cycles {
        let mut s = seed ^ cycle.wrapping_mul(0xA24B_AED4_963E_E407);
        let cseed = splitmix64(&mut s);
        let run_ms = args.min_run_ms + cseed % (args.max_run_ms - args.min_run_ms + 1);
        let points = (args.kill_points_one_in > 0 && (cseed >> 32) & 1 == 0)
            .then(|| kill_point_plan(&mut s, args.kill_points_one_in));
        let ending = match args.mode.as_str() {
            "engine" => engine_cycle(&args, &bin, cseed, run_ms, points.as_deref(), &mut tally),
            _ => resp_cycle(&args, &bin, cseed, run_ms, points.as_deref(), &mut tally),
        }
        .map_err(|e| match e {
            StressError::Violation(m) => {
                StressError::Violation(format!("cycle {cycle} of seed {seed}: {m}"))
            }
            other => other,
        })?;
        tally.end(ending);
        if (cycle + 1) % 50 == 0 {
            println!(
                "cycle {}: {:.0} s, {} keys verified so far",
                cycle + 1,
                started.elapsed().as_secs_f64(),
                tally.keys_verified
            );
        }
    }
    // One last verification after the last kill.
    let final_report = match args.mode.as_str() {
        "engine" => engine_final(&args, &bin)?,
        _ => resp_final(&args, &bin)?,
    };
    tally.verified(&final_report);
    let expected =
        Expected::open(&args.dir.join("expected"), args.keys, args.threads).map_err(state_err)?;
    let acked: u64 = expected.acks().map_err(state_err)?.iter().sum();
    tally.recovery_ms.sort_by(|a, b| a.total_cmp(b));
    let points: Vec<String> = tally
        .by_point
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    println!(
        "cycles {} ({} by SIGKILL, {} by kill points{}{}), {:.0} s",
        tally.cycles,
        tally.by_signal,
        tally.by_point.values().sum::<u64>(),
        if points.is_empty() { "" } else { ": " },
        points.join(", "),
        started.elapsed().as_secs_f64()
    );
    println!(
        "acknowledged writes {acked}; keys verified {} (every key after every kill), in-flight writes that landed {}; lost 0, phantom 0, torn multi-key writes 0",
        tally.keys_verified, tally.landed
    );
    println!(
        "recovery ms: p50 {:.1} p99 {:.1} max {:.1} over {} restarts",
        percentile(&tally.recovery_ms, 0.5),
        percentile(&tally.recovery_ms, 0.99),
        tally.recovery_ms.last().copied().unwrap_or(0.0),
        tally.recovery_ms.len()
    );
    Ok(())
}

/// Runs power mode and prints its summary.
fn power_summary(args: &Args, seed: u64) -> Result<(), StressError> {
    let started = Instant::now();
    let (mut tally, crashes) = power::run(args, seed)?;
    let expected =
        Expected::open(&args.dir.join("expected"), args.keys, args.threads).map_err(state_err)?;
    let acked: u64 = expected.acks().map_err(state_err)?.iter().sum();
    tally.recovery_ms.sort_by(|a, b| a.total_cmp(b));
    let kinds: Vec<String> = crashes.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "cycles {} (power losses: {}), {:.0} s",
        tally.cycles,
        kinds.join(", "),
        started.elapsed().as_secs_f64()
    );
    println!(
        "acknowledged writes {acked}; keys verified {} (every key after every power loss), in-flight writes that landed {}; lost 0, phantom 0, torn multi-key writes 0; failed restarts 0",
        tally.keys_verified, tally.landed
    );
    println!(
        "recovery ms: p50 {:.1} p99 {:.1} max {:.1} over {} restarts",
        percentile(&tally.recovery_ms, 0.5),
        percentile(&tally.recovery_ms, 0.99),
        tally.recovery_ms.last().copied().unwrap_or(0.0),
        tally.recovery_ms.len()
    );
    Ok(())
}

/// Arms one kill point per cycle, chosen uniformly, so that points hit rarely (a flush, a
/// manifest edit) fire as often as the hot ones: a hot point (every write passes it) dies
/// with probability 1/`one_in` per hit, a rare one within its first few hits.
fn kill_point_plan(s: &mut u64, one_in: u64) -> String {
    let points = rialto_killpoint::POINTS;
    let p = points[(splitmix64(s) % points.len() as u64) as usize];
    let hot = p.starts_with("wal.") || p.starts_with("merger.");
    let n = if hot { one_in } else { 1 + splitmix64(s) % 3 };
    format!("seed={},one_in={n},only={p}", splitmix64(s))
}

/// The worker's command line for `cseed` (0 for the final verification).
fn worker_command(args: &Args, bin: &Path, cseed: u64, verify_only: bool) -> Command {
    let mut c = Command::new(bin);
    c.arg("stress")
        .arg("--worker")
        .arg("--dir")
        .arg(&args.dir)
        .args(["--seed", &cseed.to_string()])
        .args(["--threads", &args.threads.to_string()])
        .args(["--keys", &args.keys.to_string()])
        .args(["--max-value", &args.max_value.to_string()])
        .args(["--durability", &args.durability])
        .args(["--write-buffer-size", &args.write_buffer_size.to_string()])
        .args(["--triad", &args.triad])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if verify_only {
        c.arg("--verify-only");
    }
    c.env_remove("RIALTO_KILL_POINTS");
    c
}

/// Reads a child's stdout lines on a thread.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

fn stderr_of(child: &mut Child) -> std::thread::JoinHandle<String> {
    let err = child.stderr.take();
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = err {
            let _ = e.read_to_string(&mut s);
        }
        s
    })
}

/// Parses a `verified keys=.. present=.. in-flight-landed=.. lost=.. phantom=.. torn=..` line.
fn parse_verified(line: &str) -> Report {
    let mut r = Report::default();
    for part in line.split_whitespace() {
        let Some((k, v)) = part.split_once('=') else {
            continue;
        };
        let v: u64 = v.parse().unwrap_or(0);
        match k {
            "keys" => r.keys = v,
            "present" => r.present = v,
            "in-flight-landed" => r.pending_landed = v,
            "lost" => r.lost = v,
            "phantom" => r.phantom = v,
            "torn" => r.torn = v,
            _ => {}
        }
    }
    r
}

/// How a killed process ended: the kill point it names on stderr, else our signal.
fn ending_of(stderr: &str) -> Ending {
    match stderr.lines().find_map(|l| l.strip_prefix("kill point ")) {
        Some(p) => Ending::Point(p.trim().to_string()),
        None => Ending::Signal,
    }
}

/// Waits up to `ms` for `child` to exit by itself, then kills it with SIGKILL.
fn kill_after(child: &mut Child, ms: u64) -> Result<std::process::ExitStatus, StressError> {
    let deadline = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < deadline {
        if let Some(st) = child.try_wait().map_err(wait_err)? {
            return Ok(st);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    child.wait().map_err(wait_err)
}

fn engine_cycle(
    args: &Args,
    bin: &Path,
    cseed: u64,
    run_ms: u64,
    points: Option<&str>,
    tally: &mut Tally,
) -> Result<Ending, StressError> {
    let mut cmd = worker_command(args, bin, cseed, false);
    if let Some(p) = points {
        cmd.env("RIALTO_KILL_POINTS", p);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| StressError::Io(format!("start worker: {e}")))?;
    let lines = lines_of(&mut child);
    let err = stderr_of(&mut child);
    let mut violations = Vec::new();
    let mut running = false;
    // Until the worker says it runs (or exits: a kill point may fire during recovery).
    for line in lines.iter() {
        if let Some(ms) = line.strip_prefix("recovered-ms ") {
            tally.recovery_ms.push(ms.trim().parse().unwrap_or(0.0));
        } else if line.starts_with("verified ") {
            tally.verified(&parse_verified(&line));
        } else if let Some(v) = line.strip_prefix("violation ") {
            violations.push(v.to_string());
        } else if line == "running" {
            running = true;
            break;
        }
    }
    let status = if running {
        kill_after(&mut child, run_ms)?
    } else {
        child.wait().map_err(wait_err)?
    };
    violations.extend(
        lines
            .try_iter()
            .filter_map(|l| l.strip_prefix("violation ").map(str::to_string)),
    );
    let stderr = err.join().unwrap_or_default();
    if !violations.is_empty() || status.code() == Some(3) {
        return Err(StressError::Violation(violations.join("; ")));
    }
    match status.signal() {
        Some(libc::SIGKILL) => Ok(ending_of(&stderr)),
        _ => Err(StressError::Engine(format!(
            "the worker ended with {status}: {}",
            stderr.trim()
        ))),
    }
}

fn engine_final(args: &Args, bin: &Path) -> Result<Report, StressError> {
    let mut child = worker_command(args, bin, 0, true)
        .spawn()
        .map_err(|e| StressError::Io(format!("start worker: {e}")))?;
    let lines = lines_of(&mut child);
    let err = stderr_of(&mut child);
    let out: Vec<String> = lines.iter().collect();
    let status = child.wait().map_err(wait_err)?;
    let stderr = err.join().unwrap_or_default();
    let report = out
        .iter()
        .find(|l| l.starts_with("verified "))
        .map(|l| parse_verified(l))
        .unwrap_or_default();
    if !report.clean() || status.code() == Some(3) {
        return Err(StressError::Violation(format!(
            "final verification: {}",
            out.join("; ")
        )));
    }
    if !status.success() {
        return Err(StressError::Engine(format!(
            "final verification ended with {status}: {}",
            stderr.trim()
        )));
    }
    Ok(report)
}

fn server_spec<'a>(args: &'a Args, bin: &'a Path) -> resp::ServerSpec<'a> {
    resp::ServerSpec {
        bin,
        dir: &args.dir,
        durability: &args.durability,
        write_buffer_size: args.write_buffer_size,
        triad: &args.triad,
    }
}

/// Verifies a listening server; a violation is an error.
fn resp_verify(
    port: u16,
    expected: &Expected,
) -> Result<(Report, Vec<expected::Slot>), StressError> {
    let mut t = resp::RespTarget::connect(port).map_err(StressError::Engine)?;
    let (report, slots) = verify(&mut t, expected).map_err(|e| match e {
        Stop::Io(e) => state_err(e),
        other => StressError::Engine(other.to_string()),
    })?;
    if !report.clean() {
        return Err(StressError::Violation(report.first.join("; ")));
    }
    // The key count is recovered with the data it counts (the same journal records).
    let counted = t.dbsize().map_err(StressError::Engine)?;
    if counted != report.present {
        return Err(StressError::Violation(format!(
            "DBSIZE says {counted} keys, {} are present",
            report.present
        )));
    }
    Ok((report, slots))
}

fn resp_cycle(
    args: &Args,
    bin: &Path,
    cseed: u64,
    run_ms: u64,
    points: Option<&str>,
    tally: &mut Tally,
) -> Result<Ending, StressError> {
    let expected =
        Expected::open(&args.dir.join("expected"), args.keys, args.threads).map_err(state_err)?;
    let mut server = resp::Server::start(&server_spec(args, bin), points)?;
    let Some(port) = server.port else {
        // It died before listening: a kill point during recovery.
        let status = server.child.wait().map_err(wait_err)?;
        let log = server.drain_log().join("\n");
        return match status.signal() {
            Some(libc::SIGKILL) => Ok(ending_of(&log)),
            _ => Err(StressError::Engine(format!(
                "the server ended with {status} before listening: {log}"
            ))),
        };
    };
    if let Some(r) = server.recovered {
        tally.recovery_ms.push(r.as_secs_f64() * 1e3);
    }
    let verified = resp_verify(port, &expected);
    let (report, slots) = match verified {
        Ok(v) => v,
        Err(StressError::Engine(e)) => {
            // Background work after recovery (a flush, a compaction) passes kill points
            // too: a server that died of one leaves the verification for the next cycle.
            std::thread::sleep(Duration::from_millis(20));
            if let Some(status) = server.child.try_wait().map_err(wait_err)? {
                let log = server.drain_log().join("\n");
                if status.signal() == Some(libc::SIGKILL) && log.contains("kill point ") {
                    return Ok(ending_of(&log));
                }
            }
            let _ = server.child.kill();
            let _ = server.child.wait();
            return Err(StressError::Engine(e));
        }
        Err(e) => {
            let _ = server.child.kill();
            let _ = server.child.wait();
            return Err(e);
        }
    };
    tally.verified(&report);
    let acks = expected.acks().map_err(state_err)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (expected, slots) = (&expected, &slots);
    let (status, results) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads)
            .map(|t| {
                let w = Writer {
                    thread: t,
                    seed: splitmix64(&mut (cseed ^ u64::from(t))),
                    max_value: args.max_value,
                    acks: acks[t as usize],
                    stop: Arc::clone(&stop),
                };
                s.spawn(move || -> Result<u64, Stop> {
                    let mut target = resp::RespTarget::connect(port).map_err(Stop::Target)?;
                    w.run(&mut target, expected, slots)
                })
            })
            .collect();
        let status = kill_after(&mut server.child, run_ms);
        stop.store(true, Ordering::Relaxed);
        let results: Vec<Result<u64, Stop>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Stop::Violation("a writer panicked".into())))
            })
            .collect();
        (status, results)
    });
    let status = status?;
    for r in results {
        match r {
            Err(Stop::Violation(v)) => return Err(StressError::Violation(v)),
            Err(Stop::Io(e)) => return Err(state_err(e)),
            _ => {}
        }
    }
    // Let the log reader catch the last lines (a kill point's name).
    std::thread::sleep(Duration::from_millis(20));
    let log = server.drain_log().join("\n");
    match status.signal() {
        Some(libc::SIGKILL) => Ok(ending_of(&log)),
        _ => Err(StressError::Engine(format!(
            "the server ended with {status}: {log}"
        ))),
    }
}

fn resp_final(args: &Args, bin: &Path) -> Result<Report, StressError> {
    let expected =
        Expected::open(&args.dir.join("expected"), args.keys, args.threads).map_err(state_err)?;
    let mut server = resp::Server::start(&server_spec(args, bin), None)?;
    let port = server.port.ok_or_else(|| {
        StressError::Engine(format!(
            "the server did not start: {}",
            server.drain_log().join("\n")
        ))
    })?;
    let r = resp_verify(port, &expected);
    if let Ok(t) = resp::RespTarget::connect(port) {
        t.shutdown();
    }
    if kill_after(&mut server.child, 30_000)?.signal() == Some(libc::SIGKILL) {
        return Err(StressError::Engine(
            "the server did not stop within 30 s of SHUTDOWN".into(),
        ));
    }
    r.map(|(report, _)| report)
}
