//! Per-command latency distributions (LATENCY HISTOGRAM, INFO latencystats), as Redis 7.0
//! keeps them: one HDR histogram per command or subcommand (`config|set`) that has run since
//! start or CONFIG RESETSTAT, of each call's execution time as INFO commandstats and the slow
//! log measure it, recorded in nanoseconds (whole microseconds × 1000, as Redis records them)
//! clamped to 1 ns ..= 1 s, at two significant digits. `latency-tracking no` stops recording
//! and hides INFO's lines; what was recorded stays for LATENCY HISTOGRAM, as in Redis.
//!
//! Threads: every thread that serves connections records into a shard of its own (found once
//! per connection, [`CommandLatencies::shard_here`]), a table of histograms indexed by
//! statistics slot (`command_table::slot_of`) under a mutex that only readers ever contend
//! for. A call costs one relaxed load (tracking on?), an uncontended lock and a histogram
//! increment; there is no lock or counter shared by the connection threads. Readers (INFO,
//! LATENCY HISTOGRAM, RESETSTAT) visit the shards one at a time and merge them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Redis's `LATENCY_HISTOGRAM_MIN_VALUE`: 1 ns.
const MIN_NS: u64 = 1;
/// Redis's `LATENCY_HISTOGRAM_MAX_VALUE`: 1 s; longer calls are recorded as 1 s.
const MAX_NS: u64 = 1_000_000_000;
/// Redis's `LATENCY_HISTOGRAM_PRECISION`: significant digits kept.
const SIGFIG: u8 = 2;
/// LATENCY HISTOGRAM's first reporting level; each next one is twice the last (Redis's
/// `hdr_iter_log_init(&iter, h, 1024, 2)`).
const CDF_FIRST_NS: u64 = 1024;

pub type Hist = Histogram<u64>;

fn new_histogram() -> Option<Box<Hist>> {
    Histogram::new_with_bounds(MIN_NS, MAX_NS, SIGFIG)
        .ok()
        .map(Box::new)
}

/// One thread's histograms, by statistics slot (`None`: nothing recorded).
pub struct Shard {
    slots: Mutex<Vec<Option<Box<Hist>>>>,
}

/// Every shard, and whether calls are recorded (`latency-tracking`).
pub struct CommandLatencies {
    enabled: AtomicBool,
    slot_count: usize,
    /// The shard of each thread that recorded; only taken to find or add one, and by readers
    /// to list them.
    shards: Mutex<Vec<(ThreadId, Arc<Shard>)>>,
}

impl CommandLatencies {
    /// Histograms for `slot_count` commands and subcommands; recording on.
    pub fn new(slot_count: usize) -> CommandLatencies {
        CommandLatencies {
            enabled: AtomicBool::new(true),
            slot_count,
            shards: Mutex::new(Vec::new()),
        }
    }

    /// Applies `latency-tracking`.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The calling thread's shard, made on its first use. A connection takes it once, on the
    /// thread that serves it.
    pub fn shard_here(&self) -> Arc<Shard> {
        let me = std::thread::current().id();
        let mut shards = self.shards.lock();
        if let Some((_, s)) = shards.iter().find(|(t, _)| *t == me) {
            return Arc::clone(s);
        }
        let shard = Arc::new(Shard {
            slots: Mutex::new((0..self.slot_count).map(|_| None).collect()),
        });
        shards.push((me, Arc::clone(&shard)));
        shard
    }

    /// Records that the command in `slot` took `micros`, into `shard`.
    #[inline]
    pub fn record(&self, shard: &Shard, slot: usize, micros: u64) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let ns = micros.saturating_mul(1000).clamp(MIN_NS, MAX_NS);
        let mut slots = shard.slots.lock();
        let Some(entry) = slots.get_mut(slot) else {
            return;
        };
        if entry.is_none() {
            *entry = new_histogram();
        }
        if let Some(h) = entry {
            h.saturating_record(ns);
        }
    }

    /// Every slot's histogram, the shards' merged; `None` where nothing was recorded.
    pub fn merged(&self) -> Vec<Option<Hist>> {
        let shards: Vec<Arc<Shard>> = self
            .shards
            .lock()
            .iter()
            .map(|(_, s)| Arc::clone(s))
            .collect();
        let mut out: Vec<Option<Hist>> = (0..self.slot_count).map(|_| None).collect();
        for shard in shards {
            let slots = shard.slots.lock();
            for (merged, h) in out.iter_mut().zip(slots.iter()) {
                let Some(h) = h else { continue };
                match merged {
                    // Same bounds on both sides: adding cannot fail.
                    Some(m) => {
                        let _ = m.add(&**h);
                    }
                    None => *merged = Some((**h).clone()),
                }
            }
        }
        out
    }

    /// CONFIG RESETSTAT: forgets every histogram.
    pub fn reset(&self) {
        let shards: Vec<Arc<Shard>> = self
            .shards
            .lock()
            .iter()
            .map(|(_, s)| Arc::clone(s))
            .collect();
        for shard in shards {
            for h in shard.slots.lock().iter_mut() {
                *h = None;
            }
        }
    }
}

/// Redis's `hdr_value_at_percentile`: the highest value equivalent to the one below which
/// `percentile` percent of the calls fall (the lowest for percentile 0), the rank rounded to
/// the nearest call.
pub fn value_at_percentile(h: &Hist, percentile: f64) -> u64 {
    let requested = if percentile < 100.0 {
        percentile
    } else {
        100.0
    };
    // C's cast truncates: + 0.5 rounds to the nearest rank.
    let rank = ((requested / 100.0) * h.len() as f64 + 0.5) as u64;
    let rank = rank.max(1);
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen = seen.saturating_add(v.count_at_value());
        if seen >= rank {
            let top = v.value_iterated_to();
            return if percentile == 0.0 {
                h.lowest_equivalent(top)
            } else {
                top
            };
        }
    }
    0
}

/// The highest value the histogram's last bucket holds: Redis's log iteration reports it for
/// the reporting levels beyond the counts (`sub_bucket_count << (bucket_count - 1)`, minus 1).
fn last_value(h: &Hist) -> u64 {
    let sub_buckets = (2 * 10u64.pow(u32::from(h.sigfig()))).next_power_of_two();
    (sub_buckets << (u32::from(h.buckets()) - 1)) - 1
}

/// LATENCY HISTOGRAM's `histogram_usec`: at reporting levels 1024 ns, 2048 ns, 4096 ns...,
/// each level's highest equivalent value in microseconds with the calls at or below it, the
/// levels where the count grew only, up to the level that holds every call (Redis's
/// `fillCommandCDF`).
pub fn cdf(h: &Hist) -> Vec<(u64, u64)> {
    let total = h.len();
    let last = last_value(h);
    let mut out = Vec::new();
    let mut previous = 0;
    let mut level = CDF_FIRST_NS;
    loop {
        let beyond = level > last;
        let (value, cumulative) = if beyond {
            (last, total)
        } else {
            (h.highest_equivalent(level), h.count_between(0, level))
        };
        if cumulative > previous {
            out.push((value / 1000, cumulative));
        }
        previous = cumulative;
        if beyond || cumulative >= total {
            return out;
        }
        level *= 2;
    }
}

/// A percentile as Redis writes it in INFO and CONFIG GET: `%f`, trailing zeros and point cut
/// (`50`, `99.9`, `33.333333`).
pub fn percentile_label(p: f64) -> String {
    let mut s = format!("{p:.6}");
    if s.contains('.') {
        let kept = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(kept);
    }
    s
}

/// INFO latencystats' value for one command: `p50=1.003,p99=...` (microseconds, three decimals).
pub fn percentiles_line(h: &Hist, percentiles: &[f64]) -> String {
    percentiles
        .iter()
        .map(|&p| {
            format!(
                "p{}={:.3}",
                percentile_label(p),
                value_at_percentile(h, p) as f64 / 1000.0
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(micros: &[u64]) -> Hist {
        let l = CommandLatencies::new(1);
        let shard = l.shard_here();
        for &m in micros {
            l.record(&shard, 0, m);
        }
        l.merged().swap_remove(0).expect("recorded")
    }

    /// Figures redis-server 7.0.15 printed for the same calls.
    #[test]
    fn percentiles_and_levels_match_redis() {
        let h = hist(&[6]);
        assert_eq!(
            percentiles_line(&h, &[50.0, 99.0, 99.9]),
            "p50=6.015,p99=6.015,p99.9=6.015"
        );
        assert_eq!(cdf(&h), vec![(8, 1)]);
        let h = hist(&[40]);
        assert_eq!(percentiles_line(&h, &[50.0]), "p50=40.191");
        assert_eq!(cdf(&h), vec![(66, 1)]);
        assert_eq!(cdf(&hist(&[3])), vec![(4, 1)]);
    }

    #[test]
    fn a_zero_call_counts_as_one_nanosecond() {
        let h = hist(&[0, 0]);
        assert_eq!(percentiles_line(&h, &[0.0, 100.0]), "p0=0.001,p100=0.001");
        assert_eq!(cdf(&h), vec![(1, 2)]);
    }

    #[test]
    fn calls_of_a_second_or_more_are_reported_at_the_last_bucket() {
        let h = hist(&[1, 2_000_000]);
        assert_eq!(value_at_percentile(&h, 100.0), h.highest_equivalent(MAX_NS));
        assert_eq!(cdf(&h), vec![(1, 1), (1_073_741, 2)]);
    }

    #[test]
    fn the_last_bucket_is_where_recording_stops() {
        let mut h = *new_histogram().expect("bounds");
        let last = last_value(&h);
        assert_eq!(last, (256 << 22) - 1);
        assert!(h.record(last).is_ok());
        assert!(h.record(last + 1).is_err());
    }

    #[test]
    fn the_rank_rounds_as_redis_rounds_it() {
        // Ten calls of 1..=10 µs: rank round(2.1) = 2 for p21 (the ceiling would say 3).
        let h = hist(&(1..=10).collect::<Vec<_>>());
        assert_eq!(value_at_percentile(&h, 21.0), h.highest_equivalent(2000));
        assert_eq!(value_at_percentile(&h, 25.0), h.highest_equivalent(3000));
        assert_eq!(value_at_percentile(&h, 0.0), h.lowest_equivalent(1000));
        assert_eq!(value_at_percentile(&h, 150.0), h.highest_equivalent(10_000));
    }

    #[test]
    fn labels_are_redis_percent_f_trimmed() {
        for (p, want) in [
            (50.0, "50"),
            (99.9, "99.9"),
            (0.0, "0"),
            (100.0, "100"),
            (33.3333333, "33.333333"),
            (99.99999999, "100"),
        ] {
            assert_eq!(percentile_label(p), want);
        }
    }

    /// The cost of recording one call, for docs/measurements.md:
    /// `cargo test --release -p rialto-server record_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn record_cost() {
        let l = CommandLatencies::new(crate::command_table::slot_count());
        let shard = l.shard_here();
        let calls = 20_000_000u64;
        for (label, on) in [("yes", true), ("no", false)] {
            l.set_enabled(on);
            let start = std::time::Instant::now();
            for i in 0..calls {
                l.record(
                    &shard,
                    std::hint::black_box(8),
                    std::hint::black_box(i % 64),
                );
            }
            let ns = start.elapsed().as_nanos() as f64 / calls as f64;
            eprintln!("latency-tracking {label}: {ns:.1} ns per call");
        }
    }

    #[test]
    fn shards_merge_and_reset_and_tracking_off_records_nothing() {
        let l = Arc::new(CommandLatencies::new(3));
        let here = l.shard_here();
        assert!(Arc::ptr_eq(&here, &l.shard_here()));
        l.record(&here, 1, 5);
        let other = Arc::clone(&l);
        std::thread::spawn(move || {
            let s = other.shard_here();
            other.record(&s, 1, 7);
            other.record(&s, 2, 7);
        })
        .join()
        .expect("thread");
        let m = l.merged();
        assert!(m[0].is_none());
        assert_eq!(m[1].as_ref().map(|h| h.len()), Some(2));
        assert_eq!(m[2].as_ref().map(|h| h.len()), Some(1));
        l.set_enabled(false);
        l.record(&here, 0, 1);
        assert!(l.merged()[0].is_none());
        l.reset();
        assert!(l.merged().iter().all(Option::is_none));
        // Out of range: ignored.
        l.set_enabled(true);
        l.record(&here, 99, 1);
    }
}
