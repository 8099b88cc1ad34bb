//! What a transaction sees and does while the merger executes it.

use std::collections::HashMap;

use rialto_engine::{BatchMark, BatchOp, Bytes, PipelinedCommit, Result, WriteBatch};

/// The group being built: the merged batch of the transactions executed so far, and (built on
/// the first read) an index of its latest value per key, so later transactions of the group
/// read what earlier ones wrote. The transaction running now stages its writes at the end of
/// the same batch, after `committed`: they join the group by moving the mark, or are cut off.
pub(crate) struct Group {
    pub(crate) batch: WriteBatch,
    /// Where the operations of the transactions that committed end.
    committed: BatchMark,
    /// Key → latest value among the committed operations (`None`: deleted). Built lazily: a
    /// group of plain writes that nobody reads never pays for it.
    overlay: Option<HashMap<Vec<u8>, Option<Bytes>>>,
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
        }
    }

    fn lookup(&mut self, key: &[u8]) -> Option<Option<Bytes>> {
        if self.batch.is_empty() {
            return None;
        }
        let (batch, committed) = (&self.batch, self.committed);
        let overlay = self.overlay.get_or_insert_with(|| {
            let mut m = HashMap::new();
            for op in batch.iter_until(committed) {
                apply(&mut m, op);
            }
            m
        });
        overlay.get(key).cloned()
    }

    /// The running transaction's writes join the group.
    fn commit_staged(&mut self) {
        if let Some(m) = self.overlay.as_mut() {
            for op in self.batch.iter_from(self.committed) {
                apply(m, op);
            }
        }
        self.committed = self.batch.mark();
    }
}

fn apply(m: &mut HashMap<Vec<u8>, Option<Bytes>>, op: BatchOp<'_>) {
    match op {
        BatchOp::Put(key, value) => {
            m.insert(key.to_vec(), Some(Bytes::copy_from_slice(value)));
        }
        BatchOp::Delete(key) => {
            m.insert(key.to_vec(), None);
        }
    }
}

/// A position in a transaction's staged writes (see [`TxnContext::savepoint`]).
#[derive(Debug, Clone, Copy)]
pub struct Savepoint(BatchMark);

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
}

impl<E: PipelinedCommit> Drop for TxnContext<'_, E> {
    fn drop(&mut self) {
        if !self.committed {
            let mark = self.group.committed;
            self.group.batch.rollback(mark);
        }
    }
}

impl<'a, E: PipelinedCommit> TxnContext<'a, E> {
    pub(crate) fn new(engine: &'a E, group: &'a mut Group) -> Self {
        TxnContext {
            engine,
            group,
            committed: false,
        }
    }

    /// The newest value of `key`: this transaction's own writes, then earlier transactions of
    /// its group, then the engine's applied state.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>> {
        let mut found = None;
        for op in self.group.batch.iter_from(self.group.committed) {
            match op {
                BatchOp::Put(k, value) if k == key => {
                    found = Some(Some(Bytes::copy_from_slice(value)))
                }
                BatchOp::Delete(k) if k == key => found = Some(None),
                _ => {}
            }
        }
        if let Some(v) = found {
            return Ok(v);
        }
        if let Some(v) = self.group.lookup(key) {
            return Ok(v);
        }
        self.engine.get_applied(key)
    }

    /// Stages `key = value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.group.batch.put(key, value);
    }

    /// Stages `key = value` with the value given in parts written back to back (no copy into
    /// one buffer first).
    pub fn put_parts(&mut self, key: &[u8], value_parts: &[&[u8]]) {
        self.group.batch.put_parts(key, value_parts);
    }

    /// Stages the deletion of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.group.batch.delete(key);
    }

    /// Stages every operation of `batch`.
    pub fn write(&mut self, batch: &WriteBatch) {
        self.group.batch.append(batch);
    }

    /// Where this transaction's staged writes end now: [`TxnContext::rollback_to`] drops
    /// what is staged after it (one command of several failed; the others stay).
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.group.batch.mark())
    }

    /// Drops the writes staged since `at`, taken from this transaction.
    pub fn rollback_to(&mut self, at: Savepoint) {
        self.group.batch.rollback(at.0);
    }

    /// Drops the writes staged so far (the transaction decided not to write).
    pub fn discard(&mut self) {
        let mark = self.group.committed;
        self.group.batch.rollback(mark);
    }

    /// Up to `limit` keys that exist in `[lower, upper)` as this transaction sees them — the
    /// engine's applied state, then the writes of earlier transactions of its group, then its
    /// own — in key order.
    pub fn first_keys(&mut self, lower: &[u8], upper: &[u8], limit: usize) -> Result<Vec<Vec<u8>>> {
        use rialto_engine::EngineIterator;
        use std::collections::BTreeMap;
        // What the group and this transaction wrote in the range: key → exists.
        let mut written: BTreeMap<Vec<u8>, bool> = BTreeMap::new();
        for op in self.group.batch.iter() {
            match op {
                BatchOp::Put(k, _) if k >= lower && k < upper => {
                    written.insert(k.to_vec(), true);
                }
                BatchOp::Delete(k) if k >= lower && k < upper => {
                    written.insert(k.to_vec(), false);
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        let mut it = self
            .engine
            .iter_applied(Some(lower.to_vec()), Some(upper.to_vec()))?;
        it.seek_to_first();
        let mut pending = written.into_iter().peekable();
        while out.len() < limit {
            // The smaller of the engine's next key and the next written one; a written key
            // decides for the engine's equal one.
            let engine_first = match (it.valid(), pending.peek()) {
                (false, None) => break,
                (true, None) => true,
                (false, Some(_)) => false,
                (true, Some((w, _))) => it.key() < w.as_slice(),
            };
            if engine_first {
                out.push(it.key().to_vec());
                it.next();
            } else if let Some((k, exists)) = pending.next() {
                if it.valid() && it.key() == k.as_slice() {
                    it.next();
                }
                if exists {
                    out.push(k);
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

    /// Validates the staged writes and makes them part of the group (on error they are cut).
    pub(crate) fn commit(mut self) -> Result<()> {
        self.group.batch.validate()?;
        self.group.commit_staged();
        self.committed = true;
        Ok(())
    }
}
