// The merger's test cases, included by merger.rs (merger thread) and merger_inline.rs
// (inline execution); each defines `INLINE` first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{gated, key, mem, one_put, open};
use rialto_engine::{Error, KvEngine, PipelinedCommit, WriteBatch};
use rialto_io::{CrashMode, Fault, FaultOp, FaultPlan};
use rialto_lsm::Db;
use rialto_txn::{CommitHandle, Durability, MergerOptions, TxnContext};

/// Every case runs with groups executed on the merger thread and, in `merger_inline.rs`, on
/// the submitting threads.
fn merger(db: &Arc<Db>, opts: MergerOptions) -> rialto_txn::Merger<Db> {
    common::merger(
        db,
        MergerOptions {
            inline_execution: INLINE,
            ..opts
        },
    )
}

fn incr(tx: &mut TxnContext<'_, Db>, k: &[u8]) -> rialto_engine::Result<i64> {
    let n = match tx.get(k)? {
        Some(v) => std::str::from_utf8(&v)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| Error::InvalidArgument("value is not an integer".into()))?,
        None => 0,
    } + 1;
    tx.put(k, n.to_string().as_bytes());
    Ok(n)
}

#[test]
fn many_writers_are_acknowledged_exactly_once_in_submission_order() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = Arc::new(merger(&db, MergerOptions::default()));
    const THREADS: usize = 16;
    const PER_THREAD: usize = 300;
    let mut all: Vec<i64> = thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let m = Arc::clone(&m);
                s.spawn(move || {
                    // Pipelined: submit a window of transactions, then wait for them in order.
                    let mut got = Vec::new();
                    for chunk in 0..PER_THREAD / 10 {
                        let hs: Vec<CommitHandle<i64>> = (0..10)
                            .map(|i| {
                                let own = key(t * 100_000 + chunk * 10 + i);
                                m.submit(move |tx| {
                                    let n = incr(tx, b"counter")?;
                                    tx.put(&own, n.to_string().as_bytes());
                                    Ok(n)
                                })
                            })
                            .collect();
                        for h in hs {
                            got.push(h.wait().expect("acknowledged"));
                        }
                    }
                    assert!(
                        got.windows(2).all(|w| w[0] < w[1]),
                        "a writer's transactions run in its submission order"
                    );
                    got
                })
            })
            .collect();
        hs.into_iter()
            .flat_map(|h| h.join().expect("writer"))
            .collect()
    });
    all.sort_unstable();
    let n = (THREADS * PER_THREAD) as i64;
    assert_eq!(
        all,
        (1..=n).collect::<Vec<_>>(),
        "every increment exactly once"
    );
    assert_eq!(
        db.get(b"counter").unwrap().as_deref(),
        Some(n.to_string().as_bytes())
    );
    let st = m.stats();
    assert_eq!(st.txns, n as u64);
    assert!(st.groups <= st.txns && st.syncs <= st.groups, "{st}");
    // Every group logged is in exactly one size bucket.
    assert_eq!(st.group_sizes.iter().sum::<u64>(), st.groups, "{st}");
    m.close().unwrap();
}

#[test]
fn a_long_transaction_runs_off_the_submitting_threads_in_its_place_in_the_order() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(&db, MergerOptions::default());
    let release = Arc::new(AtomicBool::new(false));
    let me = thread::current().id();
    let long = {
        let release = Arc::clone(&release);
        m.enqueue_long(move |tx| {
            // A script that loops until told to stop.
            while !release.load(Ordering::Acquire) {
                thread::sleep(Duration::from_millis(1));
            }
            Ok((incr(tx, b"counter")?, thread::current().id()))
        })
    };
    // The submitting thread is never held up by the long transaction, even when it runs
    // what is queued; what it queued after it waits for it.
    let mut short = m.submit(|tx| incr(tx, b"counter"));
    m.run_queued();
    thread::sleep(Duration::from_millis(50));
    assert!(short.try_take().is_none(), "ran before the long transaction");
    release.store(true, Ordering::Release);
    let (n, ran_on) = long.wait().expect("acknowledged");
    assert_eq!(n, 1);
    assert_ne!(ran_on, me, "a long transaction never runs on a submitting thread");
    assert_eq!(short.wait().expect("acknowledged"), 2);
    m.close().unwrap();
}

#[test]
fn long_and_short_transactions_from_many_writers_keep_submission_order() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = Arc::new(merger(&db, MergerOptions::default()));
    const THREADS: usize = 6;
    const PER_THREAD: usize = 200;
    let mut all: Vec<i64> = thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let m = Arc::clone(&m);
                s.spawn(move || {
                    let mut got = Vec::new();
                    for chunk in 0..PER_THREAD / 10 {
                        let hs: Vec<CommitHandle<i64>> = (0..10)
                            .map(|i| {
                                let f = |tx: &mut TxnContext<'_, Db>| incr(tx, b"counter");
                                let h = if (t + chunk + i) % 3 == 0 {
                                    m.enqueue_long(f)
                                } else {
                                    m.enqueue(f)
                                };
                                m.run_queued();
                                h
                            })
                            .collect();
                        for h in hs {
                            got.push(h.wait().expect("acknowledged"));
                        }
                    }
                    assert!(got.windows(2).all(|w| w[0] < w[1]));
                    got
                })
            })
            .collect();
        hs.into_iter()
            .flat_map(|h| h.join().expect("writer"))
            .collect()
    });
    all.sort_unstable();
    let n = (THREADS * PER_THREAD) as i64;
    assert_eq!(all, (1..=n).collect::<Vec<_>>(), "every increment exactly once");
    m.close().unwrap();
}

#[test]
fn a_failed_transaction_drops_its_writes_and_others_do_not_see_them() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(&db, MergerOptions::default());
    let bad = m.submit(|tx| -> rialto_engine::Result<()> {
        tx.put(b"half", b"written");
        Err(Error::InvalidArgument("refused".into()))
    });
    let after = m.submit(|tx| tx.get(b"half"));
    assert!(matches!(bad.wait(), Err(Error::InvalidArgument(_))));
    assert_eq!(after.wait().unwrap(), None);
    assert_eq!(db.get(b"half").unwrap(), None);
    m.close().unwrap();
}

/// Regression: a script whose reply conversion panicked killed the thread that runs long
/// transactions, and every later write waited for it forever.
#[test]
fn a_transaction_that_panics_fails_alone_and_the_merger_goes_on() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(&db, MergerOptions::default());
    let bad = m.submit(|tx| -> rialto_engine::Result<()> {
        tx.put(b"half", b"written");
        panic!("a bug in the transaction's code");
    });
    let long = m.enqueue_long(|tx| -> rialto_engine::Result<()> {
        tx.put(b"half", b"written");
        panic!("a bug in a script");
    });
    let after = m.submit(|tx| {
        tx.put(b"after", b"1");
        tx.get(b"half")
    });
    let next_long = m.enqueue_long(|tx| tx.get(b"after"));
    assert!(matches!(bad.wait(), Err(Error::Aborted(m)) if m.contains("a bug")));
    assert!(matches!(long.wait(), Err(Error::Aborted(m)) if m.contains("a script")));
    assert_eq!(after.wait().unwrap(), None);
    assert_eq!(next_long.wait().unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"half").unwrap(), None);
    m.close().unwrap();
}

#[test]
fn rolling_back_to_a_savepoint_keeps_what_was_staged_before_it() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(&db, MergerOptions::default());
    let seen = m.submit(|tx| {
        tx.put(b"kept", b"1");
        let at = tx.savepoint();
        tx.put(b"dropped", b"2");
        tx.delete(b"kept");
        tx.rollback_to(at);
        Ok((tx.get(b"kept")?, tx.get(b"dropped")?))
    });
    let (kept, dropped) = seen.wait().unwrap();
    assert_eq!(kept.as_deref(), Some(&b"1"[..]));
    assert_eq!(dropped, None);
    assert_eq!(db.get(b"kept").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"dropped").unwrap(), None);
    m.close().unwrap();
}

#[test]
fn transactions_in_one_group_read_each_others_writes() {
    let (gate, db) = gated();
    let m = merger(&db, MergerOptions::default());
    gate.close();
    // The first write's sync is held, so the following ones queue up and run as one group.
    let first = m.submit(|tx| incr(tx, b"n"));
    gate.wait_for_held_sync();
    let rest: Vec<_> = (0..50).map(|_| m.submit(|tx| incr(tx, b"n"))).collect();
    gate.open();
    assert_eq!(first.wait().unwrap(), 1);
    let got: Vec<i64> = rest.into_iter().map(|h| h.wait().unwrap()).collect();
    assert_eq!(got, (2..=51).collect::<Vec<_>>());
    m.close().unwrap();
}

#[test]
fn reads_and_the_next_group_proceed_while_a_sync_is_stalled() {
    let (gate, db) = gated();
    let m = merger(&db, MergerOptions::default());
    m.write(one_put(b"durable", b"1")).wait().unwrap();

    gate.close();
    let mut first = m.submit(|tx| incr(tx, b"n"));
    gate.wait_for_held_sync();
    // Batch N's sync is held. Batch N+1 executes meanwhile, building on N's write.
    let ran = Arc::new(AtomicBool::new(false));
    let ran2 = Arc::clone(&ran);
    let mut second = m.submit(move |tx| {
        ran2.store(true, Ordering::SeqCst);
        incr(tx, b"n")
    });
    while !ran.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(1));
    }
    assert!(first.try_take().is_none() && second.try_take().is_none());
    // Readers are not blocked, and see durable data only.
    let reader = {
        let db = Arc::clone(&db);
        thread::spawn(move || (db.get(b"durable").unwrap(), db.get(b"n").unwrap()))
    };
    let (durable, n) = reader.join().unwrap();
    assert_eq!(durable.as_deref(), Some(&b"1"[..]));
    assert_eq!(n, None, "a write whose sync is in flight is not visible");
    assert!(first.try_take().is_none(), "the sync is still held");
    gate.open();
    assert_eq!(first.wait().unwrap(), 1);
    assert_eq!(second.wait().unwrap(), 2);
    assert_eq!(db.get(b"n").unwrap().as_deref(), Some(&b"2"[..]));
    m.close().unwrap();
}

/// Writes `count` keys through the merger, pipelined `window` at a time; returns for each
/// key whether it was acknowledged. Stops submitting after the first failure.
fn write_until_failure(m: &rialto_txn::Merger<Db>, count: usize, window: usize) -> Vec<bool> {
    let mut acked = Vec::new();
    let mut i = 0;
    while i < count {
        let hs: Vec<_> = (i..(i + window).min(count))
            .map(|k| {
                let kk = key(k);
                m.submit(move |tx| {
                    tx.put(&kk, b"v");
                    Ok(())
                })
            })
            .collect();
        i += hs.len();
        for h in hs {
            acked.push(h.wait().is_ok());
        }
    }
    acked
}

#[test]
fn a_failed_sync_fails_its_group_and_everything_after_and_reopen_recovers_exactly_the_acknowledged()
{
    for nth in [1u64, 2, 3, 5, 8, 13] {
        let (fs, dynfs) = mem();
        let db = open(Arc::clone(&dynfs));
        let m = merger(&db, MergerOptions::default());
        fs.add_fault(
            FaultPlan::new(FaultOp::Sync, nth, Fault::Eio)
                .persistent()
                .only_paths_containing(".log"),
        );
        let acked = write_until_failure(&m, 400, 16);
        let first_failure = acked.iter().position(|a| !a).expect("a sync failed");
        assert!(
            acked[first_failure..].iter().all(|a| !a),
            "nth={nth}: nothing after the failure is acknowledged"
        );
        // The engine is read-only with the reason, and readers never saw the failed writes.
        assert!(db.stats().read_only_reason.is_some());
        for (k, _) in acked.iter().enumerate().filter(|(_, a)| !**a) {
            assert_eq!(
                db.get(&key(k)).unwrap(),
                None,
                "nth={nth}: unacked key {k} visible"
            );
        }
        assert!(
            m.write(one_put(b"late", b"x")).wait().is_err(),
            "writes after the failure fail"
        );
        let _ = m.close();
        drop(m);
        drop(db);
        fs.clear_faults();
        fs.crash(CrashMode::DropUnsynced);
        let db = open(dynfs);
        for (k, a) in acked.iter().enumerate() {
            let got = db.get(&key(k)).unwrap();
            assert_eq!(got.is_some(), *a, "nth={nth} key {k}: acknowledged={a}");
        }
        assert_eq!(db.get(b"late").unwrap(), None);
    }
}

/// Every write to the log fails in turn, once: the appends of a group (buffered until its
/// sync with `Durability::Always`) and the hand-off of the buffer before each sync alike. A
/// single transient error is never retried past: the group that met it and everything after
/// fail, and reopening after a crash recovers exactly the acknowledged writes.
#[test]
fn a_failed_log_write_anywhere_fails_from_there_on_and_reopen_recovers_exactly_the_acknowledged()
{
    for nth in 1u64..=16 {
        let (fs, dynfs) = mem();
        let db = open(Arc::clone(&dynfs));
        let m = merger(&db, MergerOptions::default());
        fs.add_fault(FaultPlan::new(FaultOp::Write, nth, Fault::Eio).only_paths_containing(".log"));
        let acked = write_until_failure(&m, 200, 8);
        assert_eq!(fs.faults_fired(), 1, "nth={nth}");
        let first_failure = acked.iter().position(|a| !a).expect("a write failed");
        assert!(
            acked[first_failure..].iter().all(|a| !a),
            "nth={nth}: nothing after the failure is acknowledged"
        );
        assert!(db.stats().read_only_reason.is_some());
        let _ = m.close();
        drop(m);
        drop(db);
        fs.crash(CrashMode::DropUnsynced);
        let db = open(dynfs);
        for (k, a) in acked.iter().enumerate() {
            let got = db.get(&key(k)).unwrap();
            assert_eq!(got.is_some(), *a, "nth={nth} key {k}: acknowledged={a}");
        }
    }
}

#[test]
fn a_failed_log_write_fails_the_group_and_everything_after() {
    let (fs, dynfs) = mem();
    let db = open(Arc::clone(&dynfs));
    let m = merger(&db, MergerOptions::default());
    for k in 0..20 {
        let kk = key(k);
        m.submit(move |tx| {
            tx.put(&kk, b"v");
            Ok(())
        })
        .wait()
        .unwrap();
    }
    fs.add_fault(
        FaultPlan::new(FaultOp::Write, 1, Fault::NoSpace)
            .persistent()
            .only_paths_containing(".log"),
    );
    let acked = write_until_failure(&m, 50, 4);
    assert!(acked.iter().all(|a| !a));
    assert!(db.stats().read_only_reason.is_some());
    drop(m);
    drop(db);
    fs.clear_faults();
    fs.crash(CrashMode::DropUnsynced);
    let db = open(dynfs);
    for k in 0..20 {
        assert!(db.get(&key(k)).unwrap().is_some());
    }
    for k in 0..50 {
        // Keys 0..20 were rewritten by the failed writes with the same value; the rest never
        // existed.
        if k >= 20 {
            assert_eq!(db.get(&key(k)).unwrap(), None);
        }
    }
}

#[test]
fn acknowledged_writes_survive_a_crash_in_every_durability_mode_after_close() {
    for durability in [Durability::Always, Durability::EverySec, Durability::Never] {
        let (fs, dynfs) = mem();
        let db = open(Arc::clone(&dynfs));
        let m = merger(
            &db,
            MergerOptions {
                durability,
                ..MergerOptions::default()
            },
        );
        let acked = write_until_failure(&m, 300, 8);
        assert!(acked.iter().all(|a| *a));
        m.close().unwrap();
        drop(m);
        drop(db);
        fs.crash(CrashMode::DropUnsynced);
        let db = open(dynfs);
        for k in 0..300 {
            assert!(db.get(&key(k)).unwrap().is_some(), "{durability:?} key {k}");
        }
    }
}

#[test]
fn without_sync_a_crash_keeps_a_prefix_of_the_acknowledged_writes() {
    let crashes = [
        CrashMode::DropUnsynced,
        CrashMode::RandomTail { seed: 7 },
        CrashMode::Scattered { seed: 7 },
        CrashMode::Scattered { seed: 8 },
    ];
    for durability in [Durability::EverySec, Durability::Never] {
        for crash in crashes {
            let (fs, dynfs) = mem();
            let db = open(Arc::clone(&dynfs));
            let m = merger(
                &db,
                MergerOptions {
                    durability,
                    sync_interval: Duration::from_millis(5),
                    ..MergerOptions::default()
                },
            );
            // Acknowledged and visible at once, before any sync.
            for k in 0..2000 {
                let kk = key(k);
                m.submit(move |tx| {
                    tx.put(&kk, b"v");
                    Ok(())
                })
                .wait()
                .unwrap();
                assert!(db.get(&key(k)).unwrap().is_some());
            }
            // Crash without close: whatever survives is a prefix of the history, whatever
            // the unsynced bytes became.
            fs.crash(crash);
            drop(m);
            drop(db);
            let db = open(dynfs);
            let present: Vec<bool> = (0..2000)
                .map(|k| db.get(&key(k)).unwrap().is_some())
                .collect();
            let n = present.iter().take_while(|p| **p).count();
            assert!(
                present[n..].iter().all(|p| !p),
                "{durability:?} {crash:?}: survivors are a prefix (first {n})"
            );
        }
    }
}

/// A power loss while writers keep the pipelined commit busy (a group logged while the one
/// before it syncs, over a device whose syncs take time) can tear the unsynced writes in any
/// way: any subset of their sectors on disk. The database must reopen every time, with every
/// acknowledged write. Before durable marks, a hole in the last unsynced write followed by an
/// intact record was taken for corruption and the open failed.
#[test]
fn a_power_loss_tearing_unsynced_writes_anywhere_reopens_with_every_acknowledged_write() {
    const THREADS: usize = 6;
    for seed in 0..24u64 {
        let (fs, dynfs) = mem();
        fs.set_device(Some(rialto_io::DeviceModel {
            bandwidth: 200 << 20,
            sync_latency: Duration::from_micros(200),
            dirty_limit: 64 << 20,
        }));
        let db = open(Arc::clone(&dynfs));
        let m = merger(&db, MergerOptions::default());
        let acked: Vec<Vec<usize>> = thread::scope(|s| {
            let writers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let m = &m;
                    s.spawn(move || {
                        let mut acked = Vec::new();
                        for i in 0.. {
                            let k = t * 1_000_000 + i;
                            let kk = key(k);
                            let value = vec![b'a' + (k % 26) as u8; 40 + (k * 37) % 400];
                            let r = m
                                .submit(move |tx| {
                                    tx.put(&kk, &value);
                                    Ok(())
                                })
                                .wait();
                            if r.is_err() {
                                break;
                            }
                            acked.push(k);
                        }
                        acked
                    })
                })
                .collect();
            thread::sleep(Duration::from_millis(10 + seed % 7 * 5));
            fs.crash(CrashMode::Scattered { seed });
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let _ = m.close();
        drop(m);
        drop(db);
        // Whatever the dying process did after the power loss is not on the disk either.
        fs.crash(CrashMode::DropUnsynced);
        fs.set_device(None);
        let db = Db::open(common::DIR, common::lsm_options(Arc::clone(&dynfs)))
            .unwrap_or_else(|e| panic!("seed {seed}: the reopen after a power loss failed: {e}"));
        let total: usize = acked.iter().map(Vec::len).sum();
        assert!(total > 0, "seed {seed}: writes were acknowledged before the crash");
        for &k in acked.iter().flatten() {
            let v = db.get(&key(k)).unwrap();
            assert_eq!(
                v.as_deref(),
                Some(&vec![b'a' + (k % 26) as u8; 40 + (k * 37) % 400][..]),
                "seed {seed}: acknowledged key {k}"
            );
        }
    }
}

/// A transaction that walks a range sees the engine's applied state, the writes of earlier
/// transactions of its group (not yet applied) and its own, deletions included.
#[test]
fn first_keys_sees_applied_group_and_own_writes() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(
        &db,
        MergerOptions {
            inline_execution: true,
            ..MergerOptions::default()
        },
    );
    for k in [b"k1", b"k3", b"k5", b"z9"] {
        m.write(one_put(k, b"v")).wait().unwrap();
    }
    // Queued together, so they run in one group.
    let a = m.enqueue(|tx| {
        tx.put(b"k2", b"v");
        tx.delete(b"k3");
        Ok(())
    });
    let b = m.enqueue(|tx| {
        tx.put(b"k4", b"v");
        tx.delete(b"k5");
        let all = tx.first_keys(b"k", b"l", 100)?;
        let two = tx.first_keys(b"k", b"l", 2)?;
        Ok((all, two))
    });
    m.run_queued();
    a.wait().unwrap();
    let (all, two) = b.wait().unwrap();
    let names = |v: Vec<Vec<u8>>| v.into_iter().map(|k| String::from_utf8(k).unwrap()).collect::<Vec<_>>();
    assert_eq!(names(all), ["k1", "k2", "k4"]);
    assert_eq!(names(two), ["k1", "k2"]);
}

/// Range reads after writes staged since the group's first range read, and after a
/// transaction's writes were cut, see exactly the writes that stand.
#[test]
fn range_reads_follow_writes_made_after_them_and_writes_cut() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(
        &db,
        MergerOptions {
            inline_execution: true,
            ..MergerOptions::default()
        },
    );
    m.write(one_put(b"k1", b"v")).wait().unwrap();
    let a = m.enqueue(|tx| {
        let first = tx.first_keys(b"k", b"l", 100)?;
        tx.put(b"k2", b"v");
        tx.delete(b"k1");
        let second = tx.first_keys(b"k", b"l", 100)?;
        Ok((first, second))
    });
    // Fails: its writes are cut from the group.
    let b = m.enqueue(|tx| {
        tx.put(b"k0", b"v");
        tx.first_keys(b"k", b"l", 100)?;
        Err::<(), _>(rialto_engine::Error::InvalidArgument("no".into()))
    });
    let c = m.enqueue(|tx| {
        let before = tx.first_keys(b"k", b"l", 100)?;
        let sp = tx.savepoint();
        tx.put(b"k3", b"v");
        tx.rollback_to(sp);
        tx.put(b"k4", b"v");
        let after = tx.last_entries(b"k", b"l", 100)?;
        Ok((before, after.into_iter().map(|(k, _)| k).collect::<Vec<_>>()))
    });
    m.run_queued();
    let names = |v: Vec<Vec<u8>>| v.into_iter().map(|k| String::from_utf8(k).unwrap()).collect::<Vec<_>>();
    let (first, second) = a.wait().unwrap();
    assert_eq!(names(first), ["k1"]);
    assert_eq!(names(second), ["k2"]);
    assert!(b.wait().is_err());
    let (before, after) = c.wait().unwrap();
    assert_eq!(names(before), ["k2"]);
    assert_eq!(names(after), ["k4", "k2"]);
}

/// The reverse walk sees the same state as the forward one, from the other end.
#[test]
fn last_entries_sees_applied_group_and_own_writes() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(
        &db,
        MergerOptions {
            inline_execution: true,
            ..MergerOptions::default()
        },
    );
    for k in [b"a0", b"k1", b"k3", b"k5", b"z9"] {
        m.write(one_put(k, b"v")).wait().unwrap();
    }
    let a = m.enqueue(|tx| {
        tx.put(b"k2", b"v");
        tx.delete(b"k3");
        Ok(())
    });
    let b = m.enqueue(|tx| {
        tx.put(b"k4", b"w");
        tx.delete(b"k5");
        let all = tx.last_entries(b"k", b"l", 100)?;
        let two = tx.last_entries(b"k", b"l", 2)?;
        Ok((all, two))
    });
    m.run_queued();
    a.wait().unwrap();
    let (all, two) = b.wait().unwrap();
    let names = |v: Vec<(Vec<u8>, rialto_engine::Bytes)>| {
        v.into_iter()
            .map(|(k, _)| String::from_utf8(k).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(all), ["k4", "k2", "k1"]);
    assert_eq!(names(two), ["k4", "k2"]);
}

#[test]
fn groups_respect_the_size_bound() {
    let (gate, db) = gated();
    let m = merger(
        &db,
        MergerOptions {
            max_group_bytes: 4096,
            ..MergerOptions::default()
        },
    );
    gate.close();
    let first = m.write(one_put(b"a", b"b"));
    gate.wait_for_held_sync();
    let groups_before = m.stats().groups;
    // From another thread: with inline execution the submitter itself may wait for the held
    // sync (a memtable switch syncs the journal).
    thread::scope(|s| {
        let writer = s.spawn(|| {
            (0..64)
                .map(|i| m.write(one_put(&key(i), &[7u8; 1000])))
                .collect::<Vec<_>>()
        });
        thread::sleep(Duration::from_millis(50));
        gate.open();
        first.wait().unwrap();
        for h in writer.join().unwrap() {
            h.wait().unwrap();
        }
    });
    let groups = m.stats().groups - groups_before;
    // A group closes once it holds 4 KiB, so each holds at most 4 KiB + one 1 KB batch.
    assert!(
        groups >= 64 * 1000 / (4096 + 1100),
        "64 KB in groups of at most ~5 KB: {groups} groups"
    );
    m.close().unwrap();
}

#[test]
fn submitting_after_close_fails_cleanly() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(&db, MergerOptions::default());
    m.close().unwrap();
    assert!(matches!(
        m.write(WriteBatch::new()).wait(),
        Err(Error::Closed)
    ));
}

#[test]
fn handles_are_futures() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(&db, MergerOptions::default());
    let h = m.submit(|tx| incr(tx, b"k"));
    // A minimal executor: poll with a waker that unparks this thread.
    let n = block_on(h).unwrap();
    assert_eq!(n, 1);
    m.close().unwrap();
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

#[test]
fn published_point_never_passes_the_durable_point() {
    let (gate, db) = gated();
    let m = merger(&db, MergerOptions::default());
    gate.close();
    let h = m.write(one_put(b"x", b"y"));
    gate.wait_for_held_sync();
    assert!(db.applied_point() > db.published_point());
    gate.open();
    h.wait().unwrap();
    assert_eq!(db.applied_point(), db.published_point());
    m.close().unwrap();
}

#[test]
fn queued_transactions_run_as_one_group_at_run_queued() {
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = merger(&db, MergerOptions::default());
    let before = m.stats().groups;
    let hs: Vec<_> = (0..10).map(|i| m.enqueue(move |tx| {
        tx.put(&key(i), b"v");
        Ok(i)
    })).collect();
    m.run_queued();
    for (i, h) in hs.into_iter().enumerate() {
        assert_eq!(h.wait().unwrap(), i);
    }
    if INLINE {
        // Queued, then executed together: one journal write.
        assert_eq!(m.stats().groups - before, 1);
    }
    assert_eq!(db.get(&key(9)).unwrap().as_deref(), Some(&b"v"[..]));
    m.close().unwrap();
}

#[test]
fn blocked_waiters_sync_for_themselves_and_async_waiters_are_never_stranded() {
    // Threads blocked in `wait` (or `write_and_wait`) take the syncer's role; tasks awaiting a
    // handle cannot. When
    // the last blocked waiter leaves with groups in flight, the syncer thread must take over,
    // or an awaited handle would never resolve.
    let (_fs, dynfs) = mem();
    let db = open(dynfs);
    let m = Arc::new(merger(&db, MergerOptions::default()));
    let (tx, rx) = std::sync::mpsc::channel();
    for t in 0..6usize {
        let (m, tx) = (Arc::clone(&m), tx.clone());
        thread::spawn(move || {
            for i in 0..300usize {
                let b = one_put(&key(t * 1000 + i), b"v");
                // Blocking threads alternate `wait` with `write_and_wait` (helping from
                // before the group is logged).
                let r = match (t % 2, i % 2) {
                    (0, 0) => m.write(b).wait(),
                    (0, _) => m.write_and_wait(b),
                    _ => block_on(m.write(b)),
                };
                r.expect("acknowledged");
                // Now and then the blocking threads go idle, leaving the async ones alone.
                if t % 2 == 0 && i % 50 == 49 {
                    thread::sleep(Duration::from_millis(2));
                }
            }
            tx.send(t).unwrap();
        });
    }
    drop(tx);
    for _ in 0..6 {
        rx.recv_timeout(Duration::from_secs(120))
            .expect("a writer is stuck: a logged group was never synced");
    }
    assert!(m.stats().syncs > 0);
    for t in 0..6usize {
        for i in [0, 299] {
            assert_eq!(db.get(&key(t * 1000 + i)).unwrap().as_deref(), Some(&b"v"[..]));
        }
    }
    m.close().unwrap();
}

#[test]
fn a_group_logged_while_a_blocked_waiter_syncs_is_synced_after_it_leaves() {
    let (gate, db) = gated();
    let m = Arc::new(merger(
        &db,
        MergerOptions {
            max_wait: Duration::ZERO,
            ..MergerOptions::default()
        },
    ));
    m.write(one_put(b"warm", b"1")).wait().unwrap();
    gate.close();
    // A thread blocked in `wait` holds the syncer's role; its sync is held at the gate.
    let waiter = {
        let m = Arc::clone(&m);
        thread::spawn(move || m.write(one_put(b"a", b"1")).wait())
    };
    gate.wait_for_held_sync();
    // Logged while that sync is held, so not covered by it, and only awaited: no thread
    // will wait on it, so the syncer thread must take it once the waiter leaves.
    let ran = Arc::new(AtomicBool::new(false));
    let ran2 = Arc::clone(&ran);
    let late = m.submit(move |tx| {
        ran2.store(true, Ordering::SeqCst);
        tx.put(b"b", b"1");
        Ok(())
    });
    while !ran.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(1));
    }
    thread::sleep(Duration::from_millis(20));
    gate.open();
    waiter.join().unwrap().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || tx.send(block_on(late)));
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the late group was never synced")
        .unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"1"[..]));
    m.close().unwrap();
}

#[test]
fn sleeping_blocked_writers_are_each_woken_and_no_group_is_stranded() {
    // Blocked waiters park, and a holder giving up the syncer's role wakes only one of them:
    // the one it wakes may already have its outcome and must pass the turn on. With polling
    // off everywhere every wait parks, so each hand-over goes through that path; with the
    // defaults waiters poll first. A stuck writer shows as a timeout, never as a slow pass.
    for (spin, wait_spin) in [(Duration::ZERO, Duration::ZERO), (Duration::from_micros(50), Duration::from_micros(300))] {
        let (_fs, dynfs) = mem();
        let db = open(dynfs);
        let m = Arc::new(merger(
            &db,
            MergerOptions {
                spin,
                wait_spin,
                ..MergerOptions::default()
            },
        ));
        const THREADS: usize = 12;
        let (tx, rx) = std::sync::mpsc::channel();
        for t in 0..THREADS {
            let (m, tx) = (Arc::clone(&m), tx.clone());
            thread::spawn(move || {
                for i in 0..200usize {
                    let b = one_put(&key(t * 1000 + i), b"v");
                    let r = if i % 3 == 0 {
                        m.write(b).wait()
                    } else {
                        m.write_and_wait(b)
                    };
                    r.expect("acknowledged");
                    if i % 40 == 39 {
                        thread::sleep(Duration::from_millis(1));
                    }
                }
                tx.send(t).unwrap();
            });
        }
        drop(tx);
        for _ in 0..THREADS {
            rx.recv_timeout(Duration::from_secs(120))
                .expect("a blocked writer was never woken: a logged group was stranded");
        }
        for t in 0..THREADS {
            assert_eq!(db.get(&key(t * 1000 + 199)).unwrap().as_deref(), Some(&b"v"[..]));
        }
        assert_eq!(m.stats().txns, (THREADS * 200) as u64);
        m.close().unwrap();
    }
}
