//! How far the pushes in progress are, and how many pushes began and ended, readable without
//! a push's lock (which a commit holds for its whole run): for the metrics and the dashboard.
//!
//! The push path only stores into atomics it owns, and in batches ([`PUBLISH_EVERY`]
//! records), so that counting costs nothing beside sorting a record.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use rialto_sort::{FinishProgress, SortWatch};

use super::table_writer::SortedSource;
use super::StoreResult;

/// Records counted locally before they are published to the shared counters.
const PUBLISH_EVERY: u64 = 4096;

/// What a push is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushPhase {
    /// Taking records (PUSH ADD); the sort spills runs as its memory fills.
    Adding,
    /// Committing: the last run spilled, the runs opened for merging.
    Sorting,
    /// The runs merged into the new version's tables.
    Writing,
    /// The tables synced and linked into the tree.
    Linking,
    /// Streamed writes replayed onto the new version, then the swap.
    Replaying,
    /// Swapped in; the spilled runs being removed.
    CleaningUp,
}

impl PushPhase {
    /// Every phase, in order.
    pub const ALL: [PushPhase; 6] = [
        PushPhase::Adding,
        PushPhase::Sorting,
        PushPhase::Writing,
        PushPhase::Linking,
        PushPhase::Replaying,
        PushPhase::CleaningUp,
    ];

    /// Lower-case name, as metrics and the status endpoint show it.
    pub fn name(self) -> &'static str {
        match self {
            PushPhase::Adding => "adding",
            PushPhase::Sorting => "sorting",
            PushPhase::Writing => "writing",
            PushPhase::Linking => "linking",
            PushPhase::Replaying => "replaying",
            PushPhase::CleaningUp => "cleaning_up",
        }
    }

    fn from_u8(v: u8) -> PushPhase {
        PushPhase::ALL
            .get(usize::from(v))
            .copied()
            .unwrap_or(PushPhase::CleaningUp)
    }

    /// The phase after the commit's step `lap` (a [`super::PushReport::phases`] name) ended.
    pub(super) fn after(lap: &str) -> PushPhase {
        match lap {
            "sort" => PushPhase::Writing,
            "write" => PushPhase::Linking,
            "link" => PushPhase::Replaying,
            _ => PushPhase::CleaningUp,
        }
    }
}

/// The shared counters of one push.
#[derive(Debug)]
pub(super) struct PushProgress {
    phase: AtomicU8,
    records: AtomicU64,
    bytes: AtomicU64,
    written: AtomicU64,
    /// The sorter's own progress, read as the sort runs.
    sort: Option<SortWatch>,
    replay_done: AtomicU64,
    replay_total: AtomicU64,
    started: Instant,
}

impl PushProgress {
    pub(super) fn new(sort: Option<SortWatch>) -> PushProgress {
        PushProgress {
            phase: AtomicU8::new(PushPhase::Adding as u8),
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            written: AtomicU64::new(0),
            sort,
            replay_done: AtomicU64::new(0),
            replay_total: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    /// The replay is about to go through the log from entry number `first` to `until`
    /// (excluded): they join its work.
    pub(super) fn replay_expect(&self, first: u64, until: u64) {
        let done = self.replay_done.load(Ordering::Relaxed);
        self.replay_total
            .store(done + until.saturating_sub(first), Ordering::Relaxed);
    }

    /// The replay went through `n` more entries.
    pub(super) fn replay_seen(&self, n: u64) {
        let done = self.replay_done.fetch_add(n, Ordering::Relaxed) + n;
        // Numbers of discarded transactions have no entry, so the total is an upper bound;
        // more entries than expected (written meanwhile) raise it.
        self.replay_total.fetch_max(done, Ordering::Relaxed);
    }

    /// The swap replayed the rest: the replay is done.
    pub(super) fn replay_done(&self) {
        let total = self.replay_total.load(Ordering::Relaxed);
        self.replay_done.fetch_max(total, Ordering::Relaxed);
    }

    pub(super) fn enter(&self, phase: PushPhase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// A tally of added records, published every [`PUBLISH_EVERY`] and when dropped.
    pub(super) fn tally(&self) -> AddTally<'_> {
        AddTally {
            progress: self,
            records: 0,
            bytes: 0,
        }
    }

    /// `source`, counting the records it yields into the written count.
    pub(super) fn counting<'a, S: SortedSource>(&'a self, source: &'a mut S) -> Counted<'a, S> {
        Counted {
            inner: source,
            progress: self,
            n: 0,
        }
    }

    /// The push's status, for the registry entry `id` of `store` begun by `owner`.
    pub(super) fn status(&self, id: u64, store: &str, owner: Option<u64>) -> PushStatus {
        PushStatus {
            id,
            store: store.to_string(),
            owner,
            phase: PushPhase::from_u8(self.phase.load(Ordering::Relaxed)),
            records: self.records.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            written: self.written.load(Ordering::Relaxed),
            sort: self
                .sort
                .as_ref()
                .map(SortWatch::finish_progress)
                .unwrap_or_default(),
            replay_done: self.replay_done.load(Ordering::Relaxed),
            replay_total: self.replay_total.load(Ordering::Relaxed),
            elapsed: self.started.elapsed(),
        }
    }
}

/// Counts records added to a push; see [`PushProgress::tally`].
pub(super) struct AddTally<'a> {
    progress: &'a PushProgress,
    records: u64,
    bytes: u64,
}

impl AddTally<'_> {
    pub(super) fn add(&mut self, key_len: usize, value_len: usize) {
        self.records += 1;
        self.bytes += (key_len + value_len) as u64;
        if self.records >= PUBLISH_EVERY {
            self.publish();
        }
    }

    fn publish(&mut self) {
        let p = self.progress;
        p.records.fetch_add(self.records, Ordering::Relaxed);
        p.bytes.fetch_add(self.bytes, Ordering::Relaxed);
        self.records = 0;
        self.bytes = 0;
    }
}

impl Drop for AddTally<'_> {
    fn drop(&mut self) {
        self.publish();
    }
}

/// A sorted source whose records are counted as written; see [`PushProgress::counting`].
pub(super) struct Counted<'a, S> {
    inner: &'a mut S,
    progress: &'a PushProgress,
    n: u64,
}

impl<S: SortedSource> SortedSource for Counted<'_, S> {
    fn next_record(&mut self) -> StoreResult<Option<(&[u8], &[u8])>> {
        let r = self.inner.next_record();
        match &r {
            Ok(Some(_)) => {
                self.n += 1;
                if self.n.is_multiple_of(PUBLISH_EVERY) {
                    self.progress.written.store(self.n, Ordering::Relaxed);
                }
            }
            Ok(None) => self.progress.written.store(self.n, Ordering::Relaxed),
            Err(_) => {}
        }
        r
    }
}

/// A push in progress, as [`super::Stores::push_statuses`] reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct PushStatus {
    /// The push's id: the version it loads.
    pub id: u64,
    /// Its store.
    pub store: String,
    /// The client id of the connection that began it (`None`: in-process).
    pub owner: Option<u64>,
    /// What it is doing.
    pub phase: PushPhase,
    /// Records added so far.
    pub records: u64,
    /// Key and value bytes added so far (keys relative to the store's prefix).
    pub bytes: u64,
    /// Records written into the new version's tables so far (while committing).
    pub written: u64,
    /// How far the sort's last step is (while sorting); all zero before it.
    pub sort: FinishProgress,
    /// Real-time log entries the replay went through so far (whether or not they were in the
    /// rewind window), and of how many: an upper bound, since numbers of discarded
    /// transactions have no entry, raised if entries keep coming.
    pub replay_done: u64,
    pub replay_total: u64,
    /// Time since it began.
    pub elapsed: Duration,
}

impl PushStatus {
    /// The share of the commit's work done, 0 to 1: 0 while records are being added (their
    /// total is not known before the commit), then the added records written into tables,
    /// and 1 once the tables are linked.
    pub fn progress_ratio(&self) -> f64 {
        match self.phase {
            PushPhase::Adding | PushPhase::Sorting => 0.0,
            PushPhase::Writing if self.records == 0 => 0.0,
            // Duplicates dropped last-wins may leave fewer written than added.
            PushPhase::Writing => (self.written as f64 / self.records as f64).min(1.0),
            PushPhase::Linking | PushPhase::Replaying | PushPhase::CleaningUp => 1.0,
        }
    }
}

/// How many pushes began and how they ended, since the server started.
#[derive(Debug, Default)]
pub(super) struct PushCounters {
    pub(super) begun: AtomicU64,
    pub(super) committed: AtomicU64,
    pub(super) aborted: AtomicU64,
    pub(super) refused: AtomicU64,
}

/// A copy of [`PushCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushCounts {
    /// Pushes begun.
    pub begun: u64,
    /// Pushes swapped in.
    pub committed: u64,
    /// Pushes aborted: by PUSH ABORT, a refused record, their connection closing, a stop, or
    /// a commit that failed for another reason than the guard.
    pub aborted: u64,
    /// Pushes the push guard refused (too few records, or shrunk too much).
    pub refused: u64,
}

impl PushCounters {
    pub(super) fn counts(&self) -> PushCounts {
        PushCounts {
            begun: self.begun.load(Ordering::Relaxed),
            committed: self.committed.load(Ordering::Relaxed),
            aborted: self.aborted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    pub(super) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Three(u64);

    impl SortedSource for Three {
        fn next_record(&mut self) -> StoreResult<Option<(&[u8], &[u8])>> {
            if self.0 == 3 {
                return Ok(None);
            }
            self.0 += 1;
            Ok(Some((b"k", b"v")))
        }
    }

    #[test]
    fn tally_publishes_in_batches_and_when_dropped() {
        let p = PushProgress::new(None);
        {
            let mut t = p.tally();
            for _ in 0..PUBLISH_EVERY {
                t.add(3, 4);
            }
            assert_eq!(p.status(2, "s", None).records, PUBLISH_EVERY);
            t.add(1, 1);
            assert_eq!(p.status(2, "s", None).records, PUBLISH_EVERY);
        }
        let s = p.status(2, "s", Some(7));
        assert_eq!(s.records, PUBLISH_EVERY + 1);
        assert_eq!(s.bytes, PUBLISH_EVERY * 7 + 2);
        assert_eq!((s.phase, s.owner), (PushPhase::Adding, Some(7)));
        assert_eq!(s.progress_ratio(), 0.0);
    }

    #[test]
    fn written_records_give_the_progress_ratio() {
        let p = PushProgress::new(None);
        {
            let mut t = p.tally();
            for _ in 0..4 {
                t.add(1, 1);
            }
        }
        p.enter(PushPhase::after("sort"));
        let mut src = Three(0);
        let mut counted = p.counting(&mut src);
        while counted.next_record().ok().flatten().is_some() {}
        let s = p.status(2, "s", None);
        assert_eq!((s.phase, s.written), (PushPhase::Writing, 3));
        assert_eq!(s.progress_ratio(), 0.75);
        p.enter(PushPhase::after("write"));
        assert_eq!(p.status(2, "s", None).progress_ratio(), 1.0);
    }

    #[test]
    fn replay_progress_counts_entries_gone_through() {
        let p = PushProgress::new(None);
        let st = |p: &PushProgress| {
            let s = p.status(2, "s", None);
            (s.replay_done, s.replay_total)
        };
        assert_eq!(st(&p), (0, 0));
        // Entries 10 to 2,009 in the log.
        p.replay_expect(10, 2010);
        p.replay_seen(1000);
        assert_eq!(st(&p), (1000, 2000));
        p.replay_seen(900);
        // The next pass: 100 left and 500 more written since.
        p.replay_expect(1910, 2510);
        assert_eq!(st(&p), (1900, 2500));
        p.replay_seen(700);
        assert_eq!(st(&p), (2600, 2600));
        p.replay_expect(2610, 2620);
        p.replay_done();
        assert_eq!(st(&p), (2610, 2610));
    }

    #[test]
    fn phases_follow_the_commit_steps() {
        let mut phase = PushPhase::Sorting;
        let mut seen = vec![phase];
        for lap in ["sort", "write", "link", "replay"] {
            phase = PushPhase::after(lap);
            seen.push(phase);
        }
        assert_eq!(seen, PushPhase::ALL[1..]);
        for p in PushPhase::ALL {
            assert_eq!(PushPhase::from_u8(p as u8), p);
        }
    }
}
