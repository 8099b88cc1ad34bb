//! Counting operations into the characterizer's windows, on the engine's hot paths.
//!
//! Cost per read: one relaxed atomic add. Writes are recorded by the write group's leader
//! (one thread at a time), which samples one key in [`SAMPLE_EVERY`] under an uncontended
//! mutex. Whoever moves the operation count across a window boundary closes the window:
//! it counts the distinct sampled keys and hands the window to the characterizer. Window
//! counts are approximate at the edges (a read racing the close may land in either window),
//! which a ratio over 10,000 operations does not notice.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::characterizer::{Characterizer, CharacterizerConfig, Decision, Window};
use super::sketch::KeySketch;

/// One written key in this many is sampled for the skew estimate.
pub const SAMPLE_EVERY: u64 = 8;

#[derive(Default)]
struct Acc {
    writes: u64,
    samples: Vec<u64>,
    /// Operation count when the current window opened.
    opened_at: u64,
}

/// Feeds a [`Characterizer`] from the engine's operations.
pub struct Recorder {
    window_ops: u64,
    ops: AtomicU64,
    acc: Mutex<Acc>,
    characterizer: Mutex<Characterizer>,
}

impl Recorder {
    /// A recorder feeding a new characterizer.
    pub fn new(cfg: CharacterizerConfig) -> Self {
        Recorder {
            window_ops: cfg.window_ops.max(1),
            ops: AtomicU64::new(0),
            acc: Mutex::new(Acc::default()),
            characterizer: Mutex::new(Characterizer::new(cfg)),
        }
    }

    /// Records one read; returns a decision if it closed a window that changed the class.
    pub fn record_read(&self) -> Option<Decision> {
        self.tick(1)
    }

    /// Records `n` reads (a batch), as [`Recorder::record_read`] each.
    pub fn record_reads(&self, n: u64) -> Option<Decision> {
        self.tick(n)
    }

    /// Records written keys; returns a decision as [`Recorder::record_read`] does.
    pub fn record_writes<'a>(&self, keys: impl Iterator<Item = &'a [u8]>) -> Option<Decision> {
        let mut n = 0;
        {
            let mut acc = self.acc.lock();
            for k in keys {
                acc.writes += 1;
                if acc.writes.is_multiple_of(SAMPLE_EVERY) {
                    acc.samples.push(KeySketch::hash(k));
                }
                n += 1;
            }
        }
        if n == 0 {
            return None;
        }
        self.tick(n)
    }

    fn tick(&self, n: u64) -> Option<Decision> {
        let before = self.ops.fetch_add(n, Ordering::Relaxed);
        if before / self.window_ops == (before + n) / self.window_ops {
            return None;
        }
        self.close_window()
    }

    fn close_window(&self) -> Option<Decision> {
        let now = self.ops.load(Ordering::Relaxed);
        let (writes, mut samples, total) = {
            let mut acc = self.acc.lock();
            let total = now.saturating_sub(acc.opened_at);
            acc.opened_at = now;
            let writes = std::mem::take(&mut acc.writes);
            (writes, std::mem::take(&mut acc.samples), total)
        };
        let sampled = samples.len();
        samples.sort_unstable();
        samples.dedup();
        let window = Window {
            reads: total.saturating_sub(writes),
            writes,
            sampled: u32::try_from(sampled).unwrap_or(u32::MAX),
            distinct: u32::try_from(samples.len()).unwrap_or(u32::MAX),
        };
        self.characterizer.lock().observe(window)
    }

    /// Runs `f` on the characterizer (for statistics and tuning).
    pub fn with<R>(&self, f: impl FnOnce(&Characterizer) -> R) -> R {
        f(&self.characterizer.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::triad::characterizer::Workload;

    #[test]
    fn windows_close_every_window_ops_and_classify() {
        let r = Recorder::new(CharacterizerConfig {
            window_ops: 1_000,
            ..CharacterizerConfig::default()
        });
        // Write-heavy, all writes to 10 keys: skewed.
        let keys: Vec<Vec<u8>> = (0..10).map(|i| format!("hot{i}").into_bytes()).collect();
        let mut decisions = Vec::new();
        for i in 0..2_000 {
            let d = if i % 10 == 0 {
                r.record_read()
            } else {
                r.record_writes(std::iter::once(&keys[i % 10][..]))
            };
            decisions.extend(d);
        }
        assert_eq!(r.with(|c| c.windows()), 2);
        assert_eq!(decisions.len(), 1);
        assert_eq!(decisions[0].to, Workload::WriteHeavySkewed);
        let w = r.with(|c| c.last_window());
        assert_eq!(w.reads + w.writes, 1_000);
        assert_eq!(w.reads, 100);
        assert!(w.skew() > 0.8, "{w:?}");
        // Then read-only: two windows later, read-heavy.
        for _ in 0..2_000 {
            decisions.extend(r.record_read());
        }
        assert_eq!(decisions.last().unwrap().to, Workload::ReadHeavy);
    }

    #[test]
    fn uniform_writes_are_not_skewed() {
        let r = Recorder::new(CharacterizerConfig {
            window_ops: 10_000,
            ..CharacterizerConfig::default()
        });
        for i in 0..20_000u64 {
            let k = format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000);
            r.record_writes(std::iter::once(k.as_bytes()));
        }
        assert_eq!(r.with(|c| c.workload()), Workload::WriteHeavyUniform);
        assert!(r.with(|c| c.last_window().skew()) < 0.05);
    }
}
