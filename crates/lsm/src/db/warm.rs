//! Row-cache warm-up: when writes pause, a background pass reads the newest values in key order
//! into the row cache's free room, so a dataset that fits there is served from it from the
//! start — after a bulk load, an ingestion or a restart — instead of from the memtable and
//! table blocks key by key as reads first touch them.
//!
//! Rules (see `Options::row_cache_warm`):
//! - A pass is due at open (if the database holds data) and then whenever new data (writes
//!   and ingestions, counted in `user_bytes`) since the last pass reaches 1/32 of the row
//!   cache's capacity: compactions move values between files but change none, so they need
//!   no pass.
//! - It starts only after `user_bytes` has not moved, and reads have been fewer than
//!   [`IDLE_READS`] per period, for `row_cache_warm_quiet_ms`, with no flush or compaction
//!   running or due, and while the cache has more than 1/32 free. While reads flow they fill
//!   the cache themselves; a pass beside them would take their CPU to offer the cache rows it
//!   mostly holds already. A few reads (monitoring, the server's own periodic work) are not a
//!   flow.
//! - It inserts through [`RowCache::warm`]: free room only, never evicting, under the same
//!   sequence check as a read's insert, so a warmed row is a published value with no newer
//!   published write (the row cache's invariant). It reads at the latest published sequence
//!   and takes a fresh one every [`CHECK_EVERY`] keys if writes came meanwhile.
//! - It stops when the cache is full, the database closes, a flush is due (writes resumed
//!   in earnest) or [`IDLE_READS`] reads came; a stopped pass is due again at the next pause.
//! - [`Db::focus_row_cache`] narrows the cache to the key ranges that serve reads (a store's
//!   current version after a push swapped it in): rows outside are evicted at once, to make
//!   room, and passes read only those ranges, in the order given (each in key order), so a new
//!   version is warmed first instead of the one it replaced, which sorts before it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rialto_engine::{EngineIterator, Result};

use super::{iter, Db, DbInner, State};
use crate::cache::row::{KeyRange, RowCache, Warmed};

/// Keys between checks of the cache's room, the snapshot and the reasons to stop.
const CHECK_EVERY: u64 = 1024;

/// Reads per `row_cache_warm_quiet_ms` that still count as a pause.
pub(crate) const IDLE_READS: u64 = 1000;

/// Warm-up bookkeeping, guarded by the state lock.
#[derive(Debug, Default)]
pub(crate) struct WarmState {
    /// A pass is running.
    pub(crate) running: bool,
    /// `user_bytes` when the last complete pass started; `None` before the first.
    done_at: Option<u64>,
    /// The ranges passes read, in the order they read them (`None`: every key). Every change
    /// moves the row cache's warm epoch on, under the state lock: a pass over an older focus
    /// is refused its rows and does not count as done.
    focus: Option<Arc<Vec<KeyRange>>>,
    /// Focus changes still evicting: no pass starts meanwhile, as shards not yet evicted would
    /// refuse its rows as full.
    evicting: u32,
    /// The period reads are being counted in: its start (clock micros) and the read count
    /// then.
    period: (u64, u64),
    /// When a period last saw more than [`IDLE_READS`] reads (clock micros).
    busy_at: u64,
}

impl Db {
    /// Tells the row cache which key ranges serve reads, most wanted first: every cached row
    /// outside them is evicted now, and warm-up passes, from the next pause on, read the
    /// ranges in this order (each in key order) into the free room. Reads anywhere still cache
    /// what they read. Ranges are `[start, end)`. The same focus again changes nothing.
    /// Returns the rows evicted.
    ///
    /// Eviction walks every shard of the cache, 1,024 slots per hold of its lock
    /// (`RowCache::evict_outside`): call it when the ranges change, not per request.
    pub fn focus_row_cache(&self, mut ranges: Vec<KeyRange>) -> u64 {
        let inner = &self.inner;
        let Some(rc) = inner.row_cache.as_ref() else {
            return 0;
        };
        ranges.retain(|(start, end)| start < end);
        let mut sorted = ranges.clone();
        sorted.sort();
        let mut merged: Vec<KeyRange> = Vec::with_capacity(sorted.len());
        for (start, end) in sorted {
            match merged.last_mut() {
                Some(last) if start <= last.1 => {
                    if end > last.1 {
                        last.1 = end;
                    }
                }
                _ => merged.push((start, end)),
            }
        }
        let epoch = {
            let mut st = inner.state.lock();
            if st.warm.focus.as_deref() == Some(&ranges) {
                return 0;
            }
            // Under the lock a pass takes the focus and the epoch under: a pass has both old
            // (its rows are refused from now on, or evicted below) or both new.
            st.warm.focus = Some(Arc::new(ranges));
            st.warm.evicting += 1;
            rc.next_warm_epoch()
        };
        let evicted = rc.evict_outside(&merged);
        {
            let mut st = inner.state.lock();
            st.warm.evicting -= 1;
            if rc.warm_epoch() == epoch {
                st.warm.done_at = None;
            }
        }
        inner.notify_background();
        evicted
    }
}

impl DbInner {
    /// The row cache, if warming it is on and can run (never in inline mode: a writer would
    /// pay for the pass).
    fn warmable(&self) -> Option<&RowCache> {
        if !self.opts.row_cache_warm
            || self.inline_background()
            || self.read_only_flag.load(Ordering::Acquire)
        {
            return None;
        }
        self.row_cache.as_ref()
    }

    /// The row cache, if new data calls for a pass (writes paused or not).
    fn warm_wanted(&self, st: &State) -> Option<&RowCache> {
        let rc = self.warmable().filter(|_| !st.warm.running)?;
        let bytes = self.counters.user_bytes.load(Ordering::Relaxed);
        let wanted = match st.warm.done_at {
            None => true,
            Some(at) => bytes.saturating_sub(at) >= (rc.capacity() / 32) as u64,
        };
        wanted.then_some(rc)
    }

    /// Whether a warm-up pass should start now (see the module rules).
    pub(super) fn warm_due(&self, st: &mut State) -> bool {
        let Some(rc) = self.warm_wanted(st) else {
            return false;
        };
        if st.flush_running
            || st.running_compactions > 0
            || !st.imms.is_empty()
            || st.warm.evicting > 0
            || self.warm_quiet_for(st) < self.opts.row_cache_warm_quiet_ms * 1000
        {
            return false;
        }
        let room = rc.has_room();
        if !room {
            // Nothing to fill: wait for new data rather than look again at every wake-up.
            st.warm.done_at = Some(self.counters.user_bytes.load(Ordering::Relaxed));
        }
        room
    }

    /// How long an idle background thread may sleep before a wanted pass could be due
    /// (writes pausing wakes nobody); `None` when no pass is wanted.
    pub(super) fn warm_wait(&self, st: &mut State) -> Option<Duration> {
        self.warm_wanted(st)?;
        let quiet = self.opts.row_cache_warm_quiet_ms * 1000;
        let left = quiet.saturating_sub(self.warm_quiet_for(st));
        Some(Duration::from_micros(left.max(1000)))
    }

    /// Micros since writes last came or reads last flowed.
    fn warm_quiet_for(&self, st: &mut State) -> u64 {
        let writes = self.quiet_for(st);
        let now = self.opts.clock.now_micros();
        let reads = self.reads.load(Ordering::Relaxed);
        let (start, mark) = st.warm.period;
        if reads - mark > IDLE_READS {
            st.warm.busy_at = now;
            st.warm.period = (now, reads);
        } else if now.saturating_sub(start) >= self.opts.row_cache_warm_quiet_ms * 1000 {
            st.warm.period = (now, reads);
        }
        writes.min(now.saturating_sub(st.warm.busy_at))
    }

    /// Runs one pass ([`Job::WarmRows`](super::Job)). An error ends it quietly: the
    /// cache stays correct, and reads meet the same error themselves.
    pub(super) fn warm_rows(&self) {
        let start = self.counters.user_bytes.load(Ordering::Relaxed);
        let warm_epoch = || self.row_cache.as_ref().map_or(0, RowCache::warm_epoch);
        let mut epoch = warm_epoch();
        let r = self.warm_pass(&mut epoch);
        let mut st = self.state.lock();
        st.warm.running = false;
        // A focus that changed after the pass last took it wants a pass of its own.
        let done = (warm_epoch() == epoch).then_some(start);
        match r {
            Ok((rows, complete)) => {
                self.counters.warmed_rows.fetch_add(rows, Ordering::Relaxed);
                if complete {
                    st.warm.done_at = done;
                }
                tracing::debug!(rows, complete, "row-cache warm-up pass");
            }
            Err(e) => {
                st.warm.done_at = done;
                tracing::warn!(error = %e, "row-cache warm-up pass failed");
            }
        }
    }

    /// Rows inserted, and whether the pass ran to its end (the last key or a full cache).
    /// `epoch` is left at the warm epoch (and so the focus) the pass last read.
    fn warm_pass(&self, epoch: &mut u64) -> Result<(u64, bool)> {
        let Some(rc) = self.row_cache.as_ref() else {
            return Ok((0, true));
        };
        let mut rows = 0;
        let mut scanned = 0u64;
        let reads_at_start = self.reads.load(Ordering::Relaxed);
        // Where the pass is: the range (in reading order) and the key to resume at in it.
        let mut at: (usize, Option<Vec<u8>>) = (0, None);
        'snapshot: loop {
            let focus = {
                let st = self.state.lock();
                let now = rc.warm_epoch();
                if now != *epoch {
                    // A new focus: its ranges from the first.
                    *epoch = now;
                    at = (0, None);
                }
                st.warm.focus.clone()
            };
            let current = *epoch;
            let ranges: Vec<(&[u8], Option<&[u8]>)> = match focus.as_deref() {
                Some(f) => f.iter().map(|(s, e)| (&s[..], Some(&e[..]))).collect(),
                None => vec![(&[][..], None)],
            };
            let (seq, mut it) = iter::latest_streaming(self)?;
            while let Some(&(start, end)) = ranges.get(at.0) {
                match &at.1 {
                    Some(k) => it.seek(k),
                    None => it.seek(start),
                }
                while it.valid() && end.is_none_or(|end| it.key() < end) {
                    match rc.warm(it.key(), it.value(), seq, current) {
                        Warmed::Inserted => rows += 1,
                        Warmed::Skipped | Warmed::Full => {}
                        // The focus changed: a pass over the new one is due once its
                        // eviction has made room.
                        Warmed::Stale => return Ok((rows, false)),
                    }
                    scanned += 1;
                    if scanned.is_multiple_of(CHECK_EVERY) {
                        if self.shutting_down.load(Ordering::Acquire)
                            || self.reads.load(Ordering::Relaxed) - reads_at_start > IDLE_READS
                            || !self.state.lock().imms.is_empty()
                        {
                            return Ok((rows, false));
                        }
                        if !rc.has_room() {
                            return Ok((rows, true));
                        }
                        if self.visible_seq.load(Ordering::Acquire) != seq {
                            // Writes came: keys of the shards they reached would all be
                            // refused at the old sequence.
                            at.1 = Some(it.key().to_vec());
                            continue 'snapshot;
                        }
                    }
                    it.next();
                }
                it.status()?;
                at = (at.0 + 1, None);
            }
            return Ok((rows, true));
        }
    }
}
