//! A background thread that runs a piece of work at an interval until stopped (the expiry
//! pass, store maintenance).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The running thread; stopped by [`Periodic::stop`] or when dropped.
pub struct Periodic {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Periodic {
    /// Starts thread `name`: it waits `interval()` (asked anew each time, so a configuration
    /// change applies at once), then runs `work`, until stopped.
    pub fn start(
        name: &str,
        interval: impl Fn() -> Duration + Send + 'static,
        mut work: impl FnMut() + Send + 'static,
    ) -> Periodic {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    std::thread::park_timeout(interval());
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    work();
                }
            });
        if let Err(e) = &thread {
            tracing::error!(thread = name, error = %e, "cannot start a background thread");
        }
        Periodic {
            stop,
            thread: thread.ok(),
        }
    }

    /// The thread, to wake it before its interval ends (`unpark`): `None` if it did not start.
    pub fn thread(&self) -> Option<std::thread::Thread> {
        self.thread.as_ref().map(|t| t.thread().clone())
    }

    /// Stops the thread and waits for it (a pass in progress finishes first).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Periodic {
    fn drop(&mut self) {
        self.stop();
    }
}
