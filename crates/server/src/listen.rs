//! The client listeners: bound at start, rebound while the server runs when CONFIG SET changes
//! `port` or `bind`, as Redis does. Connections already open stay open on their sockets.
//!
//! A rebind binds every new address before it closes any old one, so a failure leaves the
//! listeners (and the configuration) as they were; an address kept by the change keeps its
//! socket. A listener is closed before the rebind returns, so the port it held is free again
//! for the next CONFIG SET or another process.

use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::server::Shared;
use crate::workers::Workers;

/// How long a rebind waits for a closed listener's task to let its socket go.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Why a rebind failed: the address that could not be bound and the system's error.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the server is not accepting connections")]
    NotRunning,
}

/// The accept loops of the addresses the server listens on.
#[derive(Default)]
pub struct Listeners {
    running: Mutex<Option<Running>>,
}

struct Running {
    rt: tokio::runtime::Handle,
    workers: Arc<Workers>,
    loops: Vec<AcceptLoop>,
}

struct AcceptLoop {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    /// Receives once the loop has dropped its socket.
    closed: mpsc::Receiver<()>,
}

impl AcceptLoop {
    fn close(self) {
        let _ = self.stop.send(());
        if self.closed.recv_timeout(CLOSE_WAIT).is_err() {
            warn!(addr = %self.addr, "a closed listener did not stop in time");
        }
    }
}

impl Listeners {
    /// Starts accepting on `listeners` (bound at start), on the runtime `rt`.
    pub fn start(
        &self,
        shared: &Arc<Shared>,
        rt: tokio::runtime::Handle,
        workers: Arc<Workers>,
        listeners: Vec<TcpListener>,
    ) {
        let mut loops = Vec::with_capacity(listeners.len());
        for l in listeners {
            if let Ok(a) = l.local_addr() {
                info!(addr = %a, "ready to accept connections");
                loops.push(spawn(&rt, l, a, shared, &workers));
            }
        }
        *self.running.lock() = Some(Running { rt, workers, loops });
    }

    /// Stops accepting everywhere (shutdown). Does not wait: it runs on the runtime the
    /// accept loops run on.
    pub fn stop(&self) {
        if let Some(r) = self.running.lock().take() {
            for l in r.loops {
                let _ = l.stop.send(());
            }
        }
    }

    /// Listens on `bind` at `port` (0: a free port, chosen by the first address) instead of the
    /// addresses now listened on. Returns the port listened on.
    pub fn rebind(
        &self,
        shared: &Arc<Shared>,
        bind: &[IpAddr],
        port: u16,
    ) -> Result<u16, ListenError> {
        let mut guard = self.running.lock();
        let running = guard.as_mut().ok_or(ListenError::NotRunning)?;
        let keeps = |a: &SocketAddr| port != 0 && a.port() == port && bind.contains(&a.ip());
        let mut fresh: Vec<(SocketAddr, std::net::TcpListener)> = Vec::new();
        let mut chosen = port;
        for ip in bind {
            if running
                .loops
                .iter()
                .any(|l| keeps(&l.addr) && l.addr.ip() == *ip)
            {
                continue;
            }
            let addr = SocketAddr::new(*ip, chosen);
            // Dropping `fresh` on an error closes what this call bound: nothing changed.
            let l = std::net::TcpListener::bind(addr)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map_err(|source| ListenError::Bind { addr, source })?;
            let bound = l
                .local_addr()
                .map_err(|source| ListenError::Bind { addr, source })?;
            chosen = bound.port();
            fresh.push((bound, l));
        }
        let (kept, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut running.loops)
            .into_iter()
            .partition(|l| keeps(&l.addr));
        running.loops = kept;
        for l in gone {
            info!(addr = %l.addr, "no longer accepting connections here");
            l.close();
        }
        for (addr, l) in fresh {
            let _enter = running.rt.enter();
            match TcpListener::from_std(l) {
                Ok(l) => {
                    info!(addr = %addr, "ready to accept connections");
                    running
                        .loops
                        .push(spawn(&running.rt, l, addr, shared, &running.workers));
                }
                Err(source) => {
                    warn!(addr = %addr, error = %source, "cannot accept on a bound address")
                }
            }
        }
        Ok(chosen)
    }
}

fn spawn(
    rt: &tokio::runtime::Handle,
    listener: TcpListener,
    addr: SocketAddr,
    shared: &Arc<Shared>,
    workers: &Arc<Workers>,
) -> AcceptLoop {
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (done, closed) = mpsc::channel();
    let (shared, workers) = (Arc::clone(shared), Arc::clone(workers));
    rt.spawn(async move {
        tokio::select! {
            _ = stopped => {}
            () = accept_loop(&listener, shared, workers) => {}
        }
        drop(listener);
        let _ = done.send(());
    });
    AcceptLoop { addr, stop, closed }
}

async fn accept_loop(listener: &TcpListener, shared: Arc<Shared>, workers: Arc<Workers>) {
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        workers.serve(stream, addr, Arc::clone(&shared));
    }
}
