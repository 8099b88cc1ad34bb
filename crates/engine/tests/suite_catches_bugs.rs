//! The suite must fail engines that break the contract. Each test plants one bug in a wrapper
//! around `ModelEngine` and checks that the check aimed at it fails (and passes without the
//! bug, so the failure is the bug's doing).

use std::path::Path;

use rialto_engine::conformance::{
    checks, proptest_ops_against_model, random_ops_against_model, run_check, Check, EngineFactory,
};
use rialto_engine::model::{ModelEngine, ModelFactory, ModelIterator, ModelSnapshot};
use rialto_engine::{
    BatchOp, Bytes, EngineIterator, EngineStats, IterOptions, KvEngine, Result, WriteBatch,
    WriteOptions,
};

/// The bug a [`Buggy`] engine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bug {
    None,
    /// Iterators ignore their upper bound.
    IgnoreUpperBound,
    /// `prev` right after `next` moves back two keys.
    PrevAfterNextSkips,
    /// `seek_for_prev(k)` skips `k` itself.
    SeekForPrevExclusive,
    /// `get_at` reads the latest state.
    SnapshotReadsLatest,
    /// The first operation on a key in a batch wins.
    FirstOpWins,
    /// Reopen loses everything.
    ForgetOnReopen,
    /// A key holding the empty value reads as missing.
    EmptyValueIsMissing,
    /// An invalid batch still writes its valid operations.
    PartialInvalidBatch,
    /// Iterators read the latest state at every move.
    IteratorSeesLaterWrites,
}

struct Buggy {
    inner: ModelEngine,
    bug: Bug,
}

struct BuggyFactory {
    models: ModelFactory,
    bug: Bug,
}

impl BuggyFactory {
    fn new(bug: Bug) -> Self {
        BuggyFactory {
            models: ModelFactory::new(),
            bug,
        }
    }
}

impl EngineFactory for BuggyFactory {
    type Engine = Buggy;
    fn open(&self, dir: &Path) -> Result<Buggy> {
        let inner = if self.bug == Bug::ForgetOnReopen {
            ModelEngine::new()
        } else {
            self.models.open(dir)?
        };
        Ok(Buggy {
            inner,
            bug: self.bug,
        })
    }
}

impl Buggy {
    fn hide_empty(&self, v: Option<Bytes>) -> Option<Bytes> {
        v.filter(|v| !(self.bug == Bug::EmptyValueIsMissing && v.is_empty()))
    }
}

impl KvEngine for Buggy {
    type Snapshot = ModelSnapshot;
    type Iter = BuggyIter;

    fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        Ok(self.hide_empty(self.inner.get(key)?))
    }

    fn get_at(&self, snapshot: &ModelSnapshot, key: &[u8]) -> Result<Option<Bytes>> {
        if self.bug == Bug::SnapshotReadsLatest {
            return self.get(key);
        }
        Ok(self.hide_empty(self.inner.get_at(snapshot, key)?))
    }

    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        match self.bug {
            Bug::FirstOpWins => {
                let ops: Vec<BatchOp<'_>> = batch.iter().collect();
                let mut reversed = WriteBatch::new();
                for op in ops.into_iter().rev() {
                    match op {
                        BatchOp::Put(k, v) => reversed.put(k, v),
                        BatchOp::Delete(k) => reversed.delete(k),
                    }
                }
                self.inner.write(reversed, opts)
            }
            Bug::PartialInvalidBatch if batch.validate().is_err() => {
                for op in batch.iter() {
                    let mut one = WriteBatch::new();
                    match op {
                        BatchOp::Put(k, v) => one.put(k, v),
                        BatchOp::Delete(k) => one.delete(k),
                    }
                    let _ = self.inner.write(one, opts);
                }
                batch.validate()
            }
            _ => self.inner.write(batch, opts),
        }
    }

    fn snapshot(&self) -> ModelSnapshot {
        self.inner.snapshot()
    }

    fn iter(&self, mut opts: IterOptions<ModelSnapshot>) -> Result<BuggyIter> {
        if self.bug == Bug::IgnoreUpperBound {
            opts.upper = None;
        }
        let (lower, upper) = (opts.lower.clone(), opts.upper.clone());
        Ok(BuggyIter {
            it: self.inner.iter(opts)?,
            bug: self.bug,
            after_next: false,
            engine: self.inner.clone(),
            lower,
            upper,
        })
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(start, end)
    }

    fn stats(&self) -> EngineStats {
        self.inner.stats()
    }
}

struct BuggyIter {
    it: ModelIterator,
    bug: Bug,
    after_next: bool,
    engine: ModelEngine,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

impl BuggyIter {
    /// For `IteratorSeesLaterWrites`: a new iterator on the latest state.
    fn refresh(&mut self) {
        if self.bug == Bug::IteratorSeesLaterWrites {
            self.it = self
                .engine
                .iter(IterOptions {
                    lower: self.lower.clone(),
                    upper: self.upper.clone(),
                    snapshot: None,
                })
                .expect("model iter");
        }
    }
}

impl EngineIterator for BuggyIter {
    fn seek_to_first(&mut self) {
        self.refresh();
        self.after_next = false;
        self.it.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.refresh();
        self.after_next = false;
        self.it.seek_to_last();
    }
    fn seek(&mut self, key: &[u8]) {
        self.refresh();
        self.after_next = false;
        self.it.seek(key);
    }
    fn seek_for_prev(&mut self, key: &[u8]) {
        self.refresh();
        self.after_next = false;
        self.it.seek_for_prev(key);
        if self.bug == Bug::SeekForPrevExclusive && self.it.valid() && self.it.key() == key {
            self.it.prev();
        }
    }
    fn next(&mut self) {
        let k = self.it.key().to_vec();
        self.refresh();
        self.it.seek(&k);
        if self.it.valid() && self.it.key() == k.as_slice() {
            self.it.next();
        }
        self.after_next = true;
    }
    fn prev(&mut self) {
        let k = self.it.key().to_vec();
        self.refresh();
        self.it.seek_for_prev(&k);
        if self.it.valid() && self.it.key() == k.as_slice() {
            self.it.prev();
        }
        if self.bug == Bug::PrevAfterNextSkips && self.after_next && self.it.valid() {
            self.it.prev();
        }
        self.after_next = false;
    }
    fn valid(&self) -> bool {
        self.it.valid()
    }
    fn key(&self) -> &[u8] {
        self.it.key()
    }
    fn value(&self) -> &[u8] {
        self.it.value()
    }
    fn status(&self) -> Result<()> {
        self.it.status()
    }
}

fn check_named(name: &str) -> Check<BuggyFactory> {
    checks::<BuggyFactory>()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check named {name}"))
}

/// `name` passes without the bug and fails with it; returns the failure message.
fn caught(bug: Bug, name: &str) -> String {
    let check = check_named(name);
    if let Err(e) = run_check(&BuggyFactory::new(Bug::None), check) {
        panic!("{name} fails without any bug: {e}");
    }
    match run_check(&BuggyFactory::new(bug), check) {
        Ok(()) => panic!("{name} did not catch {bug:?}"),
        Err(e) => {
            assert!(e.contains(name), "the failure must name the check: {e}");
            e
        }
    }
}

#[test]
fn the_wrapper_without_a_bug_passes_the_cheap_checks() {
    let f = BuggyFactory::new(Bug::None);
    for c in checks::<BuggyFactory>() {
        if c.name != "check_oversized_rejected" {
            run_check(&f, c).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn catches_ignored_upper_bound() {
    caught(Bug::IgnoreUpperBound, "check_iterator_bounds");
}

#[test]
fn catches_wrong_direction_switch() {
    caught(Bug::PrevAfterNextSkips, "check_direction_switching");
}

#[test]
fn catches_exclusive_seek_for_prev() {
    caught(Bug::SeekForPrevExclusive, "check_iterator_seek");
}

#[test]
fn catches_snapshot_reading_latest() {
    caught(Bug::SnapshotReadsLatest, "check_snapshot_isolation");
    caught(Bug::SnapshotReadsLatest, "check_multiple_snapshots");
}

#[test]
fn catches_first_op_wins() {
    caught(Bug::FirstOpWins, "check_batch_last_op_wins");
}

#[test]
fn catches_lost_data_on_reopen() {
    caught(Bug::ForgetOnReopen, "check_reopen_without_flush");
    caught(Bug::ForgetOnReopen, "check_reopen_after_flush");
    caught(Bug::ForgetOnReopen, "check_reopen_after_compaction");
}

#[test]
fn catches_empty_value_read_as_missing() {
    caught(Bug::EmptyValueIsMissing, "check_empty_key_and_value");
}

#[test]
fn catches_partially_applied_invalid_batch() {
    caught(Bug::PartialInvalidBatch, "check_oversized_rejected");
}

#[test]
fn catches_iterator_seeing_later_writes() {
    // (check_concurrent_iterators catches it too, but only when the threads interleave so.)
    caught(Bug::IteratorSeesLaterWrites, "check_iterator_sees_own_view");
}

#[test]
fn random_ops_catch_bugs_and_name_seed_and_op() {
    for bug in [
        Bug::IgnoreUpperBound,
        Bug::PrevAfterNextSkips,
        Bug::SeekForPrevExclusive,
        Bug::SnapshotReadsLatest,
        Bug::FirstOpWins,
        Bug::ForgetOnReopen,
        Bug::EmptyValueIsMissing,
        Bug::IteratorSeesLaterWrites,
    ] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let f = BuggyFactory::new(bug);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            random_ops_against_model(&f, &tmp.path().join("db"), 7, 500)
        }));
        let payload = result.expect_err(&format!("random ops did not catch {bug:?}"));
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            msg.contains("seed = 7") && msg.contains("op #"),
            "the failure must name the seed and the op: {msg}"
        );
    }
}

#[test]
fn proptest_shrinks_a_failure_to_a_short_sequence() {
    let f = BuggyFactory::new(Bug::SeekForPrevExclusive);
    let tmp = tempfile::tempdir().expect("tempdir");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        proptest_ops_against_model(&f, tmp.path(), 64, 80)
    }));
    let payload = result.expect_err("proptest did not catch the bug");
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(msg.contains("minimal failing sequence"), "{msg}");
    // The bug needs one write and one seek_for_prev: shrinking must get close to that.
    let ops = msg.lines().filter(|l| l.starts_with("  #")).count();
    assert!((1..=4).contains(&ops), "shrunk to {ops} ops:\n{msg}");
}
