//! Redis Cluster's hash slots: a key's slot is CRC16 (XMODEM: polynomial 0x1021, initial
//! value 0, no reflection) of the key modulo 16,384, as Redis computes it, where a key holding
//! a `{...}` hash tag with at least one byte between the first `{` and the first `}` after it
//! is hashed on that tag alone. Partition `p` of `n` owns the contiguous slots
//! `[p * 16384 / n, (p + 1) * 16384 / n)`, so every slot belongs to exactly one partition.
//! (Here because a cluster partition's flush deletes by slot, and a store's versions are
//! chosen per partition.)

/// Hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16_384;

const fn table() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
}

static CRC16: [u16; 256] = table();

/// CRC16/XMODEM of `data`.
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16[usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// The part of `key` that is hashed: its hash tag if it has a non-empty one, else all of it.
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key`.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (SLOTS - 1)
}

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

/// The partition of `partitions` that owns `key`.
pub fn key_partition(key: &[u8], partitions: u32) -> u32 {
    if partitions <= 1 {
        return 0;
    }
    partition_of(key_slot(key), partitions)
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

    #[test]
    fn crc16_matches_the_xmodem_check_value() {
        // The check value of CRC-16/XMODEM, as Redis's crc16.c documents it.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn slots_match_redis() {
        // Values from redis-server 7.0's CLUSTER KEYSLOT.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"somekey"), 11058);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"{user1000}.followers"), key_slot(b"user1000"));
    }

    #[test]
    fn hash_tags_follow_redis_rules() {
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"{}"), b"{}");
        assert_eq!(hash_tag(b"abc{"), b"abc{");
        assert_eq!(hash_tag(b"}{a}"), b"a");
    }
}
