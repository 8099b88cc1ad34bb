//! Lists: reads over either encoding, and the writes of the push, pop, set, insert, remove,
//! trim and move commands.
//!
//! A packed list holds its elements in its record, head first, while it stays within
//! `list-max-listpack-size`. A large list keeps each element at a key of its own, addressed by
//! position, so that LINDEX, LSET and pushing or popping at either end touch one key:
//!
//! ```text
//! header        version (u64 LE) | count (u64 LE) | head (u64 LE)
//! element key   0x0D | version (u64 BE) | index (u64 BE)  -> element
//! ```
//!
//! Element `i` (0 the head) is at index `head + i`. A new list's head is 2^63, so either end can
//! grow by 2^63 pushes. Invariant: the indexes `head .. head + count` hold the elements and no
//! other key of the version exists. LINSERT shifts the shorter side by one index; LREM and
//! LINSERT read the list (O(N), as Redis's are); LTRIM deletes what it cuts without reading it.

use bytes::Bytes;

use super::{member_key, member_of, next_version, packed, SCAN_CHUNK};
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value_len, Keys, RawRead, RawWrite};
use crate::layout::{CorruptRecord, Kind, Record};

/// The head index of a new large list: the middle of the index space.
const FIRST_HEAD: u64 = 1 << 63;

/// A large list's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListHeader {
    pub version: u64,
    pub count: u64,
    pub head: u64,
}

impl ListHeader {
    pub const LEN: usize = 24;

    pub fn decode(payload: &[u8]) -> Result<ListHeader, CorruptRecord> {
        if payload.len() != Self::LEN {
            return Err(CorruptRecord("list header"));
        }
        let le = |b: &[u8]| b.try_into().map(u64::from_le_bytes).unwrap_or_default();
        let h = ListHeader {
            version: le(&payload[..8]),
            count: le(&payload[8..16]),
            head: le(&payload[16..24]),
        };
        if h.head.checked_add(h.count).is_none() {
            return Err(CorruptRecord("list header"));
        }
        Ok(h)
    }

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut h = [0u8; Self::LEN];
        h[..8].copy_from_slice(&self.version.to_le_bytes());
        h[8..16].copy_from_slice(&self.count.to_le_bytes());
        h[16..].copy_from_slice(&self.head.to_le_bytes());
        h
    }

    /// The key of element `i` (0 the head).
    fn key(&self, i: u64) -> Vec<u8> {
        element_key(self.version, self.head.wrapping_add(i))
    }
}

/// The key of the element at `index` of list version `version`.
pub fn element_key(version: u64, index: u64) -> Vec<u8> {
    member_key(version, &index.to_be_bytes())
}

/// A list's elements as its record holds them.
#[derive(Debug)]
enum Items {
    /// In the record, head first.
    Packed(Vec<Bytes>),
    /// Keys of a collection version.
    Large(ListHeader),
}

/// A live list, as one state holds it.
#[derive(Debug)]
pub struct List {
    rec: Record,
    items: Items,
}

/// Redis's index sanitising for LRANGE and LTRIM: the span `start..=stop` of a list of `len`
/// elements, `None` when empty.
pub fn span(len: u64, start: i64, stop: i64) -> Option<(u64, u64)> {
    super::zset::rank_span(len, start, stop)
}

/// Element `index` (negative: from the tail) of a list of `len`, if in range.
pub fn position(len: u64, index: i64) -> Option<u64> {
    let i = if index < 0 {
        (len as i128) + i128::from(index)
    } else {
        i128::from(index)
    };
    (0..len as i128).contains(&i).then_some(i as u64)
}

/// Spans of at most this many elements are read by point reads.
const POINT_READS: u64 = 4;

/// Elements `from..to` of a large list, in order.
fn read_span<T: RawRead + ?Sized>(
    io: &mut T,
    h: &ListHeader,
    from: u64,
    to: u64,
) -> Result<Vec<Bytes>> {
    let bad = || Error::Corrupt(CorruptRecord("list element"));
    if to - from <= POINT_READS {
        // A pop or a short range: point reads, which skip an iterator's set-up and the
        // deletions popped elements left next to these.
        return (from..to)
            .map(|i| io.get_raw(&h.key(i))?.ok_or_else(bad))
            .collect();
    }
    let mut out = Vec::with_capacity((to - from).min(1 << 20) as usize);
    // Bounded by the span itself, not the version: past the tail lie the deletions of the
    // elements RPOP took, which a scan to the version's end would walk over at every pop.
    let upper = h.key(to);
    let mut lower = h.key(from);
    while (out.len() as u64) < to - from {
        let want = ((to - from) as usize - out.len()).min(SCAN_CHUNK);
        let chunk = io.scan_raw(&lower, &upper, want)?;
        let n = chunk.len();
        for (key, value) in chunk {
            member_of(h.version, &key).ok_or_else(bad)?;
            lower = [&key[..], &[0]].concat();
            out.push(value);
        }
        if n < want {
            break;
        }
    }
    if out.len() as u64 != to - from {
        return Err(bad());
    }
    Ok(out)
}

impl List {
    /// The list at `key`; `None` if there is no key, [`Error::WrongType`] if it holds
    /// something else. A large list pins the reads that follow to one state.
    pub fn load<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, key: &[u8]) -> Result<Option<List>> {
        let Some(rec) = k.get_kind(key, Kind::List)? else {
            return Ok(None);
        };
        if !rec.large {
            return Self::from_record(rec).map(Some);
        }
        k.io.pin();
        match k.get_kind(key, Kind::List)? {
            Some(rec) => Self::from_record(rec).map(Some),
            None => Ok(None),
        }
    }

    fn from_record(rec: Record) -> Result<List> {
        let items = if rec.large {
            Items::Large(ListHeader::decode(&rec.value)?)
        } else {
            Items::Packed(packed::decode(&rec.value)?)
        };
        Ok(List { rec, items })
    }

    /// Whether it has no element: never, for a list that exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many elements it has.
    pub fn len(&self) -> u64 {
        match &self.items {
            Items::Packed(p) => p.len() as u64,
            Items::Large(h) => h.count,
        }
    }

    /// Whether its elements are separate keys.
    pub fn is_large(&self) -> bool {
        self.rec.large
    }

    /// Element `i` (0 the head; in range).
    pub fn get<T: RawRead + ?Sized>(&self, k: &mut Keys<'_, T>, i: u64) -> Result<Option<Bytes>> {
        match &self.items {
            Items::Packed(p) => Ok(p.get(i as usize).cloned()),
            Items::Large(h) if i < h.count => Ok(k.io.get_raw(&h.key(i))?),
            Items::Large(_) => Ok(None),
        }
    }

    /// Elements `from..=to` (in range), head first.
    pub fn range<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        from: u64,
        to: u64,
    ) -> Result<Vec<Bytes>> {
        match &self.items {
            Items::Packed(p) => Ok(p[from as usize..=to as usize].to_vec()),
            Items::Large(h) => read_span(k.io, h, from, to + 1),
        }
    }

    /// Every element, head first.
    pub fn all<T: RawRead + ?Sized>(&self, k: &mut Keys<'_, T>) -> Result<Vec<Bytes>> {
        match self.len() {
            0 => Ok(Vec::new()),
            n => self.range(k, 0, n - 1),
        }
    }

    /// LPOS: the positions of elements equal to `element`, skipping `rank - 1` matches
    /// (negative: searching from the tail), at most `count` of them (0: all), comparing at
    /// most `maxlen` elements (0: all).
    pub fn positions<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        element: &[u8],
        rank: i64,
        count: u64,
        maxlen: u64,
    ) -> Result<Vec<u64>> {
        let len = self.len();
        let limit = if maxlen == 0 { len } else { maxlen.min(len) };
        let mut skip = rank.unsigned_abs() - 1;
        let mut out = Vec::new();
        let mut seen = 0u64;
        while seen < limit {
            let n = (limit - seen).min(SCAN_CHUNK as u64);
            let (from, to) = if rank > 0 {
                (seen, seen + n - 1)
            } else {
                (len - seen - n, len - seen - 1)
            };
            let mut chunk = self.range(k, from, to)?;
            if rank < 0 {
                chunk.reverse();
            }
            for (j, e) in chunk.iter().enumerate() {
                if &e[..] != element {
                    continue;
                }
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                let at = if rank > 0 {
                    from + j as u64
                } else {
                    to - j as u64
                };
                out.push(at);
                if count != 0 && out.len() as u64 >= count {
                    return Ok(out);
                }
            }
            seen += n;
        }
        Ok(out)
    }
}

/// When a list stops being packed: Redis's `list-max-listpack-size`, a positive count of
/// elements or, negative, a size class (-1 4 KiB ... -5 64 KiB) of the packed payload.
pub fn packed_fits(max_size: i64, count: usize, bytes: usize) -> bool {
    if max_size > 0 {
        count as u64 <= max_size as u64
    } else {
        let class = max_size.unsigned_abs().clamp(1, 5) - 1;
        bytes <= 4096 << class
    }
}

/// Writes of one list inside a merger transaction.
pub(crate) struct Writer {
    old: Option<Record>,
    items: Items,
    may_grow: bool,
    max_size: i64,
}

impl Writer {
    /// The list at `key` (`None` if it does not exist).
    pub(crate) fn open<T: RawWrite + ?Sized>(
        k: &mut Keys<'_, T>,
        max_size: i64,
        key: &[u8],
    ) -> Result<Option<Writer>> {
        let may_grow = k.in_default_store(key);
        Ok(List::load(k, key)?.map(|l| Writer {
            old: Some(l.rec),
            items: l.items,
            may_grow,
            max_size,
        }))
    }

    /// The list at `key`, or a new empty one.
    pub(crate) fn open_or_new<T: RawWrite + ?Sized>(
        k: &mut Keys<'_, T>,
        max_size: i64,
        key: &[u8],
    ) -> Result<Writer> {
        check_key(key)?;
        let may_grow = k.in_default_store(key);
        Ok(Self::open(k, max_size, key)?.unwrap_or(Writer {
            old: None,
            items: Items::Packed(Vec::new()),
            may_grow,
            max_size,
        }))
    }

    pub(crate) fn len(&self) -> u64 {
        match &self.items {
            Items::Packed(p) => p.len() as u64,
            Items::Large(h) => h.count,
        }
    }

    pub(crate) fn all<T: RawWrite + ?Sized>(&self, k: &mut Keys<'_, T>) -> Result<Vec<Bytes>> {
        match &self.items {
            Items::Packed(p) => Ok(p.clone()),
            Items::Large(h) => read_span(k.io, h, 0, h.count),
        }
    }

    /// Pushes `items` one by one at the head (`left`) or the tail.
    pub(crate) fn push<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        left: bool,
        items: &[Bytes],
    ) -> Result<()> {
        for i in items {
            check_value_len(i.len())?;
        }
        match &mut self.items {
            Items::Packed(p) => {
                if left {
                    let mut front: Vec<Bytes> = items.iter().rev().cloned().collect();
                    front.append(p);
                    *p = front;
                } else {
                    p.extend(items.iter().cloned());
                }
            }
            Items::Large(h) => {
                for i in items {
                    if left {
                        h.head = h.head.checked_sub(1).ok_or(Error::Overflow)?;
                        k.io.put_raw(&h.key(0), i);
                    } else {
                        h.head.checked_add(h.count + 1).ok_or(Error::Overflow)?;
                        k.io.put_raw(&h.key(h.count), i);
                    }
                    h.count += 1;
                }
            }
        }
        Ok(())
    }

    /// Removes up to `n` elements from the head (`left`) or the tail, in the order popped.
    pub(crate) fn pop<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        left: bool,
        n: u64,
    ) -> Result<Vec<Bytes>> {
        let n = n.min(self.len());
        match &mut self.items {
            Items::Packed(p) => {
                let n = n as usize;
                Ok(if left {
                    p.drain(..n).collect()
                } else {
                    p.drain(p.len() - n..).rev().collect()
                })
            }
            Items::Large(h) => {
                let (from, to) = if left { (0, n) } else { (h.count - n, h.count) };
                let mut out = read_span(k.io, h, from, to)?;
                for i in from..to {
                    k.io.delete_raw(&h.key(i));
                }
                if left {
                    h.head += n;
                } else {
                    out.reverse();
                }
                h.count -= n;
                Ok(out)
            }
        }
    }

    /// Replaces element `i` (in range).
    pub(crate) fn set<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        i: u64,
        value: &Bytes,
    ) -> Result<()> {
        check_value_len(value.len())?;
        match &mut self.items {
            Items::Packed(p) => p[i as usize] = value.clone(),
            Items::Large(h) => k.io.put_raw(&h.key(i), value),
        }
        Ok(())
    }

    /// Inserts `value` so that it becomes element `at` (0 ..= len), shifting the shorter side.
    pub(crate) fn insert<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        at: u64,
        value: &Bytes,
    ) -> Result<()> {
        check_value_len(value.len())?;
        match &mut self.items {
            Items::Packed(p) => p.insert(at as usize, value.clone()),
            Items::Large(h) => {
                if at < h.count - at {
                    let moved = read_span(k.io, h, 0, at)?;
                    h.head = h.head.checked_sub(1).ok_or(Error::Overflow)?;
                    for (i, e) in moved.iter().enumerate() {
                        k.io.put_raw(&h.key(i as u64), e);
                    }
                } else {
                    h.head.checked_add(h.count + 1).ok_or(Error::Overflow)?;
                    let moved = read_span(k.io, h, at, h.count)?;
                    for (i, e) in moved.iter().enumerate() {
                        k.io.put_raw(&h.key(at + 1 + i as u64), e);
                    }
                }
                k.io.put_raw(&h.key(at), value);
                h.count += 1;
            }
        }
        Ok(())
    }

    /// Makes the list `items` (same head; keys past the new end are deleted).
    pub(crate) fn replace_all<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        items: Vec<Bytes>,
    ) -> Result<()> {
        match &mut self.items {
            Items::Packed(p) => *p = items,
            Items::Large(h) => {
                let new = items.len() as u64;
                for (i, e) in items.iter().enumerate() {
                    k.io.put_raw(&h.key(i as u64), e);
                }
                for i in new..h.count {
                    k.io.delete_raw(&h.key(i));
                }
                h.count = new;
            }
        }
        Ok(())
    }

    /// Keeps elements `from..=to` (in range), or none.
    pub(crate) fn trim<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        keep: Option<(u64, u64)>,
    ) {
        let len = self.len();
        let (from, to) = keep.map_or((len, len), |(a, b)| (a, b + 1));
        match &mut self.items {
            Items::Packed(p) => {
                p.truncate(to as usize);
                p.drain(..(from.min(to)) as usize);
            }
            Items::Large(h) => {
                for i in (0..from.min(h.count)).chain(to..h.count) {
                    k.io.delete_raw(&h.key(i));
                }
                if from < to {
                    h.head += from;
                    h.count = to - from;
                } else {
                    h.count = 0;
                }
            }
        }
    }

    fn outgrown(&self) -> bool {
        let Items::Packed(p) = &self.items else {
            return false;
        };
        if !self.may_grow {
            return false;
        }
        let bytes: usize = p.iter().map(|e| e.len() + 2).sum();
        !packed_fits(self.max_size, p.len(), bytes)
    }

    /// Writes the list's record (and its elements when it becomes large); deletes the key if
    /// no element is left.
    pub(crate) fn finish<T: RawWrite + ?Sized>(
        mut self,
        k: &mut Keys<'_, T>,
        key: &[u8],
    ) -> Result<()> {
        if self.outgrown() {
            if let Items::Packed(p) = &self.items {
                let h = ListHeader {
                    version: next_version(k.io)?,
                    count: p.len() as u64,
                    head: FIRST_HEAD,
                };
                for (i, e) in p.iter().enumerate() {
                    k.io.put_raw(&h.key(i as u64), e);
                }
                self.items = Items::Large(h);
            }
        }
        let at = self.old.as_ref().and_then(|r| r.expire_at_ms);
        if self.len() == 0 {
            if self.old.is_some() {
                k.remove(key)?;
            }
            return Ok(());
        }
        match &self.items {
            Items::Packed(p) => {
                let payload = packed::encode(p.iter().map(|e| &e[..]));
                check_value_len(payload.len())?;
                k.put_record(key, self.old.as_ref(), Kind::List, false, &payload, at);
            }
            Items::Large(h) => {
                k.put_record(key, self.old.as_ref(), Kind::List, true, &h.encode(), at);
            }
        }
        Ok(())
    }
}

/// The packed payload of a large list's elements (for a move under a store's prefix).
pub(crate) fn repack<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, rec: &Record) -> Result<Vec<u8>> {
    let l = List::from_record(rec.clone())?;
    let items = l.all(k)?;
    Ok(packed::encode(items.iter().map(|e| &e[..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_refuse_overflowing_spans() {
        let h = ListHeader {
            version: 9,
            count: 3,
            head: FIRST_HEAD - 2,
        };
        assert_eq!(ListHeader::decode(&h.encode()), Ok(h));
        assert!(ListHeader::decode(&h.encode()[..16]).is_err());
        let bad = ListHeader {
            version: 1,
            count: 2,
            head: u64::MAX,
        };
        assert!(ListHeader::decode(&bad.encode()).is_err());
    }

    #[test]
    fn element_keys_sort_by_index_within_their_version() {
        let (lo, hi) = super::super::member_range(4);
        let a = element_key(4, FIRST_HEAD - 1);
        let b = element_key(4, FIRST_HEAD);
        assert!(lo <= a && a < b && b < hi);
    }

    #[test]
    fn positions_count_from_either_end() {
        assert_eq!(position(3, 0), Some(0));
        assert_eq!(position(3, -1), Some(2));
        assert_eq!(position(3, -3), Some(0));
        assert_eq!(position(3, -4), None);
        assert_eq!(position(3, 3), None);
        assert_eq!(position(0, 0), None);
        assert_eq!(position(3, i64::MIN), None);
    }

    #[test]
    fn size_classes_follow_redis() {
        assert!(packed_fits(-2, 1000, 8192));
        assert!(!packed_fits(-2, 1, 8193));
        assert!(packed_fits(-1, 1, 4096));
        assert!(packed_fits(-9, 1, 65536));
        assert!(!packed_fits(-9, 1, 65537));
        assert!(packed_fits(3, 3, 1 << 20));
        assert!(!packed_fits(3, 4, 4));
    }
}
