//! Counters of the merger.

use std::fmt;

use crate::options::Durability;

/// A copy of the merger's counters at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct MergerStats {
    /// Durability mode.
    pub durability: Durability,
    /// Transactions executed.
    pub txns: u64,
    /// Groups logged (one journal write each).
    pub groups: u64,
    /// Journal syncs issued by the merger.
    pub syncs: u64,
    /// Transactions waiting to execute.
    pub queued: usize,
    /// Journal bytes logged but not yet durable.
    pub unsynced_bytes: usize,
    /// Median submit-to-acknowledge latency.
    pub commit_p50_micros: u64,
    /// 99th percentile submit-to-acknowledge latency.
    pub commit_p99_micros: u64,
    /// Longest submit-to-acknowledge latency.
    pub commit_max_micros: u64,
    /// Times waiting threads stopped polling because another thread held the CPU for a time
    /// slice (`MergerOptions::poll_preempted_after`).
    pub poll_suspensions: u64,
    /// Why the merger stopped acknowledging writes, if it did.
    pub failed: Option<String>,
}

impl fmt::Display for MergerStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "merger: durability={} txns={} groups={} syncs={} queued={} unsynced_bytes={} \
             commit_p50_micros={} commit_p99_micros={} commit_max_micros={} \
             poll_suspensions={}",
            self.durability.name(),
            self.txns,
            self.groups,
            self.syncs,
            self.queued,
            self.unsynced_bytes,
            self.commit_p50_micros,
            self.commit_p99_micros,
            self.commit_max_micros,
            self.poll_suspensions
        )?;
        if let Some(r) = &self.failed {
            write!(f, " failed={r:?}")?;
        }
        Ok(())
    }
}
