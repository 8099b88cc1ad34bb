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
/// reading the published state. `visit` returns `false` to stop; then the user key where a
/// later walk should resume is returned (`None`: the walk reached the end).
pub fn walk_keys(
    engine: &rialto_lsm::Db,
    db: u8,
    from: Option<&[u8]>,
    now_ms: i64,
    mut visit: impl FnMut(&[u8], &crate::keyspace::Record) -> bool,
) -> Result<Option<Vec<u8>>, rialto_engine::Error> {
    use rialto_engine::{EngineIterator, IterOptions, KvEngine};
    let (lo, hi) = crate::keyspace::data_range(db);
    let mut it = engine.iter(IterOptions {
        lower: Some(lo),
        upper: Some(hi),
        snapshot: None,
    })?;
    match from {
        Some(k) => it.seek(&crate::keyspace::data_key(db, k)),
        None => it.seek_to_first(),
    }
    while it.valid() {
        let Some(user) = crate::keyspace::user_key(db, it.key()) else {
            break;
        };
        // A record that does not decode is skipped here; reading the key reports it.
        if let Ok(rec) = crate::keyspace::Record::decode(bytes::Bytes::copy_from_slice(it.value()))
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
    Ok(None)
}
