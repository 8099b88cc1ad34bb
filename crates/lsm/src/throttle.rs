//! Journal first: flush and compaction writes are paced when journal syncs slow down.
//!
//! Commits wait for `fdatasync` of the WAL. A compaction writing hundreds of MB competes for
//! the same disk queue and can turn a 0.1 ms sync into tens of milliseconds (RavenDB's
//! bad-disk story). The WAL reports every sync's latency here; every window the controller
//! compares the window's 90th percentile with a target and adjusts the rate allowed to
//! background writers — halving it when syncs are slow, raising it by half when they are
//! fast, and lifting the limit once it exceeds the ceiling (AIMD, as TCP does, so it settles
//! near the rate the disk can absorb without hurting the journal). Background writers also
//! start write-back every `bytes_per_sync` so their data trickles out instead of landing in
//! one burst at the table's final sync.
//!
//! The target is `max(target_floor, baseline_multiplier × baseline)`, where the baseline is a
//! slow moving average of the median sync latency in quiet windows: no background bytes
//! written and no background sync running or ended. A window where background writers only
//! wait in their own sync is not quiet: the device is still draining their earlier writes,
//! and the journal's slow syncs there are theirs, not the disk's normal latency (taking them
//! as the baseline would raise the target until pacing never engages). Such a window holds
//! the rate where it is.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rialto_io::Clock;

/// Tuning of `JournalFirst`. Every field states its default and trade-off.
#[derive(Debug, Clone)]
pub struct ThrottleOptions {
    /// Pace background writes at all. Default `true`. Off: compactions run at full speed and
    /// commits may wait behind their I/O.
    pub enabled: bool,
    /// Journal sync latency that is always acceptable. Default 500 µs. Lower: background work
    /// is slowed sooner (and L0 may grow until writers stall); higher: commits tolerate more.
    pub target_floor: Duration,
    /// Multiple of the undisturbed median sync latency that counts as slow. Default 4.
    pub baseline_multiplier: u32,
    /// Slowest pace background writes are ever held to, bytes per second. Default 8 MiB/s, so
    /// flushes and compactions always progress (writers stall on L0 otherwise).
    pub min_rate: u64,
    /// Pace above which the limit is lifted entirely, bytes per second. Default 1 GiB/s.
    pub max_rate: u64,
    /// How often the controller decides. Default 100 ms. Shorter reacts faster and flaps more.
    pub window: Duration,
    /// Background writers start write-back after this many bytes. Default 1 MiB; 0 never.
    /// Also with pacing off, an ingestion with a page-cache budget writes back (and drops
    /// pages past the budget) at this interval; at 0 it drops them only after each table's
    /// final sync.
    pub bytes_per_sync: u64,
}

impl Default for ThrottleOptions {
    fn default() -> Self {
        ThrottleOptions {
            enabled: true,
            target_floor: Duration::from_micros(500),
            baseline_multiplier: 4,
            min_rate: 8 << 20,
            max_rate: 1 << 30,
            window: Duration::from_millis(100),
            bytes_per_sync: 1 << 20,
        }
    }
}

/// What background writers did during a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    /// Wrote this many bytes (more than zero).
    Writing(u64),
    /// Wrote nothing, but a background sync ran or ended: the device is still busy with
    /// earlier background writes.
    Draining,
    /// Nothing at all.
    Quiet,
}

/// A pure controller: state in, decision out (so the policy can be tested without a disk).
#[derive(Debug, Clone)]
pub struct Controller {
    /// Current limit in bytes per second; `None` is unlimited.
    pub rate: Option<f64>,
    /// Median sync latency without background writes, in µs (moving average).
    pub baseline_micros: Option<f64>,
}

impl Controller {
    /// Target latency in µs under `opts`.
    pub fn target_micros(&self, opts: &ThrottleOptions) -> f64 {
        let floor = opts.target_floor.as_micros() as f64;
        let base = self.baseline_micros.unwrap_or(0.0) * f64::from(opts.baseline_multiplier);
        floor.max(base)
    }

    /// Decides after a window of `window_secs` holding the sorted sync latencies `syncs` (µs),
    /// during which background writers did `bg`.
    pub fn decide(
        &mut self,
        opts: &ThrottleOptions,
        syncs: &[u64],
        bg: Background,
        window_secs: f64,
    ) {
        if syncs.is_empty() {
            return;
        }
        let p50 = syncs[(syncs.len() - 1) / 2] as f64;
        let p90 = syncs[(syncs.len() - 1) * 9 / 10] as f64;
        if bg == Background::Quiet {
            self.baseline_micros = Some(match self.baseline_micros {
                None => p50,
                Some(b) => b * 0.9 + p50 * 0.1,
            });
        }
        let slow = p90 > self.target_micros(opts);
        match bg {
            Background::Writing(bytes) if slow => {
                let observed = bytes as f64 / window_secs.max(1e-3);
                let current = self
                    .rate
                    .unwrap_or(observed)
                    .min(observed.max(opts.min_rate as f64));
                self.rate = Some((current / 2.0).max(opts.min_rate as f64));
            }
            // Slow because of writes already made: the pace that made them stays.
            Background::Draining if slow => {}
            _ => {
                if let Some(r) = self.rate {
                    let r = r * 1.5;
                    self.rate = (r < opts.max_rate as f64).then_some(r);
                }
            }
        }
    }
}

struct State {
    ctl: Controller,
    /// Token bucket for background writes (may go negative: a writer that overdrew waits).
    tokens: f64,
    last_refill_micros: u64,
    window_start_micros: u64,
    window_syncs: Vec<u64>,
}

/// The shared pacer: the WAL calls [`JournalFirst::observe_sync`], background writers call
/// [`JournalFirst::acquire`].
pub struct JournalFirst {
    opts: ThrottleOptions,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Mirrors `state.ctl.rate.is_some()` so unthrottled writers skip the lock.
    limited: AtomicBool,
    bg_bytes: AtomicU64,
    /// Background syncs running now.
    bg_syncs_running: AtomicU64,
    /// A background sync ended since the last decision.
    bg_sync_ended: AtomicBool,
    throttled_micros: AtomicU64,
}

/// Longest burst a writer may take at once, as time at the current rate.
const BURST: f64 = 0.05;

impl JournalFirst {
    /// A pacer with `opts`, timed by `clock`.
    pub fn new(opts: ThrottleOptions, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now_micros();
        JournalFirst {
            opts,
            clock,
            state: Mutex::new(State {
                ctl: Controller {
                    rate: None,
                    baseline_micros: None,
                },
                tokens: 0.0,
                last_refill_micros: now,
                window_start_micros: now,
                window_syncs: Vec::new(),
            }),
            limited: AtomicBool::new(false),
            bg_bytes: AtomicU64::new(0),
            bg_syncs_running: AtomicU64::new(0),
            bg_sync_ended: AtomicBool::new(false),
            throttled_micros: AtomicU64::new(0),
        }
    }

    /// Reports one journal sync that took `micros`.
    pub fn observe_sync(&self, micros: u64) {
        if !self.opts.enabled {
            return;
        }
        let now = self.clock.now_micros();
        let mut st = self.state.lock();
        st.window_syncs.push(micros);
        let elapsed = now.saturating_sub(st.window_start_micros);
        if elapsed < self.opts.window.as_micros() as u64 {
            return;
        }
        let bytes = self.bg_bytes.swap(0, Ordering::Relaxed);
        let ended = self.bg_sync_ended.swap(false, Ordering::Relaxed);
        let bg = if bytes > 0 {
            Background::Writing(bytes)
        } else if ended || self.bg_syncs_running.load(Ordering::Relaxed) > 0 {
            Background::Draining
        } else {
            Background::Quiet
        };
        let mut syncs = std::mem::take(&mut st.window_syncs);
        syncs.sort_unstable();
        st.ctl.decide(&self.opts, &syncs, bg, elapsed as f64 / 1e6);
        st.window_start_micros = now;
        syncs.clear();
        st.window_syncs = syncs;
        self.limited.store(st.ctl.rate.is_some(), Ordering::Release);
    }

    /// Runs a background writer's sync, so that the windows it spans are not taken for quiet
    /// ones (see [`Background::Draining`]).
    pub fn background_sync<T>(&self, sync: impl FnOnce() -> T) -> T {
        self.bg_syncs_running.fetch_add(1, Ordering::Relaxed);
        let r = sync();
        self.bg_syncs_running.fetch_sub(1, Ordering::Relaxed);
        self.bg_sync_ended.store(true, Ordering::Relaxed);
        r
    }

    /// Waits until a background writer may write `bytes`.
    pub fn acquire(&self, bytes: u64) {
        self.bg_bytes.fetch_add(bytes, Ordering::Relaxed);
        if !self.limited.load(Ordering::Acquire) {
            return;
        }
        let wait = {
            let now = self.clock.now_micros();
            let mut st = self.state.lock();
            // With no journal syncs for a while there is no commit to protect.
            let idle = now.saturating_sub(st.window_start_micros)
                > 4 * self.opts.window.as_micros() as u64;
            let Some(rate) = st.ctl.rate.filter(|_| !idle) else {
                st.ctl.rate = None;
                self.limited.store(false, Ordering::Release);
                return;
            };
            let dt = now.saturating_sub(st.last_refill_micros) as f64 / 1e6;
            st.last_refill_micros = now;
            st.tokens = (st.tokens + rate * dt).min(rate * BURST);
            st.tokens -= bytes as f64;
            if st.tokens >= 0.0 {
                return;
            }
            Duration::from_secs_f64(-st.tokens / rate)
        };
        self.clock.sleep(wait);
        self.throttled_micros
            .fetch_add(wait.as_micros() as u64, Ordering::Relaxed);
    }

    /// Current limit in bytes per second (`None`: unlimited).
    pub fn rate(&self) -> Option<u64> {
        self.state.lock().ctl.rate.map(|r| r as u64)
    }

    /// Total time background writers waited.
    pub fn throttled_micros(&self) -> u64 {
        self.throttled_micros.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ThrottleOptions {
        ThrottleOptions::default()
    }

    #[test]
    fn slow_syncs_under_background_writes_halve_the_rate_down_to_the_floor() {
        let o = opts();
        let mut c = Controller {
            rate: None,
            baseline_micros: Some(100.0),
        };
        // 100 MB in 0.1 s = 1 GB/s observed; syncs at 5 ms.
        c.decide(&o, &[5000; 10], Background::Writing(100 << 20), 0.1);
        let r1 = c.rate.expect("limited");
        assert!(r1 < 600e6 && r1 > 400e6, "{r1}");
        for _ in 0..20 {
            c.decide(&o, &[5000; 10], Background::Writing(1 << 20), 0.1);
        }
        assert_eq!(c.rate, Some(o.min_rate as f64));
    }

    #[test]
    fn fast_syncs_raise_the_rate_until_the_limit_lifts() {
        let o = opts();
        let mut c = Controller {
            rate: Some(o.min_rate as f64),
            baseline_micros: Some(100.0),
        };
        let mut steps = 0;
        while c.rate.is_some() {
            c.decide(&o, &[120; 10], Background::Writing(1 << 20), 0.1);
            steps += 1;
            assert!(steps < 100);
        }
        assert!(steps > 3);
    }

    #[test]
    fn slow_syncs_without_background_writes_are_not_blamed_on_them() {
        let o = opts();
        let mut c = Controller {
            rate: None,
            baseline_micros: None,
        };
        c.decide(&o, &[5000; 10], Background::Quiet, 0.1);
        assert_eq!(c.rate, None);
        assert_eq!(c.baseline_micros, Some(5000.0));
    }

    /// Regression (found by `tests/journal_first.rs` on a simulated device): a compaction
    /// blocked in its table's sync writes nothing for a window while the journal's syncs wait
    /// behind its data. Taking those syncs as the baseline raised the target 40-fold, and
    /// pacing never engaged.
    #[test]
    fn slow_syncs_while_background_writers_drain_neither_move_the_baseline_nor_the_rate() {
        let o = opts();
        let mut c = Controller {
            rate: Some(10e6),
            baseline_micros: Some(100.0),
        };
        c.decide(&o, &[60_000; 3], Background::Draining, 0.1);
        assert_eq!(c.baseline_micros, Some(100.0));
        assert_eq!(c.rate, Some(10e6));
        // Once the syncs are fast again the rate climbs as after any good window.
        c.decide(&o, &[120; 10], Background::Draining, 0.1);
        assert_eq!(c.rate, Some(15e6));
        assert_eq!(c.baseline_micros, Some(100.0));
    }

    #[test]
    fn target_is_the_larger_of_floor_and_scaled_baseline() {
        let o = opts();
        let c = Controller {
            rate: None,
            baseline_micros: Some(300.0),
        };
        assert_eq!(c.target_micros(&o), 1200.0);
        let c = Controller {
            rate: None,
            baseline_micros: Some(50.0),
        };
        assert_eq!(c.target_micros(&o), 500.0);
    }

    #[test]
    fn a_single_outlier_in_a_window_does_not_throttle() {
        let o = opts();
        let mut c = Controller {
            rate: None,
            baseline_micros: Some(100.0),
        };
        let mut w = vec![100u64; 19];
        w.push(50_000);
        c.decide(&o, &w, Background::Writing(10 << 20), 0.1);
        assert_eq!(c.rate, None);
    }
}
