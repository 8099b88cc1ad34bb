//! The handle a writer holds until its transaction is durable: blocking or as a `Future`.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread::{Thread, ThreadId};

use parking_lot::Mutex;
use rialto_engine::Result;

/// Threads blocked in [`CommitHandle::wait`] that help with syncs, so that the merger can
/// wake exactly one of them to take the syncer's role.
///
/// Each blocked thread parks itself and is unparked directly: by whoever fulfils its slot,
/// or by [`Notifier::wake_one`]. A shared condition variable would wake every waiter for
/// either, though at most one of them can take the role.
#[derive(Default)]
pub(crate) struct Notifier {
    /// A thread waits on one handle at a time, so it is listed at most once.
    parked: Mutex<Vec<Thread>>,
}

impl Notifier {
    /// Wakes the helping waiter that parked last (most likely one whose group is still in
    /// flight: those parked after the groups before them). A woken waiter whose outcome is
    /// already known passes the turn on (see [`CommitHandle::wait`]), so one that can sync
    /// always gets it.
    pub(crate) fn wake_one(&self) {
        if let Some(t) = self.parked.lock().last() {
            t.unpark();
        }
    }

    fn register(&self, t: Thread) {
        self.parked.lock().push(t);
    }

    fn unregister(&self, id: ThreadId) {
        let mut p = self.parked.lock();
        if let Some(i) = p.iter().rposition(|t| t.id() == id) {
            p.remove(i);
        }
    }
}

/// The merger's side of a blocking wait that helps: a thread blocked on a handle takes the
/// syncer's role when it is free, so a writer whose group is logged syncs it itself instead
/// of sleeping through two thread hand-offs (to the syncer and back).
pub(crate) trait SyncHelper: Send + Sync {
    /// A blocked waiter starts (`true`) or stops (`false`) helping.
    fn helping(&self, on: bool);
    /// If groups are in flight and nobody holds the syncer's role: takes it, syncs and
    /// releases what the sync covered. Returns whether it did.
    fn try_sync(&self) -> bool;
    /// Whether [`SyncHelper::try_sync`] could act now (a hint, checked before sleeping).
    fn can_sync(&self) -> bool;
    /// How long a blocked waiter polls before it sleeps (`MergerOptions::wait_spin`).
    fn wait_spin(&self) -> std::time::Duration;
    /// Whether polling pays now (see [`crate::poll`]).
    fn may_poll(&self) -> bool;
    /// Yields the CPU once, timed (see [`crate::poll`]). Returns whether polling may go on.
    fn poll_yield(&self) -> bool;
}

thread_local! {
    /// How many [`Helping`] guards this thread holds: a thread that will block in
    /// [`CommitHandle::wait`] right after logging a group syncs it itself, so nobody needs
    /// waking for it.
    static HELPING: Cell<u32> = const { Cell::new(0) };
}

/// Whether the calling thread is a helping waiter (about to wait on its own handle).
pub(crate) fn this_thread_helps() -> bool {
    HELPING.with(|h| h.get() > 0)
}

/// Deregisters a helping waiter however its wait ends.
pub(crate) struct Helping<'a>(&'a dyn SyncHelper);

impl<'a> Helping<'a> {
    pub(crate) fn new(h: &'a dyn SyncHelper) -> Self {
        h.helping(true);
        HELPING.with(|c| c.set(c.get() + 1));
        Helping(h)
    }
}

impl Drop for Helping<'_> {
    fn drop(&mut self) {
        HELPING.with(|c| c.set(c.get().saturating_sub(1)));
        self.0.helping(false);
    }
}

/// Where a transaction's outcome is delivered.
pub(crate) struct Slot<T> {
    state: Mutex<SlotState<T>>,
    notifier: Arc<Notifier>,
}

struct SlotState<T> {
    outcome: Option<Result<T>>,
    waker: Option<Waker>,
    /// A thread parked in [`CommitHandle::wait`].
    thread: Option<Thread>,
}

impl<T> Slot<T> {
    pub(crate) fn new(notifier: Arc<Notifier>) -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(SlotState {
                outcome: None,
                waker: None,
                thread: None,
            }),
            notifier,
        })
    }

    /// Delivers the outcome and wakes its waiter, a task or a parked thread.
    pub(crate) fn fulfil(&self, outcome: Result<T>) {
        let (waker, thread) = {
            let mut s = self.state.lock();
            s.outcome = Some(outcome);
            (s.waker.take(), s.thread.take())
        };
        if let Some(w) = waker {
            w.wake();
        }
        if let Some(t) = thread {
            t.unpark();
        }
    }
}

/// Resolves when the transaction is durable (per the merger's [`crate::Durability`]) with
/// its result, or with the error that kept it from becoming durable. Wait on it from a thread
/// with [`CommitHandle::wait`], or `.await` it from an async task.
#[must_use = "a write is acknowledged only when its handle resolves"]
pub struct CommitHandle<T> {
    pub(crate) slot: Arc<Slot<T>>,
    /// Set when blocking waits help with syncs (`Durability::Always`).
    pub(crate) helper: Option<Arc<dyn SyncHelper>>,
}

impl<T> CommitHandle<T> {
    /// A handle that is already resolved (a transaction refused before it was queued).
    pub(crate) fn ready(outcome: Result<T>) -> Self {
        let slot = Slot::new(Arc::default());
        slot.fulfil(outcome);
        CommitHandle { slot, helper: None }
    }

    /// Blocks the calling thread until the outcome is known. With `Durability::Always`
    /// the thread syncs the journal itself when no other thread is syncing (see
    /// [`crate::Merger`]): the wait takes as long, minus the hand-offs. It polls for
    /// `MergerOptions::wait_spin` before it sleeps.
    pub fn wait(self) -> Result<T> {
        let helper = self.helper.as_deref();
        let _helping = helper.map(Helping::new);
        let n = &self.slot.notifier;
        let spin_until = helper.map(|h| std::time::Instant::now() + h.wait_spin());
        let outcome = loop {
            if let Some(o) = self.slot.state.lock().outcome.take() {
                break o;
            }
            if helper.is_some_and(|h| h.try_sync()) {
                continue;
            }
            // Poll before sleeping (`MergerOptions::wait_spin`). Yield, never busy-spin: with
            // more writers than cores a busy poller keeps its core for a whole time slice
            // while the thread it waits for cannot run (measured: 8 writers on 2 cores fell
            // from ~40K to 5.3K durable writes/s).
            // Only while the CPUs are not contended (see `crate::poll`).
            if let (Some(t), Some(h)) = (spin_until, helper) {
                if std::time::Instant::now() < t && h.may_poll() {
                    h.poll_yield();
                    continue;
                }
            }
            // Registered under the slot's lock: `fulfil` either ran before (the outcome is
            // here) or will unpark this thread.
            let me = std::thread::current();
            {
                let mut s = self.slot.state.lock();
                if let Some(o) = s.outcome.take() {
                    break o;
                }
                s.thread = Some(me.clone());
            }
            // Registered before looking at the role: whoever gives it up with groups pending
            // calls `wake_one` after, and finds this thread in the list or is seen here.
            if helper.is_some() {
                n.register(me.clone());
            }
            if !helper.is_some_and(|h| h.can_sync()) {
                std::thread::park();
            }
            if helper.is_some() {
                n.unregister(me.id());
            }
            self.slot.state.lock().thread = None;
        };
        // Woken to sync but resolved meanwhile: pass the turn to a waiter that can.
        if helper.is_some_and(|h| h.can_sync()) {
            n.wake_one();
        }
        outcome
    }

    /// The outcome if it is known, without waiting.
    pub fn try_take(&mut self) -> Option<Result<T>> {
        self.slot.state.lock().outcome.take()
    }
}

impl<T> Future for CommitHandle<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let mut s = self.slot.state.lock();
        match s.outcome.take() {
            Some(o) => Poll::Ready(o),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> std::fmt::Debug for CommitHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let done = self.slot.state.lock().outcome.is_some();
        f.debug_struct("CommitHandle")
            .field("resolved", &done)
            .finish()
    }
}
