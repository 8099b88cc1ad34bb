//! Where a durable commit's time goes: runs N writer threads through the merger on
//! `/tmp/probe-db` and prints ops/s, transactions per sync, fdatasync p50 and the idle gap
//! between one sync's end and the next one's start (from the engine's I/O timeline).
//! `cargo run --release -p rialto-txn --example probe -- THREADS MAX_WAIT_US [inline]`

use rialto_engine::{IoEventKind, PipelinedCommit, WriteBatch};
use rialto_lsm::{Db, Options};
use rialto_txn::{Merger, MergerOptions};
use std::sync::Arc;

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let wait_us: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    // "inline": writers execute groups themselves (what `rialto serve` and `rialto bench` use).
    let inline = std::env::args().nth(3).is_some_and(|s| s == "inline");
    let dir = "/tmp/probe-db";
    let _ = std::fs::remove_dir_all(dir);
    let db = Arc::new(Db::open(dir, Options::default()).unwrap());
    let m = Arc::new(
        Merger::start(
            Arc::clone(&db),
            MergerOptions {
                max_wait: std::time::Duration::from_micros(wait_us),
                inline_execution: inline,
                ..Default::default()
            },
            Arc::new(rialto_io::SystemClock::new()),
        )
        .unwrap(),
    );
    let per = 40000 / threads;
    let t0 = std::time::Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let m = Arc::clone(&m);
            s.spawn(move || {
                for i in 0..per {
                    let mut b = WriteBatch::new();
                    b.put(format!("{t:04}{i:012}").as_bytes(), &[b'x'; 100]);
                    m.write_and_wait(b).unwrap();
                }
            });
        }
    });
    let el = t0.elapsed().as_secs_f64();
    let st = m.stats();
    let io = db.io_stats();
    let syncs: Vec<_> = io.events(IoEventKind::JournalSync).cloned().collect();
    let writes: Vec<_> = io.events(IoEventKind::JournalWrite).cloned().collect();
    let mut gaps = Vec::new();
    for w in syncs.windows(2) {
        gaps.push(w[1].start_micros - (w[0].start_micros + w[0].duration_micros));
    }
    gaps.sort();
    let mut durs: Vec<u64> = syncs.iter().map(|e| e.duration_micros).collect();
    durs.sort();
    let wd: u64 =
        writes.iter().map(|e| e.duration_micros).sum::<u64>() / writes.len().max(1) as u64;
    println!("threads={threads} inline={inline} ops/s={:.0} txns={} groups={} syncs={} txn/sync={:.2} sync p50={} gap p50={} p90={} write avg={}us", (per*threads) as f64/el, st.txns, st.groups, st.syncs, st.txns as f64/st.syncs as f64, durs[durs.len()/2], gaps[gaps.len()/2], gaps[gaps.len()*9/10], wd);
    m.close().unwrap();
}
