//! HyperLogLog writes (`crate::hll`): PFADD, PFMERGE, PFCOUNT's cache refresh, PFDEBUG. The
//! values are strings: they are read and written as SETBIT reads and writes its string, TTL
//! kept.

use bytes::Bytes;

use super::W;
use crate::error::Result;
use crate::hll::{Hll, HllError, REGISTERS};
use crate::keys::check_key;
use crate::op::{HllDebug, HllOp};
use crate::value::Value;

pub(super) fn apply(k: &mut W<'_, '_, '_>, op: &HllOp) -> Result<Value> {
    match op {
        HllOp::Add {
            key,
            elements,
            sparse_max,
        } => add(k, key, elements, limit(*sparse_max)),
        HllOp::Count { key } => count(k, key),
        HllOp::Merge {
            dst,
            keys,
            sparse_max,
        } => merge(k, dst, keys, limit(*sparse_max)),
        HllOp::Debug { key, sub } => debug(k, key, sub),
    }
}

fn limit(sparse_max: u64) -> usize {
    usize::try_from(sparse_max).unwrap_or(usize::MAX)
}

fn add(k: &mut W<'_, '_, '_>, key: &[u8], elements: &[Bytes], sparse_max: usize) -> Result<Value> {
    check_key(key)?;
    let old = k.get_string(key)?;
    let (mut h, mut changed) = match &old {
        Some(r) => (Hll::from_value(&r.value)?, false),
        None => (Hll::new(), true),
    };
    for e in elements {
        changed |= h.add(e, sparse_max)?;
    }
    if changed {
        h.invalidate();
        let at = old.as_ref().and_then(|r| r.expire_at_ms);
        k.replace(key, old.as_ref(), h.as_bytes(), at);
    }
    Ok(Value::Int(i64::from(changed)))
}

fn count(k: &mut W<'_, '_, '_>, key: &[u8]) -> Result<Value> {
    let Some(rec) = k.get_string(key)? else {
        return Ok(Value::Int(0));
    };
    let mut h = Hll::from_value(&rec.value)?;
    if let Some(card) = h.cached() {
        return Ok(Value::Int(card as i64));
    }
    let card = h.count()?;
    // As Redis: the computed cardinality is kept in the value, a write replicas and WATCH see.
    h.set_cached(card);
    k.replace(key, Some(&rec), h.as_bytes(), rec.expire_at_ms);
    Ok(Value::Int(card as i64))
}

fn merge(k: &mut W<'_, '_, '_>, dst: &[u8], keys: &[Bytes], sparse_max: usize) -> Result<Value> {
    check_key(dst)?;
    let mut max = [0u8; REGISTERS];
    let mut dense = false;
    let old = k.get_string(dst)?;
    let mut target = None;
    if let Some(r) = &old {
        let h = Hll::from_value(&r.value)?;
        dense |= h.is_dense();
        h.merge_into(&mut max)?;
        target = Some(h);
    }
    for key in keys {
        let Some(r) = k.get_string(key)? else {
            continue;
        };
        let h = Hll::from_value(&r.value)?;
        dense |= h.is_dense();
        h.merge_into(&mut max)?;
    }
    let mut h = target.unwrap_or_default();
    if dense {
        h.to_dense()?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // The destination decoded above, so a register always fits.
            h.raise(i, m, sparse_max)?;
        }
    }
    h.invalidate();
    let at = old.as_ref().and_then(|r| r.expire_at_ms);
    k.replace(dst, old.as_ref(), h.as_bytes(), at);
    Ok(Value::Ok)
}

fn debug(k: &mut W<'_, '_, '_>, key: &[u8], sub: &HllDebug) -> Result<Value> {
    let Some(rec) = k.get_string(key)? else {
        return Err(HllError::NoKey.into());
    };
    let mut h = Hll::from_value(&rec.value)?;
    let densify = |h: &mut Hll, k: &mut W<'_, '_, '_>| -> Result<bool> {
        let converted = h.to_dense()?;
        if converted {
            k.replace(key, Some(&rec), h.as_bytes(), rec.expire_at_ms);
        }
        Ok(converted)
    };
    match sub {
        HllDebug::GetReg => {
            densify(&mut h, k)?;
            let regs = h.registers();
            Ok(Value::Array(
                regs.into_iter().map(|r| Value::Int(i64::from(r))).collect(),
            ))
        }
        HllDebug::Decode => Ok(Value::Bulk(h.decode()?)),
        HllDebug::Encoding => Ok(Value::Status(if h.is_dense() { "dense" } else { "sparse" })),
        HllDebug::ToDense => Ok(Value::Int(i64::from(densify(&mut h, k)?))),
        HllDebug::Unknown(name) => {
            Err(HllError::UnknownSubcommand(String::from_utf8_lossy(name).into_owned()).into())
        }
    }
}
