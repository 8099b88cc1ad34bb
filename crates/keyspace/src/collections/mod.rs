//! Collections (hashes, lists, sets and sorted sets) on the engine's ordered keyspace, in one of two encodings, as
//! Redis keeps small collections in one allocation and large ones in a table:
//!
//! - *packed*: the members are in the key's record itself ([`packed`]). A read of any number
//!   of fields is one point read; a write rewrites the record. Used while the collection is
//!   small ([`Encodings`]), and always under a store's prefix, whose versions are loaded by
//!   pushes and must not share members.
//! - *large*: the record holds a header (collection version and member count) and each member
//!   is a key of its own under the version:
//!
//! ```text
//! header        version (u64 LE) | count (u64 LE)
//! member key    0x0D | version (u64 BE) | h (u64 BE) | field  -> value  (hash)
//! member key    0x0D | version (u64 BE) | h (u64 BE) | member -> empty  (set)
//!               0x0D | version (u64 BE) | 0x00 | h | member -> score,
//!               0x0D | version (u64 BE) | 0x01 | sortable score | member -> empty
//!                                                               (sorted set, see [`zset`])
//! element key   0x0D | version (u64 BE) | index (u64 BE) -> element  (list, see [`list`];
//!               its header adds the head index)
//! next version  0x0E 0x00                              -> u64 LE
//! released      0x0E 0x01 | version (u64 BE)           -> empty
//! ```
//!
//! `h` is the member's xxh3-64 (0 taken as 1): members sort by it, so a scan's cursor is the
//! `h` to resume from and needs no state on the server (HSCAN, SSCAN, ZSCAN: `hash_page`),
//! and a member is found by one point read all the same.
//!
//! Invariants:
//! - A collection version is never used twice: versions come from the counter `next version`,
//!   bumped in the transaction that creates one. Member keys hold no user key, so RENAME and
//!   MOVE move the header alone.
//! - At any time a version is named by at most one record. Deleting, expiring, overwriting or
//!   flushing a large collection therefore leaves its members unreachable at once (O(1) for
//!   the client): the write observer (`counts`) sees every record a write replaces, nets the
//!   versions each group stops naming, and writes a `released` record for each in that group.
//!   The reclaim pass ([`crate::Keyspace::reclaim_pass`]) deletes a released version's members
//!   in bounded steps, then its `released` record. Nothing writes a released version again.
//! - A collection is never empty: the write that removes its last member deletes the key.
//! - Encoding moves one way, packed to large (as Redis's), when an entry count or an entry's
//!   length passes the thresholds.

pub mod geo;
pub mod hash;
pub mod list;
pub(crate) mod packed;
pub mod set;
pub mod stream;
pub mod zset;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use crate::error::{Error, Result};
use crate::layout::{self, CorruptRecord};

/// Prefix of member keys.
pub const MEMBERS: u8 = 0x0D;
/// Prefix of collection bookkeeping: the version counter and released versions.
pub const BOOKKEEPING: u8 = 0x0E;
const COUNTER_TAG: u8 = 0x00;
const RELEASED_TAG: u8 = 0x01;

/// The key of member `sub` of collection version `version`.
pub fn member_key(version: u64, sub: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + sub.len());
    k.push(MEMBERS);
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(sub);
    k
}

/// Where a field sorts among its collection's members (never 0: cursor 0 means "start").
pub fn field_hash(field: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(field).max(1)
}

/// The member key of `field` in collection version `version`, ordered by its hash.
pub fn field_key(version: u64, field: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(17 + field.len());
    k.push(MEMBERS);
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(&field_hash(field).to_be_bytes());
    k.extend_from_slice(field);
    k
}

/// The hash and the field of a member key of `version` made by [`field_key`].
pub fn field_of(version: u64, key: &[u8]) -> Option<(u64, &[u8])> {
    let rest = member_of(version, key)?;
    let h = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    Some((h, &rest[8..]))
}

/// `[lower, upper)` of every member key of `version`.
pub fn member_range(version: u64) -> (Vec<u8>, Vec<u8>) {
    let lower = member_key(version, b"");
    let upper = layout::next_prefix(&lower);
    (lower, upper)
}

/// The member part of a member key of `version`.
pub fn member_of(version: u64, key: &[u8]) -> Option<&[u8]> {
    (key.len() >= 9 && key[0] == MEMBERS && key[1..9] == version.to_be_bytes()).then(|| &key[9..])
}

/// The counter's key.
pub fn counter_key() -> Vec<u8> {
    vec![BOOKKEEPING, COUNTER_TAG]
}

/// The `released` record of `version`.
pub fn released_key(version: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(10);
    k.push(BOOKKEEPING);
    k.push(RELEASED_TAG);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// `[lower, upper)` of every `released` record.
pub fn released_range() -> (Vec<u8>, Vec<u8>) {
    (
        vec![BOOKKEEPING, RELEASED_TAG],
        vec![BOOKKEEPING, RELEASED_TAG + 1],
    )
}

/// The version a `released` record names.
pub fn released_version(key: &[u8]) -> Option<u64> {
    match key {
        [BOOKKEEPING, RELEASED_TAG, v @ ..] => v.try_into().ok().map(u64::from_be_bytes),
        _ => None,
    }
}

/// A large collection's header: its version, member count, and how many members were
/// deleted under the version (each deletion left a tombstone among the version's keys, which
/// walks of the members step over until a compaction drops it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u64,
    pub count: u64,
    pub dead: u64,
}

/// Deletions a version carries before a write may move its members to a new one.
pub const REVERSION_MIN_DEAD: u64 = 8;

impl Header {
    /// Bytes of version and count, which every large header starts with.
    pub const LEN: usize = 16;

    /// A header of a new version: no deletion yet.
    pub fn new(version: u64, count: u64) -> Header {
        Header {
            version,
            count,
            dead: 0,
        }
    }

    /// A hash's or a set's header: version and count, then the deletions if any (16 or 24
    /// bytes).
    pub fn decode(payload: &[u8]) -> Result<Header, CorruptRecord> {
        let dead = match payload.get(Self::LEN..) {
            Some([]) => 0,
            Some(d) => d
                .try_into()
                .map(u64::from_le_bytes)
                .map_err(|_| CorruptRecord("collection header"))?,
            None => return Err(CorruptRecord("collection header")),
        };
        let base = Self::decode_base(&payload[..Self::LEN])?;
        Ok(Header { dead, ..base })
    }

    /// Version and count from their 16 bytes (a sorted set keeps its deletions elsewhere).
    pub fn decode_base(payload: &[u8]) -> Result<Header, CorruptRecord> {
        if payload.len() != Self::LEN {
            return Err(CorruptRecord("collection header"));
        }
        let le = |b: &[u8]| b.try_into().map(u64::from_le_bytes).unwrap_or_default();
        Ok(Header::new(le(&payload[..8]), le(&payload[8..16])))
    }

    /// As [`Header::decode`] reads it: the deletions only when there are any, so a header
    /// without is the 16 bytes written before they were counted.
    pub fn encode(&self) -> Vec<u8> {
        let mut h = self.encode_base().to_vec();
        if self.dead > 0 {
            h.extend_from_slice(&self.dead.to_le_bytes());
        }
        h
    }

    /// Version and count.
    pub fn encode_base(&self) -> [u8; Self::LEN] {
        let mut h = [0u8; Self::LEN];
        h[..8].copy_from_slice(&self.version.to_le_bytes());
        h[8..].copy_from_slice(&self.count.to_le_bytes());
        h
    }

    /// A member was deleted under the version.
    pub fn note_deleted(&mut self) {
        self.dead = self.dead.saturating_add(1);
    }

    /// Whether the version holds more tombstones of deleted members than members (and at
    /// least [`REVERSION_MIN_DEAD`]): then [`reversion`] moves the members to a new version,
    /// at a cost of at most as many copies as deletions since the last move.
    pub fn reversion_due(&self) -> bool {
        self.dead >= REVERSION_MIN_DEAD && self.dead > self.count
    }
}

/// Moves the members of `h`'s version to a new version in transaction `io`, and makes `h`
/// name it, with no deletion. The old version is then named by no record once the header is
/// written, so the write observer releases it in the same group and the reclaim pass deletes
/// its members and tombstones later, as for a deleted collection. Deterministic: the new
/// version comes from the counter, the members from the transaction's state, so every node
/// applying the same op moves the same members to the same version. O(members + tombstones).
pub(crate) fn reversion<T: crate::keys::RawWrite + ?Sized>(
    io: &mut T,
    h: &mut Header,
) -> Result<()> {
    let new = next_version(io)?;
    copy_members(io, h.version, new)?;
    h.version = new;
    h.dead = 0;
    Ok(())
}

/// The version named by a large collection's engine record (flags, expiry, header), if it is
/// one: the write observer's view of a record.
pub fn version_of_record(raw: &[u8]) -> Option<u64> {
    let flags = *raw.first()?;
    let (kind, large) = layout::kind_of(flags)?;
    if !large || kind == layout::Kind::String {
        return None;
    }
    let at = if flags & layout::HAS_EXPIRY != 0 {
        9
    } else {
        1
    };
    raw.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
}

/// Takes a new collection version in transaction `io`.
pub(crate) fn next_version<T: crate::keys::RawWrite + ?Sized>(io: &mut T) -> Result<u64> {
    let key = counter_key();
    let v = match io.get_raw(&key)? {
        None => 1,
        Some(b) => {
            let b: [u8; 8] = b[..]
                .try_into()
                .map_err(|_| Error::Corrupt(CorruptRecord("collection version counter")))?;
            u64::from_le_bytes(b)
        }
    };
    io.put_raw(&key, &(v + 1).to_le_bytes());
    Ok(v)
}

/// The packed payload holding the members of the large collection `rec` (a move under a
/// store's prefix, where collections are packed).
pub(crate) fn repack<T: crate::keys::RawRead + ?Sized>(
    k: &mut crate::keys::Keys<'_, T>,
    rec: &layout::Record,
) -> Result<Vec<u8>> {
    match rec.kind {
        layout::Kind::Hash => hash::repack(k, rec),
        layout::Kind::Set => set::repack(k, rec),
        layout::Kind::ZSet => zset::repack(k, rec),
        layout::Kind::List => list::repack(k, rec),
        layout::Kind::Stream => Err(crate::error::StreamError::UnderStore.into()),
        _ => Err(Error::Corrupt(CorruptRecord("unknown collection"))),
    }
}

/// Member keys read from a large collection per engine scan.
pub(crate) const SCAN_CHUNK: usize = 1024;

/// A page of a hash-ordered member family: about `count` entries from cursor `cursor` on (the
/// member hash to resume from; 0 the start), each as its member and its value, and the next
/// page's cursor (0: none). `start(c)` is the first key of the family at hash `c`, `upper` the
/// end of the family, `split` a key's hash and member. A page ends between hashes, never inside
/// one, so a member present from the first page to the last is returned exactly once and no
/// state is kept between calls.
pub(crate) fn hash_page<T: crate::keys::RawRead + ?Sized>(
    k: &mut crate::keys::Keys<'_, T>,
    start: impl Fn(u64) -> Vec<u8>,
    upper: &[u8],
    split: impl Fn(&[u8]) -> Option<(u64, &[u8])>,
    cursor: u64,
    count: usize,
) -> Result<(Vec<(bytes::Bytes, bytes::Bytes)>, u64)> {
    let bad = || Error::Corrupt(CorruptRecord("member key"));
    let count = count.max(1);
    let mut out = Vec::with_capacity(count.min(SCAN_CHUNK));
    let mut from = start(cursor);
    let mut last_hash = None;
    loop {
        // What the page still needs and one more key, whose hash ends it (or continues the
        // last hash): a full chunk past the page would be read for nothing.
        let want = (count.saturating_sub(out.len()) + 1).min(SCAN_CHUNK);
        let chunk = k.io.scan_raw(&from, upper, want)?;
        let n = chunk.len();
        for (key, value) in chunk {
            let (h, member) = split(&key).ok_or_else(bad)?;
            if out.len() >= count && last_hash != Some(h) {
                return Ok((out, h));
            }
            last_hash = Some(h);
            out.push((bytes::Bytes::copy_from_slice(member), value));
            from = [&key[..], &[0]].concat();
        }
        if n < want {
            return Ok((out, 0));
        }
    }
}

/// Copies the members of the large collection whose payload is `payload` under a new version,
/// in transaction `io`; the new payload (the same header but for the version). O(members).
pub(crate) fn copy_large<T: crate::keys::RawWrite + ?Sized>(
    io: &mut T,
    payload: &[u8],
) -> Result<Vec<u8>> {
    // Every large header begins with its version (a list's goes on with its head).
    let old = payload
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or(CorruptRecord("collection header"))?;
    let new = next_version(io)?;
    copy_members(io, old, new)?;
    let mut out = payload.to_vec();
    out[..8].copy_from_slice(&new.to_le_bytes());
    Ok(out)
}

/// Writes every member key of version `old` again under version `new`, in transaction `io`.
fn copy_members<T: crate::keys::RawWrite + ?Sized>(io: &mut T, old: u64, new: u64) -> Result<()> {
    let (mut from, upper) = member_range(old);
    loop {
        let chunk = io.scan_raw(&from, &upper, 1024)?;
        let n = chunk.len();
        for (key, value) in &chunk {
            let sub = member_of(old, key).ok_or(CorruptRecord("member key"))?;
            io.put_raw(&member_key(new, sub), value);
        }
        match chunk.last() {
            Some((key, _)) if n == 1024 => from = [&key[..], &[0]].concat(),
            _ => return Ok(()),
        }
    }
}

/// When a packed collection becomes large: Redis's `*-max-listpack-entries` and
/// `*-max-listpack-value`, settable at run time (CONFIG SET). Encoding is not content: nodes
/// with different thresholds hold the same data and give the same replies, except for
/// OBJECT ENCODING and the order HGETALL (SMEMBERS) returns a hash's fields (a set's members)
/// in.
#[derive(Debug)]
pub struct Encodings {
    hash_max_entries: AtomicUsize,
    hash_max_value: AtomicUsize,
    set_max_intset_entries: AtomicUsize,
    set_max_listpack_entries: AtomicUsize,
    set_max_listpack_value: AtomicUsize,
    zset_max_entries: AtomicUsize,
    zset_max_value: AtomicUsize,
    list_max_size: AtomicI64,
}

impl Default for Encodings {
    fn default() -> Encodings {
        Encodings {
            hash_max_entries: AtomicUsize::new(128),
            hash_max_value: AtomicUsize::new(64),
            set_max_intset_entries: AtomicUsize::new(512),
            set_max_listpack_entries: AtomicUsize::new(128),
            set_max_listpack_value: AtomicUsize::new(64),
            zset_max_entries: AtomicUsize::new(128),
            zset_max_value: AtomicUsize::new(64),
            list_max_size: AtomicI64::new(-2),
        }
    }
}

impl Encodings {
    /// Most fields a packed hash holds.
    pub fn hash_max_entries(&self) -> usize {
        self.hash_max_entries.load(Ordering::Relaxed)
    }

    /// Longest field or value a packed hash holds.
    pub fn hash_max_value(&self) -> usize {
        self.hash_max_value.load(Ordering::Relaxed)
    }

    pub fn set_hash_max_entries(&self, n: usize) {
        self.hash_max_entries.store(n, Ordering::Relaxed);
    }

    pub fn set_hash_max_value(&self, n: usize) {
        self.hash_max_value.store(n, Ordering::Relaxed);
    }

    /// Most members a packed set of integers holds (Redis's intset).
    pub fn set_max_intset_entries(&self) -> usize {
        self.set_max_intset_entries.load(Ordering::Relaxed)
    }

    /// Most members a packed set holds once one is no integer.
    pub fn set_max_listpack_entries(&self) -> usize {
        self.set_max_listpack_entries.load(Ordering::Relaxed)
    }

    /// Longest member a packed set holds once one is no integer.
    pub fn set_max_listpack_value(&self) -> usize {
        self.set_max_listpack_value.load(Ordering::Relaxed)
    }

    pub fn set_set_max_intset_entries(&self, n: usize) {
        self.set_max_intset_entries.store(n, Ordering::Relaxed);
    }

    pub fn set_set_max_listpack_entries(&self, n: usize) {
        self.set_max_listpack_entries.store(n, Ordering::Relaxed);
    }

    pub fn set_set_max_listpack_value(&self, n: usize) {
        self.set_max_listpack_value.store(n, Ordering::Relaxed);
    }

    /// Most members a packed sorted set holds.
    pub fn zset_max_entries(&self) -> usize {
        self.zset_max_entries.load(Ordering::Relaxed)
    }

    /// Longest member a packed sorted set holds.
    pub fn zset_max_value(&self) -> usize {
        self.zset_max_value.load(Ordering::Relaxed)
    }

    pub fn set_zset_max_entries(&self, n: usize) {
        self.zset_max_entries.store(n, Ordering::Relaxed);
    }

    pub fn set_zset_max_value(&self, n: usize) {
        self.zset_max_value.store(n, Ordering::Relaxed);
    }

    /// `list-max-listpack-size`: most elements of a packed list when positive, its size
    /// class when negative (see [`list::packed_fits`]).
    pub fn list_max_size(&self) -> i64 {
        self.list_max_size.load(Ordering::Relaxed)
    }

    pub fn set_list_max_size(&self, n: i64) {
        self.list_max_size.store(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_keys_of_a_version_stay_in_its_range() {
        let (lo, hi) = member_range(7);
        for sub in [&b""[..], b"a", &[0xff; 40][..]] {
            let k = member_key(7, sub);
            assert!(k >= lo && k < hi);
            assert_eq!(member_of(7, &k), Some(sub));
            assert_eq!(member_of(8, &k), None);
        }
        assert!(member_key(8, b"") >= hi);
        assert!(member_key(6, &[0xff; 9]) < lo);
    }

    #[test]
    fn field_keys_sort_by_hash_and_give_their_field_back() {
        let (lo, hi) = member_range(3);
        let k = field_key(3, b"name");
        assert!(k >= lo && k < hi);
        assert_eq!(field_of(3, &k), Some((field_hash(b"name"), &b"name"[..])));
        assert_eq!(field_of(4, &k), None);
        assert!(field_hash(b"") >= 1);
        // The on-disk order depends on this function: it must never change.
        assert_eq!(
            field_hash(b"name"),
            xxhash_rust::xxh3::xxh3_64(b"name").max(1)
        );
    }

    #[test]
    fn headers_and_released_records_round_trip() {
        let h = Header::new(1 << 40, 3);
        assert_eq!(h.encode().len(), Header::LEN);
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        assert!(Header::decode(&h.encode()[..15]).is_err());
        let dead = Header { dead: 9, ..h };
        assert_eq!(dead.encode().len(), 24);
        assert_eq!(Header::decode(&dead.encode()), Ok(dead));
        assert!(Header::decode(&dead.encode()[..20]).is_err());
        assert!(Header::decode(&[dead.encode(), vec![0]].concat()).is_err());
        assert_eq!(released_version(&released_key(99)), Some(99));
        let (lo, hi) = released_range();
        assert!(released_key(0) >= lo && released_key(u64::MAX) < hi);
        assert!(counter_key() < lo);
    }

    #[test]
    fn a_version_is_moved_once_its_tombstones_outnumber_its_members() {
        let h = |count, dead| Header {
            version: 1,
            count,
            dead,
        };
        assert!(!h(0, REVERSION_MIN_DEAD - 1).reversion_due());
        assert!(h(0, REVERSION_MIN_DEAD).reversion_due());
        assert!(!h(100, 100).reversion_due());
        assert!(h(100, 101).reversion_due());
        let mut x = h(1, u64::MAX);
        x.note_deleted();
        assert_eq!(x.dead, u64::MAX);
    }

    #[test]
    fn the_observer_reads_versions_from_large_records_only() {
        let rec = |kind, large, at| {
            let (h, n) = layout::header(kind, large, at);
            [
                &h[..n],
                &Header {
                    version: 42,
                    count: 1,
                    dead: 5,
                }
                .encode()[..],
            ]
            .concat()
        };
        use layout::Kind;
        assert_eq!(version_of_record(&rec(Kind::Hash, true, None)), Some(42));
        assert_eq!(version_of_record(&rec(Kind::Hash, true, Some(5))), Some(42));
        assert_eq!(version_of_record(&rec(Kind::Hash, false, None)), None);
        assert_eq!(version_of_record(&rec(Kind::String, false, None)), None);
        assert_eq!(version_of_record(b""), None);
    }
}
