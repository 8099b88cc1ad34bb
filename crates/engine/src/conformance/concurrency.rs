//! Concurrency: writers on disjoint keys, readers and iterators running while they write, and
//! a maintenance thread flushing and compacting underneath.
//!
//! Writer `w` writes its keys `0..n` in order, one operation at a time: a plain put for most
//! keys, and for every `i % 4 == 3` a batch that puts key `i` and rewrites key `i - 1` to
//! generation 1. Every value encodes its key and generation, so a reader can tell a value that
//! was written from one that was not. Because the order of each writer's commits is known,
//! readers can also check visibility rules:
//!
//! * a consistent view (iterator, snapshot) holds a prefix `0..k` of each writer's keys, and
//!   key `i - 1` is at generation 1 exactly when batch key `i` is present;
//! * once a reader has seen key `i`, every earlier key of that writer stays visible to it
//!   (they were committed before key `i` was even written).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{
    assert_get, assert_status_ok, assert_value, compact, flush, get, get_at, iter, join_all, open,
    pattern, put, reopen, show, write, EngineFactory, Kv, SetOnDrop,
};
use crate::{EngineIterator, KvEngine, WriteBatch};

/// Sizes of the concurrency checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcurrencyParams {
    /// Writer threads, each on its own keys.
    pub writers: usize,
    /// Keys each writer writes.
    pub keys_per_writer: usize,
    /// Reader threads (point readers or iterator readers, depending on the check).
    pub readers: usize,
    /// Base value size in bytes; actual sizes vary from it up to about twice it.
    pub value_len: usize,
    /// Whether a thread flushes and compacts while the writers run.
    pub maintenance: bool,
}

impl Default for ConcurrencyParams {
    /// Small enough for a debug build to finish in well under a second on an in-memory engine.
    fn default() -> Self {
        ConcurrencyParams {
            writers: 4,
            keys_per_writer: 400,
            readers: 3,
            value_len: 100,
            maintenance: true,
        }
    }
}

fn ckey(w: usize, i: usize) -> Vec<u8> {
    format!("w{w:02}/{i:06}").into_bytes()
}

/// Prefix bounds `[lower, upper)` holding exactly writer `w`'s keys.
fn writer_bounds(w: usize) -> (Vec<u8>, Vec<u8>) {
    (
        format!("w{w:02}/").into_bytes(),
        format!("w{w:02}0").into_bytes(),
    )
}

fn cvalue(key: &[u8], generation: u8, base_len: usize) -> Vec<u8> {
    let seed = key.iter().fold(u64::from(generation), |h, &b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let mut v = key.to_vec();
    v.push(b'#');
    v.push(b'0' + generation);
    v.push(b'#');
    let extra = (seed % (base_len as u64 + 1)) as usize;
    v.extend_from_slice(&pattern(seed, base_len + extra));
    v
}

/// Parses a key written by the writers: `(writer, index)`.
fn parse_key(key: &[u8]) -> Option<(usize, usize)> {
    let s = std::str::from_utf8(key).ok()?;
    let (w, i) = s.strip_prefix('w')?.split_once('/')?;
    Some((w.parse().ok()?, i.parse().ok()?))
}

/// The generation `value` holds for `key`; panics if it is not a value ever written to it.
#[track_caller]
fn generation_of(key: &[u8], value: &[u8], p: &ConcurrencyParams, ctx: &str) -> u8 {
    for generation in [0, 1] {
        if value == cvalue(key, generation, p.value_len).as_slice() {
            return generation;
        }
    }
    panic!(
        "{ctx}: {} holds {}, a value never written to it",
        show(key),
        show(value)
    );
}

/// Whether the batch of key `i` also rewrites key `i - 1` to generation 1.
fn is_batch_key(i: usize) -> bool {
    i % 4 == 3
}

/// Generation of key `i` once writer is done with it and its batch successor.
fn final_generation(i: usize, n: usize) -> u8 {
    u8::from(i % 4 == 2 && i + 1 < n)
}

fn run_writer<E: KvEngine>(e: &E, w: usize, p: &ConcurrencyParams) {
    for i in 0..p.keys_per_writer {
        let k = ckey(w, i);
        if is_batch_key(i) {
            let mut b = WriteBatch::new();
            let prev = ckey(w, i - 1);
            b.put(&prev, &cvalue(&prev, 1, p.value_len));
            b.put(&k, &cvalue(&k, 0, p.value_len));
            write(e, b);
        } else {
            put(e, &k, &cvalue(&k, 0, p.value_len));
        }
    }
}

/// Flushes and compacts while the writers run (a bounded number of times, so slow engines
/// do not spend the whole check compacting).
fn run_maintenance<E: KvEngine>(e: &E, done: &AtomicBool) {
    for round in 0..12 {
        if done.load(Ordering::SeqCst) {
            break;
        }
        flush(e);
        if round % 3 == 2 {
            compact(e, None, None);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// A reader thread: `(engine, reader index, params, done)`; runs until `done` is set.
type Reader<E> = fn(&E, usize, &ConcurrencyParams, &AtomicBool);

/// Runs the writers, `p.readers` threads of `reader` and the maintenance thread together;
/// re-raises the first panic of any of them.
fn run_concurrently<E: KvEngine>(e: &E, p: &ConcurrencyParams, reader: Reader<E>) {
    let done = AtomicBool::new(false);
    let writers_left = AtomicUsize::new(p.writers);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for w in 0..p.writers {
            let (done, writers_left) = (&done, &writers_left);
            handles.push(s.spawn(move || {
                // A panicking writer stops everyone; the last writer to finish stops the rest.
                let stop = SetOnDrop(done);
                run_writer(e, w, p);
                if writers_left.fetch_sub(1, Ordering::SeqCst) != 1 {
                    std::mem::forget(stop);
                }
            }));
        }
        for r in 0..p.readers {
            let done = &done;
            handles.push(s.spawn(move || reader(e, r, p, done)));
        }
        if p.maintenance {
            let done = &done;
            handles.push(s.spawn(move || run_maintenance(e, done)));
        }
        join_all(handles);
    });
}

/// Checks one consistent view of writer `w`'s keys (`entries`, in order).
#[track_caller]
fn check_writer_view(w: usize, entries: &[Kv], p: &ConcurrencyParams, ctx: &str) {
    for (i, (k, v)) in entries.iter().enumerate() {
        assert_eq!(
            parse_key(k),
            Some((w, i)),
            "{ctx}: writer {w}'s keys are not a prefix of what it wrote in order: position {i} \
             holds {} (missing or reordered keys)",
            show(k)
        );
        let generation = generation_of(k, v, p, ctx);
        let successor_visible = i + 1 < entries.len();
        if i % 4 == 2 {
            let want = u8::from(successor_visible);
            assert_eq!(
                generation,
                want,
                "{ctx}: {} is at generation {generation} while the batch that rewrites it is \
                 {}visible: a partial batch",
                show(k),
                if successor_visible { "" } else { "not " }
            );
        } else {
            assert_eq!(
                generation,
                0,
                "{ctx}: {} was only written at generation 0",
                show(k)
            );
        }
    }
}

/// Every key of every writer holds its final value, by point reads and by one scan.
#[track_caller]
fn check_final<E: KvEngine>(e: &E, p: &ConcurrencyParams, ctx: &str) {
    for w in 0..p.writers {
        let (lo, hi) = writer_bounds(w);
        let mut it = iter(e, Some(&lo), Some(&hi), None);
        let entries = super::collect_forward(&mut it);
        assert_eq!(
            entries.len(),
            p.keys_per_writer,
            "{ctx}: writer {w} wrote {} keys, a scan finds {}",
            p.keys_per_writer,
            entries.len()
        );
        check_writer_view(w, &entries, p, ctx);
        for i in 0..p.keys_per_writer {
            let k = ckey(w, i);
            let want = cvalue(&k, final_generation(i, p.keys_per_writer), p.value_len);
            assert_get(e, &k, Some(&want), format_args!("{ctx}: final value"));
        }
    }
}

/// [`check_concurrent_writes_and_reads_with`] at [`ConcurrencyParams::default`].
pub fn check_concurrent_writes_and_reads<F: EngineFactory>(f: &F, dir: &Path) {
    check_concurrent_writes_and_reads_with(f, dir, &ConcurrencyParams::default());
}

/// Writers on disjoint keys, point readers and (optionally) a flushing, compacting thread, all
/// at once. Readers check every value they get was written to that key, that keys written
/// before one they saw stay visible, and that both halves of a batch are seen together. At the
/// end every writer's writes are all there, also after reopen.
pub fn check_concurrent_writes_and_reads_with<F: EngineFactory>(
    f: &F,
    dir: &Path,
    p: &ConcurrencyParams,
) {
    let e = open(f, dir);
    run_concurrently(&e, p, point_reader::<F::Engine>);
    check_final(&e, p, "after concurrent writes");
    let e = reopen(f, dir, e);
    check_final(&e, p, "after concurrent writes and reopen");
}

fn point_reader<E: KvEngine>(e: &E, r: usize, p: &ConcurrencyParams, done: &AtomicBool) {
    let mut rng = StdRng::seed_from_u64(r as u64 + 1);
    // Highest index of each writer this reader has seen present.
    let mut seen: Vec<Option<usize>> = vec![None; p.writers];
    let mut rounds = 0u32;
    while rounds < 10 || !done.load(Ordering::SeqCst) {
        rounds += 1;
        let w = rng.gen_range(0..p.writers);
        let i = rng.gen_range(0..p.keys_per_writer);
        let k = ckey(w, i);
        let ctx = format!("point reader {r}");
        match get(e, &k) {
            Some(v) => {
                let generation = generation_of(&k, &v, p, &ctx);
                if seen[w].is_none_or(|s| i > s) {
                    seen[w] = Some(i);
                }
                if is_batch_key(i) {
                    let prev = ckey(w, i - 1);
                    let pv = get(e, &prev);
                    assert_eq!(
                        pv.map(|v| generation_of(&prev, &v, p, &ctx)),
                        Some(1),
                        "{ctx}: saw {} but not the rewrite of {} from the same batch",
                        show(&k),
                        show(&prev)
                    );
                }
                if generation == 1 {
                    assert!(
                        get(e, &ckey(w, i + 1)).is_some(),
                        "{ctx}: saw the batch rewrite of {} but not the key {} it committed with",
                        show(&k),
                        show(&ckey(w, i + 1))
                    );
                }
            }
            None => {
                if let Some(s) = seen[w] {
                    assert!(
                        i > s,
                        "{ctx}: {} vanished after {} (written later) was seen",
                        show(&k),
                        show(&ckey(w, s))
                    );
                }
            }
        }
        if let Some(s) = seen[w] {
            let j = rng.gen_range(0..=s);
            assert!(
                get(e, &ckey(w, j)).is_some(),
                "{ctx}: {} is missing although {} (written later) was seen",
                show(&ckey(w, j)),
                show(&ckey(w, s))
            );
        }
    }
}

/// [`check_concurrent_iterators_with`] at [`ConcurrencyParams::default`].
pub fn check_concurrent_iterators<F: EngineFactory>(f: &F, dir: &Path) {
    check_concurrent_iterators_with(f, dir, &ConcurrencyParams::default());
}

/// Iterators and snapshots opened while writers (and optionally a flushing, compacting thread)
/// run: each view is ordered, holds only written values, a prefix of each writer's keys and
/// whole batches; `get_at` agrees with an iterator on the same snapshot; views never go back
/// in time for a reader.
pub fn check_concurrent_iterators_with<F: EngineFactory>(f: &F, dir: &Path, p: &ConcurrencyParams) {
    let e = open(f, dir);
    run_concurrently(&e, p, iterator_reader::<F::Engine>);
    check_final(&e, p, "after concurrent iteration");
}

fn iterator_reader<E: KvEngine>(e: &E, r: usize, p: &ConcurrencyParams, done: &AtomicBool) {
    let mut rng = StdRng::seed_from_u64(1000 + r as u64);
    // Number of keys of each writer seen in the latest view; views never shrink.
    let mut seen = vec![0usize; p.writers];
    let mut rounds = 0u32;
    while rounds < 3 || !done.load(Ordering::SeqCst) {
        rounds += 1;
        let ctx = format!("iterator reader {r}, round {rounds}");
        match rounds % 3 {
            // One writer's keys, forward or backward, no snapshot.
            0 | 1 => {
                let w = rng.gen_range(0..p.writers);
                let (lo, hi) = writer_bounds(w);
                let mut it = iter(e, Some(&lo), Some(&hi), None);
                let entries = if rng.gen::<bool>() {
                    super::collect_forward(&mut it)
                } else {
                    let mut v = super::collect_backward(&mut it);
                    v.reverse();
                    v
                };
                check_writer_view(w, &entries, p, &ctx);
                assert!(
                    entries.len() >= seen[w],
                    "{ctx}: writer {w} had {} keys in an earlier view, {} now",
                    seen[w],
                    entries.len()
                );
                seen[w] = entries.len();
            }
            // Everything, on a snapshot, checked against get_at on the same snapshot.
            _ => {
                let snap = e.snapshot();
                let mut it = iter(e, None, None, Some(&snap));
                let mut per_writer: Vec<Vec<Kv>> = vec![Vec::new(); p.writers];
                let mut last: Option<Vec<u8>> = None;
                it.seek_to_first();
                while it.valid() {
                    let k = it.key().to_vec();
                    if let Some(l) = &last {
                        assert!(
                            l < &k,
                            "{ctx}: keys out of order: {} then {}",
                            show(l),
                            show(&k)
                        );
                    }
                    let (w, _) = parse_key(&k)
                        .filter(|(w, _)| *w < p.writers)
                        .unwrap_or_else(|| panic!("{ctx}: unexpected key {}", show(&k)));
                    per_writer[w].push((k.clone(), it.value().to_vec()));
                    last = Some(k);
                    it.next();
                }
                assert_status_ok(&it, &ctx);
                for (w, entries) in per_writer.iter().enumerate() {
                    check_writer_view(w, entries, p, &ctx);
                    assert!(entries.len() >= seen[w], "{ctx}: writer {w}'s view shrank");
                    seen[w] = entries.len();
                    for idx in [0, entries.len() / 2, entries.len()] {
                        let k = ckey(w, idx);
                        let want = entries.get(idx).map(|(_, v)| v.clone());
                        assert_value(
                            get_at(e, &snap, &k).as_deref(),
                            want.as_deref(),
                            format_args!(
                                "{ctx}: get_at({}) disagrees with an iterator on the same snapshot",
                                show(&k)
                            ),
                        );
                    }
                }
            }
        }
    }
}
