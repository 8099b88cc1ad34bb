//! An in-memory engine for the harness's own tests: a `BTreeMap` behind a `RwLock`.
//!
//! It lets every workload, the report and the comparison run without disk or a real engine.
//! Its statistics model an ideal engine: every user byte is written once to a "log", nothing
//! else, and the disk holds exactly the live keys and values.
//!
//! Test-only: compiled into the library's unit tests, and included by the integration tests
//! with `#[path]` (they provide `crate::engine` and `crate::error` as re-exports).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rialto_engine::{BatchOp, EngineStats};

use crate::engine::{BenchEngine, EngineConfig, EngineFactory, ScanFrom, Visitor};
use crate::error::Result;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// Opens [`MemEngine`]s. Databases live as long as the factory, keyed by path, so that a
/// reopen (as between benchmarks) sees earlier writes and an emptied directory starts fresh.
#[derive(Default)]
pub struct MemFactory {
    /// Name reported, so a comparison can pit two memory engines against each other.
    pub name: &'static str,
    dbs: Mutex<BTreeMap<std::path::PathBuf, Arc<RwLock<Map>>>>,
}

impl MemFactory {
    /// A factory whose engines are called `name`.
    pub fn new(name: &'static str) -> Self {
        MemFactory {
            name,
            ..MemFactory::default()
        }
    }
}

impl EngineFactory for MemFactory {
    fn name(&self) -> &'static str {
        self.name
    }

    fn open(&self, path: &Path, _cfg: &EngineConfig) -> Result<Box<dyn BenchEngine>> {
        let mut dbs = self.dbs.lock().unwrap_or_else(PoisonError::into_inner);
        // The harness empties the directory for a fresh database; mirror that here.
        let empty = std::fs::read_dir(path)
            .map(|mut d| d.all(|e| e.map(|e| e.file_name() == "RIALTOBENCH").unwrap_or(true)))
            .unwrap_or(true);
        if empty {
            dbs.remove(path);
        }
        let map = dbs.entry(path.to_path_buf()).or_default().clone();
        // Leave a file so that the directory counts as non-empty for the next open.
        let _ = std::fs::write(path.join("MEMDB"), b"");
        Ok(Box::new(MemEngine {
            name: self.name,
            map,
            user_bytes: AtomicU64::new(0),
        }))
    }
}

/// One in-memory database.
pub struct MemEngine {
    name: &'static str,
    map: Arc<RwLock<Map>>,
    user_bytes: AtomicU64,
}

impl MemEngine {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Map> {
        self.map.read().unwrap_or_else(PoisonError::into_inner)
    }
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Map> {
        self.map.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BenchEngine for MemEngine {
    fn writes_through_os(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn put(&self, key: &[u8], value: &[u8], _sync: bool) -> Result<()> {
        self.user_bytes
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        self.write().insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn write_batch(&self, ops: &[BatchOp<'_>], _sync: bool) -> Result<()> {
        let mut m = self.write();
        for op in ops {
            match *op {
                BatchOp::Put(k, v) => {
                    self.user_bytes
                        .fetch_add((k.len() + v.len()) as u64, Ordering::Relaxed);
                    m.insert(k.to_vec(), v.to_vec());
                }
                BatchOp::Delete(k) => {
                    self.user_bytes.fetch_add(k.len() as u64, Ordering::Relaxed);
                    m.remove(k);
                }
            }
        }
        Ok(())
    }

    fn delete(&self, key: &[u8], _sync: bool) -> Result<()> {
        self.user_bytes
            .fetch_add(key.len() as u64, Ordering::Relaxed);
        self.write().remove(key);
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.read().get(key).map(Vec::len))
    }

    fn scan(
        &self,
        from: ScanFrom<'_>,
        reverse: bool,
        limit: u64,
        visit: Visitor<'_>,
    ) -> Result<u64> {
        let m = self.read();
        let range = match (from, reverse) {
            (ScanFrom::End, _) => m.range::<[u8], _>((Bound::Unbounded, Bound::Unbounded)),
            (ScanFrom::Key(k), false) => m.range::<[u8], _>((Bound::Included(k), Bound::Unbounded)),
            (ScanFrom::Key(k), true) => m.range::<[u8], _>((Bound::Unbounded, Bound::Included(k))),
        };
        let mut n = 0;
        let mut each = |(k, v): (&Vec<u8>, &Vec<u8>)| {
            visit(k, v);
            n += 1;
        };
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        if reverse {
            range.rev().take(limit).for_each(&mut each);
        } else {
            range.take(limit).for_each(&mut each);
        }
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact_all(&self) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> Result<EngineStats> {
        let m = self.read();
        let live: u64 = m.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let user = self.user_bytes.load(Ordering::Relaxed);
        Ok(EngineStats {
            user_bytes_written: user,
            wal_bytes_written: user,
            live_data_bytes: live,
            disk_bytes: live,
            ..EngineStats::default()
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
