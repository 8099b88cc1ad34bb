//! [`Keyspace`]: the database as the server and the command-line tools see it — the engine,
//! the transaction merger, the stores and their pushes, behind one owner.
//!
//! Threads: a `Keyspace` is shared (`&self` everywhere). Reads of the published state run on
//! the caller's thread; writes are [`Op`]s applied in the merger's execution order
//! ([`Keyspace::enqueue`]); catalog changes and pushes run on the calling thread and wait for
//! durability, so callers run them off latency-sensitive threads (the server uses the
//! ingestion pool or a blocking task).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rialto_engine::{EngineIterator, EngineStats, IoStats, IterOptions, KvEngine, PipelinedCommit};
use rialto_io::{Clock, FsRef};
use rialto_lsm::triad::TriadStats;
use rialto_lsm::Db;
use rialto_txn::{CommitHandle, Merger, MergerOptions, MergerStats, TxnContext};

use crate::blocking::{Served, WaiterId};
use crate::collections;
use crate::error::{Error, Result};
use crate::keys::{read_keys, Keys, Published, RawRead, Reader, Txn};
use crate::layout::{self, Record};
use crate::op::{Op, OpKind};
use crate::stores::{
    catalog, Catalog, PushGuard, PushReport, StoreCodecs, StoreError, StoreMeta, StoreOptions,
    StoreResult, StoreSettings, Stores,
};
use crate::value::Value;
use crate::walk::RandomKey;
use crate::watch::{Watch, WatchRef};
use rialto_sort::DuplicatePolicy;

/// Keys one step of a flush deletes (one transaction, one journal record).
pub const FLUSH_STEP_KEYS: u64 = 10_000;

/// How to open a keyspace.
#[derive(Clone)]
pub struct KeyspaceOptions {
    /// The engine's options; its `fs` and `clock` are the keyspace's. The partitioner (every
    /// store version in tables of its own) and `compression_for` (a store version's tables
    /// with its store's codec) are set by [`Keyspace::open`].
    pub engine: rialto_lsm::Options,
    /// The merger's options (durability, group sizes, polling).
    pub merger: MergerOptions,
    /// Stores and pushes.
    pub stores: StoreOptions,
}

/// Why a keyspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The engine could not open the directory (damage, lock, I/O).
    #[error(transparent)]
    Engine(#[from] rialto_engine::Error),
    /// The store records could not be loaded, or an interrupted push not retired.
    #[error("stores: {0}")]
    Stores(#[from] StoreError),
}

/// How many keys a database holds ([`Keyspace::key_count`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyCount {
    /// Keys.
    pub keys: u64,
    /// Keys with a TTL.
    pub expires: u64,
}

/// The keyspace: see the module docs.
pub struct Keyspace {
    db: Arc<Db>,
    merger: Merger<Db>,
    stores: Arc<Stores>,
    fs: FsRef,
    clock: Arc<dyn Clock>,
    /// Where the reclaim pass resumes in each released version it has not finished: past the
    /// last member it deleted, so it does not step over its own tombstones again (lost at a
    /// restart, which costs one walk over them).
    reclaimed_to: parking_lot::Mutex<std::collections::HashMap<u64, Vec<u8>>>,
}

impl Keyspace {
    /// Opens the database in `dir` (created if missing), starts the merger, loads the stores,
    /// empties the push spill directory and retires a push a stop interrupted.
    pub fn open(dir: &Path, mut opts: KeyspaceOptions) -> std::result::Result<Keyspace, OpenError> {
        let fs = Arc::clone(&opts.engine.fs);
        let clock = Arc::clone(&opts.engine.clock);
        opts.engine.partitioner = Some(Arc::new(catalog::partition_len));
        let codecs = Arc::new(StoreCodecs::default());
        let of_key = Arc::clone(&codecs);
        opts.engine.compression_for = Some(Arc::new(move |k: &[u8]| of_key.of_key(k)));
        let db = Arc::new(Db::open(dir, opts.engine)?);
        let spill = opts.stores.push_tmp_dir.clone();
        let stores = Arc::new(Stores::open(&db, opts.stores, Arc::clone(&clock), codecs)?);
        let observer: Arc<dyn rialto_txn::WriteObserver> = stores.counts().clone();
        let merger = Merger::start_observed(
            Arc::clone(&db),
            opts.merger,
            Arc::clone(&clock),
            Some(observer),
        )?;
        // Counts a walk just computed are logged at once, not walked again at the next open.
        merger.write(rialto_engine::WriteBatch::new()).wait()?;
        empty_spill_dir(&*fs, &spill);
        stores.recover(&merger)?;
        Ok(Keyspace {
            db,
            merger,
            stores,
            fs,
            clock,
            reclaimed_to: parking_lot::Mutex::new(std::collections::HashMap::new()),
        })
    }

    /// Unix milliseconds now, by the keyspace's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.unix_millis() as i64
    }

    /// The compression of the tables flushes and compactions write outside any store (and a
    /// new store's default).
    pub fn compression(&self) -> rialto_lsm::Compression {
        self.db.compression()
    }

    /// Changes [`Keyspace::compression`]: for the tables written after the change.
    pub fn set_compression(&self, c: rialto_lsm::Compression) {
        self.db.set_compression(c);
    }

    /// The keyspace's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The file system the database is on.
    pub fn fs(&self) -> &FsRef {
        &self.fs
    }

    /// Runs `f` on the keys of database `db` as the published state holds them: every
    /// acknowledged write, judged at `now_ms`.
    pub fn read<T>(&self, db: u8, now_ms: i64, f: impl FnOnce(&mut Reader<'_>) -> T) -> T {
        let mut io = Published::new(&self.db);
        let catalog = self.stores.read_catalog();
        let mut k: Reader<'_> = Keys {
            io: &mut io,
            db: self.stores.dbs.read_physical(db),
            now_ms,
            stores: &catalog,
            rt: None,
            watches: None,
        };
        f(&mut k)
    }

    /// Runs `f` on the keys of database `db` in the merger's execution order: behind every
    /// write enqueued before it (seeing them), judged at the instant it runs.
    pub fn read_in_order<T, F>(&self, db: u8, f: F) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Reader<'_>) -> T + Send + 'static,
    {
        let clock = Arc::clone(&self.clock);
        let stores = Arc::clone(&self.stores);
        self.merger.enqueue(move |tx| {
            let mut io = Txn(tx);
            let catalog = stores.exec_catalog();
            let mut k: Reader<'_> = Keys {
                io: &mut io,
                db: stores.dbs.physical(db),
                now_ms: clock.unix_millis() as i64,
                stores: &catalog,
                rt: None,
                watches: None,
            };
            Ok(f(&mut k))
        })
    }

    /// Applies `op` in the merger's execution order; `done` gets its result and the time the
    /// apply took, inside the transaction (keep it short), and its value is what the handle
    /// yields once the write is durable. A failed op writes nothing.
    pub fn enqueue<T, F>(&self, op: Op, done: F) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(Result<Value>, Duration) -> T + Send + 'static,
    {
        let stores = Arc::clone(&self.stores);
        self.merger.enqueue(move |tx| {
            let start = Instant::now();
            let r = crate::apply::apply(tx, &stores, &op);
            let out = done(r, start.elapsed());
            crate::blocking::serve(tx, &stores, op.now_ms);
            Ok(out)
        })
    }

    /// Runs a blocking command's pop `op` (see [`crate::blocking`]) in the merger's order;
    /// if it took nothing, the same transaction registers a waiter on `keys` of the op's
    /// database, whose pop (retargeted to the key that becomes ready) is handed to `deliver`
    /// once durable. `done` gets the pop's result and the waiter's id if one was registered.
    pub fn block<T, F>(&self, op: Op, keys: Vec<Bytes>, deliver: Served, done: F) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(Result<Value>, Option<WaiterId>) -> T + Send + 'static,
    {
        let stores = Arc::clone(&self.stores);
        self.merger.enqueue(move |tx| {
            let r = crate::apply::apply(tx, &stores, &op);
            let waiter = match &r {
                Ok(v) if !crate::blocking::took(v) => {
                    let kind = crate::blocking::waiting_form(tx, &stores, &op);
                    Some(crate::blocking::register(
                        &stores,
                        op.db,
                        keys,
                        Some(kind),
                        deliver,
                    ))
                }
                _ => None,
            };
            let out = done(r, waiter);
            crate::blocking::serve(tx, &stores, op.now_ms);
            Ok(out)
        })
    }

    /// Registers a waiter on `keys` of database `db` that is only told (with a null value)
    /// when one of them is written: where the pop itself must go through a log (a cluster
    /// node), the caller registers first, then pops, and waits for this if it took nothing.
    pub fn notify_on_write(&self, db: u8, keys: Vec<Bytes>, deliver: Served) -> WaiterId {
        crate::blocking::register(&self.stores, db, keys, None, deliver)
    }

    /// Withdraws a waiter (timeout, disconnection, CLIENT UNBLOCK): `true` if it was still
    /// waiting, `false` if it was served and its value is on its way to its `deliver`.
    pub fn unblock(&self, id: WaiterId) -> bool {
        self.stores.watches.blocked.cancel(id)
    }

    /// Clients waiting in blocking pops, and the distinct keys they wait on.
    pub fn blocked(&self) -> (usize, usize) {
        let b = &self.stores.watches.blocked;
        (b.waiting(), b.keys())
    }

    /// [`Keyspace::enqueue`] for client `origin`: the key-change sink hears which client
    /// made the changes (client-side caching's NOLOOP).
    pub fn enqueue_as<T, F>(&self, origin: u64, op: Op, done: F) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(Result<Value>, Duration) -> T + Send + 'static,
    {
        let stores = Arc::clone(&self.stores);
        self.merger.enqueue(move |tx| {
            let start = Instant::now();
            let r = crate::watch::with_origin(origin, || crate::apply::apply(tx, &stores, &op));
            let out = done(r, start.elapsed());
            crate::watch::with_origin(origin, || crate::blocking::serve(tx, &stores, op.now_ms));
            Ok(out)
        })
    }

    /// Applies `op` and waits until it is durable. A catalog op runs alone (after every
    /// op enqueued before it), and reads see its catalog once this returns.
    pub fn execute(&self, op: Op) -> Result<Value> {
        if let OpKind::Store(_) = op.kind {
            return self.stores.apply_op(&self.merger, op);
        }
        let catalog = matches!(op.kind, OpKind::PartitionStore { .. });
        let stores = Arc::clone(&self.stores);
        let r = self.merger.submit_and_wait(move |tx| {
            let r = crate::apply::apply(tx, &stores, &op);
            crate::blocking::serve(tx, &stores, op.now_ms);
            Ok(r)
        })?;
        if catalog {
            self.stores.publish(&self.db);
        }
        r
    }

    /// Installs the sink that hears of every key change (once per keyspace); it hears
    /// nothing until [`Keyspace::listen_key_events`] turns it on.
    pub fn set_key_events(&self, events: Arc<dyn crate::watch::KeyEvents>) {
        self.stores.watches.set_events(events);
    }

    /// Turns the key-change sink on or off. Off, a write pays one atomic load for it (shared
    /// with WATCH's).
    pub fn listen_key_events(&self, on: bool) {
        self.stores.watches.listen(on);
    }

    /// A new, empty watch for one connection (WATCH).
    pub fn new_watch(&self) -> Watch {
        Watch::new(Arc::clone(&self.stores.watches))
    }

    /// Whether `watch` still holds against the published state at `now_ms`: no watched key
    /// changed, and none that was live when watched has expired since. (A transaction that
    /// takes the watch checks the same in the merger's order; this is for writes ordered
    /// elsewhere, such as a cluster's log.)
    pub fn watch_intact(&self, watch: &Watch, now_ms: i64) -> bool {
        let w = watch.share();
        if w.is_dirty() {
            return false;
        }
        w.live_when_watched().into_iter().all(|(db, key)| {
            !self.read(
                db,
                now_ms,
                |k| matches!(k.get_including_expired(&key), Ok(Some(rec)) if rec.expired(now_ms)),
            )
        })
    }

    /// Adds `keys` of database `db` to `watch`, in the merger's execution order: every change
    /// ordered after this marks it, and once the handle resolves the published state holds
    /// every change ordered before it. A key that has expired but is still stored is watched
    /// as stale (its removal is not a change).
    pub fn watch(&self, watch: &Watch, db: u8, keys: Vec<Bytes>) -> CommitHandle<()> {
        let shared = watch.share();
        self.read_in_order(db, move |k| {
            for key in keys {
                // A record that does not decode counts as live: its key is watched normally.
                let stale = matches!(
                    k.get_including_expired(&key),
                    Ok(Some(rec)) if rec.expired(k.now_ms)
                );
                shared.register(db, &key, stale);
            }
        })
    }

    /// Runs `f` as one transaction in the merger's execution order (EXEC): every op it
    /// applies and every read it makes sees one state that nothing else changes meanwhile,
    /// and its writes become durable together or not at all. With a `watch`, the transaction
    /// first checks it — no watched key written, deleted or replaced by a catalog change
    /// since it was watched, none live then expired by `now_ms` — and if one changed, calls
    /// `f(None)` instead; the watch is dropped (its keys unwatched) right after the check, in
    /// the same order. `now_ms` is the instant the whole transaction is judged at.
    pub fn transaction<T, F>(&self, watch: Option<Watch>, now_ms: i64, f: F) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(Option<&mut Transaction<'_, '_>>) -> T + Send + 'static,
    {
        self.transaction_as(None, watch, now_ms, f)
    }

    /// [`Keyspace::transaction`], telling the key-change sink the changes come from client
    /// `origin` when given (see [`Keyspace::enqueue_as`]).
    pub fn transaction_as<T, F>(
        &self,
        origin: Option<u64>,
        watch: Option<Watch>,
        now_ms: i64,
        f: F,
    ) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(Option<&mut Transaction<'_, '_>>) -> T + Send + 'static,
    {
        self.transaction_in(false, origin, watch, now_ms, f)
    }

    /// [`Keyspace::transaction_as`] for a transaction that may run for long (a script): no
    /// thread that submits writes executes it (see `Merger::enqueue_long`), so they go on
    /// serving meanwhile.
    pub fn long_transaction_as<T, F>(
        &self,
        origin: Option<u64>,
        watch: Option<Watch>,
        now_ms: i64,
        f: F,
    ) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(Option<&mut Transaction<'_, '_>>) -> T + Send + 'static,
    {
        self.transaction_in(true, origin, watch, now_ms, f)
    }

    fn transaction_in<T, F>(
        &self,
        long: bool,
        origin: Option<u64>,
        watch: Option<Watch>,
        now_ms: i64,
        f: F,
    ) -> CommitHandle<T>
    where
        T: Send + 'static,
        F: FnOnce(Option<&mut Transaction<'_, '_>>) -> T + Send + 'static,
    {
        let stores = Arc::clone(&self.stores);
        let job = move |tx: &mut TxnContext<'_, Db>| {
            let run = |tx: &mut TxnContext<'_, Db>| {
                let mut t = Transaction {
                    tx,
                    stores: &stores,
                    now_ms,
                };
                let intact = watch.as_ref().is_none_or(|w| t.watch_intact(&w.share()));
                drop(watch);
                let out = if intact { f(Some(&mut t)) } else { f(None) };
                // Blocked clients are served after the whole transaction, as Redis serves
                // them after EXEC or a script.
                crate::blocking::serve(tx, &stores, now_ms);
                Ok(out)
            };
            match origin {
                Some(origin) => crate::watch::with_origin(origin, || run(tx)),
                None => run(tx),
            }
        };
        if long {
            self.merger.enqueue_long(job)
        } else {
            self.merger.enqueue(job)
        }
    }

    /// Executes what is queued on the calling thread when the merger runs groups inline (see
    /// `MergerOptions::inline_execution`).
    pub fn run_queued(&self) {
        self.merger.run_queued();
    }

    /// A hint that these user keys of database `db` are read next (a pipeline of GETs): their
    /// row-cache lines are fetched together, so the misses overlap.
    pub fn prefetch<'k>(&self, db: u8, keys: impl IntoIterator<Item = &'k [u8]>) {
        let catalog = self.stores.read_catalog();
        let (buf, ends) = read_keys(
            &catalog,
            self.stores.dbs.read_physical(db),
            keys.into_iter().take(rialto_lsm::PREFETCH_MAX),
        );
        let mut refs: Vec<&[u8]> = Vec::with_capacity(ends.len());
        let mut start = 0;
        for &end in &ends {
            refs.push(&buf[start..end]);
            start = end;
        }
        self.db.prefetch(&refs);
    }

    /// Visits the live keys of database `db` in key order from the user key `from`
    /// (inclusive), as the published state holds them at `now_ms`; in database 0 a store's
    /// keys come from its current version, in their place in the order. `visit` returns
    /// `false` to stop; then the user key a later walk resumes at is returned (`None`: the
    /// walk reached the end).
    pub fn walk_keys(
        &self,
        db: u8,
        from: Option<&[u8]>,
        now_ms: i64,
        visit: impl FnMut(&[u8], &Record) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        self.walk_keys_in(0, db, from, now_ms, visit)
    }

    /// Keys of database `db`, and how many of them have a TTL, from maintained counts (no
    /// walk): in partition `part` only, or in all. As in Redis, keys whose time has passed
    /// count until the expiry pass removes them.
    pub fn key_count(&self, db: u8, part: Option<u32>) -> KeyCount {
        use crate::counts::Unit;
        let catalog = self.stores.read_catalog();
        let mut current = std::collections::HashSet::new();
        if db == 0 {
            for p in 0..catalog.partitions() {
                if part.is_none_or(|q| q == p) {
                    for s in catalog.by_prefix_in(p) {
                        current.insert((s.id, s.current.number, p));
                    }
                }
            }
        }
        let physical = self.stores.dbs.read_physical(db);
        let t = self.stores.counts().sum(|u| match *u {
            Unit::Db { db: d, part: p } => d == physical && part.is_none_or(|q| q == p),
            Unit::Version {
                id,
                version,
                part: p,
            } => current.contains(&(id, version, p)),
        });
        KeyCount {
            keys: t.keys.max(0) as u64,
            expires: t.expires.max(0) as u64,
        }
    }

    /// [`Keyspace::walk_keys`] with stores routed as partition `part` holds them: in cluster
    /// mode, a walk over the keys of one partition's slots.
    pub fn walk_keys_in(
        &self,
        part: u32,
        db: u8,
        from: Option<&[u8]>,
        now_ms: i64,
        visit: impl FnMut(&[u8], &Record) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        crate::walk::walk_keys(
            &self.db,
            &self.stores.read_catalog(),
            part,
            self.stores.dbs.read_physical(db),
            from,
            now_ms,
            visit,
        )
    }

    /// A live key of database `db` drawn at random, as the published state holds it at
    /// `now_ms`, stores routed as partition `part` holds them: each live key that `accept`
    /// takes is equally likely, at any size and however the keys are spread
    /// (`docs/design.md` §11.4). [`RandomKey::Undecided`] when bounded draws found none.
    pub fn random_key_in(
        &self,
        part: u32,
        db: u8,
        now_ms: i64,
        rng: &mut impl rand::Rng,
        accept: impl FnMut(&[u8]) -> bool,
    ) -> Result<RandomKey> {
        crate::walk::random_key(
            &self.db,
            &self.stores.read_catalog(),
            part,
            self.stores.dbs.read_physical(db),
            now_ms,
            rng,
            accept,
        )
    }

    /// Deletes every key of database `db`, or of every database (`None`): FLUSHDB and
    /// FLUSHALL, as [`OpKind::FlushStep`] ops of [`FLUSH_STEP_KEYS`] deletions until one
    /// deletes fewer; returns once the last is durable. Each step is atomic, the whole is not:
    /// a write applied between two steps may survive the flush, as the journal orders them.
    pub fn flush(&self, db: Option<u8>) -> Result<()> {
        loop {
            let op = Op::new(
                db.unwrap_or(0),
                self.now_ms(),
                OpKind::FlushStep {
                    all: db.is_none(),
                    limit: FLUSH_STEP_KEYS,
                },
            );
            match self.execute(op)? {
                Value::Int(n) if (n as u64) < FLUSH_STEP_KEYS => return Ok(()),
                Value::Int(_) => {}
                _ => return Ok(()),
            }
        }
    }

    /// One pass of active expiry over database `db`: up to `batch` due entries of the expiry
    /// index ([`Keyspace::due_expiries`]) go into one [`OpKind::ExpireDue`], which deletes each
    /// key whose record still expires at that time, with the entries. Returns how many keys it
    /// deleted.
    pub fn expire_pass(&self, db: u8, batch: usize) -> Result<u64> {
        let now = self.now_ms();
        let entries = self.due_expiries(db, now, batch)?;
        if entries.is_empty() {
            return Ok(0);
        }
        match self.execute(Op::new(db, now, OpKind::ExpireDue { entries }))? {
            Value::Int(n) => Ok(n.max(0) as u64),
            _ => Ok(0),
        }
    }

    /// Up to `batch` entries of database `db`'s expiry index that are due at `now_ms`
    /// (expired: `at < now_ms`, a key lives through its own millisecond), in time order, as
    /// the published state holds them: database, time, key.
    pub fn due_expiries(&self, db: u8, now_ms: i64, batch: usize) -> Result<Vec<(u8, i64, Bytes)>> {
        let (lo, hi) = layout::expiry_due_range(db, now_ms - 1);
        let mut it = self.db.iter(IterOptions {
            lower: Some(lo),
            upper: Some(hi),
            snapshot: None,
        })?;
        it.seek_to_first();
        let mut entries = Vec::new();
        while it.valid() && entries.len() < batch {
            if let Some((d, at, key)) = layout::parse_expiry_key(it.key()) {
                entries.push((d, at, Bytes::copy_from_slice(key)));
            }
            it.next();
        }
        it.status()?;
        Ok(entries)
    }

    /// Deletes up to `budget` member keys of released collection versions (a deleted,
    /// expired or overwritten large collection's), and the `released` record of each version
    /// left without members; returns how many keys it deleted. Nothing writes a released
    /// version again, so the deletions are blind.
    pub fn reclaim_pass(&self, budget: usize) -> Result<u64> {
        let (lo, hi) = collections::released_range();
        let released = Published::new(&self.db).scan_raw(&lo, &hi, budget.max(1))?;
        let mut batch = rialto_engine::WriteBatch::new();
        let mut deleted = 0u64;
        // Resume points to record once the batch is written (`None`: the version is done).
        let mut resume = Vec::new();
        for (key, _) in released {
            let Some(version) = collections::released_version(&key) else {
                continue;
            };
            let left = budget.saturating_sub(deleted as usize);
            if left == 0 {
                break;
            }
            let (mlo, mhi) = collections::member_range(version);
            let from = self.reclaimed_to.lock().get(&version).cloned();
            let from = from.unwrap_or(mlo);
            let members = Published::new(&self.db).scan_raw(&from, &mhi, left)?;
            let done = members.len() < left;
            let next = members.last().map(|(m, _)| [&m[..], &[0]].concat());
            for (m, _) in members {
                batch.delete(&m);
                deleted += 1;
            }
            if done {
                batch.delete(&key);
            }
            resume.push((version, if done { None } else { next }));
        }
        if !batch.is_empty() {
            self.merger.write(batch).wait()?;
        }
        let mut to = self.reclaimed_to.lock();
        for (version, next) in resume {
            match next {
                Some(k) => to.insert(version, k),
                None => to.remove(&version),
            };
        }
        Ok(deleted)
    }

    /// When collections become large (`hash-max-listpack-entries` and the like).
    pub fn encodings(&self) -> &crate::collections::Encodings {
        &self.stores.encodings
    }

    /// One pass of store upkeep: retired versions removed, real-time logs pruned.
    pub fn maintenance_pass(&self) -> std::result::Result<crate::stores::PassReport, StoreError> {
        crate::stores::maintenance::run_once(&self.stores, &self.db, &self.merger, self.now_ms())
    }

    /// A digest of the whole database's contents (every engine key and value, in order):
    /// equal digests mean equal contents. For checking that replicas agree.
    pub fn digest(&self) -> Result<u64> {
        let mut it = self.db.iter(IterOptions::default())?;
        it.seek_to_first();
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        while it.valid() {
            h.update(&(it.key().len() as u64).to_le_bytes());
            h.update(it.key());
            h.update(&(it.value().len() as u64).to_le_bytes());
            h.update(it.value());
            it.next();
        }
        it.status()?;
        Ok(h.digest())
    }

    /// Every replicated-log partition's stored state (see [`Transaction::set_log_state`]), in
    /// partition order, as the published state holds them.
    pub fn log_states(&self) -> Result<Vec<(u32, Bytes)>> {
        crate::log_state::load_all(&self.db)
    }

    /// Every stored function library, in name order, as the published state holds them.
    pub fn libraries(&self) -> Result<Vec<crate::op::LibrarySource>> {
        crate::library::load_all(&self.db, &crate::library::scope(None))
    }

    /// The function libraries of cluster partition `partition`, in name order.
    pub fn partition_libraries(&self, partition: u32) -> Result<Vec<crate::op::LibrarySource>> {
        crate::library::load_all(&self.db, &crate::library::scope(Some(partition)))
    }

    /// The engine's counters.
    pub fn engine_stats(&self) -> EngineStats {
        self.db.stats()
    }

    /// TRIAD's counters.
    pub fn triad_stats(&self) -> TriadStats {
        self.db.triad_stats()
    }

    /// The engine's I/O timeline and totals (journal writes and syncs, flushes, compactions).
    pub fn io_stats(&self) -> IoStats {
        self.db.io_stats()
    }

    /// [`Keyspace::io_stats`] with only the newest `limit` events of the timeline.
    pub fn io_stats_recent(&self, limit: usize) -> IoStats {
        self.db.io_stats_recent(limit)
    }

    /// Makes every write logged so far durable (one sync of the journal), whatever
    /// `appendfsync` defers: SAVE.
    pub fn sync(&self) -> Result<()> {
        self.db.sync_log()?;
        Ok(())
    }

    /// Why the engine refuses writes, if it does.
    pub fn read_only_reason(&self) -> Option<String> {
        self.db.read_only_reason()
    }

    /// The merger's counters.
    pub fn merger_stats(&self) -> MergerStats {
        self.merger.stats()
    }

    /// A key of the default store under `prefix`, which a new store there would hide.
    pub fn default_key_under(&self, prefix: &[u8]) -> Result<Option<String>> {
        Ok(crate::stores::default_key_under(&self.db, prefix)?)
    }

    /// Publishes the store catalog changes of transactions now durable to reads (cluster
    /// mode: the applier's transactions change the catalog through the log).
    pub fn publish_catalog(&self) {
        self.stores.publish(&self.db);
    }

    /// Puts the calling thread (and the threads it starts) at the CPU priority of pushes
    /// (`push-nice`): for a thread that loads pushed versions, as the ingestion pool's do.
    pub fn lower_to_push_priority(&self) {
        crate::stores::lower_thread_priority(self.stores.push_priority());
    }

    /// Loads version `version` of store `id` from string records in key order (see
    /// `Stores::stage_sorted`).
    pub fn stage_sorted<T: crate::SortedRecords>(
        &self,
        id: u32,
        version: u32,
        prefix: &[u8],
        compression: rialto_lsm::Compression,
        records: &mut T,
    ) -> Result<crate::Staged> {
        self.stage_sorted_as(
            id,
            version,
            prefix,
            compression,
            crate::PushLayout::String,
            records,
        )
    }

    /// Loads version `version` of store `id` from records of `layout` in key order (see
    /// `Stores::stage_sorted`).
    pub fn stage_sorted_as<T: crate::SortedRecords>(
        &self,
        id: u32,
        version: u32,
        prefix: &[u8],
        compression: rialto_lsm::Compression,
        layout: crate::PushLayout,
        records: &mut T,
    ) -> Result<crate::Staged> {
        Ok(self.stores.stage_sorted(
            &self.db,
            &self.merger,
            id,
            version,
            prefix,
            compression,
            layout,
            records,
        )?)
    }

    /// Version `version` of store `id`, if this node staged it.
    pub fn staged_version(&self, id: u32, version: u32) -> Result<Option<crate::Staged>> {
        Ok(self.stores.staged(&self.db, id, version)?)
    }

    /// Records a superseded version as staged with no data (see
    /// `Stores::stage_superseded`).
    pub fn stage_superseded_version(&self, id: u32, version: u32) -> Result<()> {
        Ok(self.stores.stage_superseded(&self.merger, id, version)?)
    }

    /// Removes what an interrupted load of a version left (see `Stores::clear_unstaged`).
    pub fn clear_unstaged_version(&self, id: u32, version: u32) -> Result<()> {
        Ok(self
            .stores
            .clear_unstaged(&self.db, &self.merger, id, version)?)
    }

    /// The store catalog reads of the published state route with.
    pub fn catalog(&self) -> arc_swap::Guard<Arc<Catalog>> {
        self.stores.read_catalog()
    }

    /// Creates store `name` owning keys that start with `prefix` (its version 1 is empty);
    /// waits until the change is durable.
    pub fn create_store(
        &self,
        name: &str,
        prefix: &[u8],
        rewind_ms: u64,
    ) -> StoreResult<StoreMeta> {
        self.create_store_with(name, prefix, rewind_ms, StoreSettings::default())
    }

    /// [`Keyspace::create_store`] with settings; one left out takes its default (compression:
    /// [`Keyspace::compression`]).
    pub fn create_store_with(
        &self,
        name: &str,
        prefix: &[u8],
        rewind_ms: u64,
        settings: StoreSettings,
    ) -> StoreResult<StoreMeta> {
        let now = self.now_ms();
        self.stores.create(
            &self.db,
            &self.merger,
            name,
            prefix,
            rewind_ms,
            settings,
            now,
        )
    }

    /// Changes the settings of store `name` that `settings` sets; waits until durable.
    pub fn configure_store(&self, name: &str, settings: StoreSettings) -> StoreResult<StoreMeta> {
        self.stores
            .configure(&self.merger, name, settings, self.now_ms())
    }

    /// Deletes store `name`: its keys return to the default store (empty under the prefix),
    /// its data is removed in the background.
    pub fn delete_store(&self, name: &str) -> StoreResult<()> {
        self.stores.delete(&self.merger, name, self.now_ms())
    }

    /// Switches store `name` back to kept version `to` (default: the newest older one) and
    /// retires the versions it leaves; waits until both changes are durable.
    pub fn rollback_store(&self, name: &str, to: Option<u32>) -> StoreResult<StoreMeta> {
        self.stores.rollback(&self.merger, name, to, self.now_ms())
    }

    /// Begins a push of strings into store `name` (owned by connection `owner`, if any);
    /// returns its id. `guard` (default: the store options') says what it must load to be
    /// swapped in.
    pub fn push_begin(
        &self,
        name: &str,
        duplicates: DuplicatePolicy,
        guard: Option<PushGuard>,
        owner: Option<u64>,
    ) -> StoreResult<u64> {
        self.push_begin_with(
            name,
            crate::PushOptions {
                duplicates,
                guard,
                owner,
                layout: crate::PushLayout::String,
            },
        )
    }

    /// Begins a push into store `name` as `opts` say (its layout among them); returns its id.
    pub fn push_begin_with(&self, name: &str, opts: crate::PushOptions) -> StoreResult<u64> {
        self.stores.push_begin(
            &self.merger,
            Arc::clone(&self.fs),
            name,
            opts,
            self.now_ms(),
        )
    }

    /// Adds records (keys relative to the store's prefix) to push `id`; a bad record aborts it.
    /// `caller` is the connection asking (`None`: in-process); a push begun by another
    /// connection refuses it ([`StoreError::NotOwner`]), and so do commit and abort.
    pub fn push_add<'a>(
        &self,
        id: u64,
        caller: Option<u64>,
        records: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> StoreResult<u64> {
        self.stores.push_add(&self.merger, id, caller, records)
    }

    /// Adds to push `id` the records `fill` passes to `add`, under one hold of the push's lock
    /// (a reader hands each record straight to the sort buffer). When `add` refuses a record,
    /// the push is aborted, and `fill` should return that error.
    pub fn push_add_with<T, E: From<StoreError>>(
        &self,
        id: u64,
        caller: Option<u64>,
        fill: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> StoreResult<()>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.stores.push_add_with(&self.merger, id, caller, fill)
    }

    /// Sorts, writes and links push `id`'s data, replays the streamed writes and swaps the new
    /// version in (on the calling thread). On failure the current version stays.
    pub fn push_commit(&self, id: u64, caller: Option<u64>) -> StoreResult<PushReport> {
        let clock = Arc::clone(&self.clock);
        self.stores
            .push_commit(&self.db, &self.merger, id, caller, move || {
                clock.unix_millis() as i64
            })
    }

    /// Aborts push `id`: its files are removed and the store keeps its current version.
    pub fn push_abort(&self, id: u64, caller: Option<u64>) -> StoreResult<()> {
        self.stores.push_abort(&self.merger, id, caller)
    }

    /// Pushes in progress: id and store.
    pub fn pushes(&self) -> Vec<(u64, String)> {
        self.stores.pushes.list()
    }

    /// Pushes in progress with how far each is (phase, records, bytes), by id.
    pub fn push_statuses(&self) -> Vec<crate::stores::PushStatus> {
        self.stores.pushes.statuses()
    }

    /// Pushes begun, committed, aborted and refused since start.
    pub fn push_counts(&self) -> crate::stores::PushCounts {
        self.stores.pushes.counts()
    }

    /// Whether connection `client` owns a push in progress.
    pub fn owns_push(&self, client: u64) -> bool {
        self.stores.pushes.owned_by(client)
    }

    /// Aborts every push begun by connection `client` (it closed without committing).
    pub fn abort_pushes_of(&self, client: u64) {
        self.stores.abort_owned_by(&self.merger, client);
    }

    /// Runs `job` on the ingestion pool (where pushes sort and write, at their CPU priority);
    /// its result arrives on the returned channel.
    pub fn run_on_ingestion_pool<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<T> {
        self.stores.pushes.run(job)
    }

    /// Stops: waits for the ingestion pool's jobs, aborts idle pushes, commits and syncs
    /// everything queued, then flushes the memtable so a restart replays nothing (a failed
    /// flush is only logged: the synced journal holds every write).
    pub fn close(&self) -> Result<()> {
        self.stores.pushes.wait_idle();
        self.stores.abort_idle_pushes(&self.merger);
        self.merger.close()?;
        if self.db.read_only_reason().is_none() {
            if let Err(e) = self.db.flush() {
                tracing::warn!(error = %e, "flush at shutdown failed; the journal will be replayed at start");
            }
        }
        Ok(())
    }
}

/// Removes what pushes a stop interrupted left in the spill directory: their runs and their
/// own directories (`push-N`). Best effort: what cannot be removed is logged and left for
/// the next start.
fn empty_spill_dir(fs: &dyn rialto_io::Fs, tmp: &Path) {
    let Ok(dirs) = fs.list_dir(tmp) else {
        return;
    };
    for d in dirs {
        let sub = tmp.join(&d);
        let removed = match fs.list_dir(&sub) {
            Ok(files) => files
                .iter()
                .try_for_each(|f| fs.remove_file(&sub.join(f)))
                .and_then(|()| fs.remove_dir(&sub)),
            Err(_) => fs.remove_file(&sub),
        };
        if let Err(e) = removed {
            tracing::warn!(path = %sub.display(), error = %e, "cannot remove a push's leftover spill files");
        }
    }
}

/// One transaction in the merger (see [`Keyspace::transaction`]).
pub struct Transaction<'t, 'c> {
    tx: &'t mut TxnContext<'c, Db>,
    stores: &'t Stores,
    now_ms: i64,
}

impl Transaction<'_, '_> {
    /// Where the transaction stands now: [`Transaction::rollback_to`] drops every write
    /// made after it.
    pub fn savepoint(&self) -> rialto_txn::Savepoint {
        self.tx.savepoint()
    }

    /// Drops every write made since `at`.
    pub fn rollback_to(&mut self, at: rialto_txn::Savepoint) {
        self.tx.rollback_to(at);
    }

    /// Applies `op` as one command of the transaction: if it fails, its own writes are
    /// dropped and those of the commands before it stay. A catalog change is refused (it runs
    /// alone, see [`Keyspace::execute`]); a flush deletes everything it covers in one step.
    pub fn apply(&mut self, op: &Op) -> Result<Value> {
        match op.kind {
            OpKind::Store(_) => Err(Error::BadOp("a catalog change cannot run in a transaction")),
            OpKind::FlushStep { all, .. } => {
                let whole = Op::new(
                    op.db,
                    op.now_ms,
                    OpKind::FlushStep {
                        all,
                        limit: u64::MAX,
                    },
                );
                crate::apply::apply(self.tx, self.stores, &whole).map(|_| Value::Ok)
            }
            _ => crate::apply::apply(self.tx, self.stores, op),
        }
    }

    /// Runs `f` on the keys of database `db` as the transaction sees them, at its instant.
    pub fn read<T>(&mut self, db: u8, f: impl FnOnce(&mut Reader<'_>) -> T) -> T {
        let catalog = self.stores.exec_catalog();
        let mut io = Txn(&mut *self.tx);
        let mut k: Reader<'_> = Keys {
            io: &mut io,
            db: self.stores.dbs.physical(db),
            now_ms: self.now_ms,
            stores: &catalog,
            rt: None,
            watches: None,
        };
        f(&mut k)
    }

    /// The instant the transaction is judged at, Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// Judges expiry at `now_ms` from here on, and gives it as [`Transaction::now_ms`]: a
    /// replicated record's own time, so that every replica judges its reads alike.
    pub fn set_now_ms(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
    }

    /// Stores `state` as the replicated log's state of `partition` (opaque bytes, the
    /// position the records this transaction applies lead to), durable with them.
    pub fn set_log_state(&mut self, partition: u32, state: &[u8]) {
        self.tx.put(&crate::log_state::key(partition), state);
    }

    /// Whether no watched key changed: none was written, deleted or replaced by a catalog
    /// change since it was watched, and none that was live then has expired by now.
    fn watch_intact(&mut self, w: &WatchRef) -> bool {
        if w.is_dirty() {
            return false;
        }
        for (db, key) in w.live_when_watched() {
            let now = self.now_ms;
            let expired = self.read(
                db,
                |k| matches!(k.get_including_expired(&key), Ok(Some(rec)) if rec.expired(now)),
            );
            if expired {
                return false;
            }
        }
        true
    }
}
