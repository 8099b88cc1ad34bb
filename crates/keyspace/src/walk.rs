//! Walks over the live keys of a database in key order (SCAN, KEYS, DBSIZE, RANDOMKEY).

use bytes::Bytes;
use rialto_engine::{EngineIterator, IterOptions, KvEngine};
use rialto_lsm::Db;

use crate::error::Result;
use crate::layout::{next_prefix, Record, DATA};
use crate::stores::{catalog, Catalog};

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
    // Segments of the user-key order: (from, to (None: the end), engine prefix of its keys).
    type Segment = (Vec<u8>, Option<Vec<u8>>, Vec<u8>);
    let data = vec![DATA, db];
    let mut segments: Vec<Segment> = Vec::new();
    if db == 0 && stores.by_prefix_in(part).next().is_some() {
        let mut lo = Some(Vec::new());
        for s in stores.by_prefix_in(part) {
            if let Some(l) = lo.take() {
                segments.push((l, Some(s.prefix.clone()), data.clone()));
            }
            let end = next_prefix(&s.prefix);
            let end = (!end.is_empty()).then_some(end);
            let engine = catalog::version_key(s.id, s.current.number, b"");
            segments.push((s.prefix.clone(), end.clone(), engine));
            lo = end;
        }
        if let Some(l) = lo {
            segments.push((l, None, data));
        }
    } else {
        segments.push((Vec::new(), None, data));
    }
    for (lo, hi, prefix) in segments {
        if let (Some(f), Some(h)) = (from, &hi) {
            if f >= h.as_slice() {
                continue;
            }
        }
        let start = match from {
            Some(f) if f > lo.as_slice() => f,
            _ => lo.as_slice(),
        };
        let upper = match &hi {
            Some(h) => [prefix.as_slice(), h].concat(),
            None => next_prefix(&prefix),
        };
        let mut it = engine.iter(IterOptions {
            lower: Some([prefix.as_slice(), start].concat()),
            upper: Some(upper),
            snapshot: None,
        })?;
        it.seek_to_first();
        while it.valid() {
            let user = &it.key()[prefix.len()..];
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
