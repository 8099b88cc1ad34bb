//! Connected clients: each connection's own state, and the registry CLIENT LIST/KILL and
//! INFO read.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use rialto_resp::Protocol;
use tokio::sync::Notify;

use crate::acl::User;

/// What other connections may read or ask of a client.
pub struct ClientHandle {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    /// The socket's file descriptor (CLIENT LIST `fd`, to match with `ss` or `lsof`); it
    /// stays the same when the connection moves to the bulk thread. -1: no socket.
    pub fd: i32,
    pub created: Instant,
    /// Milliseconds since `created` of the last command.
    pub last_active_ms: AtomicU64,
    pub db: AtomicU8,
    pub resp: AtomicU8,
    /// Commands run.
    pub commands: AtomicU64,
    /// The last command's position in the registry (`command_table::all`) + 1 (0: none yet).
    pub last_cmd: AtomicU8,
    /// Its subcommand's position among the command's subcommands + 1 (0: none).
    pub last_sub: AtomicU8,
    /// Bytes in the query buffer when the last command was read, that command's included, and
    /// the buffer's room beyond them (CLIENT LIST `qbuf`, `qbuf-free`).
    pub qbuf: AtomicU64,
    pub qbuf_free: AtomicU64,
    /// Asks the connection to release its query buffer, idle long enough (`trim_idle`).
    pub trim_notify: Notify,
    pub info: Mutex<ClientInfo>,
    /// Set by CLIENT KILL or shutdown; the connection closes at its next step.
    pub killed: AtomicBool,
    pub kill_notify: Notify,
    /// Channels, patterns and shard channels subscribed (CLIENT LIST `sub`, `psub`, `ssub`).
    pub sub: AtomicUsize,
    pub psub: AtomicUsize,
    pub ssub: AtomicUsize,
    /// CLIENT TRACKING state as CLIENT LIST shows it: [`FLAG_TRACKING`]... bits.
    pub tracking_flags: AtomicU32,
    /// Where invalidations go (CLIENT LIST `redir`): -1 none.
    pub redir: AtomicI64,
    /// In MONITOR mode (flag `O`).
    pub monitor: AtomicBool,
    /// Waiting in a blocking pop (flag `b`; CLIENT UNBLOCK's target).
    pub blocked: AtomicBool,
    /// CLIENT UNBLOCK asked this client to stop waiting: with an error (`Some(true)`) or as
    /// if its time ran out.
    pub unblock: Mutex<Option<bool>>,
    pub unblock_notify: Notify,
    /// Bytes the connection's buffers hold: its query buffer, its reply buffer and the
    /// commands a MULTI queued (set by the connection, see [`ClientHandle::set_buffers`]).
    buffers: AtomicU64,
    /// Of `buffers`, the reply buffer's.
    output: AtomicU64,
    /// Bytes of pub/sub messages, invalidations and monitor lines waiting in its mailbox.
    mail: AtomicU64,
    /// Commands queued by MULTI and their bytes (CLIENT LIST `multi`, `multi-mem`; -1 and 0
    /// outside MULTI).
    pub multi: AtomicI64,
    pub multi_mem: AtomicU64,
    /// CLIENT NO-EVICT: never evicted for `maxmemory-clients`.
    pub no_evict: AtomicBool,
    memory: Arc<ClientMemory>,
}

/// Clients holding this or less are never evicted: an idle connection's own buffers.
pub const EVICT_MIN_BYTES: u64 = 32 * 1024;

/// The memory of every client together, and `maxmemory-clients`: when the total passes the
/// limit the clients holding the most are closed until it is under again.
#[derive(Default)]
pub struct ClientMemory {
    total: AtomicU64,
    /// Bytes, 0 for no limit.
    limit: AtomicU64,
    /// Clients closed for the limit (INFO `evicted_clients`).
    pub evicted: AtomicU64,
    /// The thread that evicts, woken when the total passes the limit.
    evictor: std::sync::OnceLock<std::thread::Thread>,
    /// The last pass found nothing it may close while over the limit: growth no longer wakes
    /// the thread (its once-a-second pass retries) until the total falls under the limit.
    stalled: AtomicBool,
}

impl ClientMemory {
    /// Bytes every client holds together (INFO `mem_clients_normal`).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Sets the limit in bytes (0: none) and evicts at once if the total is over it.
    pub fn set_limit(&self, bytes: u64) {
        self.limit.store(bytes, Ordering::Relaxed);
        self.stalled.store(false, Ordering::Relaxed);
        self.wake_if_over();
    }

    /// The thread [`Clients::evict`] runs on.
    pub fn set_evictor(&self, t: std::thread::Thread) {
        let _ = self.evictor.set(t);
    }

    fn add(&self, delta: i64) {
        if delta >= 0 {
            self.total.fetch_add(delta as u64, Ordering::Relaxed);
            self.wake_if_over();
        } else {
            self.total
                .fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
            if !self.over() {
                self.stalled.store(false, Ordering::Relaxed);
            }
        }
    }

    fn over(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        limit != 0 && self.total.load(Ordering::Relaxed) > limit
    }

    fn wake_if_over(&self) {
        if self.over() && !self.stalled.load(Ordering::Relaxed) {
            if let Some(t) = self.evictor.get() {
                t.unpark();
            }
        }
    }
}

/// Tracking is on (`t`).
pub const FLAG_TRACKING: u32 = 1;
/// The redirect client is gone (`R`).
pub const FLAG_REDIR_BROKEN: u32 = 2;
/// BCAST (`B`).
pub const FLAG_BCAST: u32 = 4;
/// OPTIN (no letter in Redis 7.0's CLIENT LIST).
pub const FLAG_OPTIN: u32 = 8;
/// OPTOUT (no letter either).
pub const FLAG_OPTOUT: u32 = 16;

/// Mutable descriptive fields.
#[derive(Default, Clone)]
pub struct ClientInfo {
    pub name: Option<Bytes>,
    pub lib_name: Option<Bytes>,
    pub lib_ver: Option<Bytes>,
    pub user: String,
}

impl ClientHandle {
    /// Records the bytes the connection's buffers hold now, `output` of them for replies.
    pub fn set_buffers(&self, bytes: u64, output: u64) {
        self.output.store(output, Ordering::Relaxed);
        let old = self.buffers.swap(bytes, Ordering::Relaxed);
        if old != bytes {
            self.memory.add(bytes as i64 - old as i64);
        }
    }

    /// Records the bytes waiting in the mailbox (called under its lock, so a plain store).
    pub fn set_mail(&self, bytes: u64) {
        self.mail.store(bytes, Ordering::Relaxed);
    }

    /// Adds `delta` to every client's total (the mailbox reports its bytes in steps, see
    /// `pubsub::MAIL_REPORT_STEP`, so a publish does not touch the shared total).
    pub fn add_to_total(&self, delta: i64) {
        self.memory.add(delta);
    }

    /// Bytes the reply buffer grew beyond its first chunk, and mail waiting (CLIENT LIST
    /// `omem`, which in Redis likewise leaves out a client's fixed reply buffer: 0 for a
    /// client whose replies fit it).
    pub fn output_memory(&self) -> u64 {
        self.output
            .load(Ordering::Relaxed)
            .saturating_sub(crate::conn::REPLY_CHUNK as u64)
            + self.mail.load(Ordering::Relaxed)
    }

    /// Bytes this client holds (CLIENT LIST `tot-mem`).
    pub fn memory(&self) -> u64 {
        self.buffers.load(Ordering::Relaxed) + self.mail.load(Ordering::Relaxed)
    }

    /// Asks the connection to close.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        // Every waiter (the connection's loop, a subscriber blocked writing), and a permit for
        // one that starts waiting later.
        self.kill_notify.notify_waiters();
        self.kill_notify.notify_one();
    }

    /// One CLIENT LIST / CLIENT INFO line (Redis 7 field order; fields Rialto does not track
    /// are reported with Redis's idle values).
    pub fn describe(&self) -> String {
        let info = self.info.lock().clone();
        let age = self.created.elapsed().as_secs();
        let idle_ms = (self.created.elapsed().as_millis() as u64)
            .saturating_sub(self.last_active_ms.load(Ordering::Relaxed));
        let text = |b: &Option<Bytes>| {
            b.as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        let (sub, psub, ssub) = (
            self.sub.load(Ordering::Relaxed),
            self.psub.load(Ordering::Relaxed),
            self.ssub.load(Ordering::Relaxed),
        );
        // Redis's letters, in its order.
        let tf = self.tracking_flags.load(Ordering::Relaxed);
        let mut flags = String::new();
        if self.monitor.load(Ordering::Relaxed) {
            flags.push('O');
        }
        if sub + psub + ssub > 0 {
            flags.push('P');
        }
        if self.blocked.load(Ordering::Relaxed) {
            flags.push('b');
        }
        if self.no_evict.load(Ordering::Relaxed) {
            flags.push('e');
        }
        // OPTIN and OPTOUT have no letter in Redis 7.0 (`O` is a monitor).
        for (bit, c) in [
            (FLAG_TRACKING, 't'),
            (FLAG_REDIR_BROKEN, 'R'),
            (FLAG_BCAST, 'B'),
        ] {
            if tf & bit != 0 {
                flags.push(c);
            }
        }
        if flags.is_empty() {
            flags.push('N');
        }
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db={} sub={sub} psub={psub} ssub={ssub} multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem={} rbs=0 rbp=0 obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            text(&info.name),
            age,
            idle_ms / 1000,
            self.db.load(Ordering::Relaxed),
            self.multi.load(Ordering::Relaxed),
            self.qbuf.load(Ordering::Relaxed),
            self.qbuf_free.load(Ordering::Relaxed),
            self.multi_mem.load(Ordering::Relaxed),
            self.output_memory(),
            self.memory(),
            self.last_command_name(),
            info.user,
            self.redir.load(Ordering::Relaxed),
            self.resp.load(Ordering::Relaxed),
            text(&info.lib_name),
            text(&info.lib_ver),
        )
    }
}

impl ClientHandle {
    /// The last command's name as CLIENT LIST writes it (`client|list`), `NULL` before any.
    fn last_command_name(&self) -> &'static str {
        let Some(top) = crate::command_table::all()
            .get(usize::from(self.last_cmd.load(Ordering::Relaxed)).wrapping_sub(1))
        else {
            return "NULL";
        };
        match self.last_sub.load(Ordering::Relaxed) {
            0 => top.name,
            i => top
                .subcommands
                .get(usize::from(i) - 1)
                .map_or(top.name, |s| s.name),
        }
    }

    /// Records the command just read: its registry position, its subcommand among the
    /// command's (by identity), and the query buffer then.
    pub fn set_last(&self, index: usize, spec: &'static crate::command_table::CommandSpec) {
        // The index fits: the registry has fewer than 255 commands (checked when built).
        self.last_cmd
            .store(u8::try_from(index + 1).unwrap_or(0), Ordering::Relaxed);
        let sub = crate::command_table::all()
            .get(index)
            .and_then(|top| top.subcommands.iter().position(|s| std::ptr::eq(s, spec)))
            .map_or(0, |i| u8::try_from(i + 1).unwrap_or(0));
        self.last_sub.store(sub, Ordering::Relaxed);
    }
}

/// Every connected client, by id.
#[derive(Default)]
pub struct Clients {
    next_id: AtomicU64,
    map: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    /// Connections accepted since start.
    pub accepted: AtomicU64,
    /// Connections refused for maxclients.
    pub rejected: AtomicU64,
    /// Their memory together, and `maxmemory-clients`.
    pub memory: Arc<ClientMemory>,
}

/// How long a client goes without reading before its query buffer is released.
pub const QUERY_BUF_IDLE: std::time::Duration = std::time::Duration::from_secs(2);

impl Clients {
    /// Registers a new connection on socket `fd`.
    pub fn register(
        &self,
        addr: SocketAddr,
        laddr: SocketAddr,
        fd: i32,
        user: &str,
    ) -> Arc<ClientHandle> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let h = Arc::new(ClientHandle {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            last_active_ms: AtomicU64::new(0),
            db: AtomicU8::new(0),
            resp: AtomicU8::new(2),
            commands: AtomicU64::new(0),
            last_cmd: AtomicU8::new(0),
            last_sub: AtomicU8::new(0),
            qbuf: AtomicU64::new(0),
            qbuf_free: AtomicU64::new(0),
            trim_notify: Notify::new(),
            info: Mutex::new(ClientInfo {
                user: user.to_string(),
                ..ClientInfo::default()
            }),
            killed: AtomicBool::new(false),
            kill_notify: Notify::new(),
            sub: AtomicUsize::new(0),
            psub: AtomicUsize::new(0),
            ssub: AtomicUsize::new(0),
            tracking_flags: AtomicU32::new(0),
            redir: AtomicI64::new(-1),
            monitor: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            unblock: Mutex::new(None),
            unblock_notify: Notify::new(),
            buffers: AtomicU64::new(0),
            output: AtomicU64::new(0),
            mail: AtomicU64::new(0),
            multi: AtomicI64::new(-1),
            multi_mem: AtomicU64::new(0),
            no_evict: AtomicBool::new(false),
            memory: Arc::clone(&self.memory),
        });
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.map.lock().insert(id, Arc::clone(&h));
        h
    }

    /// Removes a closed connection; what its buffers held no longer counts.
    pub fn unregister(&self, id: u64) {
        if let Some(h) = self.map.lock().remove(&id) {
            // Mail is released with the mailbox, which may outlive this.
            h.set_buffers(0, 0);
        }
    }

    /// While the clients' memory is over `maxmemory-clients`: closes the clients holding the
    /// most (never one holding [`EVICT_MIN_BYTES`] or less, or with CLIENT NO-EVICT), largest first,
    /// until what the others hold is under the limit. Returns how many it closed.
    pub fn evict(&self) -> usize {
        let limit = self.memory.limit.load(Ordering::Relaxed);
        if !self.memory.over() {
            return 0;
        }
        let mut all = self.all();
        // A client already closing frees its memory soon: it is neither counted nor chosen.
        all.retain(|h| !h.killed.load(Ordering::Relaxed));
        let mut total: u64 = all.iter().map(|h| h.memory()).sum();
        let mut candidates: Vec<(u64, Arc<ClientHandle>)> = all
            .into_iter()
            .filter(|h| !h.no_evict.load(Ordering::Relaxed))
            .map(|h| (h.memory(), h))
            .filter(|(m, _)| *m > EVICT_MIN_BYTES)
            .collect();
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        let mut closed = 0;
        for (mem, h) in candidates {
            if total <= limit {
                break;
            }
            tracing::warn!(
                client = h.id,
                bytes = mem,
                limit,
                "closing client: the clients' memory is over maxmemory-clients"
            );
            h.kill();
            total -= mem;
            closed += 1;
        }
        self.memory
            .evicted
            .fetch_add(closed as u64, Ordering::Relaxed);
        if total > limit {
            self.memory.stalled.store(true, Ordering::Relaxed);
        }
        closed
    }

    /// Client `id`, if connected.
    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        self.map.lock().get(&id).cloned()
    }

    /// Whether client `id` is connected.
    pub fn contains(&self, id: u64) -> bool {
        self.map.lock().contains_key(&id)
    }

    /// Connected clients now.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Whether no client is connected.
    pub fn is_empty(&self) -> bool {
        self.map.lock().is_empty()
    }

    /// A snapshot of every client, in id order.
    pub fn all(&self) -> Vec<Arc<ClientHandle>> {
        self.map.lock().values().cloned().collect()
    }

    /// Asks every connection idle for more than [`QUERY_BUF_IDLE`] that still holds a query
    /// buffer to release it (as Redis's client cron does): an idle client then costs no
    /// buffer, and its next read allocates one again.
    pub fn trim_idle(&self) {
        for h in self.all() {
            let held = h.qbuf.load(Ordering::Relaxed) + h.qbuf_free.load(Ordering::Relaxed);
            let now = h.created.elapsed().as_millis() as u64;
            let idle = now.saturating_sub(h.last_active_ms.load(Ordering::Relaxed));
            if held > 0 && idle > QUERY_BUF_IDLE.as_millis() as u64 {
                h.trim_notify.notify_one();
            }
        }
    }

    /// Asks every connection to close (shutdown).
    pub fn kill_all(&self) {
        for c in self.all() {
            c.kill();
        }
    }
}

/// A connection's own state, owned by its task.
pub struct Client {
    pub handle: Arc<ClientHandle>,
    pub db: u8,
    pub protocol: Protocol,
    /// The authenticated user; `None` until AUTH when the default user needs a password.
    pub user: Option<Arc<User>>,
    /// Whether `user` may do anything (permission checks are skipped).
    pub unrestricted: bool,
    /// Close once the replies so far are written (QUIT, protocol errors).
    pub close_after_reply: bool,
    /// Where pub/sub messages and invalidations for this connection wait; made by the first
    /// SUBSCRIBE or CLIENT TRACKING. `None` keeps the connection loop as it is without them.
    pub mailbox: Option<Arc<crate::pubsub::Mailbox>>,
    /// CLIENT TRACKING's state, when on.
    pub tracking: Option<crate::tracking::ClientTracking>,
    /// Cluster mode: READONLY was sent, so reads of this address's slots are served here on
    /// a replica.
    pub readonly: bool,
    /// Cluster mode: the partition and log offset of this connection's last acknowledged
    /// write (CLUSTER LASTWRITE's token).
    pub last_write: Option<(u32, u64)>,
    /// CLIENT REPLY's state.
    pub reply: ReplyMode,
}

/// CLIENT REPLY: which replies the client is sent. Redis's flags: OFF holds until ON; SKIP
/// silences the request after the CLIENT REPLY SKIP (whatever its outcome, a refusal too).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReplyMode {
    /// CLIENT REPLY OFF.
    pub off: bool,
    /// This request's reply is skipped.
    pub skip: bool,
    /// The next request's reply is skipped (set by CLIENT REPLY SKIP).
    pub skip_next: bool,
}

impl ReplyMode {
    /// Whether a reply made now is dropped.
    pub fn silenced(self) -> bool {
        self.off || self.skip
    }

    /// After every request, as Redis's `resetClient`: the skip ends, a requested one begins.
    pub fn request_done(&mut self) {
        self.skip = std::mem::take(&mut self.skip_next);
    }
}

impl Client {
    /// Sets the connection's user (`None`: not authenticated).
    pub fn set_user(&mut self, user: Option<Arc<User>>) {
        self.unrestricted = user.as_ref().is_some_and(|u| u.unrestricted());
        self.user = user;
    }

    /// Switches database (SELECT).
    pub fn select(&mut self, db: u8) {
        self.db = db;
        self.handle.db.store(db, Ordering::Relaxed);
    }

    /// Whether the connection is in RESP2's subscribed mode, where only the subscribe
    /// family, PING, QUIT and RESET run.
    pub fn in_resp2_pubsub(&self) -> bool {
        self.protocol == Protocol::Resp2 && self.mailbox.as_ref().is_some_and(|m| m.subscribed())
    }

    /// Switches protocol (HELLO).
    pub fn set_protocol(&mut self, p: Protocol) {
        self.protocol = p;
        self.handle.resp.store(p.version(), Ordering::Relaxed);
    }
}
