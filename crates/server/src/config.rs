//! Server configuration: one table of keys that a TOML file, command-line flags
//! (`--key value`) and `CONFIG GET/SET` all go through, so every key works in all three.
//! Precedence: defaults, then the file, then flags; `CONFIG SET` changes the running server
//! (only keys marked mutable).

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use rialto_lsm::triad::TriadMode;
use rialto_lsm::WalRecovery;
use rialto_txn::Durability;

use crate::pubsub::ObufLimit;

/// Everything the server is configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file the server read at start (`--config`), which CONFIG REWRITE rewrites.
    pub config_file: Option<PathBuf>,
    pub dir: PathBuf,
    pub bind: Vec<IpAddr>,
    pub port: u16,
    pub appendfsync: Durability,
    pub wal_recovery: WalRecovery,
    pub requirepass: Option<String>,
    pub protected_mode: bool,
    /// Who may run DEBUG (`enable-debug-command`); fixed at start, as in Redis.
    pub enable_debug_command: DebugGate,
    pub users: Vec<String>,
    /// `acllog-max-len`: entries the ACL log keeps.
    pub acllog_max_len: usize,
    /// `maxmemory`: bytes of the allocator's in use beyond which commands that may grow the
    /// data are refused (0: no limit). Nothing is evicted.
    pub maxmemory: u64,
    /// `maxmemory-clients`: what every client's buffers may hold together before the clients
    /// holding the most are closed.
    pub maxmemory_clients: ClientsLimit,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (seconds): writes are refused while
    /// fewer good replicas than the first are connected, when both are above 0. A standalone
    /// node has no replicas, so any N above 0 refuses every write.
    pub min_replicas_to_write: u32,
    pub min_replicas_max_lag: u32,
    pub maxclients: usize,
    pub timeout: Duration,
    pub tcp_nodelay: bool,
    pub tcp_keepalive: Duration,
    pub proto_max_bulk_len: usize,
    pub max_multibulk_len: usize,
    pub client_query_buffer_limit: usize,
    pub output_buffer_limit: usize,
    /// `client-output-buffer-limit`: normal, replica, pubsub. Pubsub is enforced on
    /// subscribers, normal on monitors (`output-buffer-limit` bounds replies); replica is kept
    /// for CONFIG GET.
    pub obuf_normal: ObufLimit,
    pub obuf_replica: ObufLimit,
    pub pubsub_limit: ObufLimit,
    pub tracking_table_max_keys: usize,
    pub databases: usize,
    pub hz: u32,
    pub active_expire_batch: usize,
    /// `collection-reclaim-batch`: most member keys of deleted large collections one reclaim
    /// pass deletes.
    pub collection_reclaim_batch: usize,
    /// `hash-max-listpack-entries` and `-value`: when a hash stops being packed.
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    /// `set-max-intset-entries`, `set-max-listpack-entries` and `-value`: when a set stops
    /// being packed.
    pub set_max_intset_entries: usize,
    pub set_max_listpack_entries: usize,
    pub set_max_listpack_value: usize,
    /// `zset-max-listpack-entries` and `-value`: when a sorted set stops being packed.
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    pub list_max_listpack_size: i64,
    /// `hll-sparse-max-bytes`: the longest sparse HyperLogLog, header included.
    pub hll_sparse_max_bytes: usize,
    /// `stream-node-max-bytes` and `-entries`: when a stream's entries start a new node.
    pub stream_node_max_bytes: u64,
    pub stream_node_max_entries: u64,
    pub list_compress_depth: u32,
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: usize,
    /// `latency-monitor-threshold`: milliseconds from which LATENCY records an event; 0 off.
    pub latency_monitor_threshold_ms: u64,
    /// `latency-tracking`: whether each call is recorded in its command's latency histogram.
    pub latency_tracking: bool,
    /// `latency-tracking-info-percentiles`: the percentiles INFO latencystats reports, each
    /// within 0..=100.
    pub latency_tracking_info_percentiles: Vec<f64>,
    pub lua_time_limit_ms: u64,
    pub lua_memory_limit: usize,
    pub metrics_bind: IpAddr,
    pub metrics_port: u16,
    pub threads: usize,
    pub cache_size: CacheSize,
    pub row_cache_size: CacheSize,
    pub row_cache_warm: bool,
    pub idle_compaction: Duration,
    /// `background-nice`: the CPU niceness of flush and compaction threads.
    pub background_nice: i32,
    pub write_buffer_size: usize,
    /// `compression`: the codec of the tables flushes and compactions write, and a new
    /// store's default.
    pub compression: rialto_lsm::Compression,
    pub triad: TriadMode,
    pub merger_max_wait: Duration,
    pub merger_max_group_bytes: usize,
    pub merger_spin: Duration,
    pub merger_wait_spin: Duration,
    pub merger_poll_preempted: Duration,
    pub merger_poll_max_cooldown: Duration,
    pub merger_inline: bool,
    pub push_memory_limit: usize,
    pub push_threads: usize,
    pub push_nice: rialto_io::ThreadPriority,
    pub push_page_cache: rialto_keyspace::PushPageCache,
    pub push_min_records: u64,
    pub push_max_shrink: u32,
    /// `store-max-keep`: the most versions STORE CREATE and STORE CONFIG let a store keep.
    pub store_max_keep: u32,
    pub store_maintenance_interval: Duration,
    pub shutdown_timeout: Duration,
    pub log_level: String,
    pub log_format: String,
    pub cluster: ClusterConfig,
}

/// Cluster mode (on Kafka): off unless `cluster-enabled yes`.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub enabled: bool,
    pub kafka: String,
    pub node_id: u32,
    /// The host clients are told to reach this node at; empty: the first bind address.
    pub announce_ip: String,
    pub topic: String,
    pub partitions: u32,
    pub replication_factor: u32,
    pub node_timeout: Duration,
    pub write_timeout: Duration,
    pub linger: Duration,
    pub replica_max_lag: Duration,
    /// How long a command is held while its slot's master changes at this node before it is
    /// answered TRYAGAIN.
    pub handover_wait: Duration,
    /// Lua instructions a script of the log may run (0: no limit).
    pub script_max_instructions: u64,
    /// How long a push's commit waits for every live node to load the version, and then
    /// for every partition to swap it in.
    pub push_timeout: Duration,
}

impl Config {
    /// The stream node limits an op carries (see the keyspace's `stream` module).
    pub fn stream_node(&self) -> rialto_keyspace::NodeLimits {
        rialto_keyspace::NodeLimits {
            max_bytes: self.stream_node_max_bytes,
            max_entries: self.stream_node_max_entries,
        }
    }

    /// Whether writes are refused with NOREPLICAS: min-replicas-to-write asks for replicas
    /// (with a max lag above 0, as Redis requires) and a standalone node has none.
    pub fn lacks_good_replicas(&self) -> bool {
        self.min_replicas_to_write > 0 && self.min_replicas_max_lag > 0
    }

    /// What a push must load unless it says otherwise.
    pub fn push_guard(&self) -> rialto_keyspace::PushGuard {
        rialto_keyspace::PushGuard {
            min_records: self.push_min_records,
            max_shrink_percent: self.push_max_shrink,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            config_file: None,
            dir: PathBuf::from("rialto-data"),
            bind: vec![IpAddr::from([127, 0, 0, 1])],
            port: 6379,
            appendfsync: Durability::Always,
            wal_recovery: WalRecovery::Strict,
            requirepass: None,
            protected_mode: true,
            enable_debug_command: DebugGate::No,
            users: Vec::new(),
            acllog_max_len: 128,
            maxmemory: 0,
            maxmemory_clients: ClientsLimit::Bytes(0),
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
            maxclients: 10_000,
            timeout: Duration::ZERO,
            tcp_nodelay: true,
            tcp_keepalive: Duration::from_secs(300),
            proto_max_bulk_len: 512 << 20,
            max_multibulk_len: 1024 * 1024,
            client_query_buffer_limit: 1 << 30,
            output_buffer_limit: 1 << 30,
            obuf_normal: ObufLimit {
                hard: 0,
                soft: 0,
                soft_secs: 0,
            },
            obuf_replica: ObufLimit {
                hard: 256 << 20,
                soft: 64 << 20,
                soft_secs: 60,
            },
            pubsub_limit: ObufLimit::PUBSUB_DEFAULT,
            tracking_table_max_keys: crate::tracking::DEFAULT_MAX_KEYS,
            databases: 16,
            hz: 10,
            active_expire_batch: 1000,
            collection_reclaim_batch: 10_000,
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
            hll_sparse_max_bytes: rialto_keyspace::hll::DEFAULT_SPARSE_MAX_BYTES,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
            list_compress_depth: 0,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            latency_monitor_threshold_ms: 0,
            latency_tracking: true,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            lua_time_limit_ms: 5000,
            lua_memory_limit: 1 << 30,
            metrics_bind: IpAddr::from([127, 0, 0, 1]),
            metrics_port: 0,
            threads: 0,
            cache_size: CacheSize::Auto,
            row_cache_size: CacheSize::Auto,
            row_cache_warm: true,
            idle_compaction: Duration::from_secs(1),
            background_nice: 0,
            write_buffer_size: 64 << 20,
            compression: rialto_lsm::Compression::None,
            triad: TriadMode::Adaptive,
            merger_max_wait: Duration::from_micros(100),
            merger_max_group_bytes: 4 << 20,
            merger_spin: Duration::from_micros(50),
            merger_wait_spin: Duration::from_micros(300),
            merger_poll_preempted: Duration::from_micros(500),
            merger_poll_max_cooldown: Duration::from_secs(1),
            merger_inline: true,
            push_memory_limit: 256 << 20,
            push_threads: 1,
            push_nice: rialto_io::ThreadPriority::Nice(19),
            push_page_cache: rialto_keyspace::PushPageCache::Auto,
            push_min_records: 1,
            push_max_shrink: 50,
            store_max_keep: 10,
            store_maintenance_interval: Duration::from_secs(1),
            shutdown_timeout: Duration::from_secs(10),
            log_level: "info".into(),
            log_format: "text".into(),
            cluster: ClusterConfig {
                enabled: false,
                kafka: String::new(),
                node_id: 0,
                announce_ip: String::new(),
                topic: "rialto".into(),
                partitions: 3,
                replication_factor: 3,
                node_timeout: Duration::from_millis(3000),
                write_timeout: Duration::from_millis(10_000),
                linger: Duration::from_millis(1),
                replica_max_lag: Duration::from_millis(10_000),
                handover_wait: Duration::from_millis(1000),
                script_max_instructions: 500_000_000,
                push_timeout: Duration::from_millis(600_000),
            },
        }
    }
}

/// A configuration problem, reported as one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown option '{0}' (rialto serve --help lists every option)")]
    Unknown(String),
    #[error("option '{key}': {reason}")]
    Invalid { key: String, reason: String },
    #[error("option '{0}' cannot be changed while the server runs")]
    Immutable(String),
    #[error("config file {path}: {reason}")]
    File { path: String, reason: String },
}

type Setter = fn(&mut Config, &str) -> Result<(), String>;
type Getter = fn(&Config) -> String;

/// Why min-replicas-to-write is refused in cluster mode.
const NOT_IN_CLUSTER: &str =
    "not in cluster mode: a write is acknowledged once the Kafka log holds it";

/// Changes the process's log filter (`loglevel` at run time): the directives, or why they are
/// refused. Installed by the binary that set up logging.
pub type LogFilter = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

static LOG_FILTER: std::sync::OnceLock<LogFilter> = std::sync::OnceLock::new();

/// Installs the hook CONFIG SET loglevel calls (once per process; later calls are ignored).
pub fn set_log_filter(f: LogFilter) {
    let _ = LOG_FILTER.set(f);
}

/// Applies `loglevel` to the process's logging; without a hook (an embedded server whose
/// host owns logging) there is nothing to change.
pub(crate) fn apply_log_level(level: &str) -> Result<(), String> {
    LOG_FILTER.get().map_or(Ok(()), |f| f(level))
}

/// Why `port` and `bind` are fixed in cluster mode.
const ADDRESS_IN_CLUSTER: &str =
    "fixed in cluster mode: the node's address is announced to the cluster";

/// One configuration key.
pub struct Key {
    /// The name, as in the file, after `--` on the command line, and in CONFIG GET/SET.
    pub name: &'static str,
    /// Whether CONFIG SET may change it at run time.
    pub mutable: bool,
    /// Default, meaning and trade-off.
    pub doc: &'static str,
    set: Setter,
    get: Getter,
}

fn yes_no(v: bool) -> String {
    if v { "yes" } else { "no" }.into()
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "yes" | "true" | "on" | "1" => Ok(true),
        "no" | "false" | "off" | "0" => Ok(false),
        // Redis's text for its yes/no parameters.
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

/// `maxmemory-clients`: bytes, or a percentage of `maxmemory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientsLimit {
    Bytes(u64),
    Percent(u32),
}

impl ClientsLimit {
    fn parse(s: &str) -> Result<ClientsLimit, String> {
        if let Some(p) = s.trim().strip_suffix('%') {
            let p: u32 = parse_num(p)?;
            if p > 100 {
                // Redis's text.
                return Err("percentage argument must be less or equal to 100".into());
            }
            return Ok(ClientsLimit::Percent(p));
        }
        parse_size(s).map(|n| ClientsLimit::Bytes(n as u64))
    }

    /// The limit in bytes with `maxmemory` (0: none).
    pub fn bytes(self, maxmemory: u64) -> u64 {
        match self {
            ClientsLimit::Bytes(n) => n,
            ClientsLimit::Percent(p) => maxmemory / 100 * u64::from(p),
        }
    }
}

impl std::fmt::Display for ClientsLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientsLimit::Bytes(n) => write!(f, "{n}"),
            ClientsLimit::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// A cache's size: `auto` sizes it from the machine's memory when the server starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheSize {
    Auto,
    Bytes(usize),
}

/// The part of the memory available at start (`rialto_io::mem_available`: `MemAvailable`,
/// capped by the memory cgroup's headroom) that `auto` caches share: 1/8.
pub const AUTO_CACHE_SHARE_DIVISOR: u64 = 8;
/// Smallest `auto` cache.
pub const AUTO_CACHE_MIN: usize = 64 << 20;
/// An `auto` cache where the available memory is unknown.
pub const AUTO_CACHE_UNKNOWN: usize = 256 << 20;

impl CacheSize {
    /// `auto` or a size (as [`parse_size`]).
    pub fn parse(s: &str) -> Result<CacheSize, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(CacheSize::Auto);
        }
        parse_size(s)
            .map(CacheSize::Bytes)
            .map_err(|e| format!("{e}, or auto"))
    }

    /// Bytes of a cache taking `quarters` of the auto budget of a machine with
    /// `available` bytes of memory.
    fn resolve(self, available: Option<u64>, quarters: u64) -> usize {
        match (self, available) {
            (CacheSize::Bytes(n), _) => n,
            (CacheSize::Auto, None) => AUTO_CACHE_UNKNOWN,
            (CacheSize::Auto, Some(m)) => {
                let share = m / AUTO_CACHE_SHARE_DIVISOR * quarters / 4;
                usize::try_from(share)
                    .unwrap_or(usize::MAX)
                    .max(AUTO_CACHE_MIN)
            }
        }
    }
}

impl std::fmt::Display for CacheSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheSize::Auto => f.write_str("auto"),
            CacheSize::Bytes(n) => write!(f, "{n}"),
        }
    }
}

impl Config {
    /// Bytes of the block cache and of the row cache on a machine with `available` bytes of
    /// memory (`None`: unknown): the sizes set, and for `auto` ones a quarter (block) and
    /// three quarters (rows) of 1/8 of `available`. Rows take the larger part: a row-cache
    /// hit answers a read without a table search, and one row costs a few dozen bytes more
    /// than its value where a block of 4 KiB is cached for any of its entries.
    pub fn cache_sizes(&self, available: Option<u64>) -> (usize, usize) {
        (
            self.cache_size.resolve(available, 1),
            self.row_cache_size.resolve(available, 3),
        )
    }
}

/// Parses a size as Redis does (`memtoll`): a number with an optional unit k, kb, m, mb, g,
/// gb (k = 1000, kb = 1024).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return Err(format!("'{s}' is not a size (e.g. 512mb, 64kb, 1048576)")),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 512mb, 64kb, 1048576)"))?;
    n.checked_mul(mul)
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// A value of the file as the setter takes it (as `apply_toml` reads it).
fn toml_text(v: &toml_edit::Value) -> Option<String> {
    match v {
        toml_edit::Value::String(s) => Some(s.value().clone()),
        toml_edit::Value::Integer(i) => Some(i.value().to_string()),
        toml_edit::Value::Boolean(b) => Some(yes_no(*b.value())),
        toml_edit::Value::Float(f) => Some(f.value().to_string()),
        _ => None,
    }
}

/// `text` as a file value, of the type the file used for it (or a number when it is one).
fn toml_value(text: &str, was: Option<&toml_edit::Value>) -> toml_edit::Value {
    match was {
        Some(toml_edit::Value::Boolean(_)) if text == "yes" || text == "no" => {
            toml_edit::Value::from(text == "yes")
        }
        Some(toml_edit::Value::String(_)) => toml_edit::Value::from(text),
        _ => match text.parse::<i64>() {
            Ok(n) if n.to_string() == text => toml_edit::Value::from(n),
            _ => toml_edit::Value::from(text),
        },
    }
}

/// `client-output-buffer-limit`'s value, Redis's syntax: one or more `<class> <hard> <soft>
/// <soft seconds>`, class `normal`, `replica` (or `slave`) or `pubsub`; classes not named
/// keep their limits. Redis's texts for what it refuses.
fn set_obuf_limits(c: &mut Config, v: &str) -> Result<(), String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut next = (c.obuf_normal, c.obuf_replica, c.pubsub_limit);
    for w in words.chunks_exact(4) {
        let slot = match w[0].to_ascii_lowercase().as_str() {
            "normal" => &mut next.0,
            "replica" | "slave" => &mut next.1,
            "pubsub" => &mut next.2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let bad = |_| {
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string()
        };
        *slot = ObufLimit {
            hard: parse_size(w[1]).map_err(bad)?,
            soft: parse_size(w[2]).map_err(bad)?,
            soft_secs: parse_num(w[3]).map_err(bad)?,
        };
    }
    (c.obuf_normal, c.obuf_replica, c.pubsub_limit) = next;
    Ok(())
}

fn get_obuf_limits(c: &Config) -> String {
    let f = |l: ObufLimit| format!("{} {} {}", l.hard, l.soft, l.soft_secs);
    format!(
        "normal {} slave {} pubsub {}",
        f(c.obuf_normal),
        f(c.obuf_replica),
        f(c.pubsub_limit)
    )
}

/// `auto`, `all`, `none` or a size (as [`parse_size`]).
pub fn parse_push_page_cache(s: &str) -> Result<rialto_keyspace::PushPageCache, String> {
    if let Some(p) = rialto_keyspace::PushPageCache::from_word(s) {
        return Ok(p);
    }
    parse_size(s)
        .map(|n| rialto_keyspace::PushPageCache::Bytes(n as u64))
        .map_err(|_| format!("'{s}' is not auto, all, none or a size (e.g. 4gb)"))
}

/// `hll-sparse-max-bytes`: a size (memory units taken, as Redis's) of at most `LONG_MAX`.
fn parse_hll_sparse_max(v: &str) -> Result<usize, String> {
    let n = parse_size(v)?;
    if n > i64::MAX as usize {
        return Err(format!("'{v}' is too large"));
    }
    Ok(n)
}

fn parse_num<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a valid number"))
}

/// `latency-tracking-info-percentiles`: Redis's reading, words split at every single space
/// (so doubled spaces make an empty, invalid word) and the whole value empty for none.
fn parse_percentiles(v: &str) -> Result<Vec<f64>, String> {
    if v.is_empty() {
        return Ok(Vec::new());
    }
    v.split(' ')
        .map(|w| {
            let p = string2d(w).ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            if !(0.0..=100.0).contains(&p) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                        .to_string(),
                );
            }
            Ok(p)
        })
        .collect()
}

/// Redis's `string2d`: the whole text is one number as C's `strtod` reads it (decimal, hex,
/// `inf`), not starting with a space; NaN, and an overflow or underflow, are refused.
fn string2d(s: &str) -> Option<f64> {
    // A number is short; a long word is refused before it is copied.
    if s.is_empty() || s.len() > 512 || s.as_bytes()[0].is_ascii_whitespace() {
        return None;
    }
    let text = std::ffi::CString::new(s).ok()?;
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `text` is NUL-terminated and outlives the call; strtod only reads it and
    // stores a pointer into it in `end`; errno is this thread's.
    let (value, errno) = unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(text.as_ptr(), &mut end);
        (v, *libc::__errno_location())
    };
    let used = (end as usize).wrapping_sub(text.as_ptr() as usize);
    let range = errno == libc::ERANGE && (value.is_infinite() || value == 0.0);
    (used == s.len() && !range && !value.is_nan()).then_some(value)
}

fn parse_nice(s: &str) -> Result<rialto_io::ThreadPriority, String> {
    if s.trim().eq_ignore_ascii_case("idle") {
        return Ok(rialto_io::ThreadPriority::Idle);
    }
    match parse_num::<i32>(s).map_err(|_| format!("'{s}' is not a niceness 0..=19 or idle"))? {
        n @ 0..=19 => Ok(rialto_io::ThreadPriority::Nice(n)),
        n => Err(format!(
            "niceness {n} is out of range 0..=19 (raising priority needs privileges)"
        )),
    }
}

fn parse_ip(s: &str) -> Result<IpAddr, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("'{s}' is not an IP address"))
}

/// `enable-debug-command`: Redis's protected-action setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugGate {
    No,
    Yes,
    /// Only from a loopback connection.
    Local,
}

impl DebugGate {
    /// Redis's words, any case.
    pub fn parse(s: &str) -> Option<DebugGate> {
        match s.trim().to_ascii_lowercase().as_str() {
            "no" => Some(DebugGate::No),
            "yes" => Some(DebugGate::Yes),
            "local" => Some(DebugGate::Local),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DebugGate::No => "no",
            DebugGate::Yes => "yes",
            DebugGate::Local => "local",
        }
    }

    /// Whether a client connected from `peer` may run DEBUG. Local is Redis's test: the
    /// peer is exactly 127.0.0.1 or ::1.
    pub fn allows(self, peer: std::net::IpAddr) -> bool {
        match self {
            DebugGate::No => false,
            DebugGate::Yes => true,
            DebugGate::Local => match peer {
                IpAddr::V4(a) => a == std::net::Ipv4Addr::LOCALHOST,
                IpAddr::V6(a) => a == std::net::Ipv6Addr::LOCALHOST,
            },
        }
    }
}

macro_rules! key {
    ($name:literal, $mutable:literal, $doc:literal, |$c:ident, $v:ident| $set:expr, |$g:ident| $get:expr) => {
        Key {
            name: $name,
            mutable: $mutable,
            doc: $doc,
            set: |$c: &mut Config, $v: &str| -> Result<(), String> {
                $set;
                Ok(())
            },
            get: |$g: &Config| -> String { $get },
        }
    };
}

/// A key with one value, for Redis tools that read or set it: setting that value (ignoring
/// case and surrounding blanks) succeeds and changes nothing; any other is refused with `$why`.
macro_rules! constant {
    ($name:literal, $value:literal, $mutable:literal, $why:expr, $doc:literal) => {
        Key {
            name: $name,
            mutable: $mutable,
            doc: $doc,
            set: |_, v| {
                if v.trim().eq_ignore_ascii_case($value) {
                    Ok(())
                } else {
                    Err($why.into())
                }
            },
            get: |_| $value.into(),
        }
    };
}

/// Every key. Read-only compatibility keys (`save`, `appendonly`, `daemonize`, `replicaof`) exist because tools such as
/// redis-benchmark ask for them.
pub static KEYS: &[Key] = &[
    key!("dir", false, "Database directory (default ./rialto-data). Created if missing; one server per directory (locked).",
        |c, v| c.dir = PathBuf::from(v), |c| c.dir.display().to_string()),
    key!("bind", true, "Addresses to listen on, space-separated (default 127.0.0.1). Binding elsewhere without a password is refused by protected mode. CONFIG SET listens on the new addresses before it closes the old ones (clients already connected stay); if one cannot be bound nothing changes. Fixed at start in cluster mode, where the node's address is announced to the cluster.",
        |c, v| {
            let bind = v.split_whitespace().map(parse_ip).collect::<Result<Vec<_>, _>>()?;
            if bind.is_empty() { return Err("needs at least one address".into()); }
            if c.cluster.enabled && bind != c.bind { return Err(ADDRESS_IN_CLUSTER.into()); }
            c.bind = bind
        },
        |c| c.bind.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(" ")),
    key!("port", true, "TCP port of the Redis protocol (default 6379; 0 picks a free port and logs it). CONFIG SET listens on the new port before it closes the old one (clients already connected stay); if it cannot be bound nothing changes. Fixed at start in cluster mode, where the node's address is announced to the cluster.",
        |c, v| {
            let port: u16 = parse_num(v)?;
            if c.cluster.enabled && port != c.port { return Err(ADDRESS_IN_CLUSTER.into()); }
            c.port = port
        },
        |c| c.port.to_string()),
    key!("appendfsync", false, "When writes are acknowledged (default always): always = after an fdatasync covered them (nothing acknowledged is ever lost); everysec = once written, synced every second (power loss can lose ~1 s); no = never synced by Rialto (power loss can lose everything since the last memtable switch).",
        |c, v| c.appendfsync = Durability::parse(v).ok_or_else(|| format!("'{v}' is not always, everysec or no"))?,
        |c| c.appendfsync.name().into()),
    key!("wal-recovery", false, "What opening the database does with a damaged journal (default strict). A torn tail, a write that a power loss cut short and that no later record proves durable (so never acknowledged under appendfsync always), is always cut and logged. strict: damage in bytes proven durable fails the start with the file and offset (rialto check --dir DIR names it). salvage: keeps every record before the first damaged one and drops the rest, then starts: writes acknowledged after the damage are lost. An operator's choice after reading rialto check, never a default.",
        |c, v| c.wal_recovery = match v { "strict" => WalRecovery::Strict, "salvage" => WalRecovery::Salvage, _ => return Err(format!("'{v}' is not strict or salvage")) },
        |c| match c.wal_recovery { WalRecovery::Strict => "strict".into(), WalRecovery::Salvage => "salvage".into() }),
    key!("requirepass", true, "Password of the default user (default none). Stored only as a SHA-256 hash in memory.",
        |c, v| c.requirepass = (!v.is_empty()).then(|| v.to_string()),
        |c| c.requirepass.clone().unwrap_or_default()),
    key!("enable-debug-command", false, "Who may run DEBUG (default no): no = nobody, yes = every client, local = clients on the loopback address only. Set at start only (file or flag), as in Redis.",
        |c, v| c.enable_debug_command = DebugGate::parse(v).ok_or_else(|| format!("'{v}' is not no, yes or local"))?,
        |c| c.enable_debug_command.name().into()),
    key!("protected-mode", true, "With no password set, refuse clients from non-loopback addresses (default yes).",
        |c, v| c.protected_mode = parse_bool(v)?, |c| yes_no(c.protected_mode)),
    key!("user", false, "An ACL user, as in Redis ACL SETUSER: 'name on >password ~pattern +@read'. Repeatable (a TOML array in the file).",
        |c, v| c.users.push(v.to_string()), |c| c.users.join("\n")),
    key!("acllog-max-len", true, "Entries the ACL log keeps (ACL LOG: refused commands, keys and channels, failed authentications; default 128). A shorter value takes effect at the next entry.",
        |c, v| c.acllog_max_len = parse_num(v)?, |c| c.acllog_max_len.to_string()),
    key!("maxclients", true, "Most simultaneous clients (default 10000); lowered at start to fit the open-file limit.",
        |c, v| c.maxclients = parse_num(v)?, |c| c.maxclients.to_string()),
    key!("timeout", true, "Close a client idle this many seconds (default 0: never).",
        |c, v| c.timeout = Duration::from_secs(parse_num(v)?), |c| c.timeout.as_secs().to_string()),
    key!("tcp-nodelay", true, "TCP_NODELAY on client sockets (default yes): replies leave at once; no lets the kernel coalesce small replies (fewer packets, up to ~40 ms more latency for a client waiting on one reply).",
        |c, v| c.tcp_nodelay = parse_bool(v)?, |c| yes_no(c.tcp_nodelay)),
    key!("tcp-keepalive", true, "TCP keepalive interval in seconds (default 300; 0 off): finds dead peers.",
        |c, v| c.tcp_keepalive = Duration::from_secs(parse_num(v)?), |c| c.tcp_keepalive.as_secs().to_string()),
    key!("proto-max-bulk-len", true, "Largest bulk string in a request (default 512mb, the most a value can hold).",
        |c, v| c.proto_max_bulk_len = parse_size(v)?, |c| c.proto_max_bulk_len.to_string()),
    key!("max-multibulk-len", true, "Most elements in one request (default 1048576).",
        |c, v| c.max_multibulk_len = parse_size(v)?, |c| c.max_multibulk_len.to_string()),
    key!("client-query-buffer-limit", true, "Most unparsed bytes buffered for one client (default 1gb); beyond it the client is closed.",
        |c, v| c.client_query_buffer_limit = parse_size(v)?, |c| c.client_query_buffer_limit.to_string()),
    key!("output-buffer-limit", true, "Most reply bytes pending for one client (default 1gb, 0 unlimited); beyond it the client is closed.",
        |c, v| c.output_buffer_limit = parse_size(v)?, |c| c.output_buffer_limit.to_string()),
    key!("client-output-buffer-limit", true, "Redis's syntax, '<class> <hard> <soft> <soft-seconds>' per class (default 'normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60'). Enforced for pubsub: a client whose pub/sub messages and invalidations waiting to be written pass the hard limit, or stay over the soft limit for the soft seconds, is disconnected (0 disables a limit). The normal class bounds MONITOR's pending lines (when it is 0 0 0, output-buffer-limit does); replies are bounded by output-buffer-limit, and the replica class is accepted and shown, not enforced.",
        |c, v| set_obuf_limits(c, v)?, |c| get_obuf_limits(c)),
    key!("tracking-table-max-keys", true, "Most keys the client-side caching table remembers (default 1000000; 0 unlimited); beyond it keys are evicted, their readers sent an invalidation.",
        |c, v| c.tracking_table_max_keys = parse_num(v)?, |c| c.tracking_table_max_keys.to_string()),
    key!("databases", false, "Number of databases SELECT can choose (default 16, at most 256).",
        |c, v| { let n: usize = parse_num(v)?; if n == 0 || n > 256 { return Err("must be 1 to 256".into()); } c.databases = n },
        |c| c.databases.to_string()),
    key!("latency-monitor-threshold", true, "Milliseconds from which a command or an expiry pass is recorded by LATENCY LATEST/HISTORY (default 0: off).",
        |c, v| c.latency_monitor_threshold_ms = parse_num(v)?, |c| c.latency_monitor_threshold_ms.to_string()),
    key!("latency-tracking", true, "Record every call's execution time in its command's latency histogram (LATENCY HISTOGRAM, INFO latencystats; default yes). Costs a call an uncontended lock and a counter increment on its connection thread; no keeps the histograms already recorded.",
        |c, v| c.latency_tracking = parse_bool(v)?, |c| yes_no(c.latency_tracking)),
    key!("latency-tracking-info-percentiles", true, "The percentiles of each command's latency that INFO latencystats reports, space-separated, each 0 to 100 (default '50 99 99.9'; '' none).",
        |c, v| c.latency_tracking_info_percentiles = parse_percentiles(v)?,
        |c| c.latency_tracking_info_percentiles.iter().map(|&p| crate::latency_histograms::percentile_label(p)).collect::<Vec<_>>().join(" ")),
    key!("hz", true, "Background expiry passes per second (default 10): more passes delete expired keys sooner for more CPU.",
        |c, v| { let n: u32 = parse_num(v)?; c.hz = n.clamp(1, 500) }, |c| c.hz.to_string()),
    key!("active-expire-batch", true, "Most expired keys one pass deletes per database (default 1000).",
        |c, v| c.active_expire_batch = parse_num::<usize>(v)?.max(1), |c| c.active_expire_batch.to_string()),
    key!("collection-reclaim-batch", true, "Most member keys of deleted, expired or overwritten large collections (hashes, sets) one background pass deletes; passes run hz times a second (default 10000). The client's DEL is O(1) whatever the size: the members become unreachable at once and their space is reclaimed by these passes.",
        |c, v| c.collection_reclaim_batch = parse_num::<usize>(v)?.max(1), |c| c.collection_reclaim_batch.to_string()),
    key!("hash-max-listpack-entries", true, "Most fields a hash keeps packed in its one record (default 128): a read of any fields is one point read, a write rewrites the record. Beyond it, or beyond hash-max-listpack-value, the hash's fields become keys of their own (OBJECT ENCODING hashtable); a hash never goes back. Under a store's prefix hashes are always packed. Also named hash-max-ziplist-entries.",
        |c, v| c.hash_max_listpack_entries = parse_num(v)?, |c| c.hash_max_listpack_entries.to_string()),
    key!("hash-max-ziplist-entries", true, "The same setting as hash-max-listpack-entries.",
        |c, v| c.hash_max_listpack_entries = parse_num(v)?, |c| c.hash_max_listpack_entries.to_string()),
    key!("hash-max-listpack-value", true, "Longest field or value, in bytes, a packed hash holds (default 64); see hash-max-listpack-entries. Also named hash-max-ziplist-value.",
        |c, v| c.hash_max_listpack_value = parse_num(v)?, |c| c.hash_max_listpack_value.to_string()),
    key!("hash-max-ziplist-value", true, "The same setting as hash-max-listpack-value.",
        |c, v| c.hash_max_listpack_value = parse_num(v)?, |c| c.hash_max_listpack_value.to_string()),
    key!("set-max-intset-entries", true, "Most members a set of integers keeps packed in its one record (default 512; OBJECT ENCODING intset, members in numeric order). A member that is no integer, or more members, end intset mode for good; the set then stays packed within set-max-listpack-entries and set-max-listpack-value, else its members become keys of their own (OBJECT ENCODING hashtable either way, as Redis 7.0 names every set that is no intset). A set never goes back. Under a store's prefix sets are always packed.",
        |c, v| c.set_max_intset_entries = parse_num(v)?, |c| c.set_max_intset_entries.to_string()),
    key!("set-max-listpack-entries", true, "Most members a packed set that is no intset holds (default 128); see set-max-intset-entries.",
        |c, v| c.set_max_listpack_entries = parse_num(v)?, |c| c.set_max_listpack_entries.to_string()),
    key!("set-max-listpack-value", true, "Longest member, in bytes, a packed set that is no intset holds (default 64); see set-max-intset-entries.",
        |c, v| c.set_max_listpack_value = parse_num(v)?, |c| c.set_max_listpack_value.to_string()),
    key!("stream-node-max-bytes", true, "Most bytes of a stream node (default 4096; 0: no limit): a stream's entries are grouped in nodes as Redis groups them in listpacks, counted in Redis's listpack bytes, and an approximate trim (MAXLEN ~, MINID ~) removes whole nodes only. Each XADD and XTRIM carries the value it was sent under, so replicas build the same nodes.",
        |c, v| c.stream_node_max_bytes = parse_num(v)?, |c| c.stream_node_max_bytes.to_string()),
    key!("stream-node-max-entries", true, "Most entries of a stream node, deleted ones included (default 100; 0: no limit); see stream-node-max-bytes.",
        |c, v| c.stream_node_max_entries = parse_num(v)?, |c| c.stream_node_max_entries.to_string()),
    key!("zset-max-listpack-entries", true, "Most members a sorted set keeps packed in its one record (default 128), in score order: a read is one point read, a write rewrites the record. Beyond it, or beyond zset-max-listpack-value, each member becomes two keys of its own, one by member and one in score order (OBJECT ENCODING skiplist); a sorted set never goes back. Under a store's prefix sorted sets are always packed. Also named zset-max-ziplist-entries.",
        |c, v| c.zset_max_listpack_entries = parse_num(v)?, |c| c.zset_max_listpack_entries.to_string()),
    key!("zset-max-ziplist-entries", true, "The same setting as zset-max-listpack-entries.",
        |c, v| c.zset_max_listpack_entries = parse_num(v)?, |c| c.zset_max_listpack_entries.to_string()),
    key!("zset-max-listpack-value", true, "Longest member, in bytes, a packed sorted set holds (default 64); see zset-max-listpack-entries. Also named zset-max-ziplist-value.",
        |c, v| c.zset_max_listpack_value = parse_num(v)?, |c| c.zset_max_listpack_value.to_string()),
    key!("zset-max-ziplist-value", true, "The same setting as zset-max-listpack-value.",
        |c, v| c.zset_max_listpack_value = parse_num(v)?, |c| c.zset_max_listpack_value.to_string()),
    key!("list-max-listpack-size", true, "When a list stops being packed in its one record (default -2): a positive value is its most elements; -1 to -5 bound the packed record's size to 4, 8, 16, 32 or 64 KiB. A packed list is read with one point read and rewritten by each write; beyond the bound each element becomes a key of its own, addressed by position (LINDEX, LSET and pushes and pops at either end touch one key). A list never goes back; under a store's prefix lists are always packed. OBJECT ENCODING names every list quicklist, as Redis 7.0 does. Also named list-max-ziplist-size.",
        |c, v| c.list_max_listpack_size = parse_num(v)?, |c| c.list_max_listpack_size.to_string()),
    key!("list-max-ziplist-size", true, "The same setting as list-max-listpack-size.",
        |c, v| c.list_max_listpack_size = parse_num(v)?, |c| c.list_max_listpack_size.to_string()),
    key!("hll-sparse-max-bytes", true, "Longest a HyperLogLog may grow in its sparse encoding, in bytes, its 16-byte header included (default 3000; 0 to LONG_MAX, as Redis takes it): a PFADD or PFMERGE that would make it longer, or needs a register above 32, converts it to the dense encoding (12304 bytes), for good. HyperLogLogs are strings holding Redis's bytes, so this changes what GET returns; each write carries the value in force where it arrived, so every node that applies it writes the same bytes.",
        |c, v| c.hll_sparse_max_bytes = parse_hll_sparse_max(v)?, |c| c.hll_sparse_max_bytes.to_string()),
    key!("list-compress-depth", true, "Accepted for Redis compatibility and kept (default 0); it changes nothing: Rialto compresses whole tables (see compression), not a list's inner nodes.",
        |c, v| c.list_compress_depth = parse_num(v)?, |c| c.list_compress_depth.to_string()),
    key!("slowlog-log-slower-than", true, "Log commands slower than this many microseconds (default 10000; 0 all; negative none).",
        |c, v| c.slowlog_log_slower_than = parse_num(v)?, |c| c.slowlog_log_slower_than.to_string()),
    key!("slowlog-max-len", true, "Entries kept in the slow log (default 128).",
        |c, v| c.slowlog_max_len = parse_num(v)?, |c| c.slowlog_max_len.to_string()),
    key!("lua-time-limit", true, "Milliseconds a script may run before other clients get BUSY replies and SCRIPT KILL may stop it if it has not written (default 5000; 0 never). A script is never stopped by time alone. Also named busy-reply-threshold.",
        |c, v| c.lua_time_limit_ms = parse_num(v)?, |c| c.lua_time_limit_ms.to_string()),
    key!("lua-memory-limit", false, "Most memory the Lua interpreter may hold, for every script, the script cache and the function libraries together (default 1gb; 0 none, which lets a script that allocates without bound take the process down): an allocation beyond it fails the script with 'not enough memory'.",
        |c, v| c.lua_memory_limit = parse_size(v)?, |c| c.lua_memory_limit.to_string()),
    key!("busy-reply-threshold", true, "The same setting as lua-time-limit.",
        |c, v| c.lua_time_limit_ms = parse_num(v)?, |c| c.lua_time_limit_ms.to_string()),
    key!("metrics-bind", false, "Address of the HTTP operations endpoint (default 127.0.0.1).",
        |c, v| c.metrics_bind = parse_ip(v)?, |c| c.metrics_bind.to_string()),
    key!("metrics-port", false, "Port of the HTTP endpoint serving /metrics (Prometheus), /livez, /readyz, the dashboard (/) and its data (/api/status) (default 0: off).",
        |c, v| c.metrics_port = parse_num(v)?, |c| c.metrics_port.to_string()),
    key!("threads", false, "Threads serving connections (default 0: half the CPUs, at least 1). More serve more pipelined reads at once; fewer cost fewer cross-thread wake-ups per request.",
        |c, v| c.threads = parse_num(v)?, |c| c.threads.to_string()),
    key!("cache-size", false, "Block cache of table blocks, shared by all reads (default auto: a quarter of the auto cache budget, 1/8 of the memory available at start, at least 64mb; 256mb where the memory is unknown). A full cache takes a block a read missed only on its second miss in a while, so reads spread over far more data than it holds do not churn it.",
        |c, v| c.cache_size = CacheSize::parse(v)?, |c| c.cache_size.to_string()),
    key!("row-cache-size", false, "Cache of recently read values by key (default auto: three quarters of the auto cache budget, 1/8 of the memory available at start, at least 64mb; 256mb where the memory is unknown; 0 off): a hot key is answered from one hash lookup instead of the memtable and table blocks; every write invalidates its keys there. Admits as the block cache does.",
        |c, v| c.row_cache_size = CacheSize::parse(v)?, |c| c.row_cache_size.to_string()),
    key!("row-cache-warm", false, "Warm the row cache up (default yes): once writes pause for a second and no flush or compaction is due, a background pass reads values in key order into the row cache's free room, never evicting, so a dataset that fits there is served from it from the start (after a load, a push or a restart). A push's swap (and a rollback) evicts the rows of the version swapped out, so the pass warms the new one. A pass runs again only after new data of 1/32 of the row cache; its price is that scan, up to the row cache's size. no: values enter the row cache only when read.",
        |c, v| c.row_cache_warm = parse_bool(v)?, |c| yes_no(c.row_cache_warm)),
    key!("idle-compaction-ms", false, "Once writes pause this many milliseconds, compact what TRIAD deferred while they flowed (default 1000; 0 off): commit-log tables are rewritten into ordinary tables and deferred L0 compaction runs, so reads after a load find a compacted tree instead of sharing the CPU with that work. A shorter pause between write bursts then pays compactions TRIAD would have deferred.",
        |c, v| c.idle_compaction = Duration::from_millis(parse_num(v)?), |c| c.idle_compaction.as_millis().to_string()),
    key!("background-nice", false, "CPU niceness of the flush and compaction threads, 0 to 19 (default 0). Higher leaves a busy core to the connections first, so reads and commits do not wait behind a compaction for a core; the price is slower background work when the cores are busy, which write slowdowns and stalls then pay for.",
        |c, v| c.background_nice = match parse_num::<i32>(v)? { n @ 0..=19 => n, _ => return Err(format!("'{v}' is not a niceness from 0 to 19")) },
        |c| c.background_nice.to_string()),
    key!("write-buffer-size", false, "Memtable size before it is flushed to a table (default 64mb): larger absorbs more overwrites and makes recovery replay longer.",
        |c, v| c.write_buffer_size = parse_size(v)?.max(1 << 20), |c| c.write_buffer_size.to_string()),
    key!("compression", true, "Block compression of the tables the engine writes from streamed writes (flushes and compactions): none (default), lz4 or zstd (level 3). lz4 about halves typical data for little CPU; zstd makes it smaller still and costs more CPU on every table write and on every block a read loads from disk (blocks in the block cache are kept decompressed). It is also the default of STORE CREATE's COMPRESSION; each store keeps its own, used for its pushed versions and its streamed writes (STORE CONFIG changes it). CONFIG SET applies to tables written after it; tables already written keep their codec until a compaction rewrites them.",
        |c, v| c.compression = rialto_lsm::Compression::parse(v.trim()).ok_or_else(|| format!("'{v}' is not none, lz4 or zstd"))?,
        |c| c.compression.name().into()),
    key!("triad", false, "TRIAD techniques of the storage engine (default adaptive): off, mem (hot keys stay in memory at flushes), disk (L0 compaction deferred while L0 and L1 share few keys), log (a flush indexes the WAL segment instead of copying its values), on (all three), adaptive (all three, switched and tuned at run time by a workload characterizer over windows of 10,000 operations). The techniques save flush and compaction work on skewed and write-heavy workloads; off is the classic leveled LSM.",
        |c, v| c.triad = TriadMode::parse(v).ok_or_else(|| format!("'{v}' is not one of off, mem, disk, log, on, adaptive"))?, |c| c.triad.name().to_string()),
    key!("merger-max-wait-us", false, "Longest a journal sync waits for more writes to join it, in microseconds (default 100).",
        |c, v| c.merger_max_wait = Duration::from_micros(parse_num(v)?), |c| c.merger_max_wait.as_micros().to_string()),
    key!("merger-max-group-bytes", false, "Largest merged journal write (default 4mb).",
        |c, v| c.merger_max_group_bytes = parse_size(v)?.max(4096), |c| c.merger_max_group_bytes.to_string()),
    key!("merger-spin-us", false, "How long the merger and syncer threads poll for work before sleeping, in microseconds (default 50): polling saves a thread wake-up per hand-off but takes CPU from connections while writes flow.",
        |c, v| c.merger_spin = Duration::from_micros(parse_num(v)?), |c| c.merger_spin.as_micros().to_string()),
    key!("merger-wait-spin-us", false, "How long the syncer polls for the writers it waits for (up to merger-max-wait-us) before sleeping, in microseconds (default 300; 0 always sleeps): polling saves the wake-up after the last of them, at the cost of CPU while writes flow.",
        |c, v| c.merger_wait_spin = Duration::from_micros(parse_num(v)?), |c| c.merger_wait_spin.as_micros().to_string()),
    key!("merger-poll-preempted-us", false, "A polling yield at least this long, in microseconds, means another thread (a compaction, another process) holds the CPU for its time slice; polling then stops for 10 ms, doubled while the contention lasts (default 500; 0 never stops polling): polling next to a CPU-bound thread makes a commit wait for that thread's time slice.",
        |c, v| c.merger_poll_preempted = Duration::from_micros(parse_num(v)?), |c| c.merger_poll_preempted.as_micros().to_string()),
    key!("merger-poll-max-cooldown-ms", false, "Longest pause of polling after preempted yields, in milliseconds (default 1000): each probe after a pause costs a commit one time slice if the CPU is still contended; longer pauses cost less under steady contention and resume polling later once it ends.",
        |c, v| c.merger_poll_max_cooldown = Duration::from_millis(parse_num::<u64>(v)?.max(1)), |c| c.merger_poll_max_cooldown.as_millis().to_string()),
    key!("merger-inline", false, "Execute merged write groups on the connection threads that submit them (default yes): saves a thread hand-off per group; no runs them on a merger thread of their own, so a write stall never holds a connection thread.",
        |c, v| c.merger_inline = parse_bool(v)?, |c| yes_no(c.merger_inline)),
    key!("push-memory-limit", false, "Memory one batch push may use to sort its records before spilling sorted runs to disk (default 256mb): more memory means fewer runs to merge and less temporary disk traffic.",
        |c, v| c.push_memory_limit = parse_size(v)?.max(1 << 20), |c| c.push_memory_limit.to_string()),
    key!("push-threads", false, "Threads of the ingestion pool shared by every batch push (default 1): pushes sort, write tables and swap on it, never on connection threads; more threads let concurrent pushes progress together at the cost of CPU taken from serving.",
        |c, v| c.push_threads = parse_num::<usize>(v)?.max(1), |c| c.push_threads.to_string()),
    key!("push-nice", false, "CPU priority of the ingestion pool's threads and of the sort and table-writing threads they start: a niceness 0..=19 (default 19) or idle (Linux SCHED_IDLE, below every niceness; niceness 19 where it is refused). A push runs on the CPU that serving leaves, so reads keep their latency and a push on a busy server takes longer; 0 gives pushes the same share as serving. With idle, a request thread that wakes preempts the push at once and is placed on a CPU running only the push as on an idle one (at 19 it may first wait out the push's time slice), but a push thread holding a lock others need (the engine's manifest lock while it links the new tables; the merger's executor or sync role when it commits the swap, or for the writes of the pushing connection, which stays on the bulk thread) runs only when a CPU is free, so on a busy server writers can wait behind it; and on a server whose CPUs are always busy a push crawls (about 0.3% of a CPU against 1.5% at 19). The bulk connection thread, where a connection moves once it begins a push, runs at this priority too.",
        |c, v| c.push_nice = parse_nice(v)?, |c| c.push_nice.to_string()),
    key!("push-page-cache", false, "How much of a pushed version's tables a push leaves in the OS page cache as it writes them (default auto: half of the memory available, within the memory cgroup's limit if any, when the push starts writing tables; all; none; or a size such as 4gb). Tables beyond are written around the cache (O_DIRECT), as RocksDB's SstFileWriter drops its pages: the push then takes no fresh memory for them and skips the copy into the cache (faster, and it evicts none of the version being served), but the first reads of those keys after the swap go to the disk. all keeps a version that fits in memory warm for its first reads.",
        |c, v| c.push_page_cache = parse_push_page_cache(v)?, |c| c.push_page_cache.config_value()),
    key!("push-min-records", true, "Fewest records a push must load to be swapped in (default 1: an empty input is refused, and the current version keeps serving). A push can say otherwise at its begin (PUSH BEGIN ... MIN-RECORDS n, rialto push --min-records or --allow-empty).",
        |c, v| c.push_min_records = parse_num(v)?, |c| c.push_min_records.to_string()),
    key!("push-max-shrink", true, "Most a push's record count may fall below the current version's, in percent of it (default 50; 100 no limit): a push of fewer than half the records is refused, and the current version keeps serving. A push can say otherwise at its begin (PUSH BEGIN ... MAX-SHRINK p, rialto push --max-shrink).",
        |c, v| { let p: u32 = parse_num(v)?; if p > 100 { return Err("must be a percentage, 0 to 100".into()); } c.push_max_shrink = p },
        |c| c.push_max_shrink.to_string()),
    key!("store-max-keep", true, "The most versions a store may keep (STORE CREATE and STORE CONFIG ... KEEP n; default 10). Each kept version receives every write streamed into the store (a SET to a store keeping n versions writes n entries) and holds its pushed data on disk until it is pushed out or a rollback goes past it. Lowering it leaves stores that keep more as they are.",
        |c, v| { let n: u32 = parse_num(v)?; if n == 0 { return Err("a store keeps at least its current version: 1 or more".into()); } c.store_max_keep = n },
        |c| c.store_max_keep.to_string()),
    key!("store-maintenance-interval-ms", false, "How often retired store versions are removed and real-time logs pruned to their rewind window, in milliseconds (default 1000).",
        |c, v| c.store_maintenance_interval = Duration::from_millis(parse_num::<u64>(v)?.max(10)), |c| c.store_maintenance_interval.as_millis().to_string()),
    key!("shutdown-timeout", true, "Seconds a graceful shutdown waits for clients' in-flight commands (default 10).",
        |c, v| c.shutdown_timeout = Duration::from_secs(parse_num(v)?), |c| c.shutdown_timeout.as_secs().to_string()),
    key!("cluster-enabled", false, "Cluster mode on Apache Kafka (default no): the node applies the partitions of the log topic, masters those the Kafka group gives it, and serves partition p at port + p with the Redis Cluster contract (MOVED, CLUSTER SLOTS). Needs cluster-kafka and cluster-node-id.",
        |c, v| c.cluster.enabled = parse_bool(v)?, |c| yes_no(c.cluster.enabled)),
    key!("cluster-kafka", false, "Kafka bootstrap servers, host:port[,host:port...] (cluster mode).",
        |c, v| c.cluster.kafka = v.to_string(), |c| c.cluster.kafka.clone()),
    key!("cluster-node-id", false, "This node's id, unique in the cluster and stable across restarts, 1 to 4294967295 (cluster mode).",
        |c, v| c.cluster.node_id = parse_num(v)?, |c| c.cluster.node_id.to_string()),
    key!("cluster-announce-ip", false, "The address clients are told to reach this node at in MOVED and CLUSTER replies (default: the first bind address).",
        |c, v| c.cluster.announce_ip = v.to_string(), |c| c.cluster.announce_ip.clone()),
    key!("cluster-topic", false, "The log's Kafka topic (default rialto); mastership uses <topic>.masters. Created on first start if missing.",
        |c, v| c.cluster.topic = v.to_string(), |c| c.cluster.topic.clone()),
    key!("cluster-partitions", false, "Log partitions, each a contiguous range of the 16384 hash slots served at port + partition (default 3). Fixed once the topic exists: every node must agree.",
        |c, v| c.cluster.partitions = parse_num(v)?, |c| c.cluster.partitions.to_string()),
    key!("cluster-replication-factor", false, "Kafka replicas of each partition when a node creates the topics (default 3).",
        |c, v| c.cluster.replication_factor = parse_num(v)?, |c| c.cluster.replication_factor.to_string()),
    key!("cluster-node-timeout", false, "Milliseconds a silent node keeps its masterships before Kafka's group hands them to others (default 3000; the brokers' group.min.session.timeout.ms must allow it).",
        |c, v| c.cluster.node_timeout = Duration::from_millis(parse_num(v)?), |c| c.cluster.node_timeout.as_millis().to_string()),
    key!("cluster-write-timeout", false, "Milliseconds a write waits for the log before it fails (default 10000; it may still be applied after).",
        |c, v| c.cluster.write_timeout = Duration::from_millis(parse_num(v)?), |c| c.cluster.write_timeout.as_millis().to_string()),
    key!("cluster-linger-ms", false, "Milliseconds a write waits for others to share its Kafka produce request (default 1): more batches fewer, larger requests (less broker CPU per write) at that much more latency.",
        |c, v| c.cluster.linger = Duration::from_millis(parse_num(v)?), |c| c.cluster.linger.as_millis().to_string()),
    key!("cluster-script-max-instructions", true, "Lua instructions a script run through the cluster's log may execute before it stops with an error, at the same instruction on every replica (default 500000000, a few seconds; 0: no limit). The master writes the limit into each script's record, so replicas configured otherwise still agree. A script past lua-time-limit cannot be killed in cluster mode: this bound replaces SCRIPT KILL.",
        |c, v| c.cluster.script_max_instructions = parse_num(v)?, |c| c.cluster.script_max_instructions.to_string()),
    key!("cluster-push-timeout", true, "Milliseconds a push's COMMIT in cluster mode waits for every live node to load the pushed version, and then for every partition to swap it in (default 600000); past it the push is aborted, or, once the swap is decided, the reply says it is under way.",
        |c, v| c.cluster.push_timeout = Duration::from_millis(parse_num::<u64>(v)?.max(1)), |c| c.cluster.push_timeout.as_millis().to_string()),
    key!("replica-max-lag-ms", true, "A replica that has not caught up with its partition's log for this long redirects reads to the master (default 10000).",
        |c, v| c.cluster.replica_max_lag = Duration::from_millis(parse_num(v)?), |c| c.cluster.replica_max_lag.as_millis().to_string()),
    key!("cluster-handover-wait-ms", true, "Milliseconds a command is held while its slot's master is changing at this node (it is handing the partition over, or has not applied its own claim yet) before it is answered TRYAGAIN (default 1000; 0: at once). Held, it is answered MOVED or served once the new master is known.",
        |c, v| c.cluster.handover_wait = Duration::from_millis(parse_num(v)?), |c| c.cluster.handover_wait.as_millis().to_string()),
    key!("loglevel", true, "Log level: error, warn, info, debug, trace (default info), or tracing directives such as info,rialto_lsm=debug. At start RUST_LOG overrides it; CONFIG SET changes it at run time.",
        |c, v| { if v.trim().is_empty() { return Err("needs a level".into()); } c.log_level = v.to_string() }, |c| c.log_level.clone()),
    key!("log-format", false, "Log format: text or json (default text).",
        |c, v| { if v != "text" && v != "json" { return Err("must be text or json".into()); } c.log_format = v.to_string() },
        |c| c.log_format.clone()),
    key!("maxmemory", true, "Bytes the allocator may have in use before commands that may grow the data (SET, INCR... Redis's deny-oom commands, and any command queued in MULTI) are refused with Redis's OOM error (default 0: no limit). Nothing is evicted, as with Redis's noeviction policy: Rialto keeps its data on disk, and its memory is the caches and memtables sized by their own keys. The bytes in use are read at most every 100 ms.",
        |c, v| c.maxmemory = parse_size(v)? as u64, |c| c.maxmemory.to_string()),
    key!("maxmemory-clients", true, "Bytes every client's buffers may hold together (query buffers, reply buffers, commands queued by MULTI, pub/sub messages waiting), as a size or a percentage of maxmemory (default 0: no limit; a percentage with maxmemory 0 is no limit). Past it the clients holding the most are closed, largest first, until the rest are under it (INFO evicted_clients); a client holding 32 KiB or less (an idle connection's buffers), or marked CLIENT NO-EVICT, never is.",
        |c, v| c.maxmemory_clients = ClientsLimit::parse(v)?, |c| c.maxmemory_clients.to_string()),
    key!("maxmemory-policy", true, "For Redis tools: always noeviction (no key is ever evicted).",
        |_c, v| { if !v.eq_ignore_ascii_case("noeviction") { return Err("no key is ever evicted: the policy can only be noeviction".into()); } },
        |_c| "noeviction".into()),
    key!("min-replicas-to-write", true, "Redis's guard against writes a master may lose (default 0: off): with N above 0 and min-replicas-max-lag above 0, commands that may write (and EXEC of a transaction holding one, scripts that declare writes or call a write command) are refused with NOREPLICAS while fewer than N good replicas are connected. A standalone Rialto node has no replicas, so N above 0 makes it refuse every write; reads go on. Not in cluster mode, where a write is acknowledged once the Kafka log holds it (cluster-replication-factor).",
        |c, v| { let n: u32 = parse_num(v)?; if n > 0 && c.cluster.enabled { return Err(NOT_IN_CLUSTER.into()); } c.min_replicas_to_write = n },
        |c| c.min_replicas_to_write.to_string()),
    key!("min-replicas-max-lag", true, "Seconds since its last acknowledgement within which a replica counts as good for min-replicas-to-write (default 10; 0 turns min-replicas-to-write off, as in Redis).",
        |c, v| c.min_replicas_max_lag = parse_num(v)?, |c| c.min_replicas_max_lag.to_string()),
    constant!("save", "", true, "Rialto persists every write; snapshots do not exist",
        "For Redis tools: always empty (no snapshots; Rialto persists every write). Setting it to the empty string, as tools and test harnesses do to turn snapshots off, succeeds; any schedule is refused."),
    Key {
        name: "aof-use-rdb-preamble",
        mutable: true,
        doc: "For Redis tools and test suites: Rialto writes no append-only file, so there is no preamble to choose; yes or no is accepted and changes nothing (reads yes).",
        set: |_, v| match v.trim().to_ascii_lowercase().as_str() {
            "yes" | "no" => Ok(()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        get: |_| "yes".into(),
    },
    constant!("appendonly", "yes", false, "the journal is always on",
        "Read-only, for Redis tools: always yes (the journal is the database)."),
    constant!("daemonize", "no", false, "Rialto runs in the foreground",
        "Read-only, for Redis tools: always no (Rialto runs in the foreground; a supervisor such as systemd runs it as a service)."),
    constant!("replicaof", "", false, NOT_A_REPLICA,
        "Read-only, for Redis tools: always empty (no node follows a master over Redis's replication protocol; in cluster mode replicas apply the Kafka log, and ROLE and CLUSTER NODES show who masters what)."),
    constant!("slaveof", "", false, NOT_A_REPLICA, "Read-only: another name of replicaof."),
];

/// Why `replicaof` cannot be set.
const NOT_A_REPLICA: &str = "no node follows a master over Redis's replication protocol";

/// The key named `name` (case-insensitive).
pub fn key(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name.eq_ignore_ascii_case(name))
}

impl Config {
    /// Sets `name` from its text form.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let k = key(name).ok_or_else(|| ConfigError::Unknown(name.to_string()))?;
        (k.set)(self, value).map_err(|reason| ConfigError::Invalid {
            key: k.name.to_string(),
            reason,
        })
    }

    /// The text form of `name`.
    pub fn get(&self, name: &str) -> Option<String> {
        key(name).map(|k| (k.get)(self))
    }

    /// Applies a TOML file: top-level keys named as [`KEYS`]; strings, integers, booleans, and
    /// arrays (for repeatable keys such as `user`).
    pub fn apply_toml(&mut self, path: &str, text: &str) -> Result<(), ConfigError> {
        let file_err = |reason: String| ConfigError::File {
            path: path.to_string(),
            reason,
        };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            file_err(e.to_string().lines().next().unwrap_or("parse error").into())
        })?;
        for (name, value) in table {
            let values = match value {
                toml::Value::Array(items) => items,
                other => vec![other],
            };
            for v in values {
                let text = match v {
                    toml::Value::String(s) => s,
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::Boolean(b) => yes_no(b),
                    toml::Value::Float(f) => f.to_string(),
                    other => {
                        return Err(file_err(format!(
                            "'{name}' has a {} value; use a string, number or boolean",
                            other.type_str()
                        )))
                    }
                };
                self.set(&name, &text)
                    .map_err(|e| file_err(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// The text of configuration file `old` rewritten to hold this configuration, as Redis's
    /// CONFIG REWRITE does: a key the file sets gets the running value in place (comments and
    /// layout kept); a key the file leaves out is added only when its running value is not the
    /// default. `users`, when given, replaces the file's `user` entries (the ACL changed since
    /// start); otherwise they stay as written.
    pub fn rewrite_toml(&self, old: &str, users: Option<&[String]>) -> Result<String, String> {
        let mut doc: toml_edit::DocumentMut = old.parse().map_err(|e: toml_edit::TomlError| {
            e.to_string()
                .lines()
                .next()
                .unwrap_or("parse error")
                .to_string()
        })?;
        let defaults = Config::default();
        for k in KEYS {
            if k.name == "user" {
                continue;
            }
            let now = (k.get)(self);
            let written = doc.get(k.name).and_then(toml_edit::Item::as_value);
            let same = match written {
                Some(v) => toml_text(v).as_deref() == Some(now.as_str()),
                None => now == (k.get)(&defaults),
            };
            if !same {
                let mut v = toml_value(&now, written);
                if let Some(w) = written {
                    // A comment after the old value stays after the new one.
                    *v.decor_mut() = w.decor().clone();
                }
                doc[k.name] = toml_edit::value(v);
            }
        }
        if let Some(users) = users {
            let mut arr = toml_edit::Array::new();
            for u in users {
                arr.push(u.as_str());
            }
            if arr.is_empty() {
                doc.remove("user");
            } else {
                doc["user"] = toml_edit::value(arr);
            }
        }
        Ok(doc.to_string())
    }

    /// Applies `--key value` pairs from the command line.
    pub fn apply_flags(&mut self, args: &[String]) -> Result<(), ConfigError> {
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let Some(name) = flag.strip_prefix("--") else {
                return Err(ConfigError::Invalid {
                    key: flag.clone(),
                    reason: "expected --option value".into(),
                });
            };
            let (name, value) = match name.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => {
                    let v = it.next().ok_or_else(|| ConfigError::Invalid {
                        key: name.to_string(),
                        reason: "missing value".into(),
                    })?;
                    (name.to_string(), v.clone())
                }
            };
            self.set(&name, &value)?;
        }
        Ok(())
    }

    /// Checks combinations that single keys cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.bind.is_empty() {
            return Err(ConfigError::Invalid {
                key: "bind".into(),
                reason: "needs at least one address".into(),
            });
        }
        if self.cluster.enabled {
            let bad = |key: &str, reason: &str| {
                Err(ConfigError::Invalid {
                    key: key.into(),
                    reason: reason.into(),
                })
            };
            if self.cluster.kafka.trim().is_empty() {
                return bad(
                    "cluster-kafka",
                    "cluster mode needs the Kafka bootstrap servers",
                );
            }
            if self.cluster.node_id == 0 {
                return bad("cluster-node-id", "cluster mode needs a node id from 1 up");
            }
            if self.cluster.partitions == 0 || self.cluster.partitions > 16_384 {
                return bad("cluster-partitions", "must be 1 to 16384");
            }
            if self.port == 0 || u32::from(self.port) + self.cluster.partitions > 65_536 {
                return bad("port", "in cluster mode, port to port + cluster-partitions - 1 must be valid ports (not 0)");
            }
            if self.cluster.replication_factor == 0 {
                return bad("cluster-replication-factor", "must be at least 1");
            }
            if self.cluster.node_timeout.is_zero() || self.cluster.write_timeout.is_zero() {
                return bad("cluster-node-timeout", "timeouts must be at least 1 ms");
            }
            if self.min_replicas_to_write > 0 {
                return bad("min-replicas-to-write", NOT_IN_CLUSTER);
            }
        }
        if self.proto_max_bulk_len < 1024 {
            return Err(ConfigError::Invalid {
                key: "proto-max-bulk-len".into(),
                reason: "must be at least 1kb".into(),
            });
        }
        Ok(())
    }
}

/// The option list for `rialto serve --help`.
pub fn help_text() -> String {
    let mut s = String::from(
        "Options (each also a key of the TOML file given with --config, and of CONFIG GET/SET\n\
         where marked [runtime]):\n",
    );
    for k in KEYS {
        let _ = writeln!(
            s,
            "  --{} <value>{}\n      {}",
            k.name,
            if k.mutable { "  [runtime]" } else { "" },
            k.doc
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enable_debug_command_is_set_at_start_only() {
        let mut c = Config::default();
        assert_eq!(c.enable_debug_command, DebugGate::No);
        c.apply_flags(&["--enable-debug-command".into(), "LOCAL".into()])
            .expect("flag");
        assert_eq!(c.get("enable-debug-command").as_deref(), Some("local"));
        assert!(c.set("enable-debug-command", "sometimes").is_err());
        assert!(!key("enable-debug-command").expect("key").mutable);
        let local = DebugGate::Local;
        assert!(local.allows(IpAddr::from([127, 0, 0, 1])));
        assert!(local.allows("::1".parse().expect("ip")));
        assert!(!local.allows(IpAddr::from([127, 0, 0, 2])));
        assert!(!local.allows(IpAddr::from([10, 0, 0, 1])));
        assert!(DebugGate::Yes.allows(IpAddr::from([10, 0, 0, 1])));
        assert!(!DebugGate::No.allows(IpAddr::from([127, 0, 0, 1])));
    }

    #[test]
    fn min_replicas_refuse_writes_standalone_only() {
        let mut c = Config::default();
        assert!(!c.lacks_good_replicas());
        c.set("min-replicas-to-write", "2").expect("standalone");
        assert!(c.lacks_good_replicas());
        // Redis's rule: a max lag of 0 turns the check off.
        c.set("min-replicas-max-lag", "0").expect("lag");
        assert!(!c.lacks_good_replicas());
        assert!(c.set("min-replicas-to-write", "-1").is_err());

        // Cluster mode acknowledges writes in the Kafka log: refused at run time and at start,
        // whichever order the file or flags give.
        let mut c = Config::default();
        c.cluster.enabled = true;
        assert!(c.set("min-replicas-to-write", "1").is_err());
        c.set("min-replicas-to-write", "0").expect("0 is off");
        let mut c = Config::default();
        c.apply_flags(&[
            "--min-replicas-to-write".into(),
            "1".into(),
            "--cluster-enabled".into(),
            "yes".into(),
            "--cluster-kafka".into(),
            "k:9092".into(),
            "--cluster-node-id".into(),
            "1".into(),
        ])
        .expect("flags");
        let e = c.validate().unwrap_err();
        assert!(e.to_string().contains("min-replicas-to-write"), "{e}");
    }

    #[test]
    fn latency_percentiles_read_and_print_as_redis() {
        let mut c = Config::default();
        assert_eq!(
            c.get("latency-tracking-info-percentiles").as_deref(),
            Some("50 99 99.9")
        );
        c.set("latency-tracking-info-percentiles", "0.0 50.0 100.0")
            .unwrap();
        assert_eq!(
            c.get("latency-tracking-info-percentiles").as_deref(),
            Some("0 50 100")
        );
        c.set("latency-tracking-info-percentiles", "1e1 0x10 99.99999999")
            .unwrap();
        assert_eq!(
            c.latency_tracking_info_percentiles,
            vec![10.0, 16.0, 99.99999999]
        );
        assert_eq!(
            c.get("latency-tracking-info-percentiles").as_deref(),
            Some("10 16 100")
        );
        c.set("latency-tracking-info-percentiles", "").unwrap();
        assert!(c.latency_tracking_info_percentiles.is_empty());
        assert_eq!(
            c.get("latency-tracking-info-percentiles").as_deref(),
            Some("")
        );
        for (bad, why) in [
            ("10.0 50.0 a", "Invalid"),
            ("  1.5   2  ", "Invalid"),
            ("1  2", "Invalid"),
            ("nan", "Invalid"),
            ("1e999", "Invalid"),
            ("10.0 50.0 101.0", "should sit between [0.0,100.0]"),
            ("-1", "should sit between [0.0,100.0]"),
            ("inf", "should sit between [0.0,100.0]"),
        ] {
            let e = c.set("latency-tracking-info-percentiles", bad).unwrap_err();
            assert!(e.to_string().contains(why), "{bad:?}: {e}");
        }
        assert!(c.latency_tracking);
        let e = c.set("latency-tracking", "maybe").unwrap_err();
        assert!(
            e.to_string().ends_with("argument must be 'yes' or 'no'"),
            "{e}"
        );
        c.set("latency-tracking", "no").unwrap();
        assert_eq!(c.get("latency-tracking").as_deref(), Some("no"));
    }

    #[test]
    fn sizes_parse_as_redis_memtoll() {
        assert_eq!(parse_size("512mb"), Ok(512 << 20));
        assert_eq!(parse_size("1k"), Ok(1000));
        assert_eq!(parse_size("1KB"), Ok(1024));
        assert_eq!(parse_size("77"), Ok(77));
        assert!(parse_size("1tb").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999999999gb").is_err());
    }

    #[test]
    fn compression_takes_a_codec_and_changes_at_run_time() {
        use rialto_lsm::Compression;
        let mut c = Config::default();
        assert_eq!(c.get("compression").as_deref(), Some("none"));
        for (v, want) in [("lz4", Compression::Lz4), ("ZSTD", Compression::Zstd)] {
            c.set("compression", v).unwrap();
            assert_eq!(c.compression, want);
        }
        assert_eq!(c.get("compression").as_deref(), Some("zstd"));
        assert!(c.set("compression", "snappy").is_err());
        assert_eq!(c.compression, Compression::Zstd);
        assert!(key("compression").expect("key").mutable);
        c.apply_toml("t.toml", "compression = \"lz4\"").unwrap();
        assert_eq!(c.compression, Compression::Lz4);
    }

    #[test]
    fn push_page_cache_takes_auto_all_none_or_a_size() {
        use rialto_keyspace::PushPageCache;
        let mut c = Config::default();
        assert_eq!(c.push_page_cache, PushPageCache::Auto);
        assert_eq!(c.push_page_cache.budget(Some(8 << 30)), 4 << 30);
        assert_eq!(c.push_page_cache.budget(None), u64::MAX);
        for (v, want, shown) in [
            ("none", PushPageCache::Bytes(0), "none"),
            ("ALL", PushPageCache::All, "all"),
            ("2gb", PushPageCache::Bytes(2 << 30), "2147483648"),
            ("auto", PushPageCache::Auto, "auto"),
        ] {
            c.set("push-page-cache", v).unwrap();
            assert_eq!(c.push_page_cache, want, "{v}");
            assert_eq!(c.push_page_cache.config_value(), shown);
            assert_eq!(parse_push_page_cache(shown), Ok(want));
        }
        assert_eq!(PushPageCache::All.budget(Some(1)), u64::MAX);
        assert_eq!(PushPageCache::Bytes(0).budget(Some(1 << 30)), 0);
        for bad in ["", "some", "-1", "1tb"] {
            assert!(c.set("push-page-cache", bad).is_err(), "{bad:?}");
        }
        assert_eq!(c.push_page_cache, PushPageCache::Auto);
    }

    #[test]
    fn push_nice_takes_only_what_an_unprivileged_thread_may_set() {
        use rialto_io::ThreadPriority;
        let mut c = Config::default();
        assert_eq!(c.push_nice, ThreadPriority::Nice(19));
        c.set("push-nice", "0").unwrap();
        assert_eq!(c.push_nice, ThreadPriority::Nice(0));
        for bad in ["-1", "20", "low", ""] {
            assert!(c.set("push-nice", bad).is_err(), "{bad:?}");
        }
        assert_eq!(c.push_nice, ThreadPriority::Nice(0));
        c.set("push-nice", "IDLE").unwrap();
        assert_eq!(c.push_nice, ThreadPriority::Idle);
        assert_eq!(c.push_nice.to_string(), "idle");
    }

    #[test]
    fn every_key_round_trips_its_default() {
        let mut c = Config::default();
        for k in KEYS {
            let v = (k.get)(&c);
            if k.name == "save"
                || k.name == "appendonly"
                || k.name == "user"
                || k.name == "aof-use-rdb-preamble"
            {
                continue;
            }
            // requirepass's empty default means "none".
            c.set(k.name, &v)
                .unwrap_or_else(|e| panic!("{}: {e}", k.name));
            assert_eq!((k.get)(&c), v, "{}", k.name);
        }
    }

    #[test]
    fn file_then_flags_take_precedence() {
        let mut c = Config::default();
        c.apply_toml(
            "t.toml",
            "port = 7000\nappendfsync = \"everysec\"\nprotected-mode = false\nuser = [\"a on\", \"b on\"]\n",
        )
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.appendfsync, Durability::EverySec);
        assert!(!c.protected_mode);
        assert_eq!(c.users.len(), 2);
        c.apply_flags(&["--port".into(), "7001".into(), "--appendfsync=no".into()])
            .unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.appendfsync, Durability::Never);
    }

    #[test]
    fn auto_caches_share_an_eighth_of_the_memory_available() {
        let c = Config::default();
        let gib = 1u64 << 30;
        // 24 GiB: 3 GiB of caches, a quarter of it for blocks.
        assert_eq!(c.cache_sizes(Some(24 * gib)), (768 << 20, 2304 << 20));
        // Small machines still get the minimum; unknown memory gets the fixed default.
        assert_eq!(c.cache_sizes(Some(gib)), (64 << 20, 96 << 20));
        assert_eq!(c.cache_sizes(None), (256 << 20, 256 << 20));
        let mut c = Config::default();
        c.apply_flags(&[
            "--cache-size".into(),
            "16mb".into(),
            "--row-cache-size".into(),
            "0".into(),
        ])
        .unwrap();
        assert_eq!(c.cache_sizes(Some(24 * gib)), (16 << 20, 0));
        assert_eq!(CacheSize::parse("AUTO"), Ok(CacheSize::Auto));
        assert!(CacheSize::parse("lots").unwrap_err().contains("or auto"));
    }

    #[test]
    fn bad_options_are_one_line_errors() {
        let mut c = Config::default();
        let e = c.apply_flags(&["--nope".into(), "1".into()]).unwrap_err();
        assert!(e.to_string().contains("unknown option 'nope'"));
        let e = c.apply_flags(&["--port".into(), "x".into()]).unwrap_err();
        assert!(e.to_string().contains("'x' is not a valid number"));
        let e = c.apply_flags(&["--port".into()]).unwrap_err();
        assert!(e.to_string().contains("missing value"));
        let e = c.apply_toml("f", "port = [").unwrap_err();
        assert!(e.to_string().starts_with("config file f:"));
        assert!(!e.to_string().contains('\n'));
        let e = c.apply_toml("f", "port = { a = 1 }").unwrap_err();
        assert!(e.to_string().contains("table"));
    }

    /// CONFIG REWRITE's text: values the file sets change in place with their comments, keys
    /// left at their defaults stay out, and reading the new text back gives the running values.
    #[test]
    fn rewrite_keeps_comments_and_reads_back_as_the_running_configuration() {
        let file = "# ours\nport = 7000 # the port\ntimeout = 5\nprotected-mode = true\n";
        let mut running = Config::default();
        running.apply_toml("f", file).unwrap();
        running.set("timeout", "30").unwrap();
        running.set("protected-mode", "no").unwrap();
        running.set("maxmemory", "1mb").unwrap();
        let users = vec!["default on nopass ~* &* +@all".to_string()];
        let text = running.rewrite_toml(file, Some(&users)).unwrap();
        assert!(
            text.starts_with("# ours\nport = 7000 # the port\ntimeout = 30\n"),
            "{text}"
        );
        assert!(text.contains("protected-mode = false\n"), "{text}");
        assert!(text.contains("maxmemory = 1048576\n"), "{text}");
        assert!(!text.contains("slowlog"), "defaults stay out: {text}");
        let mut back = Config::default();
        back.apply_toml("f", &text).unwrap();
        for k in KEYS {
            if k.name != "user" {
                assert_eq!(back.get(k.name), running.get(k.name), "{}", k.name);
            }
        }
        assert_eq!(back.users, users);
        // Nothing changed: the same text.
        assert_eq!(back.rewrite_toml(&text, None).unwrap(), text);
    }
}
