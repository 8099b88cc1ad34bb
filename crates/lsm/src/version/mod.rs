//! Versions: immutable sets of live table files, one list per level.
//!
//! Invariants of a [`Version`]:
//! - level 0 is ordered newest first (by file number: flush order); its files may overlap,
//!   and a newer L0 file's versions of a key are newer than an older file's (or the same
//!   entry: recovery may replay a hot entry TRIAD-MEM re-logged into both);
//! - every level `>= 1` is sorted by smallest key and its files' user-key ranges are disjoint,
//!   so one key is in at most one file per level;
//! - for the same user key, versions in level `n` are newer than versions in level `n + 1`.
//!
//! A version is shared as `Arc<Version>`; readers that hold one keep its files alive (files are
//! deleted only when no live version references them).

pub mod edit;
mod set;

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use rialto_engine::{LevelStats, Result};

use crate::cache::table::TableCache;
use crate::key::{self, SequenceNumber};
use crate::memtable::Lookup;
use crate::sstable::BlockFill;
use crate::triad::cl_table::ClSegment;
use crate::triad::KeySketch;
pub use edit::VersionEdit;
pub use set::{current_file_name, manifest_file_name, VersionSet, MAX_FILE_NUMBER};

/// Metadata of a table file, as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// File number (name `NNNNNN.sst`).
    pub number: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest sequence number of an entry.
    pub smallest_seq: SequenceNumber,
    /// Largest sequence number of an entry.
    pub largest_seq: SequenceNumber,
    /// Entries (puts and tombstones).
    pub num_entries: u64,
    /// Tombstones.
    pub num_deletions: u64,
    /// Key and value bytes of the entries, before encoding.
    pub raw_bytes: u64,
    /// The table's key sketch (TRIAD-DISK), kept with the table, not in the manifest: set
    /// when the table is written, or loaded from its properties when first needed.
    pub sketch: SketchSlot,
    /// For a commit-log table (TRIAD-LOG): the WAL segment its values live in.
    pub cl_segment: Option<ClSegment>,
}

/// A [`FileMeta`]'s key sketch: unset until known; then the table's sketch, or `None` for a
/// table written without one. A cache of the table's contents, so two metas compare equal
/// whatever their slots hold.
#[derive(Debug, Clone, Default)]
pub struct SketchSlot(OnceLock<Option<Arc<KeySketch>>>);

impl SketchSlot {
    /// The sketch, if it is loaded and the table has one.
    pub fn get(&self) -> Option<&Arc<KeySketch>> {
        self.0.get().and_then(Option::as_ref)
    }

    /// Fills the slot; a slot already filled keeps its value (the same table's sketch).
    pub fn set(&self, sketch: Option<Arc<KeySketch>>) {
        let _ = self.0.set(sketch);
    }
}

impl PartialEq for SketchSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SketchSlot {}

impl FileMeta {
    /// Smallest user key.
    pub fn smallest_user(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }
    /// Largest user key.
    pub fn largest_user(&self) -> &[u8] {
        key::user_key(&self.largest)
    }
    /// True if the file's user-key range intersects `[lo, hi]` (`None` = unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        !(lo.is_some_and(|lo| self.largest_user() < lo)
            || hi.is_some_and(|hi| self.smallest_user() > hi))
    }
}

/// Name of table file `number`.
pub fn table_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// An immutable set of live files.
#[derive(Debug, Clone, Default)]
pub struct Version {
    /// Files per level (see the module invariants).
    pub levels: Vec<Vec<Arc<FileMeta>>>,
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![Vec::new(); num_levels],
        }
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Looks `lookup` (an internal seek key) up in the tables, newest first.
    pub fn get(&self, tables: &TableCache, lookup: &[u8], fill: BlockFill) -> Result<Lookup> {
        let user_key = key::user_key(lookup);
        for f in &self.levels[0] {
            if user_key < f.smallest_user() || user_key > f.largest_user() {
                continue;
            }
            match tables.get(f, lookup, fill)? {
                Lookup::Absent => {}
                found => return Ok(found),
            }
        }
        for files in &self.levels[1..] {
            if let Some(f) = find_file(files, user_key) {
                match tables.get(f, lookup, fill)? {
                    Lookup::Absent => {}
                    found => return Ok(found),
                }
            }
        }
        Ok(Lookup::Absent)
    }

    /// Files of `level` whose user-key range intersects `[lo, hi]`.
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        let files = &self.levels[level];
        if level == 0 {
            return files
                .iter()
                .filter(|f| f.overlaps(lo, hi))
                .cloned()
                .collect();
        }
        let start = match lo {
            Some(lo) => files.partition_point(|f| f.largest_user() < lo),
            None => 0,
        };
        files[start..]
            .iter()
            .take_while(|f| hi.is_none_or(|hi| f.smallest_user() <= hi))
            .cloned()
            .collect()
    }

    /// Total bytes of a level.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.file_size).sum()
    }

    /// Files and bytes per level.
    pub fn level_stats(&self) -> Vec<LevelStats> {
        self.levels
            .iter()
            .map(|fs| LevelStats {
                files: fs.len() as u64,
                bytes: fs.iter().map(|f| f.file_size).sum(),
            })
            .collect()
    }

    /// Every live file number.
    pub fn live_files(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }

    /// Bytes of the WAL segments serving commit-log tables (TRIAD-LOG), each counted once.
    pub fn commit_log_bytes(&self) -> u64 {
        let mut seen = std::collections::HashSet::new();
        self.levels
            .iter()
            .flatten()
            .filter_map(|f| f.cl_segment)
            .filter(|s| seen.insert(s.number))
            .map(|s| s.size)
            .sum()
    }

    /// Estimated bytes of live data: each file counts unless a deeper level's files cover its
    /// key range (then its data is mostly newer versions of keys counted there). Like RocksDB's
    /// estimate, it counts table bytes, so a fully compacted tree estimates exactly its size.
    pub fn estimate_live_bytes(&self) -> u64 {
        let mut covered: Vec<(&[u8], &[u8])> = Vec::new();
        let mut total = 0u64;
        for files in self.levels.iter().rev() {
            let mut added = Vec::new();
            for f in files {
                let lo = f.smallest_user();
                let hi = f.largest_user();
                if !covered.iter().any(|&(a, b)| lo <= b && hi >= a) {
                    // A commit-log table's data is in its segment: count what it points to.
                    total += match f.cl_segment {
                        Some(_) => f.raw_bytes,
                        None => f.file_size,
                    };
                }
                added.push((lo, hi));
            }
            covered.extend(added);
        }
        total
    }

    /// True if no level deeper than `level` holds a file overlapping `user_key`.
    pub fn is_bottommost_for(&self, level: usize, user_key: &[u8]) -> bool {
        self.levels[level + 1..]
            .iter()
            .all(|files| find_file(files, user_key).is_none())
    }

    /// Checks the invariants; used after recovery and by tests.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        for (level, files) in self.levels.iter().enumerate().skip(1) {
            for w in files.windows(2) {
                if w[0].largest_user() >= w[1].smallest_user() {
                    return Err(format!(
                        "level {level}: files {} and {} overlap",
                        w[0].number, w[1].number
                    ));
                }
            }
        }
        for f in self.levels.iter().flatten() {
            if key::compare(&f.smallest, &f.largest) == Ordering::Greater {
                return Err(format!("file {} has smallest > largest", f.number));
            }
        }
        Ok(())
    }
}

/// The file of a sorted, disjoint level that may hold `user_key`.
pub fn find_file<'a>(files: &'a [Arc<FileMeta>], user_key: &[u8]) -> Option<&'a Arc<FileMeta>> {
    let i = files.partition_point(|f| f.largest_user() < user_key);
    files.get(i).filter(|f| f.smallest_user() <= user_key)
}

/// Applies edits to a base version.
#[derive(Debug)]
pub struct VersionBuilder {
    levels: Vec<Vec<Arc<FileMeta>>>,
}

impl VersionBuilder {
    /// Starts from `base`.
    pub fn new(base: &Version) -> Self {
        VersionBuilder {
            levels: base.levels.clone(),
        }
    }

    /// Applies one edit. Fails if it adds a file to a level beyond the version's levels or
    /// deletes a file that is not there.
    pub fn apply(&mut self, edit: &VersionEdit) -> std::result::Result<(), String> {
        for &(level, number) in &edit.deleted {
            let files = self.levels.get_mut(level).ok_or_else(|| {
                format!("deleted file {number} is in level {level}, beyond the tree")
            })?;
            let before = files.len();
            files.retain(|f| f.number != number);
            if files.len() == before {
                return Err(format!("deleted file {number} is not in level {level}"));
            }
        }
        for (level, f) in &edit.added {
            let files = self.levels.get_mut(*level).ok_or_else(|| {
                format!(
                    "added file {} is in level {level}, beyond the tree",
                    f.number
                )
            })?;
            files.push(Arc::new(f.clone()));
        }
        Ok(())
    }

    /// The resulting version, with levels sorted per the invariants.
    pub fn build(mut self) -> Version {
        for (level, files) in self.levels.iter_mut().enumerate() {
            if level == 0 {
                // Flush order: L0 files come only from flushes, one at a time, numbered as
                // they start. Not by sequence numbers: a table may hold a hot entry that
                // TRIAD-MEM carried over from an older memtable, with its old number.
                files.sort_by_key(|f| std::cmp::Reverse(f.number));
            } else {
                files.sort_by(|a, b| key::compare(&a.smallest, &b.smallest));
            }
        }
        Version {
            levels: self.levels,
        }
    }
}
