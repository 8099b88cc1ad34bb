//! When polling pays: threads that wait for a commit poll (yield the CPU in a loop) instead
//! of sleeping only while the CPUs are not contended.
//!
//! Polling saves a wake-up per hand-off when every runnable thread is one of ours and each
//! yield hands the CPU to a thread that soon yields back. Next to a thread that does not
//! yield (a compaction, any CPU-bound process) it backfires: the scheduler counts the poller
//! as a CPU consumer, so after one yield it waits for the other thread's whole time slice,
//! and a commit whose sync finished long ago is acknowledged milliseconds late. Measured on
//! this project's 2-core VM, 4 blocking writers with one busy-looping process beside them:
//! commit p99 0.76 ms when sleeping, 4.0 ms when polling (and 13.6K against 11.9K writes/s).
//!
//! So each yield is timed. One that took longer than `preempted_after` means another thread
//! held the CPU for a slice: polling stops for a cooldown, which starts at
//! [`BASE_COOLDOWN`] and doubles while every probe after it finds the CPU still contended,
//! up to `max_cooldown` (a steady CPU hog then costs one late commit per thread and
//! cooldown). A probe that finds the CPU free leaves the cooldown to restart at the base.
//! Correctness never depends on the gate: a thread that may not poll sleeps and is woken.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// First cooldown after a contended yield.
pub const BASE_COOLDOWN: Duration = Duration::from_millis(10);

/// Decides whether threads may poll. Shared by every thread of one merger. Times are
/// microseconds since the gate was made.
pub(crate) struct PollGate {
    epoch: Instant,
    /// A yield at least this long was preempted; 0: never suspend polling.
    preempted_after: u64,
    max_cooldown: u64,
    /// Polling is suspended until this time.
    off_until: AtomicU64,
    /// The last suspension's length, and when it was decided (0: never).
    cooldown: AtomicU64,
    last_suspended: AtomicU64,
    suspensions: AtomicU64,
    /// Threads inside [`PollGate::yield_now`].
    yielding: AtomicUsize,
    /// CPUs this process may run on.
    cores: usize,
}

impl PollGate {
    /// A gate suspending polling after a yield of `preempted_after` (zero: never), for at
    /// most `max_cooldown` at a time.
    pub(crate) fn new(preempted_after: Duration, max_cooldown: Duration) -> Self {
        PollGate {
            epoch: Instant::now(),
            preempted_after: preempted_after.as_micros() as u64,
            max_cooldown: (max_cooldown.as_micros() as u64).max(1),
            off_until: AtomicU64::new(0),
            cooldown: AtomicU64::new(0),
            last_suspended: AtomicU64::new(0),
            suspensions: AtomicU64::new(0),
            yielding: AtomicUsize::new(0),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    fn now(&self) -> u64 {
        // Never 0, which `last_suspended` reserves for "never".
        self.epoch.elapsed().as_micros() as u64 + 1
    }

    /// Whether a waiting thread may poll now.
    pub(crate) fn may_poll(&self) -> bool {
        self.may_poll_at(self.now())
    }

    fn may_poll_at(&self, now: u64) -> bool {
        now >= self.off_until.load(Ordering::Relaxed)
    }

    /// Yields the CPU once and times it, while `waiters` threads wait for commits (each of
    /// them polling or about to run). Returns whether polling may go on.
    pub(crate) fn yield_now(&self, waiters: usize) -> bool {
        let pollers = (self.yielding.fetch_add(1, Ordering::Relaxed) + 1).max(waiters);
        let start = self.now();
        std::thread::yield_now();
        let end = self.now();
        self.yielding.fetch_sub(1, Ordering::Relaxed);
        self.observe(start, end, pollers)
    }

    /// Records a yield from `start` to `end` while `pollers` of our threads (this one
    /// included) competed for the CPU. Returns whether polling may go on.
    fn observe(&self, start: u64, end: u64, pollers: usize) -> bool {
        // Our own threads take turns on the cores: with many of them a yield returns only
        // after each had its turn, which is no sign of a foreign thread (measured at 64
        // writers on 2 cores: 6% of yields took 0.5-2 ms with nothing else running).
        let turns = (pollers / self.cores).max(1) as u64;
        if self.preempted_after == 0
            || end.saturating_sub(start) < self.preempted_after.saturating_mul(turns)
        {
            return self.may_poll_at(end);
        }
        if !self.may_poll_at(end) {
            return false; // another thread suspended polling while this one was off the CPU
        }
        // A detection soon after the last suspension ended means the contention lasted
        // through it: back off further. Otherwise the contention is new.
        let prev = self.cooldown.load(Ordering::Relaxed);
        let last = self.last_suspended.load(Ordering::Relaxed);
        let base = (BASE_COOLDOWN.as_micros() as u64).min(self.max_cooldown);
        let next = if last != 0 && end.saturating_sub(last) <= 2 * prev + self.preempted_after {
            (prev * 2).min(self.max_cooldown)
        } else {
            base
        };
        self.cooldown.store(next, Ordering::Relaxed);
        self.last_suspended.store(end, Ordering::Relaxed);
        self.off_until.store(end + next, Ordering::Relaxed);
        self.suspensions.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// How many times polling was suspended.
    pub(crate) fn suspensions(&self) -> u64 {
        self.suspensions.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1000;

    fn gate() -> PollGate {
        let mut g = PollGate::new(Duration::from_micros(500), Duration::from_secs(1));
        g.cores = 2;
        g
    }

    /// A yield by the only polling thread.
    fn observe1(g: &PollGate, start: u64, end: u64) -> bool {
        g.observe(start, end, 1)
    }

    #[test]
    fn long_yields_among_many_pollers_are_their_turns_not_contention() {
        let g = gate();
        // 64 pollers on 2 cores: a yield may wait for 31 others' turns.
        assert!(g.observe(0, 2 * MS, 64));
        assert!(g.observe(10 * MS, 15 * MS, 64));
        assert_eq!(g.suspensions(), 0);
        // 4 pollers on 2 cores: 2 turns of 500 µs each.
        assert!(g.observe(20 * MS, 20 * MS + 900, 4));
        assert!(!g.observe(30 * MS, 33 * MS, 4));
        assert_eq!(g.suspensions(), 1);
    }

    #[test]
    fn short_yields_keep_polling_on() {
        let g = gate();
        for t in 0..1000 {
            assert!(observe1(&g, t * 100, t * 100 + 80));
        }
        assert_eq!(g.suspensions(), 0);
        assert!(g.may_poll_at(200 * MS));
    }

    #[test]
    fn a_preempted_yield_suspends_polling_for_the_base_cooldown() {
        let g = gate();
        assert!(!observe1(&g, 10 * MS, 14 * MS));
        assert_eq!(g.suspensions(), 1);
        assert!(!g.may_poll_at(14 * MS));
        assert!(!g.may_poll_at(24 * MS - 1));
        assert!(g.may_poll_at(24 * MS));
    }

    #[test]
    fn contention_that_lasts_doubles_the_cooldown_up_to_the_maximum() {
        let g = gate();
        let mut t = 0;
        let mut cooldowns = Vec::new();
        for _ in 0..12 {
            // The probe after each suspension is preempted again (a CPU hog that stays).
            let start = g.off_until.load(Ordering::Relaxed).max(t);
            let end = start + 3 * MS;
            assert!(!observe1(&g, start, end));
            cooldowns.push(g.off_until.load(Ordering::Relaxed) - end);
            t = end;
        }
        assert_eq!(&cooldowns[..4], &[10 * MS, 20 * MS, 40 * MS, 80 * MS]);
        assert_eq!(*cooldowns.last().unwrap(), 1000 * MS);
    }

    #[test]
    fn new_contention_after_a_quiet_spell_starts_again_at_the_base() {
        let g = gate();
        assert!(!observe1(&g, 0, 3 * MS));
        assert!(!observe1(&g, 13 * MS, 16 * MS)); // 20 ms now
                                                  // The CPU was free for a long time: the next contention is a new one.
        assert!(observe1(&g, 36 * MS, 36 * MS + 50));
        assert!(!observe1(&g, 5000 * MS, 5003 * MS));
        assert_eq!(g.off_until.load(Ordering::Relaxed), 5013 * MS);
    }

    #[test]
    fn yields_ending_inside_a_suspension_do_not_extend_it() {
        let g = gate();
        assert!(!observe1(&g, 0, 3 * MS));
        let until = g.off_until.load(Ordering::Relaxed);
        // Another thread, preempted at the same time, comes back during the cooldown.
        assert!(!observe1(&g, MS, 4 * MS));
        assert_eq!(g.off_until.load(Ordering::Relaxed), until);
        assert_eq!(g.suspensions(), 1);
    }

    #[test]
    fn zero_threshold_never_suspends() {
        let g = PollGate::new(Duration::ZERO, Duration::from_secs(1));
        assert!(observe1(&g, 0, 50 * MS));
        assert!(g.yield_now(1));
        assert!(g.may_poll());
        assert_eq!(g.suspensions(), 0);
    }
}
