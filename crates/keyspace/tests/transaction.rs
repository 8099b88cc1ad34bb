//! Transactions (EXEC) and watches (WATCH) on a keyspace: one merger transaction applies every
//! command, a failed command keeps the others' writes, and a change to a watched key — a write,
//! a flush, a store's catalog change — makes the transaction yield nothing.

mod common;

use bytes::Bytes;
use rialto_io::MemFs;
use rialto_keyspace::{Keyspace, Op, OpKind, Set, Value};

fn open(fs: &MemFs) -> Keyspace {
    let mut o = common::options(fs);
    o.engine.write_buffer_size = rialto_lsm::Options::default().write_buffer_size;
    o.merger = rialto_txn::MergerOptions::default();
    Keyspace::open(std::path::Path::new("/ks/db"), o).unwrap()
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn set(ks: &Keyspace, key: &str, value: &str) -> Op {
    Op::new(
        0,
        ks.now_ms(),
        OpKind::Set(Set {
            key: b(key),
            value: b(value),
            expire_at_ms: None,
            keep_ttl: false,
            cond: None,
            get: false,
        }),
    )
}

fn get(ks: &Keyspace, key: &str) -> Option<Bytes> {
    ks.read(0, ks.now_ms(), |k| k.get(key.as_bytes()).unwrap())
        .map(|r| r.value)
}

#[test]
fn a_failed_command_keeps_the_writes_of_the_others() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.execute(set(&ks, "text", "abc")).unwrap();
    let ops = [
        set(&ks, "a", "1"),
        Op::new(
            0,
            ks.now_ms(),
            OpKind::IncrBy {
                key: b("text"),
                delta: 1,
            },
        ),
        Op::new(
            0,
            ks.now_ms(),
            OpKind::IncrBy {
                key: b("a"),
                delta: 1,
            },
        ),
    ];
    let now = ks.now_ms();
    let got = ks
        .transaction(None, now, move |tx| {
            let tx = tx.expect("no watch, so it runs");
            let results: Vec<bool> = ops.iter().map(|op| tx.apply(op).is_ok()).collect();
            let seen = tx.read(0, |k| k.get(b"a").unwrap().map(|r| r.value));
            (results, seen)
        })
        .wait()
        .unwrap();
    assert_eq!(got, (vec![true, false, true], Some(b("2"))));
    assert_eq!(get(&ks, "a"), Some(b("2")));
    assert_eq!(get(&ks, "text"), Some(b("abc")));
    ks.close().unwrap();
}

#[test]
fn a_flush_inside_a_transaction_deletes_everything_in_one_step() {
    let fs = MemFs::new();
    let ks = open(&fs);
    for i in 0..25_000 {
        ks.execute(set(&ks, &format!("k{i}"), "v")).unwrap();
    }
    let flush = Op::new(
        0,
        ks.now_ms(),
        OpKind::FlushStep {
            all: false,
            limit: 10,
        },
    );
    let after = set(&ks, "after", "1");
    let now = ks.now_ms();
    let r = ks
        .transaction(None, now, move |tx| {
            let tx = tx.expect("no watch, so it runs");
            (tx.apply(&flush).unwrap(), tx.apply(&after).unwrap())
        })
        .wait()
        .unwrap();
    assert_eq!(r, (Value::Ok, Value::Ok));
    let mut left = 0;
    ks.walk_keys(0, None, ks.now_ms(), |_, _| {
        left += 1;
        true
    })
    .unwrap();
    assert_eq!(left, 1);
    ks.close().unwrap();
}

#[test]
fn a_watched_key_changed_after_the_watch_makes_the_transaction_yield_nothing() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.execute(set(&ks, "w", "1")).unwrap();
    // The transaction takes the watch and unwatches its keys once it has checked them.
    let run = |ks: &Keyspace, w: rialto_keyspace::Watch| {
        let op = set(ks, "w", "from-exec");
        ks.transaction(Some(w), ks.now_ms(), move |tx| {
            tx.map(|tx| tx.apply(&op).is_ok())
        })
        .wait()
        .unwrap()
    };
    let watched = |ks: &Keyspace| {
        let w = ks.new_watch();
        ks.watch(&w, 0, vec![b("w")]).wait().unwrap();
        w
    };
    // Untouched: runs.
    let w = watched(&ks);
    assert_eq!(run(&ks, w), Some(true));
    // The same value written again is a change.
    let w = watched(&ks);
    ks.execute(set(&ks, "w", "from-exec")).unwrap();
    assert!(w.is_dirty());
    assert_eq!(run(&ks, w), None);
    // A write to another database's `w` is no change.
    let w = watched(&ks);
    let mut other_db = set(&ks, "w", "x");
    other_db.db = 1;
    ks.execute(other_db).unwrap();
    assert_eq!(run(&ks, w), Some(true));
    // Unwatched by the transaction: a later write marks nothing.
    let w = watched(&ks);
    let keep = watched(&ks);
    assert_eq!(run(&ks, w), Some(true));
    assert!(
        keep.is_dirty(),
        "the transaction's own write marks the other watcher"
    );
    ks.close().unwrap();
}

#[test]
fn a_store_swap_or_rollback_changes_every_watched_key_under_its_prefix() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("feat", b"feat:", 0).unwrap();
    let push = |ks: &Keyspace, v: &str| {
        let id = ks.push_begin("feat", rialto_keyspace::DuplicatePolicy::Error, None, None);
        let id = id.unwrap();
        ks.push_add(id, None, [(&b"a"[..], v.as_bytes())]).unwrap();
        ks.push_commit(id, None).unwrap();
    };
    push(&ks, "1");
    let w = ks.new_watch();
    ks.watch(&w, 0, vec![b("feat:a")]).wait().unwrap();
    ks.execute(set(&ks, "elsewhere", "1")).unwrap();
    assert!(!w.is_dirty());
    push(&ks, "2");
    assert!(w.is_dirty(), "a swap replaces what feat:a reads");
    let w = ks.new_watch();
    ks.watch(&w, 0, vec![b("feat:a"), b("plain")])
        .wait()
        .unwrap();
    ks.rollback_store("feat", None).unwrap();
    assert!(w.is_dirty(), "so does a rollback");
    ks.close().unwrap();
}

/// A partition's flush in steps deletes exactly the keys of its slots, with their expiry
/// entries, and leaves every other key.
#[test]
fn a_slot_range_flush_in_small_steps_deletes_exactly_its_slots() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let (first, last) = (5461u16, 10921u16);
    let mut mine = Vec::new();
    let mut others = Vec::new();
    for i in 0..200 {
        let key = format!("k{i}");
        let mut op = set(&ks, &key, "v");
        if i % 3 == 0 {
            if let OpKind::Set(s) = &mut op.kind {
                s.expire_at_ms = Some(ks.now_ms() + 3_600_000);
            }
        }
        ks.execute(op).unwrap();
        let slot = rialto_keyspace::slot::key_slot(key.as_bytes());
        if (first..=last).contains(&slot) {
            mine.push(key);
        } else {
            others.push(key);
        }
    }
    assert!(!mine.is_empty() && !others.is_empty());
    let mut from = Bytes::new();
    let mut steps = 0;
    loop {
        let step = Op::new(
            0,
            ks.now_ms(),
            OpKind::FlushSlots {
                first,
                last,
                from: from.clone(),
                limit: 7,
            },
        );
        steps += 1;
        match ks.execute(step).unwrap() {
            Value::Bulk(next) => {
                assert!(next > from, "the cursor moves forward");
                from = next;
            }
            Value::Null => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        steps > 200 / 7,
        "every key and expiry entry examined in steps"
    );
    for k in &mine {
        assert_eq!(get(&ks, k), None, "{k}");
    }
    for k in &others {
        assert_eq!(get(&ks, k), Some(b("v")), "{k}");
    }
    // The deleted keys' expiry entries went with them: the expiry index holds only others'.
    let due = ks.due_expiries(0, i64::MAX, 1000).unwrap();
    assert!(!due.is_empty());
    for (_, _, key) in due {
        let slot = rialto_keyspace::slot::key_slot(&key);
        assert!(!(first..=last).contains(&slot));
    }
}
