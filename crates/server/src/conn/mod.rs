//! One client connection: read what arrived, decode every complete request, execute them in
//! order, write all their replies with one socket write.
//!
//! Ordering: replies leave in request order. Writes go to the merger and their replies wait
//! for durability; every request of one read is submitted before the first reply is awaited,
//! so a pipeline shares the merger's groups and syncs. A key read that follows a pending
//! write of the same connection runs through the merger too (behind that write, seeing it);
//! otherwise it reads the published state at once, never waiting for a sync. Any other
//! command waits until the connection's pending replies are resolved, then runs.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rialto_resp::{Limits, Protocol, Reply, RequestDecoder};
use rialto_txn::CommitHandle;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::{debug, warn};

use crate::acl::log::{Context, Event};
use crate::client::Client;
use crate::commands::{At, Ctx, Handler, Outcome, StatsAt, R};
use crate::reply;
use crate::server::Shared;

mod block;
mod multi;
pub(crate) use multi::submit_watched;
pub(crate) mod script;

/// Replies pending before the connection stops decoding and resolves them (bounds memory).
const MAX_PENDING: usize = 4096;
/// Reply bytes buffered before they are written even though more requests are buffered.
const OUT_FLUSH_BYTES: usize = 256 * 1024;
/// Reply bytes an unauthenticated client may leave unread (Redis 7.0.15's limit).
const UNAUTHENTICATED_OUT_BYTES: usize = 1024;
/// Read buffer growth step.
const READ_CHUNK: usize = 16 * 1024;
/// The reply buffer a connection starts with.
pub(crate) const REPLY_CHUNK: usize = 16 * 1024;
/// Consecutive GET/MGET requests of one read decoded before the first runs, so that the
/// row-cache lines they need are fetched together (`Db::prefetch`).
const READ_AHEAD: usize = 32;
/// How often a command held while its slot's master changes asks again.
const HANDOVER_POLL: Duration = Duration::from_millis(5);

/// What a command executed by the merger hands back.
pub struct Executed {
    pub reply: Reply,
    pub micros: u64,
    /// The arguments, returned only when the command was slow enough for the slow log.
    pub slow_args: Option<Vec<Bytes>>,
    /// For a tracking client's write: the last key change queued for invalidation when it
    /// was applied (0: none to wait for). Its invalidations leave before its reply.
    pub track_seq: u64,
    /// Cluster mode: the partition and offset of the record that applied the write.
    pub log_pos: Option<(u32, u64)>,
    /// A script's error reply that one of its calls answered: counted as an error reply
    /// then, so only as a failed call of the script now.
    pub error_counted: bool,
}

/// A reply computed off the connection (see [`crate::commands::Outcome::Later`]).
pub type BoxReply = Pin<Box<dyn Future<Output = Reply> + Send>>;

enum Pending {
    Ready(Reply),
    /// With where the command's statistics go.
    Commit(CommitHandle<Executed>, StatsAt),
    /// A write on its way through the cluster's log.
    Remote(Pin<Box<dyn Future<Output = Executed> + Send>>, StatsAt),
}

struct Queued {
    proto: Protocol,
    item: Pending,
    /// Resolved but not sent (CLIENT REPLY OFF or SKIP when it was made).
    silent: bool,
}

struct Connection {
    stream: TcpStream,
    shared: Arc<Shared>,
    client: Client,
    inbuf: BytesMut,
    /// How the query buffer is sized down after a peak, and whether it was released.
    qb: QueryBufSize,
    out: BytesMut,
    decoder: RequestDecoder,
    queue: VecDeque<Queued>,
    /// Whether `queue` holds a reply the merger has yet to resolve.
    queue_has_commit: bool,
    /// Whether `queue` holds a write the cluster's log has yet to apply: a read behind it
    /// waits for it.
    queue_has_remote: bool,
    /// Cluster mode: the partition the address this connection reached serves.
    partition: u32,
    /// The ACL generation the connection's user was fetched at.
    acl_seen: u64,
    /// Decoded GET/MGET requests waiting for [`Connection::run_ahead`].
    ahead: Vec<Vec<Bytes>>,
    /// Whether the connection runs on the bulk thread (see `workers.rs`).
    on_bulk: bool,
    /// The transaction being queued (MULTI ... EXEC).
    multi: Option<multi::Multi>,
    /// The keys it watches (WATCH), made on first use.
    watch: Option<rialto_keyspace::Watch>,
    /// The latency histograms of the thread serving the connection.
    latencies: Arc<crate::latency_histograms::Shard>,
    /// What [`Connection::note_memory`] published last: the query and reply buffers'
    /// capacities and MULTI's queued commands and bytes.
    noted: (usize, usize, i64, u64),
}

/// The query buffer's sizing, as Redis's client cron sizes it: a buffer much larger than its
/// recent peak shrinks to that peak (a one-off large request does not pin its memory), and
/// one idle past `QUERY_BUF_IDLE` is released (`Clients::trim_idle` asks).
#[derive(Debug, Default)]
struct QueryBufSize {
    /// The most bytes buffered since the last check.
    peak: usize,
    /// When the last check ran, in the handle's milliseconds since the connection began.
    checked_ms: u64,
    /// Released while idle: the next read allocates as it needs, not a whole chunk first.
    released: bool,
}

/// How often a busy connection's buffer is checked against its peak.
const QUERY_BUF_CHECK_MS: u64 = 250;
/// Below this a buffer is never shrunk (Redis's `PROTO_RESIZE_THRESHOLD`).
const QUERY_BUF_RESIZE_MIN: usize = 32 * 1024;

/// Waits for a merger job enqueued on `keyspace`, executing the queue here first when the
/// merger runs on the threads that submit (`merger-inline`); a durable write is then released
/// through this thread's relay.
pub(crate) async fn settle<T>(
    keyspace: &rialto_keyspace::Keyspace,
    mut h: CommitHandle<T>,
) -> rialto_engine::Result<T> {
    keyspace.run_queued();
    match h.try_take() {
        Some(outcome) => outcome,
        None => crate::wake::relayed(h).await,
    }
}

/// Why [`Connection::serve`] returned.
enum Exit {
    /// The connection is done.
    Closed,
    /// It owns a push now: it continues on the bulk thread.
    ToBulk,
}

/// Whether a request only reads keys the row cache may hold (so prefetching them pays).
fn prefetchable(args: &[Bytes]) -> bool {
    match args.first() {
        Some(c) if c.eq_ignore_ascii_case(b"get") => args.len() == 2,
        Some(c) if c.eq_ignore_ascii_case(b"mget") => args.len() >= 2,
        _ => false,
    }
}

/// Serves one accepted connection until it closes.
pub async fn run(stream: TcpStream, addr: SocketAddr, shared: Arc<Shared>) {
    let laddr = stream.local_addr().unwrap_or(addr);
    let user = {
        let acl = shared.acl.read();
        (!acl.default_user_needs_auth())
            .then(|| acl.user(b"default"))
            .flatten()
    };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let handle = shared.clients.register(addr, laddr, fd, "default");
    let limits = {
        let c = shared.config.read();
        Limits {
            max_bulk_len: c.proto_max_bulk_len,
            max_multibulk_len: c.max_multibulk_len,
            ..Limits::default()
        }
    };
    let mut decoder = RequestDecoder::new(limits);
    decoder.set_pre_auth(user.is_none());
    let conn = Connection {
        stream,
        shared: Arc::clone(&shared),
        client: Client {
            handle,
            db: 0,
            protocol: Protocol::Resp2,
            unrestricted: user.as_ref().is_some_and(|u| u.unrestricted()),
            user,
            close_after_reply: false,
            mailbox: None,
            tracking: None,
            readonly: false,
            last_write: None,
            reply: Default::default(),
        },
        inbuf: BytesMut::with_capacity(READ_CHUNK),
        qb: QueryBufSize::default(),
        out: BytesMut::with_capacity(REPLY_CHUNK),
        decoder,
        queue: VecDeque::new(),
        queue_has_commit: false,
        queue_has_remote: false,
        partition: shared
            .cluster
            .as_ref()
            .map_or(0, |c| c.partition_of_port(laddr.port())),
        acl_seen: shared.acl_generation.load(Ordering::Acquire),
        ahead: Vec::new(),
        on_bulk: false,
        multi: None,
        watch: None,
        latencies: shared.command_latencies.shard_here(),
        noted: (0, 0, -1, 0),
    };
    serve_and_close(conn).await;
}

/// Serves `conn` until it closes, moving it to the bulk thread when it asks to.
async fn serve_and_close(mut conn: Connection) {
    let id = conn.client.handle.id;
    match conn.serve().await {
        Ok(Exit::ToBulk) => return conn.into_bulk(),
        Ok(Exit::Closed) => {}
        Err(e) => debug!(client = id, error = %e, "connection closed with an error"),
    }
    closed(&conn.shared, id);
}

/// What follows a connection's end: a push it left unfinished is aborted (off the connection
/// thread) and the client is forgotten.
fn closed(shared: &Arc<Shared>, id: u64) {
    if shared.keyspace.owns_push(id) {
        let sh = Arc::clone(shared);
        drop(shared.keyspace.run_on_ingestion_pool(move || {
            sh.keyspace.abort_pushes_of(id);
        }));
    }
    if let Some(c) = shared.cluster.as_ref().filter(|c| c.pushes.owned_by(id)) {
        let c = Arc::clone(c);
        drop(shared.keyspace.run_on_ingestion_pool(move || {
            crate::cluster_stores::abort_owned_by(&c, id);
        }));
    }
    shared.tracking.disable(id);
    shared.monitors.remove(id);
    shared.hub.remove_client(id);
    shared.clients.unregister(id);
}

impl Connection {
    /// Continues this connection on the bulk thread: its socket moves to that thread's
    /// reactor, with everything already read or decoded. If it cannot, the connection closes.
    fn into_bulk(self) {
        let id = self.client.handle.id;
        let bulk = self.shared.bulk.get().cloned();
        // Moves the socket out; `..self` below takes every other field as it is.
        let (bulk, std) = match (bulk, self.stream.into_std()) {
            (Some(b), Ok(s)) => (b, s),
            (None, _) => return closed(&self.shared, id),
            (_, Err(e)) => {
                warn!(client = id, error = %e, "cannot move a connection to the bulk thread");
                return closed(&self.shared, id);
            }
        };
        let task: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
            match TcpStream::from_std(std) {
                Ok(stream) => {
                    let conn = Connection {
                        stream,
                        on_bulk: true,
                        latencies: self.shared.command_latencies.shard_here(),
                        ..self
                    };
                    serve_and_close(conn).await;
                }
                Err(e) => {
                    warn!(client = id, error = %e, "cannot register a connection on the bulk thread");
                    closed(&self.shared, id);
                }
            }
        });
        bulk.spawn(task);
    }

    async fn serve(&mut self) -> std::io::Result<Exit> {
        let mut shutdown = self.shared.shutdown.subscribe();
        // Resolves when the client is killed (CLIENT KILL) or the server shuts
        // down. Made once: a `Notified` registers with its `Notify` under a lock when first
        // polled and unregisters when dropped, which per read was 2% of a PING's CPU.
        let stop = {
            let handle = Arc::clone(&self.client.handle);
            let mut shutdown = shutdown.clone();
            async move {
                tokio::select! {
                    _ = handle.kill_notify.notified() => {}
                    _ = shutdown.changed() => {}
                }
            }
        };
        tokio::pin!(stop);
        let trim_request = |h: Arc<crate::client::ClientHandle>| async move {
            h.trim_notify.notified().await;
        };
        let mut trim = Box::pin(trim_request(Arc::clone(&self.client.handle)));
        loop {
            loop {
                let (buffered, room) = (self.inbuf.len(), self.inbuf.capacity() - self.inbuf.len());
                match self.decoder.decode(&mut self.inbuf) {
                    Ok(Some(req)) => {
                        let h = &self.client.handle;
                        h.qbuf.store(buffered as u64, Ordering::Relaxed);
                        h.qbuf_free.store(room as u64, Ordering::Relaxed);
                        let args = req.into_args();
                        // A GET or MGET waits for the requests after it (none of them can
                        // change how later ones decode), up to READ_AHEAD.
                        let args = if prefetchable(&args) {
                            self.ahead.push(args);
                            if self.ahead.len() < READ_AHEAD {
                                continue;
                            }
                            None
                        } else {
                            Some(args)
                        };
                        if self.run_ahead().await? {
                            return Ok(Exit::Closed);
                        }
                        if let Some(args) = args {
                            let push = !self.on_bulk
                                && args
                                    .first()
                                    .is_some_and(|c| c.eq_ignore_ascii_case(b"push"));
                            if self.step(args).await? {
                                return Ok(Exit::Closed);
                            }
                            if push && self.shared.keyspace.owns_push(self.client.handle.id) {
                                // It began a push: answer what it asked so far, then continue
                                // on the bulk thread with the rest of its input.
                                self.flush().await?;
                                if self.client.close_after_reply {
                                    return Ok(Exit::Closed);
                                }
                                return Ok(Exit::ToBulk);
                            }
                        }
                    }
                    Ok(None) => {
                        if self.run_ahead().await? {
                            return Ok(Exit::Closed);
                        }
                        break;
                    }
                    Err(e) => {
                        if self.run_ahead().await? {
                            return Ok(Exit::Closed);
                        }
                        self.drain().await;
                        e.write_reply(&mut self.out);
                        self.shared.errors.count(b"ERR");
                        self.shared
                            .stats
                            .rejected_protocol
                            .fetch_add(1, Ordering::Relaxed);
                        debug!(client = self.client.handle.id, error = %e, "protocol error; closing");
                        return self.write_out().await.map(|()| Exit::Closed);
                    }
                }
            }
            if !self.out.is_empty() || !self.queue.is_empty() {
                // Write at the end of the thread's round, as Redis writes in beforeSleep:
                // every connection with input ready executes first, then the replies leave
                // in a burst. A reply sent to a sleeping client wakes it (an IPI on another
                // CPU, the largest item of a -P 16 GET profile: 22% of this thread); replies
                // that follow while it runs cost no wake-up. Measured: cold GETs +15% at
                // -P 1, +33% at -P 16, 50 clients; one client unchanged.
                tokio::task::yield_now().await;
            }
            self.flush().await?;
            if self.client.close_after_reply
                || *shutdown.borrow_and_update()
                || self.client.handle.killed.load(Ordering::Acquire)
            {
                return Ok(Exit::Closed);
            }
            let (limit, mut idle) = {
                let c = self.shared.config.read();
                (c.client_query_buffer_limit, c.timeout)
            };
            // A connection with a mailbox also wakes for what is delivered to it; one
            // without never polls that branch. Subscribers and monitors are exempt from
            // `timeout`, as in Redis.
            let mailbox = self.client.mailbox.clone();
            if mailbox.as_ref().is_some_and(|m| m.subscribed())
                || self.client.handle.monitor.load(Ordering::Relaxed)
            {
                idle = Duration::ZERO;
            }
            if self.inbuf.len() > limit {
                warn!(
                    client = self.client.handle.id,
                    bytes = self.inbuf.len(),
                    "closing client that reached client-query-buffer-limit"
                );
                return Ok(Exit::Closed);
            }
            if !self.qb.released {
                self.inbuf.reserve(READ_CHUNK);
            }
            let id = self.client.handle.id;
            let n = tokio::select! {
                // The read first: a kill or a shutdown is also seen between reads (above).
                biased;
                r = self.stream.read_buf(&mut self.inbuf) => r?,
                _ = &mut stop => return Ok(Exit::Closed),
                _ = mail(mailbox.as_deref()), if mailbox.is_some() => {
                    // Delivered two turns of the thread's round later: the publishers ready
                    // now run and send their replies first, so a subscriber gets their
                    // messages in one write (one wake-up of its process) rather than one
                    // each (docs/measurements.md).
                    tokio::task::yield_now().await;
                    tokio::task::yield_now().await;
                    continue;
                }
                _ = idle_timer(idle) => {
                    debug!(client = id, "closing idle client (timeout)");
                    return Ok(Exit::Closed);
                }
                _ = &mut trim => {
                    trim = Box::pin(trim_request(Arc::clone(&self.client.handle)));
                    if self.inbuf.is_empty() {
                        self.inbuf = BytesMut::new();
                        self.qb.released = true;
                        let h = &self.client.handle;
                        h.qbuf.store(0, Ordering::Relaxed);
                        h.qbuf_free.store(0, Ordering::Relaxed);
                        self.note_memory();
                    }
                    continue;
                }
            };
            if n == 0 {
                return Ok(Exit::Closed);
            }
            // As Redis's `lastinteraction`: the last read, not the last command (one clock
            // read per read rather than per pipelined command).
            let handle = &self.client.handle;
            let now_ms = handle.created.elapsed().as_millis() as u64;
            handle.last_active_ms.store(now_ms, Ordering::Relaxed);
            self.size_query_buf(now_ms);
            self.note_memory();
            self.shared
                .stats
                .net_input_bytes
                .fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// After a read: notes the buffer's peak, and every `QUERY_BUF_CHECK_MS` shrinks a buffer
    /// of more than `QUERY_BUF_RESIZE_MIN` that is over twice its peak since the last check
    /// (and wastes more than 4 KiB) to that peak, keeping what it holds.
    fn size_query_buf(&mut self, now_ms: u64) {
        let qb = &mut self.qb;
        qb.released = false;
        qb.peak = qb.peak.max(self.inbuf.len());
        if now_ms.saturating_sub(qb.checked_ms) < QUERY_BUF_CHECK_MS {
            return;
        }
        qb.checked_ms = now_ms;
        let (len, cap) = (self.inbuf.len(), self.inbuf.capacity());
        if cap - len > 4096 && cap > QUERY_BUF_RESIZE_MIN && cap / 2 > qb.peak {
            let mut fresh = BytesMut::with_capacity(len.max(qb.peak));
            fresh.extend_from_slice(&self.inbuf);
            self.inbuf = fresh;
        }
        qb.peak = self.inbuf.len();
    }

    /// Executes one request; `true` when the connection must close.
    async fn step(&mut self, args: Vec<Bytes>) -> std::io::Result<bool> {
        self.execute(args).await;
        if self.client.close_after_reply {
            self.flush().await?;
            return Ok(true);
        }
        if self.queue.len() >= MAX_PENDING || self.out.len() >= OUT_FLUSH_BYTES {
            self.flush().await?;
            if self.client.close_after_reply {
                return Ok(true); // over the output-buffer limit
            }
        }
        Ok(false)
    }

    /// Executes the read-ahead GET/MGET requests in order, after prefetching the keys they
    /// will read from the published state; `true` when the connection must close.
    async fn run_ahead(&mut self) -> std::io::Result<bool> {
        if self.ahead.is_empty() {
            return Ok(false);
        }
        let mut ahead = std::mem::take(&mut self.ahead);
        if ahead.len() > 1 && !self.queue_has_commit {
            let keys = ahead.iter().flat_map(|args| &args[1..]).map(|k| &k[..]);
            self.shared.keyspace.prefetch(self.client.db, keys);
        }
        let mut close = false;
        for args in ahead.drain(..) {
            if self.step(args).await? {
                close = true;
                break;
            }
        }
        self.ahead = ahead;
        Ok(close)
    }

    /// Publishes what the connection's buffers hold (CLIENT LIST, `maxmemory-clients`);
    /// nothing when it is what was published last (the steady state of a serving client).
    fn note_memory(&mut self) {
        let (queued, queued_bytes) = self.queued();
        let now = (
            self.inbuf.capacity(),
            self.out.capacity(),
            queued,
            queued_bytes,
        );
        if now == self.noted {
            return;
        }
        self.noted = now;
        let h = &self.client.handle;
        h.multi.store(queued, Ordering::Relaxed);
        h.multi_mem.store(queued_bytes, Ordering::Relaxed);
        let output = now.1 as u64;
        h.set_buffers(now.0 as u64 + output + queued_bytes, output);
    }

    /// Resolves every pending reply and writes everything out.
    async fn flush(&mut self) -> std::io::Result<()> {
        self.drain().await;
        self.take_mail();
        self.note_memory();
        let limit = self.shared.config.read().output_buffer_limit;
        if limit != 0 && self.out.len() > limit {
            warn!(
                client = self.client.handle.id,
                bytes = self.out.len(),
                "closing client that exceeded output-buffer-limit"
            );
            self.client.close_after_reply = true;
            self.out.clear();
            return Ok(());
        }
        self.write_out().await
    }

    /// Appends the messages and invalidations waiting in the mailbox, between replies.
    fn take_mail(&mut self) {
        if let Some(mb) = &self.client.mailbox {
            if self.client.reply.off {
                // CLIENT REPLY OFF drops messages and monitor lines too, as in Redis.
                drop(mb.take());
                return;
            }
            crate::pubsub::drain_into(mb, self.client.protocol, &mut self.out);
        }
    }

    async fn write_out(&mut self) -> std::io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        if self.client.user.is_none() && self.out.len() > UNAUTHENTICATED_OUT_BYTES {
            self.write_unauthenticated()?;
        }
        if self.client.mailbox.is_some() {
            // A subscriber that stopped reading blocks this write; over its output limit the
            // hub kills it, and the kill must end the write too. Others skip the cost.
            let handle = Arc::clone(&self.client.handle);
            let killed = handle.kill_notify.notified();
            tokio::pin!(killed);
            killed.as_mut().enable();
            if handle.killed.load(Ordering::Acquire) {
                return Err(std::io::Error::other("client killed"));
            }
            tokio::select! {
                r = self.stream.write_all(&self.out) => r?,
                _ = killed => return Err(std::io::Error::other("client killed")),
            }
        } else {
            self.stream.write_all(&self.out).await?;
        }
        self.shared
            .stats
            .net_output_bytes
            .fetch_add(self.out.len() as u64, Ordering::Relaxed);
        self.out.clear();
        if self.out.capacity() > 4 * OUT_FLUSH_BYTES {
            // Do not keep a huge reply's buffer for the connection's lifetime.
            self.out = BytesMut::with_capacity(READ_CHUNK);
        }
        Ok(())
    }

    /// An unauthenticated client may leave at most [`UNAUTHENTICATED_OUT_BYTES`] of replies
    /// unread, as in Redis 7.0.15: what the socket takes now is written, and a longer rest
    /// closes the connection (a client that sends without reading cannot make the server hold
    /// its replies).
    fn write_unauthenticated(&mut self) -> std::io::Result<()> {
        let mut written = 0;
        while written < self.out.len() {
            match self.stream.try_write(&self.out[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        self.shared
            .stats
            .net_output_bytes
            .fetch_add(written as u64, Ordering::Relaxed);
        bytes::Buf::advance(&mut self.out, written);
        if self.out.len() > UNAUTHENTICATED_OUT_BYTES {
            warn!(
                client = self.client.handle.id,
                bytes = self.out.len(),
                "closing unauthenticated client that does not read its replies"
            );
            self.out.clear();
            return Err(std::io::Error::other(
                "unauthenticated client output buffer limit",
            ));
        }
        Ok(())
    }

    /// Resolves pending replies, in order, into the output buffer.
    async fn drain(&mut self) {
        if self.queue_has_commit {
            // Let the other connections with requests ready queue theirs first, then execute
            // everything queued as one group: one journal write for all of them (with
            // `merger-inline`; otherwise the merger thread already has them).
            tokio::task::yield_now().await;
            self.shared.keyspace.run_queued();
        }
        while let Some(q) = self.queue.pop_front() {
            let reply = match q.item {
                Pending::Ready(r) => r,
                Pending::Commit(mut h, id) => {
                    // A durable write is released by the syncer thread: through this thread's
                    // relay, which wakes the thread once for every connection a sync releases.
                    let outcome = match h.try_take() {
                        Some(outcome) => outcome,
                        None => crate::wake::relayed(h).await,
                    };
                    match outcome {
                        Ok(ex) => {
                            self.record(id, ex.micros, ex.slow_args);
                            if ex.error_counted {
                                crate::errorstats::failed(&self.shared, id.slot, &ex.reply);
                            } else {
                                crate::errorstats::ran(&self.shared, id.slot, &ex.reply);
                            }
                            if ex.track_seq != 0 {
                                // Its write is published: what it invalidated for this very
                                // connection follows its reply at once, as Redis 7.0 sends
                                // the invalidations of a client's own command after it.
                                if !q.silent {
                                    ex.reply.encode(q.proto, &mut self.out);
                                }
                                let limit = self.shared.config.read().pubsub_limit;
                                self.shared.tracking.send_published(ex.track_seq, limit);
                                self.take_mail();
                                continue;
                            }
                            ex.reply
                        }
                        Err(e) => {
                            let r = reply::engine_error(&e);
                            crate::errorstats::ran(&self.shared, id.slot, &r);
                            r
                        }
                    }
                }
                Pending::Remote(fut, id) => {
                    let ex = fut.await;
                    if ex.log_pos.is_some() {
                        self.client.last_write = ex.log_pos;
                    }
                    self.record(id, ex.micros, ex.slow_args);
                    crate::errorstats::ran(&self.shared, id.slot, &ex.reply);
                    ex.reply
                }
            };
            if !q.silent {
                reply.encode(q.proto, &mut self.out);
            }
        }
        self.queue_has_commit = false;
        self.queue_has_remote = false;
    }

    fn push(&mut self, item: Pending) {
        let proto = self.client.protocol;
        let silent = self.client.reply.silenced();
        match item {
            Pending::Ready(_) if silent => {}
            Pending::Ready(r) if self.queue.is_empty() => r.encode(proto, &mut self.out),
            item => {
                match item {
                    Pending::Ready(_) => {}
                    Pending::Commit(..) => self.queue_has_commit = true,
                    Pending::Remote(..) => self.queue_has_remote = true,
                }
                self.queue.push_back(Queued {
                    proto,
                    item,
                    silent,
                });
            }
        }
    }

    /// Answers a request refused before it ran: a rejected call of statistics slot `slot`,
    /// if known.
    fn reject(&mut self, slot: Option<usize>, r: Reply) {
        crate::errorstats::rejected(&self.shared, slot, &r);
        self.push(Pending::Ready(r));
    }

    /// Per-command statistics, latency histogram and the slow log.
    fn record(&self, id: StatsAt, micros: u64, slow_args: Option<Vec<Bytes>>) {
        self.shared
            .command_latencies
            .record(&self.latencies, id.slot, micros);
        if let Some(entry) = self.shared.registry.entry(id.slot) {
            entry.calls.fetch_add(1, Ordering::Relaxed);
            entry.micros.fetch_add(micros, Ordering::Relaxed);
            self.shared.latency.observe_with(micros, || {
                crate::latency::LatencyMonitor::command_event(entry.spec.has_flag("fast"))
            });
        }
        if let Some(args) = slow_args {
            self.log_slow(micros, &args);
        }
    }

    /// Adds a command to the slow log (the caller checked the threshold).
    fn log_slow(&self, micros: u64, args: &[Bytes]) {
        let name = self.client.handle.info.lock().name.clone();
        self.shared.slowlog.push(
            self.shared.now_ms() / 1000,
            micros,
            args,
            self.client.handle.addr,
            name,
        );
    }

    async fn execute(&mut self, args: Vec<Bytes>) {
        self.execute_request(args).await;
        self.client.reply.request_done();
    }

    async fn execute_request(&mut self, mut args: Vec<Bytes>) {
        self.client.handle.commands.fetch_add(1, Ordering::Relaxed);
        self.shared.stats.commands.fetch_add(1, Ordering::Relaxed);
        let generation = self.shared.acl_generation.load(Ordering::Acquire);
        if generation != self.acl_seen {
            self.acl_seen = generation;
            if let Some(u) = &self.client.user {
                let fresh = self.shared.acl.read().refresh(u);
                match fresh {
                    Some(u) => self.client.set_user(Some(u)),
                    None => {
                        // The user was deleted: its connections close, as in Redis.
                        self.client.close_after_reply = true;
                        return;
                    }
                }
            }
        }
        if let Some(refusal) = self.debug_refused(&args) {
            let r = self.refused_in_multi(&args, refusal);
            return self.reject(
                crate::command_table::index_of(&args[0]).map(crate::command_table::top_slot),
                r,
            );
        }
        let mut at_slot = None;
        let (id, handler, spec) = match crate::commands::admit(&self.client, &args) {
            Ok(a)
                if self.client.mailbox.is_some()
                    && self.client.in_resp2_pubsub()
                    && !allowed_subscribed(a.spec) =>
            {
                let r = reply::err_string(format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    a.spec.name
                ));
                let r = self.refused_in_multi(&args, r);
                return self.reject(Some(a.slot()), r);
            }
            Ok(a) if self.client.handle.monitor.load(Ordering::Relaxed) && touches_keys(a.spec) => {
                // A monitor is a replica to Redis, which refuses it the keyspace.
                let r = Reply::error("ERR Replica can't interact with the keyspace");
                return self.reject(Some(a.slot()), r);
            }
            Ok(a) => {
                self.client.handle.set_last(a.index, a.spec);
                if self.shared.scripts.busy() && !a.spec.has_flag("allow_busy") {
                    let r = self.shared.scripts.busy_reply();
                    let r = self.refused_in_multi(&args, r);
                    return self.reject(Some(a.slot()), r);
                }
                if let Some(c) = &self.shared.cluster {
                    let shared = &self.shared;
                    let mut changing_since = None;
                    let refused = loop {
                        let max_lag = || shared.config.read().cluster.replica_max_lag;
                        match crate::cluster::route(
                            c,
                            &self.client,
                            self.partition,
                            &a,
                            &args,
                            max_lag,
                        ) {
                            crate::cluster::Route::Here(s) => {
                                at_slot = s;
                                break None;
                            }
                            crate::cluster::Route::Refused(r) => break Some(r),
                            crate::cluster::Route::Changing => {
                                // Held briefly rather than answered TRYAGAIN at once: a hand-over
                                // usually ends within the wait, and the client then follows MOVED
                                // instead of spending its few quick retries.
                                let since = *changing_since.get_or_insert_with(Instant::now);
                                if since.elapsed() >= shared.config.read().cluster.handover_wait {
                                    break Some(crate::cluster::tryagain());
                                }
                                tokio::time::sleep(HANDOVER_POLL).await;
                            }
                        }
                    };
                    if let Some(r) = refused {
                        let r = self.refused_in_multi(&args, r);
                        return self.reject(Some(a.slot()), r);
                    }
                }
                if self.shared.memory_limit.exceeded() && self.refused_on_oom(a.spec, &args) {
                    let r = Reply::error("OOM command not allowed when used memory > 'maxmemory'.");
                    let r = self.refused_in_multi(&args, r);
                    return self.reject(Some(a.slot()), r);
                }
                if self.shared.lacks_good_replicas.load(Ordering::Relaxed)
                    && self.may_write(a.spec, &args)
                {
                    let r = Reply::error("NOREPLICAS Not enough good replicas to write.");
                    let r = self.refused_in_multi(&args, r);
                    return self.reject(Some(a.slot()), r);
                }
                if let (Some(m), Some(slot)) = (self.multi.as_mut(), at_slot) {
                    // A transaction in the cluster is one record of one partition: its keys
                    // share a slot, as Redis Cluster requires.
                    if *m.slot.get_or_insert(slot) != slot {
                        let r =
                            Reply::error("CROSSSLOT Keys in request don't hash to the same slot");
                        let r = self.refused_in_multi(&args, r);
                        return self.reject(Some(a.slot()), r);
                    }
                }
                if self.multi.is_some() {
                    match self.queue_in_multi(a, args) {
                        // +QUEUED, or a refusal (counted as one).
                        Ok(r) => return self.reject(Some(a.slot()), r),
                        Err(runs_now) => args = runs_now,
                    }
                }
                (StatsAt::of(a.index, a.spec), a.handler, a.spec)
            }
            Err(refused) => {
                if let (Some(denied), Some(user)) = (&refused.denied, &self.client.user) {
                    let context = if self.multi.is_some() {
                        Context::Multi
                    } else {
                        Context::Toplevel
                    };
                    let event = Event::denied(denied, context, user.name());
                    crate::auth::log_refusal(&self.shared, &self.client.handle, event);
                }
                let r = self.refused_in_multi(&args, refused.reply);
                return self.reject(refused.index.map(crate::command_table::top_slot), r);
            }
        };
        // Monitors see a command as it starts (so EVAL comes before the commands its script
        // calls); a connection command once it ran, as Redis feeds them after the call (so
        // SELECT shows the new database). EXEC is shown after its commands (`exec`).
        let monitored = self.shared.monitors.active() && monitored(spec);
        if monitored
            && !matches!(
                handler,
                Handler::Conn(_) | Handler::Meta(_) | Handler::Acl(_)
            )
        {
            self.monitor_feed(&args);
        }
        let threshold = self.shared.slowlog.threshold_micros();
        // CLIENT CACHING applies to the command after it: Redis clears it after any command
        // but CLIENT's, outside MULTI.
        let in_multi = self.multi.is_some();
        let remember = match &mut self.client.tracking {
            None => false,
            Some(t) => {
                let r = t.remembers();
                if !spec.name.starts_with("client") && !in_multi {
                    t.caching = false;
                }
                r
            }
        };
        if self.queue_has_remote && matches!(handler, Handler::Read(_)) {
            // A read follows a write of this connection still in the cluster's log: it must
            // see it, as it would on one node.
            self.drain().await;
        }
        match handler {
            Handler::Read(f) if !self.queue_has_commit && !remember => {
                let start = Instant::now();
                let now = self.shared.now_ms();
                let r = self
                    .shared
                    .keyspace
                    .read(self.client.db, now, |k| f(&mut R::new(k), &args))
                    .unwrap_or_else(|e| e);
                let micros = start.elapsed().as_micros() as u64;
                let slow = slow(threshold, micros).then_some(args);
                self.record(id, micros, slow);
                crate::errorstats::ran(&self.shared, id.slot, &r);
                self.push(Pending::Ready(r));
            }
            Handler::Read(f) => {
                // A tracking client's read runs in the merger's order and its keys are
                // remembered there before it reads: every change ordered after the read
                // invalidates them (see `tracking.rs`).
                let track = remember.then(|| {
                    let keys: Vec<Bytes> = crate::command_table::keys_with_flags(spec, &args)
                        .iter()
                        .filter_map(|k| args.get(k.pos).cloned())
                        .collect();
                    let limit = self.shared.config.read().pubsub_limit;
                    (
                        Arc::clone(&self.shared.tracking),
                        self.client.handle.id,
                        keys,
                        limit,
                    )
                });
                let h = self
                    .shared
                    .keyspace
                    .read_in_order(self.client.db, move |k| {
                        if let Some((tr, who, keys, limit)) = &track {
                            tr.remember(*who, keys, *limit);
                        }
                        let start = Instant::now();
                        let reply = f(&mut R::new(k), &args).unwrap_or_else(|e| e);
                        executed(reply, start.elapsed(), threshold, args)
                    });
                self.push(Pending::Commit(h, id));
            }
            Handler::Write(f) => {
                let start = Instant::now();
                let at = {
                    let c = self.shared.config.read();
                    At {
                        db: self.client.db,
                        now_ms: self.shared.now_ms(),
                        databases: c.databases,
                        hll_sparse_max: c.hll_sparse_max_bytes as u64,
                        stream_node: c.stream_node(),
                    }
                };
                let op = match f(at, &args) {
                    Ok(op) => op,
                    Err(r) => {
                        let micros = start.elapsed().as_micros() as u64;
                        let slow = slow(threshold, micros).then_some(args);
                        self.record(id, micros, slow);
                        crate::errorstats::ran(&self.shared, id.slot, &r);
                        return self.push(Pending::Ready(r));
                    }
                };
                let parsed = start.elapsed();
                if let Some(c) = self.shared.cluster.clone() {
                    let pending = remote_write(
                        c,
                        at_slot,
                        self.partition,
                        crate::cluster::Payload::One(op),
                        move |reply, took, pos| {
                            let mut ex = executed(reply, parsed + took, threshold, args);
                            ex.log_pos = pos;
                            ex
                        },
                    );
                    let pending = match pending {
                        Ok(fut) => Pending::Remote(fut, id),
                        Err(r) => Pending::Ready(r),
                    };
                    return self.push(pending);
                }
                let tracking = self
                    .client
                    .tracking
                    .is_some()
                    .then(|| Arc::clone(&self.shared.tracking));
                let done = move |r: rialto_keyspace::Result<rialto_keyspace::Value>, applied| {
                    let reply = match r {
                        Ok(v) => reply::value(v),
                        Err(e) => reply::keyspace_error(&e),
                    };
                    let mut ex = executed(reply, parsed + applied, threshold, args);
                    if let Some(t) = tracking {
                        ex.track_seq = t.last_change();
                    }
                    ex
                };
                // NOLOOP needs to know whose write it is; nobody else pays for it.
                let h = match self.noloop_origin() {
                    Some(me) => self.shared.keyspace.enqueue_as(me, op, done),
                    None => self.shared.keyspace.enqueue(op, done),
                };
                self.push(Pending::Commit(h, id));
            }
            Handler::Block(f) => {
                let start = Instant::now();
                let at = {
                    let c = self.shared.config.read();
                    At {
                        db: self.client.db,
                        now_ms: self.shared.now_ms(),
                        databases: c.databases,
                        hll_sparse_max: c.hll_sparse_max_bytes as u64,
                        stream_node: c.stream_node(),
                    }
                };
                let reply = match f(at, &args) {
                    Ok(pop) => {
                        // Its reply comes after those pending, which leave now (a client may
                        // wait for them before it writes what unblocks it), and nothing after
                        // it runs until it is answered.
                        if self.flush().await.is_err() {
                            self.client.close_after_reply = true;
                        }
                        self.blocking_pop(pop, at_slot).await
                    }
                    Err(r) => r,
                };
                let micros = start.elapsed().as_micros() as u64;
                self.record(id, micros, slow(threshold, micros).then_some(args));
                crate::errorstats::ran(&self.shared, id.slot, &reply);
                self.push(Pending::Ready(reply));
            }
            Handler::Script(cmd) => {
                let start = Instant::now();
                let pending = self.script_command(cmd, id, args, at_slot);
                if let Pending::Ready(r) = &pending {
                    // Refused by its own checks (numkeys, NOSCRIPT): a failed call, as in Redis.
                    self.record(id, start.elapsed().as_micros() as u64, None);
                    crate::errorstats::ran(&self.shared, id.slot, r);
                }
                self.push(pending);
            }
            Handler::Txn(cmd) => {
                let start = Instant::now();
                let pending = self.transaction_command(cmd, id, args).await;
                if let Pending::Ready(r) = &pending {
                    self.record(id, start.elapsed().as_micros() as u64, None);
                    crate::errorstats::ran(&self.shared, id.slot, r);
                }
                self.push(pending);
            }
            Handler::Conn(_) | Handler::Meta(_) | Handler::Acl(_) => {
                if !self.queue.is_empty() {
                    self.drain().await;
                }
                let start = Instant::now();
                let outcome = crate::commands::run_on_connection(
                    handler,
                    &mut Ctx {
                        shared: &self.shared,
                        client: &mut self.client,
                    },
                    &args,
                );
                let feed = monitored.then(|| args.clone());
                let reply = match outcome {
                    Outcome::Reply(r) => Some(r),
                    Outcome::Many(mut replies) => {
                        let last = replies.pop().unwrap_or(Reply::NullArray);
                        for r in replies {
                            self.push(Pending::Ready(r));
                        }
                        Some(last)
                    }
                    Outcome::Later(fut) => Some(fut.await),
                    Outcome::Silent => None,
                    Outcome::Close(r) => {
                        self.client.close_after_reply = true;
                        match r {
                            Some(r) => Some(r),
                            None => return,
                        }
                    }
                };
                let Some(reply) = reply else {
                    // No reply (CLIENT REPLY OFF or SKIP, a second MONITOR): counted as a
                    // call that succeeded.
                    let micros = start.elapsed().as_micros() as u64;
                    self.record(id, micros, slow(threshold, micros).then_some(args));
                    if let Some(args) = &feed {
                        self.monitor_feed(args);
                    }
                    return;
                };
                let micros = start.elapsed().as_micros() as u64;
                // Judged against the threshold after the command, as Redis does: a CONFIG SET
                // of slowlog-log-slower-than applies to itself.
                let threshold = self.shared.slowlog.threshold_micros();
                let slow = slow(threshold, micros).then_some(args);
                self.record(id, micros, slow);
                crate::errorstats::ran(&self.shared, id.slot, &reply);
                if matches!(handler, Handler::Acl(_))
                    && self.shared.acl_generation.load(Ordering::Acquire) != generation
                {
                    self.shared.hub.enforce_acl(&self.shared.acl.read());
                }
                // The command may have switched protocol (HELLO) or authenticated.
                self.decoder.set_pre_auth(self.client.user.is_none());
                if crate::command_table::all()
                    .get(id.index)
                    .is_some_and(|c| c.name == "reset")
                {
                    self.discard();
                }
                // What the command published to this very connection comes before its reply,
                // as in Redis (nothing is pending here: the queue was drained above).
                self.take_mail();
                self.push(Pending::Ready(reply));
                // After its reply: a monitor sees its own command after the answer, as in
                // Redis.
                if let Some(args) = &feed {
                    self.monitor_feed(args);
                }
            }
        }
    }
}

impl Connection {
    /// Sends a command of this connection to the monitors.
    pub(super) fn monitor_feed(&self, args: &[Bytes]) {
        self.shared.monitors.feed(
            crate::monitor::Source::Client(self.client.handle.addr),
            self.client.db,
            args,
        );
    }

    /// Whether `spec` is refused while used memory exceeds `maxmemory`, as Redis refuses it with
    /// nothing to evict: a command that may grow the data ([`Self::may_grow`]); inside MULTI
    /// any but the ones that end the transaction or the connection (queueing takes memory
    /// too).
    fn refused_on_oom(&self, spec: &crate::command_table::CommandSpec, args: &[Bytes]) -> bool {
        self.may_grow(spec, args)
            || (self.multi.is_some() && !matches!(spec.name, "exec" | "discard" | "quit" | "reset"))
    }

    /// Redis's `denyoom` flag of a call: the command's; a script's or function's that declares
    /// flags without `allow-oom` or `no-writes`, as Redis takes EVAL's and FCALL's flags from
    /// the script's (one without a shebang is checked at each call instead, `conn/script.rs`);
    /// EXEC's when a queued command has it.
    fn may_grow(&self, spec: &crate::command_table::CommandSpec, args: &[Bytes]) -> bool {
        spec.has_flag("denyoom")
            || self
                .declared_flags(spec, args)
                .is_some_and(|f| !f.allows_oom())
            || (spec.name == "exec" && self.multi.as_ref().is_some_and(|m| m.may_grow))
    }

    /// Redis's `write` flag of a call, by the same rules as [`Self::may_grow`]: a script that
    /// declares flags writes unless it declares `no-writes`.
    fn may_write(&self, spec: &crate::command_table::CommandSpec, args: &[Bytes]) -> bool {
        spec.has_flag("write")
            || self
                .declared_flags(spec, args)
                .is_some_and(|f| !f.no_writes)
            || (spec.name == "exec" && self.multi.as_ref().is_some_and(|m| m.may_write))
    }

    /// The flags the script or function a call runs declares (`None`: not a script call, or
    /// one without declared flags).
    fn declared_flags(
        &self,
        spec: &crate::command_table::CommandSpec,
        args: &[Bytes],
    ) -> Option<rialto_scripting::ScriptFlags> {
        let (scripts, named) = (&self.shared.scripts, args.get(1)?);
        match spec.name {
            "eval" | "eval_ro" => scripts.declared_flags(rialto_scripting::Source::Body(named)),
            "evalsha" | "evalsha_ro" => {
                scripts.declared_flags(rialto_scripting::Source::Sha(named))
            }
            "fcall" | "fcall_ro" => scripts.function_flags(named),
            _ => None,
        }
    }

    /// DEBUG's refusal when `enable-debug-command` does not allow it from this connection,
    /// checked where Redis checks it: after the arity, before authentication.
    fn debug_refused(&self, args: &[Bytes]) -> Option<Reply> {
        if args.len() < 2 || !args[0].eq_ignore_ascii_case(b"debug") {
            return None;
        }
        let gate = self.shared.config.read().enable_debug_command;
        if gate.allows(self.client.handle.addr.ip()) {
            return None;
        }
        Some(Reply::error(
            "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        ))
    }

    /// The client id writes are enqueued for when this client tracks with NOLOOP.
    pub(super) fn noloop_origin(&self) -> Option<u64> {
        self.client
            .tracking
            .as_ref()
            .filter(|t| t.noloop)
            .map(|_| self.client.handle.id)
    }
}

/// Produces `payload` to the cluster's log; the future yields its reply once this node
/// applied it.
fn remote_write(
    c: Arc<crate::cluster::Cluster>,
    at: Option<(u16, u32)>,
    partition: u32,
    payload: crate::cluster::Payload,
    finish: impl FnOnce(Reply, Duration, Option<(u32, u64)>) -> Executed + Send + 'static,
) -> Result<Pin<Box<dyn Future<Output = Executed> + Send>>, Reply> {
    let p = at.map_or(partition, |(_, p)| p);
    let submitted = c
        .submit(p, &payload)
        .map_err(|e| crate::cluster::write_error(&c, &e, at))?;
    Ok(Box::pin(async move {
        let (reply, took, pos) = match c.outcome(submitted).await {
            Ok(((applied, took), offset)) => {
                let reply = match applied {
                    crate::cluster::Applied::One(Ok(v)) => reply::value(v),
                    crate::cluster::Applied::One(Err(e)) => reply::keyspace_error(&e),
                    crate::cluster::Applied::Reply(r) => r,
                    crate::cluster::Applied::Many(_) => {
                        Reply::error("ERR unexpected transaction reply")
                    }
                };
                (reply, took, Some((p, offset)))
            }
            Err(e) => (
                crate::cluster::write_error(&c, &e, at),
                Duration::ZERO,
                None,
            ),
        };
        finish(reply, took, pos)
    }))
}

/// Whether monitors are shown `spec`: not administrative commands (Redis hides them), and not
/// EXEC, which its transaction shows after the commands it ran.
pub(super) fn monitored(spec: &crate::command_table::CommandSpec) -> bool {
    !spec.has_flag("admin") && spec.name != "exec"
}

/// Whether `spec` reads or writes keys: refused on a monitor connection, as Redis refuses
/// a replica.
fn touches_keys(spec: &crate::command_table::CommandSpec) -> bool {
    spec.has_flag("write") || spec.has_flag("readonly") || spec.may_replicate
}

/// The commands RESP2's subscribed mode allows, Redis's list.
fn allowed_subscribed(spec: &crate::command_table::CommandSpec) -> bool {
    matches!(
        spec.name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// Resolves when `mb` may hold something (never without one).
async fn mail(mb: Option<&crate::pubsub::Mailbox>) {
    match mb {
        Some(m) => m.ready().await,
        None => std::future::pending().await,
    }
}

fn slow(threshold: Option<u64>, micros: u64) -> bool {
    threshold.is_some_and(|t| micros >= t)
}

fn executed(reply: Reply, took: Duration, threshold: Option<u64>, args: Vec<Bytes>) -> Executed {
    let micros = took.as_micros() as u64;
    Executed {
        reply,
        micros,
        slow_args: slow(threshold, micros).then_some(args),
        track_seq: 0,
        log_pos: None,
        error_counted: false,
    }
}

async fn idle_timer(idle: Duration) {
    if idle.is_zero() {
        std::future::pending::<()>().await;
    } else {
        tokio::time::sleep(idle).await;
    }
}
