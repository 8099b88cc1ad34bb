//! Engine mode: the worker process the driver starts and kills. It opens the database
//! (timing recovery), verifies it against the expected state, then writes through the
//! merger from several threads until it is killed.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use rialto_engine::{KvEngine, WriteBatch};
use rialto_io::{Clock, PosixFs, SystemClock};
use rialto_lsm::triad::TriadMode;
use rialto_lsm::{Db, Options};
use rialto_txn::{Durability, Merger, MergerOptions};

use super::expected::Expected;
use super::workload::{verify, Stop, Target, Writer};
use super::StressError;

/// The embedded engine, written through the merger as the server writes.
#[derive(Clone)]
pub struct EngineTarget {
    merger: Arc<Merger<Db>>,
}

impl EngineTarget {
    /// Writes through `merger`, reads from its engine.
    pub fn new(merger: Arc<Merger<Db>>) -> Self {
        EngineTarget { merger }
    }
}

impl Target for EngineTarget {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.merger.write(b).wait().map_err(|e| e.to_string())
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), String> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.merger.write(b).wait().map_err(|e| e.to_string())
    }

    fn put_group(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
        let mut b = WriteBatch::new();
        for (k, v) in pairs {
            b.put(k, v);
        }
        self.merger.write(b).wait().map_err(|e| e.to_string())
    }

    fn get_many(&mut self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, String> {
        let db = self.merger.engine();
        keys.iter()
            .map(|k| {
                db.get(k)
                    .map(|v| v.map(|b| b.to_vec()))
                    .map_err(|e| e.to_string())
            })
            .collect()
    }
}

/// Small memtables and tables, so that flushes and compactions (and their kill points)
/// happen within a run of a fraction of a second.
pub fn options(write_buffer_size: usize, triad: &str) -> Result<Options, StressError> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let triad = TriadMode::parse(triad)
        .ok_or_else(|| StressError::Usage(format!("unknown --triad mode '{triad}'")))?;
    Ok(Options {
        fs: Arc::new(PosixFs::new()),
        clock,
        write_buffer_size,
        target_file_size: write_buffer_size as u64,
        max_bytes_for_level_base: 4 * write_buffer_size as u64,
        level0_compaction_trigger: 4,
        triad: triad.options(),
        ..Options::default()
    })
}

/// What the worker is told by the driver.
pub struct WorkerArgs<'a> {
    pub dir: &'a Path,
    pub keys: u32,
    pub threads: u32,
    pub seed: u64,
    pub max_value: usize,
    pub durability: Durability,
    pub write_buffer_size: usize,
    /// A `TriadMode` name.
    pub triad: &'a str,
    pub verify_only: bool,
}

/// Runs the worker; its stdout lines are the protocol the driver reads:
/// `kill-points compiled|absent`, `recovered-ms X`, `verified ...`, `violation ...`,
/// `running`. Exit code 3 means a violation.
pub fn worker(a: WorkerArgs<'_>) -> Result<(), StressError> {
    let compiled = if rialto_killpoint::compiled_in() {
        "compiled"
    } else {
        "absent"
    };
    println!("kill-points {compiled}");
    let start = Instant::now();
    let db = Db::open(a.dir.join("db"), options(a.write_buffer_size, a.triad)?)
        .map_err(|e| StressError::Engine(format!("open: {e}")))?;
    let merger = Merger::start(
        Arc::new(db),
        MergerOptions {
            durability: a.durability,
            ..MergerOptions::default()
        },
        Arc::new(SystemClock::new()),
    )
    .map_err(|e| StressError::Engine(format!("merger: {e}")))?;
    println!("recovered-ms {:.3}", start.elapsed().as_secs_f64() * 1e3);
    let merger = Arc::new(merger);
    let expected =
        Expected::open(&a.dir.join("expected"), a.keys, a.threads).map_err(super::state_err)?;
    let target = EngineTarget {
        merger: Arc::clone(&merger),
    };
    let (report, slots) = verify(&mut target.clone(), &expected).map_err(stop)?;
    println!("{}", super::verified_line(&report));
    if !report.clean() {
        for v in &report.first {
            println!("violation {v}");
        }
        std::process::exit(3);
    }
    if a.verify_only {
        merger
            .close()
            .map_err(|e| StressError::Engine(format!("close: {e}")))?;
        return Ok(());
    }
    let acks = expected.acks().map_err(super::state_err)?;
    println!("running");
    let stop_flag = Arc::new(AtomicBool::new(false));
    let results: Vec<Result<u64, Stop>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let mut target = target.clone();
                let (expected, slots) = (&expected, &slots);
                let w = Writer {
                    thread: t,
                    seed: rialto_killpoint::splitmix64(&mut (a.seed ^ u64::from(t))),
                    max_value: a.max_value,
                    acks: acks[t as usize],
                    stop: Arc::clone(&stop_flag),
                };
                s.spawn(move || w.run(&mut target, expected, slots))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Stop::Violation("a writer panicked".into())))
            })
            .collect()
    });
    // Writers only return on failure (the driver kills the process otherwise).
    for r in results {
        if let Err(Stop::Violation(v)) = r {
            println!("violation {v}");
            std::process::exit(3);
        }
    }
    Err(StressError::Engine(
        "every writer stopped: the engine failed requests".into(),
    ))
}

fn stop(s: Stop) -> StressError {
    match s {
        Stop::Io(e) => super::state_err(e),
        other => StressError::Engine(other.to_string()),
    }
}
