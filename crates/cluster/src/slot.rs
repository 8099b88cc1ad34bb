//! The ranges of Redis Cluster's hash slots each partition of the log owns: partition `p` of
//! `n` owns the contiguous slots `[p * 16384 / n, (p + 1) * 16384 / n)`, so every slot belongs
//! to exactly one partition. A key's slot is [`key_slot`].

pub use rialto_keyspace::slot::{crc16, hash_tag, key_slot, SLOTS};

/// The first slot of partition `p` of `partitions`.
pub fn first_slot(p: u32, partitions: u32) -> u16 {
    debug_assert!(partitions >= 1 && partitions <= u32::from(SLOTS) && p <= partitions);
    (u64::from(p) * u64::from(SLOTS) / u64::from(partitions)) as u16
}

/// The slots partition `p` of `partitions` owns, as an inclusive range (as CLUSTER SLOTS
/// reports them).
pub fn slot_range(p: u32, partitions: u32) -> (u16, u16) {
    let end = u64::from(p + 1) * u64::from(SLOTS) / u64::from(partitions);
    (first_slot(p, partitions), (end - 1) as u16)
}

/// The partition of `partitions` that owns `slot`.
pub fn partition_of(slot: u16, partitions: u32) -> u32 {
    // The largest p whose first slot is at most `slot`: p = floor(((slot + 1) * n - 1) / S).
    ((u64::from(slot) + 1) * u64::from(partitions) - 1) as u32 / u32::from(SLOTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_belongs_to_exactly_the_partition_whose_range_holds_it() {
        for n in [1u32, 2, 3, 5, 7, 16, 64, 100, 16_384] {
            let mut next = 0u32;
            for p in 0..n {
                let (lo, hi) = slot_range(p, n);
                assert_eq!(u32::from(lo), next, "n={n} p={p}");
                assert!(hi >= lo);
                next = u32::from(hi) + 1;
                for s in [lo, hi, lo + (hi - lo) / 2] {
                    assert_eq!(partition_of(s, n), p, "n={n} slot={s}");
                }
            }
            assert_eq!(next, u32::from(SLOTS));
        }
    }
}
