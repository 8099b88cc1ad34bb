//! Row-cache warm-up (`Options::row_cache_warm`): what a pass puts in the cache, when, and
//! that a warmed row is never stale.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rialto_engine::{KvEngine, WriteOptions};
use rialto_lsm::{Db, Options};

fn options(row_cache: usize, quiet_ms: u64) -> Options {
    Options {
        write_buffer_size: 256 << 10,
        target_file_size: 256 << 10,
        max_bytes_for_level_base: 1 << 20,
        row_cache_size: row_cache,
        row_cache_warm_quiet_ms: quiet_ms,
        ..Options::default()
    }
}

/// `cache/row.rs`'s per-entry charge besides key and value.
const ROW_OVERHEAD: usize = 96;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Polls until `done` holds; the bound only keeps a broken build from hanging CI.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_load_is_served_from_the_row_cache_once_writes_pause() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5_000u32;
    let db = Db::open(dir.path(), options(8 << 20, 50)).unwrap();
    for i in 0..n {
        db.put(
            &key(i),
            format!("value{i}").as_bytes(),
            WriteOptions::default(),
        )
        .unwrap();
    }
    // Some of it in tables, some still in the memtable: the pass reads both.
    db.flush().unwrap();
    for i in n..2 * n {
        db.put(
            &key(i),
            format!("value{i}").as_bytes(),
            WriteOptions::default(),
        )
        .unwrap();
    }
    db.delete(&key(7), WriteOptions::default()).unwrap();
    // Nothing was read: every cached row is a warmed one (a row warmed before the delete
    // was dropped by it). Charge per row: key, value and the fixed overhead.
    let live: u64 = (0..2 * n)
        .filter(|&i| i != 7)
        .map(|i| (key(i).len() + format!("value{i}").len() + ROW_OVERHEAD) as u64)
        .sum();
    eventually("the warm-up of every live row", || {
        db.stats().row_cache_bytes == live
    });
    let before = db.stats();
    for i in 0..2 * n {
        let want = (i != 7).then(|| format!("value{i}").into_bytes());
        assert_eq!(
            db.get(&key(i)).unwrap().map(|v| v.to_vec()),
            want,
            "key {i}"
        );
    }
    let after = db.stats();
    assert_eq!(
        after.row_cache_hits - before.row_cache_hits,
        u64::from(2 * n - 1)
    );
    // Only the deleted key missed.
    assert_eq!(after.row_cache_misses - before.row_cache_misses, 1);
}

#[test]
fn a_restart_warms_the_cache_from_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3_000u32;
    {
        let db = Db::open(dir.path(), options(0, 0)).unwrap();
        for i in 0..n {
            db.put(&key(i), b"v", WriteOptions::default()).unwrap();
        }
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options(8 << 20, 0)).unwrap();
    eventually("the warm-up after open", || {
        db.stats().row_cache_warmed_rows == u64::from(n)
    });
    assert_eq!(db.get(&key(1234)).unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.stats().row_cache_misses, 0);
}

#[test]
fn the_warm_up_fills_only_free_room() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(2 << 20, 0)).unwrap();
    for i in 0..20_000u32 {
        db.put(&key(i), &[b'x'; 100], WriteOptions::default())
            .unwrap();
    }
    eventually("a warm-up pass", || db.stats().row_cache_warmed_rows > 0);
    db.wait_for_background_work().unwrap();
    let s = db.stats();
    assert!(
        s.row_cache_bytes <= 2 << 20,
        "{} bytes held",
        s.row_cache_bytes
    );
    assert!(s.row_cache_warmed_rows < 20_000);
}

/// A push's new version sorts after the one it replaced, which fills the cache first: the
/// focus evicts the old rows and the next pass warms the new ones.
#[test]
fn a_focus_evicts_rows_outside_it_and_warms_rows_inside() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(2 << 20, 0)).unwrap();
    // About 10,000 rows fit; the new ones alone fill half, so no shard overflows.
    let n = 5_000u32;
    let old = |i: u32| format!("a{i:08}").into_bytes();
    let new = |i: u32| format!("b{i:08}").into_bytes();
    for i in 0..3 * n {
        db.put(&old(i), &[b'o'; 100], WriteOptions::default())
            .unwrap();
    }
    for i in 0..n {
        db.put(&new(i), &[b'n'; 100], WriteOptions::default())
            .unwrap();
    }
    // Full: the old rows, first in key order, took the room.
    eventually("a full cache", || {
        db.stats().row_cache_bytes + (2 << 20) / 32 >= 2 << 20
    });

    let evicted = db.focus_row_cache(vec![(b"b".to_vec(), b"c".to_vec())]);
    assert!(evicted > 0);
    // The same focus again is no change.
    assert_eq!(db.focus_row_cache(vec![(b"b".to_vec(), b"c".to_vec())]), 0);
    let every_new_row = u64::from(n) * (new(0).len() + 100 + ROW_OVERHEAD) as u64;
    // Nothing is read meanwhile, so every cached row is a warmed one.
    eventually("the warm-up of the focus", || {
        db.stats().row_cache_bytes == every_new_row
    });
    let before = db.stats();
    for i in 0..n {
        assert_eq!(db.get(&new(i)).unwrap().as_deref(), Some(&[b'n'; 100][..]));
    }
    for i in 0..10 {
        assert_eq!(db.get(&old(i)).unwrap().as_deref(), Some(&[b'o'; 100][..]));
    }
    let after = db.stats();
    assert_eq!(after.row_cache_hits - before.row_cache_hits, u64::from(n));
    assert_eq!(after.row_cache_misses - before.row_cache_misses, 10);
}

/// Passes read the focus in the order given, not in key order: the ranges first in the list
/// get the room.
#[test]
fn a_focus_is_warmed_in_the_order_given() {
    let dir = tempfile::tempdir().unwrap();
    // The "a" rows alone would fill the cache (about 10,000 fit); the "b" rows take half.
    let n = 5_000u32;
    let first = |i: u32| format!("a{i:08}").into_bytes();
    let wanted = |i: u32| format!("b{i:08}").into_bytes();
    {
        // Written without a row cache, so no pass runs before the focus is set.
        let db = Db::open(dir.path(), options(0, 0)).unwrap();
        for i in 0..3 * n {
            db.put(&first(i), &[b'a'; 100], WriteOptions::default())
                .unwrap();
        }
        for i in 0..n {
            db.put(&wanted(i), &[b'b'; 100], WriteOptions::default())
                .unwrap();
        }
        db.close().unwrap();
    }
    // The pass due at open waits for 300 ms of quiet; the focus comes first.
    let db = Db::open(dir.path(), options(2 << 20, 300)).unwrap();
    db.focus_row_cache(vec![
        (b"b".to_vec(), b"c".to_vec()),
        (b"a".to_vec(), b"b".to_vec()),
    ]);
    eventually("a full cache", || {
        db.stats().row_cache_bytes + (2 << 20) / 32 >= 2 << 20
    });
    let before = db.stats();
    for i in 0..n {
        assert_eq!(
            db.get(&wanted(i)).unwrap().as_deref(),
            Some(&[b'b'; 100][..])
        );
    }
    let after = db.stats();
    assert_eq!(after.row_cache_hits - before.row_cache_hits, u64::from(n));
}

#[test]
fn no_warm_up_when_it_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            row_cache_warm: false,
            ..options(8 << 20, 0)
        },
    )
    .unwrap();
    for i in 0..1_000u32 {
        db.put(&key(i), b"v", WriteOptions::default()).unwrap();
    }
    db.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(db.stats().row_cache_warmed_rows, 0);
    assert_eq!(db.stats().row_cache_bytes, 0);
}

/// With passes running all the time (no quiet period, and a new pass every 1/32 of the
/// cache in new data), every write is read back at once by its writer: a pass that cached a
/// value older than a published write would show here as the previous version.
#[test]
fn warmed_rows_are_never_stale_under_concurrent_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), options(4 << 20, 0)).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    // Each writer owns every third key: it writes them all at a new version, then reads them
    // back. Between the two, passes may warm any of them.
    let writers: Vec<_> = (0..3u32)
        .map(|t| {
            let db = Arc::clone(&db);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut version = 0u64;
                let value = |version: u64| format!("{version:010}-{}", "p".repeat(60));
                while !stop.load(Ordering::Relaxed) {
                    version += 1;
                    for i in (t..600).step_by(3) {
                        db.put(&key(i), value(version).as_bytes(), WriteOptions::default())
                            .unwrap();
                    }
                    for i in (t..600).step_by(3) {
                        let got = db.get(&key(i)).unwrap().expect("a written key");
                        assert_eq!(got, value(version).as_bytes(), "key {i}: a stale value");
                    }
                }
                version
            })
        })
        .collect();
    // A writer that met a stale value ends early: join it to report that.
    eventually("several warm-up passes", || {
        db.stats().row_cache_warmed_rows > 2_000 || writers.iter().any(|w| w.is_finished())
    });
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        assert!(w.join().unwrap() > 1);
    }
}

#[test]
fn no_pass_runs_while_reads_flow() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5_000u32;
    let db = Db::open(dir.path(), options(8 << 20, 50)).unwrap();
    for i in 0..n {
        db.put(&key(i), b"v", WriteOptions::default()).unwrap();
    }
    // Reads back to back (far more than 1,000 per 50 ms quiet period) for ten periods: no
    // pass starts.
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        for _ in 0..100 {
            assert_eq!(db.get(b"absent").unwrap(), None);
        }
    }
    assert_eq!(db.stats().row_cache_warmed_rows, 0);
    // Once reads pause too, the pass runs; a few reads meanwhile do not hold it back.
    eventually("the warm-up after reads paused", || {
        assert_eq!(db.get(b"absent").unwrap(), None);
        db.stats().row_cache_warmed_rows == u64::from(n)
    });
}
