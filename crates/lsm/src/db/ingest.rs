//! Deferred-write ingestion (Venice's batch push): a sorted stream of user keys is written
//! straight into table files, without the WAL or a memtable, and linked into the bottom level
//! by one version edit; and the reverse for a dead key range, dropping whole files.
//!
//! Why ingested entries carry sequence number 0: they must be older than every write the
//! engine ever accepted into their range, so that any such write (before or after the
//! ingestion) wins. `finish` therefore refuses a range in which any memtable or level holds an
//! entry, and a write into the range that races with `finish` gets a sequence number above 0
//! and wins, as a later write should. The same property makes the bottom level correct: every
//! other entry of the range is newer and lives above it. Existing snapshots see the ingested
//! keys (sequence 0 is below every snapshot); callers ingest into ranges nobody reads yet.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rialto_engine::{Error, IoEvent, IoEventKind, Result};

use super::{Db, DbInner};
use crate::compaction::{create_table, finish_table, partition_changes, CacheBudget, OutputPolicy};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::sstable::{TableBuildOptions, TableBuilder};
use crate::version::{table_file_name, FileMeta, VersionEdit};

/// What an ingestion wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestStats {
    /// Entries written.
    pub entries: u64,
    /// Table files linked into the tree.
    pub files: u64,
    /// Bytes of those files.
    pub file_bytes: u64,
    /// User key and value bytes.
    pub raw_bytes: u64,
    /// Level the files were linked into.
    pub level: usize,
}

/// Settings of one ingestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestOptions {
    /// Table bytes the ingestion leaves in the operating system's page cache; the pages of the
    /// table that spends the budget are dropped as they reach the disk, and the tables after
    /// it are written around the cache (`Fs::create_direct`). Default `u64::MAX`: every page stays,
    /// so reads right after the ingestion find its data in memory, but writing it takes that
    /// much fresh memory (evicting other cached data, and on a VM whose free memory is handed
    /// back to the host, faulting every new page in). 0 keeps none, as RocksDB's
    /// SstFileWriter does by default: the fastest write, whose first reads go to the disk.
    pub page_cache_bytes: u64,
    /// Block compression of the ingested tables. Default `None`: the database's
    /// ([`Db::compression`]). A batch push writes its version with its store's codec.
    pub compression: Option<crate::Compression>,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            page_cache_bytes: u64::MAX,
            compression: None,
        }
    }
}

/// Writes a sorted stream of keys as tables for [`Ingestion::finish`] to link into the tree.
/// Dropping it unfinished removes every file it wrote. It keeps the engine's internals alive
/// (not its background threads): finish or drop it before closing the database.
pub struct Ingestion {
    db: Arc<DbInner>,
    opts: TableBuildOptions,
    policy: OutputPolicy,
    target_file_size: u64,
    open: Option<(TableBuilder, u64)>,
    done: Vec<FileMeta>,
    last_key: Vec<u8>,
    entries: u64,
    ikey: Vec<u8>,
    /// A file whose finish failed: still a pending output, removed on drop.
    open_failed_number: Option<u64>,
    finished: bool,
}

impl Db {
    /// Starts an ingestion: [`Ingestion::add`] keys in strictly increasing order, then
    /// [`Ingestion::finish`]. Table files are cut at `target_file_size` and their writes are
    /// paced like compaction's, so a large ingestion does not delay journal syncs.
    pub fn ingest(&self) -> Result<Ingestion> {
        self.ingest_with(IngestOptions::default())
    }

    /// [`Db::ingest`] with settings.
    pub fn ingest_with(&self, options: IngestOptions) -> Result<Ingestion> {
        self.inner.check_writable()?;
        let cache = (options.page_cache_bytes != u64::MAX)
            .then(|| Arc::new(CacheBudget::new(options.page_cache_bytes)));
        Ok(Ingestion {
            policy: self.inner.output_policy(cache, false),
            db: Arc::clone(&self.inner),
            opts: TableBuildOptions {
                block_restart_interval: self.inner.opts.ingest_block_restart_interval,
                compression: options
                    .compression
                    .unwrap_or_else(|| self.inner.compression()),
                ..TableBuildOptions::from_options(&self.inner.opts)
            },
            target_file_size: self.inner.opts.target_file_size,
            open: None,
            done: Vec::new(),
            last_key: Vec::new(),
            entries: 0,
            ikey: Vec::new(),
            open_failed_number: None,
            finished: false,
        })
    }

    /// Removes every table file whose keys all lie in `[start, end)` from the tree, without
    /// reading it (RocksDB's DeleteFilesInRange). Returns the files and bytes dropped.
    ///
    /// Only for a range nobody reads any more: entries outside the dropped files stay (in
    /// memtables and in files that straddle a bound), and a tombstone in a dropped file may
    /// have hidden an older value in a file that stays, which then shows again. Callers follow
    /// with deletes of whatever remains in the range.
    pub fn drop_files_in_range(&self, start: &[u8], end: &[u8]) -> Result<(u64, u64)> {
        let inner = &self.inner;
        inner.check_writable()?;
        let mut st = inner.state.lock();
        let version = st.versions.current();
        let mut edit = VersionEdit::default();
        let mut bytes = 0u64;
        for (level, files) in version.levels.iter().enumerate() {
            for f in files {
                let inside = f.smallest_user() >= start && f.largest_user() < end;
                if inside && !st.compacting.contains(&f.number) {
                    edit.deleted.push((level, f.number));
                    bytes += f.file_size;
                }
            }
        }
        // Release the old version so its dropped files count as obsolete below.
        drop(version);
        let n = edit.deleted.len() as u64;
        if n == 0 {
            return Ok((0, 0));
        }
        if let Err(e) = st.versions.log_and_apply(edit) {
            inner.set_read_only_locked(&e, &st);
            return Err(e);
        }
        inner.install_super_version(&mut st);
        let doomed = inner.obsolete_files(&mut st);
        inner.notify_background();
        drop(st);
        // A retired push version can be gigabytes: removed gradually, outside the lock.
        inner.remove_files(doomed);
        Ok((n, bytes))
    }
}

impl Ingestion {
    /// Appends `key = value`. Keys must be strictly increasing (bytewise).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.entries > 0 && key <= self.last_key.as_slice() {
            return Err(Error::InvalidArgument(
                "ingested keys must be strictly increasing".into(),
            ));
        }
        if key.is_empty() || key.len() > rialto_engine::MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "ingested key length {} is outside 1..={}",
                key.len(),
                rialto_engine::MAX_KEY_LEN
            )));
        }
        if value.len() > rialto_engine::MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "ingested value length {} exceeds {}",
                value.len(),
                rialto_engine::MAX_VALUE_LEN
            )));
        }
        let partitioner = self.db.opts.partitioner.as_ref();
        if self.open.as_ref().is_some_and(|(b, _)| {
            b.estimated_file_size() >= self.target_file_size
                || partition_changes(partitioner, &self.last_key, key)
        }) {
            self.cut()?;
        }
        if self.open.is_none() {
            let number = self.db.allocate_output();
            let b = create_table(
                &*self.db.fs,
                &self.db.dir,
                number,
                &self.policy,
                self.opts.clone(),
            );
            match b {
                Ok(b) => self.open = Some((b, number)),
                Err(e) => {
                    self.db.state.lock().pending_outputs.remove(&number);
                    return Err(e);
                }
            }
        }
        self.ikey.clear();
        self.ikey.extend_from_slice(key);
        self.ikey
            .extend_from_slice(&key::pack_trailer(0, ValueKind::Put).to_le_bytes());
        if let Some((b, _)) = self.open.as_mut() {
            b.add(&self.ikey, value)?;
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.entries += 1;
        Ok(())
    }

    fn cut(&mut self) -> Result<()> {
        if let Some((b, number)) = self.open.take() {
            // On error the file is removed by Drop (it is still a pending output).
            self.open_failed_number = Some(number);
            let meta = finish_table(b, number)?;
            self.open_failed_number = None;
            self.done.push(meta);
        }
        Ok(())
    }

    /// Finishes the last table, makes every file durable and links them into the bottom
    /// level in one manifest edit. Fails, leaving the tree unchanged, if the engine holds any
    /// entry in the ingested key range.
    pub fn finish(mut self) -> Result<IngestStats> {
        let start = self.db.opts.clock.now_micros();
        self.cut()?;
        let db = Arc::clone(&self.db);
        let mut stats = IngestStats::default();
        if self.done.is_empty() {
            self.finished = true;
            return Ok(stats);
        }
        db.fs
            .sync_dir(&db.dir)
            .map_err(|e| Error::io("sync database directory", e))?;
        let lo = self.done[0].smallest_user().to_vec();
        let hi = self.done[self.done.len() - 1].largest_user().to_vec();

        let mut st = db.state.lock();
        db.check_writable()?;
        let version = st.versions.current();
        let level = version.num_levels() - 1;
        for l in 0..version.num_levels() {
            if let Some(f) = version.overlapping(l, Some(&lo), Some(&hi)).first() {
                return Err(Error::InvalidArgument(format!(
                    "cannot ingest: level {l} table {} overlaps the ingested key range",
                    f.number
                )));
            }
        }
        for m in std::iter::once(&st.mem).chain(st.imms.iter()) {
            let mut it = m.iter();
            it.seek(&key::make_internal_key(
                &lo,
                key::MAX_SEQUENCE,
                key::KIND_SEEK,
            ));
            if it.valid() && key::user_key(it.key()) <= hi.as_slice() {
                return Err(Error::InvalidArgument(
                    "cannot ingest: a memtable holds a key in the ingested key range".into(),
                ));
            }
        }
        let edit = VersionEdit {
            added: self.done.iter().map(|f| (level, f.clone())).collect(),
            ..Default::default()
        };
        let r = st.versions.log_and_apply(edit);
        for f in &self.done {
            st.pending_outputs.remove(&f.number);
        }
        self.finished = true;
        if let Err(e) = r {
            db.set_read_only_locked(&e, &st);
            return Err(e);
        }
        db.install_super_version(&mut st);
        drop(st);
        db.notify_background();

        stats.entries = self.entries;
        stats.files = self.done.len() as u64;
        stats.file_bytes = self.done.iter().map(|f| f.file_size).sum();
        stats.raw_bytes = self.done.iter().map(|f| f.raw_bytes).sum();
        stats.level = level;
        db.counters
            .ingest_bytes
            .fetch_add(stats.file_bytes, Ordering::Relaxed);
        db.counters
            .user_bytes
            .fetch_add(stats.raw_bytes, Ordering::Relaxed);
        db.io.record(
            IoEvent::new(
                IoEventKind::Ingest,
                start,
                db.opts.clock.now_micros().saturating_sub(start),
                stats.file_bytes,
            )
            .with_tables(
                u32::try_from(stats.files).unwrap_or(u32::MAX),
                stats.entries,
                u8::try_from(level).unwrap_or(u8::MAX),
            ),
        );
        Ok(stats)
    }
}

impl Drop for Ingestion {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut numbers: Vec<u64> = self.done.iter().map(|f| f.number).collect();
        if let Some((_, n)) = self.open.take() {
            numbers.push(n);
        }
        numbers.extend(self.open_failed_number.take());
        let mut st = self.db.state.lock();
        for n in numbers {
            let _ = self
                .db
                .fs
                .remove_file(&self.db.dir.join(table_file_name(n)));
            st.pending_outputs.remove(&n);
        }
    }
}
