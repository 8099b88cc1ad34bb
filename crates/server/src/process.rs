//! What the process takes from the machine, for INFO's `memory` and `cpu` sections: the
//! allocator's bytes in use, the resident set, the machine's memory, and CPU time.

use std::sync::atomic::{AtomicU64, Ordering};

/// The most bytes in use seen by [`memory`].
static PEAK: AtomicU64 = AtomicU64::new(0);
/// Bytes in use when the first server of the process had started ([`mark_startup`]).
static STARTUP: AtomicU64 = AtomicU64::new(0);

/// Notes the bytes in use once a server has started (MEMORY STATS' `startup.allocated`).
pub fn mark_startup() {
    let _ = STARTUP.compare_exchange(0, allocated(), Ordering::Relaxed, Ordering::Relaxed);
}

/// The bytes in use noted by [`mark_startup`] (0 before).
pub fn startup_allocated() -> u64 {
    STARTUP.load(Ordering::Relaxed)
}

/// Memory figures, bytes.
pub struct Memory {
    /// Held by the allocator for the program (malloc's in-use bytes, mmapped blocks too).
    pub used: u64,
    /// The most `used` seen so far.
    pub peak: u64,
    /// Resident in RAM (the page cache of the data files is not counted).
    pub rss: u64,
    /// The machine's RAM.
    pub total_system: u64,
}

pub fn memory() -> Memory {
    let used = allocated();
    let peak = PEAK.fetch_max(used, Ordering::Relaxed).max(used);
    let page = page_size();
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page);
    // SAFETY: sysconf has no preconditions.
    let phys = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    Memory {
        used,
        peak,
        rss,
        total_system: u64::try_from(phys).unwrap_or(0) * page,
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn allocated() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let m = unsafe { libc::mallinfo2() };
    (m.uordblks + m.hblkhd) as u64
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn allocated() -> u64 {
    0
}

/// What the allocator took from the system: its arenas and mapped blocks.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn allocator_active() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let m = unsafe { libc::mallinfo2() };
    (m.arena + m.hblkhd) as u64
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn allocator_active() -> u64 {
    0
}

/// MEMORY PURGE: gives the allocator's free memory back to the system.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own heaps.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `maxmemory` as Rialto applies it: nothing is evicted (`noeviction`), so while the
/// allocator's bytes in use exceed the limit, commands that may grow the data are refused
/// with Redis's OOM error. The bytes are read at most every [`MemoryLimit::RECHECK_MS`]
/// (reading them takes the allocator's locks); a new limit is checked at once.
pub struct MemoryLimit {
    /// Bytes; 0: no limit.
    limit: AtomicU64,
    /// Whether the last reading was over the limit.
    over: std::sync::atomic::AtomicBool,
    /// Milliseconds since `start` of the last reading (`u64::MAX`: read at the next check).
    checked_ms: AtomicU64,
    start: std::time::Instant,
}

impl Default for MemoryLimit {
    fn default() -> Self {
        MemoryLimit {
            limit: AtomicU64::new(0),
            over: std::sync::atomic::AtomicBool::new(false),
            checked_ms: AtomicU64::new(u64::MAX),
            start: std::time::Instant::now(),
        }
    }
}

impl MemoryLimit {
    /// The most a reading of the allocator's bytes is reused.
    pub const RECHECK_MS: u64 = 100;

    /// Applies `maxmemory` (0: none).
    pub fn set_limit(&self, bytes: u64) {
        self.limit.store(bytes, Ordering::Relaxed);
        self.checked_ms.store(u64::MAX, Ordering::Relaxed);
    }

    /// Whether commands that may grow the data are refused now. One relaxed load when there
    /// is no limit.
    pub fn exceeded(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit == 0 {
            return false;
        }
        let now = self.start.elapsed().as_millis() as u64;
        let last = self.checked_ms.load(Ordering::Relaxed);
        if last == u64::MAX || now.saturating_sub(last) >= Self::RECHECK_MS {
            self.checked_ms.store(now, Ordering::Relaxed);
            self.over.store(allocated() > limit, Ordering::Relaxed);
        }
        self.over.load(Ordering::Relaxed)
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// CPU seconds: (user, system) of the process's threads, and of its children that ended.
pub struct Cpu {
    pub user: f64,
    pub sys: f64,
    pub children_user: f64,
    pub children_sys: f64,
}

pub fn cpu() -> Cpu {
    let usage = |who| {
        // SAFETY: getrusage fills the zeroed struct it is given.
        let mut r: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut r) } != 0 {
            return (0.0, 0.0);
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (secs(r.ru_utime), secs(r.ru_stime))
    };
    let (user, sys) = usage(libc::RUSAGE_SELF);
    let (children_user, children_sys) = usage(libc::RUSAGE_CHILDREN);
    Cpu {
        user,
        sys,
        children_user,
        children_sys,
    }
}

/// Bytes as Redis writes them for people: `512B`, `1.50K`, `3.25M`, `2.00G`...
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["K", "M", "G", "T", "P"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2}{}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_redis_writes_them() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(1023), "1023B");
        assert_eq!(human(1024), "1.00K");
        assert_eq!(human(1536), "1.50K");
        assert_eq!(human(3 << 20), "3.00M");
        assert_eq!(human(5 << 30), "5.00G");
    }

    #[test]
    fn the_process_sees_its_memory_and_cpu() {
        let big = vec![1u8; 8 << 20];
        let m = memory();
        assert!(m.rss > 0 && m.total_system > m.rss);
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(m.used >= big.len() as u64, "{}", m.used);
        }
        assert!(m.peak >= m.used);
        drop(big);
        let c = cpu();
        assert!(c.user >= 0.0 && c.sys >= 0.0);
    }
}
