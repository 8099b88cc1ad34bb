//! The handle a writer holds until its transaction is durable: blocking or as a `Future`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::{Condvar, Mutex};
use rialto_engine::Result;

/// Wakes blocked waiters of many handles with one broadcast: the syncer fills the slots of a
/// whole group, then calls [`Notifier::notify_all`] once, instead of one futex wake per
/// writer on its own critical path (measured: the wakes dominated the time between syncs).
#[derive(Default)]
pub(crate) struct Notifier {
    lock: Mutex<()>,
    cv: Condvar,
}

impl Notifier {
    /// Wakes every blocked waiter; each re-checks its own slot.
    pub(crate) fn notify_all(&self) {
        let _g = self.lock.lock();
        self.cv.notify_all();
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
}

/// Deregisters a helping waiter however its wait ends.
pub(crate) struct Helping<'a>(&'a dyn SyncHelper);

impl<'a> Helping<'a> {
    pub(crate) fn new(h: &'a dyn SyncHelper) -> Self {
        h.helping(true);
        Helping(h)
    }
}

impl Drop for Helping<'_> {
    fn drop(&mut self) {
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
}

impl<T> Slot<T> {
    pub(crate) fn new(notifier: Arc<Notifier>) -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(SlotState {
                outcome: None,
                waker: None,
            }),
            notifier,
        })
    }

    /// Delivers the outcome and wakes an async waiter. A blocked thread is woken by the
    /// caller's [`Notifier::notify_all`], which must follow.
    pub(crate) fn fulfil(&self, outcome: Result<T>) {
        let waker = {
            let mut s = self.state.lock();
            s.outcome = Some(outcome);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
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
    /// [`crate::Merger`]): the wait takes as long, minus the hand-offs.
    pub fn wait(self) -> Result<T> {
        let helper = self.helper.as_deref();
        let _helping = helper.map(Helping::new);
        let n = &self.slot.notifier;
        loop {
            if let Some(o) = self.slot.state.lock().outcome.take() {
                return o;
            }
            if helper.is_some_and(|h| h.try_sync()) {
                continue;
            }
            // Checking under the notifier's lock pairs with `notify_all` taking it after the
            // slot was filled or the syncer's role was given up: no wakeup is lost.
            let mut g = n.lock.lock();
            if let Some(o) = self.slot.state.lock().outcome.take() {
                return o;
            }
            if helper.is_some_and(|h| h.can_sync()) {
                continue;
            }
            n.cv.wait(&mut g);
        }
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
