//! The compaction picker: a pure function of the version, the files already being compacted,
//! and the options. No I/O, so it can be tested and simulated on made-up trees.
//!
//! Leveled policy (as LevelDB/RocksDB):
//! - level 0 scores `files / level0_compaction_trigger`; level `n >= 1` scores
//!   `bytes / target(n)` with `target(1) = max_bytes_for_level_base` and each deeper level
//!   `level_size_multiplier` times larger; the last level is never a source;
//! - the level with the highest score `>= 1` that has a task not conflicting with running
//!   compactions is compacted into the next level;
//! - an L0 task takes every L0 file (they overlap) plus the overlapping L1 files;
//! - a deeper level takes one file plus the overlapping files of the next level: the file
//!   whose next-level overlap is smallest relative to its size (least rewriting per byte moved
//!   down, RocksDB's `kMinOverlappingRatio`), ties broken round-robin from the compact pointer;
//! - a task whose source does not overlap the next level and whose grandparent overlap is small
//!   is a *trivial move*: the file is relinked one level down without being rewritten.

use std::collections::HashSet;
use std::sync::Arc;

use crate::triad::sketch::overlap_ratio;
use crate::version::{FileMeta, Version};

/// The options the picker reads.
#[derive(Debug, Clone, PartialEq)]
pub struct PickerOptions {
    /// L0 files that trigger a compaction.
    pub level0_compaction_trigger: usize,
    /// Target bytes of L1.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between levels.
    pub level_size_multiplier: u64,
    /// Target bytes of an output file.
    pub target_file_size: u64,
    /// TRIAD-DISK's rule for L0, when it is on.
    pub l0_deferral: Option<DeferralRule>,
    /// Rewrite L0's commit-log tables (TRIAD-LOG) into ordinary ones even below the file
    /// trigger: set while flushes write ordinary tables (reads dominate, or TRIAD-LOG is
    /// off), since a commit-log table's values are read outside the block cache.
    pub compact_commit_log: bool,
}

/// TRIAD-DISK (see [`crate::triad`]): an L0 compaction waits while the estimated key overlap
/// of its inputs is below `overlap_threshold` and L0 has fewer than `max_l0_files` files.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeferralRule {
    /// Overlap (fraction of redundant keys, 0 to 1) below which L0 compaction waits.
    pub overlap_threshold: f64,
    /// L0 files at which it runs however low the overlap.
    pub max_l0_files: usize,
}

/// What the deferral rule says of the L0 compaction the picker would run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum L0Choice {
    /// Run it; the estimated overlap, if it was estimated.
    Run(Option<f64>),
    /// Wait: the overlap is below the threshold.
    Defer(f64),
}

impl PickerOptions {
    /// From the database options.
    pub fn from_options(o: &crate::Options) -> Self {
        PickerOptions {
            level0_compaction_trigger: o.level0_compaction_trigger.max(1),
            max_bytes_for_level_base: o.max_bytes_for_level_base.max(1),
            level_size_multiplier: o.level_size_multiplier.max(2),
            target_file_size: o.target_file_size.max(1),
            l0_deferral: None,
            compact_commit_log: false,
        }
    }

    /// Target bytes of `level` (`>= 1`).
    pub fn level_target(&self, level: usize) -> u64 {
        let mut t = self.max_bytes_for_level_base;
        for _ in 1..level {
            t = t.saturating_mul(self.level_size_multiplier);
        }
        t
    }

    /// Grandparent bytes an output file may overlap before it is cut, bounding the cost of
    /// later compacting it.
    pub fn max_grandparent_overlap(&self) -> u64 {
        self.target_file_size.saturating_mul(10)
    }
}

/// One compaction to run.
#[derive(Debug, Clone)]
pub struct CompactionTask {
    /// Source level.
    pub level: usize,
    /// Files of the source level.
    pub inputs: Vec<Arc<FileMeta>>,
    /// Overlapping files of `level + 1`.
    pub next_inputs: Vec<Arc<FileMeta>>,
    /// Files of `level + 2` overlapping the inputs (for cutting output files).
    pub grandparents: Vec<Arc<FileMeta>>,
    /// Relink the single input one level down instead of rewriting it.
    pub trivial_move: bool,
}

impl CompactionTask {
    /// Output level.
    pub fn output_level(&self) -> usize {
        self.level + 1
    }

    /// Every input file.
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(&self.next_inputs)
    }

    /// Bytes of every input.
    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|f| f.file_size).sum()
    }
}

/// Compaction score of every level but the last (see the module docs).
pub fn level_scores(v: &Version, o: &PickerOptions) -> Vec<f64> {
    (0..v.num_levels().saturating_sub(1))
        .map(|level| {
            if level == 0 {
                let files = v.levels[0].len() as f64 / o.level0_compaction_trigger as f64;
                let has_log = v.levels[0].iter().any(|f| f.cl_segment.is_some());
                if o.compact_commit_log && has_log {
                    files.max(1.0)
                } else {
                    files
                }
            } else {
                v.level_bytes(level) as f64 / o.level_target(level) as f64
            }
        })
        .collect()
}

/// Picks the most needed compaction that conflicts with none running, if any is needed.
pub fn pick(
    v: &Version,
    compacting: &HashSet<u64>,
    compact_pointers: &[Vec<u8>],
    o: &PickerOptions,
) -> Option<CompactionTask> {
    let scores = level_scores(v, o);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&l| scores[l] >= 1.0).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    for level in order {
        let task = if level == 0 {
            pick_level0(v, compacting, o)
                .filter(|t| !matches!(level0_choice(t, v, o), L0Choice::Defer(_)))
        } else {
            let pointer = compact_pointers.get(level).map_or(&[][..], |p| &p[..]);
            pick_level(v, level, compacting, pointer, o)
        };
        if task.is_some() {
            return task;
        }
    }
    None
}

/// The L0 compaction due now (L0 at or past its trigger, no conflict), and what the
/// deferral rule says of it. `None` when no L0 compaction is due.
pub fn level0_status(
    v: &Version,
    compacting: &HashSet<u64>,
    o: &PickerOptions,
) -> Option<L0Choice> {
    if v.levels[0].len() < o.level0_compaction_trigger || v.num_levels() < 2 {
        return None;
    }
    let t = pick_level0(v, compacting, o)?;
    Some(level0_choice(&t, v, o))
}

/// The deferral rule applied to L0 task `t`. Without the rule, or without a sketch for every
/// input (tables written before sketches existed), the task runs.
fn level0_choice(t: &CompactionTask, v: &Version, o: &PickerOptions) -> L0Choice {
    let Some(rule) = o.l0_deferral else {
        return L0Choice::Run(None);
    };
    let sketches: Option<Vec<_>> = t.all_inputs().map(|f| f.sketch.get()).collect();
    let overlap = sketches.and_then(|s| overlap_ratio(s.iter().map(|s| s.as_ref())));
    match overlap {
        Some(x) if v.levels[0].len() < rule.max_l0_files && x < rule.overlap_threshold => {
            L0Choice::Defer(x)
        }
        _ => L0Choice::Run(overlap),
    }
}

fn pick_level0(
    v: &Version,
    compacting: &HashSet<u64>,
    o: &PickerOptions,
) -> Option<CompactionTask> {
    let inputs = v.levels[0].clone();
    if inputs.is_empty() || inputs.iter().any(|f| compacting.contains(&f.number)) {
        return None;
    }
    finish_task(v, 0, inputs, compacting, o)
}

fn pick_level(
    v: &Version,
    level: usize,
    compacting: &HashSet<u64>,
    pointer: &[u8],
    o: &PickerOptions,
) -> Option<CompactionTask> {
    let files = &v.levels[level];
    // Least rewriting per byte moved down: the file whose overlap with the next level is
    // smallest relative to its own size. Ties go round-robin from the compact pointer, so
    // equal candidates are still taken in key order across calls.
    let start = files.partition_point(|f| f.largest_user() <= pointer && !pointer.is_empty());
    // (overlap bytes, file size, index) of the best candidate so far.
    let mut best: Option<(u64, u64, usize)> = None;
    for i in (start..files.len()).chain(0..start) {
        let f = &files[i];
        if compacting.contains(&f.number) {
            continue;
        }
        let next = v.overlapping(level + 1, Some(f.smallest_user()), Some(f.largest_user()));
        if next.iter().any(|n| compacting.contains(&n.number)) {
            continue;
        }
        let overlap: u64 = next.iter().map(|n| n.file_size).sum();
        let size = f.file_size.max(1);
        // overlap / size < best_overlap / best_size, compared exactly by cross-multiplying.
        let better = best.is_none_or(|(bo, bs, _)| {
            u128::from(overlap) * u128::from(bs) < u128::from(bo) * u128::from(size)
        });
        if better {
            best = Some((overlap, size, i));
        }
    }
    let (_, _, i) = best?;
    finish_task(v, level, vec![Arc::clone(&files[i])], compacting, o)
}

/// Compaction of every file of `level` overlapping `[lo, hi]` into `level + 1`, for
/// `compact_range`. `None` if nothing overlaps or a conflicting compaction runs.
pub fn pick_manual(
    v: &Version,
    level: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    compacting: &HashSet<u64>,
    o: &PickerOptions,
) -> Option<CompactionTask> {
    if level + 1 >= v.num_levels() {
        return None;
    }
    let mut inputs = v.overlapping(level, lo, hi);
    if level == 0 {
        inputs = expand_level0(v, inputs);
    }
    if inputs.is_empty() || inputs.iter().any(|f| compacting.contains(&f.number)) {
        return None;
    }
    let mut t = finish_task(v, level, inputs, compacting, o)?;
    // A manual compaction rewrites: it is asked for to drop garbage, which a move keeps.
    t.trivial_move = false;
    Some(t)
}

/// L0 files overlap one another, and a compaction's output covers the union of its inputs'
/// ranges. Every L0 file overlapping that union must go too: one left behind would stay above
/// the output, and its older versions would shadow the newer ones moved down. Grows the set to
/// a fixed point.
fn expand_level0(v: &Version, mut inputs: Vec<Arc<FileMeta>>) -> Vec<Arc<FileMeta>> {
    loop {
        if inputs.is_empty() {
            return inputs;
        }
        let (lo, hi) = key_range(&inputs);
        let grown = v.overlapping(0, Some(lo), Some(hi));
        if grown.len() == inputs.len() {
            return grown;
        }
        inputs = grown;
    }
}

fn key_range(files: &[Arc<FileMeta>]) -> (&[u8], &[u8]) {
    let lo = files.iter().map(|f| f.smallest_user()).min().unwrap_or(&[]);
    let hi = files.iter().map(|f| f.largest_user()).max().unwrap_or(&[]);
    (lo, hi)
}

fn finish_task(
    v: &Version,
    level: usize,
    inputs: Vec<Arc<FileMeta>>,
    compacting: &HashSet<u64>,
    o: &PickerOptions,
) -> Option<CompactionTask> {
    let (lo, hi) = key_range(&inputs);
    let next_inputs = v.overlapping(level + 1, Some(lo), Some(hi));
    if next_inputs.iter().any(|f| compacting.contains(&f.number)) {
        return None;
    }
    let grandparents = if level + 2 < v.num_levels() {
        let mut all = inputs.clone();
        all.extend(next_inputs.iter().cloned());
        let (glo, ghi) = key_range(&all);
        v.overlapping(level + 2, Some(glo), Some(ghi))
    } else {
        Vec::new()
    };
    let grandparent_bytes: u64 = grandparents.iter().map(|f| f.file_size).sum();
    // A commit-log table is rewritten, never moved: rewriting it is what frees its segment.
    let trivial_move = inputs.len() == 1
        && inputs[0].cl_segment.is_none()
        && next_inputs.is_empty()
        && grandparent_bytes <= o.max_grandparent_overlap();
    Some(CompactionTask {
        level,
        inputs,
        next_inputs,
        grandparents,
        trivial_move,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use crate::triad::KeySketch;
    use crate::version::{VersionBuilder, VersionEdit};

    fn file(n: u64, lo: &str, hi: &str, size: u64) -> FileMeta {
        FileMeta {
            number: n,
            file_size: size,
            smallest: make_internal_key(lo.as_bytes(), n, ValueKind::Put),
            largest: make_internal_key(hi.as_bytes(), n, ValueKind::Put),
            smallest_seq: n,
            largest_seq: n,
            num_entries: 1,
            num_deletions: 0,
            raw_bytes: size,
            sketch: Default::default(),
            cl_segment: None,
        }
    }

    fn version(files: Vec<(usize, FileMeta)>) -> Version {
        let mut b = VersionBuilder::new(&Version::new(4));
        b.apply(&VersionEdit {
            added: files,
            ..Default::default()
        })
        .unwrap();
        b.build()
    }

    fn opts() -> PickerOptions {
        PickerOptions {
            level0_compaction_trigger: 2,
            max_bytes_for_level_base: 100,
            level_size_multiplier: 10,
            target_file_size: 10,
            l0_deferral: None,
            compact_commit_log: false,
        }
    }

    #[test]
    fn nothing_to_do_below_thresholds() {
        let v = version(vec![(0, file(1, "a", "c", 5)), (1, file(2, "a", "z", 50))]);
        assert!(pick(&v, &HashSet::new(), &[], &opts()).is_none());
    }

    #[test]
    fn level0_takes_all_files_and_overlapping_l1() {
        let v = version(vec![
            (0, file(1, "a", "c", 5)),
            (0, file(2, "b", "f", 5)),
            (1, file(3, "a", "b", 5)),
            (1, file(4, "e", "g", 5)),
            (1, file(5, "x", "z", 5)),
        ]);
        let t = pick(&v, &HashSet::new(), &[], &opts()).unwrap();
        assert_eq!(t.level, 0);
        assert_eq!(t.inputs.len(), 2);
        let next: Vec<u64> = t.next_inputs.iter().map(|f| f.number).collect();
        assert_eq!(next, vec![3, 4]);
        assert!(!t.trivial_move);
        // A running compaction of an overlapping L1 file blocks it.
        let busy: HashSet<u64> = [4].into_iter().collect();
        assert!(pick(&v, &busy, &[], &opts()).is_none());
    }

    #[test]
    fn single_non_overlapping_file_moves_trivially() {
        let v = version(vec![(1, file(1, "a", "c", 150)), (2, file(2, "x", "z", 5))]);
        let t = pick(&v, &HashSet::new(), &[], &opts()).unwrap();
        assert_eq!((t.level, t.trivial_move), (1, true));
    }

    #[test]
    fn deeper_levels_pick_the_smallest_overlap_ratio() {
        let v = version(vec![
            (1, file(1, "a", "b", 60)),
            (1, file(2, "c", "d", 60)),
            (1, file(3, "e", "f", 60)),
            (2, file(4, "a", "b", 500)),
            (2, file(5, "e", "f", 50)),
            (2, file(6, "c", "c", 200)),
        ]);
        let t = pick(&v, &HashSet::new(), &[], &opts()).unwrap();
        assert_eq!(t.inputs[0].number, 3, "overlap 50 beats 200 and 500");
        // A candidate whose next-level file is busy is skipped.
        let busy: HashSet<u64> = [5].into_iter().collect();
        let t = pick(&v, &busy, &[], &opts()).unwrap();
        assert_eq!(t.inputs[0].number, 2);
    }

    #[test]
    fn round_robin_follows_the_compact_pointer() {
        let v = version(vec![
            (1, file(1, "a", "b", 60)),
            (1, file(2, "c", "d", 60)),
            (1, file(3, "e", "f", 60)),
        ]);
        let mut pointers = vec![Vec::new(); 4];
        pointers[1] = b"d".to_vec();
        let t = pick(&v, &HashSet::new(), &pointers, &opts()).unwrap();
        assert_eq!(t.inputs[0].number, 3);
        pointers[1] = b"f".to_vec();
        let t = pick(&v, &HashSet::new(), &pointers, &opts()).unwrap();
        assert_eq!(t.inputs[0].number, 1, "wraps around");
    }

    #[test]
    fn higher_score_wins() {
        let v = version(vec![
            (0, file(1, "a", "c", 5)),
            (0, file(2, "a", "c", 5)),
            (1, file(3, "m", "n", 1000)),
        ]);
        let t = pick(&v, &HashSet::new(), &[], &opts()).unwrap();
        assert_eq!(t.level, 1, "L1 at 10x its target outranks L0 at 1x");
    }

    /// Regression (found by the conformance suite): a partial manual compaction took only the
    /// L0 file overlapping the range, leaving an older L0 file that overlaps the output above
    /// it; the older versions then shadowed newer ones and deleted keys came back.
    #[test]
    fn manual_level0_takes_every_file_overlapping_the_output() {
        let v = version(vec![
            (0, file(2, "b", "m", 5)), // newer, overlaps the request [c, d]
            (0, file(1, "k", "z", 5)), // older, overlaps only file 2's range
            (0, file(3, "x", "y", 5)), // overlaps file 1: reached on the second round
        ]);
        let t = pick_manual(&v, 0, Some(b"c"), Some(b"d"), &HashSet::new(), &opts()).unwrap();
        let mut got: Vec<u64> = t.inputs.iter().map(|f| f.number).collect();
        got.sort_unstable();
        assert_eq!(got, vec![1, 2, 3]);
    }

    #[test]
    fn manual_rewrites_even_a_movable_file() {
        let v = version(vec![(1, file(1, "a", "c", 5))]);
        let t = pick_manual(&v, 1, None, None, &HashSet::new(), &opts()).unwrap();
        assert!(!t.trivial_move);
        assert!(pick_manual(&v, 2, None, None, &HashSet::new(), &opts()).is_none());
    }

    /// A file of `keys` (numbers into a shared key space), with its sketch.
    fn sketched(n: u64, lo: &str, hi: &str, keys: std::ops::Range<u64>) -> FileMeta {
        let mut s = KeySketch::new();
        for k in keys {
            s.add(&k.to_be_bytes());
        }
        let f = file(n, lo, hi, 5);
        f.sketch.set(Some(Arc::new(s)));
        f
    }

    fn deferring(threshold: f64, max: usize) -> PickerOptions {
        PickerOptions {
            l0_deferral: Some(DeferralRule {
                overlap_threshold: threshold,
                max_l0_files: max,
            }),
            ..opts()
        }
    }

    #[test]
    fn triad_disk_defers_level0_while_overlap_is_low() {
        // Two L0 files and an L1 file sharing no keys: overlap ~0.
        let disjoint = version(vec![
            (0, sketched(1, "a", "m", 0..1000)),
            (0, sketched(2, "b", "n", 1000..2000)),
            (1, sketched(3, "a", "z", 2000..5000)),
        ]);
        let none = HashSet::new();
        assert!(
            pick(&disjoint, &none, &[], &opts()).is_some(),
            "rule off: runs"
        );
        assert!(pick(&disjoint, &none, &[], &deferring(0.4, 4)).is_none());
        match level0_status(&disjoint, &none, &deferring(0.4, 4)) {
            Some(L0Choice::Defer(x)) => assert!(x < 0.1, "overlap {x}"),
            other => panic!("{other:?}"),
        }
        // The file bound wins over the overlap.
        assert!(pick(&disjoint, &none, &[], &deferring(0.4, 2)).is_some());
        // A threshold of 0 never defers.
        assert!(pick(&disjoint, &none, &[], &deferring(0.0, 4)).is_some());

        // The same key ranges with half the keys shared by each file: overlap ~0.5 runs.
        let shared = version(vec![
            (0, sketched(1, "a", "m", 0..1000)),
            (0, sketched(2, "b", "n", 0..1000)),
            (1, sketched(3, "a", "z", 0..1000)),
        ]);
        match level0_status(&shared, &none, &deferring(0.4, 4)) {
            Some(L0Choice::Run(Some(x))) => assert!((x - 2.0 / 3.0).abs() < 0.05, "{x}"),
            other => panic!("{other:?}"),
        }
        assert!(pick(&shared, &none, &[], &deferring(0.4, 4)).is_some());
    }

    #[test]
    fn triad_disk_runs_when_a_sketch_is_missing() {
        let v = version(vec![
            (0, sketched(1, "a", "m", 0..1000)),
            (0, file(2, "b", "n", 5)),
        ]);
        let none = HashSet::new();
        assert_eq!(
            level0_status(&v, &none, &deferring(0.4, 4)),
            Some(L0Choice::Run(None))
        );
        assert!(pick(&v, &none, &[], &deferring(0.4, 4)).is_some());
        // Below the trigger nothing is due at all.
        let one = version(vec![(0, sketched(1, "a", "m", 0..10))]);
        assert_eq!(level0_status(&one, &none, &deferring(0.4, 4)), None);
    }

    #[test]
    fn commit_log_tables_are_rewritten_when_flushes_no_longer_write_them() {
        let mut f = file(1, "a", "m", 5);
        f.cl_segment = Some(crate::triad::cl_table::ClSegment {
            number: 7,
            size: 100,
        });
        let v = version(vec![(0, f)]);
        let none = HashSet::new();
        // One L0 file, below the trigger of 2: nothing to do while commit logs are wanted.
        assert!(pick(&v, &none, &[], &opts()).is_none());
        let o = PickerOptions {
            compact_commit_log: true,
            ..opts()
        };
        let t = pick(&v, &none, &[], &o).expect("rewrite the commit-log table");
        assert_eq!(
            (t.level, t.trivial_move),
            (0, false),
            "never moved, rewritten"
        );
        // An ordinary table alone in L0 is left alone.
        let v = version(vec![(0, file(2, "a", "m", 5))]);
        assert!(pick(&v, &none, &[], &o).is_none());
    }
}
