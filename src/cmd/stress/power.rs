//! Power mode: the engine and the merger run in this process on `MemFs`, whose crash model
//! loses or tears every byte that was not synced, as a power loss can: all of it, a prefix
//! cut at a sector, or any subset of its sectors (a hole inside one write, later pages on
//! disk before earlier ones, one sector torn below its size). Each cycle writes from several
//! threads through the merger, cuts the power at a random moment, restarts on what the disk
//! kept and verifies that every acknowledged write is there. A restart that fails is a
//! failure of the tool, as a lost write is: after a power loss a server must come back on its
//! own.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rialto_io::{CrashMode, DeviceModel, MemFs, SystemClock};
use rialto_killpoint::splitmix64;
use rialto_lsm::Db;
use rialto_txn::{Durability, Merger, MergerOptions};

use super::engine::{options, EngineTarget};
use super::expected::Expected;
use super::workload::{verify, Stop, Writer};
use super::{state_err, verified_line, Args, StressError, Tally};

/// The database's directory on the simulated disk.
const DB_DIR: &str = "/power/db";

/// A disk whose syncs take long enough for the merger to log the next group while one syncs
/// (the overlap that leaves several unsynced writes at a power loss).
const DEVICE: DeviceModel = DeviceModel {
    bandwidth: 400 << 20,
    sync_latency: Duration::from_micros(150),
    dirty_limit: 64 << 20,
};

/// The power loss of a cycle: a quarter of the cycles drop every unsynced byte, a quarter
/// keep a prefix of them cut at a sector, half keep any subset of their sectors.
fn crash_of(cseed: u64) -> CrashMode {
    match (cseed >> 40) % 4 {
        0 => CrashMode::DropUnsynced,
        1 => CrashMode::RandomTail { seed: cseed },
        _ => CrashMode::Scattered { seed: cseed },
    }
}

fn crash_name(c: CrashMode) -> &'static str {
    match c {
        CrashMode::DropUnsynced => "drop-unsynced",
        CrashMode::RandomTail { .. } => "prefix",
        CrashMode::Scattered { .. } => "scattered",
        CrashMode::KeepAll => "keep-all",
    }
}

/// Opens the database on what the simulated disk kept and starts the merger, or says why the
/// restart failed.
fn restart(fs: &MemFs, args: &Args) -> Result<(Arc<Merger<Db>>, Duration), StressError> {
    let mut opts = options(args.write_buffer_size, &args.triad)?;
    opts.fs = Arc::new(fs.clone());
    let start = Instant::now();
    let db = Db::open(DB_DIR, opts).map_err(|e| {
        StressError::Violation(format!("the restart after a power loss failed: {e}"))
    })?;
    let merger = Merger::start(
        Arc::new(db),
        MergerOptions {
            durability: Durability::Always,
            ..MergerOptions::default()
        },
        Arc::new(SystemClock::new()),
    )
    .map_err(|e| StressError::Engine(format!("merger: {e}")))?;
    Ok((Arc::new(merger), start.elapsed()))
}

/// Verifies the database against the expected state; a violation is an error.
fn check(
    merger: &Arc<Merger<Db>>,
    expected: &Expected,
    tally: &mut Tally,
) -> Result<Vec<super::expected::Slot>, StressError> {
    let mut target = EngineTarget::new(Arc::clone(merger));
    let (report, slots) = verify(&mut target, expected).map_err(|e| match e {
        Stop::Io(e) => state_err(e),
        other => StressError::Engine(other.to_string()),
    })?;
    if !report.clean() {
        return Err(StressError::Violation(format!(
            "{}: {}",
            verified_line(&report),
            report.first.join("; ")
        )));
    }
    tally.verified(&report);
    Ok(slots)
}

/// Runs the power-loss cycles; returns the tally and the count of each kind of power loss.
pub fn run(args: &Args, seed: u64) -> Result<(Tally, BTreeMap<&'static str, u64>), StressError> {
    let fs = MemFs::new();
    fs.set_device(Some(DEVICE));
    let expected =
        Expected::open(&args.dir.join("expected"), args.keys, args.threads).map_err(state_err)?;
    let mut tally = Tally::default();
    let mut crashes = BTreeMap::new();
    let started = Instant::now();
    for cycle in 0..args.cycles {
        let mut s = seed ^ cycle.wrapping_mul(0xA24B_AED4_963E_E407);
        let cseed = splitmix64(&mut s);
        let run_ms = args.min_run_ms + cseed % (args.max_run_ms - args.min_run_ms + 1);
        let in_cycle = |e: StressError| match e {
            StressError::Violation(m) => {
                StressError::Violation(format!("cycle {cycle} of seed {seed}: {m}"))
            }
            other => other,
        };
        let (merger, recovered) = restart(&fs, args).map_err(in_cycle)?;
        tally.recovery_ms.push(recovered.as_secs_f64() * 1e3);
        let slots = check(&merger, &expected, &mut tally).map_err(in_cycle)?;
        let acks = expected.acks().map_err(state_err)?;
        let crash = crash_of(cseed);
        let stop = Arc::new(AtomicBool::new(false));
        let results: Vec<Result<u64, Stop>> = std::thread::scope(|sc| {
            let handles: Vec<_> = (0..args.threads)
                .map(|t| {
                    let mut target = EngineTarget::new(Arc::clone(&merger));
                    let (expected, slots) = (&expected, &slots);
                    let w = Writer {
                        thread: t,
                        seed: splitmix64(&mut (cseed ^ u64::from(t))),
                        max_value: args.max_value,
                        acks: acks[t as usize],
                        stop: Arc::clone(&stop),
                    };
                    sc.spawn(move || w.run(&mut target, expected, slots))
                })
                .collect();
            std::thread::sleep(Duration::from_millis(run_ms));
            // The power goes: handles from before fail, so nothing is acknowledged after.
            fs.crash(crash);
            stop.store(true, Ordering::Relaxed);
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Stop::Violation("a writer panicked".into())))
                })
                .collect()
        });
        for r in results {
            match r {
                Err(Stop::Violation(v)) => return Err(in_cycle(StressError::Violation(v))),
                Err(Stop::Io(e)) => return Err(state_err(e)),
                _ => {}
            }
        }
        let _ = merger.close();
        drop(merger);
        // Whatever the dying process did after the power loss never reached the disk.
        fs.crash(CrashMode::DropUnsynced);
        *crashes.entry(crash_name(crash)).or_default() += 1;
        tally.cycles += 1;
        if (cycle + 1) % 100 == 0 {
            println!(
                "cycle {}: {:.0} s, {} keys verified so far",
                cycle + 1,
                started.elapsed().as_secs_f64(),
                tally.keys_verified
            );
        }
    }
    // One last restart and verification after the last power loss.
    let (merger, recovered) = restart(&fs, args)?;
    tally.recovery_ms.push(recovered.as_secs_f64() * 1e3);
    check(&merger, &expected, &mut tally).map_err(|e| match e {
        StressError::Violation(m) => {
            StressError::Violation(format!("final verification of seed {seed}: {m}"))
        }
        other => other,
    })?;
    merger
        .close()
        .map_err(|e| StressError::Engine(format!("close: {e}")))?;
    Ok((tally, crashes))
}
