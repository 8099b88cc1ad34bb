//! Conformance suite: behaviour every [`KvEngine`] must show.
//!
//! Compiled with the `conformance` feature (on by default).
//!
//! Engines call [`run_all`] from a test with an [`EngineFactory`] that opens a fresh or
//! existing engine in a directory:
//!
//! ```ignore
//! struct Factory;
//! impl rialto_engine::conformance::EngineFactory for Factory {
//!     type Engine = MyEngine;
//!     fn open(&self, dir: &std::path::Path) -> rialto_engine::Result<MyEngine> {
//!         MyEngine::open(dir, Options::small_for_tests())
//!     }
//! }
//! #[test]
//! fn conformance() {
//!     rialto_engine::conformance::run_all(&Factory);
//! }
//! ```
//!
//! Every check is also a public `check_*` function (listed by [`checks`]) so that an engine can
//! run one at a time, e.g. one `#[test]` each, or call the heavy ones with its own sizes
//! ([`check_large_value_with`], [`check_max_size_values`], [`check_concurrent_writes_and_reads_with`],
//! [`random_ops_against_model`], [`proptest_ops_against_model`]).
//!
//! # The contract checked here
//!
//! Beyond the doc comments of [`KvEngine`] and
//! [`EngineIterator`], the suite pins down:
//!
//! * Keys order bytewise, unsigned (`0x80 > 0x7f`), a key sorting after its prefixes. The empty
//!   key and the empty value are ordinary: `get` of a key holding an empty value is
//!   `Some(empty)`, never `None`.
//! * Bounds are strict: an iterator never shows a key outside `[lower, upper)`, whatever it was
//!   asked. `seek(k)` shows the first key `>= max(k, lower)` below `upper`;
//!   `seek_for_prev(k)` the last key `<= k` that is `< upper` and `>= lower`. `lower >= upper`
//!   is an empty range, not an error.
//! * `next`/`prev` move to the neighbouring key of the view whatever the previous direction
//!   was, as a cursor over a `BTreeMap` would; moving off either end makes the iterator
//!   invalid, and any `seek*` makes it usable again.
//! * An iterator and a snapshot see the state committed when they were created; no later
//!   write, flush, compaction or snapshot release changes what they show.
//! * A batch is atomic: no reader sees part of it; operations apply in order, so a later
//!   operation on a key wins. An invalid batch (key over [`MAX_KEY_LEN`](crate::MAX_KEY_LEN),
//!   value over [`MAX_VALUE_LEN`](crate::MAX_VALUE_LEN)) fails with
//!   [`Error::InvalidArgument`](crate::Error::InvalidArgument) and writes nothing, not even
//!   after a reopen.
//! * Everything acknowledged before the engine is dropped is there after it is reopened,
//!   whether or not it was flushed or compacted.
//!
//! # Who checks the checks
//!
//! [`crate::model::ModelEngine`], the reference engine, passes every check
//! (`tests/model_conformance.rs`), which shows the suite asks for nothing beyond the contract;
//! `tests/suite_catches_bugs.rs` plants one bug at a time in a wrapper around it and shows the
//! check aimed at each bug fails.
//!
//! # Directories
//!
//! [`run_all`] gives every check a directory that does not exist yet, inside a fresh temporary
//! directory: the factory must create it. Checks that reopen call the factory again on the
//! same directory after dropping the previous engine (and every snapshot and iterator of it).

#![cfg(feature = "conformance")]

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use crate::{Bytes, EngineIterator, IterOptions, KvEngine, Result, WriteBatch, WriteOptions};

mod basic;
mod concurrency;
mod iter;
mod limits;
mod persist;
mod random;
mod snapshot;

pub use basic::{
    check_batch_is_atomic, check_batch_last_op_wins, check_binary_and_prefix_keys,
    check_delete_missing_key, check_empty_engine, check_empty_key_and_value,
    check_put_get_overwrite_delete,
};
pub use concurrency::{
    check_concurrent_iterators, check_concurrent_iterators_with, check_concurrent_writes_and_reads,
    check_concurrent_writes_and_reads_with, ConcurrencyParams,
};
pub use iter::{check_direction_switching, check_iterator_bounds, check_iterator_seek};
pub use limits::{
    check_large_value, check_large_value_with, check_max_size_values, check_oversized_rejected,
    check_stats_sanity, LARGE_VALUE_LEN,
};
pub use persist::{
    check_reopen_after_compaction, check_reopen_after_flush, check_reopen_without_flush,
};
pub use random::{
    check_proptest_ops, check_random_ops, generate_ops, op_from_seed, proptest_ops_against_model,
    random_ops_against_model, run_ops_against_model, BatchEntry, KeySpec, Move, Op, ValueSpec,
    MAX_LIVE, RANDOM_OPS_PER_SEED, RANDOM_SEEDS,
};
pub use snapshot::{
    check_iterator_sees_own_view, check_multiple_snapshots, check_snapshot_isolation,
};

/// Opens engines for the suite.
pub trait EngineFactory {
    /// The engine under test.
    type Engine: KvEngine;
    /// Opens (creating if needed) the engine stored in `dir`. Called again on the same dir to
    /// reopen after the previous engine was dropped.
    fn open(&self, dir: &Path) -> Result<Self::Engine>;
}

/// One named check of the suite.
pub struct Check<F: EngineFactory> {
    /// The check function's name, used in failure messages, e.g. `"check_iterator_bounds"`.
    pub name: &'static str,
    /// Runs the check in `dir` (a directory the check may own entirely). Panics on failure.
    pub run: fn(&F, &Path),
}

impl<F: EngineFactory> Clone for Check<F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: EngineFactory> Copy for Check<F> {}

impl<F: EngineFactory> std::fmt::Debug for Check<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check").field("name", &self.name).finish()
    }
}

/// Every check [`run_all`] runs, in order: cheap functional checks first, then persistence,
/// limits, concurrency and the model-based random runs. [`check_max_size_values`] is not
/// listed: it needs a size from the caller (and 512 MiB of memory at the real limit).
pub fn checks<F: EngineFactory>() -> Vec<Check<F>> {
    macro_rules! list {
        ($($name:ident),* $(,)?) => {
            vec![$(Check { name: stringify!($name), run: $name::<F> }),*]
        };
    }
    list![
        check_empty_engine,
        check_put_get_overwrite_delete,
        check_delete_missing_key,
        check_empty_key_and_value,
        check_binary_and_prefix_keys,
        check_batch_last_op_wins,
        check_batch_is_atomic,
        check_iterator_bounds,
        check_iterator_seek,
        check_direction_switching,
        check_snapshot_isolation,
        check_multiple_snapshots,
        check_iterator_sees_own_view,
        check_reopen_without_flush,
        check_reopen_after_flush,
        check_reopen_after_compaction,
        check_large_value,
        check_oversized_rejected,
        check_stats_sanity,
        check_concurrent_writes_and_reads,
        check_concurrent_iterators,
        check_random_ops,
        check_proptest_ops,
    ]
}

/// Runs every check of [`checks`], each in a fresh temporary directory.
///
/// Every check runs even if an earlier one failed, so one run reports every broken behaviour;
/// then this panics naming each failed check with its message.
///
/// # Panics
/// If any check fails, or a temporary directory cannot be created.
pub fn run_all<F: EngineFactory>(factory: &F) {
    let failures: Vec<String> = checks::<F>()
        .into_iter()
        .filter_map(|c| run_check(factory, c).err())
        .collect();
    if !failures.is_empty() {
        panic!(
            "{} conformance check(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

/// Runs one check in a fresh temporary directory; `Err` names the check and says why it
/// failed.
pub fn run_check<F: EngineFactory>(
    factory: &F,
    check: Check<F>,
) -> std::result::Result<(), String> {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("rialto-conformance-{}-", check.name))
        .tempdir()
        .map_err(|e| {
            format!(
                "conformance check `{}`: cannot create a temporary directory: {e}",
                check.name
            )
        })?;
    let dir = tmp.path().join("db");
    catch_unwind(AssertUnwindSafe(|| (check.run)(factory, &dir))).map_err(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(panic without a message)");
        format!("conformance check `{}` failed: {msg}", check.name)
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the checks. They panic with the operation and the engine's error, and
// report the caller's line (`#[track_caller]`), so a failure points at the step that broke.
// ---------------------------------------------------------------------------------------------

/// A key and its value, as collected from an iterator.
pub(crate) type Kv = (Vec<u8>, Vec<u8>);

/// Snapshot type of a factory's engine.
pub(crate) type SnapOf<F> = <<F as EngineFactory>::Engine as KvEngine>::Snapshot;

#[track_caller]
pub(crate) fn open<F: EngineFactory>(f: &F, dir: &Path) -> F::Engine {
    match f.open(dir) {
        Ok(e) => e,
        Err(e) => panic!("opening the engine in {} failed: {e}", dir.display()),
    }
}

/// Drops `engine` and opens the same directory again.
#[track_caller]
pub(crate) fn reopen<F: EngineFactory>(f: &F, dir: &Path, engine: F::Engine) -> F::Engine {
    drop(engine);
    open(f, dir)
}

#[track_caller]
pub(crate) fn put<E: KvEngine>(e: &E, key: &[u8], value: &[u8]) {
    if let Err(err) = e.put(key, value, WriteOptions::default()) {
        panic!("put({}) failed: {err}", show(key));
    }
}

#[track_caller]
pub(crate) fn delete<E: KvEngine>(e: &E, key: &[u8]) {
    if let Err(err) = e.delete(key, WriteOptions::default()) {
        panic!("delete({}) failed: {err}", show(key));
    }
}

#[track_caller]
pub(crate) fn write<E: KvEngine>(e: &E, batch: WriteBatch) {
    let n = batch.count();
    if let Err(err) = e.write(batch, WriteOptions::default()) {
        panic!("write of a batch of {n} ops failed: {err}");
    }
}

#[track_caller]
pub(crate) fn get<E: KvEngine>(e: &E, key: &[u8]) -> Option<Vec<u8>> {
    match e.get(key) {
        Ok(v) => v.map(|b| b.to_vec()),
        Err(err) => panic!("get({}) failed: {err}", show(key)),
    }
}

#[track_caller]
pub(crate) fn get_at<E: KvEngine>(e: &E, snap: &E::Snapshot, key: &[u8]) -> Option<Vec<u8>> {
    match e.get_at(snap, key) {
        Ok(v) => v.map(|b: Bytes| b.to_vec()),
        Err(err) => panic!("get_at({}) failed: {err}", show(key)),
    }
}

#[track_caller]
pub(crate) fn flush<E: KvEngine>(e: &E) {
    if let Err(err) = e.flush() {
        panic!("flush failed: {err}");
    }
}

#[track_caller]
pub(crate) fn compact<E: KvEngine>(e: &E, start: Option<&[u8]>, end: Option<&[u8]>) {
    if let Err(err) = e.compact_range(start, end) {
        panic!(
            "compact_range({:?}, {:?}) failed: {err}",
            start.map(show),
            end.map(show)
        );
    }
}

/// An iterator over `[lower, upper)` of the latest state, or of `snap`.
#[track_caller]
pub(crate) fn iter<E: KvEngine>(
    e: &E,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
    snap: Option<&E::Snapshot>,
) -> E::Iter {
    let opts = IterOptions {
        lower: lower.map(<[u8]>::to_vec),
        upper: upper.map(<[u8]>::to_vec),
        snapshot: snap.cloned(),
    };
    match e.iter(opts) {
        Ok(it) => it,
        Err(err) => panic!(
            "iter(lower {:?}, upper {:?}) failed: {err}",
            lower.map(show),
            upper.map(show)
        ),
    }
}

/// Every entry from `seek_to_first` on, following `next`.
#[track_caller]
pub(crate) fn collect_forward<I: EngineIterator>(it: &mut I) -> Vec<Kv> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    assert_status_ok(it, "forward scan");
    out
}

/// Every entry from `seek_to_last` on, following `prev` (so in descending key order).
#[track_caller]
pub(crate) fn collect_backward<I: EngineIterator>(it: &mut I) -> Vec<Kv> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    assert_status_ok(it, "backward scan");
    out
}

#[track_caller]
pub(crate) fn assert_status_ok<I: EngineIterator>(it: &I, ctx: &str) {
    if let Err(err) = it.status() {
        panic!("{ctx}: iterator status is an error: {err}");
    }
}

/// Panics unless `get(key)` returns `want`, showing both readably.
#[track_caller]
pub(crate) fn assert_get<E: KvEngine>(
    e: &E,
    key: &[u8],
    want: Option<&[u8]>,
    ctx: impl std::fmt::Display,
) {
    let got = get(e, key);
    if got.as_deref() != want {
        panic!(
            "{ctx}: get({}) returned {}, expected {}",
            show(key),
            show_opt(got.as_deref()),
            show_opt(want)
        );
    }
}

/// Panics unless `got == want`, showing both readably.
#[track_caller]
pub(crate) fn assert_value(got: Option<&[u8]>, want: Option<&[u8]>, ctx: impl std::fmt::Display) {
    if got != want {
        panic!("{ctx}: got {}, expected {}", show_opt(got), show_opt(want));
    }
}

/// Keys as readable text: printable ASCII as is, other bytes escaped, long keys cut.
pub(crate) fn show(bytes: &[u8]) -> String {
    const SHOWN: usize = 48;
    if bytes.len() <= SHOWN {
        format!("\"{}\"", bytes.escape_ascii())
    } else {
        format!(
            "\"{}\"...({} bytes)",
            bytes[..SHOWN].escape_ascii(),
            bytes.len()
        )
    }
}

/// An optional value as readable text.
pub(crate) fn show_opt(v: Option<&[u8]>) -> String {
    v.map_or_else(|| "None".to_string(), |v| format!("Some({})", show(v)))
}

/// Panics, describing the first difference, unless `actual == expected`.
#[track_caller]
pub(crate) fn assert_entries(actual: &[Kv], expected: &[Kv], ctx: &str) {
    if let Some(diff) = entries_diff(actual, expected) {
        panic!("{ctx}: {diff}");
    }
}

/// `None` when equal, else a description of the first difference.
pub(crate) fn entries_diff(actual: &[Kv], expected: &[Kv]) -> Option<String> {
    if actual == expected {
        return None;
    }
    let at = actual
        .iter()
        .zip(expected)
        .position(|(a, e)| a != e)
        .unwrap_or(actual.len().min(expected.len()));
    let fmt = |kv: Option<&Kv>| {
        kv.map_or_else(
            || "end".to_string(),
            |(k, v)| format!("{} => {}", show(k), show(v)),
        )
    };
    Some(format!(
        "got {} entries, expected {}; first difference at entry {at}: got {}, expected {}",
        actual.len(),
        expected.len(),
        fmt(actual.get(at)),
        fmt(expected.get(at))
    ))
}

/// Expected content of an engine, maintained by a check alongside its writes.
///
/// `touched` remembers every key ever written or deleted so that [`assert_view`] also reads
/// the deleted ones back with `get` (a scan alone would not notice a stale point read).
#[derive(Debug, Clone, Default)]
pub(crate) struct Expected {
    pub map: BTreeMap<Vec<u8>, Vec<u8>>,
    pub touched: BTreeSet<Vec<u8>>,
}

impl Expected {
    pub fn put(&mut self, k: &[u8], v: &[u8]) {
        self.touched.insert(k.to_vec());
        self.map.insert(k.to_vec(), v.to_vec());
    }

    pub fn delete(&mut self, k: &[u8]) {
        self.touched.insert(k.to_vec());
        self.map.remove(k);
    }

    /// Entries within `[lower, upper)`, in order; empty when `lower >= upper`.
    pub fn range(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Vec<Kv> {
        self.map
            .iter()
            .filter(|(k, _)| {
                lower.is_none_or(|l| k.as_slice() >= l) && upper.is_none_or(|u| k.as_slice() < u)
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn all(&self) -> Vec<Kv> {
        self.range(None, None)
    }
}

/// Asserts that the latest state (`snap == None`) or `snap` shows exactly `expected`: full
/// forward and backward scans, and a point read of every key `expected` ever touched.
#[track_caller]
pub(crate) fn assert_view<E: KvEngine>(
    e: &E,
    snap: Option<&E::Snapshot>,
    expected: &Expected,
    ctx: &str,
) {
    let all = expected.all();
    let mut it = iter(e, None, None, snap);
    assert_entries(
        &collect_forward(&mut it),
        &all,
        &format!("{ctx}: forward scan"),
    );
    let mut rev = all.clone();
    rev.reverse();
    assert_entries(
        &collect_backward(&mut it),
        &rev,
        &format!("{ctx}: backward scan"),
    );
    for k in &expected.touched {
        let got = match snap {
            Some(s) => get_at(e, s, k),
            None => get(e, k),
        };
        let want = expected.map.get(k);
        if got.as_ref() != want {
            panic!(
                "{ctx}: {}({}) returned {}, expected {}",
                if snap.is_some() { "get_at" } else { "get" },
                show(k),
                show_opt(got.as_deref()),
                show_opt(want.map(Vec::as_slice))
            );
        }
    }
}

/// Deterministic filler bytes (xorshift), so values are not runs of one byte that a buggy
/// engine could return by accident, and checks need no stored copy to compare against.
pub(crate) fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Sets a flag when dropped, so that a worker thread that panics still tells the others to
/// stop instead of leaving them looping forever.
pub(crate) struct SetOnDrop<'a>(pub &'a std::sync::atomic::AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Joins every thread, then re-raises the first panic with its own message (a scope left to
/// join by itself would replace it by "a scoped thread panicked").
pub(crate) fn join_all<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(handles.len());
    let mut first_panic = None;
    for h in handles {
        match h.join() {
            Ok(v) => out.push(v),
            Err(p) => {
                first_panic.get_or_insert(p);
            }
        }
    }
    if let Some(p) = first_panic {
        std::panic::resume_unwind(p);
    }
    out
}
