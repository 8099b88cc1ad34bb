//! A simulated storage device for [`crate::MemFs`]: the disk queue that makes a journal sync
//! wait behind a compaction's writes.
//!
//! Written bytes join one FIFO queue that drains at `bandwidth`. A sync waits `sync_latency`
//! plus the time the queue ahead of it takes to drain, so bulk background writes slow every
//! sync issued after them, which is what happens on a real disk and what journal-first pacing
//! exists to prevent. A write that would push the queue past `dirty_limit` waits until the
//! queue has room, as Linux holds back writers past its dirty-page limit. Time is real time:
//! the device is the outside world, not the engine's clock.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Performance of a simulated device (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceModel {
    /// Rate at which queued bytes reach the medium, bytes per second; at least 1.
    pub bandwidth: u64,
    /// Fixed cost of every sync (the device's flush), on top of draining the queue.
    pub sync_latency: Duration,
    /// Most bytes the queue holds before writers wait (the dirty-page limit).
    pub dirty_limit: u64,
}

/// Counters of a simulated device since it was installed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Bytes written through the device.
    pub bytes: u64,
    /// Syncs served.
    pub syncs: u64,
    /// Total time syncs waited.
    pub sync_wait: Duration,
    /// Total time writes waited for room under the dirty limit.
    pub write_wait: Duration,
}

/// The queue state of an installed [`DeviceModel`].
#[derive(Debug)]
struct Queue {
    model: DeviceModel,
    /// Bytes not yet on the medium as of `at`.
    queued: f64,
    at: Instant,
    stats: DeviceStats,
}

impl Queue {
    /// Brings `queued` up to now: what drained since `at` is gone.
    fn drain(&mut self, now: Instant) {
        let secs = now.saturating_duration_since(self.at).as_secs_f64();
        self.queued = (self.queued - secs * self.model.bandwidth.max(1) as f64).max(0.0);
        self.at = now;
    }

    fn seconds_for(&self, bytes: f64) -> Duration {
        Duration::from_secs_f64(bytes.max(0.0) / self.model.bandwidth.max(1) as f64)
    }

    /// Admits a write of `bytes` at `now`; returns how long it must wait for room under the
    /// dirty limit. It is queued at once, so later writers and syncs queue behind it.
    fn write(&mut self, bytes: usize, now: Instant) -> Duration {
        self.drain(now);
        let excess = self.queued + bytes as f64 - self.model.dirty_limit as f64;
        self.queued += bytes as f64;
        let wait = self.seconds_for(excess);
        self.stats.bytes += bytes as u64;
        self.stats.write_wait += wait;
        wait
    }

    /// A sync issued at `now`: returns how long it takes.
    fn sync(&mut self, now: Instant) -> Duration {
        self.drain(now);
        let wait = self.seconds_for(self.queued) + self.model.sync_latency;
        self.stats.syncs += 1;
        self.stats.sync_wait += wait;
        wait
    }
}

/// The optional device of a file system. Without a model every call returns at once.
#[derive(Debug, Default)]
pub(crate) struct Device {
    queue: Mutex<Option<Queue>>,
}

impl Device {
    /// Installs `model` with an empty queue (replacing any earlier one), or removes the device.
    pub(crate) fn set(&self, model: Option<DeviceModel>) {
        *self.queue.lock() = model.map(|model| Queue {
            model,
            queued: 0.0,
            at: Instant::now(),
            stats: DeviceStats::default(),
        });
    }

    pub(crate) fn stats(&self) -> Option<DeviceStats> {
        self.queue.lock().as_ref().map(|q| q.stats)
    }

    /// Queues `bytes`, first waiting (outside the lock) until they fit under the dirty limit.
    pub(crate) fn write(&self, bytes: usize) {
        let wait = match self.queue.lock().as_mut() {
            Some(q) => q.write(bytes, Instant::now()),
            None => return,
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }

    /// Waits as a sync does: until everything queued so far reached the medium, plus the
    /// device's flush.
    pub(crate) fn sync(&self) {
        let wait = match self.queue.lock().as_mut() {
            Some(q) => q.sync(Instant::now()),
            None => return,
        };
        std::thread::sleep(wait);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_model_nothing_waits_or_counts() {
        let d = Device::default();
        d.write(1 << 30);
        d.sync();
        assert_eq!(d.stats(), None);
    }

    fn queue(bandwidth: u64, sync_latency: Duration, dirty_limit: u64, at: Instant) -> Queue {
        Queue {
            model: DeviceModel {
                bandwidth,
                sync_latency,
                dirty_limit,
            },
            queued: 0.0,
            at,
            stats: DeviceStats::default(),
        }
    }

    #[test]
    fn a_sync_waits_for_the_queue_ahead_of_it_less_what_drained() {
        let t = Instant::now();
        let mut q = queue(1 << 20, Duration::from_micros(100), 1 << 30, t);
        assert_eq!(q.write(100 << 10, t), Duration::ZERO);
        // 100 KiB at 1 MiB/s is 97.66 ms; 40 ms of it drained before the sync.
        let wait = q.sync(t + Duration::from_millis(40));
        assert_eq!(wait.as_micros(), 57_656 + 100);
        // Long after, only the flush remains.
        assert_eq!(
            q.sync(t + Duration::from_secs(1)),
            Duration::from_micros(100)
        );
        assert_eq!((q.stats.bytes, q.stats.syncs), (100 << 10, 2));
    }

    #[test]
    fn writes_past_the_dirty_limit_wait_for_room_and_queue_behind_each_other() {
        let t = Instant::now();
        let mut q = queue(1 << 20, Duration::ZERO, 64 << 10, t);
        assert_eq!(q.write(64 << 10, t), Duration::ZERO);
        // 32 KiB over the limit: 31.25 ms.
        assert_eq!(q.write(32 << 10, t).as_micros(), 31_250);
        // The next writer also waits for the first one's excess.
        assert_eq!(q.write(32 << 10, t).as_micros(), 62_500);
        assert_eq!(q.stats.write_wait.as_micros(), 93_750);
    }
}
