//! The latency monitor (LATENCY LATEST, HISTORY, RESET, GRAPH, DOCTOR): for each event class
//! (`command`, `fast-command`, `expire-cycle`) the last 160 seconds that had a sample at or
//! over `latency-monitor-threshold` milliseconds, one sample per second (the highest), and the
//! highest of all time, as Redis's `latency.c` keeps them. Off while the threshold is 0 (the
//! default): then a command pays one relaxed load.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
const SAMPLES: usize = 160;

#[derive(Clone, Copy, Default)]
struct Sample {
    /// Unix seconds; 0: unused slot.
    time: u64,
    latency_ms: u64,
}

/// One event's ring of samples.
struct Series {
    samples: [Sample; SAMPLES],
    /// The slot the next new second goes to.
    next: usize,
    max_ms: u64,
}

impl Series {
    fn new() -> Series {
        Series {
            samples: [Sample::default(); SAMPLES],
            next: 0,
            max_ms: 0,
        }
    }

    fn add(&mut self, now: u64, latency_ms: u64) {
        self.max_ms = self.max_ms.max(latency_ms);
        let prev = (self.next + SAMPLES - 1) % SAMPLES;
        if self.samples[prev].time == now {
            let s = &mut self.samples[prev];
            s.latency_ms = s.latency_ms.max(latency_ms);
            return;
        }
        self.samples[self.next] = Sample {
            time: now,
            latency_ms,
        };
        self.next = (self.next + 1) % SAMPLES;
    }

    /// The samples, oldest first.
    fn history(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..SAMPLES)
            .map(move |j| self.samples[(self.next + j) % SAMPLES])
            .filter(|s| s.time != 0)
    }

    fn latest(&self) -> Sample {
        self.samples[(self.next + SAMPLES - 1) % SAMPLES]
    }
}

/// Every event's samples.
#[derive(Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold`, milliseconds; 0 is off.
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<&'static str, Series>>,
}

/// What LATENCY LATEST shows of one event.
pub struct Latest {
    pub event: &'static str,
    pub time: u64,
    pub latency_ms: u64,
    pub max_ms: u64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl LatencyMonitor {
    /// Applies `latency-monitor-threshold`.
    pub fn set_threshold_ms(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// Records that `event` took `micros`, if the monitor is on and that reaches the
    /// threshold.
    #[inline]
    pub fn observe(&self, event: &'static str, micros: u64) {
        self.observe_with(micros, || event);
    }

    /// [`Self::observe`], naming the event only when it is recorded.
    #[inline]
    pub fn observe_with(&self, micros: u64, event: impl FnOnce() -> &'static str) {
        let threshold = self.threshold_ms.load(Ordering::Relaxed);
        if threshold != 0 && micros / 1000 >= threshold {
            self.add(event(), micros / 1000, now_secs());
        }
    }

    /// The event class of a command, as Redis names it.
    pub fn command_event(fast: bool) -> &'static str {
        if fast {
            "fast-command"
        } else {
            "command"
        }
    }

    fn add(&self, event: &'static str, latency_ms: u64, now: u64) {
        self.events
            .lock()
            .entry(event)
            .or_insert_with(Series::new)
            .add(now, latency_ms);
    }

    /// LATENCY LATEST: each event's newest sample and its all-time high.
    pub fn latest(&self) -> Vec<Latest> {
        self.events
            .lock()
            .iter()
            .map(|(&event, s)| {
                let l = s.latest();
                Latest {
                    event,
                    time: l.time,
                    latency_ms: l.latency_ms,
                    max_ms: s.max_ms,
                }
            })
            .collect()
    }

    /// LATENCY HISTORY: `(unix seconds, milliseconds)` of `event`, oldest first.
    pub fn history(&self, event: &[u8]) -> Vec<(u64, u64)> {
        let events = self.events.lock();
        events
            .iter()
            .find(|(name, _)| name.as_bytes() == event)
            .map(|(_, s)| s.history().map(|x| (x.time, x.latency_ms)).collect())
            .unwrap_or_default()
    }

    /// LATENCY RESET: forgets the events named (all with none); how many there were.
    pub fn reset(&self, names: &[&[u8]]) -> usize {
        let mut events = self.events.lock();
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        let before = events.len();
        events.retain(|name, _| !names.contains(&name.as_bytes()));
        before - events.len()
    }

    /// LATENCY GRAPH: `None` without samples of `event`. The header is Redis's; the samples
    /// follow as one line each (Redis draws them as a sparkline).
    pub fn graph(&self, event: &[u8]) -> Option<String> {
        let events = self.events.lock();
        let (name, s) = events.iter().find(|(name, _)| name.as_bytes() == event)?;
        let history: Vec<Sample> = s.history().collect();
        let high = history.iter().map(|x| x.latency_ms).max()?;
        let low = history.iter().map(|x| x.latency_ms).min().unwrap_or(0);
        let now = now_secs();
        let mut out = format!(
            "{name} - high {high} ms, low {low} ms (all time high {} ms)\n{}\n",
            s.max_ms,
            "-".repeat(80)
        );
        for x in &history {
            let _ = writeln!(
                out,
                "{:>6}s ago {:>6} ms",
                now.saturating_sub(x.time),
                x.latency_ms
            );
        }
        Some(out)
    }

    /// LATENCY DOCTOR: Redis's analysis of each event (spikes, average, mean deviation,
    /// period, all-time high), with advice.
    pub fn doctor(&self) -> String {
        let events = self.events.lock();
        if events.is_empty() {
            return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n".into();
        }
        let now = now_secs();
        let mut out = String::from("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        for (i, (name, s)) in events.iter().enumerate() {
            let history: Vec<Sample> = s.history().collect();
            let n = history.len().max(1) as u64;
            let avg = history.iter().map(|x| x.latency_ms).sum::<u64>() / n;
            let mad = history
                .iter()
                .map(|x| x.latency_ms.abs_diff(avg))
                .sum::<u64>()
                / n;
            let oldest = history.iter().map(|x| x.time).min().unwrap_or(now);
            let period = now.saturating_sub(oldest).max(1);
            let _ = writeln!(
                out,
                "{}. {name}: {} latency spikes (average {avg}ms, mean deviation {mad}ms, period {:.2} sec). Worst all time event {}ms.",
                i + 1,
                history.len(),
                period as f64 / n as f64,
                s.max_ms
            );
        }
        out.push_str("\nI have a few advices for you:\n\n- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_the_highest() {
        let m = LatencyMonitor::default();
        m.add("command", 300, 10);
        m.add("command", 200, 10);
        m.add("command", 400, 11);
        assert_eq!(m.history(b"command"), vec![(10, 300), (11, 400)]);
        let l = m.latest();
        assert_eq!(
            (l[0].event, l[0].time, l[0].latency_ms, l[0].max_ms),
            ("command", 11, 400, 400)
        );
        assert!(m.history(b"nothing").is_empty());
    }

    #[test]
    fn the_ring_keeps_the_newest_160() {
        let m = LatencyMonitor::default();
        for t in 1..=200 {
            m.add("command", t, t);
        }
        let h = m.history(b"command");
        assert_eq!(h.len(), SAMPLES);
        assert_eq!(h.first(), Some(&(41, 41)));
        assert_eq!(h.last(), Some(&(200, 200)));
    }

    #[test]
    fn off_below_the_threshold_and_when_zero() {
        let m = LatencyMonitor::default();
        m.observe("command", 10_000_000);
        assert!(m.latest().is_empty(), "threshold 0 is off");
        m.set_threshold_ms(100);
        m.observe("command", 99_999);
        assert!(m.latest().is_empty());
        m.observe("command", 100_000);
        assert_eq!(m.latest().len(), 1);
    }

    #[test]
    fn reset_counts_what_it_forgot() {
        let m = LatencyMonitor::default();
        m.add("command", 1, 1);
        m.add("fast-command", 1, 1);
        assert_eq!(m.reset(&[b"blabla"]), 0);
        assert_eq!(m.reset(&[b"command"]), 1);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.graph(b"command").is_none());
        assert!(m.doctor().contains("no latency spike"));
    }
}
