//! Wake-ups of a connection thread's tasks from other threads, batched.
//!
//! A durable write's reply waits for the sync that covers it, and the syncer thread wakes the
//! connection's task when it releases the write. Counted with `perf stat -e
//! 'syscalls:sys_enter_*'` on the server during 200,000 redis-benchmark SETs, -c 50,
//! `appendfsync always`: 167K `write(2)` calls, one per acknowledged SET, each release
//! unparking the connection thread through its runtime's eventfd; with the relay, 30K (the
//! journal's writes and one wake-up per batch). See design.md §11.2 and measurements.md.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use std::task::{Context, Poll, Wake, Waker};

/// Counts of every connection thread's relay (INFO `rialto_merger`, `/metrics`).
#[derive(Default)]
pub struct RelayStats {
    batches: AtomicU64,
    relayed: AtomicU64,
}

impl RelayStats {
    /// Times a relay's task was woken: a connection thread woken for a batch of replies.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    /// Wake-ups handed to the relays (one per durable reply released by another thread).
    pub fn relayed(&self) -> u64 {
        self.relayed.load(Ordering::Relaxed)
    }
}

/// Collects wake-ups from other threads for the tasks of one connection thread, and wakes
/// that thread once per batch.
///
/// A task woken from another thread is pushed onto its runtime's shared queue and the
/// runtime's thread is unparked, which on a current-thread runtime is a `write(2)` to its
/// eventfd every time: a sync releasing 40 connections cost the syncer 40 system calls. Here
/// the first wake-up of a batch wakes the relay's own task on the connection thread, and that
/// task wakes the others from there, which only pushes them onto the local run queue.
///
/// No wake-up is lost: a waker is queued and `armed` is read under one lock, and the relay's
/// task clears `armed` and takes the queue under that lock too, so a waker queued after the
/// task took the queue finds `armed` clear and wakes the task again.
pub struct Relay {
    state: Mutex<RelayState>,
    stats: Arc<RelayStats>,
}

#[derive(Default)]
struct RelayState {
    pending: Vec<Waker>,
    /// The relay's task was woken and has not run since.
    armed: bool,
    /// The relay's task, once it has run.
    task: Option<Waker>,
}

thread_local! {
    static RELAY: RefCell<Option<Arc<Relay>>> = const { RefCell::new(None) };
}

impl Relay {
    /// Installs a relay for the current thread and returns its task, to be spawned on this
    /// thread's (current-thread) runtime. Futures wrapped by [`relayed`] and polled on this
    /// thread then send their wake-ups through it. `stats` counts them.
    pub fn install(stats: Arc<RelayStats>) -> impl Future<Output = ()> + Send + 'static {
        let relay = Arc::new(Relay {
            state: Mutex::default(),
            stats,
        });
        RELAY.with(|r| *r.borrow_mut() = Some(Arc::clone(&relay)));
        std::future::poll_fn(move |cx| {
            relay.dispatch(cx.waker());
            Poll::<()>::Pending
        })
    }

    fn wake(&self, task: Waker) {
        self.stats.relayed.fetch_add(1, Ordering::Relaxed);
        let first = {
            let mut s = self.state.lock();
            s.pending.push(task);
            if s.armed {
                None
            } else {
                s.armed = true;
                // `None` before the relay's task first runs; it takes the queue then.
                s.task.clone()
            }
        };
        if let Some(t) = first {
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
            t.wake();
        }
    }

    /// The relay's task: wakes every queued task (on this thread, so without a system call).
    fn dispatch(&self, me: &Waker) {
        let batch = {
            let mut s = self.state.lock();
            if !s.task.as_ref().is_some_and(|t| t.will_wake(me)) {
                s.task = Some(me.clone());
            }
            s.armed = false;
            std::mem::take(&mut s.pending)
        };
        for w in batch {
            w.wake();
        }
    }
}

/// The waker a relayed future registers: it hands the task's own waker to the relay.
struct RelayWaker {
    relay: Arc<Relay>,
    task: Waker,
}

impl Wake for RelayWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.relay.wake(self.task.clone());
    }
}

/// `fut`, with the wake-ups it gets from other threads going through the current thread's
/// [`Relay`] (directly where the thread has none).
pub fn relayed<F: Future + Unpin>(fut: F) -> Relayed<F> {
    Relayed(fut)
}

/// See [`relayed`].
pub struct Relayed<F>(F);

impl<F: Future + Unpin> Future for Relayed<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let relay = RELAY.with(|r| r.borrow().clone());
        match relay {
            Some(relay) => {
                let waker = Waker::from(Arc::new(RelayWaker {
                    relay,
                    task: cx.waker().clone(),
                }));
                Pin::new(&mut self.0).poll(&mut Context::from_waker(&waker))
            }
            None => Pin::new(&mut self.0).poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// A future another thread completes: `Pending` until `done`, then `Ready`.
    #[derive(Clone, Default)]
    struct Gate(Arc<Mutex<(bool, Option<Waker>)>>);

    impl Gate {
        fn open(&self) {
            let w = {
                let mut g = self.0.lock();
                g.0 = true;
                g.1.take()
            };
            if let Some(w) = w {
                w.wake();
            }
        }

        fn registered(&self) -> bool {
            self.0.lock().1.is_some()
        }
    }

    impl Future for Gate {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let mut g = self.0.lock();
            if g.0 {
                Poll::Ready(())
            } else {
                g.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn wake_ups_from_another_thread_arrive_in_batches_and_none_is_lost() {
        let rt = runtime();
        let stats = Arc::new(RelayStats::default());
        let task = Relay::install(Arc::clone(&stats));
        rt.spawn(task);
        let gates: Vec<Gate> = (0..40).map(|_| Gate::default()).collect();
        let done = Arc::new(AtomicUsize::new(0));
        for g in &gates {
            let (g, done) = (g.clone(), Arc::clone(&done));
            rt.spawn(async move {
                relayed(g).await;
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
        rt.block_on(async {
            // Every task registered its waker (through the relay).
            while !gates.iter().all(Gate::registered) {
                tokio::task::yield_now().await;
            }
        });
        // Released by another thread, as the syncer releases a sync's writes, while the
        // connection thread is parked: one wake-up of the thread for the whole batch.
        let opener = {
            let gates = gates.clone();
            std::thread::spawn(move || gates.iter().for_each(Gate::open))
        };
        opener.join().unwrap();
        rt.block_on(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while done.load(Ordering::Relaxed) < gates.len() {
                assert!(tokio::time::Instant::now() < deadline, "a wake-up was lost");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        assert_eq!(stats.relayed(), 40);
        assert_eq!(
            stats.batches(),
            1,
            "the thread was woken once for the batch"
        );
    }

    #[test]
    fn relayed_polls_directly_on_a_thread_without_a_relay() {
        let rt = runtime();
        let gate = Gate::default();
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                runtime().block_on(async move { relayed(gate).await });
            })
        };
        while !gate.registered() {
            std::thread::sleep(Duration::from_millis(1));
        }
        gate.open();
        waiter.join().unwrap();
        drop(rt);
    }

    #[test]
    fn wake_ups_racing_the_dispatch_are_never_lost() {
        // Many rounds of gates opened from another thread while the relay's task runs.
        let rt = runtime();
        let task = Relay::install(Arc::default());
        rt.spawn(task);
        for _ in 0..200 {
            let gates: Vec<Gate> = (0..8).map(|_| Gate::default()).collect();
            let handles: Vec<_> = gates.iter().map(|g| rt.spawn(relayed(g.clone()))).collect();
            let opener = {
                let gates = gates.clone();
                std::thread::spawn(move || {
                    for g in &gates {
                        while !g.registered() {
                            std::thread::yield_now();
                        }
                        g.open();
                    }
                })
            };
            rt.block_on(async {
                for h in handles {
                    tokio::time::timeout(Duration::from_secs(10), h)
                        .await
                        .expect("a wake-up was lost")
                        .unwrap();
                }
            });
            opener.join().unwrap();
        }
    }
}
