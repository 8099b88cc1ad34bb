//! How Redis keys, values and expiry times are laid out in the engine's one ordered keyspace.
//!
//! ```text
//! data key    0x01 | db (1 byte) | user key                 -> value record
//! expiry key  0x02 | db (1 byte) | at_ms (8 bytes, BE) | key -> empty
//! value record: flags (1 byte) | [expire_at_ms (8 bytes, LE) if flags & HAS_EXPIRY] | payload
//! flags: kind (high 4 bits: 0 string, 1 hash, 2 list, 3 set, 4 sorted set, 5 stream)
//!        | LARGE (0x02)
//!        | HAS_EXPIRY (0x01); a stream is always LARGE
//! ```
//!
//! A string's payload is its bytes. A collection's is either *packed* (its members in the
//! record, see `collections::packed`) or, with LARGE, a header naming the collection version
//! whose members are separate keys (`collections`).
//!
//! Invariants:
//! - The data record is the truth: a key's expiry is the one in its record. Expiry keys are an
//!   index for the background pass and may be stale (a later SET or DEL does not remove them:
//!   plain writes do not look for them); the pass re-checks the record before it deletes
//!   anything.
//! - Every key with an expiry has an expiry key for that exact time (written in the same
//!   transaction as the record), so the pass finds every expired key.
//! - A record whose time has passed is never returned: reads treat it as absent.

use bytes::Bytes;

/// Prefix of data keys.
pub const DATA: u8 = 0x01;
/// Prefix of expiry-index keys.
pub const EXPIRY: u8 = 0x02;

/// Bytes the data-key prefix adds to a user key.
pub const DATA_KEY_OVERHEAD: usize = 2;
/// Longest user key: the engine's key limit minus the expiry key's prefix (the longer one).
pub const MAX_USER_KEY_LEN: usize = rialto_engine::MAX_KEY_LEN - 10;
/// Longest value: the engine's value limit minus the record header.
pub const MAX_USER_VALUE_LEN: usize = rialto_engine::MAX_VALUE_LEN - 9;

pub(crate) const HAS_EXPIRY: u8 = 0x01;
/// A collection whose members are separate keys (its payload is a header).
pub(crate) const LARGE: u8 = 0x02;

/// What a key holds: the record's kind (flags >> 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    String = 0,
    Hash = 1,
    List = 2,
    Set = 3,
    ZSet = 4,
    Stream = 5,
}

impl Kind {
    fn from_bits(b: u8) -> Option<Kind> {
        Some(match b {
            0 => Kind::String,
            1 => Kind::Hash,
            2 => Kind::List,
            3 => Kind::Set,
            4 => Kind::ZSet,
            5 => Kind::Stream,
            _ => return None,
        })
    }

    /// The name TYPE replies with.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }
}

/// The kind and encoding a record's first byte states, if it is one this version writes.
pub(crate) fn kind_of(flags: u8) -> Option<(Kind, bool)> {
    let kind = Kind::from_bits(flags >> 4)?;
    let large = flags & LARGE != 0;
    if flags & !(0xf0 | LARGE | HAS_EXPIRY) != 0
        || (kind == Kind::String && large)
        || (kind == Kind::Stream && !large)
    {
        return None;
    }
    Some((kind, flags & LARGE != 0))
}

/// The engine key of `key` in database `db`.
pub fn data_key(db: u8, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(DATA_KEY_OVERHEAD + key.len());
    k.push(DATA);
    k.push(db);
    k.extend_from_slice(key);
    k
}

/// `[lower, upper)` bounds of every data key of `db`.
pub fn data_range(db: u8) -> (Vec<u8>, Vec<u8>) {
    (vec![DATA, db], next_prefix(&[DATA, db]))
}

/// `[lower, upper)` bounds of every expiry-index key of `db`.
pub fn expiry_range(db: u8) -> (Vec<u8>, Vec<u8>) {
    (vec![EXPIRY, db], next_prefix(&[EXPIRY, db]))
}

/// The expiry-index key of `key` expiring at `at_ms`.
pub fn expiry_key(db: u8, at_ms: i64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(10 + key.len());
    k.push(EXPIRY);
    k.push(db);
    // Sign-flipped so that negative times (never stored: they expire at once) would still sort.
    k.extend_from_slice(&((at_ms as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// `[lower, upper)` of the expiry keys of `db` with times `<= now_ms`.
pub fn expiry_due_range(db: u8, now_ms: i64) -> (Vec<u8>, Vec<u8>) {
    (
        vec![EXPIRY, db],
        expiry_key(db, now_ms.saturating_add(1), b""),
    )
}

/// Splits an expiry key into (db, at_ms, user key).
pub fn parse_expiry_key(k: &[u8]) -> Option<(u8, i64, &[u8])> {
    if k.len() < 10 || k[0] != EXPIRY {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&k[2..10]);
    Some((k[1], (u64::from_be_bytes(t) ^ (1 << 63)) as i64, &k[10..]))
}

/// The smallest key greater than every key starting with `prefix` (prefix is never all 0xff
/// here: it starts with a small tag byte).
pub fn next_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last != 0xff {
            p.push(last + 1);
            return p;
        }
    }
    p
}

/// A decoded value record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Unix milliseconds at which the key expires, if it has a TTL.
    pub expire_at_ms: Option<i64>,
    /// What the key holds.
    pub kind: Kind,
    /// A collection whose members are separate keys; `value` is then its header.
    pub large: bool,
    /// The payload: a string's bytes, or a collection's packed members or header (a
    /// zero-copy slice of what the engine returned).
    pub value: Bytes,
}

/// A value record that cannot be decoded: the database holds something this version did not
/// write. Reported to the client as an error, never as a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt value record ({0})")]
pub struct CorruptRecord(pub &'static str);

impl Record {
    /// A string without expiry.
    pub fn new(value: Bytes) -> Record {
        Record {
            expire_at_ms: None,
            kind: Kind::String,
            large: false,
            value,
        }
    }

    /// Decodes an engine value.
    pub fn decode(raw: Bytes) -> Result<Record, CorruptRecord> {
        let Some(&flags) = raw.first() else {
            return Err(CorruptRecord("empty"));
        };
        let Some((kind, large)) = kind_of(flags) else {
            return Err(CorruptRecord("unknown type or flags"));
        };
        if flags & HAS_EXPIRY == 0 {
            return Ok(Record {
                expire_at_ms: None,
                kind,
                large,
                value: raw.slice(1..),
            });
        }
        if raw.len() < 9 {
            return Err(CorruptRecord("truncated expiry"));
        }
        let mut t = [0u8; 8];
        t.copy_from_slice(&raw[1..9]);
        Ok(Record {
            expire_at_ms: Some(i64::from_le_bytes(t)),
            kind,
            large,
            value: raw.slice(9..),
        })
    }

    /// Whether the key holds a string.
    pub fn is_string(&self) -> bool {
        self.kind == Kind::String
    }

    /// Whether the key is logically gone at `now_ms`. As in Redis, a key whose time is `now`
    /// still exists for that millisecond.
    pub fn expired(&self, now_ms: i64) -> bool {
        self.expire_at_ms.is_some_and(|at| now_ms > at)
    }

    /// Encodes the record as the engine value.
    pub fn encode(&self) -> Vec<u8> {
        let (h, n) = header(self.kind, self.large, self.expire_at_ms);
        let mut out = Vec::with_capacity(n + self.value.len());
        out.extend_from_slice(&h[..n]);
        out.extend_from_slice(&self.value);
        out
    }
}

/// The header of a string record expiring at `expire_at_ms`, and its length; the record is
/// the header followed by the value.
pub fn record_header(expire_at_ms: Option<i64>) -> ([u8; 9], usize) {
    header(Kind::String, false, expire_at_ms)
}

/// The header of a record of `kind` (`large`: its members are separate keys) expiring at
/// `expire_at_ms`, and its length.
pub fn header(kind: Kind, large: bool, expire_at_ms: Option<i64>) -> ([u8; 9], usize) {
    let mut h = [0u8; 9];
    h[0] = (kind as u8) << 4 | if large { LARGE } else { 0 };
    match expire_at_ms {
        None => (h, 1),
        Some(at) => {
            h[0] |= HAS_EXPIRY;
            h[1..9].copy_from_slice(&at.to_le_bytes());
            (h, 9)
        }
    }
}

/// Encodes a string record from its parts without building a [`Record`].
#[cfg(test)]
pub fn encode_record(expire_at_ms: Option<i64>, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + value.len());
    encode_record_into(&mut out, expire_at_ms, value);
    out
}

/// Appends the string record of `value` (expiring at `expire_at_ms`) to `out`.
#[cfg(test)]
pub fn encode_record_into(out: &mut Vec<u8>, expire_at_ms: Option<i64>, value: &[u8]) {
    let (h, n) = record_header(expire_at_ms);
    out.extend_from_slice(&h[..n]);
    out.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for at in [
            None,
            Some(0),
            Some(-5),
            Some(1_700_000_000_000),
            Some(i64::MAX),
        ] {
            for v in [&b""[..], b"x", &[0xffu8; 300][..]] {
                let raw = Bytes::from(encode_record(at, v));
                let r = Record::decode(raw).unwrap();
                assert_eq!(r.expire_at_ms, at);
                assert_eq!(&r.value[..], v);
            }
        }
    }

    #[test]
    fn corrupt_records_are_errors_not_values() {
        assert!(Record::decode(Bytes::new()).is_err());
        assert!(Record::decode(Bytes::from_static(&[0x01, 1, 2])).is_err());
        assert!(Record::decode(Bytes::from_static(&[0x50])).is_err());
        assert!(Record::decode(Bytes::from_static(&[0x60])).is_err());
        assert!(Record::decode(Bytes::from_static(&[0x02])).is_err());
        assert!(Record::decode(Bytes::from_static(&[0x14])).is_err());
    }

    #[test]
    fn collections_keep_their_kind_and_encoding() {
        for kind in [Kind::Hash, Kind::List, Kind::Set, Kind::ZSet, Kind::Stream] {
            for large in [false, true] {
                if kind == Kind::Stream && !large {
                    continue;
                }
                for at in [None, Some(77)] {
                    let r = Record {
                        expire_at_ms: at,
                        kind,
                        large,
                        value: Bytes::from_static(b"payload"),
                    };
                    assert_eq!(Record::decode(Bytes::from(r.encode())).unwrap(), r);
                }
            }
        }
    }

    #[test]
    fn expiry_keys_sort_by_db_then_time_then_key() {
        let a = expiry_key(0, 5, b"z");
        let b = expiry_key(0, 6, b"a");
        let c = expiry_key(1, 1, b"a");
        assert!(a < b && b < c);
        assert_eq!(parse_expiry_key(&b), Some((0, 6, &b"a"[..])));
        let (lo, hi) = expiry_due_range(0, 5);
        assert!(lo <= a && a < hi);
        assert!(b >= hi);
    }

    #[test]
    fn data_ranges_hold_exactly_their_db() {
        let (lo, hi) = data_range(3);
        assert!(data_key(3, b"") >= lo && data_key(3, &[0xff; 10]) < hi);
        assert!(data_key(4, b"") >= hi && data_key(2, &[0xff]) < lo);
        let (_, hi) = data_range(255);
        assert_eq!(hi, vec![DATA + 1]);
    }

    #[test]
    fn a_key_exists_during_its_expiry_millisecond() {
        let r = Record {
            expire_at_ms: Some(100),
            ..Record::new(Bytes::new())
        };
        assert!(!r.expired(100));
        assert!(r.expired(101));
    }
}
