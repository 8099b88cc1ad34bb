//! Internal keys: a user key plus an 8-byte trailer that orders versions of the same key.
//!
//! ```text
//! internal_key := user_key | trailer: u64 LE = (sequence << 8) | kind
//! ```
//!
//! Ordering: user key ascending (bytewise), then trailer descending, so the newest version of
//! a key comes first. A lookup for `key` as of sequence `s` seeks to `(key, s, KIND_SEEK)` and
//! takes the first entry whose user key matches.

use std::cmp::Ordering;

/// Sequence numbers use 56 bits; the low 8 bits of the trailer hold the kind.
pub type SequenceNumber = u64;
/// Largest valid sequence number.
pub const MAX_SEQUENCE: SequenceNumber = (1 << 56) - 1;
/// Bytes of the trailer.
pub const TRAILER_LEN: usize = 8;

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key was deleted.
    Delete = 0,
    /// A value.
    Put = 1,
}

/// Kind used in seek targets: the largest kind, so a target sorts before every entry of
/// the same user key and sequence.
pub const KIND_SEEK: ValueKind = ValueKind::Put;

impl ValueKind {
    /// Decodes a kind byte.
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            _ => None,
        }
    }
}

/// Packs a sequence and kind into a trailer.
#[inline]
pub fn pack_trailer(seq: SequenceNumber, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | kind as u64
}

/// Appends the internal key `(user_key, seq, kind)` to `out`.
#[inline]
pub fn append_internal_key(
    out: &mut Vec<u8>,
    user_key: &[u8],
    seq: SequenceNumber,
    kind: ValueKind,
) {
    out.extend_from_slice(user_key);
    out.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// Builds an internal key.
pub fn make_internal_key(user_key: &[u8], seq: SequenceNumber, kind: ValueKind) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, kind);
    v
}

/// The user key of an internal key. REQUIRES: `ikey.len() >= 8`.
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len() - TRAILER_LEN]
}

/// The trailer of an internal key. REQUIRES: `ikey.len() >= 8`.
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    let t = &ikey[ikey.len() - TRAILER_LEN..];
    u64::from_le_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]])
}

/// Sequence number of an internal key.
#[inline]
pub fn sequence(ikey: &[u8]) -> SequenceNumber {
    trailer(ikey) >> 8
}

/// Kind byte of an internal key (validated by [`parse`]).
#[inline]
pub fn kind_byte(ikey: &[u8]) -> u8 {
    (trailer(ikey) & 0xff) as u8
}

/// A decoded internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// Sequence number of the write.
    pub seq: SequenceNumber,
    /// Put or delete.
    pub kind: ValueKind,
}

/// Decodes an internal key; `None` if it is too short or has an unknown kind.
pub fn parse(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let t = trailer(ikey);
    Some(ParsedKey {
        user_key: user_key(ikey),
        seq: t >> 8,
        kind: ValueKind::from_u8((t & 0xff) as u8)?,
    })
}

/// Total order of internal keys (see the module docs).
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// Bytewise order of user keys, as `<[u8]>::cmp`. Compares 8 bytes at a time inline: the
/// memtable and block searches call this on every step, and most keys differ early, where a
/// call into `memcmp` costs more than the comparison itself.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes([
            a[i],
            a[i + 1],
            a[i + 2],
            a[i + 3],
            a[i + 4],
            a[i + 5],
            a[i + 6],
            a[i + 7],
        ]);
        let y = u64::from_be_bytes([
            b[i],
            b[i + 1],
            b[i + 2],
            b[i + 3],
            b[i + 4],
            b[i + 5],
            b[i + 6],
            b[i + 7],
        ]);
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// A short key `k` with `start <= k < limit` in user-key order, used as an index separator
/// between two blocks. Returns `start` itself when no shorter key exists.
/// Operates on internal keys; the result is an internal key.
pub fn separator(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let (us, ul) = (user_key(start), user_key(limit));
    let shared = us.iter().zip(ul).take_while(|(a, b)| a == b).count();
    if shared < us.len().min(ul.len()) {
        let b = us[shared];
        if b < 0xff && b + 1 < ul[shared] {
            let mut k = us[..=shared].to_vec();
            k[shared] += 1;
            // The shortened user key sorts strictly between; give it the largest trailer so
            // it precedes every real entry of that user key.
            k.extend_from_slice(&pack_trailer(MAX_SEQUENCE, KIND_SEEK).to_le_bytes());
            return k;
        }
    }
    start.to_vec()
}

/// A short key `k >= key` (used after the last block of a table).
pub fn successor(key: &[u8]) -> Vec<u8> {
    let uk = user_key(key);
    if let Some(i) = uk.iter().position(|&b| b != 0xff) {
        let mut k = uk[..=i].to_vec();
        k[i] += 1;
        k.extend_from_slice(&pack_trailer(MAX_SEQUENCE, KIND_SEEK).to_le_bytes());
        return k;
    }
    key.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_first() {
        let a = make_internal_key(b"k", 10, ValueKind::Put);
        let b = make_internal_key(b"k", 5, ValueKind::Put);
        let c = make_internal_key(b"l", 100, ValueKind::Put);
        assert_eq!(compare(&a, &b), Ordering::Less);
        assert_eq!(compare(&b, &c), Ordering::Less);
        let seek = make_internal_key(b"k", 10, KIND_SEEK);
        assert_ne!(compare(&seek, &a), Ordering::Greater);
    }

    #[test]
    fn separator_is_between() {
        let a = make_internal_key(b"abcdef", 3, ValueKind::Put);
        let b = make_internal_key(b"abzzz", 9, ValueKind::Put);
        let s = separator(&a, &b);
        assert!(compare(&a, &s) != Ordering::Greater);
        assert_eq!(compare(&s, &b), Ordering::Less);
        assert!(user_key(&s).len() <= 3);
        let t = successor(&b);
        assert!(compare(&b, &t) != Ordering::Greater);
    }

    #[test]
    fn compare_bytes_matches_slice_order() {
        let keys: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"abcdefghijklmnop",
            b"abcdefghijklmnoq",
            b"\xff",
            b"\x80\x00",
            b"\x7f",
        ];
        for a in &keys {
            for b in &keys {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn parse_rejects_bad_kind() {
        let mut k = make_internal_key(b"x", 1, ValueKind::Put);
        let n = k.len();
        k[n - 8] = 7;
        assert!(parse(&k).is_none());
        assert!(parse(b"short").is_none());
    }
}
