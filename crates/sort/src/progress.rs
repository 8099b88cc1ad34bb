//! How far [`crate::Sorter::finish`] is, readable from another thread while it runs, and how
//! fast this sort's own spills went: what a caller needs to estimate when `finish` ends.
//!
//! `finish` has three kinds of work, all counted in records: sorting the last buffer in
//! memory (done all at once: an in-place sort has no count to publish), the in-flight spill's
//! writing (counted per block), and the merge passes that bring the runs down to the fan-in
//! (counted per block written). Writers publish per block, so counting costs nothing per
//! record.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::Counters;

/// Which of `finish`'s counts a run writer adds its records to, per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tally {
    /// Not counted (tests).
    #[cfg(test)]
    Nothing,
    /// A spill: counted in case `finish` waits for it.
    Spill,
    /// A merge pass of `finish`.
    Merge,
}

/// The shared atomics behind [`FinishProgress`], part of the sorter's counters.
#[derive(Debug, Default)]
pub(crate) struct FinishCounters {
    /// Records of completed spills and the time they took to sort and write.
    pub spilled_records: AtomicU64,
    pub spill_nanos: AtomicU64,
    /// Records the running spill has written so far (it resets this when it starts).
    pub spill_written: AtomicU64,
    /// `finish`'s whole work and its parts.
    pub records: AtomicU64,
    pub in_memory: AtomicU64,
    pub in_memory_sorted: AtomicU64,
    pub spill_records: AtomicU64,
    pub merged: AtomicU64,
    pub merge_passes: AtomicU64,
}

impl FinishCounters {
    pub fn add(&self, tally: Tally, records: u64) {
        let counter = match tally {
            #[cfg(test)]
            Tally::Nothing => return,
            Tally::Spill => &self.spill_written,
            Tally::Merge => &self.merged,
        };
        counter.fetch_add(records, Ordering::Relaxed);
    }

    /// A spill of `records` ended after `took`.
    pub fn spilled(&self, records: u64, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.spill_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.spilled_records.fetch_add(records, Ordering::Relaxed);
    }

    fn snapshot(&self) -> FinishProgress {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let spill = get(&self.spill_records);
        let done =
            get(&self.in_memory_sorted) + get(&self.spill_written).min(spill) + get(&self.merged);
        let records = get(&self.records);
        FinishProgress {
            records,
            done: done.min(records),
            in_memory: get(&self.in_memory),
            merge_passes: get(&self.merge_passes),
            spill_records_per_s: records_per_s(get(&self.spilled_records), get(&self.spill_nanos)),
        }
    }
}

/// Records per second of `records` done in `nanos`; `None` before any.
fn records_per_s(records: u64, nanos: u64) -> Option<u64> {
    (records > 0 && nanos > 0).then(|| (records as f64 * 1e9 / nanos as f64).round() as u64)
}

/// How far [`crate::Sorter::finish`] is (all zero before it begins).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FinishProgress {
    /// Records `finish` processes: the last buffer's (sorted in memory), those of the spill it
    /// waits for (written), and each merge pass's (merged; a record merged twice counts twice).
    pub records: u64,
    /// Of those, processed so far.
    pub done: u64,
    /// Records of the last buffer, sorted in memory.
    pub in_memory: u64,
    /// Merge passes left before the output can stream.
    pub merge_passes: u64,
    /// Records sorted and written per second by this sort's completed spills: `None` when
    /// nothing was spilled (the input is sorted in memory, and there is no speed to go by).
    pub spill_records_per_s: Option<u64>,
}

impl FinishProgress {
    /// The time left at the spills' speed; `None` without a spill. The last buffer is sorted
    /// on two threads and not written, so this errs long for it; a merge pass also reads what
    /// it writes, so it errs short there.
    pub fn eta(&self) -> Option<Duration> {
        let per_s = self.spill_records_per_s.filter(|&s| s > 0)?;
        let left = self.records.saturating_sub(self.done);
        Some(Duration::from_secs_f64(left as f64 / per_s as f64))
    }
}

/// A handle on a sorter's progress that outlives it and may be read from any thread.
#[derive(Clone, Debug)]
pub struct SortWatch(pub(crate) Arc<Counters>);

impl SortWatch {
    /// How far `finish` is, and the speed of the spills so far.
    pub fn finish_progress(&self) -> FinishProgress {
        self.0.finish.snapshot()
    }
}

/// The merge passes `finish` makes to bring runs of `(bytes, records)` down to `fan_in`, as
/// `reduce_runs` picks them (the smallest first, the first pass just big enough for every
/// later one to take a full `fan_in`): the number of passes and the records they merge.
/// Duplicates dropped on the way make the real count a little lower.
pub(crate) fn merge_plan(runs: &[(u64, u64)], fan_in: usize) -> (u64, u64) {
    let fan_in = fan_in.max(2);
    let mut runs = runs.to_vec();
    let (mut passes, mut records) = (0u64, 0u64);
    while runs.len() > fan_in {
        runs.sort_by_key(|r| std::cmp::Reverse(r.0));
        let excess = runs.len() - fan_in;
        let take = fan_in.min(excess + 1);
        let group = runs.split_off(runs.len() - take);
        let merged = group.iter().fold((0, 0), |(b, r), g| (b + g.0, r + g.1));
        passes += 1;
        records += merged.1;
        runs.push(merged);
    }
    (passes, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_plan_counts_passes_and_records() {
        assert_eq!(merge_plan(&[(10, 1); 4], 4), (0, 0));
        // Five runs at fan-in 4: the two smallest merged once.
        let runs = [(50, 5), (10, 1), (40, 4), (20, 2), (30, 3)];
        assert_eq!(merge_plan(&runs, 4), (1, 3));
        // Ten equal runs at fan-in 4: 4 merged, then 4 of the 7 left, leaving 4.
        assert_eq!(merge_plan(&[(1, 100); 10], 4), (2, 800));
    }

    #[test]
    fn progress_adds_its_parts_and_estimates_from_the_spills() {
        let c = FinishCounters::default();
        assert_eq!(c.snapshot(), FinishProgress::default());
        assert_eq!(c.snapshot().eta(), None);
        c.spilled(1000, Duration::from_millis(500));
        c.records.store(4000, Ordering::Relaxed);
        c.in_memory.store(1000, Ordering::Relaxed);
        c.spill_records.store(1000, Ordering::Relaxed);
        // Written before `finish` counted the spill: capped at its records.
        c.add(Tally::Spill, 1500);
        let p = c.snapshot();
        assert_eq!((p.done, p.spill_records_per_s), (1000, Some(2000)));
        assert_eq!(p.eta(), Some(Duration::from_millis(1500)));
        c.in_memory_sorted.store(1000, Ordering::Relaxed);
        c.add(Tally::Merge, 2000);
        assert_eq!(c.snapshot().done, 4000);
        assert_eq!(c.snapshot().eta(), Some(Duration::ZERO));
    }
}
