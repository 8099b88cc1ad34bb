//! TRIAD (Balmau et al., USENIX ATC 2017) and DeuceDB's run-time adaptation of it.
//!
//! - **TRIAD-LOG** (commit log as L0): a flush writes an index table over the memtable's WAL
//!   segment, and the segment serves as the table's data file (`cl_table`).
//! - **TRIAD-MEM** (hot/cold separation): at a flush, the newest entries of the memtable's
//!   most updated keys (`hot`) stay in memory: they are re-logged to the current WAL
//!   segment and inserted into the next memtable, and only the cold keys go to L0. A key
//!   rewritten many times is then written to a table once, not once per flush. The re-logged
//!   records keep the entries' sequence numbers, so recovery rebuilds them exactly.
//! - **TRIAD-DISK** (deferred L0 compaction): every table records a HyperLogLog sketch of its
//!   keys (`sketch`); while the estimated overlap between the L0 files and the L1 files
//!   they would be merged with stays below a threshold, L0→L1 compaction waits (up to
//!   [`TriadOptions::max_deferred_l0_files`]), because merging files that share few keys
//!   rewrites L1 without removing anything. The rule is in the pure compaction picker.
//! - **The characterizer** (`characterizer`, fed by `recorder`) classifies windows of
//!   10,000 operations by read/write mix and write skew and retunes the overlap threshold
//!   (and, with TRIAD-MEM, hot/cold separation) at run time.
//!
//! The policy parts (picker rule, characterizer) take state and return decisions, so they
//! are tested and simulated without I/O.

mod characterizer;
pub(crate) mod cl_table;
pub(crate) mod hot;
pub(crate) mod recorder;
pub(crate) mod sketch;

pub use characterizer::{CharacterizerConfig, Decision, Tuning, Window, Workload};
pub use sketch::KeySketch;

/// Which TRIAD techniques run, and their fixed settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TriadOptions {
    /// TRIAD-MEM: keep hot keys in memory at flush. Default on (when adaptive, only while
    /// the characterizer sees skewed, write-heavy windows). Trade-off: less flush and
    /// compaction work for skewed writes, against re-logging the hot entries (more WAL
    /// bytes) and up to `hot_fraction` of the write buffer held over each flush.
    pub mem: bool,
    /// Largest share of `write_buffer_size` the hot entries kept at a flush may take.
    /// Default 0.1.
    pub hot_fraction: f64,
    /// Entries a key needs in the flushed memtable to count as hot. Default 2 (at least
    /// one overwrite).
    pub hot_min_updates: u32,
    /// TRIAD-LOG: a flush writes an index over the memtable's WAL segment, which becomes
    /// the L0 table's data file, instead of copying the values into a new table. Default on
    /// (when adaptive, only while the characterizer sees write-heavy windows). Trade-off: a
    /// flush writes keys and 12-byte pointers instead of keys and values; until its first
    /// compaction the segment stays on disk whole (every version it logged), and a read of
    /// such a table costs one extra read (not block-cached) in the segment.
    pub log: bool,
    /// TRIAD-DISK: defer L0 compaction while L0/L1 key overlap is low. Default on.
    /// Trade-off: fewer, larger L0→L1 merges (less write amplification) against more L0
    /// files for reads to probe (bounded by `max_deferred_l0_files`; bloom filters make a
    /// probe of a file without the key cheap).
    pub disk: bool,
    /// Let the characterizer set the overlap threshold from the workload. Default on. Off:
    /// `overlap_threshold` applies all the time.
    pub adaptive: bool,
    /// Overlap threshold when not adaptive. Default 0.4: defer while less than 40% of the
    /// keys the compaction would read are redundant.
    pub overlap_threshold: f64,
    /// L0 files at which L0 is compacted however low the overlap. Default 12; clamped below
    /// `level0_slowdown_trigger` (deferral never causes write stalls) and never below
    /// `level0_compaction_trigger`.
    pub max_deferred_l0_files: usize,
    /// The characterizer's windows and thresholds.
    pub characterizer: CharacterizerConfig,
}

impl Default for TriadOptions {
    fn default() -> Self {
        TriadOptions {
            mem: true,
            log: true,
            hot_fraction: 0.1,
            hot_min_updates: 2,
            disk: true,
            adaptive: true,
            overlap_threshold: 0.4,
            max_deferred_l0_files: 12,
            characterizer: CharacterizerConfig::default(),
        }
    }
}

impl TriadOptions {
    /// Every technique off: the classic leveled LSM.
    pub fn off() -> Self {
        TriadOptions {
            mem: false,
            log: false,
            disk: false,
            adaptive: false,
            ..TriadOptions::default()
        }
    }
}

/// The TRIAD settings users choose by name (`rialto serve` `triad`, `rialto bench
/// --triad`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriadMode {
    /// No technique: the classic leveled LSM.
    Off,
    /// TRIAD-MEM alone, always.
    Mem,
    /// TRIAD-DISK alone, always (overlap threshold 0.4).
    Disk,
    /// TRIAD-LOG alone, always.
    Log,
    /// Every technique, always.
    On,
    /// Every technique, switched and tuned by the workload characterizer (the default).
    Adaptive,
}

impl TriadMode {
    /// Every mode, in the order help texts list them.
    pub const ALL: [TriadMode; 6] = [
        TriadMode::Off,
        TriadMode::Mem,
        TriadMode::Disk,
        TriadMode::Log,
        TriadMode::On,
        TriadMode::Adaptive,
    ];

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            TriadMode::Off => "off",
            TriadMode::Mem => "mem",
            TriadMode::Disk => "disk",
            TriadMode::Log => "log",
            TriadMode::On => "on",
            TriadMode::Adaptive => "adaptive",
        }
    }

    /// The mode called `name` (case-insensitive), if any.
    pub fn parse(name: &str) -> Option<TriadMode> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// The engine options of the mode (defaults for every threshold).
    pub fn options(self) -> TriadOptions {
        let fixed = |mem, disk, log| TriadOptions {
            mem,
            disk,
            log,
            adaptive: false,
            ..TriadOptions::default()
        };
        match self {
            TriadMode::Off => TriadOptions::off(),
            TriadMode::Mem => fixed(true, false, false),
            TriadMode::Disk => fixed(false, true, false),
            TriadMode::Log => fixed(false, false, true),
            TriadMode::On => fixed(true, true, true),
            TriadMode::Adaptive => TriadOptions::default(),
        }
    }
}

/// TRIAD's state, as the engine's statistics show it.
#[derive(Debug, Clone, PartialEq)]
pub struct TriadStats {
    /// TRIAD-MEM enabled.
    pub mem: bool,
    /// Hot/cold separation in force now (TRIAD-MEM enabled and, when adaptive, chosen).
    pub hot_cold_active: bool,
    /// Flushes that kept hot keys in memory.
    pub hot_flushes: u64,
    /// Hot entries re-logged and kept in memory, over all flushes.
    pub hot_entries_kept: u64,
    /// Bytes of WAL records written to re-log them (counted in the WAL bytes too).
    pub hot_bytes_relogged: u64,
    /// Hot entries kept by the last flush that kept any.
    pub last_hot_entries: u64,
    /// TRIAD-LOG enabled.
    pub log: bool,
    /// Commit-log flushes in force now (TRIAD-LOG enabled and, when adaptive, chosen).
    pub log_active: bool,
    /// Flushes that wrote a commit-log table (an index over the segment).
    pub log_flushes: u64,
    /// Flushes that would have written one but fell back to an ordinary table.
    pub log_fallbacks: u64,
    /// TRIAD-DISK enabled.
    pub disk: bool,
    /// Characterizer enabled.
    pub adaptive: bool,
    /// Overlap threshold in force.
    pub overlap_threshold: f64,
    /// The overlap estimated after the last flush that left L0 at or past its compaction
    /// trigger (None before any, or when a sketch was missing).
    pub last_overlap: Option<f64>,
    /// Flushes after which L0 compaction was deferred.
    pub deferred_flushes: u64,
    /// Workload class in force (`balanced` when not adaptive).
    pub workload: Workload,
    /// Windows the characterizer observed.
    pub windows: u64,
    /// The last window.
    pub last_window: Window,
    /// The most recent class changes, oldest first.
    pub decisions: Vec<Decision>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_by_name() {
        for m in TriadMode::ALL {
            assert_eq!(TriadMode::parse(m.name()), Some(m));
        }
        assert_eq!(TriadMode::parse("ADAPTIVE"), Some(TriadMode::Adaptive));
        assert_eq!(TriadMode::parse("fast"), None);
        let off = TriadMode::Off.options();
        assert!(!off.mem && !off.disk && !off.log && !off.adaptive);
        let mem = TriadMode::Mem.options();
        assert!(mem.mem && !mem.disk && !mem.log && !mem.adaptive);
        let log = TriadMode::Log.options();
        assert!(!log.mem && !log.disk && log.log && !log.adaptive);
        let on = TriadMode::On.options();
        assert!(on.mem && on.disk && on.log && !on.adaptive);
        assert_eq!(TriadMode::Adaptive.options(), TriadOptions::default());
    }
}
