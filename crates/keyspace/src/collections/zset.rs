//! Sorted sets: reads by member, rank, score and member range over either encoding, and the
//! writes of ZADD, ZREM, the range removals and the pops, which keep a set packed while it is
//! small and make it large once it is not.
//!
//! ```text
//! packed        items member, score (f64 LE, 8 bytes), ... in (score, member) order
//! large         header (version, count) [| bounds], and two key families under the version:
//!   score       0x0D | version | 0x00 | h (u64 BE) | member               -> score (f64 LE)
//!   order       0x0D | version | 0x01 | sortable score (8 bytes) | member -> empty
//!                                                               (-0: the score, f64 LE)
//! ```
//!
//! The sortable score is the double's bits, BE, with the sign bit flipped for positives and
//! every bit inverted for negatives, so byte order is numeric order; -0 is written as 0 (Redis
//! ranks them equal and orders such members by member), and its order entry keeps the exact
//! score as its value. Members of equal score sort by their bytes, as Redis's skiplist does.
//!
//! Invariant: a large set has one score key and one order key per member, with the same
//! score; the header's count is their number. Reads by rank walk the order keys from one end
//! (O(rank)); reads by score seek to the score.
//!
//! Invariant: every order key below the header's low bound, and above its high bound, is
//! deleted. Pops move a bound past the keys they delete, so the next pop does not walk their
//! deletions again (the engine keeps them until a compaction drops them); a member written
//! beyond a bound moves it back to its key.

use std::cmp::Ordering;

use bytes::Bytes;

use super::{field_hash, member_key, next_version, packed, Encodings, Header};
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value_len, Keys, RawRead, RawWrite};
use crate::layout::{self, CorruptRecord, Kind, Record};
use crate::op::{Aggregate, Combine, LateError, LexBound, LexRange, ScoreRange, ZAddFlags, ZRange};
use crate::value::Score;

/// Keys read from a large set per engine scan, at most; a walk's first scan reads
/// [`FIRST_CHUNK`] and each next one four times more, so a pop or a short range reads what it
/// needs rather than a whole chunk.
const SCAN_CHUNK: usize = 512;
const FIRST_CHUNK: usize = 4;
/// Longest bound kept in a header: a longer one is cut (the low bound to a prefix, the high
/// one to the key after that prefix), which only loosens it.
const BOUND_MAX: usize = 64;
const SCORES: u8 = 0x00;
const ORDER: u8 = 0x01;

/// The bytes of `score` that sort as the score does (-0 as 0).
pub fn sortable(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let s = if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    };
    s.to_be_bytes()
}

/// The score `sortable` gave these bytes of.
pub fn from_sortable(b: [u8; 8]) -> f64 {
    let s = u64::from_be_bytes(b);
    let bits = if s >> 63 == 1 { s ^ (1 << 63) } else { !s };
    f64::from_bits(bits)
}

/// The score key of `member` in version `version`.
pub fn score_key(version: u64, member: &[u8]) -> Vec<u8> {
    let mut sub = Vec::with_capacity(9 + member.len());
    sub.push(SCORES);
    sub.extend_from_slice(&field_hash(member).to_be_bytes());
    sub.extend_from_slice(member);
    member_key(version, &sub)
}

/// The order key of `member` with `score` in version `version`.
pub fn order_key(version: u64, score: f64, member: &[u8]) -> Vec<u8> {
    let mut sub = Vec::with_capacity(9 + member.len());
    sub.push(ORDER);
    sub.extend_from_slice(&sortable(score));
    sub.extend_from_slice(member);
    member_key(version, &sub)
}

fn family(version: u64, tag: u8) -> (Vec<u8>, Vec<u8>) {
    let lower = member_key(version, &[tag]);
    let upper = layout::next_prefix(&lower);
    (lower, upper)
}

fn bad_member() -> Error {
    Error::Corrupt(CorruptRecord("sorted set member key"))
}

fn decode_score(b: &[u8]) -> Result<f64> {
    let b: [u8; 8] = b.try_into().map_err(|_| bad_member())?;
    let s = f64::from_le_bytes(b);
    if s.is_nan() {
        return Err(bad_member());
    }
    Ok(s)
}

/// The score and member of an order entry of `version`.
fn order_entry(version: u64, key: &[u8], value: &[u8]) -> Result<(f64, Bytes)> {
    let rest = super::member_of(version, key).ok_or_else(bad_member)?;
    match rest {
        [ORDER, s @ ..] if s.len() >= 8 => {
            let score = if value.is_empty() {
                from_sortable(s[..8].try_into().map_err(|_| bad_member())?)
            } else {
                decode_score(value)?
            };
            Ok((score, Bytes::copy_from_slice(&s[8..])))
        }
        _ => Err(bad_member()),
    }
}

/// A large set's record: the collection header's version and count, then, if either bound
/// is set or a member was deleted under the version, a packed payload of the bounds of its
/// live order keys (see the module's invariant), `low` and `high`, each the order key's bytes
/// after its family prefix (sortable score and member; empty: no bound), and the deletions
/// (u64 LE) as a third item when there are any.
#[derive(Debug, Clone, PartialEq)]
struct Large {
    h: Header,
    low: Option<Vec<u8>>,
    high: Option<Vec<u8>>,
}

impl Large {
    fn new(h: Header) -> Large {
        Large {
            h,
            low: None,
            high: None,
        }
    }

    fn decode(payload: &Bytes) -> Result<Large> {
        if payload.len() < Header::LEN {
            return Err(Error::Corrupt(CorruptRecord("sorted set header")));
        }
        let mut h = Header::decode_base(&payload[..Header::LEN])?;
        if payload.len() == Header::LEN {
            return Ok(Large::new(h));
        }
        let tail = packed::decode(&payload.slice(Header::LEN..))?;
        let bad = || Error::Corrupt(CorruptRecord("sorted set header"));
        let (low, high) = match &tail[..] {
            [low, high] => (low, high),
            [low, high, dead] => {
                let dead: [u8; 8] = dead[..].try_into().map_err(|_| bad())?;
                h.dead = u64::from_le_bytes(dead);
                (low, high)
            }
            _ => return Err(bad()),
        };
        let bound = |b: &Bytes| (!b.is_empty()).then(|| b.to_vec());
        Ok(Large {
            h,
            low: bound(low),
            high: bound(high),
        })
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = self.h.encode_base().to_vec();
        let low = self.low.as_deref().unwrap_or_default();
        let high = self.high.as_deref().unwrap_or_default();
        if self.h.dead > 0 {
            let dead = self.h.dead.to_le_bytes();
            out.extend_from_slice(&packed::encode([low, high, &dead[..]]));
        } else if self.low.is_some() || self.high.is_some() {
            out.extend_from_slice(&packed::encode([low, high]));
        }
        out
    }

    /// The order keys that may be live: `[lower, upper)`.
    fn live_order_keys(&self) -> (Vec<u8>, Vec<u8>) {
        let (mut lower, upper) = family(self.h.version, ORDER);
        let upper = match &self.high {
            // The first key after the bound.
            Some(high) => [&lower[..], high, &[0]].concat(),
            None => upper,
        };
        if let Some(low) = &self.low {
            lower.extend_from_slice(low);
        }
        (lower, upper)
    }

    /// A member was written at order key `key`: the bounds take it in.
    fn widen(&mut self, key: &[u8]) {
        let suffix = &key[member_key(self.h.version, &[ORDER]).len()..];
        if self.low.as_deref().is_some_and(|low| suffix < low) {
            self.low = Some(suffix[..suffix.len().min(BOUND_MAX)].to_vec());
        }
        if self.high.as_deref().is_some_and(|high| suffix > high) {
            self.high = high_bound(suffix);
        }
    }

    /// Every order key up to `key` (`max`: from `key` up) was deleted.
    fn cut(&mut self, key: &[u8], max: bool) {
        let suffix = &key[member_key(self.h.version, &[ORDER]).len()..];
        if max {
            self.high = high_bound(suffix);
        } else {
            self.low = Some(suffix[..suffix.len().min(BOUND_MAX)].to_vec());
        }
    }
}

/// A high bound at or above `suffix`, at most [`BOUND_MAX`] bytes (none if a cut one would
/// bound nothing).
fn high_bound(suffix: &[u8]) -> Option<Vec<u8>> {
    if suffix.len() <= BOUND_MAX {
        return Some(suffix.to_vec());
    }
    Some(layout::next_prefix(&suffix[..BOUND_MAX])).filter(|b| !b.is_empty())
}

/// (score, member) order, Redis's: scores numerically (-0 equals 0), then member bytes.
fn cmp_entry(a: (f64, &[u8]), b: (f64, &[u8])) -> Ordering {
    a.0.partial_cmp(&b.0)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.1.cmp(b.1))
}

impl ScoreRange {
    /// Whether `s` is at or past the lower bound.
    pub fn above_min(&self, s: f64) -> bool {
        if self.min_ex {
            s > self.min.0
        } else {
            s >= self.min.0
        }
    }

    /// Whether `s` is at or before the upper bound.
    pub fn below_max(&self, s: f64) -> bool {
        if self.max_ex {
            s < self.max.0
        } else {
            s <= self.max.0
        }
    }

    /// Whether no score can be in it.
    pub fn is_empty(&self) -> bool {
        self.min.0 > self.max.0 || (self.min.0 == self.max.0 && (self.min_ex || self.max_ex))
    }
}

/// Redis's `sdscmplex`: `-` before and `+` after everything, members by bytes.
fn cmp_lex(a: &LexBound, b: &LexBound) -> Ordering {
    use LexBound::*;
    match (a, b) {
        (Min, Min) | (Max, Max) => Ordering::Equal,
        (Min, _) | (_, Max) => Ordering::Less,
        (Max, _) | (_, Min) => Ordering::Greater,
        (Incl(x) | Excl(x), Incl(y) | Excl(y)) => x.cmp(y),
    }
}

fn exclusive(b: &LexBound) -> bool {
    !matches!(b, LexBound::Incl(_))
}

impl LexRange {
    /// Whether `m` is at or past the lower bound.
    pub fn above_min(&self, m: &[u8]) -> bool {
        let c = cmp_lex(&LexBound::Incl(Bytes::copy_from_slice(m)), &self.min);
        if exclusive(&self.min) {
            c == Ordering::Greater
        } else {
            c != Ordering::Less
        }
    }

    /// Whether `m` is at or before the upper bound.
    pub fn below_max(&self, m: &[u8]) -> bool {
        let c = cmp_lex(&LexBound::Incl(Bytes::copy_from_slice(m)), &self.max);
        if exclusive(&self.max) {
            c == Ordering::Less
        } else {
            c != Ordering::Greater
        }
    }

    /// Whether no member can be in it.
    pub fn is_empty(&self) -> bool {
        let c = cmp_lex(&self.min, &self.max);
        c == Ordering::Greater
            || (c == Ordering::Equal && (exclusive(&self.min) || exclusive(&self.max)))
    }
}

/// Where a walk starts.
enum From {
    /// At the first (last, walking backwards) member.
    End,
    /// At the first member of score `s` or more (backwards: the last of `s` or less).
    Score(f64),
}

/// A sorted set's members as its record holds them.
#[derive(Debug, Clone)]
enum Items {
    /// In the record, in (score, member) order.
    Packed(Vec<(Bytes, f64)>),
    /// Keys of a collection version.
    Large(Large),
}

impl Items {
    fn len(&self) -> u64 {
        match self {
            Items::Packed(p) => p.len() as u64,
            Items::Large(l) => l.h.count,
        }
    }

    fn score<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        member: &[u8],
    ) -> Result<Option<f64>> {
        match self {
            Items::Packed(p) => Ok(p.iter().find(|(m, _)| m == member).map(|(_, s)| *s)),
            Items::Large(l) => match k.io.get_raw(&score_key(l.h.version, member))? {
                Some(v) => decode_score(&v).map(Some),
                None => Ok(None),
            },
        }
    }

    /// Calls `f` on each member from `from` on, in order (`rev`: backwards), until it
    /// returns false.
    fn walk<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        from: From,
        rev: bool,
        mut f: impl FnMut(&Bytes, f64) -> bool,
    ) -> Result<()> {
        let h = match self {
            Items::Packed(p) => {
                let at = match from {
                    From::End if rev => p.len(),
                    From::End => 0,
                    From::Score(s) if rev => p.partition_point(|(_, x)| *x <= s),
                    From::Score(s) => p.partition_point(|(_, x)| *x < s),
                };
                if rev {
                    for (m, s) in p[..at].iter().rev() {
                        if !f(m, *s) {
                            break;
                        }
                    }
                } else {
                    for (m, s) in &p[at..] {
                        if !f(m, *s) {
                            break;
                        }
                    }
                }
                return Ok(());
            }
            Items::Large(l) => l,
        };
        let (lower, upper) = h.live_order_keys();
        let (mut lower, mut upper) = match from {
            From::End => (lower, upper),
            From::Score(s) => {
                let at = [&family(h.h.version, ORDER).0[..], &sortable(s)[..]].concat();
                if rev {
                    (lower, layout::next_prefix(&at).min(upper))
                } else {
                    (at.max(lower), upper)
                }
            }
        };
        if lower >= upper {
            return Ok(());
        }
        let mut want = FIRST_CHUNK;
        loop {
            let chunk = if rev {
                k.io.scan_raw_rev(&lower, &upper, want)?
            } else {
                k.io.scan_raw(&lower, &upper, want)?
            };
            let n = chunk.len();
            for (key, value) in &chunk {
                let (s, m) = order_entry(h.h.version, key, value)?;
                if !f(&m, s) {
                    return Ok(());
                }
            }
            match chunk.last() {
                Some((key, _)) if n == want => {
                    if rev {
                        upper = key.clone();
                    } else {
                        lower = [&key[..], &[0]].concat();
                    }
                    want = (want * 4).min(SCAN_CHUNK);
                }
                _ => return Ok(()),
            }
        }
    }

    /// Members from rank `start` to `stop` (both within the set, `start <= stop`), counted
    /// from the highest scores when `rev`.
    fn by_rank<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        start: u64,
        stop: u64,
        rev: bool,
    ) -> Result<Vec<(Bytes, f64)>> {
        if let Items::Packed(p) = self {
            let (a, b) = (
                start as usize,
                (stop as usize).min(p.len().saturating_sub(1)),
            );
            if p.is_empty() || a > b {
                return Ok(Vec::new());
            }
            return Ok(if rev {
                p[p.len() - 1 - b..p.len() - a]
                    .iter()
                    .rev()
                    .cloned()
                    .collect()
            } else {
                p[a..=b].to_vec()
            });
        }
        let mut out = Vec::new();
        let mut i = 0u64;
        self.walk(k, From::End, rev, |m, s| {
            if i >= start {
                out.push((m.clone(), s));
            }
            i += 1;
            i <= stop
        })?;
        Ok(out)
    }

    /// Members in `range`, in order (`rev`: backwards), skipping `offset` and at most
    /// `limit` of them (`None`: all).
    fn by_score<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        range: &ScoreRange,
        rev: bool,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Vec<(Bytes, f64)>> {
        let mut out = Vec::new();
        if range.is_empty() || limit == Some(0) {
            return Ok(out);
        }
        let (from, mut skip) = (
            From::Score(if rev { range.max.0 } else { range.min.0 }),
            offset,
        );
        self.walk(k, from, rev, |m, s| {
            let (inside, past) = if rev {
                (range.below_max(s), !range.above_min(s))
            } else {
                (range.above_min(s), !range.below_max(s))
            };
            if past {
                return false;
            }
            if !inside {
                return true;
            }
            if skip > 0 {
                skip -= 1;
                return true;
            }
            out.push((m.clone(), s));
            limit.is_none_or(|l| (out.len() as u64) < l)
        })?;
        Ok(out)
    }

    /// Members in `range` by member, as Redis walks them: from the first member (backwards:
    /// the last) in range, while they stay in range.
    fn by_lex<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        range: &LexRange,
        rev: bool,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Vec<(Bytes, f64)>> {
        let mut out = Vec::new();
        if range.is_empty() || limit == Some(0) {
            return Ok(out);
        }
        let (mut started, mut skip) = (false, offset);
        self.walk(k, From::End, rev, |m, s| {
            let (start, stay) = if rev {
                (range.below_max(m), range.above_min(m))
            } else {
                (range.above_min(m), range.below_max(m))
            };
            if !started {
                if !start {
                    return true;
                }
                started = true;
            }
            if !stay {
                return false;
            }
            if skip > 0 {
                skip -= 1;
                return true;
            }
            out.push((m.clone(), s));
            limit.is_none_or(|l| (out.len() as u64) < l)
        })?;
        Ok(out)
    }

    /// The members `range` covers, in order.
    fn in_range<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        range: &ZRange,
    ) -> Result<Vec<(Bytes, f64)>> {
        match range {
            ZRange::Rank(start, stop) => match rank_span(self.len(), *start, *stop) {
                Some((a, b)) => self.by_rank(k, a, b, false),
                None => Ok(Vec::new()),
            },
            ZRange::Score(r) => self.by_score(k, r, false, 0, None),
            ZRange::Lex(r) => self.by_lex(k, r, false, 0, None),
        }
    }
}

/// Redis's rank sanitising: negative ranks count from the end; `None` when nothing is in
/// `start..=stop` of a set of `len` members.
pub fn rank_span(len: u64, start: i64, stop: i64) -> Option<(u64, u64)> {
    let len = len as i64;
    let start = if start < 0 { len + start } else { start }.max(0);
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as u64, stop.min(len - 1) as u64))
}

fn decode_packed(payload: &Bytes) -> Result<Vec<(Bytes, f64)>> {
    let items = packed::decode(payload)?;
    if !items.len().is_multiple_of(2) {
        return Err(CorruptRecord("packed sorted set").into());
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(m), Some(s)) = (it.next(), it.next()) {
        let s = decode_score(&s).map_err(|_| CorruptRecord("packed sorted set"))?;
        out.push((m, s));
    }
    Ok(out)
}

fn encode_packed(items: &[(Bytes, f64)]) -> Vec<u8> {
    let scores: Vec<[u8; 8]> = items.iter().map(|(_, s)| s.to_le_bytes()).collect();
    packed::encode(
        items
            .iter()
            .zip(&scores)
            .flat_map(|((m, _), s)| [&m[..], &s[..]]),
    )
}

/// A live sorted set, as one state holds it.
#[derive(Debug)]
pub struct ZSet {
    rec: Record,
    items: Items,
}

impl ZSet {
    /// The sorted set at `key`; `None` if there is no key, [`Error::WrongType`] if it holds
    /// something else. A large set pins the reads that follow to one state.
    pub fn load<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, key: &[u8]) -> Result<Option<ZSet>> {
        let Some(rec) = k.get_kind(key, Kind::ZSet)? else {
            return Ok(None);
        };
        if !rec.large {
            return Self::from_record(rec).map(Some);
        }
        k.io.pin();
        match k.get_kind(key, Kind::ZSet)? {
            Some(rec) => Self::from_record(rec).map(Some),
            None => Ok(None),
        }
    }

    fn from_record(rec: Record) -> Result<ZSet> {
        let items = if rec.large {
            Items::Large(Large::decode(&rec.value)?)
        } else {
            Items::Packed(decode_packed(&rec.value)?)
        };
        Ok(ZSet { rec, items })
    }

    /// Whether it has no member: never, for a set that exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many members it has.
    pub fn len(&self) -> u64 {
        self.items.len()
    }

    /// Whether its members are separate keys.
    pub fn is_large(&self) -> bool {
        self.rec.large
    }

    /// The score of `member`.
    pub fn score<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        member: &[u8],
    ) -> Result<Option<f64>> {
        self.items.score(k, member)
    }

    /// The rank of `member` (`rev`: from the highest score). O(rank) on a large set.
    pub fn rank<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        member: &[u8],
        rev: bool,
    ) -> Result<Option<u64>> {
        let Some(score) = self.items.score(k, member)? else {
            return Ok(None);
        };
        let mut rank = 0u64;
        self.items.walk(k, From::End, false, |m, s| {
            if cmp_entry((s, m), (score, member)) == Ordering::Less {
                rank += 1;
                true
            } else {
                false
            }
        })?;
        Ok(Some(if rev { self.len() - 1 - rank } else { rank }))
    }

    /// Members from rank `start` to `stop` as Redis takes them (negative: from the end;
    /// `rev`: ranks from the highest score).
    pub fn range_by_rank<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        start: i64,
        stop: i64,
        rev: bool,
    ) -> Result<Vec<(Bytes, f64)>> {
        match rank_span(self.len(), start, stop) {
            Some((a, b)) => self.items.by_rank(k, a, b, rev),
            None => Ok(Vec::new()),
        }
    }

    /// Members with scores in `range` (`rev`: from the highest), after `offset` of them, at
    /// most `limit`.
    pub fn range_by_score<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        range: &ScoreRange,
        rev: bool,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Vec<(Bytes, f64)>> {
        self.items.by_score(k, range, rev, offset, limit)
    }

    /// Members in `range` by member (for members of one score), as [`ZSet::range_by_score`].
    pub fn range_by_lex<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        range: &LexRange,
        rev: bool,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Vec<(Bytes, f64)>> {
        self.items.by_lex(k, range, rev, offset, limit)
    }

    /// How many members have scores in `range`.
    pub fn count_score<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        range: &ScoreRange,
    ) -> Result<u64> {
        Ok(self.items.by_score(k, range, false, 0, None)?.len() as u64)
    }

    /// How many members are in `range` by member.
    pub fn count_lex<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        range: &LexRange,
    ) -> Result<u64> {
        Ok(self.items.by_lex(k, range, false, 0, None)?.len() as u64)
    }

    /// Every member and its score, in order.
    pub fn entries<T: RawRead + ?Sized>(&self, k: &mut Keys<'_, T>) -> Result<Vec<(Bytes, f64)>> {
        match &self.items {
            Items::Packed(p) => Ok(p.clone()),
            Items::Large(_) => {
                let mut out = Vec::with_capacity(self.len().min(1 << 20) as usize);
                self.items.walk(k, From::End, false, |m, s| {
                    out.push((m.clone(), s));
                    true
                })?;
                Ok(out)
            }
        }
    }

    /// About `count` members from `cursor` on (0: the start) and the next cursor (0: none),
    /// as [`crate::Hash::page`]: cursors are member hashes, so no state is kept between
    /// calls; a packed set is returned whole.
    pub fn page<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        cursor: u64,
        count: usize,
    ) -> Result<(Vec<(Bytes, f64)>, u64)> {
        let h = match &self.items {
            Items::Packed(p) => return Ok((p.clone(), 0)),
            Items::Large(l) => &l.h,
        };
        let v = h.version;
        let (page, next) = super::hash_page(
            k,
            |c| member_key(v, &[&[SCORES][..], &c.to_be_bytes()].concat()),
            &family(v, SCORES).1,
            |key| match super::member_of(v, key) {
                Some([SCORES, rest @ ..]) if rest.len() >= 8 => {
                    Some((u64::from_be_bytes(rest[..8].try_into().ok()?), &rest[8..]))
                }
                _ => None,
            },
            cursor,
            count,
        )?;
        let mut out = Vec::with_capacity(page.len());
        for (m, value) in page {
            out.push((m, decode_score(&value)?));
        }
        Ok((out, next))
    }
}

/// Writes of one sorted set inside a merger transaction.
struct Writer<'e> {
    old: Option<Record>,
    items: Items,
    enc: &'e Encodings,
    /// Whether the set may become large (outside every store).
    may_grow: bool,
}

impl<'e> Writer<'e> {
    fn open<T: RawWrite + ?Sized>(
        k: &mut Keys<'_, T>,
        enc: &'e Encodings,
        key: &[u8],
    ) -> Result<Writer<'e>> {
        let may_grow = k.in_default_store(key);
        let (old, items) = match ZSet::load(k, key)? {
            Some(z) => (Some(z.rec), z.items),
            None => (None, Items::Packed(Vec::new())),
        };
        Ok(Writer {
            old,
            items,
            enc,
            may_grow,
        })
    }

    /// Gives `member` the score `score`, moving it in the order; whether it is new.
    fn put<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        member: &Bytes,
        score: f64,
    ) -> Result<bool> {
        if let Items::Packed(p) = &self.items {
            // As Redis: a new member that would not fit makes the set large first, so it goes
            // in with its exact score.
            let max = self.enc.zset_max_value();
            let fits = p.len() < self.enc.zset_max_entries() && member.len() <= max;
            if self.may_grow && !fits && !p.iter().any(|(m, _)| m == member) {
                self.grow(k)?;
            }
        }
        match &mut self.items {
            Items::Packed(p) => {
                let old = p.iter().position(|(m, _)| m == member);
                if let Some(i) = old {
                    p.remove(i);
                }
                let at = p.partition_point(|(m, s)| {
                    cmp_entry((*s, m), (score, member)) == Ordering::Less
                });
                // The packed form keeps an integral score as an integer, as a listpack does: -0
                // reads back as 0.
                let score = if score == 0.0 { 0.0 } else { score };
                p.insert(at, (member.clone(), score));
                Ok(old.is_none())
            }
            Items::Large(l) => {
                let sk = score_key(l.h.version, member);
                let old = match k.io.get_raw(&sk)? {
                    Some(v) => Some(decode_score(&v)?),
                    None => None,
                };
                if let Some(s) = old {
                    k.io.delete_raw(&order_key(l.h.version, s, member));
                }
                let written = put_large(k, l.h.version, member, score);
                l.widen(&written);
                l.h.count += u64::from(old.is_none());
                Ok(old.is_none())
            }
        }
    }

    /// Removes `member`; whether it was there.
    fn remove<T: RawWrite + ?Sized>(&mut self, k: &mut Keys<'_, T>, member: &[u8]) -> Result<bool> {
        match &mut self.items {
            Items::Packed(p) => {
                let before = p.len();
                p.retain(|(m, _)| m != member);
                Ok(p.len() != before)
            }
            Items::Large(l) => {
                let sk = score_key(l.h.version, member);
                let Some(v) = k.io.get_raw(&sk)? else {
                    return Ok(false);
                };
                let s = decode_score(&v)?;
                k.io.delete_raw(&sk);
                k.io.delete_raw(&order_key(l.h.version, s, member));
                l.h.count -= 1;
                l.h.note_deleted();
                Ok(true)
            }
        }
    }

    /// Moves a packed set's members to keys of their own under a new version.
    fn grow<T: RawWrite + ?Sized>(&mut self, k: &mut Keys<'_, T>) -> Result<()> {
        if let Items::Packed(p) = &self.items {
            let version = next_version(k.io)?;
            for (m, s) in p {
                put_large(k, version, m, *s);
            }
            self.items = Items::Large(Large::new(Header::new(version, p.len() as u64)));
        }
        Ok(())
    }

    /// Writes the set's record; deletes the key if no member is left. (A set becomes large
    /// only when a member is added, as in Redis: lowering the thresholds leaves existing sets
    /// as they are until then.)
    fn finish<T: RawWrite + ?Sized>(mut self, k: &mut Keys<'_, T>, key: &[u8]) -> Result<()> {
        let at = self.old.as_ref().and_then(|r| r.expire_at_ms);
        if self.items.len() == 0 {
            if self.old.is_some() {
                k.remove(key)?;
            }
            return Ok(());
        }
        if let Items::Large(l) = &mut self.items {
            if l.h.reversion_due() {
                // The bounds are suffixes after the family prefix: still right under the
                // new version.
                super::reversion(k.io, &mut l.h)?;
            }
        }
        match &self.items {
            Items::Packed(p) => {
                let payload = encode_packed(p);
                check_value_len(payload.len())?;
                k.put_record(key, self.old.as_ref(), Kind::ZSet, false, &payload, at);
            }
            Items::Large(l) => {
                k.put_record(key, self.old.as_ref(), Kind::ZSet, true, &l.encode(), at);
            }
        }
        Ok(())
    }
}

/// Writes a large set's two keys of `member`; returns its order key.
fn put_large<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    version: u64,
    member: &[u8],
    score: f64,
) -> Vec<u8> {
    k.io.put_raw(&score_key(version, member), &score.to_le_bytes());
    let exact = if score == 0.0 && score.is_sign_negative() {
        &score.to_le_bytes()[..]
    } else {
        &[][..]
    };
    let order = order_key(version, score, member);
    k.io.put_raw(&order, exact);
    order
}

/// ZADD (and ZINCRBY, `flags.incr`) as Redis's `zsetAdd` does it: the count of members added
/// (and changed, with CH), or with INCR the new score, `None` when a condition refused it.
pub(crate) fn add<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    flags: ZAddFlags,
    items: &[(Score, Bytes)],
) -> Result<(i64, Option<f64>)> {
    check_key(key)?;
    for (_, m) in items {
        check_value_len(m.len())?;
    }
    let mut w = Writer::open(k, enc, key)?;
    if w.old.is_none() && flags.xx {
        return Ok((0, None));
    }
    // Redis 7.0 makes a new set large only when its first member cannot be packed (or
    // nothing can); otherwise it converts as members are added.
    let first_too_long = items
        .first()
        .is_some_and(|(_, m)| m.len() > enc.zset_max_value());
    if w.old.is_none() && w.may_grow && (enc.zset_max_entries() == 0 || first_too_long) {
        w.grow(k)?;
    }
    let (mut added, mut updated, mut last) = (0i64, 0i64, None);
    for (Score(score), member) in items {
        let mut score = *score;
        match w.items.score(k, member)? {
            Some(cur) => {
                if flags.nx {
                    last = None;
                    continue;
                }
                if flags.incr {
                    score += cur;
                    if score.is_nan() {
                        return Err(Error::ScoreNaN);
                    }
                }
                if (flags.lt && score >= cur) || (flags.gt && score <= cur) {
                    last = None;
                    continue;
                }
                last = Some(score);
                if score != cur {
                    w.put(k, member, score)?;
                    updated += 1;
                }
            }
            None if !flags.xx => {
                w.put(k, member, score)?;
                added += 1;
                last = Some(score);
            }
            None => last = None,
        }
    }
    if added + updated > 0 || w.old.is_none() {
        w.finish(k, key)?;
    }
    Ok((if flags.ch { added + updated } else { added }, last))
}

/// ZREM: how many of `members` it removed; the key goes with the last member.
pub(crate) fn rem<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    members: &[Bytes],
) -> Result<i64> {
    let mut w = Writer::open(k, enc, key)?;
    if w.old.is_none() {
        return Ok(0);
    }
    let mut removed = 0;
    for m in members {
        removed += i64::from(w.remove(k, m)?);
    }
    if removed > 0 {
        w.finish(k, key)?;
    }
    Ok(removed)
}

/// ZREMRANGEBY*: how many members `range` covered and were removed.
pub(crate) fn rem_range<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    range: &ZRange,
) -> Result<i64> {
    let mut w = Writer::open(k, enc, key)?;
    if w.old.is_none() {
        return Ok(0);
    }
    let doomed = w.items.in_range(k, range)?;
    for (m, _) in &doomed {
        w.remove(k, m)?;
    }
    if !doomed.is_empty() {
        w.finish(k, key)?;
    }
    Ok(doomed.len() as i64)
}

/// ZPOPMIN, ZPOPMAX: the `count` lowest (highest) members, removed.
pub(crate) fn pop<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    max: bool,
    count: u64,
) -> Result<Vec<(Bytes, f64)>> {
    let mut w = Writer::open(k, enc, key)?;
    if w.old.is_none() || count == 0 {
        return Ok(Vec::new());
    }
    let n = count.min(w.items.len());
    let popped = if n == 0 {
        Vec::new()
    } else {
        w.items.by_rank(k, 0, n - 1, max)?
    };
    for (m, _) in &popped {
        w.remove(k, m)?;
    }
    if let (Items::Large(l), Some((m, s))) = (&mut w.items, popped.last()) {
        // Everything up to the last member popped is deleted: the next pop starts past it.
        l.cut(&order_key(l.h.version, *s, m), max);
    }
    if !popped.is_empty() {
        w.finish(k, key)?;
    }
    Ok(popped)
}

/// Redis's `zunionInterAggregate`: a sum of `inf` and `-inf` is 0; a NaN `val` leaves MIN
/// and MAX unchanged.
fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// ZUNION, ZINTER, ZDIFF (and their STORE forms, ZINTERCARD) as Redis computes them: every
/// input is looked up first (a missing key is empty; a set's members have score 1; another
/// kind is WRONGTYPE), then `late`
/// is reported; union and intersection take the inputs from the smallest (ties in the order
/// given), which decides the order scores are summed in. The result is in (score, member)
/// order.
pub fn combine<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    op: Combine,
    keys: &[Bytes],
    weights: &[Score],
    how: Aggregate,
    late: Option<LateError>,
) -> Result<Vec<(Bytes, f64)>> {
    let mut inputs = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        // A plain set takes part as members of score 1, as in Redis.
        let is_set = k
            .get(key)?
            .is_some_and(|r| r.kind == crate::layout::Kind::Set);
        let members = if is_set {
            match super::set::SetValue::load(k, key)? {
                Some(s) => s.members(k)?.into_iter().map(|m| (m, 1.0)).collect(),
                None => Vec::new(),
            }
        } else {
            match ZSet::load(k, key)? {
                Some(z) => z.entries(k)?,
                None => Vec::new(),
            }
        };
        inputs.push((members, weights.get(i).map_or(1.0, |w| w.0)));
    }
    match late {
        Some(LateError::Syntax) => return Err(Error::Syntax),
        Some(LateError::WeightNotFloat) => return Err(Error::WeightNotFloat),
        None => {}
    }
    if op != Combine::Diff {
        inputs.sort_by_key(|(m, _)| m.len());
    }
    let Some(((first, w0), rest)) = inputs.split_first() else {
        return Ok(Vec::new());
    };
    let lookup: Vec<(std::collections::HashMap<&[u8], f64>, f64)> = rest
        .iter()
        .map(|(m, w)| (m.iter().map(|(x, s)| (&x[..], *s)).collect(), *w))
        .collect();
    let weighted = |w: f64, s: f64| {
        let v = w * s;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let mut out: Vec<(Bytes, f64)> = Vec::new();
    match op {
        Combine::Inter => {
            'members: for (m, s) in first {
                let mut score = weighted(*w0, *s);
                for (other, w) in &lookup {
                    match other.get(&m[..]) {
                        Some(v) => aggregate(&mut score, v * w, how),
                        None => continue 'members,
                    }
                }
                out.push((m.clone(), score));
            }
        }
        Combine::Diff => {
            for (m, s) in first {
                if !lookup.iter().any(|(other, _)| other.contains_key(&m[..])) {
                    out.push((m.clone(), *s));
                }
            }
        }
        Combine::Union => {
            let mut at: std::collections::HashMap<Bytes, usize> = std::collections::HashMap::new();
            for (members, w) in &inputs {
                for (m, s) in members {
                    let score = weighted(*w, *s);
                    match at.get(m) {
                        Some(&i) => aggregate(&mut out[i].1, score, how),
                        None => {
                            at.insert(m.clone(), out.len());
                            out.push((m.clone(), score));
                        }
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| cmp_entry((a.1, &a.0), (b.1, &b.0)));
    Ok(out)
}

/// Makes `dst` (whatever it held) the sorted set of `items` (distinct members), or deletes it
/// when there are none; how many members it holds. Packed as Redis packs a result: when it
/// has few and short enough members (ZUNIONSTORE and its kin, ZRANGESTORE).
pub(crate) fn store<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    dst: &[u8],
    items: Vec<(Bytes, f64)>,
) -> Result<i64> {
    check_key(dst)?;
    k.remove(dst)?;
    if items.is_empty() {
        return Ok(0);
    }
    let mut w = Writer {
        old: None,
        items: Items::Packed(Vec::new()),
        enc,
        may_grow: k.in_default_store(dst),
    };
    let too_long = items.iter().any(|(m, _)| m.len() > enc.zset_max_value());
    if w.may_grow && (items.len() > enc.zset_max_entries() || too_long) {
        w.grow(k)?;
    }
    let n = items.len() as i64;
    for (m, s) in &items {
        w.put(k, m, *s)?;
    }
    w.finish(k, dst)?;
    Ok(n)
}

/// The members of `z` a ZRANGE-style selection takes: a rank range (from the highest with
/// `rev`), or a score or lex range with LIMIT's offset and count (a negative offset takes
/// nothing, a negative count everything, as Redis's walk does).
pub fn select<T: RawRead + ?Sized>(
    z: &ZSet,
    k: &mut Keys<'_, T>,
    range: &ZRange,
    rev: bool,
    limit: Option<(i64, i64)>,
) -> Result<Vec<(Bytes, f64)>> {
    let (offset, count) = match limit {
        None => (0, None),
        Some((o, _)) if o < 0 && !matches!(range, ZRange::Rank(..)) => return Ok(Vec::new()),
        Some((o, c)) => (o.max(0) as u64, (c >= 0).then_some(c as u64)),
    };
    match range {
        ZRange::Rank(a, b) => z.range_by_rank(k, *a, *b, rev),
        ZRange::Score(r) => z.range_by_score(k, r, rev, offset, count),
        ZRange::Lex(r) => z.range_by_lex(k, r, rev, offset, count),
    }
}

/// ZRANGESTORE.
pub(crate) fn range_store<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    dst: &[u8],
    src: &[u8],
    range: &ZRange,
    rev: bool,
    limit: Option<(i64, i64)>,
) -> Result<i64> {
    let items = match ZSet::load(k, src)? {
        Some(z) => select(&z, k, range, rev, limit)?,
        None => Vec::new(),
    };
    store(k, enc, dst, items)
}

/// The packed payload of a large set's members (for a move under a store's prefix).
pub(crate) fn repack<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, rec: &Record) -> Result<Vec<u8>> {
    let z = ZSet::from_record(rec.clone())?;
    Ok(encode_packed(&z.entries(k)?))
}

#[cfg(test)]
mod tests {
    use super::super::member_range;
    use super::*;

    #[test]
    fn sortable_scores_sort_as_numbers() {
        let scores = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -f64::MIN_POSITIVE,
            0.0,
            5e-324,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
        ];
        for w in scores.windows(2) {
            assert!(sortable(w[0]) < sortable(w[1]), "{} {}", w[0], w[1]);
        }
        for s in scores {
            assert_eq!(from_sortable(sortable(s)).to_bits(), s.to_bits());
        }
        assert_eq!(sortable(-0.0), sortable(0.0));
    }

    #[test]
    fn both_key_families_stay_in_the_version_range() {
        let (lo, hi) = member_range(9);
        for k in [
            score_key(9, b""),
            score_key(9, &[0xff; 20]),
            order_key(9, f64::NEG_INFINITY, b""),
            order_key(9, f64::INFINITY, &[0xff; 20]),
        ] {
            assert!(k >= lo && k < hi);
        }
        let (s_lo, s_hi) = family(9, SCORES);
        let (o_lo, _) = family(9, ORDER);
        assert!(s_hi <= o_lo && score_key(9, b"x") >= s_lo);
    }

    #[test]
    fn order_entries_give_the_exact_score_back() {
        let k = order_key(3, 1.5, b"m");
        assert_eq!(order_entry(3, &k, b"").unwrap(), (1.5, Bytes::from("m")));
        let k = order_key(3, -0.0, b"z");
        let (s, _) = order_entry(3, &k, &(-0.0f64).to_le_bytes()).unwrap();
        assert!(s == 0.0 && s.is_sign_negative());
    }

    #[test]
    fn ranks_are_sanitised_as_redis_does() {
        assert_eq!(rank_span(5, 0, -1), Some((0, 4)));
        assert_eq!(rank_span(5, -100, 100), Some((0, 4)));
        assert_eq!(rank_span(5, 3, 1), None);
        assert_eq!(rank_span(5, 5, 10), None);
        assert_eq!(rank_span(5, -2, -1), Some((3, 4)));
        assert_eq!(rank_span(0, 0, -1), None);
    }

    #[test]
    fn lex_ranges_compare_as_sdscmplex() {
        let r = LexRange {
            min: LexBound::Excl(Bytes::from("b")),
            max: LexBound::Incl(Bytes::from("d")),
        };
        assert!(!r.above_min(b"b") && r.above_min(b"c") && r.below_max(b"d"));
        assert!(!r.below_max(b"da"));
        let all = LexRange {
            min: LexBound::Min,
            max: LexBound::Max,
        };
        assert!(!all.is_empty() && all.above_min(b"") && all.below_max(&[0xff; 3]));
        let none = LexRange {
            min: LexBound::Max,
            max: LexBound::Max,
        };
        assert!(none.is_empty());
    }

    #[test]
    fn large_headers_round_trip_with_and_without_bounds() {
        let h = Header::new(7, 3);
        let plain = Large::new(h);
        // A header without bounds or deletions is the collections' common 16 bytes.
        assert_eq!(plain.encode(), h.encode());
        assert_eq!(Large::decode(&Bytes::from(plain.encode())).unwrap(), plain);
        for (low, high) in [
            (None, None),
            (Some(b"\x80abc".to_vec()), None),
            (None, Some(b"\x90z".to_vec())),
            (Some(b"\x80".to_vec()), Some(b"\x90".to_vec())),
        ] {
            for dead in [0, 1, 1 << 40] {
                let h = Header { dead, ..h };
                let l = Large {
                    h,
                    low: low.clone(),
                    high: high.clone(),
                };
                assert_eq!(Large::decode(&Bytes::from(l.encode())).unwrap(), l);
            }
        }
        let mut bad = h.encode();
        bad.extend_from_slice(&packed::encode([&b"a"[..], b"b", b"c"]));
        assert!(Large::decode(&Bytes::from(bad)).is_err());
        let mut four = h.encode();
        four.extend_from_slice(&packed::encode([&b""[..], b"", &[0; 8], b""]));
        assert!(Large::decode(&Bytes::from(four)).is_err());
        assert!(Large::decode(&Bytes::from_static(b"short")).is_err());
    }

    #[test]
    fn bounds_only_ever_loosen_when_cut_short() {
        let mut l = Large::new(Header::new(1, 1));
        let long = vec![b'm'; 100];
        let key = order_key(1, 2.0, &long);
        l.cut(&key, false);
        l.cut(&key, true);
        let (lower, upper) = l.live_order_keys();
        // The member's own key stays inside the cut bounds.
        assert!(lower <= key && key < upper);
        assert!(l.low.as_ref().unwrap().len() <= BOUND_MAX);
        assert!(l.high.as_ref().unwrap().len() <= BOUND_MAX);
        // A high bound of 0xff bytes cut short bounds nothing.
        assert_eq!(high_bound(&[0xff; 100]), None);
        // A key written below the low bound (above the high one) widens it.
        let below = order_key(1, 1.0, b"a");
        let above = order_key(1, 3.0, b"a");
        l.widen(&below);
        l.widen(&above);
        let (lower, upper) = l.live_order_keys();
        assert!(lower <= below && above < upper);
    }

    #[test]
    fn packed_payloads_round_trip() {
        let items = vec![(Bytes::from("a"), -0.0), (Bytes::from("b"), f64::INFINITY)];
        let back = decode_packed(&Bytes::from(encode_packed(&items))).unwrap();
        assert_eq!(back.len(), 2);
        assert!(back[0].1.is_sign_negative() && back[1].1 == f64::INFINITY);
        assert!(decode_packed(&Bytes::from(packed::encode([&b"a"[..]]))).is_err());
    }
}
