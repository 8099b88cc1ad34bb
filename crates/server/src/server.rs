//! The server: opens the keyspace, accepts connections, runs the expiry pass, store upkeep
//! and the operations endpoint, and shuts down gracefully.
//!
//! Shutdown (SIGTERM, SIGINT, SHUTDOWN): stop accepting; every connection finishes the
//! commands it has read (their writes are acknowledged only when durable) and closes; after
//! `shutdown-timeout` the stragglers are closed; the merger commits and syncs everything
//! queued; the memtable is flushed so the next start replays nothing; exit 0.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use rialto_io::{Clock, SystemClock};
use rialto_keyspace::{Keyspace, KeyspaceOptions, OpenError, StoreOptions};
use rialto_lsm::{BlockCache, Options};
use rialto_txn::MergerOptions;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::acl::Acl;
use crate::client::Clients;
use crate::commands::Registry;
use crate::config::Config;
use crate::slowlog::SlowLog;

/// Why the server could not start or stopped with an error (one line each).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot open the database in {dir}: {source}{}", corruption_hint(.source, .dir))]
    Open {
        dir: String,
        source: rialto_engine::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot start: {0}")]
    Start(String),
    #[error("shutdown could not make every write durable: {0}")]
    Close(rialto_keyspace::Error),
}

/// What an operator can do about a database that failed to open with damage.
fn corruption_hint(e: &rialto_engine::Error, dir: &str) -> String {
    if e.is_corruption() {
        format!(" (rialto check --dir {dir} reports every damaged file; --wal-recovery salvage starts with the journal cut before the first damaged record, losing the writes after it)")
    } else {
        String::new()
    }
}

/// Counters INFO and /metrics report.
#[derive(Default)]
pub struct Stats {
    pub commands: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub expired_keys: AtomicU64,
    pub rejected_protocol: AtomicU64,
    pub auth_failures: AtomicU64,
}

/// State every connection shares.
pub struct Shared {
    pub config: RwLock<Config>,
    /// The database: keys, stores, pushes, the engine and the merger under them.
    pub keyspace: Arc<Keyspace>,
    pub acl: RwLock<Acl>,
    /// The latest refusals and failed authentications (ACL LOG).
    pub acl_log: Mutex<crate::acl::log::AclLog>,
    /// Bumped on every ACL change: connections re-fetch their user when it moves.
    pub acl_generation: Arc<std::sync::atomic::AtomicU64>,
    pub clients: Clients,
    pub slowlog: SlowLog,
    pub stats: Stats,
    /// Error replies, in total and by prefix (INFO stats and errorstats).
    pub errors: crate::errorstats::ErrorStats,
    pub registry: Registry,
    pub started: Instant,
    pub run_id: String,
    /// The port listened on (config may say 0); CONFIG SET port changes it.
    pub port: std::sync::atomic::AtomicU16,
    /// The accept loops (rebound by CONFIG SET port and bind).
    pub listeners: crate::listen::Listeners,
    pub shutdown: watch::Sender<bool>,
    pub scan_cursors: Mutex<crate::commands::scan::Cursors>,
    /// The bulk connection thread, where a connection moves once it owns a push (see
    /// `workers.rs`); set when the connection threads start.
    pub bulk: std::sync::OnceLock<tokio::runtime::Handle>,
    /// Wake-ups of the connection threads by the syncer (see `wake.rs`).
    pub relay_stats: Arc<crate::wake::RelayStats>,
    /// The Lua interpreter and the script cache (EVAL, SCRIPT).
    pub scripts: Arc<rialto_scripting::Scripts>,
    /// Pub/sub subscriptions and every connection's mailbox.
    pub hub: Arc<crate::pubsub::Hub>,
    /// Client-side caching (CLIENT TRACKING).
    pub tracking: Arc<crate::tracking::Tracking>,
    /// Cluster mode's node, when on.
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// Connections in MONITOR mode.
    pub monitors: Arc<crate::monitor::Monitors>,
    /// Whether the background expiry pass runs (DEBUG SET-ACTIVE-EXPIRE).
    pub active_expire: std::sync::atomic::AtomicBool,
    /// Whether scripts may call commands flagged `noscript` (DEBUG SET-DISABLE-DENY-SCRIPTS).
    pub deny_scripts_disabled: std::sync::atomic::AtomicBool,
    /// INFO replication's `master_replid` (a new one after DEBUG CHANGE-REPL-ID).
    pub repl_id: Mutex<String>,
    /// LATENCY's samples.
    pub latency: crate::latency::LatencyMonitor,
    /// Every command's latency histogram (LATENCY HISTOGRAM, INFO latencystats).
    pub command_latencies: crate::latency_histograms::CommandLatencies,
    /// `maxmemory`: when commands that may grow the data are refused.
    pub memory_limit: crate::process::MemoryLimit,
    /// `Config::lacks_good_replicas`, kept beside the config so that the check every command
    /// makes takes no lock (set at start and by CONFIG SET).
    pub lacks_good_replicas: std::sync::atomic::AtomicBool,
}

/// 40 random hex digits, as Redis's run and replication ids.
pub fn random_id() -> String {
    (0..40)
        .map(|_| char::from_digit(rand::random::<u32>() % 16, 16).unwrap_or('0'))
        .collect()
}

impl Shared {
    /// Unix milliseconds now.
    pub fn now_ms(&self) -> i64 {
        self.keyspace.now_ms()
    }

    /// Asks the server to shut down gracefully.
    pub fn request_shutdown(&self) {
        // Kept even while nobody listens yet: `send` would drop a request made before the
        // server loop subscribes.
        self.shutdown.send_replace(true);
    }
}

/// A server that is listening.
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<TcpListener>,
    http: Option<TcpListener>,
    workers: Arc<crate::workers::Workers>,
}

fn raise_fd_limit(maxclients: usize) -> usize {
    // Connections, plus the engine's table cache and a margin for logs, listeners, the WAL.
    const RESERVED: u64 = 32 + 1024;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write/read a plain struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return maxclients;
        }
        let want = maxclients as u64 + RESERVED;
        if lim.rlim_cur < want {
            let raised = libc::rlimit {
                rlim_cur: want.min(lim.rlim_max),
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = raised.rlim_cur;
            }
        }
    }
    let fit = lim.rlim_cur.saturating_sub(RESERVED) as usize;
    if fit < maxclients {
        warn!(
            maxclients,
            open_file_limit = lim.rlim_cur,
            lowered_to = fit,
            "maxclients does not fit the open-file limit; lowered (raise `ulimit -n` to keep it)"
        );
        return fit.max(1);
    }
    maxclients
}

impl Server {
    /// Opens the database and binds the sockets. Must run inside a tokio runtime.
    pub async fn bind(cfg: Config) -> Result<Server, ServerError> {
        Server::bind_on(cfg, Arc::new(rialto_io::PosixFs::new())).await
    }

    /// Like [`Server::bind`] with the database on `fs` (tests pass a fault-injecting `MemFs`).
    pub async fn bind_on(mut cfg: Config, fs: rialto_io::FsRef) -> Result<Server, ServerError> {
        cfg.validate()
            .map_err(|e| ServerError::Config(e.to_string()))?;
        cfg.maxclients = raise_fd_limit(cfg.maxclients);
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let opts = keyspace_options(&cfg, fs, clock);
        let dir = cfg.dir.clone();
        // Brief blocking work: recovery, a scan of the store records, at most a few
        // transactions, before anything is served.
        let keyspace = tokio::task::spawn_blocking(move || Keyspace::open(&dir, opts))
            .await
            .map_err(|e| ServerError::Start(e.to_string()))?
            .map_err(|e| match e {
                OpenError::Engine(source) => ServerError::Open {
                    dir: cfg.dir.display().to_string(),
                    source,
                },
                OpenError::Stores(e) => ServerError::Start(format!("stores: {e}")),
            })?;

        apply_encodings(&keyspace, &cfg);
        let keyspace = Arc::new(keyspace);
        let mut listeners = Vec::new();
        let mut port = cfg.port;
        for ip in &cfg.bind {
            let addr = SocketAddr::new(*ip, port);
            let l = TcpListener::bind(addr)
                .await
                .map_err(|source| ServerError::Bind { addr, source })?;
            // With port 0 the first listener picks; the others follow it.
            port = l
                .local_addr()
                .map_err(|source| ServerError::Bind { addr, source })?
                .port();
            listeners.push(l);
            if cfg.cluster.enabled {
                // Partition p is served at port + p (validated to fit).
                for p in 1..cfg.cluster.partitions {
                    let addr = SocketAddr::new(*ip, port + p as u16);
                    listeners.push(
                        TcpListener::bind(addr)
                            .await
                            .map_err(|source| ServerError::Bind { addr, source })?,
                    );
                }
            }
        }
        let cluster = if cfg.cluster.enabled {
            let c = cfg.clone();
            let k = Arc::clone(&keyspace);
            let node = tokio::task::spawn_blocking(move || crate::cluster::Cluster::start(&c, k))
                .await
                .map_err(|e| ServerError::Start(e.to_string()))?
                .map_err(|e| ServerError::Start(format!("cluster mode: {e}")))?;
            info!(
                node = cfg.cluster.node_id,
                partitions = cfg.cluster.partitions,
                kafka = %cfg.cluster.kafka,
                "cluster node started"
            );
            let node = Arc::new(node);
            let (weak, ks) = (Arc::downgrade(&node), Arc::clone(&keyspace));
            std::thread::Builder::new()
                .name("cluster-reconcile".into())
                .spawn(move || crate::cluster_stores::run_reconciler(weak, ks))
                .map_err(|e| ServerError::Start(format!("cluster mode: {e}")))?;
            Some(node)
        } else {
            None
        };
        let http = if cfg.metrics_port != 0 {
            let addr = SocketAddr::new(cfg.metrics_bind, cfg.metrics_port);
            Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|source| ServerError::Bind { addr, source })?,
            )
        } else {
            None
        };
        // CONFIG GET port reports the port clients reach, also when 0 picked it.
        cfg.port = port;
        let acl = crate::auth::acl_from_config(&cfg).map_err(ServerError::Config)?;
        let exposure = Exposure {
            protected_mode: cfg.protected_mode,
            default_nopass: acl.default_user_nopass(),
            default_open: !acl.default_user_needs_auth(),
        };
        if let Some(w) = exposure.warning(&cfg.bind) {
            warn!("{w}");
        }
        let slowlog = SlowLog::new();
        slowlog.configure(cfg.slowlog_log_slower_than, cfg.slowlog_max_len);
        let (shutdown, _) = watch::channel(false);
        let run_id = random_id();
        let scripts = rialto_scripting::Scripts::new(cfg.lua_time_limit_ms, cfg.lua_memory_limit)
            .map_err(|e| ServerError::Start(format!("the Lua interpreter: {e}")))?;
        // The function libraries live with the data: back into the interpreter.
        let libraries = keyspace
            .libraries()
            .map_err(|e| ServerError::Start(format!("function libraries: {e}")))?;
        for lib in libraries {
            let loaded = scripts
                .check_library(&lib.code)
                .and_then(|info| scripts.install_library(info));
            if let Err(r) = loaded {
                tracing::warn!(library = %lib.name, error = ?r, "a stored function library does not load; FCALL will not find its functions");
            }
        }
        let hub = Arc::new(crate::pubsub::Hub::default());
        let tracking = Arc::new(crate::tracking::Tracking::new(
            Arc::clone(&hub),
            cfg.tracking_table_max_keys,
        ));
        let latency = crate::latency::LatencyMonitor::default();
        latency.set_threshold_ms(cfg.latency_monitor_threshold_ms);
        let acllog_max_len = cfg.acllog_max_len;
        let lacks_good_replicas = cfg.lacks_good_replicas();
        let memory_limit = crate::process::MemoryLimit::default();
        memory_limit.set_limit(cfg.maxmemory);
        let command_latencies =
            crate::latency_histograms::CommandLatencies::new(crate::command_table::slot_count());
        command_latencies.set_enabled(cfg.latency_tracking);
        let monitors = Arc::new(crate::monitor::Monitors::default());
        monitors.set_limit(crate::monitor::limit_of(
            cfg.obuf_normal,
            cfg.output_buffer_limit,
        ));
        let shared = Arc::new(Shared {
            scripts: Arc::new(scripts),
            config: RwLock::new(cfg),
            keyspace,
            acl_generation: acl.generation(),
            acl: RwLock::new(acl),
            acl_log: Mutex::new(crate::acl::log::AclLog::new(acllog_max_len)),
            clients: Clients::default(),
            slowlog,
            stats: Stats::default(),
            errors: Default::default(),
            registry: Registry::new(),
            started: Instant::now(),
            run_id,
            port: std::sync::atomic::AtomicU16::new(port),
            listeners: crate::listen::Listeners::default(),
            shutdown,
            scan_cursors: Mutex::new(Default::default()),
            bulk: std::sync::OnceLock::new(),
            relay_stats: Arc::default(),
            hub,
            tracking,
            cluster,
            monitors,
            active_expire: std::sync::atomic::AtomicBool::new(true),
            deny_scripts_disabled: std::sync::atomic::AtomicBool::new(false),
            repl_id: Mutex::new(random_id()),
            latency,
            command_latencies,
            memory_limit,
            lacks_good_replicas: std::sync::atomic::AtomicBool::new(lacks_good_replicas),
        });
        crate::tracking::Tracking::install(&shared)
            .map_err(|e| ServerError::Start(format!("tracking thread: {e}")))?;
        let threads = if shared.config.read().threads > 0 {
            shared.config.read().threads
        } else {
            default_threads()
        };
        let push_nice = shared.config.read().push_nice;
        let workers =
            crate::workers::Workers::start(threads, push_nice, Arc::clone(&shared.relay_stats))
                .map_err(|e| ServerError::Start(format!("connection threads: {e}")))?;
        let _ = shared.bulk.set(workers.bulk_handle());
        crate::process::mark_startup();
        Ok(Server {
            shared,
            listeners,
            http,
            workers: Arc::new(workers),
        })
    }

    /// Where clients connect (the first bind address).
    pub fn local_addr(&self) -> SocketAddr {
        self.listeners
            .first()
            .and_then(|l| l.local_addr().ok())
            .unwrap_or_else(|| {
                SocketAddr::new(
                    IpAddr::from([127, 0, 0, 1]),
                    self.shared.port.load(Ordering::Relaxed),
                )
            })
    }

    /// Where the operations endpoint listens, if enabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The state shared with connections (tests and the embedding binary use it).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Serves until shutdown is requested, then stops gracefully.
    pub async fn run(self) -> Result<(), ServerError> {
        let shared = self.shared;
        let workers = self.workers;
        shared.listeners.start(
            &shared,
            tokio::runtime::Handle::current(),
            Arc::clone(&workers),
            self.listeners,
        );
        let http_task = self.http.map(|l| {
            let st: Arc<dyn crate::http::OpsState> = Arc::new(crate::ops::Ops(Arc::clone(&shared)));
            if let Ok(a) = l.local_addr() {
                info!(addr = %a, "operations endpoint: /metrics /livez /readyz");
            }
            tokio::spawn(crate::http::serve(l, st, shared.shutdown.subscribe()))
        });
        let mut expiry = crate::expire_pass::spawn(Arc::clone(&shared));
        let mut reclaim = crate::expire_pass::spawn_reclaim(Arc::clone(&shared));
        let mut maintenance = {
            let (sh, cfg) = (Arc::clone(&shared), Arc::clone(&shared));
            crate::periodic::Periodic::start(
                "rialto-stores",
                move || cfg.config.read().store_maintenance_interval,
                move || {
                    if let Err(e) = sh.keyspace.maintenance_pass() {
                        warn!(error = %e, "store maintenance pass failed");
                    }
                },
            )
        };

        // Releases idle clients' query buffers each second, and closes clients for
        // `maxmemory-clients` as soon as their memory passes it (it wakes the thread).
        let mut query_bufs = {
            let sh = Arc::clone(&shared);
            crate::periodic::Periodic::start(
                "rialto-clients",
                || Duration::from_secs(1),
                move || {
                    sh.clients.evict();
                    sh.clients.trim_idle();
                },
            )
        };
        if let Some(t) = query_bufs.thread() {
            let memory = &shared.clients.memory;
            memory.set_evictor(t);
            let cfg = shared.config.read();
            memory.set_limit(cfg.maxmemory_clients.bytes(cfg.maxmemory));
        }

        let mut rx = shared.shutdown.subscribe();
        while !*rx.borrow_and_update() {
            if rx.changed().await.is_err() {
                break;
            }
        }
        info!("shutting down: no new connections, finishing in-flight commands");
        shared.listeners.stop();
        let timeout = shared.config.read().shutdown_timeout;
        let deadline = Instant::now() + timeout;
        while !shared.clients.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if !shared.clients.is_empty() {
            warn!(
                clients = shared.clients.len(),
                "shutdown timeout: closing remaining clients"
            );
            shared.clients.kill_all();
            let grace = Instant::now() + Duration::from_secs(1);
            while !shared.clients.is_empty() && Instant::now() < grace {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        expiry.stop();
        reclaim.stop();
        maintenance.stop();
        query_bufs.stop();
        if let Some(t) = http_task {
            let _ = t.await;
        }
        // The accept loops were stopped: nothing else holds the workers.
        for _ in 0..100 {
            if Arc::strong_count(&workers) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if let Ok(w) = Arc::try_unwrap(workers) {
            tokio::task::spawn_blocking(move || w.stop())
                .await
                .map_err(|e| ServerError::Start(e.to_string()))?;
        }
        let sh = Arc::clone(&shared);
        drop(shared);
        tokio::task::spawn_blocking(move || close_engine(sh))
            .await
            .map_err(|e| ServerError::Start(e.to_string()))?
    }
}

/// The keyspace options of a server's database: the configured engine sizes, merger and
/// push settings, on `fs` with `clock`.
/// Gives the keyspace the collection encoding thresholds of `cfg`.
pub(crate) fn apply_encodings(keyspace: &Keyspace, cfg: &Config) {
    let enc = keyspace.encodings();
    enc.set_hash_max_entries(cfg.hash_max_listpack_entries);
    enc.set_hash_max_value(cfg.hash_max_listpack_value);
    enc.set_set_max_intset_entries(cfg.set_max_intset_entries);
    enc.set_set_max_listpack_entries(cfg.set_max_listpack_entries);
    enc.set_set_max_listpack_value(cfg.set_max_listpack_value);
    enc.set_zset_max_entries(cfg.zset_max_listpack_entries);
    enc.set_zset_max_value(cfg.zset_max_listpack_value);
    enc.set_list_max_size(cfg.list_max_listpack_size);
}

pub fn keyspace_options(
    cfg: &Config,
    fs: rialto_io::FsRef,
    clock: Arc<dyn Clock>,
) -> KeyspaceOptions {
    let (block_cache, row_cache) = cfg.cache_sizes(rialto_io::mem_available());
    KeyspaceOptions {
        engine: Options {
            fs,
            clock,
            create_if_missing: true,
            wal_recovery: cfg.wal_recovery,
            write_buffer_size: cfg.write_buffer_size,
            compression: cfg.compression,
            block_cache: Some(BlockCache::new(block_cache)),
            row_cache_size: row_cache,
            row_cache_warm: cfg.row_cache_warm,
            idle_compaction_quiet_ms: cfg.idle_compaction.as_millis() as u64,
            background_nice: cfg.background_nice,
            triad: cfg.triad.options(),
            ..Options::default()
        },
        merger: MergerOptions {
            durability: cfg.appendfsync,
            max_wait: cfg.merger_max_wait,
            max_group_bytes: cfg.merger_max_group_bytes,
            spin: cfg.merger_spin,
            wait_spin: cfg.merger_wait_spin,
            poll_preempted_after: cfg.merger_poll_preempted,
            poll_max_cooldown: cfg.merger_poll_max_cooldown,
            inline_execution: cfg.merger_inline,
            ..MergerOptions::default()
        },
        stores: StoreOptions {
            push_memory_limit: cfg.push_memory_limit,
            push_tmp_dir: cfg.dir.join("push-tmp"),
            push_threads: cfg.push_threads,
            push_nice: cfg.push_nice,
            push_page_cache: cfg.push_page_cache,
            push_guard: cfg.push_guard(),
            partitions: if cfg.cluster.enabled {
                cfg.cluster.partitions
            } else {
                1
            },
        },
    }
}

/// Commits and syncs everything queued, then flushes the memtable so a restart replays nothing.
fn close_engine(shared: Arc<Shared>) -> Result<(), ServerError> {
    if let Some(c) = &shared.cluster {
        // Leave the group first, so the partitions this node masters move at once.
        c.node.stop();
    }
    shared.keyspace.close().map_err(ServerError::Close)?;
    info!("database closed; every acknowledged write is durable");
    Ok(())
}

/// Checks limits and protected mode, then runs the connection.
pub(crate) async fn admit(stream: TcpStream, addr: SocketAddr, shared: Arc<Shared>) {
    use tokio::io::AsyncWriteExt;
    let (maxclients, protected, nodelay, keepalive) = {
        let c = shared.config.read();
        (
            c.maxclients,
            c.protected_mode,
            c.tcp_nodelay,
            c.tcp_keepalive,
        )
    };
    let mut stream = stream;
    if shared.clients.len() >= maxclients {
        shared.clients.rejected.fetch_add(1, Ordering::Relaxed);
        let _ = stream
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    }
    if protected && !addr.ip().is_loopback() && shared.acl.read().default_user_nopass() {
        let _ = stream.write_all(PROTECTED_MODE_REPLY.as_bytes()).await;
        return;
    }
    let _ = stream.set_nodelay(nodelay);
    if !keepalive.is_zero() {
        let sock = socket2_keepalive(&stream, keepalive);
        if let Err(e) = sock {
            tracing::debug!(error = %e, "cannot set TCP keepalive");
        }
    }
    crate::conn::run(stream, addr, shared).await;
}

fn socket2_keepalive(stream: &TcpStream, interval: Duration) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = stream.as_raw_fd();
    let on: libc::c_int = 1;
    let secs = interval.as_secs().clamp(1, i32::MAX as u64) as libc::c_int;
    // SAFETY: setsockopt on a socket we own, with pointers to live ints of the right size.
    unsafe {
        let sz = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let p = |v: &libc::c_int| v as *const libc::c_int as *const libc::c_void;
        if libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, p(&on), sz) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        #[cfg(target_os = "linux")]
        {
            libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, p(&secs), sz);
            let intvl = (secs / 3).max(1);
            libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, p(&intvl), sz);
        }
    }
    Ok(())
}

/// Who can reach the server without a password, for the start-up warning Redis's protected
/// mode advice gives: binding beyond loopback with no password is either useless (protected
/// mode refuses every remote client) or dangerous (protected mode off: anyone on the network
/// reads and writes every key). Never refused: a trusted network may be the intent.
struct Exposure {
    protected_mode: bool,
    /// The default user is `nopass` (what protected mode looks at).
    default_nopass: bool,
    /// The default user is `nopass` and on: a connection is authenticated as it opens.
    default_open: bool,
}

impl Exposure {
    /// The warning for listening on `bind`, if one is due.
    fn warning(&self, bind: &[IpAddr]) -> Option<String> {
        let remote: Vec<String> = bind
            .iter()
            .filter(|ip| !ip.is_loopback())
            .map(|ip| ip.to_string())
            .collect();
        if remote.is_empty() {
            return None;
        }
        let remote = remote.join(" ");
        if self.protected_mode && self.default_nopass {
            Some(format!(
                "listening on {remote} beyond loopback with no password for the default user: protected mode refuses every client that is not on loopback (-DENIED). Set a password (requirepass, or an ACL user with one) for remote clients, or, on a trusted network only, --protected-mode no"
            ))
        } else if !self.protected_mode && self.default_open {
            Some(format!(
                "listening on {remote} beyond loopback with no password and protected mode off: anyone who can reach this address can read, change and delete every key. Set a password (requirepass, or ACL users with passwords and the default user off), or bind 127.0.0.1"
            ))
        } else {
            None
        }
    }
}

/// What a non-loopback client gets when no password is set and protected mode is on.
pub const PROTECTED_MODE_REPLY: &str = "-DENIED Rialto is running in protected mode because no password is set for the default user and it was reached from a non-loopback address. Either set a password (requirepass, or an ACL user) and connect with AUTH, or, if this network is trusted, disable protected mode with `--protected-mode no` (or CONFIG SET protected-mode no from a loopback client). Then restart or reconnect.\r\n";

/// A running server on its own runtime thread: what tests and embedders use.
pub struct RunningServer {
    pub addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    pub shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
}

impl RunningServer {
    /// Requests a graceful shutdown and waits for it.
    pub fn shutdown(mut self) -> Result<(), ServerError> {
        self.shared.request_shutdown();
        self.join_inner()
    }

    /// Waits until the server stops by itself (SHUTDOWN).
    pub fn join(mut self) -> Result<(), ServerError> {
        self.join_inner()
    }

    fn join_inner(&mut self) -> Result<(), ServerError> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| ServerError::Start("server thread panicked".into()))?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.shared.request_shutdown();
            let _ = self.join_inner();
        }
    }
}

/// Connection threads for `threads = 0`: half the CPUs, at least one. The other half is left
/// to the syncer, background compaction and, on a machine that also runs the clients, to
/// them: on 2 cores with redis-benchmark beside it, one connection thread served more GETs
/// and SETs at -P 1 than two (fewer cross-thread wake-ups), two more at -P 16.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// The runtime of accepting, the operations endpoint and shutdown; connections run on
/// [`crate::workers::Workers`].
fn runtime() -> Result<tokio::runtime::Runtime, ServerError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ServerError::Start(format!("tokio runtime: {e}")))
}

/// Starts a server on a thread of its own and returns once it listens.
pub fn start(cfg: Config) -> Result<RunningServer, ServerError> {
    start_on(cfg, Arc::new(rialto_io::PosixFs::new()))
}

/// [`start`] with the database on `fs`.
pub fn start_on(cfg: Config, fs: rialto_io::FsRef) -> Result<RunningServer, ServerError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("rialto-server".into())
        .spawn(move || {
            let rt = runtime()?;
            rt.block_on(async move {
                match Server::bind_on(cfg, fs).await {
                    Ok(s) => {
                        let _ = tx.send(Ok((
                            s.local_addr(),
                            s.metrics_addr(),
                            Arc::clone(s.shared()),
                        )));
                        s.run().await
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        let _ = tx.send(Err(e));
                        Err(ServerError::Start(msg))
                    }
                }
            })
        })
        .map_err(|e| ServerError::Start(e.to_string()))?;
    match rx.recv() {
        Ok(Ok((addr, metrics_addr, shared))) => Ok(RunningServer {
            addr,
            metrics_addr,
            shared,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(thread
            .join()
            .ok()
            .and_then(|r| r.err())
            .unwrap_or_else(|| ServerError::Start("server thread exited".into()))),
    }
}

/// Runs the server in the foreground until SIGTERM, SIGINT or SHUTDOWN: `rialto serve`.
pub fn serve(cfg: Config) -> Result<(), ServerError> {
    let rt = runtime()?;
    rt.block_on(async move {
        let server = Server::bind(cfg).await?;
        let shared = Arc::clone(server.shared());
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                warn!("cannot install signal handlers; use SHUTDOWN to stop");
                return;
            };
            tokio::select! {
                _ = term.recv() => info!("SIGTERM received"),
                _ = int.recv() => info!("SIGINT received"),
            }
            shared.request_shutdown();
        });
        server.run().await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn binding_beyond_loopback_without_a_password_is_warned_of() {
        let open = Exposure {
            protected_mode: false,
            default_nopass: true,
            default_open: true,
        };
        let protected = Exposure {
            protected_mode: true,
            ..open
        };
        let with_password = Exposure {
            protected_mode: false,
            default_nopass: false,
            default_open: false,
        };
        // Loopback only: nothing to say, whatever the settings.
        for e in [&open, &protected, &with_password] {
            assert_eq!(e.warning(&ips(&["127.0.0.1", "::1"])), None);
        }
        let w = open.warning(&ips(&["127.0.0.1", "0.0.0.0"])).unwrap();
        assert!(w.starts_with("listening on 0.0.0.0 beyond loopback"), "{w}");
        assert!(w.contains("anyone") && w.contains("requirepass"), "{w}");
        let w = protected.warning(&ips(&["10.0.0.1"])).unwrap();
        assert!(
            w.contains("protected mode refuses") && w.contains("requirepass"),
            "{w}"
        );
        assert_eq!(with_password.warning(&ips(&["0.0.0.0"])), None);
        // A nopass default user that is off lets nobody in without a password.
        let off = Exposure {
            default_open: false,
            ..open
        };
        assert_eq!(off.warning(&ips(&["0.0.0.0"])), None);
    }
}
