//! I/O statistics: counters and a bounded timeline of journal writes, journal syncs, flushes
//! and compactions, so an operator (INFO, a dashboard) can see what the disk was doing when a
//! commit was slow — RavenDB's I/O stats view.

use std::collections::VecDeque;
use std::fmt;

use parking_lot::Mutex;

/// What an [`IoEvent`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoEventKind {
    /// One group's record handed to the operating system (no sync).
    JournalWrite,
    /// One `fdatasync` of the journal.
    JournalSync,
    /// A memtable written to a table.
    Flush,
    /// A compaction's output written.
    Compaction,
    /// Externally sorted tables written and linked into the tree (batch push).
    Ingest,
}

impl IoEventKind {
    /// Lower-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            IoEventKind::JournalWrite => "journal_write",
            IoEventKind::JournalSync => "journal_sync",
            IoEventKind::Flush => "flush",
            IoEventKind::Compaction => "compaction",
            IoEventKind::Ingest => "ingest",
        }
    }
}

/// One timed I/O operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoEvent {
    /// What it was.
    pub kind: IoEventKind,
    /// Start, in microseconds of the engine's clock.
    pub start_micros: u64,
    /// How long it took.
    pub duration_micros: u64,
    /// Bytes written (for a sync: bytes it made durable, when known, else 0).
    pub bytes: u64,
    /// Table files written (flushes, compactions, ingestions; 0 for the journal).
    pub files: u32,
    /// Entries in those tables: Voron's "pages written" per flush, in an LSM's terms.
    pub entries: u64,
    /// The level the tables went to (0 for flushes and the journal).
    pub level: u8,
}

impl IoEvent {
    /// An event that wrote no tables (a journal write or sync).
    pub fn new(kind: IoEventKind, start_micros: u64, duration_micros: u64, bytes: u64) -> Self {
        IoEvent {
            kind,
            start_micros,
            duration_micros,
            bytes,
            files: 0,
            entries: 0,
            level: 0,
        }
    }

    /// The same event, having written `files` tables of `entries` entries to `level`.
    pub fn with_tables(mut self, files: u32, entries: u64, level: u8) -> Self {
        self.files = files;
        self.entries = entries;
        self.level = level;
        self
    }
}

/// Totals per kind since the engine opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoTotals {
    /// Operations.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Summed duration.
    pub micros: u64,
    /// Longest single operation.
    pub max_micros: u64,
    /// Table files written.
    pub files: u64,
    /// Entries in those tables.
    pub entries: u64,
}

/// A copy of the I/O statistics at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Journal writes.
    pub journal_writes: IoTotals,
    /// Journal syncs.
    pub journal_syncs: IoTotals,
    /// Flushes.
    pub flushes: IoTotals,
    /// Compactions.
    pub compactions: IoTotals,
    /// Ingestions (batch pushes).
    pub ingests: IoTotals,
    /// The current pace allowed to flush and compaction writes in bytes per second; `None`
    /// when unthrottled.
    pub background_rate_limit: Option<u64>,
    /// Time background writers spent waiting for the journal's sake.
    pub background_throttled_micros: u64,
    /// Journal sync latency percentiles (p50, p99, max) over the most recent syncs in the
    /// timeline, in microseconds.
    pub journal_sync_p50_micros: u64,
    /// See `journal_sync_p50_micros`.
    pub journal_sync_p99_micros: u64,
    /// The most recent events, oldest first (at most the timeline's capacity).
    pub timeline: Vec<IoEvent>,
    /// The most recent flushes, compactions and ingestions, oldest first (at most
    /// [`BACKGROUND_CAPACITY`]): kept apart because under load journal writes push them out
    /// of `timeline` within a second.
    pub background: Vec<IoEvent>,
}

impl IoStats {
    /// Events of one kind from the timeline.
    pub fn events(&self, kind: IoEventKind) -> impl Iterator<Item = &IoEvent> {
        self.timeline.iter().filter(move |e| e.kind == kind)
    }
}

impl fmt::Display for IoStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, t) in [
            ("journal_writes", &self.journal_writes),
            ("journal_syncs", &self.journal_syncs),
            ("flushes", &self.flushes),
            ("compactions", &self.compactions),
            ("ingests", &self.ingests),
        ] {
            writeln!(
                f,
                "{name}: count={} bytes={} micros={} max_micros={}",
                t.count, t.bytes, t.micros, t.max_micros
            )?;
        }
        writeln!(
            f,
            "journal_sync_latency: p50_micros={} p99_micros={}",
            self.journal_sync_p50_micros, self.journal_sync_p99_micros
        )?;
        match self.background_rate_limit {
            Some(r) => writeln!(f, "background_rate_limit: {r} bytes/s")?,
            None => writeln!(f, "background_rate_limit: unlimited")?,
        }
        write!(
            f,
            "background_throttled_micros: {}",
            self.background_throttled_micros
        )
    }
}

/// Default number of events an [`IoRecorder`] keeps.
pub const DEFAULT_TIMELINE_CAPACITY: usize = 4096;

/// Flushes, compactions and ingestions an [`IoRecorder`] also keeps apart (they are rare:
/// this covers minutes of background work at any write rate).
pub const BACKGROUND_CAPACITY: usize = 256;

impl IoEventKind {
    /// Whether the event writes tables (a flush, compaction or ingestion), not the journal.
    pub fn writes_tables(self) -> bool {
        matches!(
            self,
            IoEventKind::Flush | IoEventKind::Compaction | IoEventKind::Ingest
        )
    }
}

/// Records I/O events: totals forever, and the last `capacity` events in a ring allocated
/// once. Cheap enough for every journal write: one uncontended mutex hold of a few adds and one
/// copy into the ring. Readers hold the mutex only to copy (see [`IoRecorder::recent`], which
/// bounds that copy), so a dashboard polling it cannot stall the journal for long.
#[derive(Debug)]
pub struct IoRecorder {
    inner: Mutex<Recorded>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Recorded {
    totals: [IoTotals; 5],
    timeline: VecDeque<IoEvent>,
    background: VecDeque<IoEvent>,
}

fn slot(kind: IoEventKind) -> usize {
    match kind {
        IoEventKind::JournalWrite => 0,
        IoEventKind::JournalSync => 1,
        IoEventKind::Flush => 2,
        IoEventKind::Compaction => 3,
        IoEventKind::Ingest => 4,
    }
}

impl Default for IoRecorder {
    fn default() -> Self {
        IoRecorder::new(DEFAULT_TIMELINE_CAPACITY)
    }
}

impl IoRecorder {
    /// A recorder keeping the last `capacity` events (0 keeps totals only).
    pub fn new(capacity: usize) -> Self {
        IoRecorder {
            inner: Mutex::new(Recorded {
                totals: Default::default(),
                // Allocated here so that recording never grows it.
                timeline: VecDeque::with_capacity(capacity),
                background: VecDeque::with_capacity(capacity.min(BACKGROUND_CAPACITY)),
            }),
            capacity,
        }
    }

    /// Records one event.
    pub fn record(&self, event: IoEvent) {
        let mut r = self.inner.lock();
        let t = &mut r.totals[slot(event.kind)];
        t.count += 1;
        t.bytes += event.bytes;
        t.micros += event.duration_micros;
        t.max_micros = t.max_micros.max(event.duration_micros);
        t.files += u64::from(event.files);
        t.entries += event.entries;
        if self.capacity > 0 {
            if r.timeline.len() == self.capacity {
                r.timeline.pop_front();
            }
            r.timeline.push_back(event);
            if event.kind.writes_tables() {
                if r.background.len() == self.capacity.min(BACKGROUND_CAPACITY) {
                    r.background.pop_front();
                }
                r.background.push_back(event);
            }
        }
    }

    /// A copy of totals and timeline; the throttle fields are left for the engine to fill.
    pub fn snapshot(&self) -> IoStats {
        self.recent(usize::MAX)
    }

    /// Like [`IoRecorder::snapshot`], with only the newest `limit` events of the timeline
    /// copied (under the lock writers take); the sync percentiles are over those. The
    /// background events are copied whole.
    pub fn recent(&self, limit: usize) -> IoStats {
        let (totals, timeline, background) = {
            let r = self.inner.lock();
            let skip = r.timeline.len().saturating_sub(limit);
            (
                r.totals,
                r.timeline.range(skip..).copied().collect::<Vec<IoEvent>>(),
                r.background.iter().copied().collect::<Vec<IoEvent>>(),
            )
        };
        let mut syncs: Vec<u64> = timeline
            .iter()
            .filter(|e| e.kind == IoEventKind::JournalSync)
            .map(|e| e.duration_micros)
            .collect();
        syncs.sort_unstable();
        // Nearest rank: the smallest value with at least p% of the samples at or below it.
        let pct = |p: usize| {
            if syncs.is_empty() {
                0
            } else {
                syncs[(syncs.len() * p).div_ceil(100).max(1) - 1]
            }
        };
        IoStats {
            journal_writes: totals[0],
            journal_syncs: totals[1],
            flushes: totals[2],
            compactions: totals[3],
            ingests: totals[4],
            background_rate_limit: None,
            background_throttled_micros: 0,
            journal_sync_p50_micros: pct(50),
            journal_sync_p99_micros: pct(99),
            timeline,
            background,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: IoEventKind, d: u64) -> IoEvent {
        IoEvent::new(kind, 0, d, 10)
    }

    #[test]
    fn timeline_is_bounded_and_totals_are_not() {
        let r = IoRecorder::new(3);
        for d in 1..=5 {
            r.record(ev(IoEventKind::JournalSync, d));
        }
        r.record(ev(IoEventKind::Flush, 7));
        let s = r.snapshot();
        assert_eq!(s.timeline.len(), 3);
        assert_eq!(s.timeline.last().map(|e| e.kind), Some(IoEventKind::Flush));
        assert_eq!(s.journal_syncs.count, 5);
        assert_eq!(s.journal_syncs.micros, 15);
        assert_eq!(s.journal_syncs.max_micros, 5);
        assert_eq!(s.flushes.bytes, 10);
        assert_eq!(s.journal_sync_p99_micros, 5);
    }

    #[test]
    fn recent_copies_only_the_newest_events() {
        let r = IoRecorder::new(8);
        for d in 1..=12 {
            r.record(ev(IoEventKind::JournalWrite, d).with_tables(0, d, 0));
        }
        let s = r.recent(3);
        let got: Vec<u64> = s.timeline.iter().map(|e| e.duration_micros).collect();
        assert_eq!(got, [10, 11, 12]);
        assert_eq!(s.timeline[2].entries, 12);
        assert_eq!(s.journal_writes.count, 12);
        assert_eq!(r.recent(100).timeline.len(), 8);
        assert!(r.recent(0).timeline.is_empty());
    }

    #[test]
    fn background_events_outlive_a_flood_of_journal_writes() {
        let r = IoRecorder::new(16);
        r.record(ev(IoEventKind::Flush, 1).with_tables(1, 10, 0));
        r.record(ev(IoEventKind::Compaction, 2).with_tables(2, 20, 1));
        for d in 0..100 {
            r.record(ev(IoEventKind::JournalWrite, d));
        }
        let s = r.recent(4);
        assert!(s
            .timeline
            .iter()
            .all(|e| e.kind == IoEventKind::JournalWrite));
        let kinds: Vec<IoEventKind> = s.background.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [IoEventKind::Flush, IoEventKind::Compaction]);
        for i in 0..(BACKGROUND_CAPACITY as u64 + 5) {
            r.record(ev(IoEventKind::Ingest, i));
        }
        let s = r.snapshot();
        assert_eq!(
            s.background.len(),
            16,
            "bounded by the timeline's capacity too"
        );
        assert_eq!(s.background.last().map(|e| e.duration_micros), Some(260));
        let big = IoRecorder::new(4096);
        for i in 0..(BACKGROUND_CAPACITY as u64 + 5) {
            big.record(ev(IoEventKind::Flush, i));
        }
        assert_eq!(big.snapshot().background.len(), BACKGROUND_CAPACITY);
    }

    #[test]
    fn zero_capacity_keeps_totals_only() {
        let r = IoRecorder::new(0);
        r.record(ev(IoEventKind::JournalWrite, 1));
        let s = r.snapshot();
        assert!(s.timeline.is_empty());
        assert_eq!(s.journal_writes.count, 1);
    }
}
