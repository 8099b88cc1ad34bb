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
    /// Groups logged by their size in transactions: `group_sizes[i]` counts the groups of
    /// at most `GROUP_SIZE_BOUNDS[i]` transactions and more than the bound before; the last
    /// counts the larger ones.
    pub group_sizes: [u64; GROUP_SIZE_BUCKETS],
}

/// Upper bounds (inclusive) of the group-size buckets of [`MergerStats::group_sizes`]:
/// powers of two, as group sizes spread over orders of magnitude with load.
pub const GROUP_SIZE_BOUNDS: [u64; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/// Buckets of [`MergerStats::group_sizes`]: one per bound and one for larger groups.
pub const GROUP_SIZE_BUCKETS: usize = GROUP_SIZE_BOUNDS.len() + 1;

/// The bucket of a group of `txns` transactions.
pub(crate) fn group_size_bucket(txns: usize) -> usize {
    GROUP_SIZE_BOUNDS
        .iter()
        .position(|&b| txns as u64 <= b)
        .unwrap_or(GROUP_SIZE_BOUNDS.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_sizes_fall_in_power_of_two_buckets() {
        assert_eq!(group_size_bucket(0), 0);
        assert_eq!(group_size_bucket(1), 0);
        assert_eq!(group_size_bucket(2), 1);
        assert_eq!(group_size_bucket(3), 2);
        assert_eq!(group_size_bucket(4), 2);
        assert_eq!(group_size_bucket(5), 3);
        assert_eq!(group_size_bucket(512), 9);
        assert_eq!(group_size_bucket(513), 10);
        assert_eq!(group_size_bucket(usize::MAX), GROUP_SIZE_BUCKETS - 1);
    }
}
