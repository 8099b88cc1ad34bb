//! The merger: one thread executes queued transactions in order and writes each group as one
//! journal record; another syncs the journal and releases groups as they become durable.
//!
//! ```text
//!  writers ──submit──▶ queue ──▶ merger thread: execute group N+1, log_and_apply ──▶ in flight
//!                                                                                      │
//!  writers ◀──resolve── syncer thread: fdatasync (covers every group logged), publish ◀┘
//! ```
//!
//! Async commit: the merger never waits for a sync (except when `max_unsynced_bytes` are
//! pending), so group N+1 executes while group N syncs, and the syncer starts a sync as soon as
//! anything was logged — not only when more work is queued (the seed's rule). One sync covers
//! every group logged before it began.
//!
//! The syncer is a *role*, not only a thread: a thread blocked in [`CommitHandle::wait`]
//! takes it when it is free and syncs itself, so a lone writer's commit costs its journal
//! write and its `fdatasync` and no thread hand-off (each costs 10-40 µs here, against an
//! fdatasync of about 150 µs). The syncer thread acts only while no thread waits that way
//! (async waiters, such as the server's, cannot lend their thread). One role holder at a
//! time keeps syncs, and so acknowledgements, in log order.
//!
//! Invariants:
//! - Transactions execute in queue order, one executor at a time (the `exec` lock), whichever
//!   thread executes them; a long one (a script) never on a submitting thread.
//! - Groups are logged in queue order and acknowledged in log order; a group is released only
//!   after a sync that began after it was logged returned `Ok` (Durability::Always).
//! - Readers see a group only after it is durable: the engine publishes it after the sync.
//! - After a failed log write or sync, no later transaction is acknowledged: every group in
//!   flight and every transaction queued or submitted later fails with the error, and the
//!   engine is read-only (it refuses writes itself).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use hdrhistogram::Histogram;
use parking_lot::{Condvar, Mutex};
use rialto_engine::{CommitPoint, Error, IoStats, PipelinedCommit, Result, WriteBatch};
use rialto_io::Clock;

use crate::context::{AfterCommit, Group, TxnContext};
use crate::handle::{this_thread_helps, CommitHandle, Helping, Notifier, Slot, SyncHelper};
use crate::observer::WriteObserver;
use crate::options::{Durability, MergerOptions};
use crate::poll::PollGate;
use crate::stats::{group_size_bucket, MergerStats, GROUP_SIZE_BUCKETS};

/// A queued transaction, type-erased.
trait Job<E: PipelinedCommit>: Send {
    /// Runs the transaction against the group; its outcome is kept until [`Job::complete`].
    fn execute(&mut self, engine: &E, group: &mut Group, observer: Option<&dyn WriteObserver>);
    /// Delivers the outcome, or `failure` if the group could not be made durable.
    fn complete(self: Box<Self>, failure: Option<&Error>);
    /// When it was submitted (µs of the merger's clock).
    fn submitted_micros(&self) -> u64;
    /// It may run for long (a script): never executed on a submitting thread.
    fn long(&self) -> bool;
}

struct ClosureJob<F, T> {
    f: Option<F>,
    outcome: Option<Result<T>>,
    after: Vec<AfterCommit>,
    slot: Arc<Slot<T>>,
    submitted_micros: u64,
    long: bool,
}

/// What a panic said, for the error that replaces the transaction's outcome.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(s), _) => (*s).to_string(),
        (_, Some(s)) => s.clone(),
        _ => "panic".to_string(),
    }
}

impl<E, F, T> Job<E> for ClosureJob<F, T>
where
    E: PipelinedCommit,
    F: FnOnce(&mut TxnContext<'_, E>) -> Result<T> + Send,
    T: Send,
{
    fn execute(&mut self, engine: &E, group: &mut Group, observer: Option<&dyn WriteObserver>) {
        let Some(f) = self.f.take() else {
            return;
        };
        let mut ctx = TxnContext::new(engine, group, observer);
        // A transaction that panics (a bug in the code it runs) fails alone: its staged
        // writes are dropped with its context, and the merger goes on serving everyone else.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut ctx)))
            .unwrap_or_else(|payload| Err(Error::Aborted(panic_text(&*payload))));
        self.outcome = Some(match ran {
            // A failed transaction's staged writes are dropped with its context.
            Ok(v) => {
                let after = ctx.take_after();
                let r = ctx.commit().map(|()| v);
                if r.is_ok() {
                    self.after = after;
                }
                r
            }
            Err(e) => Err(e),
        });
    }

    fn complete(mut self: Box<Self>, failure: Option<&Error>) {
        let outcome = match failure {
            Some(e) => Err(e.duplicate()),
            None => self.outcome.take().unwrap_or(Err(Error::Closed)),
        };
        // Before the handle resolves: whoever waits on it (and what it does next) finds the
        // work done (a SWAPDB's map published before its client's next read).
        for f in self.after.drain(..) {
            f(failure);
        }
        self.slot.fulfil(outcome);
    }

    fn submitted_micros(&self) -> u64 {
        self.submitted_micros
    }

    fn long(&self) -> bool {
        self.long
    }
}

type BoxedJob<E> = Box<dyn Job<E>>;

struct Queue<E: PipelinedCommit> {
    jobs: VecDeque<BoxedJob<E>>,
    /// How many of `jobs` are long ([`Job::long`]).
    long: usize,
    closed: bool,
}

/// What [`Shared::run_group`] did.
#[derive(PartialEq, Eq)]
enum Ran {
    /// Executed and committed a group.
    Group,
    /// Nothing was queued.
    Empty,
    /// The next job is long and this thread may not run it (see [`Merger::enqueue_long`]).
    LeftLong,
}

/// A logged group waiting for its sync.
struct InFlight<E: PipelinedCommit> {
    point: CommitPoint,
    jobs: Vec<BoxedJob<E>>,
    bytes: usize,
}

struct Pipe<E: PipelinedCommit> {
    groups: VecDeque<InFlight<E>>,
    unsynced_bytes: usize,
    /// Transactions acknowledged by the last sync, and transactions logged since: the next
    /// sync waits (up to `max_wait`) until as many arrived as the last one released.
    last_acked: usize,
    arrived_since_ack: usize,
    merger_done: bool,
    failed: Option<Error>,
}

struct Shared<E: PipelinedCommit> {
    engine: Arc<E>,
    observer: Option<Arc<dyn WriteObserver>>,
    opts: MergerOptions,
    clock: Arc<dyn Clock>,
    queue: Mutex<Queue<E>>,
    /// The merger thread sleeps here on an empty queue; with `inline_execution`, the long-job
    /// executor sleeps here until a long job is queued.
    queue_cv: Condvar,
    /// Held by whoever executes groups: the merger thread, or with `inline_execution` a
    /// submitting thread. One executor at a time keeps groups in queue order.
    exec: Mutex<()>,
    pipe: Mutex<Pipe<E>>,
    /// The syncer thread sleeps here.
    pipe_cv: Condvar,
    /// The executor waits here while `max_unsynced_bytes` are in flight. Apart from
    /// `pipe_cv` so that releasing synced groups, which must wake it, does not also wake an
    /// idle syncer thread for nothing on every commit.
    space_cv: Condvar,
    /// A syncer gathering arrivals (`max_wait`) waits here, with the `pipe` lock.
    gather_cv: Condvar,
    /// Held by whoever syncs and releases groups: the syncer thread or a blocked waiter.
    /// Lock order: `sync_role`, then `pipe`.
    sync_role: Mutex<()>,
    /// Threads blocked in [`CommitHandle::wait`] that take the syncer's role when it is free.
    /// While there are any, the syncer thread is not woken (they will sync).
    helpers: AtomicUsize,
    /// Wakes threads blocked on handles.
    notifier: Arc<Notifier>,
    /// Lock-free hints for spinning: jobs queued, groups in flight.
    queued_hint: AtomicUsize,
    inflight_hint: AtomicUsize,
    /// Whether waiting threads may poll now (see `poll`).
    poll: PollGate,
    stats: Mutex<StatsInner>,
}

struct StatsInner {
    txns: u64,
    groups: u64,
    syncs: u64,
    latency: Histogram<u64>,
    group_sizes: [u64; GROUP_SIZE_BUCKETS],
}

/// The transaction merger over a [`PipelinedCommit`] engine. Submit from any thread or task;
/// see the module docs for the pipeline.
pub struct Merger<E: PipelinedCommit + Send + Sync + 'static> {
    shared: Arc<Shared<E>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl<E: PipelinedCommit + Send + Sync + 'static> Merger<E> {
    /// Starts the merger's threads over `engine`.
    pub fn start(engine: Arc<E>, opts: MergerOptions, clock: Arc<dyn Clock>) -> Result<Self> {
        Self::start_observed(engine, opts, clock, None)
    }

    /// [`Merger::start`] with `observer` told of every write (see [`WriteObserver`]).
    pub fn start_observed(
        engine: Arc<E>,
        opts: MergerOptions,
        clock: Arc<dyn Clock>,
        observer: Option<Arc<dyn WriteObserver>>,
    ) -> Result<Self> {
        let latency = Histogram::new_with_bounds(1, 3_600_000_000, 2)
            .map_err(|e| Error::InvalidArgument(format!("latency histogram: {e}")))?;
        let durability = opts.durability;
        let poll = PollGate::new(opts.poll_preempted_after, opts.poll_max_cooldown);
        let shared = Arc::new(Shared {
            engine,
            observer,
            opts,
            clock,
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                long: 0,
                closed: false,
            }),
            queue_cv: Condvar::new(),
            exec: Mutex::new(()),
            pipe: Mutex::new(Pipe {
                groups: VecDeque::new(),
                unsynced_bytes: 0,
                last_acked: 0,
                arrived_since_ack: 0,
                merger_done: false,
                failed: None,
            }),
            pipe_cv: Condvar::new(),
            space_cv: Condvar::new(),
            gather_cv: Condvar::new(),
            sync_role: Mutex::new(()),
            helpers: AtomicUsize::new(0),
            notifier: Arc::default(),
            queued_hint: AtomicUsize::new(0),
            inflight_hint: AtomicUsize::new(0),
            poll,
            stats: Mutex::new(StatsInner {
                txns: 0,
                groups: 0,
                syncs: 0,
                latency,
                group_sizes: [0; GROUP_SIZE_BUCKETS],
            }),
        });
        let mut threads = Vec::new();
        if shared.opts.inline_execution {
            let s = Arc::clone(&shared);
            threads.push(spawn_sized(
                "rialto-merger-long",
                Some(EXECUTOR_STACK_BYTES),
                move || s.long_loop(),
            )?);
        } else {
            let s = Arc::clone(&shared);
            threads.push(spawn_sized(
                "rialto-merger",
                Some(EXECUTOR_STACK_BYTES),
                move || s.merge_loop(),
            )?);
        }
        match durability {
            Durability::Always => {
                let s = Arc::clone(&shared);
                threads.push(spawn("rialto-syncer", move || s.sync_loop())?);
            }
            Durability::EverySec => {
                let s = Arc::clone(&shared);
                threads.push(spawn("rialto-syncer", move || s.periodic_sync_loop())?);
            }
            Durability::Never => {}
        }
        Ok(Merger {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Queues a transaction. `f` runs on the merger thread (or, with `inline_execution`, on
    /// this or another submitting thread), in submission order, and may read (seeing every
    /// earlier transaction, durable or not) and stage writes; if it returns `Err`, its writes
    /// are dropped. The handle resolves with `f`'s result once the group it ran in is durable
    /// (per [`Durability`]), or with the error that prevented it.
    ///
    /// Keep `f` short: it runs on the one thread every write goes through.
    pub fn submit<T, F>(&self, f: F) -> CommitHandle<T>
    where
        F: FnOnce(&mut TxnContext<'_, E>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let h = self.enqueue(f);
        self.run_queued();
        h
    }

    /// [`Merger::submit`], then [`CommitHandle::wait`], for a thread that blocks on the outcome
    /// anyway. With [`Durability::Always`] the thread counts as a blocked waiter from before
    /// its transaction is logged, so the syncer thread is not woken for its group: this thread
    /// syncs it itself (the profile of one blocking writer showed the syncer thread woken for
    /// every commit, about two context switches more per commit than needed).
    pub fn submit_and_wait<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&mut TxnContext<'_, E>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let _helping = (self.shared.opts.durability == Durability::Always)
            .then(|| Helping::new(&*self.shared));
        self.submit(f).wait()
    }

    /// [`Merger::write`], then wait, as [`Merger::submit_and_wait`] does.
    pub fn write_and_wait(&self, batch: WriteBatch) -> Result<()> {
        self.submit_and_wait(move |ctx| {
            ctx.write(&batch);
            Ok(())
        })
    }

    /// Like [`Merger::submit`] but, with `inline_execution`, only queues: the transaction
    /// runs at the next [`Merger::run_queued`] or `submit` from any thread. A caller that
    /// queues several transactions (or lets other tasks queue theirs) before running them gets
    /// them merged into one group and one journal write. Without `inline_execution` it is
    /// `submit`.
    ///
    /// The caller must call `run_queued` (or `submit`) before waiting on the handle.
    pub fn enqueue<T, F>(&self, f: F) -> CommitHandle<T>
    where
        F: FnOnce(&mut TxnContext<'_, E>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.enqueue_job(f, false)
    }

    /// [`Merger::enqueue`] for a transaction that may run for long (a script that loops):
    /// with `inline_execution` no submitting thread executes it, nor anything queued after
    /// it; a merger thread of its own does, so the submitting threads go on serving what
    /// needs no write (reads, `BUSY` replies, a request to stop the script). Without
    /// `inline_execution` the merger thread runs everything anyway. Either way it keeps its
    /// place in the queue's order.
    pub fn enqueue_long<T, F>(&self, f: F) -> CommitHandle<T>
    where
        F: FnOnce(&mut TxnContext<'_, E>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.enqueue_job(f, true)
    }

    fn enqueue_job<T, F>(&self, f: F, long: bool) -> CommitHandle<T>
    where
        F: FnOnce(&mut TxnContext<'_, E>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let slot = Slot::new(Arc::clone(&self.shared.notifier));
        let job: BoxedJob<E> = Box::new(ClosureJob {
            f: Some(f),
            outcome: None,
            after: Vec::new(),
            slot: Arc::clone(&slot),
            submitted_micros: self.shared.clock.now_micros(),
            long,
        });
        let mut q = self.shared.queue.lock();
        if q.closed {
            return CommitHandle::ready(Err(Error::Closed));
        }
        if let Some(e) = self.shared.pipe.lock().failed.as_ref() {
            return CommitHandle::ready(Err(e.duplicate()));
        }
        q.jobs.push_back(job);
        q.long += usize::from(long);
        let first = q.jobs.len() == 1;
        self.shared
            .queued_hint
            .store(q.jobs.len(), Ordering::Release);
        drop(q);
        let inline = self.shared.opts.inline_execution;
        if (first && !inline) || (long && inline) {
            // The merger sleeps only on an empty queue; the long-job executor until a long
            // job is queued.
            self.shared.queue_cv.notify_one();
        }
        let helper = (self.shared.opts.durability == Durability::Always)
            .then(|| Arc::clone(&self.shared) as Arc<dyn SyncHelper>);
        CommitHandle { slot, helper }
    }

    /// With `inline_execution`: executes every queued transaction on this thread unless
    /// another thread already is (it then executes them). Without it: nothing to do.
    pub fn run_queued(&self) {
        if self.shared.opts.inline_execution {
            self.shared.execute_inline();
        }
    }

    /// Queues `batch` as one transaction (applied atomically).
    pub fn write(&self, batch: WriteBatch) -> CommitHandle<()> {
        self.submit(move |ctx| {
            ctx.write(&batch);
            Ok(())
        })
    }

    /// The engine (for reads: they never go through the merger and never wait for syncs).
    pub fn engine(&self) -> &Arc<E> {
        &self.shared.engine
    }

    /// Options in force.
    pub fn options(&self) -> &MergerOptions {
        &self.shared.opts
    }

    /// The merger's counters and commit latency.
    pub fn stats(&self) -> MergerStats {
        let st = self.shared.stats.lock();
        let (unsynced, failed) = {
            let p = self.shared.pipe.lock();
            (p.unsynced_bytes, p.failed.as_ref().map(|e| e.to_string()))
        };
        MergerStats {
            durability: self.shared.opts.durability,
            txns: st.txns,
            groups: st.groups,
            syncs: st.syncs,
            queued: self.shared.queue.lock().jobs.len(),
            unsynced_bytes: unsynced,
            commit_p50_micros: st.latency.value_at_quantile(0.5),
            commit_p99_micros: st.latency.value_at_quantile(0.99),
            commit_max_micros: st.latency.max(),
            poll_suspensions: self.shared.poll.suspensions(),
            failed,
            group_sizes: st.group_sizes,
        }
    }

    /// Journal, flush and compaction I/O of the engine.
    pub fn io_stats(&self) -> IoStats {
        self.shared.engine.io_stats()
    }

    /// Stops accepting transactions, commits everything queued, makes it durable (a final
    /// sync in every durability mode) and stops the threads. Returns the first failure.
    pub fn close(&self) -> Result<()> {
        self.shared.queue.lock().closed = true;
        if self.shared.opts.inline_execution {
            // No merger thread: run what is queued, then let the syncer finish.
            let _exec = self.shared.exec.lock();
            while self.shared.run_group(false) != Ran::Empty {}
            self.shared.pipe.lock().merger_done = true;
        }
        self.shared.queue_cv.notify_all();
        self.shared.pipe_cv.notify_all();
        self.shared.space_cv.notify_all();
        self.shared.gather_cv.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        if let Some(e) = self.shared.pipe.lock().failed.as_ref() {
            return Err(e.duplicate());
        }
        if self.shared.opts.durability != Durability::Always {
            let point = self.shared.engine.sync_log()?;
            self.shared.engine.publish(point);
        }
        Ok(())
    }
}

impl<E: PipelinedCommit + Send + Sync + 'static> Drop for Merger<E> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Stack of the threads that execute transactions: a transaction may run a script, whose
/// nested tables are converted recursively (up to a thousand deep). Reserved, not resident:
/// only the pages a deep recursion touches take memory.
const EXECUTOR_STACK_BYTES: usize = 64 << 20;

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    spawn_sized(name, None, f)
}

fn spawn_sized(
    name: &str,
    stack: Option<usize>,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>> {
    let mut b = std::thread::Builder::new().name(name.to_string());
    if let Some(bytes) = stack {
        b = b.stack_size(bytes);
    }
    b.spawn(f)
        .map_err(|e| Error::io(format!("spawn {name}"), e))
}

impl<E: PipelinedCommit + Send + Sync + 'static> Shared<E> {
    fn merge_loop(&self) {
        loop {
            self.spin_until(|| self.queued_hint.load(Ordering::Acquire) > 0);
            {
                let mut q = self.queue.lock();
                while q.jobs.is_empty() && !q.closed {
                    self.queue_cv.wait(&mut q);
                }
                if q.jobs.is_empty() {
                    break; // closed and drained
                }
            }
            let _exec = self.exec.lock();
            self.run_group(false);
        }
        self.pipe.lock().merger_done = true;
        self.pipe_cv.notify_all();
        self.space_cv.notify_all();
        self.gather_cv.notify_all();
    }

    /// `inline_execution`: the submitting thread executes queued groups unless another
    /// thread already is (flat combining). No job is stranded: a submitter queues before it
    /// tries the lock, and the executor looks at the queue again after releasing it.
    fn execute_inline(&self) {
        loop {
            let Some(exec) = self.exec.try_lock() else {
                return; // the executor will see our job
            };
            loop {
                match self.run_group(true) {
                    Ran::Group => {}
                    Ran::Empty => break,
                    // The long-job executor, told when the job was queued, takes the queue
                    // from here.
                    Ran::LeftLong => return,
                }
            }
            drop(exec);
            if self.queued_hint.load(Ordering::Acquire) == 0 {
                return;
            }
        }
    }

    /// `inline_execution`: executes the queue whenever it holds a long job (see
    /// [`Merger::enqueue_long`]), up to its end. A submitting thread that finds the lock
    /// held leaves its job to this thread, so it looks at the queue again after letting go.
    fn long_loop(&self) {
        loop {
            {
                let mut q = self.queue.lock();
                while q.long == 0 && !q.closed {
                    self.queue_cv.wait(&mut q);
                }
                if q.long == 0 {
                    break; // closed: `close` executes what is left
                }
            }
            loop {
                let exec = self.exec.lock();
                while self.run_group(false) != Ran::Empty {}
                drop(exec);
                if self.queued_hint.load(Ordering::Acquire) == 0 {
                    break;
                }
            }
        }
    }

    /// Takes, executes and commits one group. Requires the `exec` lock. A submitting thread
    /// (`inline`) stops before a long job.
    fn run_group(&self, inline: bool) -> Ran {
        let mut taken: VecDeque<BoxedJob<E>> = {
            let mut q = self.queue.lock();
            if q.jobs.is_empty() {
                return Ran::Empty;
            }
            let mut n = q.jobs.len().min(self.opts.max_group_txns.max(1));
            if q.long > 0 {
                if inline {
                    match q.jobs.iter().take(n).position(|j| j.long()) {
                        Some(0) => return Ran::LeftLong,
                        Some(i) => n = i,
                        None => {}
                    }
                }
                q.long -= q.jobs.iter().take(n).filter(|j| j.long()).count();
            }
            let taken = q.jobs.drain(..n).collect();
            self.queued_hint.store(q.jobs.len(), Ordering::Release);
            taken
        };
        let failed = self.pipe.lock().failed.as_ref().map(Error::duplicate);
        if let Some(e) = failed {
            self.fail_jobs(taken.drain(..), &e);
            return Ran::Group;
        }
        let mut group = Group::new();
        let mut jobs = Vec::with_capacity(taken.len());
        while let Some(mut j) = taken.pop_front() {
            if !jobs.is_empty() && group.batch.data().len() >= self.opts.max_group_bytes {
                taken.push_front(j);
                break;
            }
            j.execute(&self.engine, &mut group, self.observer.as_deref());
            jobs.push(j);
        }
        if let Some(o) = self.observer.as_deref() {
            for (k, v) in o.group_writes() {
                match v {
                    Some(v) => group.batch.put(&k, &v),
                    None => group.batch.delete(&k),
                }
            }
        }
        if !taken.is_empty() {
            // The group is full: the rest goes back to the front, in order.
            let mut q = self.queue.lock();
            while let Some(j) = taken.pop_back() {
                q.long += usize::from(j.long());
                q.jobs.push_front(j);
            }
            self.queued_hint.store(q.jobs.len(), Ordering::Release);
        }
        self.commit_group(group, jobs);
        Ran::Group
    }

    fn commit_group(&self, group: Group, jobs: Vec<BoxedJob<E>>) {
        let bytes = group.batch.data().len();
        let point = if group.batch.is_empty() {
            Ok(self.engine.applied_point())
        } else if self.opts.durability == Durability::Always {
            // Acknowledged only after the sync that covers it.
            self.engine.log_and_apply_until_sync(group.batch)
        } else {
            // Acknowledged before any sync: it must survive a process crash.
            self.engine.log_and_apply(group.batch)
        };
        let point = match point {
            Ok(p) => p,
            Err(e) => {
                self.fail(&e);
                self.fail_jobs(jobs, &e);
                return;
            }
        };
        // Logged and applied, not durable, nobody acknowledged.
        rialto_killpoint::kill_point("merger.group_logged");
        {
            let mut st = self.stats.lock();
            st.groups += 1;
            st.txns += jobs.len() as u64;
            st.group_sizes[group_size_bucket(jobs.len())] += 1;
        }
        match self.opts.durability {
            Durability::Always => {
                if point <= self.engine.published_point() {
                    // Read-only transactions over durable state: nothing to wait for.
                    self.release(jobs);
                    return;
                }
                let mut p = self.pipe.lock();
                while p.unsynced_bytes > self.opts.max_unsynced_bytes && p.failed.is_none() {
                    self.space_cv.wait(&mut p);
                }
                if let Some(e) = p.failed.as_ref().map(Error::duplicate) {
                    drop(p);
                    self.fail_jobs(jobs, &e);
                    return;
                }
                // Wake the syncer only when it can act: it is idle, or this group completes
                // the arrivals it waits for (see `max_wait`).
                let idle = p.groups.is_empty();
                p.arrived_since_ack += jobs.len();
                p.unsynced_bytes += bytes;
                p.groups.push_back(InFlight { point, jobs, bytes });
                self.inflight_hint.store(p.groups.len(), Ordering::Release);
                let wake = idle || p.arrived_since_ack >= p.last_acked;
                drop(p);
                if wake {
                    // A syncer gathering arrivals can start.
                    self.gather_cv.notify_all();
                }
                if self.helpers.load(Ordering::SeqCst) > 0 {
                    // A blocked waiter will sync: this thread, if it is about to wait on its
                    // own handle, or one woken if nobody holds the role (a holder wakes one
                    // when it lets go).
                    if !this_thread_helps() && !self.sync_role.is_locked() {
                        self.notifier.wake_one();
                    }
                } else if wake {
                    self.pipe_cv.notify_all();
                }
            }
            Durability::EverySec | Durability::Never => {
                self.engine.publish(point);
                self.release(jobs);
            }
        }
    }

    /// Acknowledges `jobs` and records their latency.
    fn release(&self, jobs: Vec<BoxedJob<E>>) {
        let now = self.clock.now_micros();
        {
            let mut st = self.stats.lock();
            for j in &jobs {
                let _ = st
                    .latency
                    .record(now.saturating_sub(j.submitted_micros()).max(1));
            }
        }
        // Each completion unparks its own waiter.
        for j in jobs {
            j.complete(None);
        }
    }

    /// Fails `jobs` with `e`.
    fn fail_jobs(&self, jobs: impl IntoIterator<Item = BoxedJob<E>>, e: &Error) {
        for j in jobs {
            j.complete(Some(e));
        }
    }

    /// Yields the CPU in a loop until `ready` or `opts.spin` passed. A thread about to sleep
    /// on a condition variable spins first because waking it costs more (30-40 µs between
    /// syncs were measured with three futex hand-offs per commit) than the work it waits for.
    fn spin_until(&self, ready: impl Fn() -> bool) {
        if self.opts.spin.is_zero() || ready() {
            return;
        }
        let start = std::time::Instant::now();
        while !ready() && start.elapsed() < self.opts.spin && self.poll.may_poll() {
            self.poll.yield_now(self.helpers.load(Ordering::Relaxed));
        }
    }

    /// Records the first failure: nothing after it is acknowledged.
    fn fail(&self, e: &Error) {
        let mut p = self.pipe.lock();
        if p.failed.is_none() {
            tracing::error!(error = %e, "transaction merger stops acknowledging writes");
            p.failed = Some(e.duplicate());
        }
        drop(p);
        self.pipe_cv.notify_all();
        self.space_cv.notify_all();
        self.gather_cv.notify_all();
    }

    /// Durability::Always: sync as soon as anything is in flight and no blocked waiter is
    /// there to do it; release what it covered.
    fn sync_loop(&self) {
        loop {
            self.spin_until(|| {
                self.inflight_hint.load(Ordering::Acquire) > 0
                    && self.helpers.load(Ordering::SeqCst) == 0
            });
            {
                let mut p = self.pipe.lock();
                // `helpers` is read under the `pipe` lock, and a helper that leaves takes it
                // before waking us: no wakeup is lost.
                while (p.groups.is_empty() || self.helpers.load(Ordering::SeqCst) > 0)
                    && !p.merger_done
                {
                    self.pipe_cv.wait(&mut p);
                }
                if p.groups.is_empty() {
                    return; // the merger is done and everything is released
                }
            }
            let role = self.sync_role.lock();
            let p = self.pipe.lock();
            if p.groups.is_empty() {
                // A blocked waiter took the role first and synced everything. The guard
                // must go before `role_released` takes the lock again.
                drop(p);
            } else {
                self.sync_round(p);
            }
            drop(role);
            self.role_released();
        }
    }

    /// One sync by the holder of the syncer's role: waits (up to `max_wait`) for the
    /// writers the last sync released, syncs, and releases the groups the sync covered — or
    /// fails every group in flight. `p` holds groups in flight.
    fn sync_round(&self, mut p: parking_lot::MutexGuard<'_, Pipe<E>>) {
        if p.failed.is_none() && !p.merger_done && !self.opts.max_wait.is_zero() {
            // Let the writers the last sync released rejoin this one (see `max_wait`).
            // Poll first (`wait_spin`): the arrivals are running threads, and sleeping
            // costs a wake-up after the last of them.
            let start = std::time::Instant::now();
            let deadline = start + self.opts.max_wait;
            let poll_until = start + self.opts.wait_spin.min(self.opts.max_wait);
            while p.arrived_since_ack < p.last_acked && !p.merger_done && p.failed.is_none() {
                if std::time::Instant::now() < poll_until && self.poll.may_poll() {
                    parking_lot::MutexGuard::unlocked(&mut p, || {
                        self.poll.yield_now(self.helpers.load(Ordering::Relaxed))
                    });
                    continue;
                }
                if self.gather_cv.wait_until(&mut p, deadline).timed_out() {
                    break;
                }
            }
        }
        let failed = p.failed.as_ref().map(Error::duplicate);
        drop(p);
        let r = match failed {
            Some(e) => Err(e),
            None => self.engine.sync_log(),
        };
        match r {
            Ok(durable) => {
                // Durable, not yet acknowledged.
                rialto_killpoint::kill_point("merger.group_synced");
                self.engine.publish(durable);
                let mut done = Vec::new();
                let mut p = self.pipe.lock();
                while p.groups.front().is_some_and(|g| g.point <= durable) {
                    if let Some(g) = p.groups.pop_front() {
                        p.unsynced_bytes -= g.bytes;
                        done.push(g);
                    }
                }
                self.inflight_hint.store(p.groups.len(), Ordering::Release);
                p.last_acked = done.iter().map(|g| g.jobs.len()).sum();
                p.arrived_since_ack = 0;
                drop(p);
                self.space_cv.notify_all();
                self.stats.lock().syncs += 1;
                let jobs: Vec<BoxedJob<E>> = done.into_iter().flat_map(|g| g.jobs).collect();
                self.release(jobs);
            }
            Err(e) => {
                self.fail(&e);
                // Groups at or below the published point are durable although this sync
                // failed: with Durability::Always only durable writes are published, and the
                // engine publishes what a memtable switch made durable (it syncs the old WAL
                // segment first). Readers may have seen them and a crash keeps them, so they
                // are acknowledged; failing them would report as lost a write that survives
                // (regression: a switch synced group N, then the sync covering N and N+1 on
                // the new segment failed, and N reappeared after a restart as a failed write).
                let durable = self.engine.published_point();
                let (kept, lost): (Vec<InFlight<E>>, Vec<InFlight<E>>) = {
                    let mut p = self.pipe.lock();
                    p.unsynced_bytes = 0;
                    self.inflight_hint.store(0, Ordering::Release);
                    p.groups.drain(..).partition(|g| g.point <= durable)
                };
                self.pipe_cv.notify_all();
                self.space_cv.notify_all();
                self.release(kept.into_iter().flat_map(|g| g.jobs).collect());
                self.fail_jobs(lost.into_iter().flat_map(|g| g.jobs), &e);
            }
        }
    }

    /// After the syncer's role is given up: blocked waiters slept while it was held, and
    /// groups logged meanwhile need one of them (or the syncer thread) to take it: one is
    /// woken.
    /// Reading the groups under the `pipe` lock orders this with `commit_group`, which
    /// pushes under it and then checks the role: one of the two sees the other.
    fn role_released(&self) {
        let pending = !self.pipe.lock().groups.is_empty();
        if pending {
            self.notifier.wake_one();
        }
    }

    /// Durability::EverySec: sync once per interval when something was logged.
    fn periodic_sync_loop(&self) {
        let mut synced = self.engine.applied_point();
        loop {
            let done = {
                let mut p = self.pipe.lock();
                if !p.merger_done {
                    let _ = self.pipe_cv.wait_for(&mut p, self.opts.sync_interval);
                }
                p.merger_done || p.failed.is_some()
            };
            if done {
                return; // `close` makes the rest durable
            }
            if self.engine.applied_point() > synced {
                match self.engine.sync_log() {
                    Ok(p) => {
                        synced = p;
                        self.stats.lock().syncs += 1;
                    }
                    Err(e) => {
                        self.fail(&e);
                        return;
                    }
                }
            }
        }
    }
}

impl<E: PipelinedCommit + Send + Sync + 'static> SyncHelper for Shared<E> {
    fn helping(&self, on: bool) {
        if on {
            self.helpers.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if self.helpers.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last helper may leave groups behind (logged after its sync began): the
            // syncer thread, which was not woken for them, takes over. Reading them under
            // the `pipe` lock orders this with `commit_group` (push, then read `helpers`)
            // and with the syncer's check of `helpers`: no group is stranded.
            let pending = !self.pipe.lock().groups.is_empty();
            if pending {
                self.pipe_cv.notify_all();
            }
        }
    }

    fn try_sync(&self) -> bool {
        if self.inflight_hint.load(Ordering::Acquire) == 0 {
            return false;
        }
        let Some(role) = self.sync_role.try_lock() else {
            return false;
        };
        let p = self.pipe.lock();
        if p.groups.is_empty() {
            return false;
        }
        self.sync_round(p);
        drop(role);
        self.role_released();
        true
    }

    fn can_sync(&self) -> bool {
        self.inflight_hint.load(Ordering::Acquire) > 0 && !self.sync_role.is_locked()
    }

    fn wait_spin(&self) -> std::time::Duration {
        self.opts.wait_spin
    }

    fn poll_yield(&self) -> bool {
        self.poll.yield_now(self.helpers.load(Ordering::Relaxed))
    }

    fn may_poll(&self) -> bool {
        self.poll.may_poll()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_engine::WriteBatch;
    use rialto_io::{Fs, MemFs, SystemClock};
    use rialto_lsm::{Db, Options};
    use std::time::Duration;

    fn put(k: &[u8]) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(k, b"v");
        b
    }

    /// Regression: the syncer thread queued for the role, and whoever held it synced every
    /// group meanwhile. The syncer thread then gave the role up while still holding the
    /// `pipe` lock, which `role_released` takes again: it deadlocked, and every later write
    /// hung (seen as a 120 s timeout in about one run in a hundred of the integration tests
    /// that mix blocking and awaiting writers).
    #[test]
    fn the_syncer_thread_finding_nothing_to_sync_after_waiting_for_the_role_goes_on() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = Arc::new(
            Db::open(
                "/db",
                Options {
                    fs,
                    ..Options::default()
                },
            )
            .unwrap(),
        );
        let opts = MergerOptions {
            max_wait: Duration::ZERO,
            spin: Duration::ZERO,
            ..MergerOptions::default()
        };
        let m = Merger::start(db, opts, Arc::new(SystemClock::new())).unwrap();
        let shared = Arc::clone(&m.shared);
        // Hold the role, as a blocked waiter syncing would.
        let role = shared.sync_role.lock();
        // No blocked waiter: the syncer thread is woken for this group and queues for the
        // role.
        let first = m.write(put(b"a"));
        std::thread::sleep(Duration::from_millis(50));
        // The holder syncs everything, then gives the role up: the syncer thread gets it
        // and finds nothing in flight.
        shared.sync_round(shared.pipe.lock());
        drop(role);
        shared.role_released();
        let (tx, rx) = std::sync::mpsc::channel();
        let m = Arc::new(m);
        let m2 = Arc::clone(&m);
        std::thread::spawn(move || {
            let r = first.wait().and_then(|()| m2.write(put(b"b")).wait());
            let _ = tx.send(r);
        });
        rx.recv_timeout(Duration::from_secs(30))
            .expect("a write after the syncer thread found nothing to sync hung")
            .unwrap();
        m.close().unwrap();
    }
}
