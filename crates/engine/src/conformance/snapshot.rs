//! Snapshots and the views of iterators.

use std::path::Path;

use super::{
    assert_entries, assert_view, collect_backward, collect_forward, compact, delete, flush, iter,
    join_all, open, put, show, EngineFactory, Expected, Kv,
};
use crate::{EngineIterator, KvEngine};

fn key(i: u32) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

/// A snapshot keeps showing the state of its creation, through `get_at`, full and bounded
/// iterators, while later puts, deletes, new keys, flushes and compactions change the latest
/// state. An iterator opened on the snapshot before all that sees the same.
pub fn check_snapshot_isolation<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let empty = e.snapshot();
    let mut x = Expected::default();
    for i in 0..20 {
        put(&e, &key(i), format!("v0-{i}").as_bytes());
        x.put(&key(i), format!("v0-{i}").as_bytes());
    }
    let frozen = x.clone();
    let snap = e.snapshot();
    let mut early_it = iter(&e, None, None, Some(&snap));

    // Every step changes the latest state; each is followed by checking both views.
    type StepFn<'a, E> = Box<dyn Fn(&E, &mut Expected) + 'a>;
    let steps: Vec<(&str, StepFn<'_, F::Engine>)> = vec![
        (
            "overwrites",
            Box::new(|e, x| {
                for i in 0..10 {
                    put(e, &key(i), b"v1");
                    x.put(&key(i), b"v1");
                }
            }),
        ),
        (
            "deletes",
            Box::new(|e, x| {
                for i in 10..15 {
                    delete(e, &key(i));
                    x.delete(&key(i));
                }
            }),
        ),
        (
            "new keys before, between and after",
            Box::new(|e, x| {
                for k in [&b""[..], b"k05a", b"k99", b"\xff"] {
                    put(e, k, b"new");
                    x.put(k, b"new");
                }
            }),
        ),
        ("flush", Box::new(|e, _| flush(e))),
        (
            "writes over flushed data",
            Box::new(|e, x| {
                put(e, &key(0), b"v2");
                x.put(&key(0), b"v2");
                delete(e, &key(15));
                x.delete(&key(15));
            }),
        ),
        ("full compaction", Box::new(|e, _| compact(e, None, None))),
        (
            "deletes then partial compaction",
            Box::new(|e, x| {
                for i in 5..13 {
                    delete(e, &key(i));
                    x.delete(&key(i));
                }
                flush(e);
                compact(e, Some(&key(5)), Some(&key(12)));
            }),
        ),
        (
            "flush and full compaction",
            Box::new(|e, _| {
                flush(e);
                compact(e, None, None);
            }),
        ),
    ];
    for (name, step) in &steps {
        step(&e, &mut x);
        assert_view(&e, Some(&snap), &frozen, &format!("snapshot after {name}"));
        assert_view(&e, None, &x, &format!("latest state after {name}"));
        let mut it = iter(&e, Some(&key(3)), Some(&key(13)), Some(&snap));
        assert_entries(
            &collect_forward(&mut it),
            &frozen.range(Some(&key(3)), Some(&key(13))),
            &format!("bounded iterator on the snapshot after {name}"),
        );
    }
    assert_entries(
        &collect_forward(&mut early_it),
        &frozen.all(),
        "iterator opened on the snapshot before the changes",
    );
    assert_view(
        &e,
        Some(&empty),
        &Expected {
            touched: x.touched.clone(),
            ..Expected::default()
        },
        "snapshot of the empty engine",
    );
}

/// Several snapshots at once each keep their own state; releasing some (oldest, middle, in any
/// order) and compacting does not disturb the others or the latest state; a clone outlives its
/// original; a snapshot can be read from another thread.
pub fn check_multiple_snapshots<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    let mut snaps: Vec<Option<(<F::Engine as KvEngine>::Snapshot, Expected)>> = Vec::new();
    for round in 0..6u32 {
        put(&e, b"x", format!("round{round}").as_bytes());
        x.put(b"x", format!("round{round}").as_bytes());
        put(&e, &key(round), b"r");
        x.put(&key(round), b"r");
        if round >= 2 {
            delete(&e, &key(round - 2));
            x.delete(&key(round - 2));
        }
        let base = format!("base{}", round % 3);
        put(&e, base.as_bytes(), format!("{round}").as_bytes());
        x.put(base.as_bytes(), format!("{round}").as_bytes());
        if round == 2 {
            flush(&e);
        }
        if round == 4 {
            compact(&e, None, None);
        }
        snaps.push(Some((e.snapshot(), x.clone())));
    }
    // Every snapshot's expectation must also probe the keys written after it.
    let touched = x.touched.clone();
    for (_, ex) in snaps.iter_mut().flatten() {
        ex.touched.clone_from(&touched);
    }
    let verify = |e: &F::Engine, snaps: &[Option<(_, Expected)>], x: &Expected, ctx: &str| {
        for (i, s) in snaps.iter().enumerate() {
            if let Some((snap, ex)) = s {
                assert_view(e, Some(snap), ex, &format!("{ctx}: snapshot {i}"));
            }
        }
        assert_view(e, None, x, &format!("{ctx}: latest state"));
    };
    verify(&e, &snaps, &x, "six snapshots");

    snaps[1] = None;
    snaps[3] = None;
    compact(&e, None, None);
    verify(
        &e,
        &snaps,
        &x,
        "after releasing snapshots 1 and 3 and compacting",
    );

    snaps[0] = None;
    put(&e, b"x", b"later");
    x.put(b"x", b"later");
    delete(&e, b"base0");
    x.delete(b"base0");
    flush(&e);
    compact(&e, None, None);
    verify(
        &e,
        &snaps,
        &x,
        "after releasing the oldest snapshot, writing and compacting",
    );

    let clone = snaps[2].clone();
    snaps[2] = None;
    compact(&e, None, None);
    if let Some((snap, ex)) = &clone {
        assert_view(&e, Some(snap), ex, "clone of a released snapshot");
    }

    if let Some((snap, ex)) = &snaps[4] {
        std::thread::scope(|s| {
            let h =
                s.spawn(|| assert_view(&e, Some(snap), ex, "snapshot read from another thread"));
            join_all(vec![h]);
        });
    }

    drop(clone);
    snaps.clear();
    flush(&e);
    compact(&e, None, None);
    assert_view(&e, None, &x, "after releasing every snapshot");
}

/// An iterator shows the state of its creation, whatever is written, flushed or compacted
/// afterwards: one not yet positioned, one stopped in the middle going forward, one going
/// backward, one bounded. Iterators created after the writes see them.
pub fn check_iterator_sees_own_view<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    for i in 0..10 {
        put(&e, &key(i), format!("old{i}").as_bytes());
        x.put(&key(i), format!("old{i}").as_bytes());
    }
    let old = x.all();
    let mut fresh = iter(&e, None, None, None);
    let mut forward = iter(&e, None, None, None);
    forward.seek(&key(4));
    let mut backward = iter(&e, None, None, None);
    backward.seek_for_prev(&key(6));
    let mut bounded = iter(&e, Some(&key(2)), Some(&key(8)), None);

    put(&e, &key(5), b"new");
    x.put(&key(5), b"new");
    delete(&e, &key(6));
    x.delete(&key(6));
    put(&e, b"k04a", b"inserted");
    x.put(b"k04a", b"inserted");
    flush(&e);
    delete(&e, &key(3));
    x.delete(&key(3));
    put(&e, &key(7), b"new");
    x.put(&key(7), b"new");
    compact(&e, None, None);
    put(&e, b"k06a", b"inserted");
    x.put(b"k06a", b"inserted");

    let rest = |it: &mut <F::Engine as KvEngine>::Iter, forward: bool| -> Vec<Kv> {
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        out
    };
    assert_entries(
        &rest(&mut forward, true),
        &old[4..],
        "iterator positioned at k04 before the writes, moving forward",
    );
    let mut want: Vec<Kv> = old[..=6].to_vec();
    want.reverse();
    assert_entries(
        &rest(&mut backward, false),
        &want,
        "iterator positioned at k06 before the writes, moving backward",
    );
    assert_entries(
        &collect_forward(&mut fresh),
        &old,
        "unpositioned iterator created before the writes",
    );
    let mut want = old.clone();
    want.reverse();
    assert_entries(
        &collect_backward(&mut fresh),
        &want,
        "unpositioned iterator created before the writes, backward",
    );
    let want: Vec<Kv> = old
        .iter()
        .filter(|(k, _)| k.as_slice() >= key(2).as_slice() && k.as_slice() < key(8).as_slice())
        .cloned()
        .collect();
    assert_entries(
        &collect_forward(&mut bounded),
        &want,
        "bounded iterator created before the writes",
    );
    forward.seek(b"k04a");
    assert!(
        forward.valid() && forward.key() == key(5).as_slice() && forward.value() == b"old5",
        "re-seeking an old iterator must stay in its view: at {}",
        if forward.valid() {
            show(forward.key())
        } else {
            "invalid".into()
        }
    );
    // Iterators are `Send`: one created here keeps its view when used on another thread.
    let mut moved = iter(&e, None, None, None);
    let now = x.all();
    put(&e, b"k00", b"after the move");
    std::thread::scope(|s| {
        let h = s.spawn(move || {
            assert_entries(
                &collect_forward(&mut moved),
                &now,
                "iterator moved to another thread",
            )
        });
        join_all(vec![h]);
    });
    x.put(b"k00", b"after the move");
    drop((fresh, forward, backward, bounded));
    assert_view(&e, None, &x, "iterators created after the writes");
}
