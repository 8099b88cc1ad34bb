//! Compaction: the picker (pure policy) and the executor that writes tables.
//!
//! The executor is shared by memtable flushes and compactions: both stream sorted internal
//! entries through a [`Gc`] filter into tables cut at a target size.

mod output_file;
pub mod picker;

pub(crate) use output_file::{create_table, CacheBudget, OutputPolicy};

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rialto_engine::{Error, Result};
use rialto_io::Fs;

use crate::iter::InternalIterator;
use crate::key::{self, SequenceNumber, ValueKind};
use crate::sstable::{TableBuildOptions, TableBuilder};
use crate::version::{table_file_name, FileMeta, SketchSlot};

/// Decides which versions an output keeps.
///
/// Versions of one user key are grouped into *stripes* by the live snapshots: two versions are
/// in the same stripe when no snapshot sees one but not the other. Within a stripe only the
/// newest version can ever be read, so older ones are dropped. A tombstone is dropped too when
/// it is older than every snapshot and no deeper level can hold an older version of its key.
pub struct Gc<'a> {
    /// Live snapshot sequence numbers, ascending.
    snapshots: Vec<SequenceNumber>,
    /// True if nothing below the output can hold `user_key` (tombstones may then go).
    bottommost: &'a dyn Fn(&[u8]) -> bool,
    /// Sequence visible to the oldest reader: the oldest snapshot, or the latest sequence.
    oldest_visible: SequenceNumber,
    current_key: Vec<u8>,
    has_current: bool,
    last_stripe: usize,
    /// Entries dropped so far.
    pub dropped: u64,
}

impl<'a> Gc<'a> {
    /// A filter for readers at `snapshots` (any order) and a latest sequence `last_sequence`.
    pub fn new(
        mut snapshots: Vec<SequenceNumber>,
        last_sequence: SequenceNumber,
        bottommost: &'a dyn Fn(&[u8]) -> bool,
    ) -> Self {
        snapshots.sort_unstable();
        snapshots.dedup();
        let oldest_visible = snapshots.first().copied().unwrap_or(last_sequence);
        Gc {
            snapshots,
            bottommost,
            oldest_visible,
            current_key: Vec::new(),
            has_current: false,
            last_stripe: usize::MAX,
            dropped: 0,
        }
    }

    fn stripe(&self, seq: SequenceNumber) -> usize {
        self.snapshots.partition_point(|&s| s < seq)
    }

    /// True if the entry (entries arrive in internal-key order) is kept.
    pub fn keep(&mut self, ikey: &[u8]) -> Result<bool> {
        let p = key::parse(ikey)
            .ok_or_else(|| Error::corruption("compaction input", 0, "malformed internal key"))?;
        if !self.has_current || p.user_key != self.current_key.as_slice() {
            self.current_key.clear();
            self.current_key.extend_from_slice(p.user_key);
            self.has_current = true;
            self.last_stripe = usize::MAX;
        }
        let stripe = self.stripe(p.seq);
        if stripe == self.last_stripe {
            // A newer version in the same stripe hides this one from every reader.
            self.dropped += 1;
            return Ok(false);
        }
        self.last_stripe = stripe;
        if p.kind == ValueKind::Delete
            && p.seq <= self.oldest_visible
            && (self.bottommost)(p.user_key)
        {
            // Older versions of this key fall in the same (oldest) stripe and are dropped by
            // the rule above, so dropping the tombstone cannot resurrect them.
            self.dropped += 1;
            return Ok(false);
        }
        Ok(true)
    }
}

/// Where and how output tables are written.
pub struct OutputContext<'a> {
    /// File system.
    pub fs: &'a dyn Fs,
    /// Database directory.
    pub dir: &'a Path,
    /// Table format options.
    pub table_options: TableBuildOptions,
    /// Overrides `table_options.compression` by each output's first user key
    /// (`Options::compression_for`).
    pub compression_for: Option<&'a crate::options::CompressionFor>,
    /// Hands out file numbers (and records them as pending, so they are not deleted).
    pub new_file_number: &'a dyn Fn() -> u64,
    /// Target bytes per output file; `u64::MAX` writes one file.
    pub target_file_size: u64,
    /// Files of the level below the output, for cutting outputs before they overlap too much.
    pub grandparents: &'a [Arc<FileMeta>],
    /// Grandparent bytes one output may overlap.
    pub max_grandparent_overlap: u64,
    /// Set when the database shuts down; the executor stops with `Error::Closed`.
    pub shutting_down: &'a AtomicBool,
    /// How output files are paced and cached.
    pub(crate) policy: OutputPolicy,
    /// Outputs are cut where the key's partition changes (`Options::partitioner`).
    pub partitioner: Option<&'a crate::options::Partitioner>,
}

/// True if `a` and `b` are in different partitions.
pub(crate) fn partition_changes(
    p: Option<&crate::options::Partitioner>,
    a: &[u8],
    b: &[u8],
) -> bool {
    p.is_some_and(|p| {
        let (la, lb) = (p(a).min(a.len()), p(b).min(b.len()));
        a[..la] != b[..lb]
    })
}

/// Streams `input` through `gc` into tables. Returns the outputs' metadata. On error every
/// output written so far is removed.
pub fn write_tables(
    input: &mut dyn InternalIterator,
    gc: &mut Gc<'_>,
    ctx: &OutputContext<'_>,
) -> Result<Vec<FileMeta>> {
    write_tables_diverting(input, gc, ctx, &mut |_, _| false)
}

/// [`write_tables`], but every entry `gc` keeps is first offered to `divert` (internal key,
/// value); an entry it takes (returns true for) is not written. TRIAD-MEM's flush keeps hot
/// keys' newest entries in memory this way.
pub fn write_tables_diverting(
    input: &mut dyn InternalIterator,
    gc: &mut Gc<'_>,
    ctx: &OutputContext<'_>,
    divert: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<Vec<FileMeta>> {
    let mut outputs = Vec::new();
    let r = write_tables_inner(input, gc, ctx, divert, &mut outputs);
    if r.is_err() {
        for f in &outputs {
            let _ = ctx.fs.remove_file(&ctx.dir.join(table_file_name(f.number)));
        }
    }
    r.map(|()| outputs)
}

struct Open {
    builder: TableBuilder,
    number: u64,
}

fn write_tables_inner(
    input: &mut dyn InternalIterator,
    gc: &mut Gc<'_>,
    ctx: &OutputContext<'_>,
    divert: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    outputs: &mut Vec<FileMeta>,
) -> Result<()> {
    let mut open: Option<Open> = None;
    let mut last_user_key: Vec<u8> = Vec::new();
    let mut grandparent_index = 0usize;
    let mut overlapped_bytes = 0u64;
    let mut seen_key = false;
    let mut n = 0u64;
    while input.valid() {
        n += 1;
        if n.is_multiple_of(1024) && ctx.shutting_down.load(Ordering::Relaxed) {
            if let Some(o) = open.take() {
                let _ = ctx.fs.remove_file(&ctx.dir.join(table_file_name(o.number)));
            }
            return Err(Error::Closed);
        }
        let ikey = input.key();
        if !gc.keep(ikey)? || divert(ikey, input.value()) {
            input.next();
            continue;
        }
        let user_key = key::user_key(ikey);
        let new_user_key = !seen_key || user_key != last_user_key.as_slice();
        if new_user_key {
            // Advance the grandparent cursor past files entirely before this key.
            while grandparent_index < ctx.grandparents.len()
                && ctx.grandparents[grandparent_index].largest_user() < user_key
            {
                if seen_key {
                    overlapped_bytes += ctx.grandparents[grandparent_index].file_size;
                }
                grandparent_index += 1;
            }
            // Cut only between user keys, so one key's versions never span two files of a level.
            if let Some(o) = &open {
                let full = o.builder.estimated_file_size() >= ctx.target_file_size;
                let boundary = partition_changes(ctx.partitioner, &last_user_key, user_key);
                if full || boundary || overlapped_bytes > ctx.max_grandparent_overlap {
                    if let Some(o) = open.take() {
                        outputs.push(finish(o)?);
                    }
                    overlapped_bytes = 0;
                }
            }
            last_user_key.clear();
            last_user_key.extend_from_slice(user_key);
            seen_key = true;
        }
        if open.is_none() {
            let number = (ctx.new_file_number)();
            let mut table_options = ctx.table_options.clone();
            if let Some(c) = ctx.compression_for.and_then(|f| f(user_key)) {
                table_options.compression = c;
            }
            open = Some(Open {
                builder: create_table(ctx.fs, ctx.dir, number, &ctx.policy, table_options)?,
                number,
            });
        }
        if let Some(o) = open.as_mut() {
            o.builder.add(ikey, input.value())?;
        }
        input.next();
    }
    input.status()?;
    if let Some(o) = open.take() {
        outputs.push(finish(o)?);
    }
    Ok(())
}

fn finish(o: Open) -> Result<FileMeta> {
    finish_table(o.builder, o.number)
}

/// Finishes (and syncs) a table and returns its metadata as file `number`.
pub(crate) fn finish_table(builder: TableBuilder, number: u64) -> Result<FileMeta> {
    let mut meta = builder.finish()?;
    let sketch = SketchSlot::default();
    sketch.set(meta.props.key_sketch.take().map(Arc::new));
    Ok(FileMeta {
        number,
        file_size: meta.file_size,
        smallest: meta.smallest,
        largest: meta.largest,
        smallest_seq: meta.props.smallest_seq,
        largest_seq: meta.props.largest_seq,
        num_entries: meta.props.num_entries,
        num_deletions: meta.props.num_deletions,
        raw_bytes: meta.props.raw_key_bytes + meta.props.raw_value_bytes,
        sketch,
        // A commit-log flush fills it in with the segment's size.
        cl_segment: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;

    fn run(
        entries: &[(&str, u64, ValueKind)],
        snaps: Vec<u64>,
        last: u64,
        bottom: bool,
    ) -> Vec<(String, u64)> {
        let b = move |_: &[u8]| bottom;
        let mut gc = Gc::new(snaps, last, &b);
        entries
            .iter()
            .filter(|(k, s, kind)| {
                gc.keep(&make_internal_key(k.as_bytes(), *s, *kind))
                    .unwrap()
            })
            .map(|(k, s, _)| (k.to_string(), *s))
            .collect()
    }

    #[test]
    fn keeps_newest_per_stripe() {
        use ValueKind::*;
        let e = [
            ("a", 9, Put),
            ("a", 7, Put),
            ("a", 5, Put),
            ("a", 2, Put),
            ("b", 3, Put),
        ];
        assert_eq!(
            run(&e, vec![], 10, false),
            vec![("a".into(), 9), ("b".into(), 3)]
        );
        // A snapshot at 6 sees a@5; one at 7 sees a@7.
        assert_eq!(
            run(&e, vec![6, 7], 10, false),
            vec![
                ("a".into(), 9),
                ("a".into(), 7),
                ("a".into(), 5),
                ("b".into(), 3)
            ]
        );
    }

    #[test]
    fn tombstones_drop_only_at_the_bottom_and_below_snapshots() {
        use ValueKind::*;
        let e = [("a", 9, Delete), ("a", 4, Put)];
        assert_eq!(run(&e, vec![], 10, false), vec![("a".into(), 9)]);
        assert_eq!(run(&e, vec![], 10, true), Vec::<(String, u64)>::new());
        // A snapshot at 5 still reads a@4, so both stay.
        assert_eq!(
            run(&e, vec![5], 10, true),
            vec![("a".into(), 9), ("a".into(), 4)]
        );
    }
}
