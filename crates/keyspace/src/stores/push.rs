//! Batch pushes: records arrive in any order, are sorted with bounded memory (spilling to
//! disk), written straight into table files of a new version (no WAL, no memtable: Venice's
//! deferred write), linked into the bottom level, and swapped in with the streamed writes
//! made meanwhile replayed on top.
//!
//! Steps and what a crash at each leaves (the old version serves throughout):
//! 1. begin: the store record names the pushed version (durable) — a crash retires it at the
//!    next start ([`super::Stores::recover`]).
//! 2. add: records go to the sorter — spill files are temporary, removed on abort and at
//!    the next start (the spill directory is emptied).
//! 3. commit: tables are written and synced, then linked by one manifest edit — before the
//!    edit they are orphans removed at open; after it they hold a version nobody reads.
//! 4. replay: real-time log entries are copied onto the new version in transactions.
//! 5. swap: one transaction replays the rest, makes the new version current, keeps the old
//!    current and retires the oldest kept version beyond the store's `keep`. Before it is
//!    durable, a restart finds the push still recorded (step 1).
//!
//! Heavy work (sorting, table writing) runs on one fixed-size thread pool shared by every
//! push, never on connection threads.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rialto_engine::{EngineIterator, IterOptions, KvEngine};
use rialto_io::ThreadPriority;
use rialto_lsm::Db;
use rialto_sort::{DuplicatePolicy, SortOptions, Sorter};
use rialto_txn::{Merger, TxnContext};

use super::catalog::{rt_key, rt_number, rt_range, version_key, RtEntry};
use super::progress::{PushCounters, PushCounts, PushPhase, PushProgress, PushStatus};
use super::push_layout::PushLayout;
use super::table_writer;
use super::{PushGuard, Pushing, StoreError, StoreMeta, StoreResult, Stores, VersionInfo};
use crate::chunked::ChunkedWriter;
use crate::layout;

/// Real-time log entries per replay transaction before the swap.
const REPLAY_CHUNK: usize = 1000;
/// The swap replays at most about this many entries itself (the rest go before it).
const SWAP_TAIL: usize = 256;

/// What a push did.
#[derive(Debug, Clone, Default)]
pub struct PushReport {
    /// Store name.
    pub store: String,
    /// The version now current.
    pub version: u32,
    /// Records loaded.
    pub records: u64,
    /// Key and value bytes loaded.
    pub bytes: u64,
    /// Table files written.
    pub files: u64,
    /// Bytes of those files.
    pub file_bytes: u64,
    /// Sorted runs spilled to disk.
    pub runs_spilled: u64,
    /// Duplicate keys dropped (last-wins).
    pub duplicates_dropped: u64,
    /// Streamed writes replayed onto the new version.
    pub replayed: u64,
    /// Time from begin to swap.
    pub elapsed: Duration,
    /// The commit's phases in order, with their wall time: `sort` (the last run spilled),
    /// `write` (the runs merged into tables), `link` (the last table synced, all linked),
    /// `replay` (streamed writes copied and the swap made durable), `cleanup` (the spilled
    /// runs removed).
    pub phases: Vec<(&'static str, Duration)>,
}

/// How a push begins: what it does with a key given twice, what it must load, who owns it
/// and what its values are.
#[derive(Debug, Clone, Copy)]
pub struct PushOptions {
    /// A key given twice fails the push, or the last record wins.
    pub duplicates: DuplicatePolicy,
    /// What it must load to be swapped in; `None`: the store options'.
    pub guard: Option<PushGuard>,
    /// The connection that began it (`None`: in-process): only it may add, commit or abort.
    pub owner: Option<u64>,
    /// What every value is; each is checked against it as it is added.
    pub layout: PushLayout,
}

impl Default for PushOptions {
    fn default() -> Self {
        PushOptions {
            duplicates: DuplicatePolicy::Error,
            guard: None,
            owner: None,
            layout: PushLayout::String,
        }
    }
}

struct Session {
    store: String,
    meta: StoreMeta,
    pushing: Pushing,
    guard: PushGuard,
    layout: PushLayout,
    sorter: Option<Sorter>,
    started: Instant,
    progress: Arc<PushProgress>,
    /// Declared after `sorter`, so dropped after it: the directory is empty by then.
    _spill_dir: SpillDir,
}

/// A push's own spill directory (`push-tmp/push-<id>`), removed when the push ends — after a
/// commit, an abort or a failure — once its runs are gone. One left by a crash (or that
/// could not be removed) is swept at the next start.
pub(super) struct SpillDir {
    pub(super) fs: rialto_io::FsRef,
    pub(super) path: PathBuf,
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        match self.fs.remove_dir(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(
                dir = %self.path.display(),
                error = %e,
                "cannot remove a push's spill directory; the next start removes it"
            ),
        }
    }
}

/// A push in the registry. Store and owner are kept outside the session's lock, which a
/// commit holds for its whole run.
struct Entry {
    store: String,
    owner: Option<u64>,
    session: Arc<Mutex<Session>>,
    progress: Arc<PushProgress>,
}

/// Pushes in progress, by id, and the ingestion pool. A push's id is the number of the
/// version it loads: unique among the pushes in progress (see `apply::catalog::push_begin`).
pub struct Pushes {
    sessions: Mutex<HashMap<u64, Entry>>,
    pool: Pool,
    counters: PushCounters,
}

impl Pushes {
    /// A registry whose pool has `threads` threads at CPU priority `nice`.
    pub fn new(threads: usize, nice: ThreadPriority) -> Pushes {
        Pushes {
            sessions: Mutex::new(HashMap::new()),
            pool: Pool::new(threads, nice),
            counters: PushCounters::default(),
        }
    }

    /// Runs `job` on the ingestion pool; the result arrives on the returned channel.
    pub fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pool.spawn(Box::new(move || {
            let _ = tx.send(job());
        }));
        rx
    }

    /// Waits for every job on the ingestion pool to finish: at shutdown, so that none still
    /// holds the server (and with it the database and its directory lock) once it stopped.
    pub fn wait_idle(&self) {
        self.pool.wait_idle();
    }

    /// Pushes in progress: (id, store).
    pub fn list(&self) -> Vec<(u64, String)> {
        let mut v: Vec<(u64, String)> = self
            .sessions
            .lock()
            .iter()
            .map(|(id, e)| (*id, e.store.clone()))
            .collect();
        v.sort();
        v
    }

    /// Pushes in progress with how far each is, by id.
    pub fn statuses(&self) -> Vec<PushStatus> {
        let mut v: Vec<PushStatus> = self
            .sessions
            .lock()
            .iter()
            .map(|(id, e)| e.progress.status(*id, &e.store, e.owner))
            .collect();
        v.sort_by_key(|s| s.id);
        v
    }

    /// Pushes begun and ended since start.
    pub fn counts(&self) -> PushCounts {
        self.counters.counts()
    }

    /// Whether connection `client` began a push that is still open.
    pub fn owned_by(&self, client: u64) -> bool {
        self.sessions
            .lock()
            .values()
            .any(|e| e.owner == Some(client))
    }

    /// Push `id`'s session, for `caller` (`None`: in-process, any push). A push begun by a
    /// connection is that connection's alone: another gets [`StoreError::NotOwner`].
    fn session(&self, id: u64, caller: Option<u64>) -> StoreResult<Arc<Mutex<Session>>> {
        let sessions = self.sessions.lock();
        let e = sessions.get(&id).ok_or(StoreError::NoSuchPush(id))?;
        check_owner(id, e.owner, caller)?;
        Ok(Arc::clone(&e.session))
    }
}

/// Whether `caller` may act on push `id`, begun by `owner`.
fn check_owner(id: u64, owner: Option<u64>, caller: Option<u64>) -> StoreResult<()> {
    match (owner, caller) {
        (Some(owner), Some(caller)) if owner != caller => Err(StoreError::NotOwner { id, owner }),
        _ => Ok(()),
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Gives the calling thread CPU priority `p` (`rialto_io::set_thread_priority`); the sort's
/// spill and helper threads and the table writer of a push inherit it. Best effort: a
/// failure is logged.
pub fn lower_thread_priority(p: ThreadPriority) {
    if let Err(e) = rialto_io::set_thread_priority(p) {
        match p {
            ThreadPriority::Idle => {
                tracing::warn!(error = %e, "SCHED_IDLE refused; push threads run at niceness 19")
            }
            ThreadPriority::Nice(nice) => {
                tracing::warn!(error = %e, nice, "cannot lower a push thread's priority")
            }
        }
    }
}

/// Counts a pool job out of [`Pool::busy`] when dropped.
struct JobDone(Arc<(Mutex<usize>, Condvar)>);

impl Drop for JobDone {
    fn drop(&mut self) {
        let mut n = self.0 .0.lock();
        *n -= 1;
        if *n == 0 {
            self.0 .1.notify_all();
        }
    }
}

/// A fixed set of threads running jobs in submission order.
struct Pool {
    tx: Mutex<mpsc::Sender<Job>>,
    /// Jobs spawned and not yet finished (their captures dropped), for [`Pool::wait_idle`].
    busy: Arc<(Mutex<usize>, Condvar)>,
}

impl Pool {
    fn new(threads: usize, nice: ThreadPriority) -> Pool {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("rialto-ingest-{i}"))
                .spawn(move || {
                    lower_thread_priority(nice);
                    loop {
                        let job = rx.lock().recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start an ingestion thread");
            }
        }
        Pool {
            tx: Mutex::new(tx),
            busy: Arc::new((Mutex::new(0), Condvar::new())),
        }
    }

    fn spawn(&self, job: Job) {
        *self.busy.0.lock() += 1;
        // Counted out when the job is dropped: after it ran, after it panicked, or unrun.
        let done = JobDone(Arc::clone(&self.busy));
        let job: Job = Box::new(move || {
            let _done = done;
            job();
        });
        // The receiver lives as long as any pool thread; if none could start, run here.
        if let Err(mpsc::SendError(job)) = self.tx.lock().send(job) {
            job();
        }
    }

    /// Waits until every job spawned so far has finished.
    fn wait_idle(&self) {
        let mut n = self.busy.0.lock();
        while *n > 0 {
            self.busy.1.wait(&mut n);
        }
    }
}

impl Stores {
    /// Begins a push into store `name` as `opts` say; returns its id.
    pub fn push_begin(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        fs: rialto_io::FsRef,
        name: &str,
        opts: PushOptions,
        now_ms: i64,
    ) -> StoreResult<u64> {
        let PushOptions {
            duplicates,
            guard,
            owner,
            layout,
        } = opts;
        let meta = self.begin_push(merger, name, now_ms)?;
        let pushing = meta
            .pushing
            .ok_or_else(|| StoreError::Corrupt("the push was not recorded".into()))?;
        let id = u64::from(pushing.version);
        let spill_dir = SpillDir {
            fs: Arc::clone(&fs),
            path: self.opts.push_tmp_dir.join(format!("push-{id}")),
        };
        let sorter = Sorter::new(
            fs,
            SortOptions {
                memory_limit: self.opts.push_memory_limit,
                tmp_dir: spill_dir.path.clone(),
                duplicates,
                max_key_len: layout::MAX_USER_KEY_LEN.saturating_sub(meta.prefix.len()),
                max_value_len: layout::MAX_USER_VALUE_LEN,
            },
        );
        let sorter = match sorter {
            Ok(s) => s,
            Err(e) => {
                let _ = self.end_push(merger, name, None);
                return Err(StoreError::Input(e.to_string()));
            }
        };
        let progress = Arc::new(PushProgress::new(Some(sorter.watch())));
        let session = Session {
            store: name.to_string(),
            meta,
            pushing,
            guard: guard.unwrap_or(self.opts.push_guard),
            layout,
            sorter: Some(sorter),
            started: Instant::now(),
            progress: Arc::clone(&progress),
            _spill_dir: spill_dir,
        };
        let entry = Entry {
            store: name.to_string(),
            owner,
            session: Arc::new(Mutex::new(session)),
            progress,
        };
        self.pushes.sessions.lock().insert(id, entry);
        PushCounters::bump(&self.pushes.counters.begun);
        let g = guard.unwrap_or(self.opts.push_guard);
        tracing::info!(
            store = name,
            version = id,
            min_records = g.min_records,
            max_shrink_percent = g.max_shrink_percent,
            layout = layout.name(),
            client = owner.unwrap_or(0),
            "push begun"
        );
        Ok(id)
    }

    /// Adds records (keys relative to the store's prefix) to push `id`, for `caller` (the
    /// connection asking; `None` in-process). On a bad record the push is aborted.
    pub fn push_add<'a>(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        id: u64,
        caller: Option<u64>,
        records: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> StoreResult<u64> {
        self.push_add_with(merger, id, caller, |add| {
            let mut n = 0u64;
            for (k, v) in records {
                add(k, v)?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// Adds to push `id` the records `fill` passes to `add` (keys relative to the store's
    /// prefix), under one hold of the push's lock: a caller reading them from an input hands
    /// each straight to the sorter, without copying it first. Returns what `fill` returns. When
    /// `add` refuses a record (a value that does not fit the push's layout, a key too long),
    /// the push is aborted, and `fill` should return that error.
    pub fn push_add_with<T, E: From<StoreError>>(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        id: u64,
        caller: Option<u64>,
        fill: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> StoreResult<()>) -> Result<T, E>,
    ) -> Result<T, E> {
        let s = self.pushes.session(id, caller)?;
        let mut refused = false;
        let r = {
            let mut s = s.lock();
            let s = &mut *s;
            let sorter = s.sorter.as_mut().ok_or(StoreError::PushCommitting(id))?;
            let mut tally = s.progress.tally();
            let layout = s.layout;
            fill(&mut |k: &[u8], v: &[u8]| {
                layout.check(v).map_err(|why| {
                    refused = true;
                    StoreError::not_a_hash(k, why)
                })?;
                sorter.add(k, v).map_err(|e| {
                    refused = true;
                    StoreError::Input(e.to_string())
                })?;
                tally.add(k.len(), v.len());
                Ok(())
            })
        };
        if refused {
            let _ = self.push_abort(merger, id, caller);
        }
        r
    }

    /// Aborts push `id`, for `caller` (see [`Stores::push_add`]): its files are removed and
    /// the store keeps its current version.
    pub fn push_abort(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        id: u64,
        caller: Option<u64>,
    ) -> StoreResult<()> {
        let e = {
            let mut sessions = self.pushes.sessions.lock();
            let e = sessions.get(&id).ok_or(StoreError::NoSuchPush(id))?;
            check_owner(id, e.owner, caller)?;
            sessions.remove(&id).ok_or(StoreError::NoSuchPush(id))?
        };
        // Waits for a commit in progress: one that ran has ended the push itself (swapped or
        // retired its version), so there is nothing left to abort.
        if e.session.lock().sorter.take().is_none() {
            return Ok(());
        }
        PushCounters::bump(&self.pushes.counters.aborted);
        let store = e.store;
        tracing::info!(store = %store, version = id, "push aborted");
        self.end_push(merger, &store, None).map(|_| ())
    }

    /// Aborts every push no command is working on (at shutdown; a committing push is left
    /// to finish or to be retired at the next start).
    pub fn abort_idle_pushes(self: &Arc<Self>, merger: &Merger<Db>) {
        let ids: Vec<u64> = self
            .pushes
            .sessions
            .lock()
            .iter()
            .filter(|(_, e)| e.session.try_lock().is_some_and(|s| s.sorter.is_some()))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Err(e) = self.push_abort(merger, id, None) {
                tracing::warn!(push = id, error = %e, "aborting a push at shutdown");
            }
        }
    }

    /// Aborts every push begun by connection `client` (it closed without committing).
    pub fn abort_owned_by(self: &Arc<Self>, merger: &Merger<Db>, client: u64) {
        let ids: Vec<u64> = self
            .pushes
            .sessions
            .lock()
            .iter()
            .filter(|(_, e)| e.owner == Some(client))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Err(e) = self.push_abort(merger, id, Some(client)) {
                tracing::warn!(push = id, error = %e, "aborting a push of a closed connection");
            }
        }
    }

    /// Sorts, writes and links push `id`'s data, replays the streamed writes and swaps the
    /// new version in, for `caller` (see [`Stores::push_add`]). On failure the push is
    /// aborted and the current version stays.
    pub fn push_commit(
        self: &Arc<Self>,
        db: &Db,
        merger: &Merger<Db>,
        id: u64,
        caller: Option<u64>,
        now_ms: impl Fn() -> i64,
    ) -> StoreResult<PushReport> {
        let session = self.pushes.session(id, caller)?;
        let mut s = session.lock();
        let Some(sorter) = s.sorter.take() else {
            return Err(StoreError::PushCommitting(id));
        };
        s.progress.enter(PushPhase::Sorting);
        let r = self.commit_inner(db, merger, &s, sorter, now_ms);
        drop(s);
        let c = &self.pushes.counters;
        PushCounters::bump(match &r {
            Ok(_) => &c.committed,
            Err(StoreError::Refused(_)) => &c.refused,
            Err(_) => &c.aborted,
        });
        match &r {
            Ok(rep) => {
                let phases: Vec<String> = rep
                    .phases
                    .iter()
                    .map(|(name, d)| format!("{name}={:.3}s", d.as_secs_f64()))
                    .collect();
                tracing::info!(
                    store = %rep.store,
                    version = rep.version,
                    records = rep.records,
                    bytes = rep.bytes,
                    files = rep.files,
                    runs_spilled = rep.runs_spilled,
                    duplicates_dropped = rep.duplicates_dropped,
                    replayed = rep.replayed,
                    seconds = rep.elapsed.as_secs_f64(),
                    phases = %phases.join(" "),
                    "push committed: the new version serves"
                );
            }
            Err(StoreError::Refused(why)) => {
                tracing::warn!(push = id, reason = %why, "push refused; the current version keeps serving")
            }
            Err(e) => {
                tracing::warn!(push = id, error = %e, "push failed; the current version keeps serving")
            }
        }
        // Once the push ended, its number may already name another store's new push: only
        // this push's own entry goes.
        let mut sessions = self.pushes.sessions.lock();
        if sessions
            .get(&id)
            .is_some_and(|e| Arc::ptr_eq(&e.session, &session))
        {
            sessions.remove(&id);
        }
        r
    }

    fn commit_inner(
        self: &Arc<Self>,
        db: &Db,
        merger: &Merger<Db>,
        s: &Session,
        sorter: Sorter,
        now_ms: impl Fn() -> i64,
    ) -> StoreResult<PushReport> {
        let r = self.load_and_swap(db, merger, s, sorter, now_ms);
        if r.is_err() {
            // Retire the pushed version (its tables may be linked already).
            if let Err(e) = self.end_push(merger, &s.store, None) {
                tracing::warn!(store = %s.store, error = %e, "cannot retire an aborted push");
            }
        }
        r
    }

    fn load_and_swap(
        self: &Arc<Self>,
        db: &Db,
        merger: &Merger<Db>,
        s: &Session,
        sorter: Sorter,
        now_ms: impl Fn() -> i64,
    ) -> StoreResult<PushReport> {
        let m = &s.meta;
        let v = s.pushing.version;
        let mut phases = Vec::with_capacity(5);
        let mut at = Instant::now();
        let mut lap = |name: &'static str| {
            let now = Instant::now();
            phases.push((name, now - at));
            at = now;
            s.progress.enter(PushPhase::after(name));
        };
        // The records of the version current when the push began.
        let current = m.current.records;
        if sorter.stats().records < s.guard.min_records {
            // Nothing to sort or write: refused before any work.
            s.guard
                .check(sorter.stats().records, current)
                .map_err(StoreError::Refused)?;
        }
        let mut sorted = sorter
            .finish()
            .map_err(|e| StoreError::Input(e.to_string()))?;
        lap("sort");
        // The store's codec as the push began (a change since applies to later pushes).
        let ing = db.ingest_with(rialto_lsm::IngestOptions {
            page_cache_bytes: self.opts.push_page_cache.budget(rialto_io::mem_available()),
            compression: Some(m.compression),
        })?;
        // Every engine key starts with the version's prefix and the store's.
        let head = version_key(m.id, v, &m.prefix);
        let written = table_writer::write_sorted(
            &mut s.progress.counting(&mut sorted),
            ing,
            &head,
            s.layout.kind(),
        )?;
        let bytes = written.bytes + written.records * m.prefix.len() as u64;
        let sort_stats = sorted.stats();
        lap("write");
        // Unlinked tables are removed when the sink is dropped.
        s.guard
            .check(written.records, current)
            .map_err(StoreError::Refused)?;
        // Every record is in a table (the last one still open); nothing is linked.
        rialto_killpoint::kill_point("push.tables_written");
        let ingested = written.sink.finish()?;
        // Counted from here on (a single node has one partition); the replay's writes move it.
        self.counts.set_version(m.id, v, &[ingested.entries]);
        lap("link");
        // The new version's tables are linked; no reader routes to them.
        rialto_killpoint::kill_point("push.linked");

        // Replay the streamed writes in chunks while they keep coming, then swap.
        let replay = |from: u64| {
            let until = self.rt.peek(m.id);
            replay_published(db, merger, m, s.pushing, from, until, &s.progress)
        };
        let (mut from, mut replayed) = replay(0)?;
        loop {
            let pending = self.rt.peek(m.id).saturating_sub(from);
            if pending as usize <= SWAP_TAIL {
                break;
            }
            let (next, n) = replay(from)?;
            replayed += n;
            if next == from {
                // Nothing published beyond `from` yet: the swap takes the rest.
                break;
            }
            from = next;
        }
        let tail_from = from;
        replayed += self.rt.peek(m.id).saturating_sub(tail_from);
        // Streamed writes are copied up to `tail_from`; the store record still names the push.
        rialto_killpoint::kill_point("push.replayed");
        let info = VersionInfo {
            number: v,
            records: ingested.entries,
            bytes,
            created_ms: now_ms(),
        };
        self.end_push(merger, &s.store, Some((info, tail_from)))?;
        s.progress.replay_done();
        // The swap is durable; the push's caller has not heard of it.
        rialto_killpoint::kill_point("push.swapped");
        lap("replay");
        // The runs go once the new version serves (their pages leave the cache here).
        drop(sorted);
        lap("cleanup");
        Ok(PushReport {
            store: s.store.clone(),
            version: v,
            records: ingested.entries,
            bytes,
            files: ingested.files,
            file_bytes: ingested.file_bytes,
            runs_spilled: sort_stats.runs_spilled,
            duplicates_dropped: sort_stats.duplicates_dropped,
            replayed,
            elapsed: s.started.elapsed(),
            phases,
        })
    }
}

/// Replays the published real-time log entries from number `from` on, within the rewind
/// window; returns the entry number after the last one seen and how many were replayed.
/// `progress` counts the entries gone through, of those numbered below `until`.
fn replay_published(
    db: &Db,
    merger: &Merger<Db>,
    m: &StoreMeta,
    p: Pushing,
    from: u64,
    until: u64,
    progress: &PushProgress,
) -> StoreResult<(u64, u64)> {
    let cutoff = p.started_ms.saturating_sub(m.rewind_ms as i64);
    let (_, hi) = rt_range(m.id);
    let mut it = db.iter(IterOptions {
        lower: Some(rt_key(m.id, from)),
        upper: Some(hi),
        snapshot: None,
    })?;
    it.seek_to_first();
    if it.valid() {
        progress.replay_expect(rt_number(it.key()).unwrap_or(from), until);
    }
    let mut next = from;
    let mut replayed = 0u64;
    let mut seen = 0u64;
    let mut out = ChunkedWriter::new(merger, REPLAY_CHUNK);
    while it.valid() {
        seen += 1;
        if seen.is_multiple_of(REPLAY_CHUNK as u64) {
            progress.replay_seen(REPLAY_CHUNK as u64);
        }
        let n = rt_number(it.key()).unwrap_or(next);
        let e = RtEntry::decode(it.value()).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        if e.at_ms >= cutoff {
            let k = version_key(m.id, p.version, e.key);
            match e.record {
                Some(r) => out.put(&k, r),
                None => out.delete(&k),
            }
            replayed += 1;
        }
        next = n + 1;
        it.next();
    }
    it.status()?;
    out.finish()?;
    progress.replay_seen(seen % REPLAY_CHUNK as u64);
    Ok((next, replayed))
}

/// Inside the swap transaction: replays entries `from..until` (published or not) within
/// the rewind window onto the pushed version.
pub(crate) fn replay(
    tx: &mut TxnContext<'_, Db>,
    m: &StoreMeta,
    p: Pushing,
    from: u64,
    until: u64,
) -> StoreResult<()> {
    let cutoff = p.started_ms.saturating_sub(m.rewind_ms as i64);
    for n in from..until {
        let Some(raw) = tx.get(&rt_key(m.id, n))? else {
            // A number taken by a transaction that was then discarded.
            continue;
        };
        let e = RtEntry::decode(&raw).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        if e.at_ms < cutoff {
            continue;
        }
        let k = version_key(m.id, p.version, e.key);
        match e.record {
            Some(r) => tx.put(&k, r),
            None => tx.delete(&k),
        }
    }
    Ok(())
}
