//! The engine's TRIAD state (see [`crate::triad`]): the characterizer fed from reads and
//! writes, the tuning in force, and what the statistics show.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rialto_engine::{BatchOp, WriteBatch};

use crate::compaction::picker::{DeferralRule, L0Choice};
use crate::options::Options;
use crate::triad::recorder::Recorder;
use crate::triad::{Decision, TriadOptions, TriadStats, Window, Workload};

pub(crate) struct TriadState {
    opts: TriadOptions,
    /// Present when adaptive.
    recorder: Option<Recorder>,
    last_overlap: Mutex<Option<f64>>,
    deferred_flushes: AtomicU64,
    hot_flushes: AtomicU64,
    hot_entries_kept: AtomicU64,
    hot_bytes_relogged: AtomicU64,
    last_hot_entries: AtomicU64,
    log_flushes: AtomicU64,
    log_fallbacks: AtomicU64,
}

impl TriadState {
    pub(crate) fn new(opts: TriadOptions) -> Self {
        TriadState {
            recorder: opts
                .adaptive
                .then(|| Recorder::new(opts.characterizer.clone())),
            opts,
            last_overlap: Mutex::new(None),
            deferred_flushes: AtomicU64::new(0),
            hot_flushes: AtomicU64::new(0),
            hot_entries_kept: AtomicU64::new(0),
            hot_bytes_relogged: AtomicU64::new(0),
            last_hot_entries: AtomicU64::new(0),
            log_flushes: AtomicU64::new(0),
            log_fallbacks: AtomicU64::new(0),
        }
    }

    /// Counts a read (a point read, or an iterator) for the characterizer. True when it
    /// changed the workload class, and so the tuning (the caller then calls
    /// `DbInner::retuned`).
    #[inline]
    #[must_use]
    pub(crate) fn record_read(&self) -> bool {
        let Some(r) = &self.recorder else {
            return false;
        };
        r.record_read().inspect(log_decision).is_some()
    }

    /// [`TriadState::record_read`] for a batch of `n` point reads.
    #[must_use]
    pub(crate) fn record_reads(&self, n: u64) -> bool {
        let Some(r) = &self.recorder else {
            return false;
        };
        r.record_reads(n).inspect(log_decision).is_some()
    }

    /// Counts a batch's writes. Called by the commit leader only. True when the tuning
    /// changed, as for [`TriadState::record_read`].
    #[must_use]
    pub(crate) fn record_batch(&self, batch: &WriteBatch) -> bool {
        let Some(r) = &self.recorder else {
            return false;
        };
        let keys = batch.iter().map(|op| match op {
            BatchOp::Put(k, _) | BatchOp::Delete(k) => k,
        });
        r.record_writes(keys).inspect(log_decision).is_some()
    }

    /// The overlap threshold in force.
    pub(crate) fn overlap_threshold(&self) -> f64 {
        match &self.recorder {
            Some(r) => r.with(|c| c.tuning().overlap_threshold),
            None => self.opts.overlap_threshold,
        }
    }

    /// TRIAD-DISK's rule for the picker, if it is on.
    pub(crate) fn deferral_rule(&self, o: &Options) -> Option<DeferralRule> {
        if !self.opts.disk {
            return None;
        }
        let max_l0_files = self
            .opts
            .max_deferred_l0_files
            .min(o.level0_slowdown_trigger.saturating_sub(1))
            .max(o.level0_compaction_trigger);
        Some(DeferralRule {
            overlap_threshold: self.overlap_threshold(),
            max_l0_files,
        })
    }

    /// Whether a flush now keeps hot keys in memory (TRIAD-MEM on and, when adaptive,
    /// chosen by the characterizer).
    pub(crate) fn hot_cold_active(&self) -> bool {
        self.opts.mem
            && match &self.recorder {
                Some(r) => r.with(|c| c.tuning().hot_cold),
                None => true,
            }
    }

    /// Whether a flush now writes a commit-log table (TRIAD-LOG on and, when adaptive,
    /// chosen by the characterizer).
    pub(crate) fn log_active(&self) -> bool {
        self.opts.log
            && match &self.recorder {
                Some(r) => r.with(|c| c.tuning().commit_log),
                None => true,
            }
    }

    /// Records a commit-log flush, or (`ok` false) one that fell back to an ordinary table.
    pub(crate) fn note_log_flush(&self, ok: bool) {
        if ok {
            self.log_flushes.fetch_add(1, Ordering::Relaxed);
        } else {
            self.log_fallbacks.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Bytes of hot entries a flush may keep.
    pub(crate) fn hot_budget(&self, write_buffer_size: usize) -> usize {
        (write_buffer_size as f64 * self.opts.hot_fraction) as usize
    }

    /// Entries a key needs to be hot.
    pub(crate) fn hot_min_updates(&self) -> u32 {
        self.opts.hot_min_updates
    }

    /// Records a flush that kept `entries` hot entries, re-logged in `bytes` of WAL.
    pub(crate) fn note_hot(&self, entries: u64, bytes: u64) {
        self.hot_flushes.fetch_add(1, Ordering::Relaxed);
        self.hot_entries_kept.fetch_add(entries, Ordering::Relaxed);
        self.hot_bytes_relogged.fetch_add(bytes, Ordering::Relaxed);
        self.last_hot_entries.store(entries, Ordering::Relaxed);
    }

    /// Whether tables need their sketches (TRIAD-DISK on).
    pub(crate) fn uses_sketches(&self) -> bool {
        self.opts.disk
    }

    /// Records what the deferral rule said of L0 after a flush.
    pub(crate) fn note_level0(&self, status: Option<L0Choice>) {
        match status {
            Some(L0Choice::Defer(x)) => {
                *self.last_overlap.lock() = Some(x);
                self.deferred_flushes.fetch_add(1, Ordering::Relaxed);
            }
            Some(L0Choice::Run(x)) => *self.last_overlap.lock() = x,
            None => {}
        }
    }

    pub(crate) fn stats(&self) -> TriadStats {
        let (workload, windows, last_window, decisions) = match &self.recorder {
            Some(r) => r.with(|c| {
                (
                    c.workload(),
                    c.windows(),
                    c.last_window(),
                    c.decisions().copied().collect(),
                )
            }),
            None => (Workload::Balanced, 0, Window::default(), Vec::new()),
        };
        TriadStats {
            mem: self.opts.mem,
            hot_cold_active: self.hot_cold_active(),
            hot_flushes: self.hot_flushes.load(Ordering::Relaxed),
            hot_entries_kept: self.hot_entries_kept.load(Ordering::Relaxed),
            hot_bytes_relogged: self.hot_bytes_relogged.load(Ordering::Relaxed),
            last_hot_entries: self.last_hot_entries.load(Ordering::Relaxed),
            log: self.opts.log,
            log_active: self.log_active(),
            log_flushes: self.log_flushes.load(Ordering::Relaxed),
            log_fallbacks: self.log_fallbacks.load(Ordering::Relaxed),
            disk: self.opts.disk,
            adaptive: self.opts.adaptive,
            overlap_threshold: self.overlap_threshold(),
            last_overlap: *self.last_overlap.lock(),
            deferred_flushes: self.deferred_flushes.load(Ordering::Relaxed),
            workload,
            windows,
            last_window,
            decisions,
        }
    }
}

fn log_decision(d: &Decision) {
    tracing::info!(
        window = d.window,
        from = d.from.name(),
        to = d.to.name(),
        read_fraction = d.read_fraction,
        skew = d.skew,
        overlap_threshold = d.tuning.overlap_threshold,
        hot_cold = d.tuning.hot_cold,
        "workload class changed"
    );
}
