//! Stores (Venice): named key prefixes whose data is replaced whole by batch pushes, each
//! push a new *version* swapped in atomically, the previous one kept for rollback, and
//! streamed writes (SET, DEL...) landing on top ("hybrid").
//!
//! Two catalogs: `exec` is the catalog in the merger's execution order — transactions route
//! their writes with it, and a catalog change is a transaction that replaces it as it
//! executes; `read` is replaced once that transaction is durable, and reads of the published
//! state route with it. Between the two moments a reader still uses the old catalog, which is
//! safe because writes go to both the current and the previous version: whichever of the two
//! a reader's catalog names, it holds every acknowledged write.
//!
//! Every catalog change (create, delete, rollback, push begin/commit/abort) holds `admin`, so
//! at most one is in flight and `read` catches up with `exec` when it completes.

pub mod catalog;
pub mod maintenance;
pub mod push;
mod table_writer;

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use rialto_engine::{EngineIterator, IterOptions, KvEngine};
use rialto_lsm::Db;
use rialto_txn::{Merger, TxnContext};

use catalog::{meta_key, next_id_key, retired_key, rt_number, rt_range, WHOLE_STORE};
pub use catalog::{Catalog, Pushing, StoreMeta, VersionInfo};

/// What a store operation can fail with; each has a Redis-style error text.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No store has that name.
    #[error("ERR no such store '{0}'")]
    NoSuchStore(String),
    /// A store already has that name.
    #[error("ERR store '{0}' already exists")]
    Exists(String),
    /// A bad argument.
    #[error("ERR {0}")]
    Invalid(String),
    /// The store already has a push in progress, or none.
    #[error("ERR {0}")]
    PushState(String),
    /// A rollback with no previous version.
    #[error("ERR store '{0}' has no previous version to roll back to")]
    NoPrevious(String),
    /// A push's input is wrong (duplicate key, bad record...).
    #[error("ERR push failed: {0}")]
    Input(String),
    /// A push loaded too few records to replace the current version (see [`PushGuard`]).
    #[error("ERR push refused: {0}")]
    Refused(PushRefusal),
    /// The engine failed.
    #[error("{0}")]
    Engine(#[from] rialto_engine::Error),
    /// A store record does not decode.
    #[error("ERR {0}")]
    Corrupt(String),
}

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

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

    fn set(&self, id: u32, next: u64) {
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
    /// Parses `auto`, `all`, `none` or a size (`512mb`, as [`crate::config::parse_size`]).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(PushPageCache::Auto),
            "all" => Ok(PushPageCache::All),
            "none" => Ok(PushPageCache::Bytes(0)),
            _ => crate::config::parse_size(s)
                .map(|n| PushPageCache::Bytes(n as u64))
                .map_err(|_| format!("'{s}' is not auto, all, none or a size (e.g. 4gb)")),
        }
    }

    /// The value as `CONFIG GET` shows it (and [`PushPageCache::parse`] reads back).
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
}

/// Store records read from the engine.
struct Loaded {
    stores: Vec<StoreMeta>,
    next_id: u32,
}

fn load(db: &Db) -> StoreResult<Loaded> {
    let hi = crate::keyspace::next_prefix(&[catalog::STORE_META]);
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
            let name = String::from_utf8_lossy(&k[1..]).into_owned();
            let m = StoreMeta::decode(&name, it.value())
                .map_err(|e| StoreError::Corrupt(format!("store '{name}': {e}")))?;
            out.next_id = out.next_id.max(m.id + 1);
            out.stores.push(m);
        }
        it.next();
    }
    it.status()?;
    Ok(out)
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

impl Stores {
    /// Loads the stores of `db`. A push that was running when the server stopped is
    /// abandoned: its version is retired (see [`Stores::recover`]).
    pub fn open(db: &Db, opts: StoreOptions) -> StoreResult<Stores> {
        let loaded = load(db)?;
        let rt = RtNumbers::default();
        for s in &loaded.stores {
            rt.set(s.id, rt_next_number(db, s.id)?);
        }
        let cat = Arc::new(Catalog::new(loaded.stores));
        let threads = opts.push_threads.max(1);
        Ok(Stores {
            exec: ArcSwap::new(Arc::clone(&cat)),
            read: ArcSwap::new(cat),
            rt,
            admin: Mutex::new(()),
            pushes: push::Pushes::new(threads, opts.push_nice),
            next_id: Mutex::new(loaded.next_id),
            opts,
        })
    }

    /// The catalog reads of the published state route with.
    pub fn read_catalog(&self) -> arc_swap::Guard<Arc<Catalog>> {
        self.read.load()
    }

    /// The catalog in execution order; only for code running inside a merger transaction.
    pub fn exec_catalog(&self) -> arc_swap::Guard<Arc<Catalog>> {
        self.exec.load()
    }

    /// Runs a catalog change as one merger transaction: `f` sees the execution-order catalog,
    /// stages its writes and returns the new catalog. `read` follows once it is durable.
    fn change<T: Send + 'static>(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        f: impl FnOnce(&Catalog, &mut TxnContext<'_, Db>) -> StoreResult<(Catalog, T)> + Send + 'static,
    ) -> StoreResult<T> {
        let _admin = self.admin.lock();
        let me = Arc::clone(self);
        let h = merger.submit(move |tx| {
            let cat = me.exec.load_full();
            match f(&cat, tx) {
                Ok((new, t)) => {
                    let new = Arc::new(new);
                    me.exec.store(Arc::clone(&new));
                    Ok(Ok((new, t)))
                }
                Err(e) => {
                    tx.discard();
                    Ok(Err(e))
                }
            }
        });
        let (new, t) = h.wait()??;
        self.read.store(new);
        self.focus_row_cache(merger.engine());
        Ok(t)
    }

    /// Points the engine's row cache at what reads route to (`Db::focus_row_cache`): each
    /// store's current version, the most recently made first, then the default store's keys.
    /// After a swap or a rollback, the version swapped out leaves the cache and the warm-up
    /// fills the room with the new current one first, instead of the cache holding rows no
    /// read asks for while the new version's first reads miss.
    fn focus_row_cache(&self, db: &Db) {
        let cat = self.read.load();
        let mut stores: Vec<&Arc<StoreMeta>> = cat.iter().collect();
        stores.sort_by_key(|s| std::cmp::Reverse((s.current.created_ms, s.id)));
        let mut ranges: Vec<_> = stores
            .iter()
            .map(|s| catalog::version_range(s.id, s.current.number))
            .collect();
        ranges.push((vec![crate::keyspace::DATA], vec![crate::keyspace::DATA + 1]));
        let evicted = db.focus_row_cache(ranges);
        if evicted > 0 {
            tracing::debug!(evicted, "row cache now holds the current versions only");
        }
    }

    /// Finishes what a stop interrupted: a push recorded as running is abandoned and its
    /// version retired; then the row cache is focused on the current versions. Run once
    /// after opening, before serving.
    pub fn recover(self: &Arc<Self>, merger: &Merger<Db>) -> StoreResult<()> {
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
        self.focus_row_cache(merger.engine());
        Ok(())
    }

    /// Creates store `name` owning keys that start with `prefix`; its version 1 is empty.
    pub fn create(
        self: &Arc<Self>,
        db: &Db,
        merger: &Merger<Db>,
        name: &str,
        prefix: &[u8],
        rewind_ms: u64,
        now_ms: i64,
    ) -> StoreResult<StoreMeta> {
        if !catalog::valid_name(name.as_bytes()) {
            return Err(StoreError::Invalid(format!(
                "invalid store name '{name}': 1 to {} characters of A-Z a-z 0-9 _ - .",
                catalog::MAX_NAME_LEN
            )));
        }
        if prefix.is_empty() || prefix.len() > catalog::MAX_PREFIX_LEN {
            return Err(StoreError::Invalid(format!(
                "a store prefix is 1 to {} bytes",
                catalog::MAX_PREFIX_LEN
            )));
        }
        // Keys already in the default store under the prefix would be shadowed.
        let lo = crate::keyspace::data_key(0, prefix);
        let hi = crate::keyspace::next_prefix(&lo);
        let mut it = db.iter(IterOptions {
            lower: Some(lo),
            upper: Some(hi),
            snapshot: None,
        })?;
        it.seek_to_first();
        if it.valid() {
            return Err(StoreError::Invalid(format!(
                "keys starting with the prefix exist in the default store (e.g. '{}'); delete them first",
                String::from_utf8_lossy(&it.key()[2..])
            )));
        }
        it.status()?;
        drop(it);
        let name = name.to_string();
        let prefix = prefix.to_vec();
        let me = Arc::clone(self);
        self.change(merger, move |cat, tx| {
            if cat.get(&name).is_some() {
                return Err(StoreError::Exists(name));
            }
            if let Some(other) = cat.prefix_conflict(&prefix) {
                return Err(StoreError::Invalid(format!(
                    "prefix overlaps store '{}' (prefix '{}'): no store prefix may start another",
                    other.name,
                    String::from_utf8_lossy(&other.prefix)
                )));
            }
            let id = {
                let mut n = me.next_id.lock();
                let id = *n;
                *n += 1;
                tx.put(&next_id_key(), &(id + 1).to_le_bytes());
                id
            };
            let meta = StoreMeta {
                name: name.clone(),
                id,
                prefix,
                current: VersionInfo {
                    number: 1,
                    created_ms: now_ms,
                    ..VersionInfo::default()
                },
                previous: VersionInfo::default(),
                next_version: 2,
                rewind_ms,
                pushing: None,
                created_ms: now_ms,
            };
            tx.put(&meta_key(&name), &meta.encode());
            me.rt.set(id, 0);
            Ok((cat.with(meta.clone()), meta))
        })
    }

    /// Deletes store `name`: its keys return to the default store (empty under the prefix),
    /// and its data is removed in the background.
    pub fn delete(self: &Arc<Self>, merger: &Merger<Db>, name: &str) -> StoreResult<()> {
        let name = name.to_string();
        if self
            .exec
            .load()
            .get(&name)
            .is_some_and(|s| s.pushing.is_some())
        {
            return Err(StoreError::PushState(format!(
                "store '{name}' has a push in progress; abort it first"
            )));
        }
        self.change(merger, move |cat, tx| {
            let s = cat
                .get(&name)
                .ok_or_else(|| StoreError::NoSuchStore(name.clone()))?;
            if s.pushing.is_some() {
                return Err(StoreError::PushState(format!(
                    "store '{name}' has a push in progress; abort it first"
                )));
            }
            tx.delete(&meta_key(&name));
            tx.put(&retired_key(s.id, WHOLE_STORE), b"");
            Ok((cat.without(&name), ()))
        })
    }

    /// Switches store `name` to its previous version; the version left becomes the previous
    /// one, so a second rollback undoes the first.
    pub fn rollback(self: &Arc<Self>, merger: &Merger<Db>, name: &str) -> StoreResult<StoreMeta> {
        let name = name.to_string();
        self.change(merger, move |cat, tx| {
            let s = cat
                .get(&name)
                .ok_or_else(|| StoreError::NoSuchStore(name.clone()))?;
            if s.previous.number == 0 {
                return Err(StoreError::NoPrevious(name));
            }
            let mut m = (**s).clone();
            std::mem::swap(&mut m.current, &mut m.previous);
            tx.put(&meta_key(&name), &m.encode());
            Ok((cat.with(m.clone()), m))
        })
    }

    /// Records the start of a push into store `name`: a new version number, durable before
    /// any of its files is written (so a crash leaves a retired version, not an orphan).
    fn begin_push(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        name: &str,
        now_ms: i64,
    ) -> StoreResult<StoreMeta> {
        let name = name.to_string();
        self.change(merger, move |cat, tx| {
            let s = cat
                .get(&name)
                .ok_or_else(|| StoreError::NoSuchStore(name.clone()))?;
            if let Some(p) = s.pushing {
                return Err(StoreError::PushState(format!(
                    "store '{name}' already has a push in progress (version {})",
                    p.version
                )));
            }
            let mut m = (**s).clone();
            m.pushing = Some(Pushing {
                version: m.next_version,
                started_ms: now_ms,
            });
            m.next_version = m
                .next_version
                .checked_add(1)
                .filter(|&v| v != WHOLE_STORE)
                .ok_or_else(|| StoreError::Invalid("store version numbers exhausted".into()))?;
            tx.put(&meta_key(&name), &m.encode());
            Ok((cat.with(m.clone()), m))
        })
    }

    /// Ends store `name`'s push. With `swap` (the new version's info and the real-time log
    /// entries still to replay, `from..`), replays them onto the new version and makes it
    /// current, in one transaction; the old current becomes the previous and the old previous
    /// is retired. Without, the pushed version is retired.
    fn end_push(
        self: &Arc<Self>,
        merger: &Merger<Db>,
        name: &str,
        swap: Option<(VersionInfo, u64)>,
    ) -> StoreResult<StoreMeta> {
        let name = name.to_string();
        let me = Arc::clone(self);
        self.change(merger, move |cat, tx| {
            let s = cat
                .get(&name)
                .ok_or_else(|| StoreError::NoSuchStore(name.clone()))?;
            let p = s
                .pushing
                .ok_or_else(|| StoreError::PushState(format!("store '{name}' has no push")))?;
            let mut m = (**s).clone();
            m.pushing = None;
            match swap {
                Some((info, from)) => {
                    debug_assert_eq!(info.number, p.version);
                    let until = me.rt.peek(m.id);
                    push::replay(tx, &m, p, from, until)?;
                    if m.previous.number != 0 {
                        tx.put(&retired_key(m.id, m.previous.number), b"");
                    }
                    m.previous = m.current;
                    m.current = info;
                }
                None => tx.put(&retired_key(m.id, p.version), b""),
            }
            tx.put(&meta_key(&name), &m.encode());
            Ok((cat.with(m.clone()), m))
        })
    }
}
