//! Stores, their versions and where their keys live in the engine's keyspace.
//!
//! ```text
//! version data key  0x03 | store id (u32 BE) | version (u32 BE) | user key  -> value record
//! real-time log     0x04 | store id (u32 BE) | n (u64 BE)                  -> rt entry
//! store record      0x05 | name                                            -> store record
//!   of partition p  0x05 | name | 0x00 | p (u32 BE)                         (cluster mode)
//! next store id     0x05                                                   -> u32 LE
//! retired range     0x06 | store id (u32 BE) | version (u32 BE)            -> empty
//!   by partition p  0x06 | store id (u32 BE) | version (u32 BE) | p (u32 BE)  (cluster mode)
//! staged version    0x0A | store id (u32 BE) | version (u32 BE)            -> records: u64 LE | bytes: u64 LE
//!                                                                           (cluster mode)
//! catalog position  0x0B | p (u32 BE)                                      -> at: u64 LE (cluster mode)
//! rt entry      := op (u8: 0 delete, 1 put) | at_ms (i64 LE) | key_len (u32 LE) | key | record
//! ```
//!
//! The store record's bytes are in [`StoreMeta::encode`] and design §12.
//!
//! Invariants:
//! - Store ids and, within a store, version numbers are never reused, so a new version's key
//!   range has never held an entry: ingestion links its tables into the bottom level.
//! - Store prefixes are non-empty and none is a prefix of another, so a key belongs to at most
//!   one store: the one with the greatest prefix `<=` the key, if the key starts with it.
//! - Writes to a store go to its current version and every version it keeps (so a rollback
//!   loses no streamed write), and to its real-time log while a push runs or when it has a
//!   rewind window; reads use the current version only.
//! - A store keeps at most `keep - 1` versions older than its current one; versions newer
//!   than the current one are kept only between a rollback and the retirement of the
//!   versions it left.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use rialto_lsm::Compression;

use super::settings::{codec_byte, codec_of};

/// Prefix of store version data keys.
pub const VERSION_DATA: u8 = 0x03;
/// Prefix of real-time log entries.
pub const RT_LOG: u8 = 0x04;
/// Prefix of store records.
pub const STORE_META: u8 = 0x05;
/// Prefix of retired version ranges awaiting removal.
pub const RETIRED: u8 = 0x06;
/// Prefix of staged versions (cluster mode): loaded and linked, for partitions to swap in.
pub const STAGED: u8 = 0x0A;
/// Prefix of each partition's cluster catalog position (cluster mode).
pub const CATALOG_AT: u8 = 0x0B;
/// `version` of a retired range that covers the whole store (data of every version and its
/// real-time log): the store was deleted.
pub const WHOLE_STORE: u32 = u32::MAX;

/// Longest store name.
pub const MAX_NAME_LEN: usize = 128;
/// Longest store prefix.
pub const MAX_PREFIX_LEN: usize = 1024;

/// One version of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VersionInfo {
    /// Version number (1, 2, ...); 0: none.
    pub number: u32,
    /// Records the push loaded (0 for the initial, streamed-only version).
    pub records: u64,
    /// Key and value bytes the push loaded.
    pub bytes: u64,
    /// When it was created, Unix ms.
    pub created_ms: i64,
}

/// A push in progress, as recorded durably (a crash leaves it to be cleaned up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pushing {
    /// The version being loaded.
    pub version: u32,
    /// When the push began, Unix ms (the rewind window counts back from here).
    pub started_ms: i64,
}

/// A store's durable record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreMeta {
    /// Name (the key of the record).
    pub name: String,
    /// Never reused.
    pub id: u32,
    /// Keys starting with it belong to the store.
    pub prefix: Vec<u8>,
    /// The version reads use.
    pub current: VersionInfo,
    /// The other versions streamed writes go to, newest first: the older ones a rollback can
    /// go back to (at most `keep - 1`), and, only for a moment, the versions a rollback left
    /// (newer than `current`) until they are retired.
    pub kept: Vec<VersionInfo>,
    /// Versions kept: the current one and up to `keep - 1` older ones (at least 1).
    pub keep: u32,
    /// The next version number to hand out.
    pub next_version: u32,
    /// How far before a push's start streamed writes are replayed onto the new version, ms.
    pub rewind_ms: u64,
    /// The push in progress, if any.
    pub pushing: Option<Pushing>,
    /// When the store was created, Unix ms.
    pub created_ms: i64,
    /// Block compression of the tables written for the store's versions: by its pushes, and
    /// by flushes and compactions of its streamed writes.
    pub compression: Compression,
}

/// The format [`StoreMeta::encode`] writes. Formats 1 (no compression: none) and 2 (with it),
/// which kept one previous version and no `keep` (2), are still read.
const FORMAT: u8 = 3;
/// Bytes of one version in a store record.
const VERSION_LEN: usize = 28;

/// A store record that does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptMeta(pub &'static str);

impl std::fmt::Display for CorruptMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "corrupt store record: {}", self.0)
    }
}

impl StoreMeta {
    /// Whether streamed writes must also go to the real-time log.
    pub fn logs_writes(&self) -> bool {
        self.pushing.is_some() || self.rewind_ms > 0
    }

    /// The versions streamed writes go to: current, then every kept one.
    pub fn live_versions(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(self.current.number).chain(self.kept.iter().map(|v| v.number))
    }

    /// The kept versions older than the current one, newest first: where a rollback can go.
    pub fn older(&self) -> impl Iterator<Item = &VersionInfo> + '_ {
        let current = self.current.number;
        self.kept.iter().filter(move |v| v.number < current)
    }

    /// The version a rollback without a version goes back to: the newest older one kept.
    pub fn previous(&self) -> Option<&VersionInfo> {
        self.older().next()
    }

    /// The versions a rollback left, newer than the current one, still written to until
    /// they are retired.
    pub fn left(&self) -> impl Iterator<Item = &VersionInfo> + '_ {
        let current = self.current.number;
        self.kept.iter().filter(move |v| v.number > current)
    }

    /// Keeps `v` (a version no longer current) among the kept versions, newest first.
    pub(crate) fn keep_version(&mut self, v: VersionInfo) {
        self.kept.push(v);
        self.kept.sort_by_key(|v| std::cmp::Reverse(v.number));
    }

    /// Drops the older versions beyond `keep - 1` (the oldest first) and returns their
    /// numbers, for the caller to retire. The versions a rollback left are not counted.
    pub(crate) fn drop_beyond_keep(&mut self) -> Vec<u32> {
        let current = self.current.number;
        let room = self.keep.saturating_sub(1) as usize;
        let mut older = 0;
        let mut dropped = Vec::new();
        self.kept.retain(|v| {
            if v.number > current {
                return true;
            }
            older += 1;
            if older <= room {
                true
            } else {
                dropped.push(v.number);
                false
            }
        });
        dropped
    }

    /// Serializes the record (the name is the key):
    ///
    /// ```text
    /// format: u8 (3) | id: u32 | prefix_len: u32 | prefix | current: version
    ///   | next_version: u32 | rewind_ms: u64 | pushing version: u32 (0: none)
    ///   | pushing started_ms: i64 | created_ms: i64 | compression: u8 (0 none, 1 lz4, 2 zstd)
    ///   | keep: u32 | kept_n: u32 | kept: version * kept_n (newest first)
    /// version := number: u32 | records: u64 | bytes: u64 | created_ms: i64   (all LE)
    /// ```
    ///
    /// Formats 1 and 2 hold `current | previous` (number 0: none) after the prefix, then the
    /// fields from `next_version` to `created_ms`, then (format 2) the compression; they read
    /// as `keep` 2 and the previous version kept.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(80 + self.prefix.len() + VERSION_LEN * self.kept.len());
        o.push(FORMAT);
        o.extend_from_slice(&self.id.to_le_bytes());
        o.extend_from_slice(&(self.prefix.len() as u32).to_le_bytes());
        o.extend_from_slice(&self.prefix);
        put_version(&mut o, &self.current);
        o.extend_from_slice(&self.next_version.to_le_bytes());
        o.extend_from_slice(&self.rewind_ms.to_le_bytes());
        let p = self.pushing.unwrap_or_default();
        o.extend_from_slice(&p.version.to_le_bytes());
        o.extend_from_slice(&p.started_ms.to_le_bytes());
        o.extend_from_slice(&self.created_ms.to_le_bytes());
        o.push(codec_byte(self.compression));
        o.extend_from_slice(&self.keep.to_le_bytes());
        o.extend_from_slice(&(self.kept.len() as u32).to_le_bytes());
        for v in &self.kept {
            put_version(&mut o, v);
        }
        o
    }

    /// Parses a record stored under `name`.
    pub fn decode(name: &str, b: &[u8]) -> Result<StoreMeta, CorruptMeta> {
        let mut r = Reader(b);
        let format = r.u8()?;
        if !(1..=FORMAT).contains(&format) {
            return Err(CorruptMeta("unknown format"));
        }
        let id = r.u32()?;
        let plen = r.u32()? as usize;
        let prefix = r.take(plen)?.to_vec();
        let current = r.version()?;
        let previous = if format < 3 {
            Some(r.version()?).filter(|v| v.number != 0)
        } else {
            None
        };
        let next_version = r.u32()?;
        let rewind_ms = r.u64()?;
        let pv = r.u32()?;
        let ps = r.u64()? as i64;
        let created_ms = r.u64()? as i64;
        let compression = if format == 1 {
            Compression::None
        } else {
            codec_of(r.u8()?).ok_or(CorruptMeta("unknown compression"))?
        };
        let (keep, kept) = if format < 3 {
            (
                super::settings::DEFAULT_KEEP,
                previous.into_iter().collect(),
            )
        } else {
            let keep = r.u32()?;
            let n = r.u32()? as usize;
            if n > r.0.len() / VERSION_LEN {
                return Err(CorruptMeta("more kept versions than bytes"));
            }
            let mut kept = Vec::with_capacity(n);
            for _ in 0..n {
                kept.push(r.version()?);
            }
            (keep, kept)
        };
        if !r.0.is_empty() {
            return Err(CorruptMeta("trailing bytes"));
        }
        let newest_first = kept.windows(2).all(|w| w[0].number > w[1].number);
        let numbered = kept
            .iter()
            .all(|v| v.number != 0 && v.number != current.number && v.number < next_version);
        if prefix.is_empty()
            || current.number == 0
            || next_version <= current.number
            || keep == 0
            || !newest_first
            || !numbered
        {
            return Err(CorruptMeta("invalid fields"));
        }
        Ok(StoreMeta {
            name: name.to_string(),
            id,
            prefix,
            current,
            kept,
            keep,
            next_version,
            rewind_ms,
            pushing: (pv != 0).then_some(Pushing {
                version: pv,
                started_ms: ps,
            }),
            created_ms,
            compression,
        })
    }
}

fn put_version(o: &mut Vec<u8>, v: &VersionInfo) {
    o.extend_from_slice(&v.number.to_le_bytes());
    o.extend_from_slice(&v.records.to_le_bytes());
    o.extend_from_slice(&v.bytes.to_le_bytes());
    o.extend_from_slice(&v.created_ms.to_le_bytes());
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CorruptMeta> {
        if self.0.len() < n {
            return Err(CorruptMeta("truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, CorruptMeta> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, CorruptMeta> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, CorruptMeta> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn version(&mut self) -> Result<VersionInfo, CorruptMeta> {
        Ok(VersionInfo {
            number: self.u32()?,
            records: self.u64()?,
            bytes: self.u64()?,
            created_ms: self.u64()? as i64,
        })
    }
}

/// Every store, indexed for routing. Immutable: a change builds a new catalog.
///
/// A catalog has one routing table per partition of the keyspace: one on a single node; in
/// cluster mode one per partition of the log, because each partition applies its store
/// changes (create, swap, rollback...) at its own offsets, and a key is routed by its
/// partition's table. [`Catalog::get`], [`Catalog::iter`] and the single-partition changes
/// speak for partition 0, the only one on a single node.
#[derive(Debug, Clone)]
pub struct Catalog {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, Default)]
struct Part {
    by_name: BTreeMap<String, Arc<StoreMeta>>,
    by_prefix: BTreeMap<Vec<u8>, Arc<StoreMeta>>,
    /// Cluster mode: the offset of the cluster catalog's state the partition's last store
    /// change was derived from.
    at: u64,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::partitioned(1)
    }
}

impl Catalog {
    /// A catalog of `stores`, on a single partition.
    pub fn new(stores: impl IntoIterator<Item = StoreMeta>) -> Catalog {
        let mut c = Catalog::default();
        for s in stores {
            c.parts[0].insert(s);
        }
        c
    }

    /// An empty catalog of `partitions` partitions (at least one).
    pub fn partitioned(partitions: u32) -> Catalog {
        Catalog {
            parts: vec![Part::default(); partitions.max(1) as usize],
        }
    }

    /// How many partitions the catalog routes for.
    pub fn partitions(&self) -> u32 {
        self.parts.len() as u32
    }

    /// True when there is no store in any partition (every key is in the default store).
    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(|p| p.by_name.is_empty())
    }

    /// The store named `name` (partition 0's).
    pub fn get(&self, name: &str) -> Option<&Arc<StoreMeta>> {
        self.get_in(0, name)
    }

    /// The store named `name` as partition `p` holds it.
    pub fn get_in(&self, p: u32, name: &str) -> Option<&Arc<StoreMeta>> {
        self.parts.get(p as usize)?.by_name.get(name)
    }

    /// Every store of partition 0, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<StoreMeta>> {
        self.parts[0].by_name.values()
    }

    /// Every store of partition `p`, by name.
    pub fn iter_in(&self, p: u32) -> impl Iterator<Item = &Arc<StoreMeta>> {
        self.parts
            .get(p as usize)
            .into_iter()
            .flat_map(|p| p.by_name.values())
    }

    /// Every store of every partition, with its partition.
    pub fn all(&self) -> impl Iterator<Item = (u32, &Arc<StoreMeta>)> {
        self.parts
            .iter()
            .enumerate()
            .flat_map(|(p, part)| part.by_name.values().map(move |s| (p as u32, s)))
    }

    /// Every store of partition `p`, by prefix (key order).
    pub fn by_prefix_in(&self, p: u32) -> impl Iterator<Item = &Arc<StoreMeta>> {
        self.parts
            .get(p as usize)
            .into_iter()
            .flat_map(|p| p.by_prefix.values())
    }

    /// The store `key` (of database 0) belongs to, if any, as its partition holds it.
    pub fn route(&self, key: &[u8]) -> Option<&Arc<StoreMeta>> {
        let part = if self.parts.len() == 1 {
            &self.parts[0]
        } else {
            &self.parts[crate::slot::key_partition(key, self.partitions()) as usize]
        };
        part.route(key)
    }

    /// The offset of the cluster catalog's state partition `p`'s last store change was
    /// derived from (cluster mode; 0 before any).
    pub fn at_in(&self, p: u32) -> u64 {
        self.parts.get(p as usize).map_or(0, |p| p.at)
    }

    /// Records that partition `p`'s stores follow the cluster catalog's state at `at`.
    pub fn set_at(&mut self, p: u32, at: u64) {
        if let Some(part) = self.parts.get_mut(p as usize) {
            part.at = at;
        }
    }

    /// Why `prefix` cannot be a new store's prefix in partition `p`, if it cannot.
    pub fn prefix_conflict_in(&self, p: u32, prefix: &[u8]) -> Option<&Arc<StoreMeta>> {
        self.parts.get(p as usize)?.prefix_conflict(prefix)
    }

    /// Why `prefix` cannot be a new store's prefix, if it cannot.
    pub fn prefix_conflict(&self, prefix: &[u8]) -> Option<&Arc<StoreMeta>> {
        self.prefix_conflict_in(0, prefix)
    }

    /// A copy with `meta` added or replaced (in partition 0).
    pub fn with(&self, meta: StoreMeta) -> Catalog {
        self.with_in(0, meta)
    }

    /// A copy with `meta` added or replaced in partition `p`.
    pub fn with_in(&self, p: u32, meta: StoreMeta) -> Catalog {
        let mut c = self.clone();
        if let Some(part) = c.parts.get_mut(p as usize) {
            if let Some(old) = part.by_name.get(&meta.name) {
                let prefix = old.prefix.clone();
                part.by_prefix.remove(&prefix);
            }
            part.insert(meta);
        }
        c
    }

    /// A copy without the store `name` (in partition 0).
    pub fn without(&self, name: &str) -> Catalog {
        self.without_in(0, name)
    }

    /// A copy without the store `name` in partition `p`.
    pub fn without_in(&self, p: u32, name: &str) -> Catalog {
        let mut c = self.clone();
        if let Some(part) = c.parts.get_mut(p as usize) {
            if let Some(old) = part.by_name.remove(name) {
                part.by_prefix.remove(&old.prefix);
            }
        }
        c
    }
}

impl Part {
    fn route(&self, key: &[u8]) -> Option<&Arc<StoreMeta>> {
        if self.by_prefix.is_empty() {
            return None;
        }
        let (p, s) = self
            .by_prefix
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()?;
        key.starts_with(p).then_some(s)
    }

    fn prefix_conflict(&self, prefix: &[u8]) -> Option<&Arc<StoreMeta>> {
        self.by_prefix
            .iter()
            .find(|(p, _)| p.starts_with(prefix) || prefix.starts_with(p))
            .map(|(_, s)| s)
    }

    fn insert(&mut self, s: StoreMeta) {
        let s = Arc::new(s);
        self.by_prefix.insert(s.prefix.clone(), Arc::clone(&s));
        self.by_name.insert(s.name.clone(), s);
    }
}

/// Validates a store name: 1..=128 bytes of `[A-Za-z0-9_.-]`.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
}

/// The engine key of `key` in version `version` of store `id`.
pub fn version_key(id: u32, version: u32, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + key.len());
    k.push(VERSION_DATA);
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// `[lower, upper)` of every key of one version.
pub fn version_range(id: u32, version: u32) -> (Vec<u8>, Vec<u8>) {
    let lo = version_key(id, version, b"");
    let hi = crate::layout::next_prefix(&lo);
    (lo, hi)
}

/// `[lower, upper)` of every version of store `id`.
pub fn store_data_range(id: u32) -> (Vec<u8>, Vec<u8>) {
    let mut lo = vec![VERSION_DATA];
    lo.extend_from_slice(&id.to_be_bytes());
    let hi = crate::layout::next_prefix(&lo);
    (lo, hi)
}

/// The key of real-time log entry `n` of store `id`.
pub fn rt_key(id: u32, n: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(13);
    k.push(RT_LOG);
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(&n.to_be_bytes());
    k
}

/// `[lower, upper)` of store `id`'s real-time log.
pub fn rt_range(id: u32) -> (Vec<u8>, Vec<u8>) {
    let mut lo = vec![RT_LOG];
    lo.extend_from_slice(&id.to_be_bytes());
    let hi = crate::layout::next_prefix(&lo);
    (lo, hi)
}

/// The entry number of a real-time log key.
pub fn rt_number(k: &[u8]) -> Option<u64> {
    let b: [u8; 8] = k.get(5..13)?.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

/// One streamed write, as the real-time log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtEntry<'a> {
    /// When it was made, Unix ms.
    pub at_ms: i64,
    /// The user key.
    pub key: &'a [u8],
    /// The value record written, or `None` for a deletion.
    pub record: Option<&'a [u8]>,
}

impl RtEntry<'_> {
    /// Serializes the entry.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(17 + self.key.len() + self.record.map_or(0, |r| r.len()));
        o.push(u8::from(self.record.is_some()));
        o.extend_from_slice(&self.at_ms.to_le_bytes());
        o.extend_from_slice(&(self.key.len() as u32).to_le_bytes());
        o.extend_from_slice(self.key);
        if let Some(r) = self.record {
            o.extend_from_slice(r);
        }
        o
    }

    /// Parses an entry.
    pub fn decode(b: &[u8]) -> Result<RtEntry<'_>, CorruptMeta> {
        let mut r = Reader(b);
        let op = r.u8()?;
        let at_ms = r.u64()? as i64;
        let klen = r.u32()? as usize;
        let key = r.take(klen)?;
        let record = match op {
            0 if r.0.is_empty() => None,
            1 => Some(r.0),
            _ => return Err(CorruptMeta("bad real-time log entry")),
        };
        Ok(RtEntry { at_ms, key, record })
    }
}

/// The key of store `name`'s record.
pub fn meta_key(name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + name.len());
    k.push(STORE_META);
    k.extend_from_slice(name.as_bytes());
    k
}

/// The key of store `name`'s record as partition `p` holds it (cluster mode). A name never
/// holds a zero byte, so these keys never collide with a single node's.
pub fn part_meta_key(name: &str, p: u32) -> Vec<u8> {
    let mut k = meta_key(name);
    k.push(0);
    k.extend_from_slice(&p.to_be_bytes());
    k
}

/// The key of store `name`'s record in partition `p` of a catalog of `partitions`: a single
/// node's key when there is one partition.
pub fn record_key(name: &str, p: u32, partitions: u32) -> Vec<u8> {
    if partitions <= 1 {
        meta_key(name)
    } else {
        part_meta_key(name, p)
    }
}

/// Parses a store record's key: its name, and its partition in cluster mode.
pub fn parse_meta_key(k: &[u8]) -> Option<(String, Option<u32>)> {
    let rest = k.strip_prefix(&[STORE_META])?;
    match rest.iter().position(|&b| b == 0) {
        None => Some((String::from_utf8_lossy(rest).into_owned(), None)),
        Some(i) => {
            let p: [u8; 4] = rest[i + 1..].try_into().ok()?;
            Some((
                String::from_utf8_lossy(&rest[..i]).into_owned(),
                Some(u32::from_be_bytes(p)),
            ))
        }
    }
}

/// The key holding the next store id.
pub fn next_id_key() -> Vec<u8> {
    vec![STORE_META]
}

/// The key marking `(id, version)` as retired.
pub fn retired_key(id: u32, version: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    k.push(RETIRED);
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// The key marking `(id, version)` as retired by partition `p` of `partitions`: a single
/// node's marker when there is one partition. In cluster mode every partition retires a
/// version on its own, at its own offset, and the version's data (shared by the partitions,
/// keyed by user key) is removed once every partition has retired it.
pub fn retired_key_in(id: u32, version: u32, p: u32, partitions: u32) -> Vec<u8> {
    let mut k = retired_key(id, version);
    if partitions > 1 {
        k.extend_from_slice(&p.to_be_bytes());
    }
    k
}

/// The key of partition `p`'s cluster catalog position (cluster mode).
pub fn catalog_at_key(p: u32) -> Vec<u8> {
    let mut k = vec![CATALOG_AT];
    k.extend_from_slice(&p.to_be_bytes());
    k
}

/// The key marking version `version` of store `id` as staged (cluster mode).
pub fn staged_key(id: u32, version: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    k.push(STAGED);
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// `[lower, upper)` of the staged markers of store `id`.
pub fn staged_range(id: u32) -> (Vec<u8>, Vec<u8>) {
    let mut lo = vec![STAGED];
    lo.extend_from_slice(&id.to_be_bytes());
    let hi = crate::layout::next_prefix(&lo);
    (lo, hi)
}

/// Parses a retired-range key: store id, version, and the partition that retired it (cluster
/// mode).
pub fn parse_retired(k: &[u8]) -> Option<(u32, u32, Option<u32>)> {
    if (k.len() != 9 && k.len() != 13) || k[0] != RETIRED {
        return None;
    }
    let id = u32::from_be_bytes(k[1..5].try_into().ok()?);
    let v = u32::from_be_bytes(k[5..9].try_into().ok()?);
    let p = match k.get(9..13) {
        Some(b) => Some(u32::from_be_bytes(b.try_into().ok()?)),
        None => None,
    };
    Some((id, v, p))
}

/// The engine's partitioner for the server's keyspace: a table file never mixes two store
/// versions, two real-time logs, or two kinds of keys, so every new version's range is free
/// for ingestion and a retired version's files can be dropped whole.
pub fn partition_len(k: &[u8]) -> usize {
    match k.first() {
        Some(&VERSION_DATA) => 9,
        Some(&RT_LOG) => 5,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(number: u32) -> VersionInfo {
        VersionInfo {
            number,
            records: 10 * u64::from(number),
            bytes: 100 * u64::from(number),
            created_ms: i64::from(number),
        }
    }

    fn meta(name: &str, prefix: &str) -> StoreMeta {
        StoreMeta {
            name: name.into(),
            id: 7,
            prefix: prefix.as_bytes().to_vec(),
            current: version(3),
            kept: vec![version(2)],
            keep: 2,
            next_version: 5,
            rewind_ms: 60_000,
            pushing: Some(Pushing {
                version: 4,
                started_ms: 99,
            }),
            created_ms: 1,
            compression: Compression::Zstd,
        }
    }

    #[test]
    fn store_records_round_trip_and_damage_is_refused() {
        let many = StoreMeta {
            current: version(5),
            kept: vec![version(7), version(4), version(2), version(1)],
            keep: 4,
            next_version: 9,
            pushing: None,
            ..meta("features", "features:")
        };
        let none = StoreMeta {
            kept: Vec::new(),
            keep: 1,
            ..meta("features", "features:")
        };
        for m in [meta("features", "features:"), many, none] {
            let b = m.encode();
            assert_eq!(StoreMeta::decode("features", &b), Ok(m.clone()));
            for cut in 0..b.len() {
                assert!(StoreMeta::decode("features", &b[..cut]).is_err(), "{cut}");
            }
            let mut extra = b.clone();
            extra.push(0);
            assert!(StoreMeta::decode("features", &extra).is_err());
        }
        let m = meta("features", "features:");
        let b = m.encode();
        // The codec byte follows created_ms; keep follows it.
        let codec_at = b.len() - 4 - 4 - VERSION_LEN - 1;
        let mut bad_codec = b.clone();
        bad_codec[codec_at] = 9;
        assert!(StoreMeta::decode("features", &bad_codec).is_err());
        let mut no_keep = b.clone();
        no_keep[codec_at + 1..codec_at + 5].copy_from_slice(&0u32.to_le_bytes());
        assert!(StoreMeta::decode("features", &no_keep).is_err());
        // Kept versions out of order, or naming the current one, are refused.
        for kept in [
            vec![version(1), version(2)],
            vec![version(3)],
            vec![version(2), version(2)],
            vec![version(6)],
        ] {
            let bad = StoreMeta { kept, ..m.clone() };
            assert!(
                StoreMeta::decode("features", &bad.encode()).is_err(),
                "{bad:?}"
            );
        }
    }

    /// Format 1's bytes: `current | previous` after the prefix, no codec, no keep.
    fn format_1(previous: u32) -> Vec<u8> {
        let mut b = vec![1u8];
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(b"f:");
        for v in [version(3), version(previous)] {
            put_version(&mut b, &v);
        }
        b.extend_from_slice(&5u32.to_le_bytes());
        b.extend_from_slice(&60_000u64.to_le_bytes());
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&99i64.to_le_bytes());
        b.extend_from_slice(&1i64.to_le_bytes());
        b
    }

    /// A record as format 1 wrote it, before stores had a compression or kept more than one
    /// older version: read as none, keeping 2 versions.
    #[test]
    fn a_format_1_record_reads_with_no_compression_and_its_previous_kept() {
        let mut b = format_1(2);
        let want = StoreMeta {
            compression: Compression::None,
            ..meta("f", "f:")
        };
        assert_eq!(StoreMeta::decode("f", &b), Ok(want.clone()));
        // No previous version (number 0): nothing kept.
        assert_eq!(
            StoreMeta::decode("f", &format_1(0)),
            Ok(StoreMeta {
                kept: Vec::new(),
                ..want
            })
        );
        b.push(0);
        assert!(
            StoreMeta::decode("f", &b).is_err(),
            "format 1 has no codec byte"
        );
    }

    /// Format 2: format 1 and the codec; its previous version may be one a rollback left.
    #[test]
    fn a_format_2_record_reads_with_its_codec_and_a_left_version_kept() {
        let mut b = format_1(4);
        b[0] = 2;
        b.push(1);
        let m = StoreMeta::decode("f", &b).unwrap();
        assert_eq!(m.compression, Compression::Lz4);
        assert_eq!((m.keep, m.kept.clone()), (2, vec![version(4)]));
        assert_eq!(m.left().map(|v| v.number).collect::<Vec<_>>(), [4]);
        assert_eq!(m.previous(), None);
    }

    #[test]
    fn versions_beyond_keep_are_dropped_oldest_first_and_left_ones_stay() {
        let mut m = StoreMeta {
            current: version(5),
            kept: vec![version(7), version(4), version(3), version(1)],
            keep: 3,
            next_version: 8,
            ..meta("f", "f:")
        };
        assert_eq!(m.previous().map(|v| v.number), Some(4));
        assert_eq!(m.live_versions().collect::<Vec<_>>(), [5, 7, 4, 3, 1]);
        assert_eq!(m.drop_beyond_keep(), [1]);
        assert_eq!(m.kept, [version(7), version(4), version(3)]);
        m.keep = 1;
        assert_eq!(m.drop_beyond_keep(), [4, 3]);
        assert_eq!(m.kept, [version(7)]);
        m.keep_version(version(6));
        assert_eq!(m.kept, [version(7), version(6)]);
    }

    #[test]
    fn routing_takes_the_store_whose_prefix_starts_the_key() {
        let c = Catalog::new([meta("a", "ab:"), meta("b", "b:"), meta("c", "abd")]);
        assert_eq!(c.route(b"ab:1").map(|s| s.name.as_str()), Some("a"));
        assert_eq!(c.route(b"ab:").map(|s| s.name.as_str()), Some("a"));
        assert_eq!(c.route(b"abd").map(|s| s.name.as_str()), Some("c"));
        assert_eq!(c.route(b"abc"), None);
        assert_eq!(c.route(b"ab"), None);
        assert_eq!(c.route(b"b:x").map(|s| s.name.as_str()), Some("b"));
        assert_eq!(c.route(b"c"), None);
        assert_eq!(c.route(b""), None);
        assert!(c.prefix_conflict(b"ab").is_some());
        assert!(c.prefix_conflict(b"ab:x").is_some());
        assert!(c.prefix_conflict(b"abe").is_none());
        let c2 = c.without("a");
        assert_eq!(c2.route(b"ab:1"), None);
        assert_eq!(c.route(b"ab:1").map(|s| s.name.as_str()), Some("a"));
    }

    #[test]
    fn rt_entries_round_trip() {
        for e in [
            RtEntry {
                at_ms: 5,
                key: b"k",
                record: Some(b"\x00v"),
            },
            RtEntry {
                at_ms: -1,
                key: b"",
                record: None,
            },
        ] {
            assert_eq!(RtEntry::decode(&e.encode()), Ok(e.clone()));
        }
        assert!(RtEntry::decode(b"\x02").is_err());
    }

    #[test]
    fn keys_decode_back() {
        let k = version_key(1, 2, b"x");
        assert_eq!(rt_number(&rt_key(9, 77)), Some(77));
        assert_eq!(parse_retired(&retired_key(3, 4)), Some((3, 4, None)));
        assert_eq!(
            parse_retired(&retired_key_in(3, 4, 0, 1)),
            Some((3, 4, None))
        );
        assert_eq!(
            parse_retired(&retired_key_in(3, 4, 2, 3)),
            Some((3, 4, Some(2)))
        );
        assert_eq!(
            parse_meta_key(&meta_key("features")),
            Some(("features".into(), None))
        );
        assert_eq!(
            parse_meta_key(&part_meta_key("features", 7)),
            Some(("features".into(), Some(7)))
        );
        assert_eq!(record_key("f", 0, 1), meta_key("f"));
        let (lo, hi) = version_range(1, 2);
        assert!(lo < k && k < hi);
        assert_eq!(partition_len(&k), 9);
    }
}
