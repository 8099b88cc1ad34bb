//! Blocking pops on the connection (BLPOP and kin). The pop runs as a write; if it took
//! nothing, the same merger transaction makes the connection a waiter on its keys, and it
//! waits — reading nothing else, as Redis stops processing a blocked client's input — until
//! the keyspace serves it, its timeout passes, CLIENT UNBLOCK asks, or its socket closes.
//!
//! In cluster mode a pop is a record of the partition's log, which a node may not apply on its
//! own: the connection registers to be told of writes to its keys, pops through the log, and if
//! that took nothing waits to be told, then pops again. Waiters are then woken together and
//! race through the log, where Redis serves the oldest first.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rialto_keyspace::{Served, Value};
use rialto_resp::Reply;
use tokio::io::AsyncReadExt;
use tokio::sync::oneshot;

use super::Connection;
use crate::commands::BlockingPop;
use crate::reply;

/// Why a wait ended.
enum Woken {
    /// The keyspace handed over a value (or, in cluster mode, a key was written).
    Delivered(Result<rialto_keyspace::Result<Value>, oneshot::error::RecvError>),
    /// The timeout passed, or CLIENT UNBLOCK ... TIMEOUT.
    TimedOut,
    /// CLIENT UNBLOCK ... ERROR.
    Unblocked,
    /// The client is gone (its socket closed, CLIENT KILL, shutdown).
    Closed,
}

fn channel() -> (Served, oneshot::Receiver<rialto_keyspace::Result<Value>>) {
    let (tx, rx) = oneshot::channel();
    (
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
        rx,
    )
}

fn unblocked_error() -> Reply {
    Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
}

impl Connection {
    /// Runs a blocking pop to its reply (`close_after_reply` set if the client went away).
    pub(super) async fn blocking_pop(
        &mut self,
        pop: BlockingPop,
        at_slot: Option<(u16, u32)>,
    ) -> Reply {
        let deadline = pop
            .timeout_ms
            .map(|ms| tokio::time::Instant::now() + Duration::from_millis(ms));
        if let Some(c) = self.shared.cluster.clone() {
            return self.blocking_pop_remote(c, pop, at_slot, deadline).await;
        }
        if !pop.may_wait {
            let keyspace = &self.shared.keyspace;
            let h = keyspace.enqueue(pop.op, |r, _| r);
            return match super::settle(keyspace, h).await {
                Ok(Ok(v)) => reply::value(v),
                Ok(Err(e)) => reply::keyspace_error(&e),
                Err(e) => reply::engine_error(&e),
            };
        }
        loop {
            let (deliver, mut rx) = channel();
            let keyspace = &self.shared.keyspace;
            let h = keyspace.block(pop.op.clone(), pop.keys.clone(), deliver, |r, w| (r, w));
            let outcome = super::settle(keyspace, h).await;
            let (r, waiter) = match outcome {
                Ok(x) => x,
                Err(e) => return reply::engine_error(&e),
            };
            let Some(id) = waiter else {
                return match r {
                    Ok(v) => reply::value(v),
                    Err(e) => reply::keyspace_error(&e),
                };
            };
            let woken = self.wait(&mut rx, deadline).await;
            let delivered = match woken {
                Woken::Delivered(d) => d,
                other => {
                    if self.shared.keyspace.unblock(id) {
                        return self.gave_up(other, &pop);
                    }
                    // Served meanwhile: its value is on its way, and it is the reply.
                    rx.await
                }
            };
            match delivered {
                Ok(Ok(v)) => return reply::value(v),
                Ok(Err(e)) => return reply::keyspace_error(&e),
                // The transaction that served it failed before it was durable: nothing was
                // popped for it, so it waits again.
                Err(_) => continue,
            }
        }
    }

    /// The cluster's form of [`Connection::blocking_pop`].
    async fn blocking_pop_remote(
        &mut self,
        c: Arc<crate::cluster::Cluster>,
        pop: BlockingPop,
        at_slot: Option<(u16, u32)>,
        deadline: Option<tokio::time::Instant>,
    ) -> Reply {
        let mut pop = pop;
        if pop.may_wait {
            pop.op.kind = self.resolve_last_ids(&pop.op);
        }
        loop {
            let (deliver, mut rx) = channel();
            let id = self
                .shared
                .keyspace
                .notify_on_write(pop.op.db, pop.keys.clone(), deliver);
            let pending = super::remote_write(
                Arc::clone(&c),
                at_slot,
                self.partition,
                crate::cluster::Payload::One(pop.op.clone()),
                |reply, _, pos| super::Executed {
                    reply,
                    micros: 0,
                    slow_args: None,
                    track_seq: 0,
                    log_pos: pos,
                    error_counted: false,
                },
            );
            let ex = match pending {
                Ok(fut) => fut.await,
                Err(r) => {
                    self.shared.keyspace.unblock(id);
                    return r;
                }
            };
            if ex.log_pos.is_some() {
                self.client.last_write = ex.log_pos;
            }
            if !pop.may_wait || !matches!(ex.reply, Reply::Null | Reply::NullArray) {
                self.shared.keyspace.unblock(id);
                return ex.reply;
            }
            match self.wait(&mut rx, deadline).await {
                Woken::Delivered(_) => continue,
                other => {
                    self.shared.keyspace.unblock(id);
                    return self.gave_up(other, &pop);
                }
            }
        }
    }

    /// XREAD's `$` made the last id this node's state holds, once: each retry through the log
    /// must read after the same id, or entries added between two retries would be skipped.
    fn resolve_last_ids(&self, op: &rialto_keyspace::Op) -> rialto_keyspace::OpKind {
        use rialto_keyspace::{OpKind, ReadFrom, Stream, StreamId, StreamOp};
        let OpKind::Stream(StreamOp::Read {
            streams,
            count,
            bad,
        }) = &op.kind
        else {
            return op.kind.clone();
        };
        let resolved = streams
            .iter()
            .map(|(key, from)| {
                let from = match from {
                    ReadFrom::Last => {
                        ReadFrom::After(self.shared.keyspace.read(op.db, op.now_ms, |k| {
                            Stream::load(k, key)
                                .ok()
                                .flatten()
                                .map_or(StreamId::MIN, |s| s.meta.last)
                        }))
                    }
                    after => *after,
                };
                (key.clone(), from)
            })
            .collect();
        OpKind::Stream(StreamOp::Read {
            streams: resolved,
            count: *count,
            bad: *bad,
        })
    }

    /// The reply of a pop that stopped waiting unserved.
    fn gave_up(&mut self, why: Woken, pop: &BlockingPop) -> Reply {
        match why {
            Woken::Unblocked => unblocked_error(),
            Woken::Closed => {
                self.client.close_after_reply = true;
                pop.timed_out.clone()
            }
            _ => pop.timed_out.clone(),
        }
    }

    /// Waits for a delivery on `rx`, the deadline, CLIENT UNBLOCK or the client's end.
    async fn wait(
        &mut self,
        rx: &mut oneshot::Receiver<rialto_keyspace::Result<Value>>,
        deadline: Option<tokio::time::Instant>,
    ) -> Woken {
        let handle = Arc::clone(&self.client.handle);
        *handle.unblock.lock() = None;
        handle.blocked.store(true, Ordering::Release);
        let mut shutdown = self.shared.shutdown.subscribe();
        let limit = self.shared.config.read().client_query_buffer_limit;
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep);
        let woken = loop {
            if handle.killed.load(Ordering::Acquire) || *shutdown.borrow_and_update() {
                break Woken::Closed;
            }
            if self.inbuf.len() > limit {
                break Woken::Closed;
            }
            self.inbuf.reserve(super::READ_CHUNK);
            tokio::select! {
                r = &mut *rx => break Woken::Delivered(r),
                _ = &mut sleep => break Woken::TimedOut,
                _ = handle.unblock_notify.notified() => {
                    match handle.unblock.lock().take() {
                        Some(true) => break Woken::Unblocked,
                        Some(false) => break Woken::TimedOut,
                        None => {}
                    }
                }
                _ = handle.kill_notify.notified() => break Woken::Closed,
                _ = shutdown.changed() => break Woken::Closed,
                // Input that arrives meanwhile waits in the buffer; an end of stream ends the
                // wait (a client that left is not served).
                n = self.stream.read_buf(&mut self.inbuf) => match n {
                    Ok(0) | Err(_) => break Woken::Closed,
                    Ok(_) => {}
                },
            }
        };
        handle.blocked.store(false, Ordering::Release);
        woken
    }
}
