//! WAL segments prepared ahead: a file of zeros, written and synced in the background, that
//! the next memtable switch renames into the new segment and overwrites from its start.
//!
//! Why: on ext4 an `fdatasync` after an append into fallocated space still commits metadata
//! (the unwritten extents the append converted); over blocks already written it commits the
//! data alone. `scripts/fsync-probe.py` measured about 100 µs against 150–170 µs per sync on
//! this project's test machine (design §3.1). The cost: each segment is written twice, zeros
//! first (in the background, paced like flushes), so the engine prepares a segment only when
//! the active one shows that syncs are frequent enough to pay for it: at least one sync per
//! `Options::wal_zero_fill_bytes_per_sync` bytes of log. A store loaded with unsynced or
//! once-a-second syncs never pays.
//!
//! Recovery needs nothing new: zeros after the last record already read as a segment's end
//! (as fallocated space does), and a spare left by a crash is removed at open.
//!
//! States (one atomic, so the commit path's check is one load):
//! `IDLE` → (the active segment syncs often) `WANTED` → (a background thread takes the job)
//! `PREPARING` → `READY` → (a switch takes it) `IDLE`. A failed or cancelled preparation goes
//! to `SKIPPED` until the next switch, so a full disk is not retried at every commit.
//!
//! Whether the zeros pay is the device's call, not ours: on this project's test VM a sync
//! over written blocks was a third cheaper one month and 10% dearer the next (130-byte
//! commits; at 4 KiB it stayed 1.4× cheaper). So the engine measures it. It samples the
//! journal's sync latencies in the first unprepared segment and in the first prepared one
//! (never while zeros are being written: those syncs wait behind them), and once it has
//! [`VERDICT_SYNCS`] of the prepared kind it compares the medians. Unless prepared segments
//! sync at least 10% faster, no further spare is prepared for the life of the handle (a
//! reopen measures again).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rialto_io::Fs;

use crate::throttle::JournalFirst;
use crate::wal::{segment_file_name, WalWriter};

/// The prepared segment, durable and complete, waiting for the next switch.
pub const SPARE_FILE: &str = "WAL-SPARE";
/// The spare while it is being written; never used after a crash.
pub const SPARE_TMP_FILE: &str = "WAL-SPARE.tmp";

const IDLE: u8 = 0;
const WANTED: u8 = 1;
const PREPARING: u8 = 2;
const READY: u8 = 3;
const SKIPPED: u8 = 4;

/// An unprepared active segment's sync rate is judged once it holds this many bytes (or an
/// eighth of the prepared size, if smaller), so a few early syncs do not decide alone, and a
/// spare is ready soon (see [`SpareSegment::early_switch_due`]). A prepared active segment is
/// judged at half its size: the spare then waits on disk for less time, and a short-lived
/// database prepares one spare, not two.
const JUDGE_AFTER: u64 = 256 << 10;
/// ... and once it was synced this many times: the engine's own syncs (a switch, TRIAD-MEM's
/// re-logging) must not make a sync-free workload look like a synced one.
const MIN_SYNCS: u64 = 16;
/// Syncs of a prepared segment the verdict waits for (and at most as many of an unprepared
/// one it keeps).
pub const VERDICT_SYNCS: usize = 256;
/// Unprepared syncs the verdict needs at least; with fewer it keeps preparing.
const VERDICT_MIN_UNPREPARED: usize = 64;
/// A median unprepared sync below this is not a device's (tmpfs, `MemFs`): nothing to judge,
/// preparation stays on.
const VERDICT_FLOOR_MICROS: u32 = 10;

/// Sync latencies sampled for the verdict (see the module docs).
#[derive(Default)]
struct Samples {
    unprepared: Vec<u32>,
    prepared: Vec<u32>,
}

/// Verdicts (`SpareSegment::verdict`).
const PENDING: u8 = 0;
const PAYS: u8 = 1;
const STOPPED: u8 = 2;

/// What the samples say: `true` when prepared segments sync at least 10% faster, or when
/// there is nothing to judge by.
fn zeros_pay(unprepared: &mut [u32], prepared: &mut [u32]) -> bool {
    if unprepared.len() < VERDICT_MIN_UNPREPARED || prepared.is_empty() {
        return true;
    }
    let median = |v: &mut [u32]| {
        let mid = v.len() / 2;
        *v.select_nth_unstable(mid).1
    };
    let (u, p) = (median(unprepared), median(prepared));
    u < VERDICT_FLOOR_MICROS || u64::from(p) * 10 < u64::from(u) * 9
}

/// The spare segment of one database. See the module docs.
pub struct SpareSegment {
    state: AtomicU8,
    /// The active segment is a prepared one (else it was created and preallocated).
    active_prepared: AtomicBool,
    /// Bytes of zeros in a spare (the WAL preallocation size); 0 disables preparation.
    bytes: u64,
    /// At least one sync per this many log bytes makes a spare worth preparing.
    bytes_per_sync: u64,
    /// `PENDING` while sampling; `STOPPED` once prepared segments measured no faster (no
    /// spare is wanted any more), else `PAYS`.
    verdict: AtomicU8,
    samples: Mutex<Samples>,
}

impl SpareSegment {
    /// A spare of `bytes` zeros, prepared when the active segment syncs at least once per
    /// `bytes_per_sync` bytes. Either being 0 disables it.
    pub fn new(bytes: u64, bytes_per_sync: u64) -> Self {
        let enabled = bytes > 0 && bytes_per_sync > 0;
        SpareSegment {
            state: AtomicU8::new(IDLE),
            active_prepared: AtomicBool::new(false),
            bytes: if enabled { bytes } else { 0 },
            bytes_per_sync,
            verdict: AtomicU8::new(PENDING),
            samples: Mutex::new(Samples::default()),
        }
    }

    /// Removes spares a previous process left (a crash may have cut one short; one that was
    /// complete is cheaper to redo than to verify). Best effort: a leftover is overwritten by
    /// the next preparation anyway.
    pub fn remove_leftovers(fs: &dyn Fs, dir: &Path) {
        for name in [SPARE_TMP_FILE, SPARE_FILE] {
            let path = dir.join(name);
            if fs.exists(&path) {
                let _ = fs.remove_file(&path);
            }
        }
    }

    /// Called after each record with the active segment's length and sync count. Returns
    /// true when it asked for a spare (the caller wakes a background thread).
    #[inline]
    pub fn judge(&self, segment_len: u64, segment_syncs: u64) -> bool {
        if self.state.load(Ordering::Relaxed) != IDLE
            || self.bytes == 0
            || self.stopped_by_verdict()
        {
            return false;
        }
        let judge_after = if self.active_prepared.load(Ordering::Relaxed) {
            self.bytes / 2
        } else {
            JUDGE_AFTER.min(self.bytes / 8)
        }
        .max(1);
        if segment_len < judge_after
            || segment_syncs < MIN_SYNCS
            || segment_syncs.saturating_mul(self.bytes_per_sync) < segment_len
        {
            return false;
        }
        self.state
            .compare_exchange(IDLE, WANTED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Called with the latency of each journal sync, before the segment it synced is
    /// replaced. Samples it for the verdict (see the module docs) until the verdict is in.
    pub fn observe_sync(&self, micros: u64) {
        if self.bytes == 0
            || self.verdict.load(Ordering::Relaxed) != PENDING
            || self.state.load(Ordering::Relaxed) == PREPARING
        {
            return;
        }
        let prepared = self.active_prepared.load(Ordering::Relaxed);
        let mut s = self.samples.lock();
        // Checked again under the lock: the verdict is given once.
        if self.verdict.load(Ordering::Relaxed) != PENDING {
            return;
        }
        let micros = u32::try_from(micros).unwrap_or(u32::MAX);
        if !prepared {
            if s.unprepared.len() < VERDICT_SYNCS {
                s.unprepared.push(micros);
            }
            return;
        }
        s.prepared.push(micros);
        if s.prepared.len() < VERDICT_SYNCS {
            return;
        }
        let Samples {
            unprepared,
            prepared,
            ..
        } = &mut *s;
        let pays = zeros_pay(unprepared, prepared);
        *s = Samples::default();
        self.verdict
            .store(if pays { PAYS } else { STOPPED }, Ordering::Relaxed);
        if !pays {
            tracing::info!(
                "WAL segments prepared as zeros sync no faster than preallocated ones here; \
                 no longer preparing them"
            );
        }
    }

    /// Whether the verdict stopped preparation (see the module docs).
    pub fn stopped_by_verdict(&self) -> bool {
        self.verdict.load(Ordering::Relaxed) == STOPPED
    }

    /// Claims the preparation job if one is wanted.
    pub fn claim_job(&self) -> bool {
        self.state
            .compare_exchange(WANTED, PREPARING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Runs a claimed job: writes the zeros to the temporary file (`Fs::create_zeroed`, paced
    /// by `throttle`), durable in data and size, and renames it to [`SPARE_FILE`]. The rename needs no
    /// directory sync: the switch that takes the spare renames it again and syncs the
    /// directory before a record goes in, and a crash before that leaves a file the next open
    /// removes. Adds the bytes it writes to `written_total` as it goes; on failure or
    /// `cancel` the temporary file is removed and no spare is offered until the next switch.
    pub fn prepare(
        &self,
        fs: &dyn Fs,
        dir: &Path,
        throttle: Option<&Arc<JournalFirst>>,
        cancel: &AtomicBool,
        written_total: &AtomicU64,
    ) -> std::io::Result<u64> {
        debug_assert_eq!(self.state.load(Ordering::Acquire), PREPARING);
        let tmp = dir.join(SPARE_TMP_FILE);
        let mut written = 0u64;
        let mut pace = |n: u64| {
            if cancel.load(Ordering::Acquire) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the database is closing",
                ));
            }
            if let Some(t) = throttle {
                t.acquire(n);
            }
            // Counted before the write: bytes a failed chunk may have written are not lost
            // from the statistics.
            written_total.fetch_add(n, Ordering::Relaxed);
            written += n;
            Ok(())
        };
        let r = fs
            .create_zeroed(&tmp, self.bytes, &mut pace)
            .and_then(|()| fs.rename(&tmp, &dir.join(SPARE_FILE)))
            .map(|()| written);
        match r {
            Ok(_) => self.state.store(READY, Ordering::Release),
            Err(_) => {
                let _ = fs.remove_file(&tmp);
                self.state.store(SKIPPED, Ordering::Release);
            }
        }
        r
    }

    /// At a memtable switch (the leader, holding the WAL lock): turns a ready spare into
    /// segment `number` and opens it for writing from its start. `None` when there is no
    /// spare or taking it failed; the caller then creates the segment as usual (which
    /// replaces whatever the failed attempt left under the segment's name).
    pub fn take(&self, fs: &dyn Fs, dir: &Path, number: u64) -> Option<WalWriter> {
        let w = self.take_inner(fs, dir, number);
        self.active_prepared.store(w.is_some(), Ordering::Relaxed);
        w
    }

    fn take_inner(&self, fs: &dyn Fs, dir: &Path, number: u64) -> Option<WalWriter> {
        match self.state.load(Ordering::Acquire) {
            READY if self.stopped_by_verdict() => {
                // Prepared before the verdict: not worth using.
                self.state.store(IDLE, Ordering::Release);
                let _ = fs.remove_file(&dir.join(SPARE_FILE));
                return None;
            }
            READY => {}
            SKIPPED => {
                self.state.store(IDLE, Ordering::Release);
                return None;
            }
            // WANTED or PREPARING: the spare will serve the next switch.
            _ => return None,
        }
        self.state.store(IDLE, Ordering::Release);
        let to = dir.join(segment_file_name(number));
        if let Err(e) = fs.rename(&dir.join(SPARE_FILE), &to) {
            tracing::warn!(error = %e, "taking the prepared WAL segment failed; creating one");
            return None;
        }
        match WalWriter::overwrite(fs, dir, number) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "opening the prepared WAL segment failed; creating one");
                None
            }
        }
    }

    /// Whether a spare is ready (for tests and statistics).
    pub fn is_ready(&self) -> bool {
        self.state.load(Ordering::Acquire) == READY
    }

    /// Whether a memtable switch is worth making early, with a small memtable, for the
    /// segment that follows:
    /// - upgrade: a spare is ready while the active segment is not a prepared one (the first
    ///   segment after open, or one created because preparation lagged), so the rest of what
    ///   would have gone into the active segment gets the cheaper syncs;
    /// - downgrade: the verdict found prepared segments no faster while the active segment is
    ///   one, so the rest goes to a preallocated segment, which syncs at least as fast.
    pub fn early_switch_due(&self) -> bool {
        let prepared = self.active_prepared.load(Ordering::Relaxed);
        if self.stopped_by_verdict() {
            prepared
        } else {
            !prepared && self.is_ready()
        }
    }

    /// Bytes a ready spare occupies on disk.
    pub fn disk_bytes(&self) -> u64 {
        if self.is_ready() {
            self.bytes
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_io::MemFs;

    #[test]
    fn a_spare_is_wanted_only_when_syncs_are_frequent_enough() {
        let s = SpareSegment::new(64 << 20, 16 << 10);
        assert!(!s.judge(128 << 10, 1000), "too early to judge");
        assert!(!s.judge(2 << 20, 100), "one sync per 20 KiB is too few");
        assert!(!s.judge(200 << 10, 15), "too few syncs to judge");
        assert!(s.judge(2 << 20, 128), "one per 16 KiB is enough");
        assert!(!s.judge(2 << 20, 128), "asked once");
        assert!(s.claim_job());
        assert!(!s.claim_job());
        let off = SpareSegment::new(64 << 20, 0);
        assert!(!off.judge(8 << 20, 1 << 20));
    }

    /// A database directory in `MemFs` and a spare of 10,000 bytes wanted at any sync rate.
    fn fixture() -> (MemFs, &'static Path, SpareSegment) {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        (fs, dir, SpareSegment::new(10_000, 1))
    }

    /// Makes the next segment a prepared one: judged, prepared, taken.
    fn switch_to_prepared(s: &SpareSegment, fs: &MemFs, dir: &Path, number: u64) {
        assert!(s.judge(10_000, 10_000));
        assert!(s.claim_job());
        s.prepare(fs, dir, None, &AtomicBool::new(false), &AtomicU64::new(0))
            .unwrap();
        assert!(s.take(fs, dir, number).is_some());
    }

    /// `unprepared` then `prepared` sync latencies, `VERDICT_SYNCS` of the latter; returns
    /// whether a spare is still wanted afterwards.
    fn verdict(unprepared: u64, prepared: u64) -> bool {
        let (fs, dir, s) = fixture();
        for _ in 0..VERDICT_SYNCS {
            s.observe_sync(unprepared);
        }
        switch_to_prepared(&s, &fs, dir, 2);
        for i in 0..VERDICT_SYNCS {
            assert!(!s.stopped_by_verdict(), "decided after {i} prepared syncs");
            assert!(!s.early_switch_due());
            s.observe_sync(prepared);
        }
        if s.stopped_by_verdict() {
            assert!(
                s.early_switch_due(),
                "back to a preallocated segment at once"
            );
            assert!(s.take(&fs, dir, 3).is_none());
            assert!(!s.early_switch_due(), "once");
            return false;
        }
        s.judge(10_000, 10_000)
    }

    #[test]
    fn a_spare_prepared_before_the_verdict_stopped_preparation_is_removed_not_used() {
        let (fs, dir, s) = fixture();
        for _ in 0..VERDICT_SYNCS {
            s.observe_sync(50);
        }
        switch_to_prepared(&s, &fs, dir, 2);
        assert!(s.judge(10_000, 10_000) && s.claim_job());
        s.prepare(&fs, dir, None, &AtomicBool::new(false), &AtomicU64::new(0))
            .unwrap();
        for _ in 0..VERDICT_SYNCS {
            s.observe_sync(50);
        }
        assert!(s.stopped_by_verdict() && s.early_switch_due());
        assert!(
            s.take(&fs, dir, 3).is_none(),
            "the next segment is preallocated"
        );
        assert!(fs.file_names(dir).iter().all(|n| n != SPARE_FILE));
        assert!(!s.early_switch_due());
        assert!(!s.judge(10_000, 10_000));
    }

    #[test]
    fn preparation_stops_when_prepared_segments_sync_no_faster() {
        assert!(verdict(100, 60), "40% faster: keeps preparing");
        assert!(!verdict(60, 60), "no faster: stops");
        assert!(!verdict(55, 60), "slower: stops");
        assert!(
            !verdict(60, 56),
            "under 10% faster does not pay for writing it twice"
        );
        assert!(
            verdict(5, 9),
            "syncs without a device (tmpfs) are not judged"
        );
    }

    #[test]
    fn the_verdict_ignores_syncs_behind_the_zeros_and_needs_enough_unprepared_ones() {
        let (fs, dir, s) = fixture();
        for _ in 0..100 {
            s.observe_sync(50);
        }
        // Syncs while the zeros are written wait behind them: not samples (taken, they would
        // fill the unprepared ones and make the prepared segment look faster).
        assert!(s.judge(10_000, 10_000) && s.claim_job());
        for _ in 0..1000 {
            s.observe_sync(5_000);
        }
        s.prepare(&fs, dir, None, &AtomicBool::new(false), &AtomicU64::new(0))
            .unwrap();
        assert!(s.take(&fs, dir, 2).is_some());
        for _ in 0..VERDICT_SYNCS {
            s.observe_sync(60);
        }
        assert!(s.stopped_by_verdict(), "judged on the 50 µs samples only");

        // Too few unprepared samples to judge by: preparation goes on.
        let s = SpareSegment::new(10_000, 1);
        for _ in 0..VERDICT_MIN_UNPREPARED - 1 {
            s.observe_sync(50);
        }
        switch_to_prepared(&s, &fs, dir, 3);
        for _ in 0..2 * VERDICT_SYNCS {
            s.observe_sync(500);
        }
        assert!(!s.stopped_by_verdict());
        assert!(s.judge(10_000, 10_000));
    }

    #[test]
    fn a_prepared_spare_becomes_the_next_segment_and_is_written_from_its_start() {
        let (fs, dir, s) = fixture();
        assert!(s.take(&fs, dir, 7).is_none(), "nothing prepared yet");
        assert!(s.judge(10_000, 10_000));
        assert!(s.claim_job());
        let written = s
            .prepare(&fs, dir, None, &AtomicBool::new(false), &AtomicU64::new(0))
            .unwrap();
        assert_eq!(written, 10_000);
        assert!(s.is_ready());
        assert!(s.early_switch_due(), "the active segment was not prepared");
        assert_eq!(fs.file_names(dir), vec![SPARE_FILE.to_string()]);
        let mut w = s.take(&fs, dir, 7).unwrap();
        assert!(!s.early_switch_due());
        w.add_record(crate::wal::KIND_BATCH, b"x").unwrap();
        w.sync().unwrap();
        let seg = dir.join(segment_file_name(7));
        assert_eq!(
            fs.file_size(&seg).unwrap(),
            10_000,
            "written over the zeros"
        );
        assert_eq!(fs.file_names(dir), vec![segment_file_name(7)]);
        assert!(!s.is_ready());
    }

    #[test]
    fn a_failed_or_cancelled_preparation_leaves_nothing_and_waits_for_the_next_switch() {
        use rialto_io::{Fault, FaultOp, FaultPlan};
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let s = SpareSegment::new(1 << 20, 1);
        assert!(s.judge(1 << 20, 1 << 20) && s.claim_job());
        fs.add_fault(FaultPlan::new(FaultOp::Sync, 1, Fault::NoSpace));
        assert!(s
            .prepare(&fs, dir, None, &AtomicBool::new(false), &AtomicU64::new(0))
            .is_err());
        assert!(
            fs.file_names(dir).is_empty(),
            "the temporary file is removed"
        );
        assert!(!s.judge(1 << 20, 1 << 20), "not retried for this segment");
        assert!(s.take(&fs, dir, 3).is_none());
        assert!(s.judge(1 << 20, 1 << 20), "asked again after the switch");
        assert!(s.claim_job());
        assert!(s
            .prepare(&fs, dir, None, &AtomicBool::new(true), &AtomicU64::new(0))
            .is_err());
        assert!(fs.file_names(dir).is_empty());
    }
}
