//! Connection threads: one single-threaded tokio runtime per thread, each connection pinned to
//! one of them (round robin). A connection's task never moves between threads and a request
//! never hands off to another thread to be read, executed or answered; with a multi-threaded
//! runtime, work stealing and cross-thread wake-ups cost more than they saved (measured on 2
//! cores with the client beside the server: fewer GETs per second at -P 1 with two worker
//! threads than with one).
//!
//! The one exception is the bulk thread: a connection that owns a batch push moves there once
//! its PUSH BEGIN is answered, and stays. It runs at the ingestion pool's CPU priority
//! (`push-nice`), so decoding a push's PUSH ADD requests (hundreds of kilobytes each) never
//! delays the reads and writes of the connection threads, and takes only the CPU they leave.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::watch;
use tracing::warn;

use crate::server::Shared;

/// The connection threads.
pub struct Workers {
    handles: Vec<Handle>,
    bulk: Handle,
    threads: Vec<JoinHandle<()>>,
    stop: watch::Sender<bool>,
    next: AtomicUsize,
}

impl Workers {
    /// Starts `n` (at least one) connection threads and the bulk thread, at CPU priority
    /// `bulk_nice`; their wake-up relays count into `relay_stats`.
    pub fn start(
        n: usize,
        bulk_nice: rialto_io::ThreadPriority,
        relay_stats: Arc<crate::wake::RelayStats>,
    ) -> std::io::Result<Workers> {
        let (stop, _) = watch::channel(false);
        let mut handles = Vec::new();
        let mut threads = Vec::new();
        let n = n.max(1);
        for i in 0..=n {
            let (tx, rx) = std::sync::mpsc::channel();
            let mut stop_rx = stop.subscribe();
            let relay_stats = Arc::clone(&relay_stats);
            let (name, nice) = if i < n {
                (
                    format!("rialto-conn-{i}"),
                    rialto_io::ThreadPriority::Nice(0),
                )
            } else {
                ("rialto-bulk".to_string(), bulk_nice)
            };
            let t = std::thread::Builder::new().name(name).spawn(move || {
                rialto_keyspace::lower_thread_priority(nice);
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                // Durable replies are released by the syncer thread: its wake-ups of this
                // thread's connections arrive through one relay (see `wake.rs`).
                let relay_task = crate::wake::Relay::install(relay_stats);
                rt.spawn(relay_task);
                let _ = tx.send(Ok(rt.handle().clone()));
                rt.block_on(async move {
                    while !*stop_rx.borrow_and_update() {
                        if stop_rx.changed().await.is_err() {
                            break;
                        }
                    }
                });
                rt.shutdown_timeout(Duration::from_secs(1));
            })?;
            let handle = rx
                .recv()
                .map_err(|_| std::io::Error::other("connection thread exited at start"))??;
            handles.push(handle);
            threads.push(t);
        }
        let bulk = handles.pop().expect("the bulk thread was started last");
        Ok(Workers {
            handles,
            bulk,
            threads,
            stop,
            next: AtomicUsize::new(0),
        })
    }

    /// The bulk thread's runtime.
    pub fn bulk_handle(&self) -> Handle {
        self.bulk.clone()
    }

    /// Serves an accepted connection on the next thread.
    pub fn serve(&self, stream: tokio::net::TcpStream, addr: SocketAddr, shared: Arc<Shared>) {
        // The socket moves to the target thread's reactor: deregister here, register there.
        let std = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                warn!(error = %e, "cannot hand a connection to its thread");
                return;
            }
        };
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.handles[i].spawn(async move {
            match tokio::net::TcpStream::from_std(std) {
                Ok(s) => crate::server::admit(s, addr, shared).await,
                Err(e) => warn!(error = %e, "cannot register a connection"),
            }
        });
    }

    /// Stops the threads (their remaining tasks are dropped) and waits for them.
    pub fn stop(self) {
        let _ = self.stop.send(true);
        for t in self.threads {
            let _ = t.join();
        }
    }
}
