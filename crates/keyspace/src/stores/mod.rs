//! Stores (Venice): named key prefixes whose data is replaced whole by batch pushes, each
//! push a new *version* swapped in atomically, older ones kept for rollback (`keep`), and
//! streamed writes (SET, DEL...) landing on top ("hybrid").
//!
//! Two catalogs: `exec` is the catalog in the merger's execution order — transactions route
//! their writes with it, and a catalog change is a transaction that replaces it as it
//! executes; `read` is replaced once that transaction is durable, and reads of the published
//! state route with it. Between the two moments a reader still uses the old catalog, which is
//! safe because writes go to the current version and every kept one: whichever of them a
//! reader's catalog names, it holds every acknowledged write.
//!
//! Every catalog change (create, delete, rollback, push begin/commit/abort) holds `admin`, so
//! at most one is in flight and `read` catches up with `exec` when it completes.

pub(crate) mod catalog;
pub(crate) mod maintenance;
mod progress;
pub(crate) mod push;
pub(crate) mod push_layout;
pub(crate) mod settings;
mod stage;
mod table_writer;

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use rialto_engine::{EngineIterator, IterOptions, KvEngine};
use rialto_io::Clock;
use rialto_lsm::Compression;
use rialto_lsm::Db;
use rialto_txn::Merger;

use crate::op::{Op, OpKind, StoreOp};
use crate::value::Value;

use catalog::{rt_number, rt_range};
pub use catalog::{valid_name, Catalog, Pushing, StoreMeta, VersionInfo, MAX_PREFIX_LEN};
pub use maintenance::PassReport;
pub use progress::{PushCounts, PushPhase, PushStatus};
pub use push::{lower_thread_priority, PushOptions, PushReport};
pub use push_layout::{check_hash_payload, encode_hash_payload, HashPayloadError, PushLayout};
pub use settings::StoreSettings;
pub use stage::{SortedRecords, Staged};

/// What a store operation can fail with. The texts are sentences without a protocol code:
/// the server prefixes Redis's `ERR`, the command-line tools print them as they are.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No store has that name.
    #[error("no such store '{0}'")]
    NoSuchStore(String),
    /// A store already has that name.
    #[error("store '{0}' already exists")]
    Exists(String),
    /// A store name outside `[A-Za-z0-9_.-]{1,128}`.
    #[error("invalid store name '{0}': 1 to {max} characters of A-Z a-z 0-9 _ - .", max = catalog::MAX_NAME_LEN)]
    InvalidName(String),
    /// An empty or too long prefix.
    #[error("a store prefix is 1 to {} bytes", catalog::MAX_PREFIX_LEN)]
    InvalidPrefix,
    /// Keys of the default store start with the prefix (they would be shadowed).
    #[error("keys starting with the prefix exist in the default store (e.g. '{example}'); delete them first")]
    PrefixHoldsKeys {
        /// One of those keys.
        example: String,
    },
    /// The prefix starts another store's, or the other way round.
    #[error(
        "prefix overlaps store '{store}' (prefix '{prefix}'): no store prefix may start another"
    )]
    PrefixOverlaps {
        /// The other store.
        store: String,
        /// Its prefix.
        prefix: String,
    },
    /// The store has a push in progress (which a delete or another push must wait for).
    #[error("store '{store}' already has a push in progress (version {version})")]
    PushInProgress {
        /// The store.
        store: String,
        /// The version being pushed.
        version: u32,
    },
    /// A store cannot be deleted while a push into it runs.
    #[error("store '{0}' has a push in progress; abort it first")]
    DeleteWhilePushing(String),
    /// The store has no push in progress.
    #[error("store '{0}' has no push")]
    NoPush(String),
    /// No push has that id.
    #[error("no push with id {0}")]
    NoSuchPush(u64),
    /// Another connection began the push: only it may add to, commit or abort it.
    #[error("push {id} belongs to another connection (client id {owner}); only that connection can add to, commit or abort it, and closing it (CLIENT KILL ID {owner}) aborts it")]
    NotOwner {
        /// The push.
        id: u64,
        /// The connection that began it.
        owner: u64,
    },
    /// The push is committing: it takes no more records and cannot commit twice.
    #[error("push {0} is committing")]
    PushCommitting(u64),
    /// Every version number of the store was used.
    #[error("store version numbers exhausted")]
    VersionsExhausted,
    /// A rollback with no version older than the current one kept.
    #[error("store '{store}' keeps no version older than its current version {current} to roll back to (a store keeps KEEP - 1 older versions, and a rollback retires the versions newer than the one it goes to)")]
    NoPrevious {
        /// The store.
        store: String,
        /// Its current version.
        current: u32,
    },
    /// A rollback to a version the store does not keep.
    #[error("store '{store}' does not keep version {version}; {}", kept_text(kept))]
    VersionNotKept {
        /// The store.
        store: String,
        /// The version asked for.
        version: u32,
        /// The versions a rollback can go to, newest first.
        kept: Vec<u32>,
    },
    /// A rollback to a version newer than the current one.
    #[error("version {version} is newer than store '{store}''s current version {current}: a rollback only goes back")]
    RollbackForward {
        /// The store.
        store: String,
        /// The version asked for.
        version: u32,
        /// The current version.
        current: u32,
    },
    /// A value of a hash push is not a hash payload ([`PushLayout::Hash`]).
    #[error("push failed: the value of key '{key}' is not a hash: {why}")]
    NotAHash {
        /// The key (relative to the store's prefix, shown lossily, at most 64 bytes).
        key: String,
        /// What is wrong with the value.
        why: HashPayloadError,
    },
    /// A push's input is wrong (duplicate key, bad record...).
    #[error("push failed: {0}")]
    Input(String),
    /// A push loaded too few records to replace the current version (see [`PushGuard`]).
    #[error("push refused: {0}")]
    Refused(PushRefusal),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] rialto_engine::Error),
    /// A store record does not decode.
    #[error("{0}")]
    Corrupt(String),
}

impl StoreError {
    /// The error of a value under the hash layout that is not a hash payload, naming its key.
    pub fn not_a_hash(key: &[u8], why: HashPayloadError) -> StoreError {
        let shown = &key[..key.len().min(64)];
        StoreError::NotAHash {
            key: String::from_utf8_lossy(shown).into_owned(),
            why,
        }
    }
}

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// The versions a rollback can go to, as [`StoreError::VersionNotKept`] says them.
fn kept_text(kept: &[u32]) -> String {
    match kept {
        [] => "it keeps no older version to roll back to".into(),
        [v] => format!("the version to roll back to is {v}"),
        vs => {
            let list: Vec<String> = vs.iter().map(u32::to_string).collect();
            format!("the versions to roll back to are {}", list.join(", "))
        }
    }
}

/// Assigns real-time log entry numbers in execution order.
#[derive(Debug, Default)]
pub struct RtNumbers(Mutex<HashMap<u32, u64>>);

impl RtNumbers {
    /// The next entry number of store `id`.
    pub fn next(&self, id: u32) -> u64 {
        let mut m = self.0.lock();
        let n = m.entry(id).or_insert(0);
        let v = *n;
        *n += 1;
        v
    }

    /// The number the next entry of store `id` will get.
    pub fn peek(&self, id: u32) -> u64 {
        self.0.lock().get(&id).copied().unwrap_or(0)
    }

    /// Starts numbering store `id`'s entries if nothing does yet.
    pub(crate) fn reserve(&self, id: u32) {
        self.0.lock().entry(id).or_insert(0);
    }

    pub(crate) fn set(&self, id: u32, next: u64) {
        self.0.lock().insert(id, next);
    }
}

/// What a push must load to be swapped in: an upstream job that wrote nothing, or far less
/// than usual, must not replace the version being served. Checked once the records are
/// sorted and written, before anything is linked; a refused push is aborted and the current
/// version keeps serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushGuard {
    /// Fewest records the new version may hold (0 allows an empty version).
    pub min_records: u64,
    /// Most the record count may fall below the current version's, in percent of it (100:
    /// no limit). Compared with the records the current version was pushed with; a store
    /// never pushed to is not compared.
    pub max_shrink_percent: u32,
}

impl Default for PushGuard {
    fn default() -> Self {
        PushGuard {
            min_records: 1,
            max_shrink_percent: 50,
        }
    }
}

/// Why [`PushGuard`] refused a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushRefusal {
    /// Fewer records than `min_records`.
    TooFew { records: u64, min_records: u64 },
    /// The record count fell by more than `max_shrink_percent` of the current version's.
    Shrank {
        records: u64,
        current: u64,
        max_shrink_percent: u32,
    },
}

impl std::fmt::Display for PushRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushRefusal::TooFew {
                records,
                min_records,
            } => write!(
                f,
                "it loaded {}, fewer than the {min_records} required (MIN-RECORDS; 0 allows an empty version); the current version keeps serving",
                records_text(*records)
            ),
            PushRefusal::Shrank {
                records,
                current,
                max_shrink_percent,
            } => write!(
                f,
                "it loaded {}, {}% fewer than the current version's {current}, more than MAX-SHRINK {max_shrink_percent}% allows; the current version keeps serving",
                records_text(*records),
                (current - records) * 100 / current
            ),
        }
    }
}

fn records_text(n: u64) -> String {
    if n == 1 {
        "1 record".into()
    } else {
        format!("{n} records")
    }
}

impl PushGuard {
    /// Whether a version of `records` records may replace one of `current` records.
    pub fn check(&self, records: u64, current: u64) -> Result<(), PushRefusal> {
        if records < self.min_records {
            return Err(PushRefusal::TooFew {
                records,
                min_records: self.min_records,
            });
        }
        let shrink = current.saturating_sub(records);
        if self.max_shrink_percent < 100
            && current > 0
            && u128::from(shrink) * 100 > u128::from(current) * u128::from(self.max_shrink_percent)
        {
            return Err(PushRefusal::Shrank {
                records,
                current,
                max_shrink_percent: self.max_shrink_percent,
            });
        }
        Ok(())
    }
}

/// Options of stores and pushes.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Memory a push's sort may hold before it spills to disk.
    pub push_memory_limit: usize,
    /// Where pushes spill sorted runs (inside the data directory by default).
    pub push_tmp_dir: std::path::PathBuf,
    /// Threads of the ingestion pool shared by every push.
    pub push_threads: usize,
    /// CPU priority of the ingestion pool's threads and of the threads they start.
    pub push_nice: rialto_io::ThreadPriority,
    /// How much of a pushed version stays in the page cache as its tables are written.
    pub push_page_cache: PushPageCache,
    /// What a push must load unless it says otherwise at its begin.
    pub push_guard: PushGuard,
    /// Partitions the catalog routes for: 1 on a single node; in cluster mode the log's
    /// partitions, each of which changes its stores at its own offsets.
    pub partitions: u32,
}

/// How much of a pushed version's tables a push leaves in the operating system's page cache
/// (`push-page-cache`); the pages beyond are dropped as they reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushPageCache {
    /// Half of the memory available (`rialto_io::mem_available`: `MemAvailable`, capped by the
    /// memory cgroup's headroom) when the push starts writing tables.
    Auto,
    /// Every page.
    All,
    /// At most this many bytes; 0 keeps none.
    Bytes(u64),
}

impl PushPageCache {
    /// The setting named by a word: `auto`, `all` or `none` (a size is
    /// [`PushPageCache::Bytes`]).
    pub fn from_word(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(PushPageCache::Auto),
            "all" => Some(PushPageCache::All),
            "none" => Some(PushPageCache::Bytes(0)),
            _ => None,
        }
    }

    /// The value as `CONFIG GET` shows it (a word, or the size in bytes).
    pub fn config_value(&self) -> String {
        match self {
            PushPageCache::Auto => "auto".into(),
            PushPageCache::All => "all".into(),
            PushPageCache::Bytes(0) => "none".into(),
            PushPageCache::Bytes(n) => n.to_string(),
        }
    }

    /// Bytes a push starting now may leave cached, given the memory available (`None`:
    /// unknown, and then `Auto` keeps everything); `u64::MAX` is no limit.
    pub fn budget(&self, mem_available: Option<u64>) -> u64 {
        match self {
            PushPageCache::Auto => mem_available.map_or(u64::MAX, |m| m / 2),
            PushPageCache::All => u64::MAX,
            PushPageCache::Bytes(n) => *n,
        }
    }
}

/// The stores of one server.
pub struct Stores {
    exec: ArcSwap<Catalog>,
    read: ArcSwap<Catalog>,
    /// Real-time log numbering.
    pub rt: RtNumbers,
    admin: Mutex<()>,
    /// Pushes in progress and the ingestion pool.
    pub pushes: push::Pushes,
    next_id: Mutex<u32>,
    opts: StoreOptions,
    clock: Arc<dyn Clock>,
    /// Watched keys (WATCH): every change applied is reported here.
    pub(crate) watches: Arc<crate::watch::Watches>,
    /// Key counts, kept by observing the merger's writes.
    pub(crate) counts: Arc<crate::counts::KeyCounts>,
    /// Each store's compression, for the engine's flushes and compactions.
    codecs: Arc<StoreCodecs>,
    /// When collections become large.
    pub(crate) encodings: crate::collections::Encodings,
    /// Which stored database each database number names (SWAPDB).
    pub(crate) dbs: Arc<crate::dbmap::DbMap>,
}

/// Each store's compression by store id, as the execution-order catalog says: the engine
/// writes the tables of a store's versions that flushes and compactions make with it
/// (`rialto_lsm::Options::compression_for`; a table never holds two versions, see
/// [`catalog::partition_len`]). A table written before the stores are loaded (the replay of
/// the journal at open) takes the engine's compression.
#[derive(Default)]
pub struct StoreCodecs(ArcSwap<HashMap<u32, Compression>>);

impl StoreCodecs {
    /// The compression of the table whose first engine key is `key`: its store's, for a key
    /// of a store version; `None` (the engine's) for any other.
    pub fn of_key(&self, key: &[u8]) -> Option<Compression> {
        if key.first() != Some(&catalog::VERSION_DATA) {
            return None;
        }
        let id = u32::from_be_bytes(key.get(1..5)?.try_into().ok()?);
        self.0.load().get(&id).copied()
    }

    /// Follows `cat` (every partition's stores; in cluster mode they agree once converged).
    fn follow(&self, cat: &Catalog) {
        let map: HashMap<u32, Compression> =
            cat.all().map(|(_, s)| (s.id, s.compression)).collect();
        if **self.0.load() != map {
            self.0.store(Arc::new(map));
        }
    }
}

/// Store records read from the engine.
struct Loaded {
    /// Each record with its partition (cluster mode).
    stores: Vec<(Option<u32>, StoreMeta)>,
    next_id: u32,
}

fn load(db: &Db) -> StoreResult<Loaded> {
    let hi = crate::layout::next_prefix(&[catalog::STORE_META]);
    let mut it = db.iter(IterOptions {
        lower: Some(vec![catalog::STORE_META]),
        upper: Some(hi),
        snapshot: None,
    })?;
    it.seek_to_first();
    let mut out = Loaded {
        stores: Vec::new(),
        next_id: 1,
    };
    while it.valid() {
        let k = it.key();
        if k.len() == 1 {
            let b: [u8; 4] = it
                .value()
                .try_into()
                .map_err(|_| StoreError::Corrupt("corrupt next store id".into()))?;
            out.next_id = out.next_id.max(u32::from_le_bytes(b));
        } else {
            let (name, part) = catalog::parse_meta_key(k)
                .ok_or_else(|| StoreError::Corrupt("corrupt store record key".into()))?;
            let m = StoreMeta::decode(&name, it.value())
                .map_err(|e| StoreError::Corrupt(format!("store '{name}': {e}")))?;
            out.next_id = out.next_id.max(m.id + 1);
            out.stores.push((part, m));
        }
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// A key of the default store (database 0) that starts with `prefix`, if any: a new store
/// under that prefix would hide it.
pub fn default_key_under(db: &Db, prefix: &[u8]) -> StoreResult<Option<String>> {
    let lo = crate::layout::data_key(0, prefix);
    let hi = crate::layout::next_prefix(&lo);
    let mut it = db.iter(IterOptions {
        lower: Some(lo),
        upper: Some(hi),
        snapshot: None,
    })?;
    it.seek_to_first();
    let found = it
        .valid()
        .then(|| String::from_utf8_lossy(&it.key()[2..]).into_owned());
    it.status()?;
    Ok(found)
}

/// The number after the last real-time log entry of store `id`.
fn rt_next_number(db: &Db, id: u32) -> StoreResult<u64> {
    let (lo, hi) = rt_range(id);
    let mut it = db.iter(IterOptions {
        lower: Some(lo),
        upper: Some(hi),
        snapshot: None,
    })?;
    it.seek_to_last();
    let n = if it.valid() {
        rt_number(it.key()).map_or(0, |n| n + 1)
    } else {
        0
    };
    it.status()?;
    Ok(n)
}

/// Every count record of `db`.
fn read_counts(db: &Db) -> StoreResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let (lo, hi) = crate::counts::counts_range();
    let mut it = db.iter(IterOptions {
        lower: Some(lo),
        upper: Some(hi),
        snapshot: None,
    })?;
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Counts the keys of `db` by walking them: every data key, and every key of each version the
/// catalog `cat` may serve or push (a database written before counts were kept).
fn walk_counts(
    db: &Db,
    cat: &Catalog,
    counts: &crate::counts::KeyCounts,
) -> StoreResult<std::collections::HashMap<crate::counts::Unit, crate::counts::Tally>> {
    use crate::counts::Tally;
    type Out = std::collections::HashMap<crate::counts::Unit, Tally>;
    let mut out = Out::new();
    let walk =
        |out: &mut Out, lo: Vec<u8>, hi: Vec<u8>, unit: &dyn Fn(&[u8]) -> crate::counts::Unit| {
            let mut it = db.iter(IterOptions {
                lower: Some(lo.clone()),
                upper: Some(hi),
                snapshot: None,
            })?;
            it.seek_to_first();
            while it.valid() {
                let t = out.entry(unit(it.key())).or_default();
                t.keys += 1;
                t.expires += i64::from(
                    it.value()
                        .first()
                        .is_some_and(|f| f & crate::layout::HAS_EXPIRY != 0),
                );
                it.next();
            }
            it.status()
        };
    let data = [crate::layout::DATA];
    walk(
        &mut out,
        data.to_vec(),
        crate::layout::next_prefix(&data),
        &|k| counts.db_unit(k[1], &k[2..]),
    )?;
    let mut versions = std::collections::BTreeSet::new();
    for p in 0..cat.partitions() {
        for s in cat.by_prefix_in(p) {
            versions.extend(s.live_versions().map(|v| (s.id, v)));
            if let Some(pushing) = s.pushing {
                versions.insert((s.id, pushing.version));
            }
        }
    }
    for (id, v) in versions {
        let (lo, hi) = catalog::version_range(id, v);
        walk(&mut out, lo, hi, &|k| counts.version_unit(id, v, &k[9..]))?;
        // A version with no keys is still counted (zero), so that later writes are observed.
        for part in 0..cat.partitions() {
            out.entry(crate::counts::Unit::Version {
                id,
                version: v,
                part,
            })
            .or_default();
        }
    }
    Ok(out)
}

impl Stores {
    /// Key counts (DBSIZE, INFO keyspace), kept by observing the merger's writes.
    pub fn counts(&self) -> &Arc<crate::counts::KeyCounts> {
        &self.counts
    }

    /// Loads the stores of `db`. A push that was running when the server stopped is
    /// abandoned: its version is retired (see [`Stores::recover`]).
    pub fn open(
        db: &Db,
        opts: StoreOptions,
        clock: Arc<dyn Clock>,
        codecs: Arc<StoreCodecs>,
    ) -> StoreResult<Stores> {
        let loaded = load(db)?;
        let rt = RtNumbers::default();
        let partitions = opts.partitions.max(1);
        let mut cat = Catalog::partitioned(partitions);
        for (part, s) in loaded.stores {
            // A single node's records in a cluster's directory, or the other way round, or
            // a partition the configuration no longer has: refused, not guessed at.
            let p = match (part, partitions) {
                (None, 1) => 0,
                (Some(p), n) if n > 1 && p < n => p,
                _ => {
                    return Err(StoreError::Corrupt(format!(
                        "store '{}' was recorded for another number of partitions than the {partitions} configured",
                        s.name
                    )))
                }
            };
            rt.set(s.id, rt_next_number(db, s.id)?);
            cat = cat.with_in(p, s);
        }
        if partitions > 1 {
            for p in 0..partitions {
                if let Some(v) = db.get(&catalog::catalog_at_key(p))? {
                    let b: [u8; 8] = v[..].try_into().map_err(|_| {
                        StoreError::Corrupt("corrupt store catalog position".into())
                    })?;
                    cat.set_at(p, u64::from_le_bytes(b));
                }
            }
        }
        let dbs = Arc::new(
            crate::dbmap::DbMap::load(db).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        );
        let counts = Arc::new(crate::counts::KeyCounts::new(partitions));
        if !counts.load(read_counts(db)?) {
            counts.reset(walk_counts(db, &cat, &counts)?);
        }
        codecs.follow(&cat);
        let cat = Arc::new(cat);
        let threads = opts.push_threads.max(1);
        let watches = Arc::new(crate::watch::Watches::with_dbs(Arc::clone(&dbs)));
        Ok(Stores {
            dbs,
            counts,
            codecs,
            encodings: Default::default(),
            watches,
            exec: ArcSwap::new(Arc::clone(&cat)),
            read: ArcSwap::new(cat),
            rt,
            admin: Mutex::new(()),
            pushes: push::Pushes::new(threads, opts.push_nice),
            next_id: Mutex::new(loaded.next_id),
            opts,
            clock,
        })
    }

    /// The CPU priority of push threads (`push-nice`).
    pub(crate) fn push_priority(&self) -> rialto_io::ThreadPriority {
        self.opts.push_nice
    }

    /// Partitions the catalog routes for (1 on a single node).
    pub fn partitions(&self) -> u32 {
        self.opts.partitions.max(1)
    }

    /// Publishes the execution-order catalog to reads, once the transactions that made it
    /// are durable (the cluster's applier calls it after each of its transactions: store
    /// changes from the log are applied there, not through [`Stores::apply_op`]).
    pub fn publish(&self, db: &Db) {
        let exec = self.exec.load_full();
        if !Arc::ptr_eq(&exec, &self.read.load()) {
            self.read.store(exec);
            self.focus_row_cache(db);
        }
    }

    /// The catalog reads of the published state route with.
    pub fn read_catalog(&self) -> arc_swap::Guard<Arc<Catalog>> {
        self.read.load()
    }

    /// The catalog in execution order; only for code running inside a merger transaction.
    pub fn exec_catalog(&self) -> arc_swap::Guard<Arc<Catalog>> {
        self.exec.load()
    }

    /// Unix milliseconds now, by the keyspace's clock.
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.unix_millis() as i64
    }

    /// The execution-order catalog, owned (for a catalog op that replaces it).
    pub(crate) fn exec_catalog_full(&self) -> Arc<Catalog> {
        self.exec.load_full()
    }

    /// Installs the catalog a catalog op made as the execution-order one.
    pub(crate) fn install_exec(&self, cat: Arc<Catalog>) {
        self.codecs.follow(&cat);
        self.exec.store(cat);
    }

    /// Takes the next store id (inside the catalog op that creates the store).
    pub(crate) fn take_store_id(&self) -> u32 {
        let mut n = self.next_id.lock();
        let id = *n;
        *n += 1;
        id
    }

    /// Runs catalog op `op` as one merger transaction (`apply`); reads of the published
    /// state route with its catalog once it is durable.
    fn change(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        now_ms: i64,
        op: StoreOp,
    ) -> StoreResult<StoreMeta> {
        match self.apply_op(merger, Op::new(0, now_ms, OpKind::Store(op))) {
            Ok(Value::Store(m)) => Ok(*m),
            Ok(other) => Err(StoreError::Corrupt(format!(
                "a catalog op returned {other:?}"
            ))),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Applies catalog op `op` and waits until it is durable; then reads see its catalog.
    pub(crate) fn apply_op(self: &Arc<Self>, merger: &Merger<Db>, op: Op) -> crate::Result<Value> {
        let _admin = self.admin.lock();
        let me = Arc::clone(self);
        let h = merger.submit(move |tx| Ok(crate::apply::apply(tx, &me, &op)));
        let v = h.wait()??;
        self.read.store(self.exec.load_full());
        self.focus_row_cache(merger.engine());
        Ok(v)
    }

    /// Points the engine's row cache at what reads route to (`Db::focus_row_cache`): each
    /// store's current version, the most recently made first, then the default store's keys.
    /// After a swap or a rollback, the version swapped out leaves the cache and the warm-up
    /// fills the room with the new current one first, instead of the cache holding rows no
    /// read asks for while the new version's first reads miss.
    fn focus_row_cache(&self, db: &Db) {
        let cat = self.read.load();
        let mut stores: Vec<&Arc<StoreMeta>> = cat.all().map(|(_, s)| s).collect();
        stores.sort_by_key(|s| std::cmp::Reverse((s.current.created_ms, s.id, s.current.number)));
        stores.dedup_by_key(|s| (s.id, s.current.number));
        let mut ranges: Vec<_> = stores
            .iter()
            .map(|s| catalog::version_range(s.id, s.current.number))
            .collect();
        ranges.push((vec![crate::layout::DATA], vec![crate::layout::DATA + 1]));
        let evicted = db.focus_row_cache(ranges);
        if evicted > 0 {
            tracing::debug!(evicted, "row cache now holds the current versions only");
        }
    }

    /// Finishes what a stop interrupted: a push recorded as running is abandoned and its
    /// version retired, and a version a rollback left is retired; then the row cache is
    /// focused on the current versions. Run once after opening, before serving.
    ///
    /// In cluster mode the catalog changes only through the log: what a stop interrupted is
    /// finished by the records that follow, so only the row cache is focused here.
    pub fn recover(self: &Arc<Self>, merger: &Merger<Db>) -> StoreResult<()> {
        if self.partitions() > 1 {
            self.focus_row_cache(merger.engine());
            return Ok(());
        }
        let stale: Vec<String> = self
            .exec
            .load()
            .iter()
            .filter(|s| s.pushing.is_some())
            .map(|s| s.name.clone())
            .collect();
        for name in stale {
            tracing::warn!(store = %name, "abandoning a push interrupted by a stop");
            self.end_push(merger, &name, None)?;
        }
        let left: Vec<Arc<StoreMeta>> = self
            .exec
            .load()
            .iter()
            .filter(|s| s.left().next().is_some())
            .cloned()
            .collect();
        for m in left {
            self.retire_left(merger, &m, self.now_ms())?;
        }
        self.focus_row_cache(merger.engine());
        Ok(())
    }

    /// Creates store `name` owning keys that start with `prefix`; its version 1 is empty.
    /// A setting left out of `settings` takes its default (compression: the engine's).
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        self: &Arc<Self>,
        db: &Db,
        merger: &Merger<Db>,
        name: &str,
        prefix: &[u8],
        rewind_ms: u64,
        settings: StoreSettings,
        now_ms: i64,
    ) -> StoreResult<StoreMeta> {
        if !catalog::valid_name(name.as_bytes()) {
            return Err(StoreError::InvalidName(name.to_string()));
        }
        if prefix.is_empty() || prefix.len() > catalog::MAX_PREFIX_LEN {
            return Err(StoreError::InvalidPrefix);
        }
        // Keys already in the default store under the prefix would be shadowed.
        if let Some(example) = default_key_under(db, prefix)? {
            return Err(StoreError::PrefixHoldsKeys { example });
        }
        let m = self.change(
            merger,
            now_ms,
            StoreOp::Create {
                name: name.to_string(),
                prefix: prefix.to_vec().into(),
                rewind_ms,
                settings: StoreSettings {
                    compression: Some(settings.compression.unwrap_or_else(|| db.compression())),
                    ..settings
                },
            },
        )?;
        tracing::info!(store = name, id = m.id, prefix = %String::from_utf8_lossy(prefix), rewind_ms, compression = m.compression.name(), keep = m.keep, "store created");
        Ok(m)
    }

    /// Changes store `name`'s settings (those `settings` sets). A new compression applies to
    /// the tables written after the change: pushes begun after it, flushes and compactions. A
    /// smaller `keep` retires the oldest kept versions beyond it.
    pub fn configure(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        name: &str,
        settings: StoreSettings,
        now_ms: i64,
    ) -> StoreResult<StoreMeta> {
        let m = self.change(
            merger,
            now_ms,
            StoreOp::Configure {
                name: name.to_string(),
                settings,
            },
        )?;
        tracing::info!(
            store = name,
            compression = m.compression.name(),
            "store configured"
        );
        Ok(m)
    }

    /// Deletes store `name`: its keys return to the default store (empty under the prefix),
    /// and its data is removed in the background.
    pub fn delete(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        name: &str,
        now_ms: i64,
    ) -> StoreResult<()> {
        self.change(
            merger,
            now_ms,
            StoreOp::Delete {
                name: name.to_string(),
            },
        )?;
        tracing::info!(
            store = name,
            "store deleted; its data is removed in the background"
        );
        Ok(())
    }

    /// Switches store `name` back to kept version `to` (default: the newest older one; `to`
    /// naming the current version changes nothing) and retires the versions it leaves, the
    /// current one and every kept one newer than `to`: a rollback only goes back.
    ///
    /// Two changes: the rollback keeps writing to the versions left, as kept ones, so that a
    /// reader still routing with the catalog before it (see the module docs) misses no
    /// acknowledged write; once reads route to the version rolled back to, a second change
    /// retires them. A stop in between is finished by [`Stores::recover`].
    pub fn rollback(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        name: &str,
        to: Option<u32>,
        now_ms: i64,
    ) -> StoreResult<StoreMeta> {
        let m = self.change(
            merger,
            now_ms,
            StoreOp::Rollback {
                name: name.to_string(),
                to,
            },
        )?;
        tracing::info!(
            store = name,
            current = m.current.number,
            "store rolled back"
        );
        self.retire_left(merger, &m, now_ms)
    }

    /// Retires the versions a rollback left in `m` (newer than its current one), if any.
    fn retire_left(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        m: &StoreMeta,
        now_ms: i64,
    ) -> StoreResult<StoreMeta> {
        let Some(newest) = m.left().map(|v| v.number).max() else {
            return Ok(m.clone());
        };
        let left: Vec<u32> = m.left().map(|v| v.number).collect();
        tracing::info!(store = %m.name, versions = ?left, "retiring the versions a rollback left");
        self.change(
            merger,
            now_ms,
            StoreOp::RetireLeft {
                name: m.name.clone(),
                version: newest,
            },
        )
    }

    /// Records the start of a push into store `name`: a new version number, durable before
    /// any of its files is written (so a crash leaves a retired version, not an orphan).
    fn begin_push(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        name: &str,
        now_ms: i64,
    ) -> StoreResult<StoreMeta> {
        self.change(
            merger,
            now_ms,
            StoreOp::PushBegin {
                store: name.to_string(),
            },
        )
    }

    /// Ends store `name`'s push. With `swap` (the new version's info and the real-time log
    /// entries still to replay, `from..`), replays them onto the new version and makes it
    /// current, in one transaction; the old current is kept, and the oldest kept version
    /// beyond `keep` is retired. Without, the pushed version is retired.
    fn end_push(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        name: &str,
        swap: Option<(VersionInfo, u64)>,
    ) -> StoreResult<StoreMeta> {
        self.change(
            merger,
            self.now_ms(),
            StoreOp::PushEnd {
                store: name.to_string(),
                swap,
            },
        )
    }
}

/// A keyspace error raised inside a catalog op, as a store error.
fn store_error(e: crate::Error) -> StoreError {
    match e {
        crate::Error::Store(s) => s,
        crate::Error::Engine(e) => StoreError::Engine(e),
        other => StoreError::Corrupt(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_codecs_follow_the_catalog_and_choose_by_version_keys_only() {
        let meta = |name: &str, id: u32, compression: Compression| StoreMeta {
            name: name.into(),
            id,
            prefix: format!("{name}:").into_bytes(),
            current: VersionInfo {
                number: 1,
                ..VersionInfo::default()
            },
            kept: Vec::new(),
            keep: 2,
            next_version: 2,
            rewind_ms: 0,
            pushing: None,
            created_ms: 0,
            compression,
        };
        let codecs = StoreCodecs::default();
        let cat = Catalog::new([
            meta("a", 3, Compression::Zstd),
            meta("b", 4, Compression::None),
        ]);
        codecs.follow(&cat);
        let vk = |id, v| catalog::version_key(id, v, b"a:k");
        assert_eq!(codecs.of_key(&vk(3, 9)), Some(Compression::Zstd));
        assert_eq!(codecs.of_key(&vk(4, 1)), Some(Compression::None));
        // A store the catalog does not hold, other kinds of keys, a short key: the engine's.
        assert_eq!(codecs.of_key(&vk(5, 1)), None);
        assert_eq!(codecs.of_key(&catalog::rt_key(3, 1)), None);
        assert_eq!(codecs.of_key(&[catalog::VERSION_DATA, 0, 0]), None);
        assert_eq!(codecs.of_key(b""), None);
        codecs.follow(&cat.with(meta("a", 3, Compression::Lz4)));
        assert_eq!(codecs.of_key(&vk(3, 9)), Some(Compression::Lz4));
    }
}
