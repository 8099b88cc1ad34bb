//! The key-level view commands work on: records with Redis expiry semantics over either the
//! engine's published state (reads on the connection) or a merger transaction (writes, and
//! reads ordered behind this connection's pending writes).

use bytes::Bytes;
use rialto_engine::{KvEngine, PipelinedCommit};
use rialto_lsm::Db;
use rialto_txn::TxnContext;

use crate::error::{Error, Result};
use crate::layout::{self, Record};
use crate::stores::catalog::{self, RtEntry};
use crate::stores::{Catalog, RtNumbers, StoreMeta};
use crate::watch::Watches;

/// Raw engine reads.
pub trait RawRead {
    /// The engine value of `key`.
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>>;
    /// The engine values of `keys`, in their order, read in one state.
    fn get_raw_many(&mut self, keys: &[&[u8]]) -> rialto_engine::Result<Vec<Option<Bytes>>> {
        keys.iter().map(|k| self.get_raw(k)).collect()
    }
    /// Up to `limit` entries of `[lower, upper)`, in key order.
    fn scan_raw(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> rialto_engine::Result<Vec<(Vec<u8>, Bytes)>>;
    /// Up to `limit` entries of `[lower, upper)`, in descending key order.
    fn scan_raw_rev(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> rialto_engine::Result<Vec<(Vec<u8>, Bytes)>>;
    /// Makes every later read see one state: a command that reads several keys of one
    /// collection calls it, then reads its header again.
    fn pin(&mut self);
}

/// Raw engine writes, staged in a transaction.
pub trait RawWrite: RawRead {
    /// Stages `key = value`.
    fn put_raw(&mut self, key: &[u8], value: &[u8]);
    /// Stages `key = ` the parts written back to back.
    fn put_raw_parts(&mut self, key: &[u8], parts: &[&[u8]]);
    /// Stages the deletion of `key`.
    fn delete_raw(&mut self, key: &[u8]);
}

/// Reads the engine's published state: what every acknowledged write left (once pinned, the
/// state at the pin).
pub struct Published<'a> {
    db: &'a Db,
    snapshot: Option<<Db as KvEngine>::Snapshot>,
}

impl<'a> Published<'a> {
    pub fn new(db: &'a Db) -> Published<'a> {
        Published { db, snapshot: None }
    }
}

impl RawRead for Published<'_> {
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>> {
        match &self.snapshot {
            None => self.db.get(key),
            Some(s) => self.db.get_at(s, key),
        }
    }

    fn get_raw_many(&mut self, keys: &[&[u8]]) -> rialto_engine::Result<Vec<Option<Bytes>>> {
        match &self.snapshot {
            None => self.db.multi_get(keys),
            Some(s) => self.db.multi_get_at(s, keys),
        }
    }

    fn scan_raw(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> rialto_engine::Result<Vec<(Vec<u8>, Bytes)>> {
        use rialto_engine::EngineIterator;
        let mut it = self.db.iter(rialto_engine::IterOptions {
            lower: Some(lower.to_vec()),
            upper: Some(upper.to_vec()),
            snapshot: self.snapshot.clone(),
        })?;
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() && out.len() < limit {
            out.push((it.key().to_vec(), Bytes::copy_from_slice(it.value())));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    fn scan_raw_rev(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> rialto_engine::Result<Vec<(Vec<u8>, Bytes)>> {
        use rialto_engine::EngineIterator;
        let mut it = self.db.iter(rialto_engine::IterOptions {
            lower: Some(lower.to_vec()),
            upper: Some(upper.to_vec()),
            snapshot: self.snapshot.clone(),
        })?;
        it.seek_to_last();
        let mut out = Vec::new();
        while it.valid() && out.len() < limit {
            out.push((it.key().to_vec(), Bytes::copy_from_slice(it.value())));
            it.prev();
        }
        it.status()?;
        Ok(out)
    }

    fn pin(&mut self) {
        if self.snapshot.is_none() {
            self.snapshot = Some(self.db.snapshot());
        }
    }
}

/// A merger transaction: reads see every earlier transaction, writes are staged.
pub struct Txn<'a, 'b, E: PipelinedCommit>(pub &'a mut TxnContext<'b, E>);

impl<E: PipelinedCommit> RawRead for Txn<'_, '_, E> {
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>> {
        self.0.get(key)
    }

    fn scan_raw(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> rialto_engine::Result<Vec<(Vec<u8>, Bytes)>> {
        self.0.first_entries(lower, upper, limit)
    }

    fn scan_raw_rev(
        &mut self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
    ) -> rialto_engine::Result<Vec<(Vec<u8>, Bytes)>> {
        self.0.last_entries(lower, upper, limit)
    }

    /// A transaction sees one state already: nothing else runs while it does.
    fn pin(&mut self) {}
}

impl<E: PipelinedCommit> RawWrite for Txn<'_, '_, E> {
    fn put_raw(&mut self, key: &[u8], value: &[u8]) {
        self.0.put(key, value)
    }
    fn put_raw_parts(&mut self, key: &[u8], parts: &[&[u8]]) {
        self.0.put_parts(key, parts)
    }
    fn delete_raw(&mut self, key: &[u8]) {
        self.0.delete(key)
    }
}

/// Keys as reads see them, over the published state or a transaction.
pub type Reader<'a> = Keys<'a, dyn RawRead + 'a>;

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
    /// Where writes report the keys they change (WATCH); `None` for reads.
    pub watches: Option<&'a Watches>,
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

/// The prefix a read of `key` puts before it: the data key's, or the store version's.
fn read_prefix(stores: &Catalog, db: u8, key: &[u8]) -> ([u8; 9], usize) {
    let mut p = [0u8; 9];
    match place(stores, db, key) {
        Place::Default => {
            p[0] = layout::DATA;
            p[1] = db;
            (p, 2)
        }
        Place::Store(s) => {
            p[0] = catalog::VERSION_DATA;
            p[1..5].copy_from_slice(&s.id.to_be_bytes());
            p[5..9].copy_from_slice(&s.current.number.to_be_bytes());
            (p, 9)
        }
    }
}

/// Longest engine key built on the stack for a read; longer ones are allocated.
const STACK_KEY: usize = 128;

/// Runs `f` on the engine key a read of `key` looks up, built on the stack when it is short
/// (a GET allocates nothing for its key).
fn with_read_key<R>(stores: &Catalog, db: u8, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let (prefix, n) = read_prefix(stores, db, key);
    let len = n + key.len();
    if len <= STACK_KEY {
        let mut buf = [0u8; STACK_KEY];
        buf[..n].copy_from_slice(&prefix[..n]);
        buf[n..len].copy_from_slice(key);
        f(&buf[..len])
    } else {
        f(&[&prefix[..n], key].concat())
    }
}

/// The engine keys reads of `keys` look up, back to back in one buffer, with where each ends.
pub(crate) fn read_keys<'k>(
    stores: &Catalog,
    db: u8,
    keys: impl IntoIterator<Item = &'k [u8]>,
) -> (Vec<u8>, Vec<usize>) {
    let (mut buf, mut ends) = (Vec::with_capacity(1024), Vec::with_capacity(32));
    for key in keys {
        let (prefix, n) = read_prefix(stores, db, key);
        buf.extend_from_slice(&prefix[..n]);
        buf.extend_from_slice(key);
        ends.push(buf.len());
    }
    (buf, ends)
}

impl<'a, T: ?Sized> Keys<'a, T> {
    fn place(&self, key: &[u8]) -> Place<'a> {
        place(self.stores, self.db, key)
    }
}

impl<T: RawRead + ?Sized> Keys<'_, T> {
    /// The live record of `key`: `None` if absent or expired.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Record>> {
        if key.len() > layout::MAX_USER_KEY_LEN {
            // Could never have been written.
            return Ok(None);
        }
        let rec = self.get_including_expired(key)?;
        Ok(rec.filter(|r| !r.expired(self.now_ms)))
    }

    /// The live records of `keys`, in their order, read in one state (a batch get: the
    /// engine shares the lookups' work).
    pub fn get_many(&mut self, keys: &[Bytes]) -> Result<Vec<Option<Record>>> {
        let readable = |k: &Bytes| k.len() <= layout::MAX_USER_KEY_LEN;
        let (buf, ends) = read_keys(
            self.stores,
            self.db,
            keys.iter().filter(|k| readable(k)).map(|k| &k[..]),
        );
        let mut refs: Vec<&[u8]> = Vec::with_capacity(ends.len());
        let mut start = 0;
        for &end in &ends {
            refs.push(&buf[start..end]);
            start = end;
        }
        let mut raws = self.io.get_raw_many(&refs)?.into_iter();
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            // A key too long to have been written reads as absent.
            let raw = if readable(k) {
                raws.next().flatten()
            } else {
                None
            };
            out.push(match raw {
                Some(raw) => Some(Record::decode(raw)?).filter(|r| !r.expired(self.now_ms)),
                None => None,
            });
        }
        Ok(out)
    }

    /// The record of `key` even if its time has passed (for the expiry pass).
    pub fn get_including_expired(&mut self, key: &[u8]) -> Result<Option<Record>> {
        let io = &mut *self.io;
        let raw = with_read_key(self.stores, self.db, key, |k| io.get_raw(k))?;
        let Some(raw) = raw else {
            return Ok(None);
        };
        Ok(Some(Record::decode(raw)?))
    }

    /// The live record of `key` if it holds a string; [`Error::WrongType`] if it holds
    /// anything else.
    pub fn get_string(&mut self, key: &[u8]) -> Result<Option<Record>> {
        match self.get(key)? {
            Some(r) if !r.is_string() => Err(Error::WrongType),
            r => Ok(r),
        }
    }

    /// The live record of `key` if it holds `kind`; [`Error::WrongType`] if it holds another.
    pub fn get_kind(&mut self, key: &[u8], kind: layout::Kind) -> Result<Option<Record>> {
        match self.get(key)? {
            Some(r) if r.kind != kind => Err(Error::WrongType),
            r => Ok(r),
        }
    }

    /// Whether `key` exists (and is not expired).
    pub fn exists(&mut self, key: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Whether `key` lives in the default store (where collections may keep their members as
    /// separate keys), not in a store's versions.
    pub fn in_default_store(&self, key: &[u8]) -> bool {
        matches!(self.place(key), Place::Default)
    }
}

impl<T: RawWrite + ?Sized> Keys<'_, T> {
    /// Writes `key = value` with the given expiry (`None`: persistent).
    pub fn set(&mut self, key: &[u8], value: &[u8], expire_at_ms: Option<i64>) {
        // The record goes into the transaction's batch as its header and the value, so the
        // value is copied once on its way from the request to the journal.
        let (head, n) = layout::record_header(expire_at_ms);
        self.write(key, Some(&[&head[..n], value]));
        if let Some(at) = expire_at_ms {
            self.io.put_raw(&layout::expiry_key(self.db, at, key), b"");
        }
    }

    /// Writes `key`'s record of `kind` (`large`: the payload is a collection header) with the
    /// given expiry, dropping the expiry key of `old` (its record before) when the time
    /// changes.
    pub fn put_record(
        &mut self,
        key: &[u8],
        old: Option<&Record>,
        kind: layout::Kind,
        large: bool,
        payload: &[u8],
        at: Option<i64>,
    ) {
        if let Some(old_at) = old.and_then(|r| r.expire_at_ms) {
            if Some(old_at) != at {
                self.io
                    .delete_raw(&layout::expiry_key(self.db, old_at, key));
            }
        }
        let (head, n) = layout::header(kind, large, at);
        if large {
            // Observers judge a value by its first part: a header goes whole.
            self.write(key, Some(&[&[&head[..n], payload].concat()]));
        } else {
            self.write(key, Some(&[&head[..n], payload]));
        }
        if let Some(at) = at {
            self.io.put_raw(&layout::expiry_key(self.db, at, key), b"");
        }
    }

    /// Gives `rec` (the live record of `key`) the expiry `at`, whatever it holds.
    pub fn retime(&mut self, key: &[u8], rec: &Record, at: Option<i64>) {
        self.put_record(key, Some(rec), rec.kind, rec.large, &rec.value, at);
    }

    /// Deletes `key` without reading it (a stale expiry key is left to the expiry pass).
    pub fn delete(&mut self, key: &[u8]) {
        self.write(key, None);
    }

    /// Writes the record made of `record`'s parts (or a deletion) wherever `key` lives: the
    /// default store, or every live version of its store plus, while the store logs writes,
    /// its real-time log.
    fn write(&mut self, key: &[u8], record: Option<&[&[u8]]>) {
        if let Some(w) = self.watches {
            w.touch(self.db, key, record.is_none());
        }
        let store = match self.place(key) {
            Place::Default => None,
            Place::Store(s) => Some(s),
        };
        let Some(s) = store else {
            let k = layout::data_key(self.db, key);
            match record {
                Some(parts) => self.io.put_raw_parts(&k, parts),
                None => self.io.delete_raw(&k),
            }
            return;
        };
        // `s` borrows the catalog, not `self`: no copy of the versions is needed.
        let id = s.id;
        for v in s.live_versions() {
            let k = catalog::version_key(id, v, key);
            match record {
                Some(parts) => self.io.put_raw_parts(&k, parts),
                None => self.io.delete_raw(&k),
            }
        }
        if let (true, Some(rt)) = (s.logs_writes(), self.rt) {
            let joined = record.map(|parts| parts.concat());
            let entry = RtEntry {
                at_ms: self.now_ms,
                key,
                record: joined.as_deref(),
            };
            self.io
                .put_raw(&catalog::rt_key(id, rt.next(id)), &entry.encode());
        }
    }

    /// Deletes `key` and reports whether it existed. A record whose time has passed is
    /// deleted too (reported as absent), as Redis expires a key a write command finds.
    pub fn remove(&mut self, key: &[u8]) -> Result<bool> {
        if key.len() > layout::MAX_USER_KEY_LEN {
            return Ok(false);
        }
        let found = self.get_including_expired(key)?;
        if let Some(rec) = &found {
            self.delete(key);
            if let Some(at) = rec.expire_at_ms {
                self.io.delete_raw(&layout::expiry_key(self.db, at, key));
            }
        }
        Ok(found.is_some_and(|r| !r.expired(self.now_ms)))
    }

    /// Replaces `key`'s record by the string `value`, dropping the old record's expiry key
    /// when its time changes.
    pub fn replace(&mut self, key: &[u8], old: Option<&Record>, value: &[u8], at: Option<i64>) {
        if let Some(old_at) = old.and_then(|r| r.expire_at_ms) {
            if Some(old_at) != at {
                self.io
                    .delete_raw(&layout::expiry_key(self.db, old_at, key));
            }
        }
        self.set(key, value, at);
    }
}

/// Checks a user key's length against the engine's limit.
pub fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > layout::MAX_USER_KEY_LEN {
        return Err(Error::KeyTooLong {
            len: key.len(),
            max: layout::MAX_USER_KEY_LEN,
        });
    }
    Ok(())
}

/// Checks a value's length (Redis's string limit is `proto-max-bulk-len`; the engine's is
/// 512 MiB minus the record header).
pub fn check_value_len(len: usize) -> Result<()> {
    if len > layout::MAX_USER_VALUE_LEN {
        return Err(Error::ValueTooLong);
    }
    Ok(())
}
