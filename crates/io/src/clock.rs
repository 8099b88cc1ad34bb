//! Clocks. Engine code asks a [`Clock`] for time so that tests can control it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Time source used by the engine (stall timers, statistics, expiry).
pub trait Clock: Send + Sync + 'static {
    /// Monotonic microseconds since an arbitrary origin.
    fn now_micros(&self) -> u64;
    /// Wall-clock milliseconds since the Unix epoch.
    fn unix_millis(&self) -> u64;
    /// Blocks the calling thread for `d` (a manual clock advances instead).
    fn sleep(&self, d: Duration);
}

/// The real clocks of the operating system.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose monotonic origin is now.
    pub fn new() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_micros(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
    fn unix_millis(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// A clock that moves only when told to; `sleep` advances it.
#[derive(Debug, Default)]
pub struct ManualClock {
    micros: AtomicU64,
    unix_offset_ms: AtomicU64,
}

impl ManualClock {
    /// A clock at monotonic 0 and the given wall-clock time.
    pub fn new(unix_millis: u64) -> Self {
        ManualClock {
            micros: AtomicU64::new(0),
            unix_offset_ms: AtomicU64::new(unix_millis),
        }
    }
    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.micros.fetch_add(us, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> u64 {
        self.micros.load(Ordering::SeqCst)
    }
    fn unix_millis(&self) -> u64 {
        self.unix_offset_ms.load(Ordering::SeqCst) + self.micros.load(Ordering::SeqCst) / 1000
    }
    fn sleep(&self, d: Duration) {
        self.advance(d)
    }
}
