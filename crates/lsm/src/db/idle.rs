//! Work for when writes pause: the quiet clock, and idle compaction.
//!
//! TRIAD defers work while writes flow: L0 compaction waits for key overlap (TRIAD-DISK),
//! and flushes leave commit-log tables whose values stay in the WAL segment (TRIAD-LOG). The
//! characterizer lifts both once reads dominate, so after a load the first reads used to
//! start that work and then share the CPU with it: with 1M keys on 2 cores, a 1.5 s
//! compaction ran under the first seconds of GETs. Idle compaction does it in the pause
//! instead (`Options::idle_compaction_quiet_ms`).
//!
//! Rules:
//! - Writes paused: `user_bytes` (writes and ingestions) has not moved for the quiet period,
//!   as seen by the background threads' checks. A check that sees it moved restarts the
//!   period, so a pause is never overestimated (at worst it is seen one wake-up late).
//! - Idle only adds work: the picker runs with the tuning in force first; only if it finds
//!   nothing does it run again with commit-log tables compacted and no deferral. The
//!   characterizer's class and tuning are left alone, so flushes after the pause write what
//!   they wrote before (no flapping) and each idle task is counted (`idle_compactions`).
//! - Background threads that found nothing sleep until the pause would make idle work due;
//!   nothing else wakes them when writes stop.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{compact_pointers, DbInner, State};
use crate::compaction::picker::{self, CompactionTask, PickerOptions};

/// When writes last moved `user_bytes`, as the background threads saw it.
#[derive(Debug, Default)]
pub(crate) struct Quiet {
    seen_bytes: u64,
    seen_at: u64,
}

impl DbInner {
    /// Micros since writes last moved `user_bytes` (as seen by these checks).
    pub(super) fn quiet_for(&self, st: &mut State) -> u64 {
        let now = self.opts.clock.now_micros();
        let bytes = self.counters.user_bytes.load(Ordering::Relaxed);
        if bytes != st.quiet.seen_bytes {
            st.quiet.seen_bytes = bytes;
            st.quiet.seen_at = now;
        }
        now.saturating_sub(st.quiet.seen_at)
    }

    /// The idle quiet period in micros, if idle compaction can run here.
    fn idle_quiet_micros(&self) -> Option<u64> {
        let ms = self.opts.idle_compaction_quiet_ms;
        (ms > 0 && !self.inline_background()).then_some(ms * 1000)
    }

    /// The picker's options for idle work: as if reads dominated.
    fn idle_picker_options(popts: &PickerOptions) -> PickerOptions {
        PickerOptions {
            l0_deferral: None,
            compact_commit_log: true,
            ..popts.clone()
        }
    }

    /// The compaction the tuned options `popts` pick, else, if `idle`, the one the idle
    /// options pick (`true`). Files in `compacting` are taken by running compactions.
    fn two_step_pick(
        st: &State,
        compacting: &HashSet<u64>,
        popts: &PickerOptions,
        idle: bool,
    ) -> Option<(CompactionTask, bool)> {
        let v = st.versions.current();
        let ptrs = compact_pointers(&st.versions);
        if let Some(t) = picker::pick(&v, compacting, &ptrs, popts) {
            return Some((t, false));
        }
        if !idle {
            return None;
        }
        let t = picker::pick(&v, compacting, &ptrs, &Self::idle_picker_options(popts))?;
        Some((t, true))
    }

    /// The compaction due now: the tuned one, else, once writes paused, the idle one
    /// (`true`).
    fn due_compaction(
        &self,
        st: &mut State,
        popts: &PickerOptions,
    ) -> Option<(CompactionTask, bool)> {
        let paused = self
            .idle_quiet_micros()
            .is_some_and(|q| self.quiet_for(st) >= q);
        Self::two_step_pick(st, &st.compacting, popts, paused)
    }

    /// The compaction to run now (see `due_compaction`), idle ones counted. Does not mark
    /// it running.
    pub(super) fn pick_compaction(
        &self,
        st: &mut State,
        popts: &PickerOptions,
    ) -> Option<CompactionTask> {
        let (t, idle) = self.due_compaction(st, popts)?;
        if idle {
            self.counters
                .idle_compactions
                .fetch_add(1, Ordering::Relaxed);
            tracing::debug!(level = t.level, files = t.inputs.len(), "idle compaction");
        }
        Some(t)
    }

    /// Whether a compaction is due now, idle work included (for
    /// `Db::wait_for_background_work`).
    pub(super) fn compaction_due(&self, st: &mut State, popts: &PickerOptions) -> bool {
        self.due_compaction(st, popts).is_some()
    }

    /// How long an idle background thread may sleep before idle compaction could be due
    /// (writes pausing wakes nobody); `None` when there is no such work or it is due now
    /// (a thread then waits for a running job's end, which notifies).
    pub(super) fn idle_wait(&self, st: &mut State, popts: &PickerOptions) -> Option<Duration> {
        let quiet = self.idle_quiet_micros()?;
        // Files already compacting do not count: the task may only wait for them.
        match Self::two_step_pick(st, &HashSet::new(), popts, true) {
            Some((_, true)) => {}
            _ => return None,
        }
        let left = quiet.saturating_sub(self.quiet_for(st));
        (left > 0).then(|| Duration::from_micros(left.max(1000)))
    }
}
