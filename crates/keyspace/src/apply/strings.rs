//! String writes: SET and its variants, APPEND, SETRANGE, the increments.

use bytes::Bytes;
use rialto_resp::parse_redis_int;

use super::W;
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value_len};
use crate::op::{BadTime, Cond, Set, TtlChange};
use crate::value::Value;

fn old_value(old: &Option<crate::Record>) -> Value {
    match old {
        Some(r) => Value::Bulk(r.value.clone()),
        None => Value::Null,
    }
}

pub(super) fn set(k: &mut W<'_, '_, '_>, s: &Set) -> Result<Value> {
    check_key(&s.key)?;
    check_value_len(s.value.len())?;
    // No read of the old value when nothing depends on it (the common case).
    if s.cond.is_none() && !s.get && !s.keep_ttl {
        k.set(&s.key, &s.value, s.expire_at_ms);
        return Ok(Value::Ok);
    }
    let old = if s.get {
        k.get_string(&s.key)?
    } else {
        k.get(&s.key)?
    };
    let blocked = match s.cond {
        Some(Cond::Nx) => old.is_some(),
        Some(Cond::Xx) => old.is_none(),
        None => false,
    };
    if blocked {
        return Ok(if s.get { old_value(&old) } else { Value::Null });
    }
    let at = if s.keep_ttl {
        old.as_ref().and_then(|r| r.expire_at_ms)
    } else {
        s.expire_at_ms
    };
    k.replace(&s.key, old.as_ref(), &s.value, at);
    Ok(if s.get { old_value(&old) } else { Value::Ok })
}

pub(super) fn setnx(k: &mut W<'_, '_, '_>, key: &[u8], value: &[u8]) -> Result<Value> {
    check_key(key)?;
    check_value_len(value.len())?;
    if k.exists(key)? {
        return Ok(Value::Int(0));
    }
    k.set(key, value, None);
    Ok(Value::Int(1))
}

fn check_pairs(pairs: &[(Bytes, Bytes)]) -> Result<()> {
    for (key, value) in pairs {
        check_key(key)?;
        check_value_len(value.len())?;
    }
    Ok(())
}

pub(super) fn mset(k: &mut W<'_, '_, '_>, pairs: &[(Bytes, Bytes)]) -> Result<Value> {
    check_pairs(pairs)?;
    for (key, value) in pairs {
        k.set(key, value, None);
    }
    Ok(Value::Ok)
}

pub(super) fn msetnx(k: &mut W<'_, '_, '_>, pairs: &[(Bytes, Bytes)]) -> Result<Value> {
    check_pairs(pairs)?;
    for (key, _) in pairs {
        if k.exists(key)? {
            return Ok(Value::Int(0));
        }
    }
    for (key, value) in pairs {
        k.set(key, value, None);
    }
    Ok(Value::Int(1))
}

pub(super) fn getdel(k: &mut W<'_, '_, '_>, key: &[u8]) -> Result<Value> {
    let old = k.get_string(key)?;
    // Also deletes a record whose time has passed.
    k.remove(key)?;
    Ok(old_value(&old))
}

pub(super) fn getex(k: &mut W<'_, '_, '_>, key: &[u8], ttl: TtlChange) -> Result<Value> {
    // As Redis: a missing key answers nil before the expiry is validated.
    let Some(rec) = k.get_string(key)? else {
        return Ok(Value::Null);
    };
    match ttl {
        TtlChange::Keep => {}
        TtlChange::Bad(BadTime::OutOfRange) => {
            return Err(Error::InvalidExpire { command: "getex" })
        }
        TtlChange::Bad(BadTime::NotInteger) => return Err(Error::NotInteger),
        TtlChange::Persist => {
            if rec.expire_at_ms.is_some() {
                k.replace(key, Some(&rec), &rec.value, None);
            }
        }
        TtlChange::At(at) if at <= k.now_ms => {
            // A time already past deletes the key, as EXPIREAT does.
            k.remove(key)?;
        }
        TtlChange::At(at) => k.replace(key, Some(&rec), &rec.value, Some(at)),
    }
    Ok(Value::Bulk(rec.value))
}

pub(super) fn append(k: &mut W<'_, '_, '_>, key: &[u8], tail: &[u8]) -> Result<Value> {
    check_key(key)?;
    let old = k.get_string(key)?;
    let (mut v, at) = match &old {
        Some(r) => {
            check_value_len(r.value.len() + tail.len())?;
            let mut v = Vec::with_capacity(r.value.len() + tail.len());
            v.extend_from_slice(&r.value);
            (v, r.expire_at_ms)
        }
        None => (Vec::with_capacity(tail.len()), None),
    };
    v.extend_from_slice(tail);
    k.replace(key, old.as_ref(), &v, at);
    Ok(Value::Int(v.len() as i64))
}

pub(super) fn setrange(
    k: &mut W<'_, '_, '_>,
    key: &[u8],
    offset: u64,
    patch: &[u8],
) -> Result<Value> {
    let offset = usize::try_from(offset).map_err(|_| Error::ValueTooLong)?;
    let old = k.get_string(key)?;
    let Some(old_rec) = &old else {
        if patch.is_empty() {
            return Ok(Value::Int(0));
        }
        check_value_len(offset.saturating_add(patch.len()))?;
        check_key(key)?;
        let mut v = vec![0u8; offset + patch.len()];
        v[offset..].copy_from_slice(patch);
        k.set(key, &v, None);
        return Ok(Value::Int(v.len() as i64));
    };
    if patch.is_empty() {
        return Ok(Value::Int(old_rec.value.len() as i64));
    }
    check_value_len(offset.saturating_add(patch.len()))?;
    let mut v = old_rec.value.to_vec();
    if v.len() < offset + patch.len() {
        v.resize(offset + patch.len(), 0);
    }
    v[offset..offset + patch.len()].copy_from_slice(patch);
    k.replace(key, old.as_ref(), &v, old_rec.expire_at_ms);
    Ok(Value::Int(v.len() as i64))
}

pub(super) fn incrby(k: &mut W<'_, '_, '_>, key: &[u8], delta: i64) -> Result<Value> {
    check_key(key)?;
    let old = k.get_string(key)?;
    let cur = match &old {
        Some(r) => parse_redis_int(&r.value).ok_or(Error::NotInteger)?,
        None => 0,
    };
    let new = cur.checked_add(delta).ok_or(Error::Overflow)?;
    let at = old.as_ref().and_then(|r| r.expire_at_ms);
    k.replace(key, old.as_ref(), new.to_string().as_bytes(), at);
    Ok(Value::Int(new))
}

pub(super) fn incrbyfloat(k: &mut W<'_, '_, '_>, key: &[u8], incr: &[u8]) -> Result<Value> {
    check_key(key)?;
    let old = k.get_string(key)?;
    let cur: &[u8] = old.as_ref().map_or(b"0", |r| &r.value[..]);
    let new = crate::float::add(cur, incr)?;
    let at = old.as_ref().and_then(|r| r.expire_at_ms);
    k.replace(key, old.as_ref(), &new, at);
    Ok(Value::Bulk(Bytes::from(new)))
}
