//! Staged versions (cluster mode): a version's records, already in key order, written straight
//! into tables linked into the bottom level with a push's table writer, without a catalog
//! change. Each partition of the log swaps the version in at its own offset afterwards
//! (`PartStoreOp::PushEnd`); until then nothing routes to it, and a version no partition swaps
//! in is retired by every partition and removed.

use rialto_engine::{KvEngine, WriteBatch};
use rialto_lsm::Db;
use rialto_txn::Merger;

use super::catalog::{staged_key, version_key, version_range};
use super::push_layout::PushLayout;
use super::table_writer;
use super::{StoreError, StoreResult, Stores};

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

/// Records in ascending order of key, each key once (keys relative to the store's prefix):
/// a version whose records arrive sorted is loaded without a sort.
pub trait SortedRecords {
    /// The next record; `None` at the end. A key not above the previous one is an error of
    /// the source's to report.
    fn next_record(&mut self) -> StoreResult<Option<(&[u8], &[u8])>>;
}

/// The records, counted per partition of their user keys (the store's prefix and the
/// record's key) as they pass.
struct Sorted<'a, T> {
    records: &'a mut T,
    partitions: u32,
    per_part: Vec<u64>,
    user_key: Vec<u8>,
    prefix_len: usize,
}

impl<T: SortedRecords> table_writer::SortedSource for Sorted<'_, T> {
    fn next_record(&mut self) -> StoreResult<Option<(&[u8], &[u8])>> {
        let r = self.records.next_record()?;
        if let (Some((k, _)), true) = (r, self.partitions > 1) {
            self.user_key.truncate(self.prefix_len);
            self.user_key.extend_from_slice(k);
            let p = crate::slot::key_partition(&self.user_key, self.partitions) as usize;
            if let Some(n) = self.per_part.get_mut(p) {
                *n += 1;
            }
        } else if let (Some(_), Some(n)) = (r, self.per_part.first_mut()) {
            *n += 1;
        }
        Ok(r)
    }
}

impl Stores {
    /// Loads version `version` of store `id` from records already in key order, straight into
    /// tables compressed with `compression` (no sort), as records of `layout`'s kind, and
    /// records it as staged; nothing routes to it yet. The values were checked against
    /// `layout` where the push took them (its coordinator).
    #[allow(clippy::too_many_arguments)]
    pub fn stage_sorted<T: SortedRecords>(
        &self,
        db: &Db,
        merger: &Merger<Db>,
        id: u32,
        version: u32,
        prefix: &[u8],
        compression: rialto_lsm::Compression,
        layout: PushLayout,
        records: &mut T,
    ) -> StoreResult<Staged> {
        let page_cache_bytes = self.opts.push_page_cache.budget(rialto_io::mem_available());
        let ing = db.ingest_with(rialto_lsm::IngestOptions {
            page_cache_bytes,
            compression: Some(compression),
        })?;
        let head = version_key(id, version, prefix);
        let partitions = self.partitions();
        let mut sorted = Sorted {
            records,
            partitions,
            per_part: vec![0; partitions as usize],
            user_key: prefix.to_vec(),
            prefix_len: prefix.len(),
        };
        let written = table_writer::write_sorted(&mut sorted, ing, &head, layout.kind())?;
        let bytes = written.bytes + written.records * prefix.len() as u64;
        let ingested = written.sink.finish()?;
        // Counted from here: the marker's write below logs the count with it.
        self.counts.set_version(id, version, &sorted.per_part);
        let staged = Staged {
            records: ingested.entries,
            bytes,
            files: ingested.files,
        };
        mark(merger, id, version, &staged)?;
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
        self.counts
            .set_version(id, version, &vec![0; self.partitions() as usize]);
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
        self.counts.forget_version(id, version);
        let (lo, hi) = version_range(id, version);
        db.drop_files_in_range(&lo, &hi)?;
        crate::chunked::delete_range(db, merger, &lo, &hi, |_| true)?;
        Ok(())
    }
}
