//! db_bench's key layout: the key index as big-endian bytes, then `'0'` padding up to
//! `key_size`.
//!
//! Big-endian makes byte order equal numeric order, so fillseq writes keys in key order (the
//! engine's best case) and readseq sees them in index order; the padding gives keys longer
//! than 8 bytes a realistic shared suffix without changing their order. Keys shorter than
//! 8 bytes keep the low `key_size` bytes of the index, which is why
//! [`distinct_keys`] bounds `--num`.

/// Writes the key of `index` into `out` (cleared first); `out.len() == key_size` after.
pub fn encode_key(index: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let be = index.to_be_bytes();
    let n = key_size.min(be.len());
    out.extend_from_slice(&be[be.len() - n..]);
    out.resize(key_size, b'0');
}

/// The key of `index`, as a new vector.
#[cfg(test)]
pub fn key(index: u64, key_size: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(key_size);
    encode_key(index, key_size, &mut k);
    k
}

/// How many distinct indices `key_size`-byte keys can encode (saturating at `u64::MAX`).
pub fn distinct_keys(key_size: usize) -> u64 {
    if key_size >= 8 {
        u64::MAX
    } else {
        1u64 << (8 * key_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let mut zero = vec![0u8; 8];
        zero.extend_from_slice(b"00000000");
        assert_eq!(key(0, 16), zero);
        assert_eq!(key(0x0102, 10), b"\0\0\0\0\0\0\x01\x0200".to_vec());
        assert_eq!(key(0x0102, 8), b"\0\0\0\0\0\0\x01\x02".to_vec());
        // Short keys keep the low bytes.
        assert_eq!(key(0x0102, 1), vec![0x02]);
        assert_eq!(key(0x0102, 3), vec![0x00, 0x01, 0x02]);
    }

    #[test]
    fn fixed_size_and_ordered() {
        for size in [1usize, 4, 8, 16, 24] {
            let limit = distinct_keys(size).min(3000);
            let mut prev: Option<Vec<u8>> = None;
            let mut buf = Vec::new();
            for i in 0..limit {
                encode_key(i, size, &mut buf);
                assert_eq!(buf.len(), size);
                if let Some(p) = &prev {
                    assert!(p < &buf, "size {size} index {i}");
                }
                prev = Some(buf.clone());
            }
        }
        // Order holds across byte boundaries of large indices too.
        assert!(key(u32::MAX as u64, 16) < key(u32::MAX as u64 + 1, 16));
        assert!(key(255, 16) < key(256, 16));
    }

    #[test]
    fn distinct_key_counts() {
        assert_eq!(distinct_keys(1), 256);
        assert_eq!(distinct_keys(2), 65_536);
        assert_eq!(distinct_keys(7), 1 << 56);
        assert_eq!(distinct_keys(8), u64::MAX);
    }
}
