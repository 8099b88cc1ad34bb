//! TRIAD (Balmau et al., USENIX ATC 2017) and DeuceDB's run-time adaptation of it.
//!
//! - **TRIAD-DISK** (deferred L0 compaction): every table records a HyperLogLog sketch of its
//!   keys ([`sketch`]); while the estimated overlap between the L0 files and the L1 files
//!   they would be merged with stays below a threshold, L0→L1 compaction waits (up to
//!   [`TriadOptions::max_deferred_l0_files`]), because merging files that share few keys
//!   rewrites L1 without removing anything. The rule is in the pure compaction picker.
//! - **The characterizer** ([`characterizer`], fed by [`recorder`]) classifies windows of
//!   10,000 operations by read/write mix and write skew and retunes the overlap threshold
//!   (and, with TRIAD-MEM, hot/cold separation) at run time.
//!
//! The policy parts (picker rule, characterizer) take state and return decisions, so they
//! are tested and simulated without I/O.

pub mod characterizer;
pub mod recorder;
pub mod sketch;

pub use characterizer::{Characterizer, CharacterizerConfig, Decision, Tuning, Window, Workload};
pub use sketch::KeySketch;

/// Which TRIAD techniques run, and their fixed settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TriadOptions {
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
            disk: false,
            adaptive: false,
            ..TriadOptions::default()
        }
    }
}

/// TRIAD's state, as the engine's statistics show it.
#[derive(Debug, Clone, PartialEq)]
pub struct TriadStats {
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
