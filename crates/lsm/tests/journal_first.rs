//! Journal first on a slow disk: a compaction that floods the device queue slows every journal
//! sync behind it, and the pacer must notice and hold the compaction back.
//!
//! The disk is `MemFs` with a simulated device (written bytes drain at a fixed bandwidth; a
//! sync waits for the queue ahead of it). The same workload runs with pacing on and off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rialto_engine::{KvEngine, PipelinedCommit, WriteOptions};
use rialto_io::{DeviceModel, MemFs};
use rialto_lsm::{Db, Options, ThrottleOptions};

const DIR: &str = "/db";
const KEYS: u32 = 12_000;

/// 4 MiB/s with half a MiB of dirty data allowed: an unpaced compaction keeps about 125 ms of
/// writes queued in front of every journal sync.
const DEVICE: DeviceModel = DeviceModel {
    bandwidth: 4 << 20,
    sync_latency: Duration::from_micros(100),
    dirty_limit: 512 << 10,
};

fn options(fs: &MemFs, pace: bool) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 256 << 10,
        target_file_size: 256 << 10,
        // Only the manual compaction below writes in the background.
        level0_compaction_trigger: 1000,
        level0_slowdown_trigger: 2000,
        level0_stop_trigger: 3000,
        // The spare WAL segment's zeros would queue on the device too.
        wal_zero_fill_bytes_per_sync: 0,
        throttle: ThrottleOptions {
            enabled: pace,
            // Decide often, so a short test sees many windows.
            window: Duration::from_millis(20),
            // The floor stays well above zero so the compaction ends in bounded time.
            min_rate: 1 << 20,
            ..ThrottleOptions::default()
        },
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(pass: u32, i: u32) -> Vec<u8> {
    let mut v = format!("p{pass}-{i:08}-").into_bytes();
    v.resize(100, b'x');
    v
}

struct Outcome {
    /// Commit latencies of the durable writes made while the compaction ran.
    commits: Vec<Duration>,
    /// Whether a rate limit was in force at some point during the compaction.
    saw_limit: bool,
    /// Lowest limit seen, bytes per second.
    lowest_limit: Option<u64>,
    throttled_micros: u64,
}

/// Loads two overlapping passes into L0 on a fast disk, then compacts everything on the slow
/// device while committing durable writes, and checks every key reads its newest value.
fn run(pace: bool) -> Outcome {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs, pace)).unwrap();
    for pass in 0..2 {
        for i in 0..KEYS {
            db.put(&key(i), &value(pass, i), WriteOptions::default())
                .unwrap();
        }
        db.flush().unwrap();
    }

    fs.set_device(Some(DEVICE));
    // Undisturbed syncs first, so the pacer learns the journal's normal latency.
    for i in 0..200 {
        db.put(b"probe", &i.to_string().into_bytes(), WriteOptions::SYNC)
            .unwrap();
    }
    assert_eq!(
        db.io_stats().background_rate_limit,
        None,
        "nothing to pace yet"
    );

    let done = AtomicBool::new(false);
    let mut out = Outcome {
        commits: Vec::new(),
        saw_limit: false,
        lowest_limit: None,
        throttled_micros: 0,
    };
    std::thread::scope(|s| {
        let compaction = s.spawn(|| {
            let r = db.compact_range(None, None);
            done.store(true, Ordering::Release);
            r
        });
        let mut n = 0u32;
        while !done.load(Ordering::Acquire) {
            let start = Instant::now();
            db.put(b"live", &n.to_be_bytes(), WriteOptions::SYNC)
                .unwrap();
            out.commits.push(start.elapsed());
            n += 1;
            if let Some(r) = db.io_stats().background_rate_limit {
                out.saw_limit = true;
                out.lowest_limit = Some(out.lowest_limit.map_or(r, |l| l.min(r)));
            }
        }
        compaction.join().unwrap().unwrap();
    });
    out.throttled_micros = db.io_stats().background_throttled_micros;

    fs.set_device(None);
    for i in (0..KEYS).step_by(97) {
        assert_eq!(
            db.get(&key(i)).unwrap().as_deref(),
            Some(&value(1, i)[..]),
            "key {i}"
        );
    }
    out
}

/// The `q`-quantile of `v` (sorted in place).
fn quantile(v: &mut [Duration], q: f64) -> Duration {
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v.get(i).copied().unwrap_or_default()
}

#[test]
fn a_compaction_flooding_a_slow_disk_is_paced_for_the_journal() {
    let mut paced = run(true);
    let mut unpaced = run(false);
    // Reported, not asserted: these are real-time latencies of a simulated device.
    let (pm, um) = (
        quantile(&mut paced.commits, 0.5),
        quantile(&mut unpaced.commits, 0.5),
    );
    let (p9, u9) = (
        quantile(&mut paced.commits, 0.9),
        quantile(&mut unpaced.commits, 0.9),
    );
    eprintln!(
        "commit p50/p90 during compaction: paced {pm:?}/{p9:?} ({} commits, lowest limit {:?} \
         B/s, throttled {} µs), unpaced {um:?}/{u9:?} ({} commits)",
        paced.commits.len(),
        paced.lowest_limit,
        paced.throttled_micros,
        unpaced.commits.len()
    );

    assert!(
        paced.saw_limit,
        "slow journal syncs set a background rate limit"
    );
    assert!(paced.throttled_micros > 0, "the compaction waited");
    // Pacing holds the compaction near what the device absorbs: halved at least once below
    // the unbounded rate the CPU could write at.
    let lowest = paced.lowest_limit.unwrap();
    assert!(lowest <= 2 * DEVICE.bandwidth, "lowest limit {lowest} B/s");

    assert!(!unpaced.saw_limit);
    assert_eq!(unpaced.throttled_micros, 0);
}
