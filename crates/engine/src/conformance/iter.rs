//! Iterators: bounds, seeks and direction switching, compared with a cursor over a sorted
//! list (what a `BTreeMap` cursor would do).
//!
//! Every check runs over the same logical content laid out several ways (all in the memtable;
//! flushed; newer versions and tombstones over flushed data; partially compacted; reopened),
//! because merging iterators of layered engines break in ways a single layer never shows.

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{
    assert_entries, assert_status_ok, collect_backward, collect_forward, compact, delete, flush,
    iter, open, put, reopen, show, EngineFactory, Expected, Kv,
};
use crate::{EngineIterator, KvEngine as _};

/// Keys and bounds probed by the checks: absent keys between, before and after the stored
/// ones, and keys that extend stored ones by a `0x00` byte.
const PROBES: [&[u8]; 13] = [
    b"",
    b"a",
    b"b",
    b"c",
    b"d",
    b"d\x00",
    b"d\x00\x00",
    b"e",
    b"f",
    b"g",
    b"h",
    b"i",
    b"\xff",
];

/// Every `(lower, upper)` pair of `None` and [`PROBES`], including `lower > upper` and
/// `lower == upper`.
/// An iterator's `(lower, upper)` bounds.
type Bounds = (Option<&'static [u8]>, Option<&'static [u8]>);

fn bound_pairs() -> Vec<Bounds> {
    let options: Vec<Option<&'static [u8]>> = std::iter::once(None)
        .chain(PROBES.iter().map(|p| Some(*p)))
        .collect();
    options
        .iter()
        .flat_map(|l| options.iter().map(move |u| (*l, *u)))
        .collect()
}

/// Runs `body` on one content in five layouts, with the expected content of each.
fn with_layouts<F: EngineFactory>(
    f: &F,
    dir: &Path,
    mut body: impl FnMut(&F::Engine, &Expected, &str),
) {
    let e = open(f, dir);
    let mut x = Expected::default();
    for k in [&b"b"[..], b"d", b"d\x00", b"f", b"h"] {
        let mut v = b"v1-".to_vec();
        v.extend_from_slice(k);
        put(&e, k, &v);
        x.put(k, &v);
    }
    body(&e, &x, "memtable");
    flush(&e);
    body(&e, &x, "flushed");

    // Keys around and between the stored ones, flushed, then deleted in the memtable; newer
    // versions of some stored keys; a key deleted and written again.
    for k in [&b"a"[..], b"c", b"e", b"g", b"i", b"d\x00\x00"] {
        put(&e, k, b"doomed");
    }
    flush(&e);
    for k in [&b"a"[..], b"c", b"e", b"g", b"i", b"d\x00\x00"] {
        delete(&e, k);
        x.delete(k);
    }
    for k in [&b"b"[..], b"f"] {
        put(&e, k, b"v2");
        x.put(k, b"v2");
    }
    delete(&e, b"h");
    put(&e, b"h", b"v3-h");
    x.put(b"h", b"v3-h");
    body(
        &e,
        &x,
        "layered (newer versions and tombstones over flushed data)",
    );

    compact(&e, Some(b"c"), Some(b"e"));
    body(&e, &x, "partially compacted");
    let e = reopen(f, dir, e);
    body(&e, &x, "reopened");
}

/// Scans forward and backward give exactly the keys within `[lower, upper)`, for every
/// combination of absent, present, outside, equal and inverted bounds, on the latest state and
/// on a snapshot.
pub fn check_iterator_bounds<F: EngineFactory>(f: &F, dir: &Path) {
    with_layouts(f, dir, |e, x, layout| {
        let snap = e.snapshot();
        for (lower, upper) in bound_pairs() {
            let want = x.range(lower, upper);
            let mut rev = want.clone();
            rev.reverse();
            for s in [None, Some(&snap)] {
                let fresh = iter(e, lower, upper, s);
                assert!(
                    !fresh.valid(),
                    "{layout}: a fresh iterator must not be positioned"
                );
                let ctx = format!(
                    "{layout}: bounds [{}, {}){}",
                    lower.map_or("unbounded".into(), show),
                    upper.map_or("unbounded".into(), show),
                    if s.is_some() { " on a snapshot" } else { "" }
                );
                let mut it = iter(e, lower, upper, s);
                assert_entries(&collect_forward(&mut it), &want, &format!("{ctx}: forward"));
                assert_entries(
                    &collect_backward(&mut it),
                    &rev,
                    &format!("{ctx}: backward"),
                );
            }
        }
    });
}

/// `seek` and `seek_for_prev` land on the right key (or nowhere) for targets that exist, are
/// absent, or lie outside the bounds, and `next`/`prev` continue correctly from there. One
/// iterator is re-seeked many times, also after it became invalid.
pub fn check_iterator_seek<F: EngineFactory>(f: &F, dir: &Path) {
    with_layouts(f, dir, |e, x, layout| {
        for (lower, upper) in bound_pairs() {
            let entries = x.range(lower, upper);
            let mut it = iter(e, lower, upper, None);
            let ctx = format!(
                "{layout}: bounds [{}, {})",
                lower.map_or("unbounded".into(), show),
                upper.map_or("unbounded".into(), show)
            );
            for target in PROBES {
                for first in [
                    Step::Seek(target.to_vec()),
                    Step::SeekForPrev(target.to_vec()),
                ] {
                    for then in [Step::Next, Step::Prev] {
                        let mut c = Cursor::new(&entries);
                        let steps = [first.clone(), then.clone(), then.clone()];
                        walk(&mut it, &mut c, &steps, &ctx);
                    }
                }
            }
            for first in [Step::First, Step::Last] {
                for then in [Step::Next, Step::Prev] {
                    let mut c = Cursor::new(&entries);
                    walk(&mut it, &mut c, &[first.clone(), then.clone(), then], &ctx);
                }
            }
        }
    });
}

/// `next` after `prev` and `prev` after `next` (and after seeks) move to the neighbouring key,
/// as a `BTreeMap` cursor would, including at both ends of the range: scripted sequences and
/// seeded random walks under several bounds.
pub fn check_direction_switching<F: EngineFactory>(f: &F, dir: &Path) {
    use Step::*;
    let scripts: Vec<Vec<Step>> = vec![
        vec![
            First, Next, Next, Prev, Prev, Prev, First, Next, Prev, Next, Next,
        ],
        vec![Last, Prev, Next, Next, Last, Prev, Prev, Next, Prev],
        vec![Seek(b"c".to_vec()), Prev, Next, Next, Prev, Prev, Prev],
        vec![
            SeekForPrev(b"e".to_vec()),
            Next,
            Prev,
            Prev,
            Next,
            Next,
            Next,
        ],
        vec![Seek(b"d".to_vec()), Next, Prev, Next, Prev, Prev, Next],
        vec![SeekForPrev(b"d\x00".to_vec()), Prev, Next, Next, Prev],
        vec![
            First, Next, Next, Next, Next, Next, Prev, Prev, Next, Prev, Prev, Prev, Prev, Next,
        ],
    ];
    let bounds: [Bounds; 6] = [
        (None, None),
        (Some(b"c"), Some(b"g")),
        (Some(b""), Some(b"\xff")),
        (Some(b"d"), Some(b"d\x00\x00")),
        (Some(b"d\x00"), None),
        (None, Some(b"d\x00")),
    ];
    let mut rng = StdRng::seed_from_u64(0x5eed);
    with_layouts(f, dir, |e, x, layout| {
        for (lower, upper) in bounds {
            let entries = x.range(lower, upper);
            let ctx = format!(
                "{layout}: bounds [{}, {})",
                lower.map_or("unbounded".into(), show),
                upper.map_or("unbounded".into(), show)
            );
            for script in &scripts {
                let mut it = iter(e, lower, upper, None);
                let mut c = Cursor::new(&entries);
                walk(&mut it, &mut c, script, &ctx);
            }
            let steps: Vec<Step> = (0..300)
                .map(|_| match rng.gen_range(0..20) {
                    0 => First,
                    1 => Last,
                    2 => Seek(PROBES[rng.gen_range(0..PROBES.len())].to_vec()),
                    3 => SeekForPrev(PROBES[rng.gen_range(0..PROBES.len())].to_vec()),
                    n if n < 12 => Next,
                    _ => Prev,
                })
                .collect();
            let mut it = iter(e, lower, upper, None);
            let mut c = Cursor::new(&entries);
            walk(&mut it, &mut c, &steps, &format!("{ctx}: random walk"));
        }
    });
}

/// One iterator move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    First,
    Last,
    Seek(Vec<u8>),
    SeekForPrev(Vec<u8>),
    /// Skipped when the iterator is not valid (the contract requires `valid()`).
    Next,
    /// Skipped when the iterator is not valid (the contract requires `valid()`).
    Prev,
}

/// The reference: a position in the sorted entries of the view within bounds.
pub(crate) struct Cursor<'a> {
    entries: &'a [Kv],
    pos: Option<usize>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(entries: &'a [Kv]) -> Self {
        Cursor { entries, pos: None }
    }

    pub(crate) fn valid(&self) -> bool {
        self.pos.is_some()
    }

    pub(crate) fn current(&self) -> Option<&'a Kv> {
        self.pos.map(|i| &self.entries[i])
    }

    pub(crate) fn apply(&mut self, step: &Step) {
        let n = self.entries.len();
        self.pos = match step {
            Step::First => (n > 0).then_some(0),
            Step::Last => n.checked_sub(1),
            Step::Seek(t) => {
                let i = self.entries.partition_point(|(k, _)| k < t);
                (i < n).then_some(i)
            }
            Step::SeekForPrev(t) => self.entries.partition_point(|(k, _)| k <= t).checked_sub(1),
            Step::Next => self.pos.and_then(|i| (i + 1 < n).then_some(i + 1)),
            Step::Prev => self.pos.and_then(|i| i.checked_sub(1)),
        };
    }
}

/// Applies `steps` to the engine iterator and the reference cursor, comparing after each.
/// `Next`/`Prev` are skipped while the reference is invalid.
#[track_caller]
pub(crate) fn walk<I: EngineIterator>(it: &mut I, c: &mut Cursor<'_>, steps: &[Step], ctx: &str) {
    for (n, step) in steps.iter().enumerate() {
        if matches!(step, Step::Next | Step::Prev) && !c.valid() {
            continue;
        }
        match step {
            Step::First => it.seek_to_first(),
            Step::Last => it.seek_to_last(),
            Step::Seek(t) => it.seek(t),
            Step::SeekForPrev(t) => it.seek_for_prev(t),
            Step::Next => it.next(),
            Step::Prev => it.prev(),
        }
        c.apply(step);
        let got = it.valid().then(|| (it.key(), it.value()));
        let want = c.current().map(|(k, v)| (k.as_slice(), v.as_slice()));
        if got != want {
            let fmt = |kv: Option<(&[u8], &[u8])>| {
                kv.map_or("invalid".to_string(), |(k, v)| {
                    format!("{} => {}", show(k), show(v))
                })
            };
            let history: Vec<String> = steps[..=n].iter().map(step_text).collect();
            panic!(
                "{ctx}: after [{}] the iterator is at {}, expected {}",
                history.join(", "),
                fmt(got),
                fmt(want)
            );
        }
        assert_status_ok(it, ctx);
    }
}

fn step_text(s: &Step) -> String {
    match s {
        Step::First => "seek_to_first".into(),
        Step::Last => "seek_to_last".into(),
        Step::Seek(t) => format!("seek({})", show(t)),
        Step::SeekForPrev(t) => format!("seek_for_prev({})", show(t)),
        Step::Next => "next".into(),
        Step::Prev => "prev".into(),
    }
}
