//! Staged versions (cluster mode): a version's records loaded into tables the same way a push
//! loads them (sorted with bounded memory, written straight into tables, linked into the
//! bottom level), without a catalog change. Each partition of the log swaps the version in at
//! its own offset afterwards (`PartStoreOp::PushEnd`); until then nothing routes to it, and a
//! version no partition swaps in is retired by every partition and removed.

use std::sync::Arc;

use rialto_io::FsRef;
use rialto_lsm::Db;
use rialto_sort::{DuplicatePolicy, SortOptions, Sorter};

use rialto_engine::{KvEngine, WriteBatch};
use rialto_txn::Merger;

use super::catalog::{staged_key, version_key, version_range};
use super::push::SpillDir;
use super::table_writer;
use super::{PushPageCache, StoreError, StoreResult, Stores};
use crate::layout;

/// A version being loaded for the cluster.
pub struct Staging {
    id: u32,
    version: u32,
    prefix: Vec<u8>,
    sorter: Sorter,
    page_cache: PushPageCache,
    _spill_dir: SpillDir,
}

/// What a staged version holds once linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staged {
    /// Records loaded.
    pub records: u64,
    /// Key (with the store's prefix) and value bytes loaded.
    pub bytes: u64,
    /// Table files linked.
    pub files: u64,
}

impl Stores {
    /// Starts loading version `version` of store `id` (keys under `prefix`; records are added
    /// with keys relative to it). Every replica reads a key's records in the same order (one
    /// partition of the version's topic holds them all), so `duplicates` decides alike.
    pub fn stage(
        &self,
        fs: FsRef,
        id: u32,
        version: u32,
        prefix: &[u8],
        duplicates: DuplicatePolicy,
    ) -> StoreResult<Staging> {
        let spill_dir = SpillDir {
            fs: Arc::clone(&fs),
            path: self.opts.push_tmp_dir.join(format!("stage-{id}-{version}")),
        };
        let sorter = Sorter::new(
            fs,
            SortOptions {
                memory_limit: self.opts.push_memory_limit,
                tmp_dir: spill_dir.path.clone(),
                duplicates,
                max_key_len: layout::MAX_USER_KEY_LEN.saturating_sub(prefix.len()),
                max_value_len: layout::MAX_USER_VALUE_LEN,
            },
        )
        .map_err(|e| StoreError::Input(e.to_string()))?;
        Ok(Staging {
            id,
            version,
            prefix: prefix.to_vec(),
            sorter,
            page_cache: self.opts.push_page_cache,
            _spill_dir: spill_dir,
        })
    }
}

impl Staging {
    /// Adds a record (its key relative to the store's prefix).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.sorter
            .add(key, value)
            .map_err(|e| StoreError::Input(e.to_string()))
    }

    /// Records added so far.
    pub fn records(&self) -> u64 {
        self.sorter.stats().records
    }

    /// Sorts, writes and links the version's tables, then records the version as staged
    /// (durably); nothing routes to it yet.
    pub fn finish(self, db: &Db, merger: &Merger<Db>) -> StoreResult<Staged> {
        let page_cache_bytes = self.page_cache.budget(rialto_io::mem_available());
        let mut sorted = self
            .sorter
            .finish()
            .map_err(|e| StoreError::Input(e.to_string()))?;
        let ing = db.ingest_with(rialto_lsm::IngestOptions { page_cache_bytes })?;
        let head = version_key(self.id, self.version, &self.prefix);
        let written = table_writer::write_sorted(&mut sorted, ing, &head)?;
        let bytes = written.bytes + written.records * self.prefix.len() as u64;
        let ingested = written.sink.finish()?;
        let staged = Staged {
            records: ingested.entries,
            bytes,
            files: ingested.files,
        };
        mark(merger, self.id, self.version, &staged)?;
        Ok(staged)
    }
}

fn mark(merger: &Merger<Db>, id: u32, version: u32, staged: &Staged) -> StoreResult<()> {
    let mut v = Vec::with_capacity(16);
    v.extend_from_slice(&staged.records.to_le_bytes());
    v.extend_from_slice(&staged.bytes.to_le_bytes());
    let mut b = WriteBatch::new();
    b.put(&staged_key(id, version), &v);
    merger.write(b).wait()?;
    Ok(())
}

impl Stores {
    /// Version `version` of store `id` as staged on this node, if it is.
    pub fn staged(&self, db: &Db, id: u32, version: u32) -> StoreResult<Option<Staged>> {
        let Some(v) = db.get(&staged_key(id, version))? else {
            return Ok(None);
        };
        let (r, b) = v.split_at(8.min(v.len()));
        match (<[u8; 8]>::try_from(r), <[u8; 8]>::try_from(b)) {
            (Ok(r), Ok(b)) => Ok(Some(Staged {
                records: u64::from_le_bytes(r),
                bytes: u64::from_le_bytes(b),
                files: 0,
            })),
            _ => Err(StoreError::Corrupt("corrupt staged version marker".into())),
        }
    }

    /// Records version `version` of store `id` as staged with no data: a version superseded
    /// before this node loaded it (a node rebuilt from the log meets the swaps of versions
    /// whose topics are gone). The partition swaps it in and out again further on in its log,
    /// while the node is still catching up and serves none of it.
    pub fn stage_superseded(&self, merger: &Merger<Db>, id: u32, version: u32) -> StoreResult<()> {
        let empty = Staged {
            records: 0,
            bytes: 0,
            files: 0,
        };
        mark(merger, id, version, &empty)
    }

    /// Removes whatever a load of version `version` of store `id` interrupted by a stop left
    /// linked (before its marker was written), so that it can be loaded again.
    pub fn clear_unstaged(
        &self,
        db: &Db,
        merger: &Merger<Db>,
        id: u32,
        version: u32,
    ) -> StoreResult<()> {
        let (lo, hi) = version_range(id, version);
        db.drop_files_in_range(&lo, &hi)?;
        crate::chunked::delete_range(db, merger, &lo, &hi, |_| true)?;
        Ok(())
    }
}
