//! `ModelEngine`: the reference [`KvEngine`], the oracle of model-based tests.
//!
//! Like LevelDB's `ModelDB`, it exists to be obviously right rather than fast: the whole state
//! is one `BTreeMap<Vec<u8>, Bytes>` behind a lock, and every answer is read straight off that
//! map. The conformance suite ([`crate::conformance`]) compares real engines against it, and
//! runs itself against it to prove that the suite asks only for what the contract promises.
//!
//! Design, and the invariants it keeps:
//!
//! * The committed state is an `Arc<Map>`. A write takes the lock, applies the whole batch to
//!   the map (copying it first if a snapshot or iterator still shares it, via
//!   [`Arc::make_mut`]) and releases the lock, so readers see either none or all of a batch.
//! * A snapshot, and an iterator, hold a clone of the `Arc` taken under the lock: a frozen copy
//!   that no later write can change. Dropping them just drops the `Arc`.
//! * `flush` and `compact_range` are no-ops: nothing is on disk, and neither may change what
//!   a reader sees.
//! * Reopening: [`ModelEngine`] itself lives in memory only. [`ModelFactory`] gives it the
//!   open-from-a-directory life cycle the suite needs by keeping each directory's state in a
//!   registry, found again through a marker file it writes in the directory.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use bytes::Bytes;

use crate::{
    BatchOp, EngineIterator, EngineStats, Error, IterOptions, KvEngine, Result, WriteBatch,
    WriteOptions,
};

/// The whole state of a model engine: every live key and its value, in key order.
type Map = BTreeMap<Vec<u8>, Bytes>;

/// State shared by every handle of one model database (and kept across reopen by
/// [`ModelFactory`]).
#[derive(Debug, Default)]
struct Shared {
    /// The committed state. Writers replace its content under the write lock; readers clone
    /// the `Arc` under the read lock and then read without any lock.
    data: RwLock<Arc<Map>>,
    /// Key and value bytes of every committed batch, for [`EngineStats::user_bytes_written`].
    user_bytes_written: AtomicU64,
}

/// The reference engine: a `BTreeMap` behind a lock, snapshots as frozen copies.
///
/// Every method may be called from many threads at once (see [`KvEngine`]). Clones are
/// handles to the same database, not copies of it.
#[derive(Debug, Clone, Default)]
pub struct ModelEngine {
    shared: Arc<Shared>,
}

/// A frozen copy of a [`ModelEngine`]'s state.
#[derive(Debug, Clone)]
pub struct ModelSnapshot {
    map: Arc<Map>,
}

impl ModelSnapshot {
    /// Number of keys in the view (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the view holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl ModelEngine {
    /// An empty engine.
    pub fn new() -> Self {
        Self::default()
    }

    /// The committed state now. Never blocks behind readers for long: the lock is held only
    /// to clone an `Arc`.
    fn current(&self) -> Arc<Map> {
        // A panic while holding the lock cannot leave a half-applied batch behind (see
        // `write`), so a poisoned lock still guards a consistent map.
        Arc::clone(
            &self
                .shared
                .data
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Every key and value, in key order (for tests and diagnostics).
    pub fn entries(&self) -> Vec<(Vec<u8>, Bytes)> {
        self.current()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Number of live keys.
    pub fn len(&self) -> usize {
        self.current().len()
    }

    /// True when no key is live.
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }
}

impl KvEngine for ModelEngine {
    type Snapshot = ModelSnapshot;
    type Iter = ModelIterator;

    fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        Ok(self.current().get(key).cloned())
    }

    fn get_at(&self, snapshot: &ModelSnapshot, key: &[u8]) -> Result<Option<Bytes>> {
        Ok(snapshot.map.get(key).cloned())
    }

    /// Validates the whole batch first, so an invalid batch writes nothing; then applies its
    /// operations in order (a later operation on a key overwrites an earlier one) under the
    /// write lock, so no reader sees part of it.
    fn write(&self, batch: WriteBatch, _opts: WriteOptions) -> Result<()> {
        batch.validate()?;
        let mut guard = self
            .shared
            .data
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // Copies the map only when a snapshot or iterator still shares it.
        let map = Arc::make_mut(&mut guard);
        for op in batch.iter() {
            match op {
                BatchOp::Put(k, v) => {
                    map.insert(k.to_vec(), Bytes::copy_from_slice(v));
                }
                BatchOp::Delete(k) => {
                    map.remove(k);
                }
            }
        }
        self.shared
            .user_bytes_written
            .fetch_add(batch.payload_bytes(), Ordering::Relaxed);
        Ok(())
    }

    fn snapshot(&self) -> ModelSnapshot {
        ModelSnapshot {
            map: self.current(),
        }
    }

    fn iter(&self, opts: IterOptions<ModelSnapshot>) -> Result<ModelIterator> {
        let map = match opts.snapshot {
            Some(s) => s.map,
            None => self.current(),
        };
        Ok(ModelIterator::new(map, opts.lower, opts.upper))
    }

    /// Nothing to persist: the state lives in memory (and in [`ModelFactory`]'s registry).
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Nothing to compact; must not change any view.
    fn compact_range(&self, _start: Option<&[u8]>, _end: Option<&[u8]>) -> Result<()> {
        Ok(())
    }

    /// Mostly zero: the model writes no log and no table. `user_bytes_written` counts the
    /// payload of committed batches and `live_data_bytes` the key and value bytes now live.
    fn stats(&self) -> EngineStats {
        let live: usize = self.current().iter().map(|(k, v)| k.len() + v.len()).sum();
        EngineStats {
            user_bytes_written: self.shared.user_bytes_written.load(Ordering::Relaxed),
            live_data_bytes: live as u64,
            ..EngineStats::default()
        }
    }
}

/// Iterator of [`ModelEngine`]: a cursor over a frozen map, clamped to `[lower, upper)`.
///
/// Invariant: `current`, when set, is an entry of `map` whose key is within bounds. Every
/// move recomputes the position from the map with a fresh range query, so switching
/// direction needs no special case. Bounds with `lower >= upper` make an empty range.
#[derive(Debug)]
pub struct ModelIterator {
    map: Arc<Map>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    current: Option<(Vec<u8>, Bytes)>,
}

impl ModelIterator {
    fn new(map: Arc<Map>, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Self {
        ModelIterator {
            map,
            lower,
            upper,
            current: None,
        }
    }

    fn in_bounds(&self, key: &[u8]) -> bool {
        self.lower.as_deref().is_none_or(|l| key >= l)
            && self.upper.as_deref().is_none_or(|u| key < u)
    }

    /// Positions at `found` if it is within bounds, else makes the iterator invalid.
    fn settle(&mut self, found: Option<(Vec<u8>, Bytes)>) {
        self.current = found.filter(|(k, _)| self.in_bounds(k));
    }

    /// First entry whose key is after `from` (a half-open range: never panics).
    fn first_from(&self, from: Bound<&[u8]>) -> Option<(Vec<u8>, Bytes)> {
        self.map
            .range::<[u8], _>((from, Bound::Unbounded))
            .next()
            .map(|(k, v)| (k.clone(), v.clone()))
    }

    /// Last entry whose key is before `to` (a half-open range: never panics).
    fn last_before(&self, to: Bound<&[u8]>) -> Option<(Vec<u8>, Bytes)> {
        self.map
            .range::<[u8], _>((Bound::Unbounded, to))
            .next_back()
            .map(|(k, v)| (k.clone(), v.clone()))
    }

    #[track_caller]
    fn current_key(&self) -> &[u8] {
        match &self.current {
            Some((k, _)) => k,
            None => panic!(
                "ModelIterator: key/next/prev called on an invalid iterator (REQUIRES valid())"
            ),
        }
    }
}

impl EngineIterator for ModelIterator {
    fn seek_to_first(&mut self) {
        let lower = self.lower.clone().unwrap_or_default();
        self.seek(&lower);
    }

    fn seek_to_last(&mut self) {
        let found = match self.upper.as_deref() {
            Some(u) => self.last_before(Bound::Excluded(u)),
            None => self.last_before(Bound::Unbounded),
        };
        self.settle(found);
    }

    /// First key `>= max(key, lower)`, if it is below `upper`.
    fn seek(&mut self, key: &[u8]) {
        let start = match self.lower.as_deref() {
            Some(l) if l > key => l,
            _ => key,
        };
        let found = self.first_from(Bound::Included(start));
        self.settle(found);
    }

    /// Last key `<= key` that is also `< upper`, if it is at or above `lower`.
    fn seek_for_prev(&mut self, key: &[u8]) {
        let end = match self.upper.as_deref() {
            Some(u) if u <= key => Bound::Excluded(u),
            _ => Bound::Included(key),
        };
        let found = self.last_before(end);
        self.settle(found);
    }

    /// # Panics
    /// When the iterator is not valid (a caller bug; the contract requires `valid()`).
    fn next(&mut self) {
        let found = self.first_from(Bound::Excluded(self.current_key()));
        self.settle(found);
    }

    /// # Panics
    /// When the iterator is not valid (a caller bug; the contract requires `valid()`).
    fn prev(&mut self) {
        let found = self.last_before(Bound::Excluded(self.current_key()));
        self.settle(found);
    }

    fn valid(&self) -> bool {
        self.current.is_some()
    }

    /// # Panics
    /// When the iterator is not valid (a caller bug; the contract requires `valid()`).
    fn key(&self) -> &[u8] {
        self.current_key()
    }

    /// # Panics
    /// When the iterator is not valid (a caller bug; the contract requires `valid()`).
    fn value(&self) -> &[u8] {
        match &self.current {
            Some((_, v)) => v,
            None => panic!("ModelIterator: value called on an invalid iterator (REQUIRES valid())"),
        }
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// Name of the marker file that ties a directory to its state in a [`ModelFactory`].
const MARKER_FILE: &str = "MODEL_ENGINE_ID";

/// Source of registry ids, unique in the process so that a directory marked by one factory is
/// never mistaken for another factory's.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Opens [`ModelEngine`]s "stored" in directories, so the model can be dropped and reopened
/// like a real engine.
///
/// The state never touches the disk: the factory keeps it in memory, keyed by an id that it
/// writes to a marker file in the directory. Opening a directory without the marker creates
/// a fresh, empty engine; opening it again (after the previous engine was dropped, or while it
/// is still open) returns an engine sharing the same state. The states live as long as the
/// factory.
#[derive(Debug, Default)]
pub struct ModelFactory {
    registry: Mutex<HashMap<u64, Arc<Shared>>>,
}

impl ModelFactory {
    /// A factory with no database yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens (creating if needed) the model engine of `dir`.
    ///
    /// Errors: [`Error::Io`] if the directory or marker cannot be created or read;
    /// [`Error::InvalidArgument`] if `dir` was created by another factory (its state is not
    /// here).
    pub fn open_dir(&self, dir: &Path) -> Result<ModelEngine> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("create directory {}", dir.display()), e))?;
        let marker: PathBuf = dir.join(MARKER_FILE);
        let mut registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        match std::fs::read_to_string(&marker) {
            Ok(text) => {
                let id: u64 = text.trim().parse().map_err(|_| {
                    Error::corruption(marker.display().to_string(), 0, "marker is not an id")
                })?;
                let shared = registry.get(&id).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{} holds a model engine of another ModelFactory",
                        dir.display()
                    ))
                })?;
                Ok(ModelEngine {
                    shared: Arc::clone(shared),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                std::fs::write(&marker, id.to_string())
                    .map_err(|e| Error::io(format!("write {}", marker.display()), e))?;
                let shared = Arc::new(Shared::default());
                registry.insert(id, Arc::clone(&shared));
                Ok(ModelEngine { shared })
            }
            Err(e) => Err(Error::io(format!("read {}", marker.display()), e)),
        }
    }
}

#[cfg(feature = "conformance")]
impl crate::conformance::EngineFactory for ModelFactory {
    type Engine = ModelEngine;

    fn open(&self, dir: &Path) -> Result<ModelEngine> {
        self.open_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(e: &ModelEngine, k: &[u8], v: &[u8]) {
        e.put(k, v, WriteOptions::default()).expect("put");
    }

    fn forward(it: &mut ModelIterator) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        out
    }

    fn bounded(e: &ModelEngine, lower: &[u8], upper: &[u8]) -> ModelIterator {
        e.iter(IterOptions {
            lower: Some(lower.to_vec()),
            upper: Some(upper.to_vec()),
            snapshot: None,
        })
        .expect("iter")
    }

    #[test]
    fn bounds_clamp_every_seek() {
        let e = ModelEngine::new();
        for k in [b"a", b"b", b"c", b"d", b"e"] {
            put(&e, k, k);
        }
        let mut it = bounded(&e, b"b", b"d");
        assert_eq!(forward(&mut it), vec![b"b".to_vec(), b"c".to_vec()]);
        it.seek(b"a");
        assert_eq!(it.key(), b"b");
        it.seek(b"d");
        assert!(!it.valid());
        it.seek_for_prev(b"z");
        assert_eq!(it.key(), b"c");
        it.seek_for_prev(b"a");
        assert!(!it.valid());
        it.seek_to_last();
        assert_eq!(it.key(), b"c");
        it.prev();
        assert_eq!(it.key(), b"b");
        it.prev();
        assert!(!it.valid());
    }

    #[test]
    fn inverted_and_empty_bounds_do_not_panic() {
        let e = ModelEngine::new();
        put(&e, b"b", b"1");
        for (l, u) in [(&b"c"[..], &b"a"[..]), (b"b", b"b"), (b"", b"")] {
            let mut it = bounded(&e, l, u);
            assert!(forward(&mut it).is_empty());
            it.seek_to_last();
            assert!(!it.valid());
            it.seek(b"b");
            assert!(!it.valid());
            it.seek_for_prev(b"b");
            assert!(!it.valid());
        }
    }

    #[test]
    fn snapshot_and_iterator_are_frozen() {
        let e = ModelEngine::new();
        put(&e, b"a", b"1");
        let snap = e.snapshot();
        let mut it = e
            .iter(IterOptions {
                lower: None,
                upper: None,
                snapshot: None,
            })
            .expect("iter");
        put(&e, b"a", b"2");
        put(&e, b"b", b"2");
        e.delete(b"a", WriteOptions::default()).expect("delete");
        assert_eq!(
            e.get_at(&snap, b"a").expect("get_at"),
            Some(Bytes::from_static(b"1"))
        );
        assert_eq!(e.get_at(&snap, b"b").expect("get_at"), None);
        assert_eq!(forward(&mut it), vec![b"a".to_vec()]);
        assert_eq!(e.get(b"a").expect("get"), None);
        assert_eq!(snap.len(), 1);
    }

    #[test]
    fn invalid_batch_writes_nothing_and_last_op_wins() {
        let e = ModelEngine::new();
        let mut b = WriteBatch::new();
        b.put(b"ok", b"1");
        b.put(&vec![0u8; crate::MAX_KEY_LEN + 1], b"x");
        assert!(matches!(
            e.write(b, WriteOptions::default()),
            Err(Error::InvalidArgument(_))
        ));
        assert!(e.is_empty());
        let mut b = WriteBatch::new();
        b.put(b"k", b"1");
        b.delete(b"k");
        b.put(b"k", b"2");
        b.put(b"j", b"1");
        b.delete(b"j");
        e.write(b, WriteOptions::default()).expect("write");
        assert_eq!(e.entries(), vec![(b"k".to_vec(), Bytes::from_static(b"2"))]);
        assert!(e.stats().user_bytes_written > 0);
    }

    #[test]
    fn factory_reopens_the_same_state() {
        let tmp = tempfile_dir();
        let f = ModelFactory::new();
        let e = f.open_dir(&tmp).expect("open");
        put(&e, b"a", b"1");
        drop(e);
        let e = f.open_dir(&tmp).expect("reopen");
        assert_eq!(e.get(b"a").expect("get"), Some(Bytes::from_static(b"1")));
        let other = ModelFactory::new();
        assert!(matches!(
            other.open_dir(&tmp),
            Err(Error::InvalidArgument(_))
        ));
        let _ = std::fs::remove_dir_all(&tmp);
    }

    /// A unique scratch directory without depending on `tempfile` (which is optional).
    fn tempfile_dir() -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        std::env::temp_dir().join(format!(
            "rialto-model-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
    }
}
