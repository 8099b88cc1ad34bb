//! Walks over the live keys of a database in key order (SCAN, KEYS, DBSIZE, RANDOMKEY), and
//! random draws of its keys (RANDOMKEY).

use bytes::Bytes;
use rand::Rng;
use rialto_engine::{EngineIterator, IterOptions, KvEngine};
use rialto_lsm::Db;

use crate::error::Result;
use crate::layout::{next_prefix, Record, DATA};
use crate::stores::{catalog, Catalog};

/// A stretch of database `db`'s user-key order: user keys `[from, to)` (`to` `None`: to the
/// end), stored under the engine prefix `prefix` (the database's data keys, or a store's
/// current version).
struct Segment {
    from: Vec<u8>,
    to: Option<Vec<u8>>,
    prefix: Vec<u8>,
}

impl Segment {
    /// The engine keys of the segment: `[lower, upper)`.
    fn engine_range(&self, from: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let lower = [self.prefix.as_slice(), from].concat();
        let upper = match &self.to {
            Some(h) => [self.prefix.as_slice(), h].concat(),
            None => next_prefix(&self.prefix),
        };
        (lower, upper)
    }
}

/// The segments of database `db`'s key order, in order: in database 0, the default store
/// between the stores' prefixes and each store's current version inside its prefix, as
/// partition `part` routes them.
fn segments(stores: &Catalog, part: u32, db: u8) -> Vec<Segment> {
    let data = vec![DATA, db];
    let mut segments = Vec::new();
    if db == 0 && stores.by_prefix_in(part).next().is_some() {
        let mut lo = Some(Vec::new());
        for s in stores.by_prefix_in(part) {
            if let Some(l) = lo.take() {
                segments.push(Segment {
                    from: l,
                    to: Some(s.prefix.clone()),
                    prefix: data.clone(),
                });
            }
            let end = next_prefix(&s.prefix);
            let end = (!end.is_empty()).then_some(end);
            segments.push(Segment {
                from: s.prefix.clone(),
                to: end.clone(),
                prefix: catalog::version_key(s.id, s.current.number, b""),
            });
            lo = end;
        }
        if let Some(l) = lo {
            segments.push(Segment {
                from: l,
                to: None,
                prefix: data,
            });
        }
    } else {
        segments.push(Segment {
            from: Vec::new(),
            to: None,
            prefix: data,
        });
    }
    segments
}

/// Visits the live keys of database `db` in key order, from the user key `from` (inclusive),
/// reading the published state. In database 0 a store's keys come from its current version
/// (`stores`), in their place in the key order. `visit` returns `false` to stop; then the user
/// key where a later walk should resume is returned (`None`: the walk reached the end).
///
/// Stores are routed as partition `part` holds them (in cluster mode a walk answers for one
/// partition's slots; keys of other partitions it visits are the caller's to skip).
pub(crate) fn walk_keys(
    engine: &Db,
    stores: &Catalog,
    part: u32,
    db: u8,
    from: Option<&[u8]>,
    now_ms: i64,
    mut visit: impl FnMut(&[u8], &Record) -> bool,
) -> Result<Option<Vec<u8>>> {
    for seg in segments(stores, part, db) {
        if let (Some(f), Some(h)) = (from, &seg.to) {
            if f >= h.as_slice() {
                continue;
            }
        }
        let start = match from {
            Some(f) if f > seg.from.as_slice() => f,
            _ => seg.from.as_slice(),
        };
        let (lower, upper) = seg.engine_range(start);
        let mut it = engine.iter(IterOptions {
            lower: Some(lower),
            upper: Some(upper),
            snapshot: None,
        })?;
        it.seek_to_first();
        while it.valid() {
            let user = &it.key()[seg.prefix.len()..];
            // A record that does not decode is skipped here; reading the key reports it.
            if let Ok(rec) = Record::decode(Bytes::copy_from_slice(it.value())) {
                if !rec.expired(now_ms) && !visit(user, &rec) {
                    let mut next = user.to_vec();
                    next.push(0);
                    return Ok(Some(next));
                }
            }
            it.next();
        }
        it.status()?;
    }
    Ok(None)
}

/// Most draws of a random key before it gives up: draws that land outside the database in a
/// memtable cost no read, so there may be many.
const MAX_DRAWS: usize = 4096;
/// Most engine reads (blocks and point lookups) the draws of one random key make.
const MAX_DRAW_READS: u64 = 256;

/// What [`random_key`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RandomKey {
    /// A live key, each of the database's live keys `accept` takes equally likely.
    Found(Vec<u8>),
    /// The database holds no entry at all.
    Empty,
    /// Every draw within the bounds was rejected (few live keys among many other entries,
    /// or most keys refused by `accept`): the caller decides another way.
    Undecided,
}

/// A live key of database `db` drawn at random from the published state at `now_ms`, each
/// live key `accept` takes equally likely (`rialto_lsm::Sampler`): a drawn key that has
/// expired, does not decode or is refused by `accept` is drawn again, within bounds of
/// [`MAX_DRAWS`] draws and [`MAX_DRAW_READS`] engine reads.
pub(crate) fn random_key(
    engine: &Db,
    stores: &Catalog,
    part: u32,
    db: u8,
    now_ms: i64,
    rng: &mut impl Rng,
    mut accept: impl FnMut(&[u8]) -> bool,
) -> Result<RandomKey> {
    let segments = segments(stores, part, db);
    let ranges: Vec<(Vec<u8>, Vec<u8>)> =
        segments.iter().map(|s| s.engine_range(&s.from)).collect();
    let mut sampler = engine.sampler(&ranges)?;
    if sampler.is_empty() {
        return Ok(RandomKey::Empty);
    }
    for _ in 0..MAX_DRAWS {
        if sampler.work() >= MAX_DRAW_READS {
            break;
        }
        let Some((key, value)) = sampler.draw(rng)? else {
            continue;
        };
        // The ranges are disjoint: the key is in exactly one.
        let Some(i) = ranges.iter().position(|(lo, hi)| *lo <= key && key < *hi) else {
            continue;
        };
        let user = &key[segments[i].prefix.len()..];
        let live = Record::decode(value).is_ok_and(|r| !r.expired(now_ms));
        if live && accept(user) {
            return Ok(RandomKey::Found(user.to_vec()));
        }
    }
    Ok(RandomKey::Undecided)
}
