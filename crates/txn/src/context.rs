//! What a transaction sees and does while the merger executes it.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::ops::Bound;

use rialto_engine::{BatchMark, BatchOp, Bytes, PipelinedCommit, Result, WriteBatch};

use crate::observer::WriteObserver;

/// The group being built: the merged batch of the transactions executed so far and of the
/// one running now, and (built on the first read) an index of where the latest operation on
/// each key lies in it, so that a transaction reads its own writes and those of the
/// transactions before it in the group. The running transaction stages its writes at the end
/// of the batch, after `committed`: they join the group by moving the mark, or are cut off.
pub(crate) struct Group {
    pub(crate) batch: WriteBatch,
    /// Where the operations of the transactions that committed end.
    committed: BatchMark,
    /// Hash of a key → offset in `batch` of the latest operation on a key with that hash.
    /// Built lazily (a group nobody reads never pays for it), then kept up to date as writes
    /// are staged, and dropped when writes are cut. It copies neither keys nor values; a
    /// lookup checks the key at the offset, and on a hash collision scans.
    overlay: Option<HashMap<u64, usize, BuildHasherDefault<Prehashed>>>,
    /// Key → offset in `batch` of the latest operation on it, in key order: built on the first
    /// range read of the group (a scan of the batch for each range read made a pipeline of
    /// range-reading commands quadratic in the group's size), then kept up to date as writes
    /// are staged, and dropped when writes are cut, as `overlay`.
    ordered: Option<BTreeMap<Vec<u8>, usize>>,
}

/// The hasher of keys that are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// Room a group's batch starts with: a group of small writes never reallocates it.
const GROUP_BATCH_BYTES: usize = 16 << 10;

impl Group {
    pub(crate) fn new() -> Self {
        let batch = WriteBatch::with_capacity(GROUP_BATCH_BYTES);
        Group {
            committed: batch.mark(),
            batch,
            overlay: None,
            ordered: None,
        }
    }

    /// The latest operation on `key` in the batch: `Some(None)` a deletion, `None` none.
    fn lookup(&mut self, key: &[u8]) -> Option<Option<Bytes>> {
        if self.batch.is_empty() {
            return None;
        }
        let batch = &self.batch;
        let overlay = self.overlay.get_or_insert_with(|| {
            let mut m = HashMap::with_capacity_and_hasher(64, Default::default());
            for (at, op) in batch.iter_offsets() {
                m.insert(key_hash(op_key(op)), at);
            }
            m
        });
        let at = *overlay.get(&key_hash(key))?;
        match batch.op_at(at) {
            Some(op) if op_key(op) == key => Some(op_value(op)),
            // Another key with the same hash: the latest operation on this one, if any.
            _ => batch
                .iter()
                .filter(|op| op_key(*op) == key)
                .last()
                .map(op_value),
        }
    }

    /// Notes the operation on `key` staged at `at` in the index, if there is one.
    fn staged_at(&mut self, key: &[u8], at: usize) {
        if let Some(m) = self.overlay.as_mut() {
            m.insert(key_hash(key), at);
        }
        if let Some(o) = self.ordered.as_mut() {
            o.insert(key.to_vec(), at);
        }
    }

    /// Whether staged writes must be noted in an index.
    fn indexed(&self) -> bool {
        self.overlay.is_some() || self.ordered.is_some()
    }

    /// Builds the ordered index of the batch if there is none yet.
    fn build_ordered(&mut self) {
        let batch = &self.batch;
        self.ordered.get_or_insert_with(|| {
            let mut m = BTreeMap::new();
            for (at, op) in batch.iter_offsets() {
                m.insert(op_key(op).to_vec(), at);
            }
            m
        });
    }

    /// What the group wrote in `[lower, upper)`, in key order: each key and its value, or
    /// `None` for a deletion, a value copied only when its item is taken (a pop reads one
    /// entry of a range the group may have written thousands of). Requires
    /// [`Group::build_ordered`].
    fn written_in<'g>(
        &'g self,
        lower: &[u8],
        upper: &[u8],
    ) -> impl DoubleEndedIterator<Item = (&'g [u8], Option<Bytes>)> + 'g {
        let range = match self.ordered.as_ref() {
            Some(o) if lower < upper => {
                Some(o.range::<[u8], _>((Bound::Included(lower), Bound::Excluded(upper))))
            }
            _ => None,
        };
        range
            .into_iter()
            .flatten()
            .filter_map(move |(k, &at)| self.batch.op_at(at).map(|op| (k.as_slice(), op_value(op))))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) {
        let at = self.batch.mark().offset();
        self.batch.put(key, value);
        self.staged_at(key, at);
    }

    fn put_parts(&mut self, key: &[u8], parts: &[&[u8]]) {
        let at = self.batch.mark().offset();
        self.batch.put_parts(key, parts);
        self.staged_at(key, at);
    }

    fn delete(&mut self, key: &[u8]) {
        let at = self.batch.mark().offset();
        self.batch.delete(key);
        self.staged_at(key, at);
    }

    /// Cuts the batch back to `mark`; the index, which may point past it, goes.
    fn rollback(&mut self, mark: BatchMark) {
        if mark.offset() < self.batch.mark().offset() {
            self.overlay = None;
            self.ordered = None;
        }
        self.batch.rollback(mark);
    }

    /// The running transaction's writes join the group.
    fn commit_staged(&mut self) {
        self.committed = self.batch.mark();
    }
}

fn op_key(op: BatchOp<'_>) -> &[u8] {
    match op {
        BatchOp::Put(k, _) | BatchOp::Delete(k) => k,
    }
}

fn op_value(op: BatchOp<'_>) -> Option<Bytes> {
    match op {
        BatchOp::Put(_, v) => Some(Bytes::copy_from_slice(v)),
        BatchOp::Delete(_) => None,
    }
}

/// A position in a transaction's staged writes (see [`TxnContext::savepoint`]).
#[derive(Debug, Clone, Copy)]
pub struct Savepoint(BatchMark, usize, usize);

/// Work a transaction leaves for when its group is durable: called with `None` then, or with
/// the error that kept the group from being durable.
pub type AfterCommit = Box<dyn FnOnce(Option<&rialto_engine::Error>) + Send>;

/// A transaction's view: reads see the newest state, including writes that are executed but
/// not yet durable (read-modify-write such as INCR builds on them); writes are staged and
/// join the group only if the transaction succeeds.
///
/// If the sync of an earlier group fails, this transaction fails too, so nothing built on
/// lost data is ever acknowledged.
pub struct TxnContext<'a, E: PipelinedCommit> {
    engine: &'a E,
    group: &'a mut Group,
    /// Set once the staged writes joined the group; otherwise dropping the context cuts them.
    committed: bool,
    observer: Option<&'a dyn WriteObserver>,
    /// The observer's mark when the transaction began.
    observed_from: usize,
    /// A read the observer needed failed: the transaction fails at its commit.
    observe_failed: Option<rialto_engine::Error>,
    /// What to run once its group is durable (see [`TxnContext::after_commit`]).
    after: Vec<AfterCommit>,
}

impl<E: PipelinedCommit> Drop for TxnContext<'_, E> {
    fn drop(&mut self) {
        if !self.committed {
            let mark = self.group.committed;
            self.group.rollback(mark);
            if let Some(o) = self.observer {
                o.cut(self.observed_from);
            }
        }
    }
}

impl<'a, E: PipelinedCommit> TxnContext<'a, E> {
    pub(crate) fn new(
        engine: &'a E,
        group: &'a mut Group,
        observer: Option<&'a dyn WriteObserver>,
    ) -> Self {
        let observed_from = observer.map_or(0, |o| o.mark());
        TxnContext {
            engine,
            group,
            committed: false,
            observer,
            observed_from,
            observe_failed: None,
            after: Vec::new(),
        }
    }

    /// Tells the observer, if it observes `key`, what the write replaces. A failed read
    /// fails the transaction at its commit.
    fn observe(&mut self, key: &[u8], new: Option<&[u8]>) {
        let Some(o) = self.observer else {
            return;
        };
        if !o.observes(key) {
            return;
        }
        // The observer's read is bookkeeping: not counted as the workload's.
        let old = match self.group.lookup(key) {
            Some(v) => Ok(v),
            None => self.engine.get_applied(key),
        };
        match old {
            Ok(old) => o.staged(key, old.as_deref(), new),
            Err(e) => {
                self.observe_failed.get_or_insert(e);
            }
        }
    }

    /// The newest value of `key`: this transaction's own writes, then earlier transactions of
    /// its group, then the engine's applied state (a read the engine counts in its workload:
    /// an INCR reads through the same tables a GET does).
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>> {
        if let Some(v) = self.group.lookup(key) {
            return Ok(v);
        }
        self.engine.note_reads(1);
        self.engine.get_applied(key)
    }

    /// Stages `key = value`. With an observer that observes `key`, the value it replaces is
    /// read first (a failed read fails the transaction at its commit).
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.observe(key, Some(value));
        self.group.put(key, value);
    }

    /// Stages `key = value` with the value given in parts written back to back (no copy into
    /// one buffer first). Observed as [`TxnContext::put`].
    pub fn put_parts(&mut self, key: &[u8], value_parts: &[&[u8]]) {
        if self.observer.is_some_and(|o| o.observes(key)) {
            // Observers look at a record's head: the first part holds it.
            let head = value_parts.first().copied().unwrap_or_default();
            self.observe(key, Some(head));
        }
        self.group.put_parts(key, value_parts);
    }

    /// Stages the deletion of `key`. Observed as [`TxnContext::put`].
    pub fn delete(&mut self, key: &[u8]) {
        self.observe(key, None);
        self.group.delete(key);
    }

    /// Stages every operation of `batch`, each observed as [`TxnContext::put`].
    pub fn write(&mut self, batch: &WriteBatch) {
        let Some(o) = self.observer else {
            let from = self.group.batch.mark();
            self.group.batch.append(batch);
            if self.group.indexed() {
                let staged: Vec<(usize, Vec<u8>)> = self
                    .group
                    .batch
                    .iter_offsets_from(from)
                    .map(|(at, op)| (at, op_key(op).to_vec()))
                    .collect();
                for (at, k) in staged {
                    self.group.staged_at(&k, at);
                }
            }
            return;
        };
        for op in batch.iter() {
            match op {
                BatchOp::Put(k, v) => {
                    if o.observes(k) {
                        self.observe(k, Some(v));
                    }
                    self.group.put(k, v);
                }
                BatchOp::Delete(k) => {
                    self.observe(k, None);
                    self.group.delete(k);
                }
            }
        }
    }

    /// Where this transaction's staged writes end now: [`TxnContext::rollback_to`] drops
    /// what is staged after it (one command of several failed; the others stay).
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(
            self.group.batch.mark(),
            self.observer.map_or(0, |o| o.mark()),
            self.after.len(),
        )
    }

    /// Drops the writes staged since `at`, taken from this transaction, and the work left for
    /// its commit since then (dropped, never called).
    pub fn rollback_to(&mut self, at: Savepoint) {
        self.group.rollback(at.0);
        if let Some(o) = self.observer {
            o.cut(at.1);
        }
        self.after.truncate(at.2);
    }

    /// Leaves `f` to run once this transaction's group is durable (or has failed), just before
    /// the transaction's own handle resolves: for an outcome this transaction decided for
    /// someone else, or state readers must see, which must not be seen before it is durable. Dropped, never called, if this
    /// transaction fails or rolls back past it.
    pub fn after_commit(&mut self, f: AfterCommit) {
        self.after.push(f);
    }

    /// Drops the writes staged so far (the transaction decided not to write).
    pub fn discard(&mut self) {
        let mark = self.group.committed;
        self.group.rollback(mark);
        if let Some(o) = self.observer {
            o.cut(self.observed_from);
        }
    }

    /// Up to `limit` keys that exist in `[lower, upper)` as this transaction sees them — the
    /// engine's applied state, then the writes of earlier transactions of its group, then its
    /// own — in key order.
    pub fn first_keys(&mut self, lower: &[u8], upper: &[u8], limit: usize) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .first_entries(lower, upper, limit)?
            .into_iter()
            .map(|(k, _)| k)
            .collect())
    }

    /// Up to `limit` keys and their values in `[lower, upper)` as this transaction sees them
    /// (see [`TxnContext::first_keys`]), in key order.
    pub fn first_entries(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Bytes)>> {
        use rialto_engine::EngineIterator;
        // What the group and this transaction wrote in the range: key → value, or deleted.
        self.group.build_ordered();
        let group: &Group = self.group;
        let mut out = Vec::new();
        self.engine.note_reads(1);
        let mut it = self
            .engine
            .iter_applied(Some(lower.to_vec()), Some(upper.to_vec()))?;
        it.seek_to_first();
        let mut pending = group.written_in(lower, upper).peekable();
        while out.len() < limit {
            // The smaller of the engine's next key and the next written one; a written key
            // decides for the engine's equal one.
            let engine_first = match (it.valid(), pending.peek()) {
                (false, None) => break,
                (true, None) => true,
                (false, Some(_)) => false,
                (true, Some((w, _))) => it.key() < *w,
            };
            if engine_first {
                out.push((it.key().to_vec(), Bytes::copy_from_slice(it.value())));
                it.next();
            } else if let Some((k, value)) = pending.next() {
                if it.valid() && it.key() == k {
                    it.next();
                }
                if let Some(v) = value {
                    out.push((k.to_vec(), v));
                }
            }
        }
        it.status()?;
        Ok(out)
    }

    /// Up to `limit` keys and their values in `[lower, upper)` as this transaction sees them,
    /// in descending key order: [`TxnContext::first_entries`] from the other end.
    pub fn last_entries(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Bytes)>> {
        use rialto_engine::EngineIterator;
        self.group.build_ordered();
        let group: &Group = self.group;
        let mut out = Vec::new();
        self.engine.note_reads(1);
        let mut it = self
            .engine
            .iter_applied(Some(lower.to_vec()), Some(upper.to_vec()))?;
        it.seek_to_last();
        let mut pending = group.written_in(lower, upper).rev().peekable();
        while out.len() < limit {
            // The larger of the engine's next key and the next written one; a written key
            // decides for the engine's equal one.
            let engine_first = match (it.valid(), pending.peek()) {
                (false, None) => break,
                (true, None) => true,
                (false, Some(_)) => false,
                (true, Some((w, _))) => it.key() > *w,
            };
            if engine_first {
                out.push((it.key().to_vec(), Bytes::copy_from_slice(it.value())));
                it.prev();
            } else if let Some((k, value)) = pending.next() {
                if it.valid() && it.key() == k {
                    it.prev();
                }
                if let Some(v) = value {
                    out.push((k.to_vec(), v));
                }
            }
        }
        it.status()?;
        Ok(out)
    }

    /// The engine, for reads the context does not cover (iteration reads the published state).
    pub fn engine(&self) -> &E {
        self.engine
    }

    /// The work left for the commit, taken out (see [`TxnContext::after_commit`]).
    pub(crate) fn take_after(&mut self) -> Vec<AfterCommit> {
        std::mem::take(&mut self.after)
    }

    /// Validates the staged writes and makes them part of the group (on error they are cut).
    pub(crate) fn commit(mut self) -> Result<()> {
        if let Some(e) = self.observe_failed.take() {
            return Err(e);
        }
        self.group.batch.validate()?;
        self.group.commit_staged();
        self.committed = true;
        if let Some(o) = self.observer {
            o.committed();
        }
        Ok(())
    }
}
