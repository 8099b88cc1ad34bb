//! Long runs of writes through the merger, in transactions of bounded size.

use rialto_engine::{EngineIterator, IterOptions, KvEngine, WriteBatch};
use rialto_lsm::Db;
use rialto_txn::{CommitHandle, Merger};

/// Deletions per transaction of [`delete_range`].
pub const DELETE_CHUNK: usize = 10_000;

/// Writes a long run of operations through the merger in transactions of `chunk`
/// operations, without waiting between them. The merger acknowledges transactions in
/// submission order and fails every one after a failed one, so [`ChunkedWriter::finish`]
/// waits on the last alone.
pub struct ChunkedWriter<'a> {
    merger: &'a Merger<Db>,
    chunk: usize,
    batch: WriteBatch,
    last: Option<CommitHandle<()>>,
}

impl<'a> ChunkedWriter<'a> {
    pub fn new(merger: &'a Merger<Db>, chunk: usize) -> Self {
        ChunkedWriter {
            merger,
            chunk: chunk.max(1),
            batch: WriteBatch::new(),
            last: None,
        }
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.batch.put(key, value);
        self.submit_full();
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.batch.delete(key);
        self.submit_full();
    }

    fn submit_full(&mut self) {
        if self.batch.count() as usize >= self.chunk {
            self.last = Some(self.merger.write(std::mem::take(&mut self.batch)));
        }
    }

    /// Submits what is left and returns once every operation is durable.
    pub fn finish(mut self) -> rialto_engine::Result<()> {
        if !self.batch.is_empty() {
            self.last = Some(self.merger.write(std::mem::take(&mut self.batch)));
        }
        match self.last {
            Some(h) => h.wait(),
            None => Ok(()),
        }
    }
}

/// Deletes the keys of `[lo, hi)` (as the published state holds them) in order while
/// `take(value)` holds, in merger transactions of [`DELETE_CHUNK`]; returns how many once the
/// last is durable.
pub fn delete_range(
    db: &Db,
    merger: &Merger<Db>,
    lo: &[u8],
    hi: &[u8],
    take: impl Fn(&[u8]) -> bool,
) -> rialto_engine::Result<u64> {
    let mut it = db.iter(IterOptions {
        lower: Some(lo.to_vec()),
        upper: Some(hi.to_vec()),
        snapshot: None,
    })?;
    it.seek_to_first();
    let mut n = 0u64;
    let mut out = ChunkedWriter::new(merger, DELETE_CHUNK);
    while it.valid() && take(it.value()) {
        out.delete(it.key());
        n += 1;
        it.next();
    }
    it.status()?;
    out.finish()?;
    Ok(n)
}
