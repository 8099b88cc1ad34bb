//! Sets: reads over either encoding, the set algebra (SINTER, SUNION, SDIFF and their STORE
//! forms), and the writes of SADD, SREM, SPOP and SMOVE.
//!
//! A packed set is in one of two modes, as Redis 7.0 keeps a small set as an `intset` or a
//! `hashtable`: *intset* while every member is an integer in Redis's canonical form (kept
//! sorted by value, so members read in Redis's intset order) and there are at most
//! `set-max-intset-entries`; *listpack* otherwise (insertion order), while there are at most
//! `set-max-listpack-entries` members of at most `set-max-listpack-value` bytes. Like
//! Redis's, a set leaves intset mode for good, and becomes large for good.

use std::collections::HashSet;

use bytes::Bytes;

use super::{
    field_key, field_of, hash_page, member_key, member_range, next_version, packed, Encodings,
    Header, SCAN_CHUNK,
};
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value_len, Keys, RawRead, RawWrite};
use crate::layout::{CorruptRecord, Kind, Record};
use crate::op::SetAlgebra;

/// The first byte of a packed set's payload.
const MODE_INTSET: u8 = 0;
const MODE_LISTPACK: u8 = 1;

/// A set's members as its record holds them.
#[derive(Debug)]
enum Members {
    /// In the record: `intset` mode (integers sorted by value) or insertion order.
    Packed { intset: bool, items: Vec<Bytes> },
    /// Members of a collection version.
    Large(Header),
}

/// A live set, as one state holds it.
#[derive(Debug)]
pub struct SetValue {
    rec: Record,
    members: Members,
}

fn as_int(m: &[u8]) -> Option<i64> {
    rialto_resp::parse_redis_int(m)
}

fn decode_packed(payload: &Bytes) -> Result<Members> {
    let (&mode, _) = payload.split_first().ok_or(CorruptRecord("packed set"))?;
    let intset = match mode {
        MODE_INTSET => true,
        MODE_LISTPACK => false,
        _ => return Err(CorruptRecord("packed set mode").into()),
    };
    let items = packed::decode(&payload.slice(1..))?;
    Ok(Members::Packed { intset, items })
}

fn encode_packed(intset: bool, items: &[Bytes]) -> Vec<u8> {
    let body = packed::encode(items.iter().map(|m| &m[..]));
    let mut out = Vec::with_capacity(1 + body.len());
    out.push(if intset { MODE_INTSET } else { MODE_LISTPACK });
    out.extend_from_slice(&body);
    out
}

/// Whether `rec` is a packed set in intset mode (OBJECT ENCODING `intset`).
pub fn is_intset_record(rec: &Record) -> bool {
    rec.kind == Kind::Set && !rec.large && rec.value.first() == Some(&MODE_INTSET)
}

impl SetValue {
    /// The set at `key`; `None` if there is no key, [`Error::WrongType`] if it holds
    /// something else. A large set pins the reads that follow to one state.
    pub fn load<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, key: &[u8]) -> Result<Option<SetValue>> {
        let Some(rec) = k.get_kind(key, Kind::Set)? else {
            return Ok(None);
        };
        if !rec.large {
            return Self::from_record(rec).map(Some);
        }
        k.io.pin();
        match k.get_kind(key, Kind::Set)? {
            Some(rec) => Self::from_record(rec).map(Some),
            None => Ok(None),
        }
    }

    fn from_record(rec: Record) -> Result<SetValue> {
        let members = if rec.large {
            Members::Large(Header::decode(&rec.value)?)
        } else {
            decode_packed(&rec.value)?
        };
        Ok(SetValue { rec, members })
    }

    /// Whether it has no member: never, for a set that exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many members it has.
    pub fn len(&self) -> u64 {
        match &self.members {
            Members::Packed { items, .. } => items.len() as u64,
            Members::Large(h) => h.count,
        }
    }

    /// Whether its members are separate keys.
    pub fn is_large(&self) -> bool {
        self.rec.large
    }

    /// Whether it is a packed set of integers (Redis's `intset`).
    pub fn is_intset(&self) -> bool {
        matches!(self.members, Members::Packed { intset: true, .. })
    }

    /// Whether `member` is in it.
    pub fn contains<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        member: &[u8],
    ) -> Result<bool> {
        contains(&self.members, k, member)
    }

    /// Every member: a packed set's in its order, a large one's in the order of their hashes.
    pub fn members<T: RawRead + ?Sized>(&self, k: &mut Keys<'_, T>) -> Result<Vec<Bytes>> {
        all_of(&self.members, k)
    }

    /// About `count` members from `cursor` on (0: the start), and the cursor of the next page
    /// (0: none). A packed set gives all its members at once. Cursors are member hashes, so a
    /// member present from the first page to the last is returned exactly once; a page never
    /// splits members of one hash.
    pub fn page<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        cursor: u64,
        count: usize,
    ) -> Result<(Vec<Bytes>, u64)> {
        page_of(&self.members, k, cursor, count)
    }
}

fn all_of<T: RawRead + ?Sized>(members: &Members, k: &mut Keys<'_, T>) -> Result<Vec<Bytes>> {
    let len = match members {
        Members::Packed { items, .. } => return Ok(items.clone()),
        Members::Large(h) => h.count,
    };
    let mut out = Vec::with_capacity(len.min(1 << 20) as usize);
    let mut cursor = 0;
    loop {
        let (page, next) = page_of(members, k, cursor, SCAN_CHUNK)?;
        out.extend(page);
        if next == 0 {
            return Ok(out);
        }
        cursor = next;
    }
}

fn page_of<T: RawRead + ?Sized>(
    members: &Members,
    k: &mut Keys<'_, T>,
    cursor: u64,
    count: usize,
) -> Result<(Vec<Bytes>, u64)> {
    let h = match members {
        Members::Packed { items, .. } => return Ok((items.clone(), 0)),
        Members::Large(h) => h,
    };
    let v = h.version;
    let (page, next) = hash_page(
        k,
        |c| member_key(v, &c.to_be_bytes()),
        &member_range(v).1,
        |key| field_of(v, key),
        cursor,
        count,
    )?;
    Ok((page.into_iter().map(|(m, _)| m).collect(), next))
}

fn contains<T: RawRead + ?Sized>(
    members: &Members,
    k: &mut Keys<'_, T>,
    member: &[u8],
) -> Result<bool> {
    match members {
        Members::Packed {
            intset: true,
            items,
        } => Ok(match as_int(member) {
            Some(n) => find_int(items, n).is_ok(),
            None => false,
        }),
        Members::Packed { items, .. } => Ok(items.iter().any(|m| m == member)),
        Members::Large(h) => Ok(k.io.get_raw(&field_key(h.version, member))?.is_some()),
    }
}

/// Where integer `n` is (or would go) among an intset's sorted members.
fn find_int(items: &[Bytes], n: i64) -> std::result::Result<usize, usize> {
    items.binary_search_by(|m| as_int(m).unwrap_or(i64::MIN).cmp(&n))
}

fn bad_member() -> Error {
    Error::Corrupt(CorruptRecord("set member key"))
}

/// A small deterministic generator (splitmix64): SPOP's choices are a function of the seed
/// its op carries, so every node pops the same members.
struct SeededRng(u64);

impl SeededRng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// A large set of at most this many members is read whole for a pick.
const PICK_WHOLE: u64 = 16;
/// Members a bucket of the hash space holds on average in a pick.
const PICK_BUCKET: u64 = 4;
/// The occupancy a bucket's acceptance is measured against: above the mean by enough that a
/// bucket holds more members only rarely (3 in 10,000 buckets).
const PICK_ACCEPT: u64 = 12;
/// Most members read from one bucket (more would take a crafted set of members).
const PICK_READ_MAX: usize = 64;
/// Buckets tried before a pick settles for the first member from a random hash on.
const PICK_TRIALS: usize = 64;

/// The key of a member of the large set `h` picked with `rng`, each member equally likely.
///
/// The hash space is cut into buckets of about [`PICK_BUCKET`] members; a trial draws a
/// bucket, reads its members (c) and a slot below [`PICK_ACCEPT`], and takes the member in
/// that slot if there is one. A member's chance per trial is 1/(buckets × `PICK_ACCEPT`),
/// whatever its bucket holds (a bucket of more than `PICK_ACCEPT` members, rare, gives each
/// `PICK_ACCEPT`/c of that). A pick of the first member after a random hash would favour
/// members after wide gaps; popping those first leaves the rest bunched, and the tombstones
/// of the pops pile up where every later pick lands, so a drain would slow down as it goes.
/// About 3 trials per pick, each reading one bucket. Deterministic: the trials are drawn
/// from `rng`, the members from the transaction's state.
fn pick_large<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    h: &Header,
    rng: &mut SeededRng,
) -> Result<Option<Vec<u8>>> {
    let v = h.version;
    let (lower, upper) = member_range(v);
    if h.count <= PICK_WHOLE {
        let all = k.io.scan_raw(&lower, &upper, PICK_WHOLE as usize + 1)?;
        if all.is_empty() {
            return Ok(None);
        }
        let at = rng.below(all.len());
        return Ok(all.into_iter().nth(at).map(|(key, _)| key));
    }
    let buckets = h.count.div_ceil(PICK_BUCKET);
    // Bucket `b` starts at hash ⌈b × 2^64 / buckets⌉.
    let start = |b: u64| (u128::from(b) << 64).div_ceil(u128::from(buckets)) as u64;
    for _ in 0..PICK_TRIALS {
        let b = rng.below(buckets as usize) as u64;
        let from = member_key(v, &start(b).to_be_bytes());
        let to = if b + 1 == buckets {
            upper.clone()
        } else {
            member_key(v, &start(b + 1).to_be_bytes())
        };
        let got = k.io.scan_raw(&from, &to, PICK_READ_MAX)?;
        let slots = (got.len() as u64).max(PICK_ACCEPT);
        let at = rng.below(slots as usize);
        if let Some((key, _)) = got.into_iter().nth(at) {
            return Ok(Some(key));
        }
    }
    // Never in practice: every trial drew an empty slot.
    let from = member_key(v, &rng.next().to_be_bytes());
    let mut got = k.io.scan_raw(&from, &upper, 1)?;
    if got.is_empty() {
        got = k.io.scan_raw(&lower, &upper, 1)?;
    }
    Ok(got.pop().map(|(key, _)| key))
}

/// Writes of one set inside a merger transaction.
struct Writer<'e> {
    old: Option<Record>,
    members: Members,
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
        Ok(match SetValue::load(k, key)? {
            Some(s) => Writer {
                old: Some(s.rec),
                members: s.members,
                enc,
                may_grow,
            },
            None => Writer::empty(None, enc, may_grow),
        })
    }

    /// An empty set that replaces `old` (whatever it holds) when finished.
    fn empty(old: Option<Record>, enc: &'e Encodings, may_grow: bool) -> Writer<'e> {
        Writer {
            old,
            members: Members::Packed {
                intset: true,
                items: Vec::new(),
            },
            enc,
            may_grow,
        }
    }

    fn len(&self) -> u64 {
        match &self.members {
            Members::Packed { items, .. } => items.len() as u64,
            Members::Large(h) => h.count,
        }
    }

    /// Adds `member`; whether it is new.
    fn add<T: RawWrite + ?Sized>(&mut self, k: &mut Keys<'_, T>, member: &Bytes) -> Result<bool> {
        match &mut self.members {
            Members::Packed { intset, items } => {
                if *intset {
                    if let Some(n) = as_int(member) {
                        let Err(at) = find_int(items, n) else {
                            return Ok(false);
                        };
                        items.insert(at, member.clone());
                        self.grow_if_needed(k)?;
                        return Ok(true);
                    }
                    // A member that is no integer ends intset mode for good.
                    *intset = false;
                } else if items.iter().any(|m| m == member) {
                    return Ok(false);
                }
                items.push(member.clone());
                // Grown at once: a packed set's lookups are linear.
                self.grow_if_needed(k)?;
                Ok(true)
            }
            Members::Large(h) => {
                let mk = field_key(h.version, member);
                let new = k.io.get_raw(&mk)?.is_none();
                if new {
                    k.io.put_raw(&mk, b"");
                    h.count += 1;
                }
                Ok(new)
            }
        }
    }

    /// Removes `member`; whether it was there.
    fn remove<T: RawWrite + ?Sized>(&mut self, k: &mut Keys<'_, T>, member: &[u8]) -> Result<bool> {
        match &mut self.members {
            Members::Packed { items, .. } => {
                let Some(at) = items.iter().position(|m| m == member) else {
                    return Ok(false);
                };
                // `remove`, not `swap_remove`: an intset stays sorted.
                items.remove(at);
                Ok(true)
            }
            Members::Large(h) => {
                let mk = field_key(h.version, member);
                if k.io.get_raw(&mk)?.is_none() {
                    return Ok(false);
                }
                k.io.delete_raw(&mk);
                h.count -= 1;
                h.note_deleted();
                Ok(true)
            }
        }
    }

    /// Removes and returns a member picked with `rng` (the set is not empty).
    fn pop_one<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        rng: &mut SeededRng,
    ) -> Result<Option<Bytes>> {
        match &mut self.members {
            Members::Packed { items, .. } => {
                if items.is_empty() {
                    return Ok(None);
                }
                let at = rng.below(items.len());
                Ok(Some(items.remove(at)))
            }
            Members::Large(h) => {
                let Some(key) = pick_large(k, h, rng)? else {
                    return Ok(None);
                };
                let (_, m) = field_of(h.version, &key).ok_or_else(bad_member)?;
                let m = Bytes::copy_from_slice(m);
                k.io.delete_raw(&key);
                h.count -= 1;
                h.note_deleted();
                if h.reversion_due() && h.count > 0 {
                    // Before the next pick, which steps over the tombstones in the buckets
                    // it reads: they stay fewer than the members for every pick of a drain,
                    // one op or many.
                    super::reversion(k.io, h)?;
                }
                Ok(Some(m))
            }
        }
    }

    /// Writes the set's record (and, when it becomes large, its members); deletes the key if
    /// no member is left.
    fn finish<T: RawWrite + ?Sized>(
        mut self,
        k: &mut Keys<'_, T>,
        key: &[u8],
        at: Option<i64>,
    ) -> Result<()> {
        self.grow_if_needed(k)?;
        if self.len() == 0 {
            if self.old.is_some() {
                k.remove(key)?;
            }
            return Ok(());
        }
        if let Members::Large(h) = &mut self.members {
            if h.reversion_due() {
                super::reversion(k.io, h)?;
            }
        }
        match &self.members {
            Members::Packed { intset, items } => {
                let payload = encode_packed(*intset, items);
                check_value_len(payload.len())?;
                k.put_record(key, self.old.as_ref(), Kind::Set, false, &payload, at);
            }
            Members::Large(h) => {
                k.put_record(key, self.old.as_ref(), Kind::Set, true, &h.encode(), at);
            }
        }
        Ok(())
    }

    /// Leaves intset mode past `set-max-intset-entries`, and makes a packed set large past
    /// the listpack thresholds (outside every store).
    fn grow_if_needed<T: RawWrite + ?Sized>(&mut self, k: &mut Keys<'_, T>) -> Result<()> {
        let Members::Packed { intset, items } = &mut self.members else {
            return Ok(());
        };
        if *intset && items.len() > self.enc.set_max_intset_entries() {
            *intset = false;
        }
        if *intset || !self.may_grow {
            return Ok(());
        }
        let max = self.enc.set_max_listpack_value();
        if items.len() > self.enc.set_max_listpack_entries() || items.iter().any(|m| m.len() > max)
        {
            let version = next_version(k.io)?;
            for m in items.iter() {
                k.io.put_raw(&field_key(version, m), b"");
            }
            self.members = Members::Large(Header::new(version, items.len() as u64));
        }
        Ok(())
    }

    /// The expiry the set keeps.
    fn expiry(&self) -> Option<i64> {
        self.old.as_ref().and_then(|r| r.expire_at_ms)
    }
}

fn check_members(members: &[Bytes]) -> Result<()> {
    for m in members {
        check_value_len(m.len())?;
    }
    Ok(())
}

/// SADD: how many of `members` are new.
pub(crate) fn add<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    members: &[Bytes],
) -> Result<i64> {
    check_key(key)?;
    check_members(members)?;
    let mut w = Writer::open(k, enc, key)?;
    let mut added = 0;
    for m in members {
        added += i64::from(w.add(k, m)?);
    }
    if added > 0 {
        let at = w.expiry();
        w.finish(k, key, at)?;
    }
    Ok(added)
}

/// SREM: how many of `members` it removed; the key goes with the last member.
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
        let at = w.expiry();
        w.finish(k, key, at)?;
    }
    Ok(removed)
}

/// What SPOP takes out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Popped {
    /// SPOP without a count: the member, if the set existed.
    One(Option<Bytes>),
    /// SPOP with a count.
    Many(Vec<Bytes>),
}

/// SPOP: removes `count` members (one, without a count) picked with `seed`.
pub(crate) fn pop<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    count: Option<u64>,
    seed: u64,
) -> Result<Popped> {
    let mut w = Writer::open(k, enc, key)?;
    let empty = || match count {
        None => Popped::One(None),
        Some(_) => Popped::Many(Vec::new()),
    };
    if w.old.is_none() || count == Some(0) {
        return Ok(empty());
    }
    let mut rng = SeededRng(seed);
    let at = w.expiry();
    let out = match count {
        None => Popped::One(w.pop_one(k, &mut rng)?),
        Some(n) if n >= w.len() => {
            // The whole set: the key goes (a large set's members are reclaimed later).
            let all = all_of(&w.members, k)?;
            k.remove(key)?;
            return Ok(Popped::Many(all));
        }
        Some(n) => {
            let mut out = Vec::with_capacity(n as usize);
            for _ in 0..n {
                out.extend(w.pop_one(k, &mut rng)?);
            }
            Popped::Many(out)
        }
    };
    w.finish(k, key, at)?;
    Ok(out)
}

/// SMOVE: whether `member` moved from `src` to `dst` (both sets, or missing).
pub(crate) fn smove<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    src: &[u8],
    dst: &[u8],
    member: &Bytes,
) -> Result<bool> {
    // As Redis: a missing source answers 0 before the destination's kind is checked.
    let Some(from) = SetValue::load(k, src)? else {
        return Ok(false);
    };
    SetValue::load(k, dst)?;
    if src == dst {
        return from.contains(k, member);
    }
    check_key(dst)?;
    check_value_len(member.len())?;
    let mut w = Writer::open(k, enc, src)?;
    if !w.remove(k, member)? {
        return Ok(false);
    }
    let at = w.expiry();
    w.finish(k, src, at)?;
    let mut d = Writer::open(k, enc, dst)?;
    if d.add(k, member)? {
        let at = d.expiry();
        d.finish(k, dst, at)?;
    }
    Ok(true)
}

/// The sets at `keys` (`None` for a missing key), every key's kind checked first.
fn load_all<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    keys: &[Bytes],
) -> Result<Vec<Option<SetValue>>> {
    // One state for every key read.
    k.io.pin();
    keys.iter().map(|key| SetValue::load(k, key)).collect()
}

/// SINTER: the members every set at `keys` has, in the order of the smallest set; with
/// `limit` (SINTERCARD), it stops after that many.
pub fn inter<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    keys: &[Bytes],
    limit: Option<u64>,
) -> Result<Vec<Bytes>> {
    let sets = load_all(k, keys)?;
    let Some(mut sets) = sets.into_iter().collect::<Option<Vec<SetValue>>>() else {
        return Ok(Vec::new());
    };
    sets.sort_by_key(|s| s.len());
    let Some((first, rest)) = sets.split_first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut cursor = 0;
    loop {
        let (page, next) = first.page(k, cursor, SCAN_CHUNK)?;
        'member: for m in page {
            for s in rest {
                if !s.contains(k, &m)? {
                    continue 'member;
                }
            }
            out.push(m);
            if limit.is_some_and(|l| out.len() as u64 >= l) {
                return Ok(out);
            }
        }
        if next == 0 {
            return Ok(out);
        }
        cursor = next;
    }
}

/// SUNION and SDIFF: the members of any set at `keys`, or those of the first no other has.
/// An all-integer result is sorted by value, as Redis returns such a result (an intset).
pub fn union_or_diff<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    keys: &[Bytes],
    diff: bool,
) -> Result<Vec<Bytes>> {
    let sets = load_all(k, keys)?;
    let mut out = Vec::new();
    if diff {
        let Some(Some(first)) = sets.first() else {
            return Ok(out);
        };
        'member: for m in first.members(k)? {
            for s in sets[1..].iter().flatten() {
                if s.contains(k, &m)? {
                    continue 'member;
                }
            }
            out.push(m);
        }
    } else {
        let mut seen = HashSet::new();
        for s in sets.iter().flatten() {
            for m in s.members(k)? {
                if seen.insert(m.clone()) {
                    out.push(m);
                }
            }
        }
    }
    let ints: Option<Vec<i64>> = out.iter().map(|m| as_int(m)).collect();
    if let Some(ints) = ints {
        let mut pairs: Vec<(i64, Bytes)> = ints.into_iter().zip(out).collect();
        pairs.sort_by_key(|(n, _)| *n);
        out = pairs.into_iter().map(|(_, m)| m).collect();
    }
    Ok(out)
}

/// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the result replaces whatever `dst` holds (its
/// expiry dropped), or deletes it when empty; its size.
pub(crate) fn store<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    algebra: SetAlgebra,
    dst: &[u8],
    keys: &[Bytes],
) -> Result<i64> {
    let result = match algebra {
        SetAlgebra::Inter => inter(k, keys, None)?,
        SetAlgebra::Union => union_or_diff(k, keys, false)?,
        SetAlgebra::Diff => union_or_diff(k, keys, true)?,
    };
    let old = k.get(dst)?;
    if result.is_empty() {
        if old.is_some() {
            k.remove(dst)?;
        }
        return Ok(0);
    }
    check_key(dst)?;
    let mut w = Writer::empty(old, enc, k.in_default_store(dst));
    for m in &result {
        w.add(k, m)?;
    }
    let n = w.len() as i64;
    w.finish(k, dst, None)?;
    Ok(n)
}

/// The packed payload of a large set's members (for a move under a store's prefix).
pub(crate) fn repack<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, rec: &Record) -> Result<Vec<u8>> {
    let s = SetValue::from_record(rec.clone())?;
    Ok(encode_packed(false, &s.members(k)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_payloads_keep_their_mode_and_refuse_damage() {
        let items = vec![Bytes::from_static(b"-2"), Bytes::from_static(b"7")];
        for intset in [true, false] {
            let p = Bytes::from(encode_packed(intset, &items));
            match decode_packed(&p).unwrap() {
                Members::Packed {
                    intset: i,
                    items: got,
                } => {
                    assert_eq!(i, intset);
                    assert_eq!(got, items);
                }
                Members::Large(_) => panic!("packed"),
            }
        }
        assert!(decode_packed(&Bytes::new()).is_err());
        let mut bad = encode_packed(true, &items);
        bad[0] = 9;
        assert!(decode_packed(&Bytes::from(bad)).is_err());
    }

    #[test]
    fn intset_lookups_follow_numeric_order() {
        let items: Vec<Bytes> = ["-10", "-1", "3", "20"]
            .iter()
            .map(|s| Bytes::from_static(s.as_bytes()))
            .collect();
        assert_eq!(find_int(&items, 3), Ok(2));
        assert_eq!(find_int(&items, 4), Err(3));
        assert_eq!(find_int(&items, -100), Err(0));
        // Not canonical integers: never intset members.
        assert_eq!(as_int(b"+1"), None);
        assert_eq!(as_int(b"01"), None);
        assert_eq!(as_int(b"-0"), None);
    }

    #[test]
    fn the_seeded_generator_stays_in_range_and_is_fixed() {
        let mut r = SeededRng(42);
        for n in [1, 2, 7, 1000] {
            for _ in 0..100 {
                assert!(r.below(n) < n);
            }
        }
        // Replicas apply SPOP with this generator: its sequence must never change.
        let mut r = SeededRng(0);
        assert_eq!(r.next(), 0xe220_a839_7b1d_cdaf);
    }
}
