//! Persistence: everything acknowledged before the engine is dropped is there after reopen.

use std::path::Path;

use super::{
    assert_view, compact, delete, flush, open, pattern, put, reopen, write, EngineFactory, Expected,
};
use crate::{KvEngine, WriteBatch};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A value whose size varies with `i` (0 bytes to ~4 KiB), tagged with `round`.
fn value(i: u32, round: u32) -> Vec<u8> {
    let len = [0usize, 1, 10, 100, 1000, 4000][(i % 6) as usize];
    pattern(u64::from(i) << 8 | u64::from(round), len)
}

/// One round of mixed writes over keys `[from, to)`: puts, overwrites of every third key
/// written before, deletes of every fifth, and a batch.
fn churn<E: KvEngine>(e: &E, x: &mut Expected, from: u32, to: u32, round: u32) {
    for i in from..to {
        put(e, &key(i), &value(i, round));
        x.put(&key(i), &value(i, round));
    }
    for i in (0..to).step_by(3) {
        put(e, &key(i), &value(i, round + 100));
        x.put(&key(i), &value(i, round + 100));
    }
    for i in (0..to).step_by(5) {
        delete(e, &key(i));
        x.delete(&key(i));
    }
    let mut b = WriteBatch::new();
    for i in (from..to).step_by(7) {
        b.put(&key(i), &value(i, round + 200));
        x.put(&key(i), &value(i, round + 200));
        b.delete(&key(i + 1));
        x.delete(&key(i + 1));
    }
    write(e, b);
}

/// Writes that were never flushed (only in the log) survive reopen, also a second generation
/// written after a recovery, and a reopen without any write in between.
pub fn check_reopen_without_flush<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    churn(&e, &mut x, 0, 200, 1);
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after reopen without flush");
    churn(&e, &mut x, 150, 300, 2);
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after writing again and reopening");
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after a reopen without writes");
}

/// Flushed writes survive reopen, also when newer unflushed writes (overwrites and deletes of
/// flushed keys) sit on top of them.
pub fn check_reopen_after_flush<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    churn(&e, &mut x, 0, 200, 1);
    flush(&e);
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after flush and reopen");
    churn(&e, &mut x, 100, 300, 2);
    flush(&e);
    churn(&e, &mut x, 250, 350, 3);
    let e = reopen(f, dir, e);
    assert_view(
        &e,
        None,
        &x,
        "after reopen with flushed and unflushed writes",
    );
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after a second reopen");
}

/// Compaction keeps every live key and keeps deleted keys deleted, across reopen: overlapping
/// rounds in several flushed tables, a partial then a full compaction, and a tombstone whose
/// older value was already compacted further down (dropping such a tombstone too early
/// resurrects the value).
pub fn check_reopen_after_compaction<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    for round in 0..4 {
        churn(&e, &mut x, round * 80, round * 80 + 160, round);
        flush(&e);
    }
    compact(&e, Some(&key(100)), Some(&key(250)));
    assert_view(&e, None, &x, "after a partial compaction");
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after a partial compaction and reopen");

    put(&e, b"tomb", b"buried");
    flush(&e);
    compact(&e, None, None);
    delete(&e, b"tomb");
    x.delete(b"tomb");
    flush(&e);
    compact(&e, Some(b"tomb"), Some(b"tomb"));
    assert_view(
        &e,
        None,
        &x,
        "after compacting a tombstone over a compacted value",
    );
    let e = reopen(f, dir, e);
    assert_view(
        &e,
        None,
        &x,
        "tombstone over a compacted value, after reopen",
    );

    compact(&e, None, None);
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after a full compaction and reopen");

    churn(&e, &mut x, 300, 400, 9);
    compact(&e, None, None);
    churn(&e, &mut x, 350, 450, 10);
    let e = reopen(f, dir, e);
    assert_view(
        &e,
        None,
        &x,
        "after unflushed writes over compacted data, reopened",
    );
}
