//! Offline verification of a database directory (`rialto check`): every checksum and the
//! structural invariants recovery relies on, reported as readable problems instead of the first
//! error. Takes the directory's lock, so it never reads a database another process is changing.
//!
//! Checked:
//! - the manifest replays (`CURRENT`, every version edit) and the version's invariants hold
//!   (sorted, disjoint levels below 0);
//! - every live table exists with the recorded size, opens (footer, index, filter,
//!   properties), and every block's checksum verifies while all entries are read; keys are in
//!   strictly increasing internal-key order; the first and last keys, the entry count and the
//!   sequence range equal the manifest's record; a commit-log table (TRIAD-LOG) agrees with
//!   the manifest on its segment, which exists, and every value it points to there verifies
//!   against its checksum;
//! - every WAL segment the database would replay parses record by record with valid checksums
//!   and decodable batches; a bad record in bytes proven durable (design §5) is a problem, a
//!   torn tail (a write never proven durable, which recovery cuts) is only noted.
//!
//! Files no version references (left by an interrupted flush or compaction, deleted at the
//! next open) are noted, not reported as problems.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use rialto_engine::{Error, Result};
use rialto_io::FsRef;

use crate::db::{parse_file_name, FileKind};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::sstable::reader::TableReader;
use crate::triad::cl_table::ClSource;
use crate::version::edit::MAX_LEVELS;
use crate::version::{current_file_name, table_file_name, FileMeta, VersionSet};
use crate::wal::{self, SegmentEnd, KIND_BATCH};

/// What `check` found.
#[derive(Debug, Default)]
pub struct Report {
    /// Damage: each is `(file, what is wrong)`.
    pub problems: Vec<(String, String)>,
    /// Facts worth knowing that are not damage (orphan files, a torn WAL tail).
    pub notes: Vec<String>,
    /// Live tables checked.
    pub tables: usize,
    /// Entries read from them.
    pub entries: u64,
    /// WAL segments checked.
    pub wal_segments: usize,
    /// Valid WAL records read.
    pub wal_records: u64,
}

impl Report {
    /// Whether nothing is damaged.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, file: impl Into<String>, what: impl Into<String>) {
        self.problems.push((file.into(), what.into()));
    }
}

/// Checks the database in `dir`. `Err` only when the directory cannot be checked at all (it
/// does not exist, holds no database, or another process has it open).
pub fn check(fs: FsRef, dir: &Path) -> Result<Report> {
    let shown = dir.display().to_string();
    if !fs.exists(dir) {
        return Err(Error::NotFound(shown));
    }
    if !fs.exists(&dir.join(current_file_name())) {
        return Err(Error::NotFound(format!("{shown} (no CURRENT file)")));
    }
    let _lock = crate::db::lock_dir(fs.as_ref(), dir)?;
    let mut report = Report::default();
    let versions = match VersionSet::recover(Arc::clone(&fs), dir, MAX_LEVELS) {
        Ok(v) => Some(v),
        Err(e) => {
            report.problem("MANIFEST", format!("does not replay: {e}"));
            None
        }
    };
    let mut live = std::collections::HashSet::new();
    let mut log_number = 0;
    if let Some(vs) = &versions {
        log_number = vs.log_number();
        let version = vs.current();
        if let Err(e) = version.check_invariants() {
            report.problem("MANIFEST", format!("version invariant broken: {e}"));
        }
        for (level, files) in version.levels.iter().enumerate() {
            for meta in files {
                live.insert(meta.number);
                check_table(&fs, dir, level, meta, &mut report);
            }
        }
    }
    let names = fs
        .list_dir(dir)
        .map_err(|e| Error::io(format!("list {shown}"), e))?;
    let mut segments: Vec<u64> = Vec::new();
    for name in &names {
        match parse_file_name(name) {
            Some(FileKind::Table(n)) if !live.contains(&n) => report.notes.push(format!(
                "{name}: not referenced by the manifest (left by an interrupted flush or compaction; removed at the next open)"
            )),
            Some(FileKind::Wal(n)) if n >= log_number => segments.push(n),
            _ => {}
        }
    }
    segments.sort_unstable();
    for (i, &n) in segments.iter().enumerate() {
        check_segment(&fs, dir, n, &segments[i + 1..], &mut report);
    }
    Ok(report)
}

fn check_table(fs: &FsRef, dir: &Path, level: usize, meta: &FileMeta, report: &mut Report) {
    let name = table_file_name(meta.number);
    let path = dir.join(&name);
    report.tables += 1;
    let file = match fs.open_read(&path) {
        Ok(f) => f,
        Err(e) => {
            report.problem(&name, format!("level {level} table cannot be opened: {e}"));
            return;
        }
    };
    if file.len() != meta.file_size {
        report.problem(
            &name,
            format!(
                "size is {} bytes, the manifest recorded {}",
                file.len(),
                meta.file_size
            ),
        );
    }
    let reader = match TableReader::open(file, meta.number, name.clone(), None, true) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            report.problem(&name, e.to_string());
            return;
        }
    };
    // A commit-log table (TRIAD-LOG): its values are pointers into a WAL segment, each
    // checked against the value's checksum.
    if reader.properties().cl_segment != meta.cl_segment.map(|s| s.number) {
        report.problem(
            &name,
            format!(
                "commit-log segment {:?} in the table, {:?} in the manifest",
                reader.properties().cl_segment,
                meta.cl_segment.map(|s| s.number)
            ),
        );
        return;
    }
    let source = match meta.cl_segment {
        Some(seg) => match ClSource::open(fs.as_ref(), dir, seg) {
            Ok(s) => Some(s),
            Err(e) => {
                report.problem(&name, e.to_string());
                return;
            }
        },
        None => None,
    };
    let mut bad_values = 0u64;
    let mut first_bad = None;
    let mut it = reader.iter();
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    let mut first: Option<Vec<u8>> = None;
    let mut entries = 0u64;
    let mut out_of_order = 0u64;
    let mut seq_outside = 0u64;
    while it.valid() {
        let k = it.key();
        if let Some(p) = &prev {
            if key::compare(p, k) != Ordering::Less {
                out_of_order += 1;
            }
        }
        let seq = key::sequence(k);
        if seq < meta.smallest_seq || seq > meta.largest_seq {
            seq_outside += 1;
        }
        if let Some(src) = &source {
            if key::kind_byte(k) == ValueKind::Put as u8 {
                if let Err(e) = src.read(it.value()) {
                    bad_values += 1;
                    first_bad.get_or_insert(e);
                }
            }
        }
        if first.is_none() {
            first = Some(k.to_vec());
        }
        prev = Some(k.to_vec());
        entries += 1;
        it.next();
    }
    if let Err(e) = it.status() {
        report.problem(&name, e.to_string());
        return;
    }
    report.entries += entries;
    if let Some(e) = first_bad {
        report.problem(
            &name,
            format!("{bad_values} values in its commit-log segment are bad, the first: {e}"),
        );
    }
    if out_of_order > 0 {
        report.problem(
            &name,
            format!("{out_of_order} entries are not in increasing key order"),
        );
    }
    if seq_outside > 0 {
        report.problem(
            &name,
            format!(
                "{seq_outside} entries have sequence numbers outside the recorded {}..={}",
                meta.smallest_seq, meta.largest_seq
            ),
        );
    }
    if entries != meta.num_entries {
        report.problem(
            &name,
            format!(
                "holds {entries} entries, the manifest recorded {}",
                meta.num_entries
            ),
        );
    }
    if first.as_deref() != Some(&meta.smallest[..]) || prev.as_deref() != Some(&meta.largest[..]) {
        report.problem(
            &name,
            "first or last key differs from the manifest's smallest/largest",
        );
    }
}

fn check_segment(fs: &FsRef, dir: &Path, number: u64, later: &[u64], report: &mut Report) {
    let name = wal::segment_file_name(number);
    let path = wal::segment_path(dir, number);
    report.wal_segments += 1;
    let mut records = 0u64;
    let mut bad_batches = Vec::new();
    let end = wal::read_segment(fs.as_ref(), &path, number, |r| {
        records += 1;
        if r.kind == KIND_BATCH {
            if let Err(e) = wal::decode_batch(r.payload) {
                bad_batches.push(format!("batch at offset {} does not decode: {e}", r.offset));
            }
        }
        Ok(())
    })
    .and_then(|end| wal::judge_against_later_segments(fs.as_ref(), dir, end, later));
    report.wal_records += records;
    for b in bad_batches {
        report.problem(&name, b);
    }
    match end {
        Ok(SegmentEnd::Clean) => {}
        Ok(SegmentEnd::TornTail {
            offset,
            reason,
            records_after,
        }) => {
            report.notes.push(format!(
                "{name}: ends in a torn write at offset {offset} ({reason}{}): bytes never proven durable, which recovery cuts",
                match records_after {
                    0 => String::new(),
                    n => format!("; {n} records after it are cut with it"),
                }
            ));
        }
        Ok(SegmentEnd::Corrupt { offset, reason }) => report.problem(
            &name,
            format!("corrupt record at offset {offset} ({reason}) in bytes proven durable"),
        ),
        Err(e) => report.problem(&name, e.to_string()),
    }
}
