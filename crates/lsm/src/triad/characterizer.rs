//! The workload characterizer (DeuceDB): classifies windows of operations by read/write mix
//! and write skew, and retunes TRIAD to the class.
//!
//! Pure: [`Characterizer::observe`] takes one window's counts and returns the decision, if
//! the class changed; the counting itself is [`super::recorder`]'s.
//!
//! - **Read/write ratio**: the read fraction of the window's operations.
//! - **Skew**: of the window's writes, one in [`super::recorder::SAMPLE_EVERY`] is sampled
//!   (its key's hash); skew is the fraction of samples that repeat a key sampled earlier in
//!   the window (`1 - distinct / sampled`). That is what hot/cold separation feeds on: keys
//!   rewritten while they are still in the memtable. Uniform writes over a large key space
//!   score near 0; zipf 0.99 over a million keys about 0.5.
//!
//! Classes and their tuning (thresholds configurable in [`CharacterizerConfig`]):
//!
//! | class | when | overlap threshold (TRIAD-DISK) | hot/cold (TRIAD-MEM) | commit log (TRIAD-LOG) |
//! |---|---|---|---|---|
//! | read-heavy | reads ≥ 70% | `read_heavy_overlap` (0: L0 is compacted as usual, reads probe fewer files) | off | off (reads stay in block-cached tables) |
//! | write-heavy skewed | writes ≥ 70%, skew ≥ 0.2 | `write_heavy_overlap` | on | on |
//! | write-heavy uniform | writes ≥ 70%, skew < 0.2 | `write_heavy_overlap` | off (nothing is hot) | on |
//! | balanced | otherwise (and at start) | `balanced_overlap` (0) | off | off |
//!
//! Hysteresis, so a workload at a boundary does not flap: leaving a class takes a margin
//! past its entry threshold (`*_leave` below `*_enter`), and a new class is adopted only after
//! `confirm_windows` consecutive windows agree on it.

use std::collections::VecDeque;

/// Operation counts of one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// Point reads, scans and iterator creations.
    pub reads: u64,
    /// Written keys (puts and deletes; a batch counts each).
    pub writes: u64,
    /// Sampled writes.
    pub sampled: u32,
    /// Distinct keys among the sampled writes.
    pub distinct: u32,
}

/// Fewer samples than this say nothing about skew (it reads as 0).
const MIN_SAMPLES: u32 = 32;

impl Window {
    /// Fraction of the operations that were reads (0 for an empty window).
    pub fn read_fraction(&self) -> f64 {
        let total = self.reads + self.writes;
        if total == 0 {
            0.0
        } else {
            self.reads as f64 / total as f64
        }
    }

    /// Fraction of sampled writes that repeated a key of the window (see the module docs).
    pub fn skew(&self) -> f64 {
        if self.sampled < MIN_SAMPLES {
            return 0.0;
        }
        1.0 - f64::from(self.distinct.min(self.sampled)) / f64::from(self.sampled)
    }
}

/// A workload class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Neither reads nor writes dominate (also the state before the first window).
    Balanced,
    /// Reads dominate.
    ReadHeavy,
    /// Writes dominate, spread evenly over the keys.
    WriteHeavyUniform,
    /// Writes dominate, and many rewrite the same keys.
    WriteHeavySkewed,
}

impl Workload {
    /// Every class.
    pub const ALL: [Workload; 4] = [
        Workload::Balanced,
        Workload::ReadHeavy,
        Workload::WriteHeavyUniform,
        Workload::WriteHeavySkewed,
    ];

    /// Short name, as shown in statistics.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Balanced => "balanced",
            Workload::ReadHeavy => "read-heavy",
            Workload::WriteHeavyUniform => "write-heavy-uniform",
            Workload::WriteHeavySkewed => "write-heavy-skewed",
        }
    }
}

/// What the characterizer sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// TRIAD-DISK: L0 compaction is deferred while the estimated overlap is below this.
    pub overlap_threshold: f64,
    /// TRIAD-MEM: keep hot keys in memory at flush.
    pub hot_cold: bool,
    /// TRIAD-LOG: flush to commit-log tables (index over the WAL segment).
    pub commit_log: bool,
}

/// Thresholds of the characterizer. Fractions are of a window's operations (reads) or of
/// its sampled writes (skew).
#[derive(Debug, Clone, PartialEq)]
pub struct CharacterizerConfig {
    /// Operations per window. Default 10,000 (DeuceDB's): fresh enough to follow a phase
    /// change within seconds at any useful rate, long enough to average noise out.
    pub window_ops: u64,
    /// Read fraction to enter read-heavy. Default 0.7.
    pub read_heavy_enter: f64,
    /// Read fraction below which read-heavy is left. Default 0.6.
    pub read_heavy_leave: f64,
    /// Write fraction to enter a write-heavy class. Default 0.7.
    pub write_heavy_enter: f64,
    /// Write fraction below which write-heavy is left. Default 0.6.
    pub write_heavy_leave: f64,
    /// Skew to enter write-heavy skewed. Default 0.2.
    pub skew_enter: f64,
    /// Skew below which write-heavy skewed is left. Default 0.1.
    pub skew_leave: f64,
    /// Consecutive windows that must agree before the class changes. Default 2.
    pub confirm_windows: u32,
    /// Overlap threshold when read-heavy. Default 0 (no deferral).
    pub read_heavy_overlap: f64,
    /// Overlap threshold when balanced (and before the first window). Default 0: a mixed
    /// or not yet characterized workload gets the classic LSM.
    pub balanced_overlap: f64,
    /// Overlap threshold when write-heavy. Default 0.4.
    pub write_heavy_overlap: f64,
}

impl Default for CharacterizerConfig {
    fn default() -> Self {
        CharacterizerConfig {
            window_ops: 10_000,
            read_heavy_enter: 0.7,
            read_heavy_leave: 0.6,
            write_heavy_enter: 0.7,
            write_heavy_leave: 0.6,
            skew_enter: 0.2,
            skew_leave: 0.1,
            confirm_windows: 2,
            read_heavy_overlap: 0.0,
            balanced_overlap: 0.0,
            write_heavy_overlap: 0.4,
        }
    }
}

/// A class change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Number of the window that confirmed it (windows count from 1).
    pub window: u64,
    /// Class before.
    pub from: Workload,
    /// Class after.
    pub to: Workload,
    /// The confirming window's read fraction.
    pub read_fraction: f64,
    /// The confirming window's skew.
    pub skew: f64,
    /// The tuning now in force.
    pub tuning: Tuning,
}

/// Decisions kept for statistics.
const DECISION_LOG: usize = 32;

/// The characterizer's state. See the module docs.
#[derive(Debug, Clone)]
pub struct Characterizer {
    cfg: CharacterizerConfig,
    current: Workload,
    /// A class the last windows voted for, and how many in a row.
    candidate: Option<(Workload, u32)>,
    windows: u64,
    last: Window,
    decisions: VecDeque<Decision>,
}

impl Characterizer {
    /// A characterizer in the balanced class.
    pub fn new(cfg: CharacterizerConfig) -> Self {
        Characterizer {
            cfg,
            current: Workload::Balanced,
            candidate: None,
            windows: 0,
            last: Window::default(),
            decisions: VecDeque::new(),
        }
    }

    /// The class in force.
    pub fn workload(&self) -> Workload {
        self.current
    }

    /// Windows observed.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// The last window observed.
    pub fn last_window(&self) -> Window {
        self.last
    }

    /// The most recent class changes, oldest first (at most 32).
    pub fn decisions(&self) -> impl Iterator<Item = &Decision> {
        self.decisions.iter()
    }

    /// The tuning of the class in force.
    pub fn tuning(&self) -> Tuning {
        self.tuning_of(self.current)
    }

    fn tuning_of(&self, w: Workload) -> Tuning {
        let c = &self.cfg;
        match w {
            Workload::ReadHeavy => Tuning {
                overlap_threshold: c.read_heavy_overlap,
                hot_cold: false,
                commit_log: false,
            },
            Workload::Balanced => Tuning {
                overlap_threshold: c.balanced_overlap,
                hot_cold: false,
                commit_log: false,
            },
            Workload::WriteHeavyUniform => Tuning {
                overlap_threshold: c.write_heavy_overlap,
                hot_cold: false,
                commit_log: true,
            },
            Workload::WriteHeavySkewed => Tuning {
                overlap_threshold: c.write_heavy_overlap,
                hot_cold: true,
                commit_log: true,
            },
        }
    }

    /// The class `w` belongs to, given the class in force (whose leave thresholds apply).
    pub fn classify(&self, w: &Window) -> Workload {
        let c = &self.cfg;
        let reads = w.read_fraction();
        let writes = 1.0 - reads;
        let read_heavy = if self.current == Workload::ReadHeavy {
            reads >= c.read_heavy_leave
        } else {
            reads >= c.read_heavy_enter
        };
        if read_heavy {
            return Workload::ReadHeavy;
        }
        let was_write_heavy = matches!(
            self.current,
            Workload::WriteHeavySkewed | Workload::WriteHeavyUniform
        );
        let write_heavy = if was_write_heavy {
            writes >= c.write_heavy_leave
        } else {
            writes >= c.write_heavy_enter
        };
        if !write_heavy {
            return Workload::Balanced;
        }
        let skewed = if self.current == Workload::WriteHeavySkewed {
            w.skew() >= c.skew_leave
        } else {
            w.skew() >= c.skew_enter
        };
        if skewed {
            Workload::WriteHeavySkewed
        } else {
            Workload::WriteHeavyUniform
        }
    }

    /// Takes one window; returns the decision if it changed the class.
    pub fn observe(&mut self, w: Window) -> Option<Decision> {
        self.windows += 1;
        self.last = w;
        let class = self.classify(&w);
        if class == self.current {
            self.candidate = None;
            return None;
        }
        let votes = match self.candidate {
            Some((c, n)) if c == class => n + 1,
            _ => 1,
        };
        if votes < self.cfg.confirm_windows.max(1) {
            self.candidate = Some((class, votes));
            return None;
        }
        self.candidate = None;
        let d = Decision {
            window: self.windows,
            from: self.current,
            to: class,
            read_fraction: w.read_fraction(),
            skew: w.skew(),
            tuning: self.tuning_of(class),
        };
        self.current = class;
        if self.decisions.len() == DECISION_LOG {
            self.decisions.pop_front();
        }
        self.decisions.push_back(d);
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window of 10,000 operations with `reads` of them reads and the given skew.
    fn window(reads: u64, skew: f64) -> Window {
        let writes = 10_000 - reads;
        let sampled = (writes / 8) as u32;
        Window {
            reads,
            writes,
            sampled,
            distinct: (f64::from(sampled) * (1.0 - skew)).round() as u32,
        }
    }

    fn feed(c: &mut Characterizer, w: Window, n: usize) -> Vec<Decision> {
        (0..n).filter_map(|_| c.observe(w)).collect()
    }

    #[test]
    fn window_measures() {
        let w = window(9_000, 0.0);
        assert!((w.read_fraction() - 0.9).abs() < 1e-9);
        assert_eq!(Window::default().read_fraction(), 0.0);
        assert!((window(0, 0.5).skew() - 0.5).abs() < 0.01);
        // Too few samples to judge.
        let few = Window {
            reads: 9_990,
            writes: 10,
            sampled: 1,
            distinct: 1,
        };
        assert_eq!(few.skew(), 0.0);
    }

    #[test]
    fn classifies_each_kind_of_window() {
        let c = Characterizer::new(CharacterizerConfig::default());
        assert_eq!(c.classify(&window(9_000, 0.0)), Workload::ReadHeavy);
        assert_eq!(c.classify(&window(1_000, 0.5)), Workload::WriteHeavySkewed);
        assert_eq!(
            c.classify(&window(1_000, 0.01)),
            Workload::WriteHeavyUniform
        );
        assert_eq!(c.classify(&window(5_000, 0.5)), Workload::Balanced);
        assert_eq!(c.workload(), Workload::Balanced);
        assert!(!c.tuning().hot_cold);
    }

    #[test]
    fn a_change_needs_two_agreeing_windows() {
        let mut c = Characterizer::new(CharacterizerConfig::default());
        assert_eq!(c.observe(window(1_000, 0.5)), None);
        let d = c
            .observe(window(1_000, 0.5))
            .expect("second window confirms");
        assert_eq!(
            (d.window, d.from, d.to),
            (2, Workload::Balanced, Workload::WriteHeavySkewed)
        );
        assert!(d.tuning.hot_cold);
        assert_eq!(d.tuning.overlap_threshold, 0.4);
        assert_eq!(c.tuning(), d.tuning);
        // An isolated different window is ignored.
        assert_eq!(c.observe(window(9_000, 0.0)), None);
        assert_eq!(c.observe(window(1_000, 0.5)), None);
        assert_eq!(c.observe(window(9_000, 0.0)), None);
        assert_eq!(c.workload(), Workload::WriteHeavySkewed);
    }

    #[test]
    fn phase_shift_switches_within_three_windows() {
        let mut c = Characterizer::new(CharacterizerConfig::default());
        feed(&mut c, window(500, 0.6), 20);
        assert_eq!(c.workload(), Workload::WriteHeavySkewed);
        let before = c.windows();
        let d = feed(&mut c, window(9_000, 0.0), 3);
        assert_eq!(d.len(), 1);
        assert!(d[0].window - before <= 3);
        assert_eq!(d[0].to, Workload::ReadHeavy);
        assert_eq!(c.tuning().overlap_threshold, 0.0);
        assert!(!c.tuning().hot_cold);
        assert_eq!(c.decisions().count(), 2);
    }

    #[test]
    fn hysteresis_keeps_a_boundary_workload_steady() {
        let mut c = Characterizer::new(CharacterizerConfig::default());
        feed(&mut c, window(8_000, 0.0), 2);
        assert_eq!(c.workload(), Workload::ReadHeavy);
        // Alternating around the entry threshold (0.7) but above the leave threshold (0.6).
        for i in 0..20 {
            let reads = if i % 2 == 0 { 6_500 } else { 7_200 };
            assert_eq!(c.observe(window(reads, 0.0)), None);
        }
        assert_eq!(c.workload(), Workload::ReadHeavy);
        // Skew alternating between 0.12 and 0.25 keeps write-heavy skewed once entered.
        feed(&mut c, window(1_000, 0.3), 2);
        assert_eq!(c.workload(), Workload::WriteHeavySkewed);
        for i in 0..20 {
            let skew = if i % 2 == 0 { 0.12 } else { 0.25 };
            assert_eq!(c.observe(window(1_000, skew)), None);
        }
        // Clearly uniform now: leaves after two windows.
        let d = feed(&mut c, window(1_000, 0.0), 2);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].to, Workload::WriteHeavyUniform);
    }

    #[test]
    fn decision_log_is_bounded() {
        let mut c = Characterizer::new(CharacterizerConfig::default());
        for i in 0..100 {
            let w = if i % 4 < 2 {
                window(9_000, 0.0)
            } else {
                window(1_000, 0.5)
            };
            c.observe(w);
        }
        assert_eq!(c.decisions().count(), DECISION_LOG);
        assert_eq!(c.windows(), 100);
    }
}
