//! Point operations, key encoding edge cases and batches.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{
    assert_entries, assert_get, assert_status_ok, assert_value, assert_view, collect_forward,
    compact, delete, flush, get_at, iter, join_all, open, put, reopen, show, write, EngineFactory,
    Expected, SetOnDrop,
};
use crate::{EngineIterator, KvEngine, WriteBatch, WriteOptions};

/// A fresh engine holds nothing: every read misses, every seek leaves the iterator invalid,
/// and flush/compaction/reopen of an empty engine succeed and keep it empty.
pub fn check_empty_engine<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let assert_empty = |e: &F::Engine, ctx: &str| {
        for k in [&b""[..], b"a", b"\x00", b"\xff\xff"] {
            assert_get(e, k, None, format_args!("{ctx}: empty engine"));
        }
        let snap = e.snapshot();
        assert_value(
            get_at(e, &snap, b"a").as_deref(),
            None,
            format_args!("{ctx}: get_at on an empty engine"),
        );
        for (lower, upper) in [
            (None, None),
            (Some(&b"a"[..]), Some(&b"z"[..])),
            (Some(b""), None),
        ] {
            for snap in [None, Some(&snap)] {
                let mut it = iter(e, lower, upper, snap);
                assert!(
                    !it.valid(),
                    "{ctx}: a fresh iterator must not be positioned"
                );
                it.seek_to_first();
                assert!(
                    !it.valid(),
                    "{ctx}: seek_to_first on an empty engine is valid"
                );
                it.seek_to_last();
                assert!(
                    !it.valid(),
                    "{ctx}: seek_to_last on an empty engine is valid"
                );
                it.seek(b"");
                assert!(!it.valid(), "{ctx}: seek(\"\") on an empty engine is valid");
                it.seek(b"m");
                assert!(!it.valid(), "{ctx}: seek on an empty engine is valid");
                it.seek_for_prev(b"\xff\xff\xff");
                assert!(
                    !it.valid(),
                    "{ctx}: seek_for_prev on an empty engine is valid"
                );
                assert_status_ok(&it, ctx);
            }
        }
    };
    assert_empty(&e, "fresh engine");
    flush(&e);
    compact(&e, None, None);
    assert_empty(&e, "after flush and compact_range");
    let e = reopen(f, dir, e);
    assert_empty(&e, "after reopen");
}

/// Puts are read back, an overwrite replaces the value (longer or shorter), a delete hides the
/// key without touching its neighbours, and a put after a delete brings the key back. Writes
/// with `sync` behave the same.
pub fn check_put_get_overwrite_delete<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();

    put(&e, b"a", b"1");
    x.put(b"a", b"1");
    assert_get(&e, b"a", Some(&b"1"[..]), "get after put");
    put(&e, b"b", b"2");
    x.put(b"b", b"2");
    put(&e, b"a", b"11");
    x.put(b"a", b"11");
    assert_get(&e, b"a", Some(&b"11"[..]), "get after overwrite");
    delete(&e, b"a");
    x.delete(b"a");
    assert_get(&e, b"a", None, "get after delete");
    assert_get(&e, b"b", Some(&b"2"[..]), "a delete touched its neighbour");
    put(&e, b"a", b"111");
    x.put(b"a", b"111");
    assert_get(&e, b"a", Some(&b"111"[..]), "put after delete");
    assert_view(&e, None, &x, "after put/overwrite/delete");

    e.put(b"c", b"3", WriteOptions::SYNC)
        .expect("put with WriteOptions::SYNC failed");
    x.put(b"c", b"3");
    e.delete(b"b", WriteOptions::SYNC)
        .expect("delete with WriteOptions::SYNC failed");
    x.delete(b"b");
    assert_view(&e, None, &x, "after sync writes");

    // Overwrites that grow and shrink the value: catches in-place updates and length bugs.
    let long = super::pattern(1, 1000);
    put(&e, b"c", &long);
    x.put(b"c", &long);
    assert_view(&e, None, &x, "after growing a value");
    put(&e, b"c", b"s");
    x.put(b"c", b"s");
    assert_view(&e, None, &x, "after shrinking a value");

    // The same history once more with the older versions flushed.
    flush(&e);
    put(&e, b"a", b"memtable");
    x.put(b"a", b"memtable");
    delete(&e, b"c");
    x.delete(b"c");
    assert_view(&e, None, &x, "after overwriting and deleting flushed keys");
}

/// Deleting a key that does not exist succeeds and changes nothing, before, between and after
/// existing keys, twice in a row, in a batch, and after flush and reopen.
pub fn check_delete_missing_key<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    delete(&e, b"nope");
    x.delete(b"nope");
    assert_view(
        &e,
        None,
        &x,
        "after deleting a missing key in an empty engine",
    );

    for k in [&b"a"[..], b"c"] {
        put(&e, k, k);
        x.put(k, k);
    }
    for k in [&b""[..], b"b", b"z", b"a\x00", b"c\x00"] {
        delete(&e, k);
        x.delete(k);
    }
    assert_view(
        &e,
        None,
        &x,
        "after deleting missing keys around existing ones",
    );

    delete(&e, b"a");
    delete(&e, b"a");
    x.delete(b"a");
    assert_view(&e, None, &x, "after deleting a key twice");

    let mut b = WriteBatch::new();
    b.delete(b"missing-in-batch");
    b.put(b"d", b"d");
    write(&e, b);
    x.delete(b"missing-in-batch");
    x.put(b"d", b"d");
    assert_view(&e, None, &x, "after a batch deleting a missing key");

    flush(&e);
    delete(&e, b"e");
    x.delete(b"e");
    assert_view(&e, None, &x, "after deleting a missing key past a flush");
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after reopen");
}

/// The empty key and the empty value are ordinary: the empty key sorts first and seeks find
/// it; an empty value reads back as `Some(empty)`, never as a missing key; both survive flush
/// and reopen (on-disk formats often confuse "empty" with "absent").
pub fn check_empty_key_and_value<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    put(&e, b"", b"empty-key");
    x.put(b"", b"empty-key");
    assert_get(&e, b"", Some(b"empty-key"), "the empty key");
    put(&e, b"k", b"");
    x.put(b"k", b"");
    assert_get(
        &e,
        b"k",
        Some(b""),
        "a key holding the empty value must read as Some(\"\"), not None",
    );
    put(&e, b"\x00", b"");
    x.put(b"\x00", b"");

    let check_seeks = |e: &F::Engine, ctx: &str| {
        let mut it = iter(e, None, None, None);
        it.seek(b"");
        assert!(
            it.valid() && it.key().is_empty(),
            "{ctx}: seek(\"\") must find the empty key"
        );
        it.seek_for_prev(b"");
        assert!(
            it.valid() && it.key().is_empty(),
            "{ctx}: seek_for_prev(\"\") must find the empty key"
        );
        it.seek_to_first();
        assert!(
            it.valid() && it.key().is_empty(),
            "{ctx}: the empty key must sort first"
        );
        let mut it = iter(e, Some(b""), Some(b"\x00"), None);
        assert_entries(
            &collect_forward(&mut it),
            &x_range(e, Some(b""), Some(b"\x00")),
            &format!("{ctx}: scan of [\"\", \"\\x00\")"),
        );
        let mut it = iter(e, None, Some(b""), None);
        assert_entries(
            &collect_forward(&mut it),
            &[],
            &format!("{ctx}: upper bound \"\" is an empty range"),
        );
    };
    assert_view(&e, None, &x, "with empty key and values");
    check_seeks(&e, "memtable");
    flush(&e);
    assert_view(&e, None, &x, "after flush");
    check_seeks(&e, "after flush");
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after reopen");
    check_seeks(&e, "after reopen");

    put(&e, b"", b"");
    x.put(b"", b"");
    let e = reopen(f, dir, e);
    assert_view(
        &e,
        None,
        &x,
        "empty key with empty value, after reopen without flush",
    );

    delete(&e, b"");
    x.delete(b"");
    assert_get(
        &e,
        b"k",
        Some(b""),
        "deleting the empty key hid another key",
    );
    assert_view(&e, None, &x, "after deleting the empty key");
    compact(&e, None, None);
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after compaction and reopen");
}

/// Entries of the latest state within bounds, read through a plain scan (used where the
/// expected set is the engine's own full content, to test bound handling alone).
fn x_range<E: KvEngine>(e: &E, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Vec<super::Kv> {
    let mut it = iter(e, None, None, None);
    collect_forward(&mut it)
        .into_iter()
        .filter(|(k, _)| {
            lower.is_none_or(|l| k.as_slice() >= l) && upper.is_none_or(|u| k.as_slice() < u)
        })
        .collect()
}

/// Keys order bytewise and unsigned, whatever their bytes: `0x00` and `0xff` anywhere, keys
/// that are prefixes of one another, `0x7f` before `0x80` (a signed comparison gets this
/// wrong). Checked in the memtable, after flush, with newer versions on top, after compaction
/// and after reopen (prefix-compressed table formats break here).
pub fn check_binary_and_prefix_keys<F: EngineFactory>(f: &F, dir: &Path) {
    let keys: [&[u8]; 22] = [
        b"",
        b"\x00",
        b"\x00\x00",
        b"\x00\x01",
        b"\x00\xff",
        b"\x01",
        b"\x7f",
        b"\x80",
        b"\xfe",
        b"\xff",
        b"\xff\x00",
        b"\xff\xff",
        b"\xff\xff\xff",
        b"a",
        b"a\x00",
        b"a\x00\x00",
        b"ab",
        b"abc",
        b"abd",
        b"ab\xff",
        b"b",
        b"ba",
    ];
    let absent: [&[u8]; 8] = [
        b"\x00\x00\x00",
        b"\x02",
        b"a\x01",
        b"ab\x00",
        b"abcd",
        b"abc\x00",
        b"\xff\xff\xff\xff",
        b"aa",
    ];
    let e = open(f, dir);
    let mut x = Expected::default();
    // Write in an order unrelated to key order: odd positions backwards, then even ones.
    let order: Vec<usize> = (0..keys.len())
        .rev()
        .filter(|i| i % 2 == 1)
        .chain((0..keys.len()).filter(|i| i % 2 == 0))
        .collect();
    for i in order {
        let mut v = b"v:".to_vec();
        v.extend_from_slice(keys[i]);
        put(&e, keys[i], &v);
        x.put(keys[i], &v);
    }
    let check = |e: &F::Engine, x: &Expected, ctx: &str| {
        assert_view(e, None, x, ctx);
        let mut it = iter(e, None, None, None);
        for k in absent {
            assert_get(e, k, None, format_args!("{ctx}: absent key"));
            let want = x.range(Some(k), None).into_iter().next();
            it.seek(k);
            let got = it.valid().then(|| it.key().to_vec());
            assert_value(
                got.as_deref(),
                want.as_ref().map(|(k, _)| k.as_slice()),
                format_args!("{ctx}: key found by seek({})", show(k)),
            );
            let want = x.all().into_iter().rfind(|(kk, _)| kk.as_slice() <= k);
            it.seek_for_prev(k);
            let got = it.valid().then(|| it.key().to_vec());
            assert_value(
                got.as_deref(),
                want.as_ref().map(|(k, _)| k.as_slice()),
                format_args!("{ctx}: key found by seek_for_prev({})", show(k)),
            );
        }
    };
    check(&e, &x, "memtable");
    flush(&e);
    check(&e, &x, "after flush");
    for (i, k) in keys.iter().enumerate() {
        match i % 3 {
            0 => {
                put(&e, k, b"newer");
                x.put(k, b"newer");
            }
            1 => {
                delete(&e, k);
                x.delete(k);
            }
            _ => {}
        }
    }
    check(&e, &x, "with newer versions over flushed ones");
    compact(&e, None, None);
    check(&e, &x, "after compaction");
    let e = reopen(f, dir, e);
    check(&e, &x, "after reopen");
}

/// Operations of a batch apply in order: a later operation on the same key wins, also once
/// the batch is recovered from the log on reopen and after flush. An empty batch is a no-op.
pub fn check_batch_last_op_wins<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    for k in [&b"k1"[..], b"k2", b"k3"] {
        put(&e, k, b"old");
        x.put(k, b"old");
    }
    let long = super::pattern(3, 300);
    let mut b = WriteBatch::new();
    let ops: [(&[u8], Option<&[u8]>); 15] = [
        (b"k1", Some(b"a")),
        (b"k1", Some(b"b")),
        (b"k2", Some(b"a")),
        (b"k2", None),
        (b"k3", None),
        (b"k3", Some(b"c")),
        (b"k4", Some(b"a")),
        (b"k4", None),
        (b"k4", Some(b"d")),
        (b"k4", Some(b"e")),
        (b"k5", None),
        (b"k6", Some(&long)),
        (b"k6", Some(b"")),
        (b"k7", Some(b"x")),
        (b"k7", None),
    ];
    for (k, v) in ops {
        match v {
            Some(v) => {
                b.put(k, v);
                x.put(k, v);
            }
            None => {
                b.delete(k);
                x.delete(k);
            }
        }
    }
    write(&e, b);
    assert_view(&e, None, &x, "after a batch with repeated keys");

    write(&e, WriteBatch::new());
    assert_view(&e, None, &x, "after an empty batch");

    let e = reopen(f, dir, e);
    assert_view(
        &e,
        None,
        &x,
        "after reopen without flush (batch replayed from the log)",
    );

    let mut b = WriteBatch::new();
    for i in 0..100u32 {
        b.put(b"hot", &i.to_le_bytes());
    }
    write(&e, b);
    x.put(b"hot", &99u32.to_le_bytes());
    assert_view(&e, None, &x, "after a batch writing one key 100 times");
    flush(&e);
    compact(&e, None, None);
    assert_view(&e, None, &x, "after flush and compaction");
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "after reopen");
}

/// A batch is all or nothing to every reader. Single-threaded: a snapshot and an iterator
/// taken before see none of it, the latest state all of it. Concurrently: while one thread
/// commits batches that each rewrite a group of keys to a new generation (and move a marker
/// key), readers using snapshots and iterators always see one generation everywhere.
pub fn check_batch_is_atomic<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    for i in 0..40u32 {
        let k = format!("pre{i:03}");
        put(&e, k.as_bytes(), b"before");
        x.put(k.as_bytes(), b"before");
    }
    let before = x.clone();
    let snap = e.snapshot();
    let mut it = iter(&e, None, None, None);
    let mut b = WriteBatch::new();
    for i in 0..40u32 {
        let k = format!("pre{i:03}");
        match i % 4 {
            0 => {
                b.delete(k.as_bytes());
                x.delete(k.as_bytes());
            }
            1 => {
                b.put(k.as_bytes(), b"after");
                x.put(k.as_bytes(), b"after");
            }
            _ => {}
        }
        let k = format!("new{i:03}");
        b.put(k.as_bytes(), b"after");
        x.put(k.as_bytes(), b"after");
    }
    write(&e, b);
    assert_view(&e, None, &x, "latest state after a batch");
    assert_view(&e, Some(&snap), &before, "snapshot taken before the batch");
    assert_entries(
        &collect_forward(&mut it),
        &before.all(),
        "iterator created before the batch",
    );
    drop(it);
    drop(snap);

    concurrent_batches(&e, 300);
}

const GROUP: usize = 16;

fn group_key(i: usize) -> Vec<u8> {
    format!("g/{i:03}").into_bytes()
}

fn marker_key(generation: u32) -> Vec<u8> {
    format!("h/{generation:06}").into_bytes()
}

fn generation_value(generation: u32) -> Vec<u8> {
    format!("{generation:06}").into_bytes()
}

fn generation_batch(generation: u32) -> WriteBatch {
    let mut b = WriteBatch::new();
    for i in 0..GROUP {
        b.put(&group_key(i), &generation_value(generation));
    }
    if generation > 0 {
        b.delete(&marker_key(generation - 1));
    }
    b.put(&marker_key(generation), &generation_value(generation));
    b
}

/// Checks one view of the group: `entries` are every key in `[g/, h0)` in order. Returns the
/// generation it shows.
#[track_caller]
fn check_generation(entries: &[super::Kv], how: &str) -> u32 {
    assert_eq!(
        entries.len(),
        GROUP + 1,
        "{how}: saw {} keys of a batch-written group of {} (a partial batch?)",
        entries.len(),
        GROUP + 1
    );
    let (marker, mv) = &entries[GROUP];
    let generation: u32 = std::str::from_utf8(mv)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{how}: marker value {} is not a generation", show(mv)));
    assert!(
        marker == &marker_key(generation),
        "{how}: marker key {} does not match its value {}",
        show(marker),
        show(mv)
    );
    for (i, (k, v)) in entries[..GROUP].iter().enumerate() {
        assert!(k == &group_key(i), "{how}: unexpected key {}", show(k));
        assert!(
            v == &generation_value(generation),
            "{how}: {} shows generation {} but the marker {generation}: a partial batch",
            show(k),
            show(v)
        );
    }
    generation
}

fn concurrent_batches<E: KvEngine>(e: &E, generations: u32) {
    write(e, generation_batch(0));
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let _done = SetOnDrop(&done);
            for generation in 1..=generations {
                write(e, generation_batch(generation));
                if generation == generations / 3 {
                    flush(e);
                }
                if generation == 2 * generations / 3 {
                    compact(e, None, None);
                }
            }
        });
        let reader = s.spawn(|| {
            let mut last = 0;
            let mut rounds = 0u32;
            while rounds == 0 || !done.load(Ordering::SeqCst) {
                rounds += 1;
                let snap = e.snapshot();
                let mut it = iter(e, Some(b"g/"), Some(b"h0"), Some(&snap));
                let seen = check_generation(&collect_forward(&mut it), "iterator on a snapshot");
                assert!(seen >= last, "generation went back from {last} to {seen}");
                last = seen;
                for i in [0, GROUP / 2, GROUP - 1] {
                    assert_value(
                        get_at(e, &snap, &group_key(i)).as_deref(),
                        Some(&generation_value(seen)),
                        "get_at disagrees with an iterator on the same snapshot",
                    );
                }
                let mut it = iter(e, Some(b"g/"), Some(b"h0"), None);
                let seen = check_generation(&collect_forward(&mut it), "iterator");
                assert!(seen >= last, "generation went back from {last} to {seen}");
                last = seen;
            }
        });
        join_all(vec![writer, reader]);
    });
    let mut it = iter(e, Some(b"g/"), Some(b"h0"), None);
    assert_eq!(
        check_generation(&collect_forward(&mut it), "final state"),
        generations,
        "the last batch is not the one visible"
    );
}
