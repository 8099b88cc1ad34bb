//! Bitmap writes on string values: SETBIT, BITOP, BITFIELD (with a write).

use bytes::Bytes;

use super::W;
use crate::bits::{self, BitOp};
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value_len};
use crate::op::FieldSub;
use crate::value::Value;

pub(super) fn setbit(k: &mut W<'_, '_, '_>, key: &[u8], offset: u64, on: bool) -> Result<Value> {
    check_key(key)?;
    if offset >= bits::MAX_BITS {
        return Err(Error::ValueTooLong);
    }
    let old = k.get_string(key)?;
    let mut v = old.as_ref().map(|r| r.value.to_vec()).unwrap_or_default();
    let len = v.len();
    let was = bits::set(&mut v, offset, on);
    // As Redis: a bit set to what it was changes nothing (WATCH stays intact).
    if old.is_some() && v.len() == len && was == on {
        return Ok(Value::Int(i64::from(was)));
    }
    check_value_len(v.len())?;
    let at = old.as_ref().and_then(|r| r.expire_at_ms);
    k.replace(key, old.as_ref(), &v, at);
    Ok(Value::Int(i64::from(was)))
}

pub(super) fn bitop(k: &mut W<'_, '_, '_>, op: BitOp, dst: &[u8], keys: &[Bytes]) -> Result<Value> {
    check_key(dst)?;
    let mut values = Vec::with_capacity(keys.len());
    for key in keys {
        values.push(k.get_string(key)?.map(|r| r.value).unwrap_or_default());
    }
    let slices: Vec<&[u8]> = values.iter().map(|v| &v[..]).collect();
    let out = bits::combine(op, &slices);
    if out.is_empty() {
        k.remove(dst)?;
        return Ok(Value::Int(0));
    }
    let old = k.get(dst)?;
    k.replace(dst, old.as_ref(), &out, None);
    Ok(Value::Int(out.len() as i64))
}

pub(super) fn bitfield(k: &mut W<'_, '_, '_>, key: &[u8], subs: &[FieldSub]) -> Result<Value> {
    check_key(key)?;
    let old = k.get_string(key)?;
    let mut v = old.as_ref().map(|r| r.value.to_vec()).unwrap_or_default();
    // As Redis: the string is made long enough for every write first, even one that then
    // fails its overflow check; it is written if that made or grew it, or a field changed.
    let reach = subs
        .iter()
        .filter_map(|s| match *s {
            FieldSub::Get { .. } => None,
            FieldSub::Set { ty, offset, .. } | FieldSub::IncrBy { ty, offset, .. } => {
                Some(((offset + u64::from(ty.bits) - 1) >> 3) as usize + 1)
            }
        })
        .max()
        .unwrap_or(0);
    let mut wrote = reach > 0 && (old.is_none() || reach > v.len());
    if reach > v.len() {
        v.resize(reach, 0);
    }
    let mut out = Vec::with_capacity(subs.len());
    for s in subs {
        out.push(match *s {
            FieldSub::Get { ty, offset } => Value::Int(bits::field_get(&v, ty, offset)),
            FieldSub::Set {
                ty,
                offset,
                value,
                overflow,
            } => {
                let was = bits::field_get(&v, ty, offset);
                // As Redis: an unsigned field takes the value's bits as unsigned (-1 is the
                // largest number there is, which saturates to the field's maximum).
                let exact = if ty.signed {
                    i128::from(value)
                } else {
                    i128::from(value as u64)
                };
                match bits::fit(ty, exact, overflow) {
                    Some(x) => {
                        bits::field_set(&mut v, ty, offset, x);
                        wrote |= x != was;
                        Value::Int(was)
                    }
                    None => Value::Null,
                }
            }
            FieldSub::IncrBy {
                ty,
                offset,
                incr,
                overflow,
            } => {
                let was = bits::field_get(&v, ty, offset);
                match bits::fit(ty, i128::from(was) + i128::from(incr), overflow) {
                    Some(x) => {
                        bits::field_set(&mut v, ty, offset, x);
                        wrote |= x != was;
                        Value::Int(x)
                    }
                    None => Value::Null,
                }
            }
        });
    }
    if wrote {
        check_value_len(v.len())?;
        let at = old.as_ref().and_then(|r| r.expire_at_ms);
        k.replace(key, old.as_ref(), &v, at);
    }
    Ok(Value::Array(out))
}
