//! The key-level view commands work on: records with Redis expiry semantics over either the
//! engine's published state (reads on the connection) or a merger transaction (writes, and
//! reads ordered behind this connection's pending writes).

use bytes::Bytes;
use rialto_engine::{EngineIterator, IterOptions, KvEngine, PipelinedCommit, WriteBatch};
use rialto_lsm::Db;
use rialto_resp::Reply;
use rialto_txn::{CommitHandle, Merger, TxnContext};

use crate::keyspace::{self, encode_record, Record};
use crate::reply::{self, CmdResult};
use crate::stores::catalog::{self, RtEntry};
use crate::stores::{Catalog, RtNumbers, StoreMeta};

/// Raw engine reads.
pub trait RawRead {
    /// The engine value of `key`.
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>>;
}

/// Raw engine writes, staged in a transaction.
pub trait RawWrite: RawRead {
    /// Stages `key = value`.
    fn put_raw(&mut self, key: &[u8], value: &[u8]);
    /// Stages the deletion of `key`.
    fn delete_raw(&mut self, key: &[u8]);
}

/// Reads the engine's published state: what every acknowledged write left.
pub struct Published<'a>(pub &'a Db);

impl RawRead for Published<'_> {
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>> {
        self.0.get(key)
    }
}

/// A merger transaction: reads see every earlier transaction, writes are staged.
pub struct Txn<'a, 'b, E: PipelinedCommit>(pub &'a mut TxnContext<'b, E>);

impl<E: PipelinedCommit> RawRead for Txn<'_, '_, E> {
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>> {
        self.0.get(key)
    }
}

impl<E: PipelinedCommit> RawWrite for Txn<'_, '_, E> {
    fn put_raw(&mut self, key: &[u8], value: &[u8]) {
        self.0.put(key, value)
    }
    fn delete_raw(&mut self, key: &[u8]) {
        self.0.delete(key)
    }
}

/// Keys of one database at one instant.
pub struct Keys<'a, T: ?Sized> {
    /// Where records are read (and written).
    pub io: &'a mut T,
    /// Database index (SELECT).
    pub db: u8,
    /// The instant expiry is judged against, Unix milliseconds.
    pub now_ms: i64,
    /// Which keys of database 0 belong to which store (see `stores`): the read catalog for
    /// reads of the published state, the execution-order catalog inside transactions.
    pub stores: &'a Catalog,
    /// Numbers real-time log entries; `None` for reads.
    pub rt: Option<&'a RtNumbers>,
}

/// Where a user key's record lives.
enum Place<'c> {
    /// The default store.
    Default,
    /// A store: reads use its current version; writes go to its live versions.
    Store(&'c StoreMeta),
}

/// Where `key` of database `db` lives, by the catalog `stores`.
fn place<'c>(stores: &'c Catalog, db: u8, key: &[u8]) -> Place<'c> {
    if db != 0 {
        return Place::Default;
    }
    match stores.route(key) {
        Some(s) => Place::Store(s),
        None => Place::Default,
    }
}

/// The engine key a read of `key` (database `db`) looks up, by the catalog `stores`.
pub fn read_key(stores: &Catalog, db: u8, key: &[u8]) -> Vec<u8> {
    match place(stores, db, key) {
        Place::Default => keyspace::data_key(db, key),
        Place::Store(s) => catalog::version_key(s.id, s.current.number, key),
    }
}

impl<'a, T: ?Sized> Keys<'a, T> {
    fn place(&self, key: &[u8]) -> Place<'a> {
        place(self.stores, self.db, key)
    }

    fn read_key(&self, key: &[u8]) -> Vec<u8> {
        read_key(self.stores, self.db, key)
    }
}

impl<T: RawRead + ?Sized> Keys<'_, T> {
    /// The live record of `key`: `None` if absent or expired.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Record>, Reply> {
        if key.len() > keyspace::MAX_USER_KEY_LEN {
            // Could never have been written.
            return Ok(None);
        }
        let rec = self.get_including_expired(key)?;
        Ok(rec.filter(|r| !r.expired(self.now_ms)))
    }

    /// The record of `key` even if its time has passed (for the expiry pass).
    pub fn get_including_expired(&mut self, key: &[u8]) -> Result<Option<Record>, Reply> {
        let raw = self
            .io
            .get_raw(&self.read_key(key))
            .map_err(|e| reply::engine_error(&e))?;
        let Some(raw) = raw else {
            return Ok(None);
        };
        let rec = Record::decode(raw).map_err(|e| reply::err_string(format!("ERR {e}")))?;
        Ok(Some(rec))
    }

    /// Whether `key` exists (and is not expired).
    pub fn exists(&mut self, key: &[u8]) -> Result<bool, Reply> {
        Ok(self.get(key)?.is_some())
    }
}

impl<T: RawWrite + ?Sized> Keys<'_, T> {
    /// Writes `key = value` with the given expiry (`None`: persistent).
    pub fn set(&mut self, key: &[u8], value: &[u8], expire_at_ms: Option<i64>) {
        let record = encode_record(expire_at_ms, value);
        self.write(key, Some(&record));
        if let Some(at) = expire_at_ms {
            self.io
                .put_raw(&keyspace::expiry_key(self.db, at, key), b"");
        }
    }

    /// Deletes `key` without reading it (a stale expiry key is left to the expiry pass).
    pub fn delete(&mut self, key: &[u8]) {
        self.write(key, None);
    }

    /// Writes `record` (or a deletion) wherever `key` lives: the default store, or every live
    /// version of its store plus, while the store logs writes, its real-time log.
    fn write(&mut self, key: &[u8], record: Option<&[u8]>) {
        let store = match self.place(key) {
            Place::Default => None,
            Place::Store(s) => Some(s),
        };
        let Some(s) = store else {
            let k = keyspace::data_key(self.db, key);
            match record {
                Some(r) => self.io.put_raw(&k, r),
                None => self.io.delete_raw(&k),
            }
            return;
        };
        // `s` borrows the catalog, not `self`: no copy of the versions is needed.
        let id = s.id;
        for v in s.live_versions() {
            let k = catalog::version_key(id, v, key);
            match record {
                Some(r) => self.io.put_raw(&k, r),
                None => self.io.delete_raw(&k),
            }
        }
        if let (true, Some(rt)) = (s.logs_writes(), self.rt) {
            let entry = RtEntry {
                at_ms: self.now_ms,
                key,
                record,
            };
            self.io
                .put_raw(&catalog::rt_key(id, rt.next(id)), &entry.encode());
        }
    }

    /// Deletes `key` and reports whether it existed.
    pub fn remove(&mut self, key: &[u8]) -> Result<bool, Reply> {
        let existed = self.get(key)?;
        if let Some(rec) = &existed {
            self.delete(key);
            if let Some(at) = rec.expire_at_ms {
                self.io.delete_raw(&keyspace::expiry_key(self.db, at, key));
            }
        }
        Ok(existed.is_some())
    }

    /// Replaces `key`'s record, dropping the old record's expiry key when its time changes.
    pub fn replace(&mut self, key: &[u8], old: Option<&Record>, value: &[u8], at: Option<i64>) {
        if let Some(old_at) = old.and_then(|r| r.expire_at_ms) {
            if Some(old_at) != at {
                self.io
                    .delete_raw(&keyspace::expiry_key(self.db, old_at, key));
            }
        }
        self.set(key, value, at);
    }
}

/// Validates a user key's length against the engine's limit.
pub fn check_key(key: &[u8]) -> CmdResult<()> {
    if key.len() > keyspace::MAX_USER_KEY_LEN {
        return Err(reply::err_string(format!(
            "ERR key is {} bytes, longer than Rialto's limit of {} bytes",
            key.len(),
            keyspace::MAX_USER_KEY_LEN
        )));
    }
    Ok(())
}

/// Validates a value's length (Redis's string limit is `proto-max-bulk-len`; the engine's is
/// 512 MiB minus the record header).
pub fn check_value_len(len: usize) -> CmdResult<()> {
    if len > keyspace::MAX_USER_VALUE_LEN {
        return Err(Reply::error(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

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
