//! Writes on keys whatever their value: deletion, expiry, renaming, the expiry pass.

use bytes::Bytes;
use rialto_lsm::Db;
use rialto_txn::TxnContext;

use super::W;
use crate::error::{Error, Result};
use crate::keys::{check_key, Keys, RawWrite};
use crate::layout;
use crate::op::ExpireCond;
use crate::stores::catalog::version_range;
use crate::stores::Stores;
use crate::value::Value;

pub(super) fn del(k: &mut W<'_, '_, '_>, keys: &[Bytes]) -> Result<Value> {
    let mut n = 0;
    for key in keys {
        n += i64::from(k.remove(key)?);
    }
    Ok(Value::Int(n))
}

pub(super) fn expire(
    k: &mut W<'_, '_, '_>,
    key: &[u8],
    at: i64,
    cond: ExpireCond,
) -> Result<Value> {
    let Some(rec) = k.get(key)? else {
        return Ok(Value::Int(0));
    };
    let cur = rec.expire_at_ms;
    let refused = (cond.nx && cur.is_some())
        || (cond.xx && cur.is_none())
        // No expiry counts as infinite: GT never beats it, LT always does.
        || (cond.gt && cur.is_none_or(|c| at <= c))
        || (cond.lt && cur.is_some_and(|c| at >= c));
    if refused {
        return Ok(Value::Int(0));
    }
    if at <= k.now_ms {
        k.remove(key)?;
    } else {
        k.retime(key, &rec, Some(at));
    }
    Ok(Value::Int(1))
}

pub(super) fn persist(k: &mut W<'_, '_, '_>, key: &[u8]) -> Result<Value> {
    let Some(rec) = k.get(key)? else {
        return Ok(Value::Int(0));
    };
    if rec.expire_at_ms.is_none() {
        return Ok(Value::Int(0));
    }
    k.retime(key, &rec, None);
    Ok(Value::Int(1))
}

pub(super) fn rename(k: &mut W<'_, '_, '_>, src: &[u8], dst: &[u8], nx: bool) -> Result<Value> {
    let done = |moved: bool| {
        if nx {
            Value::Int(i64::from(moved))
        } else {
            Value::Ok
        }
    };
    let Some(rec) = k.get(src)? else {
        return Err(Error::NoSuchKey);
    };
    check_key(dst)?;
    if src == dst {
        return Ok(if nx { Value::Int(0) } else { Value::Ok });
    }
    let old_dst = k.get(dst)?;
    if nx && old_dst.is_some() {
        return Ok(done(false));
    }
    // A large collection moves as its header (its members are keyed by version), unless it
    // moves under a store's prefix, where collections are packed.
    let (large, payload) = if rec.large && !k.in_default_store(dst) {
        (false, Bytes::from(crate::collections::repack(k, &rec)?))
    } else {
        (rec.large, rec.value.clone())
    };
    k.remove(src)?;
    k.put_record(
        dst,
        old_dst.as_ref(),
        rec.kind,
        large,
        &payload,
        rec.expire_at_ms,
    );
    Ok(done(true))
}

/// The view of database `db` through `k`'s transaction.
fn in_db<'a, 'b, 'c, 'd>(k: &'d mut W<'a, 'b, 'c>, db: u8) -> W<'d, 'b, 'c>
where
    'a: 'd,
{
    Keys {
        io: &mut *k.io,
        db,
        now_ms: k.now_ms,
        stores: k.stores,
        rt: k.rt,
        watches: k.watches,
    }
}

/// The payload and encoding `rec` (the record of `src` in `k`'s database) takes as a new
/// record at `dst` of `d`'s database: a string or a packed collection as it is; a large
/// collection's members copied under a new version (`copy`), or kept (`!copy`: a move);
/// packed on the way under a store's prefix, where collections are packed.
fn payload_at(
    k: &mut W<'_, '_, '_>,
    rec: &crate::Record,
    dst_db: u8,
    dst: &[u8],
    copy: bool,
) -> Result<(bool, Bytes)> {
    if !rec.large {
        return Ok((false, rec.value.clone()));
    }
    if !in_db(k, dst_db).in_default_store(dst) {
        return Ok((false, Bytes::from(crate::collections::repack(k, rec)?)));
    }
    if !copy {
        return Ok((true, rec.value.clone()));
    }
    Ok((
        true,
        Bytes::from(crate::collections::copy_large(k.io, &rec.value)?),
    ))
}

pub(super) fn copy(
    k: &mut W<'_, '_, '_>,
    src: &[u8],
    dst: &[u8],
    dst_db: u8,
    replace: bool,
) -> Result<Value> {
    let Some(rec) = k.get(src)? else {
        return Ok(Value::Int(0));
    };
    check_key(dst)?;
    let old = in_db(k, dst_db).get(dst)?;
    if old.is_some() && !replace {
        return Ok(Value::Int(0));
    }
    let (large, payload) = payload_at(k, &rec, dst_db, dst, true)?;
    in_db(k, dst_db).put_record(
        dst,
        old.as_ref(),
        rec.kind,
        large,
        &payload,
        rec.expire_at_ms,
    );
    Ok(Value::Int(1))
}

pub(super) fn move_to(k: &mut W<'_, '_, '_>, key: &[u8], dst_db: u8) -> Result<Value> {
    let Some(rec) = k.get(key)? else {
        return Ok(Value::Int(0));
    };
    if in_db(k, dst_db).exists(key)? {
        return Ok(Value::Int(0));
    }
    let (large, payload) = payload_at(k, &rec, dst_db, key, false)?;
    k.remove(key)?;
    in_db(k, dst_db).put_record(key, None, rec.kind, large, &payload, rec.expire_at_ms);
    Ok(Value::Int(1))
}

/// Deletes each key whose record still carries the entry's exact time and has expired (a
/// newer SET, PERSIST or EXPIRE made the entry stale), and removes every entry.
pub(super) fn expire_due(k: &mut W<'_, '_, '_>, entries: &[(u8, i64, Bytes)]) -> Result<Value> {
    let mut deleted = 0i64;
    for (db, at, key) in entries {
        let mut keys = Keys {
            io: &mut *k.io,
            db: *db,
            now_ms: k.now_ms,
            stores: k.stores,
            rt: k.rt,
            watches: k.watches,
        };
        // A record that does not decode is left alone (reading it reports the damage).
        let live = keys.get_including_expired(key).ok().flatten();
        if live.is_some_and(|r| r.expire_at_ms == Some(*at) && r.expired(keys.now_ms)) {
            keys.delete(key);
            deleted += 1;
        }
        keys.io
            .delete_raw(&crate::layout::expiry_key(*db, *at, key));
    }
    Ok(Value::Int(deleted))
}

/// Deletes up to `limit` keys of what FLUSHDB `db` (or FLUSHALL) covers, in key order: the
/// data and expiry keys, and in database 0 the live versions of every store (a version being
/// pushed is not reached: it replaces what it replaces). Replies how many it deleted.
pub(super) fn flush_step(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    db: u8,
    all: bool,
    limit: u64,
) -> Result<Value> {
    let mut ranges = if all {
        vec![(vec![layout::DATA], vec![layout::EXPIRY + 1])]
    } else {
        vec![layout::data_range(db), layout::expiry_range(db)]
    };
    if all || db == 0 {
        for s in stores.exec_catalog().iter() {
            ranges.extend(s.live_versions().map(|v| version_range(s.id, v)));
        }
    }
    stores.watches.flushed(db, all);
    let mut left = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut deleted = 0i64;
    for (lo, hi) in ranges {
        if left == 0 {
            break;
        }
        let keys = tx.first_keys(&lo, &hi, left)?;
        left -= keys.len();
        deleted += keys.len() as i64;
        for k in keys {
            if stores.watches.any() {
                if let Some((db, user)) = watched_key_of(&k) {
                    stores.watches.touch_watched(db, user, true);
                }
            }
            tx.delete(&k);
        }
    }
    Ok(Value::Int(deleted))
}

/// One step of a cluster partition's flush ([`crate::OpKind::FlushSlots`]).
pub(super) fn flush_slots(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    (first, last): (u16, u16),
    from: &[u8],
    limit: u64,
) -> Result<Value> {
    let in_slots = |user: &[u8]| (first..=last).contains(&crate::slot::key_slot(user));
    stores.watches.flushed(0, false);
    let mut left = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut last_seen: Option<Vec<u8>> = None;
    for (lo, hi) in [layout::data_range(0), layout::expiry_range(0)] {
        // Resume just after `from`.
        let lo = if from.is_empty() || from < lo.as_slice() {
            lo
        } else {
            let mut after = from.to_vec();
            after.push(0);
            after
        };
        if lo >= hi || left == 0 {
            continue;
        }
        let keys = tx.first_keys(&lo, &hi, left)?;
        left -= keys.len();
        for k in keys {
            let user = if k.first() == Some(&layout::DATA) {
                k.get(2..)
            } else {
                layout::parse_expiry_key(&k).map(|(_, _, user)| user)
            };
            if let Some(user) = user.filter(|u| in_slots(u)) {
                if k.first() == Some(&layout::DATA) && stores.watches.any() {
                    stores.watches.touch_watched(0, user, true);
                }
                tx.delete(&k);
            }
            last_seen = Some(k);
        }
        if left == 0 {
            return Ok(last_seen.map_or(Value::Null, |k| Value::Bulk(Bytes::from(k))));
        }
    }
    Ok(Value::Null)
}

/// The database and user key an engine key a flush deletes holds, for WATCH: a data key, or
/// a store version's key (database 0). Expiry-index keys hold none.
fn watched_key_of(engine_key: &[u8]) -> Option<(u8, &[u8])> {
    match *engine_key.first()? {
        layout::DATA => Some((*engine_key.get(1)?, engine_key.get(2..)?)),
        crate::stores::catalog::VERSION_DATA => Some((0, engine_key.get(9..)?)),
        _ => None,
    }
}

/// SWAPDB a b: the two logical databases exchange their contents, O(1): the database map
/// changes (and is written), the data does not. As Redis, the watches of keys of either
/// database are touched by its rules ([`crate::watch::Watches::touch_swapped`]), and every
/// blocked client of either database is served if its key now holds something. Database 0
/// holding stores cannot move.
pub(super) fn swap_db(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    now_ms: i64,
    a: u8,
    b: u8,
) -> Result<Value> {
    if a == b {
        return Ok(Value::Ok);
    }
    if (a == 0 || b == 0) && !stores.exec_catalog().is_empty() {
        return Err(Error::StoresPinDatabaseZero);
    }
    let (pa, pb) = (stores.dbs.physical(a), stores.dbs.physical(b));
    // Which watched keys exist where, read before the map changes.
    let mut touches = Vec::new();
    for (logical, from, to) in [(a, pa, pb), (b, pb, pa)] {
        for key in stores.watches.watched_in(logical) {
            let here = tx.get(&layout::data_key(from, &key))?.is_some();
            let there = match tx.get(&layout::data_key(to, &key))? {
                None => None,
                Some(raw) => Some(layout::Record::decode(raw)?.expired(now_ms)),
            };
            touches.push((logical, key, here, there));
        }
    }
    let record = stores.dbs.swap(a, b);
    tx.put(&[crate::dbmap::DB_MAP], &record);
    let dbs = std::sync::Arc::clone(&stores.dbs);
    tx.after_commit(Box::new(move |failure| {
        if failure.is_none() {
            dbs.publish(&record);
        }
    }));
    for (logical, key, here, there) in touches {
        stores.watches.touch_swapped(logical, &key, here, there);
    }
    stores.watches.blocked.signal_db(a);
    stores.watches.blocked.signal_db(b);
    Ok(Value::Ok)
}
