//! Building user iterators over a consistent view.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rialto_engine::{IterOptions, Result};

use super::{DbInner, Snapshot};
use crate::iter::db::DbIter;
use crate::iter::level::LevelIter;
use crate::iter::merge::MergingIterator;
use crate::iter::BoxedIter;
use crate::sstable::BlockReads;

/// An iterator over the memtables and tables of the current super version, reading at the
/// snapshot's sequence (or the latest published one). It holds the super version, so every
/// memtable and table file it reads stays alive until it is dropped.
pub(crate) fn new_iterator(inner: &DbInner, opts: IterOptions<Snapshot>) -> Result<DbIter> {
    // Sequence first, then the super version: it then holds every write up to `seq`.
    let seq = match &opts.snapshot {
        Some(s) => s.sequence(),
        None => inner.visible_seq.load(Ordering::Acquire),
    };
    build(inner, seq, opts, BlockReads::Cached)
}

/// An unbounded iterator over the latest published state for one forward pass (blocks read
/// around the block cache), and the sequence it reads at.
pub(crate) fn latest_streaming(inner: &DbInner) -> Result<(u64, DbIter)> {
    let seq = inner.visible_seq.load(Ordering::Acquire);
    let it = build(inner, seq, IterOptions::default(), BlockReads::Streaming)?;
    Ok((seq, it))
}

/// An iterator over the newest applied state, published or not (the committer's view).
pub(crate) fn applied(
    inner: &DbInner,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
) -> Result<DbIter> {
    let seq = inner.applied_seq.load(Ordering::Acquire);
    build(
        inner,
        seq,
        IterOptions {
            lower,
            upper,
            snapshot: None,
        },
        BlockReads::Cached,
    )
}

fn build(
    inner: &DbInner,
    seq: u64,
    opts: IterOptions<Snapshot>,
    reads: BlockReads,
) -> Result<DbIter> {
    let sv = inner.sv.load_full();
    let lo = opts.lower.as_deref();
    // Bounds only prune files; `hi` as an inclusive bound is a superset of the exclusive one.
    let hi = opts.upper.as_deref();
    let mut children: Vec<BoxedIter> = Vec::new();
    children.push(Box::new(sv.mem.iter()));
    for m in &sv.imms {
        children.push(Box::new(m.iter()));
    }
    for f in sv.version.levels[0].iter().filter(|f| f.overlaps(lo, hi)) {
        children.push(Box::new(inner.tables.iter(f, reads)?));
    }
    for level in 1..sv.version.num_levels() {
        let files = sv.version.overlapping(level, lo, hi);
        if !files.is_empty() {
            children.push(Box::new(LevelIter::new(
                files,
                Arc::clone(&inner.tables),
                reads,
            )));
        }
    }
    let merged = MergingIterator::new(children);
    Ok(DbIter::new(
        Box::new(merged),
        seq,
        opts.lower,
        opts.upper,
        Box::new((sv, opts.snapshot)),
    )
    .count_into(Arc::clone(&inner.iter_entries)))
}
