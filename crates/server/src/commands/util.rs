//! Argument helpers shared by several commands.

use bytes::Bytes;

use crate::reply::{self, CmdResult};

/// Whether `arg` equals `word`, ignoring ASCII case (option names).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// An absolute expiry from a SET/GETEX-style option: `EX`/`PX` relative to `now_ms`,
/// `EXAT`/`PXAT` absolute; `seconds` multiplies by 1000. Non-positive amounts and overflow
/// get `ERR invalid expire time in '<cmd>' command`, as in Redis 7.
pub fn expire_option(
    arg: &[u8],
    seconds: bool,
    relative: bool,
    now_ms: i64,
    cmd: &str,
) -> CmdResult<i64> {
    let amount = reply::int_arg(arg)?;
    if amount <= 0 || (seconds && amount > i64::MAX / 1000) {
        return Err(reply::invalid_expire(cmd));
    }
    let ms = if seconds { amount * 1000 } else { amount };
    let at = if relative {
        ms.checked_add(now_ms)
            .ok_or_else(|| reply::invalid_expire(cmd))?
    } else {
        ms
    };
    if at <= 0 {
        return Err(reply::invalid_expire(cmd));
    }
    Ok(at)
}

/// The key arguments at `args[first..]` stepping by `step`.
pub fn keys_at(args: &[Bytes], first: usize, step: usize) -> impl Iterator<Item = &Bytes> {
    args.iter().skip(first).step_by(step)
}

/// Redis's `string2ll` check for values stored as strings (INCR and friends).
pub fn stored_int(v: &[u8]) -> CmdResult<i64> {
    reply::parse_i64(v).ok_or_else(reply::not_integer)
}

/// Visits the live keys of database `db` in key order, from the user key `from` (inclusive),
/// reading the published state. In database 0 a store's keys come from its current version
/// (`stores`), in their place in the key order. `visit` returns `false` to stop; then the user
/// key where a later walk should resume is returned (`None`: the walk reached the end).
pub fn walk_keys(
    engine: &rialto_lsm::Db,
    stores: &crate::stores::Catalog,
    db: u8,
    from: Option<&[u8]>,
    now_ms: i64,
    mut visit: impl FnMut(&[u8], &crate::keyspace::Record) -> bool,
) -> Result<Option<Vec<u8>>, rialto_engine::Error> {
    use crate::keyspace::{next_prefix, DATA};
    use rialto_engine::{EngineIterator, IterOptions, KvEngine};
    // Segments of the user-key order: (from, to (None: the end), engine prefix of its keys).
    type Segment = (Vec<u8>, Option<Vec<u8>>, Vec<u8>);
    let data = vec![DATA, db];
    let mut segments: Vec<Segment> = Vec::new();
    if db == 0 && !stores.is_empty() {
        let mut lo = Some(Vec::new());
        for s in stores.by_prefix() {
            if let Some(l) = lo.take() {
                segments.push((l, Some(s.prefix.clone()), data.clone()));
            }
            let end = next_prefix(&s.prefix);
            let end = (!end.is_empty()).then_some(end);
            let engine = crate::stores::catalog::version_key(s.id, s.current.number, b"");
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
            if let Ok(rec) =
                crate::keyspace::Record::decode(bytes::Bytes::copy_from_slice(it.value()))
            {
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
