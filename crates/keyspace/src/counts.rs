//! Key counts kept as the data changes (DBSIZE, `INFO keyspace`): how many keys, and how
//! many of them with a TTL, each database's default store and each store version holds per
//! partition, without a walk.
//!
//! Counted, as Redis counts them: records present, including keys whose time has passed but
//! which the expiry pass has not removed yet.
//!
//! How the counts stay true:
//! - Every write of a data key or of a counted version's key goes through a merger
//!   transaction, whose [`WriteObserver`] sees the record it replaces: the count moves by
//!   whether a record existed before and exists after. A transaction's moves are applied only
//!   if its writes join the group; a savepoint rolled back drops its moves too.
//! - At the end of each group the counts it moved are staged with it as count records, so the
//!   journal holds them atomically with the data they describe; recovery reads them back.
//! - A pushed version's tables are ingested, not written: its count is set to the records the
//!   push loaded (per partition) before anything else writes to it. A version is counted from
//!   then until it is retired; writes to versions not counted (retired, or never loaded on this
//!   node) are not observed.
//! - A database written before counts existed has no format record: its counts are computed
//!   once by a walk at open and written with it.
//!
//! ```text
//! format record  0x0C 0x00                                    -> 0x01
//! db count       0x0C 0x01 | db (1) | partition (4, BE)        -> keys (8, LE) | expires (8, LE)
//! version count  0x0C 0x03 | id (4, BE) | version (4, BE) | partition (4, BE) -> the same
//! ```
//!
//! The same observer nets, per group, how many records name each large collection's version
//! (`collections`): a version no record names any more gets its `released` record in the
//! group, for the reclaim pass to delete its members.
//!
//! Threads: moves come from the one thread executing merger groups; `set_version` and
//! `forget_version` from push and maintenance threads; readers take a snapshot. All under one
//! mutex held for a few map operations.

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;
use rialto_txn::WriteObserver;

use crate::collections;
use crate::layout;
use crate::stores::catalog::VERSION_DATA;

/// Prefix of count records.
pub const COUNTS: u8 = 0x0C;
const FORMAT_TAG: u8 = 0x00;
const FORMAT: u8 = 1;

/// What a count covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// A database's default store (keys outside every store), in one partition.
    Db { db: u8, part: u32 },
    /// One version of a store, in one partition.
    Version { id: u32, version: u32, part: u32 },
}

/// Keys, and keys with a TTL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub keys: i64,
    pub expires: i64,
}

impl Tally {
    fn add(&mut self, d: Tally) {
        self.keys += d.keys;
        self.expires += d.expires;
    }
}

/// A fast hasher for the few small units (FxHash's mixing): the map is touched on every
/// counted write.
#[derive(Default)]
struct UnitHasher(u64);

impl std::hash::Hasher for UnitHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type Fast = std::hash::BuildHasherDefault<UnitHasher>;

/// One observed change.
#[derive(Debug, Clone, Copy)]
enum Move {
    /// A unit's counts move.
    Count(Unit, Tally),
    /// One record more (+1) or fewer (-1) names a collection version.
    Ref(u64, i64),
}

#[derive(Default)]
struct Inner {
    live: HashMap<Unit, Tally, Fast>,
    /// Versions whose writes are counted.
    versions: HashSet<(u32, u32), Fast>,
    /// Moves of the running transaction, not yet in `live` (or `refs`).
    pending: Vec<Move>,
    /// How many more records name each collection version than before the group (see
    /// `collections`): a version that ends the group below zero is named by none.
    refs: HashMap<u64, i64, Fast>,
    /// Units moved since the last group's count records.
    dirty: HashSet<Unit, Fast>,
    /// Count records to delete with the next group (versions forgotten).
    dropped: Vec<Unit>,
    /// Whether the format record is written (or staged).
    formatted: bool,
}

/// The counts; see the module docs.
pub struct KeyCounts {
    partitions: u32,
    inner: Mutex<Inner>,
}

impl KeyCounts {
    pub fn new(partitions: u32) -> KeyCounts {
        KeyCounts {
            partitions: partitions.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn part(&self, user_key: &[u8]) -> u32 {
        crate::slot::key_partition(user_key, self.partitions)
    }

    /// The unit an engine key counts in, if any (versions only while counted).
    fn unit_of(&self, key: &[u8], inner: &Inner) -> Option<Unit> {
        match *key.first()? {
            layout::DATA if key.len() >= 2 => Some(Unit::Db {
                db: key[1],
                part: self.part(&key[2..]),
            }),
            VERSION_DATA if key.len() >= 9 => {
                let id = u32::from_be_bytes(key[1..5].try_into().ok()?);
                let version = u32::from_be_bytes(key[5..9].try_into().ok()?);
                inner
                    .versions
                    .contains(&(id, version))
                    .then(|| Unit::Version {
                        id,
                        version,
                        part: self.part(&key[9..]),
                    })
            }
            _ => None,
        }
    }

    /// The tally of `unit` now (every transaction executed so far).
    #[cfg(test)]
    fn get(&self, unit: Unit) -> Tally {
        self.inner
            .lock()
            .live
            .get(&unit)
            .copied()
            .unwrap_or_default()
    }

    /// Sums `f(unit)`'s tallies over the units `f` picks.
    pub fn sum(&self, mut pick: impl FnMut(&Unit) -> bool) -> Tally {
        let inner = self.inner.lock();
        let mut t = Tally::default();
        for (u, v) in &inner.live {
            if pick(u) {
                t.add(*v);
            }
        }
        t
    }

    /// Starts counting version `version` of store `id`, which holds `per_part[p]` records in
    /// partition `p` (loaded as tables, none with a TTL). Persisted with the next group.
    pub fn set_version(&self, id: u32, version: u32, per_part: &[u64]) {
        Self::set_locked(&mut self.inner.lock(), id, version, per_part);
    }

    fn set_locked(inner: &mut Inner, id: u32, version: u32, per_part: &[u64]) {
        inner.versions.insert((id, version));
        for (p, &n) in per_part.iter().enumerate() {
            let unit = Unit::Version {
                id,
                version,
                part: p as u32,
            };
            inner.live.insert(
                unit,
                Tally {
                    keys: n as i64,
                    expires: 0,
                },
            );
            inner.dirty.insert(unit);
        }
    }

    /// Starts counting version `version` of store `id` as empty, unless it is counted.
    pub fn track(&self, id: u32, version: u32) {
        let mut inner = self.inner.lock();
        if !inner.versions.contains(&(id, version)) {
            Self::set_locked(&mut inner, id, version, &vec![0; self.partitions as usize]);
        }
    }

    /// Stops counting version `version` of store `id` (retired or removed); its count
    /// records go with the next group.
    pub fn forget_version(&self, id: u32, version: u32) {
        let mut inner = self.inner.lock();
        if !inner.versions.remove(&(id, version)) {
            return;
        }
        let gone: Vec<Unit> = inner
            .live
            .keys()
            .filter(|u| matches!(u, Unit::Version { id: i, version: v, .. } if *i == id && *v == version))
            .copied()
            .collect();
        for u in gone {
            inner.live.remove(&u);
            inner.dirty.remove(&u);
            inner.dropped.push(u);
        }
    }

    /// Stops counting every version of store `id` (deleted).
    pub fn forget_store(&self, id: u32) {
        let versions: Vec<u32> = self
            .inner
            .lock()
            .versions
            .iter()
            .filter(|(i, _)| *i == id)
            .map(|(_, v)| *v)
            .collect();
        for v in versions {
            self.forget_version(id, v);
        }
    }

    /// Whether version `version` of store `id` is counted.
    #[cfg(test)]
    fn counts_version(&self, id: u32, version: u32) -> bool {
        self.inner.lock().versions.contains(&(id, version))
    }

    /// Loads the count records; `false` if the database has no format record (counts were
    /// never kept in it).
    pub fn load(&self, records: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> bool {
        // Only a unit counted in `live` may be both dropped and re-set before the next group;
        // `group_writes` writes deletions first, so the later value wins.
        let mut inner = self.inner.lock();
        let mut formatted = false;
        for (k, v) in records {
            if k == format_key() {
                formatted = true;
                inner.formatted = true;
                continue;
            }
            let (Some(unit), Some(t)) = (decode_unit(&k), decode_tally(&v)) else {
                continue;
            };
            if let Unit::Version { id, version, .. } = unit {
                inner.versions.insert((id, version));
            }
            inner.live.insert(unit, t);
        }
        formatted
    }

    /// Replaces every count with `counted` (a walk's result) and marks them all for writing,
    /// with the format record.
    pub fn reset(&self, counted: std::collections::HashMap<Unit, Tally>) {
        let mut inner = self.inner.lock();
        let old: Vec<Unit> = inner.live.keys().copied().collect();
        inner.dropped.extend(old);
        inner.versions = counted
            .keys()
            .filter_map(|u| match u {
                Unit::Version { id, version, .. } => Some((*id, *version)),
                Unit::Db { .. } => None,
            })
            .collect();
        inner.dirty = counted.keys().copied().collect();
        inner.live = counted.into_iter().collect();
        inner.formatted = false;
    }

    /// The unit a user key of `db` (default store) counts in; for walks.
    pub fn db_unit(&self, db: u8, user_key: &[u8]) -> Unit {
        Unit::Db {
            db,
            part: self.part(user_key),
        }
    }

    /// The unit a user key of a store version counts in; for walks.
    pub fn version_unit(&self, id: u32, version: u32, user_key: &[u8]) -> Unit {
        Unit::Version {
            id,
            version,
            part: self.part(user_key),
        }
    }
}

fn has_ttl(record: &[u8]) -> bool {
    record.first().is_some_and(|f| f & layout::HAS_EXPIRY != 0)
}

impl WriteObserver for KeyCounts {
    fn observes(&self, key: &[u8]) -> bool {
        match key.first() {
            Some(&layout::DATA) => true,
            Some(&VERSION_DATA) => {
                let inner = self.inner.lock();
                self.unit_of(key, &inner).is_some()
            }
            _ => false,
        }
    }

    fn staged(&self, key: &[u8], old: Option<&[u8]>, new: Option<&[u8]>) {
        // Large collections live in the default store only.
        if key.first() == Some(&layout::DATA) {
            let old_v = old.and_then(collections::version_of_record);
            let new_v = new.and_then(collections::version_of_record);
            if old_v != new_v {
                let mut inner = self.inner.lock();
                inner.pending.extend(old_v.map(|v| Move::Ref(v, -1)));
                inner.pending.extend(new_v.map(|v| Move::Ref(v, 1)));
            }
        }
        let flag = |r: Option<&[u8]>| (i64::from(r.is_some()), i64::from(r.is_some_and(has_ttl)));
        let (ok, oe) = flag(old);
        let (nk, ne) = flag(new);
        if (ok, oe) == (nk, ne) {
            return;
        }
        let mut inner = self.inner.lock();
        if let Some(unit) = self.unit_of(key, &inner) {
            inner.pending.push(Move::Count(
                unit,
                Tally {
                    keys: nk - ok,
                    expires: ne - oe,
                },
            ));
        }
    }

    fn mark(&self) -> usize {
        self.inner.lock().pending.len()
    }

    fn cut(&self, mark: usize) {
        self.inner.lock().pending.truncate(mark);
    }

    fn committed(&self) {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        for m in inner.pending.drain(..) {
            match m {
                Move::Count(unit, d) => {
                    inner.live.entry(unit).or_default().add(d);
                    inner.dirty.insert(unit);
                }
                Move::Ref(v, d) => *inner.refs.entry(v).or_default() += d,
            }
        }
    }

    fn group_writes(&self) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let mut inner = self.inner.lock();
        if inner.dirty.is_empty() && inner.dropped.is_empty() && inner.refs.is_empty() {
            return Vec::new();
        }
        let inner = &mut *inner;
        let mut out = Vec::with_capacity(inner.dirty.len() + 1);
        for (v, d) in inner.refs.drain() {
            if d < 0 {
                out.push((collections::released_key(v), Some(Vec::new())));
            }
        }
        for u in inner.dropped.drain(..) {
            out.push((unit_key(&u), None));
        }
        for u in inner.dirty.drain() {
            let t = inner.live.get(&u).copied().unwrap_or_default();
            out.push((unit_key(&u), Some(encode_tally(t))));
        }
        if !inner.formatted {
            inner.formatted = true;
            out.push((format_key(), Some(vec![FORMAT])));
        }
        out
    }
}

/// The format record's key.
pub fn format_key() -> Vec<u8> {
    vec![COUNTS, FORMAT_TAG]
}

/// `[lower, upper)` of every count record.
pub fn counts_range() -> (Vec<u8>, Vec<u8>) {
    (vec![COUNTS], vec![COUNTS + 1])
}

fn unit_key(u: &Unit) -> Vec<u8> {
    let mut k = Vec::with_capacity(15);
    k.push(COUNTS);
    match *u {
        Unit::Db { db, part } => {
            k.push(layout::DATA);
            k.push(db);
            k.extend_from_slice(&part.to_be_bytes());
        }
        Unit::Version { id, version, part } => {
            k.push(VERSION_DATA);
            k.extend_from_slice(&id.to_be_bytes());
            k.extend_from_slice(&version.to_be_bytes());
            k.extend_from_slice(&part.to_be_bytes());
        }
    }
    k
}

fn decode_unit(k: &[u8]) -> Option<Unit> {
    let be = |b: &[u8]| b.try_into().ok().map(u32::from_be_bytes);
    match k {
        [COUNTS, layout::DATA, db, part @ ..] if part.len() == 4 => Some(Unit::Db {
            db: *db,
            part: be(part)?,
        }),
        [COUNTS, VERSION_DATA, rest @ ..] if rest.len() == 12 => Some(Unit::Version {
            id: be(&rest[0..4])?,
            version: be(&rest[4..8])?,
            part: be(&rest[8..12])?,
        }),
        _ => None,
    }
}

fn encode_tally(t: Tally) -> Vec<u8> {
    let mut v = Vec::with_capacity(16);
    v.extend_from_slice(&t.keys.to_le_bytes());
    v.extend_from_slice(&t.expires.to_le_bytes());
    v
}

fn decode_tally(v: &[u8]) -> Option<Tally> {
    if v.len() != 16 {
        return None;
    }
    Some(Tally {
        keys: i64::from_le_bytes(v[0..8].try_into().ok()?),
        expires: i64::from_le_bytes(v[8..16].try_into().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ttl: bool) -> Vec<u8> {
        layout::record_header(ttl.then_some(5)).0[..if ttl { 9 } else { 1 }].to_vec()
    }

    #[test]
    fn moves_count_only_when_committed_and_cut_drops_them() {
        let c = KeyCounts::new(1);
        let k = layout::data_key(0, b"a");
        let u = Unit::Db { db: 0, part: 0 };
        c.staged(&k, None, Some(&rec(false)));
        c.cut(0);
        c.committed();
        assert_eq!(c.get(u), Tally::default());
        c.staged(&k, None, Some(&rec(true)));
        let m = c.mark();
        c.staged(&k, Some(&rec(true)), None);
        c.cut(m);
        c.committed();
        assert_eq!(
            c.get(u),
            Tally {
                keys: 1,
                expires: 1
            }
        );
        c.staged(&k, Some(&rec(true)), Some(&rec(false)));
        c.committed();
        assert_eq!(
            c.get(u),
            Tally {
                keys: 1,
                expires: 0
            }
        );
    }

    /// The records a series of group writes leaves, as recovery reads them.
    fn apply(
        store: &mut std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
        w: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) {
        for (k, v) in w {
            match v {
                Some(v) => store.insert(k, v),
                None => store.remove(&k),
            };
        }
    }

    #[test]
    fn group_writes_round_trip_through_load() {
        let mut store = std::collections::BTreeMap::new();
        let c = KeyCounts::new(4);
        c.staged(&layout::data_key(2, b"x"), None, Some(&rec(false)));
        c.committed();
        c.set_version(7, 3, &[5, 0, 2, 1]);
        apply(&mut store, c.group_writes());
        assert!(c.group_writes().is_empty(), "nothing moved since");
        let d = KeyCounts::new(4);
        assert!(d.load(store.clone()));
        assert_eq!(
            d.sum(|_| true),
            Tally {
                keys: 9,
                expires: 0
            }
        );
        assert!(d.counts_version(7, 3));
        d.forget_version(7, 3);
        assert_eq!(
            d.sum(|_| true),
            Tally {
                keys: 1,
                expires: 0
            }
        );
        apply(&mut store, d.group_writes());
        let e = KeyCounts::new(4);
        assert!(e.load(store));
        assert!(!e.counts_version(7, 3));
        assert_eq!(
            e.sum(|_| true),
            Tally {
                keys: 1,
                expires: 0
            }
        );
        assert!(!KeyCounts::new(1).load(Vec::new()), "no format record");
    }

    #[test]
    fn versions_not_counted_are_not_observed() {
        let c = KeyCounts::new(1);
        let k = crate::stores::catalog::version_key(1, 2, b"k");
        assert!(!c.observes(&k));
        c.set_version(1, 2, &[10]);
        assert!(c.observes(&k));
        c.staged(&k, Some(&rec(false)), None);
        c.committed();
        assert_eq!(
            c.get(Unit::Version {
                id: 1,
                version: 2,
                part: 0
            })
            .keys,
            9
        );
    }
}
