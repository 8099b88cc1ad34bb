//! List writes.

use bytes::Bytes;

use super::W;
use crate::collections::list::{self, Writer};
use crate::collections::Encodings;
use crate::error::{Error, Result};
use crate::op::ListOp;
use crate::value::Value;

pub(super) fn apply(k: &mut W<'_, '_, '_>, enc: &Encodings, op: &ListOp) -> Result<Value> {
    let max = enc.list_max_size();
    Ok(match op {
        ListOp::Push {
            key,
            left,
            existing,
            items,
        } => {
            let w = if *existing {
                Writer::open(k, max, key)?
            } else {
                Some(Writer::open_or_new(k, max, key)?)
            };
            let Some(mut w) = w else {
                return Ok(Value::Int(0));
            };
            w.push(k, *left, items)?;
            let len = w.len();
            w.finish(k, key)?;
            Value::Int(len as i64)
        }
        ListOp::Pop { key, left, count } => {
            let Some(mut w) = Writer::open(k, max, key)? else {
                return Ok(match count {
                    Some(_) => Value::NullArray,
                    None => Value::Null,
                });
            };
            let popped = w.pop(k, *left, count.unwrap_or(1))?;
            if !popped.is_empty() {
                w.finish(k, key)?;
            }
            match count {
                Some(_) => Value::Array(popped.into_iter().map(Value::Bulk).collect()),
                None => popped.into_iter().next().map_or(Value::Null, Value::Bulk),
            }
        }
        ListOp::Set { key, index, value } => {
            let mut w = Writer::open(k, max, key)?.ok_or(Error::NoSuchKey)?;
            let index = rialto_resp::parse_redis_int(index).ok_or(Error::NotInteger)?;
            let i = list::position(w.len(), index).ok_or(Error::IndexOutOfRange)?;
            w.set(k, i, value)?;
            w.finish(k, key)?;
            Value::Ok
        }
        ListOp::Insert {
            key,
            before,
            pivot,
            value,
        } => {
            let Some(mut w) = Writer::open(k, max, key)? else {
                return Ok(Value::Int(0));
            };
            let items = w.all(k)?;
            let Some(at) = items.iter().position(|e| e == pivot) else {
                return Ok(Value::Int(-1));
            };
            let at = if *before { at } else { at + 1 };
            w.insert(k, at as u64, value)?;
            let len = w.len();
            w.finish(k, key)?;
            Value::Int(len as i64)
        }
        ListOp::Rem { key, count, value } => {
            let Some(mut w) = Writer::open(k, max, key)? else {
                return Ok(Value::Int(0));
            };
            let items = w.all(k)?;
            let kept = remove(items, *count, value);
            let removed = w.len() - kept.len() as u64;
            if removed > 0 {
                w.replace_all(k, kept)?;
                w.finish(k, key)?;
            }
            Value::Int(removed as i64)
        }
        ListOp::Trim { key, start, stop } => {
            if let Some(mut w) = Writer::open(k, max, key)? {
                let keep = list::span(w.len(), *start, *stop);
                if keep != Some((0, w.len() - 1)) {
                    w.trim(k, keep);
                    w.finish(k, key)?;
                }
            }
            Value::Ok
        }
        ListOp::Move {
            src,
            dst,
            from_left,
            to_left,
        } => move_one(k, max, src, dst, *from_left, *to_left)?,
        ListOp::MPop { keys, left, count } => {
            for key in keys {
                let Some(mut w) = Writer::open(k, max, key)? else {
                    continue;
                };
                let popped = w.pop(k, *left, count.unwrap_or(1))?;
                w.finish(k, key)?;
                let mut out = vec![Value::Bulk(key.clone())];
                match count {
                    Some(_) => {
                        out.push(Value::Array(popped.into_iter().map(Value::Bulk).collect()))
                    }
                    None => out.extend(popped.into_iter().map(Value::Bulk)),
                }
                return Ok(Value::Array(out));
            }
            Value::NullArray
        }
    })
}

/// LREM's survivors: `items` without `count` elements equal to `value` from the head
/// (negative: from the tail; 0: all of them).
fn remove(mut items: Vec<Bytes>, count: i64, value: &[u8]) -> Vec<Bytes> {
    let mut left = if count == 0 {
        u64::MAX
    } else {
        count.unsigned_abs()
    };
    if count < 0 {
        items.reverse();
    }
    items.retain(|e| {
        if left > 0 && e == value {
            left -= 1;
            return false;
        }
        true
    });
    if count < 0 {
        items.reverse();
    }
    items
}

/// LMOVE: the element moved, or null when `src` is no list. A wrong-typed `dst` fails before
/// anything moves, as in Redis.
fn move_one(
    k: &mut W<'_, '_, '_>,
    max: i64,
    src: &Bytes,
    dst: &Bytes,
    from_left: bool,
    to_left: bool,
) -> Result<Value> {
    let Some(mut from) = Writer::open(k, max, src)? else {
        return Ok(Value::Null);
    };
    if src == dst {
        let popped = from.pop(k, from_left, 1)?;
        from.push(k, to_left, &popped)?;
        from.finish(k, src)?;
        return Ok(popped.into_iter().next().map_or(Value::Null, Value::Bulk));
    }
    // Checks `dst`'s type before the pop.
    Writer::open(k, max, dst)?;
    let popped = from.pop(k, from_left, 1)?;
    from.finish(k, src)?;
    let mut to = Writer::open_or_new(k, max, dst)?;
    to.push(k, to_left, &popped)?;
    to.finish(k, dst)?;
    Ok(popped.into_iter().next().map_or(Value::Null, Value::Bulk))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(items: &[&str]) -> Vec<Bytes> {
        items.iter().map(|s| Bytes::from(s.to_string())).collect()
    }

    #[test]
    fn lrem_counts_from_the_end_its_sign_names() {
        let l = b(&["a", "x", "b", "x", "c", "x"]);
        assert_eq!(remove(l.clone(), 2, b"x"), b(&["a", "b", "c", "x"]));
        assert_eq!(remove(l.clone(), -2, b"x"), b(&["a", "x", "b", "c"]));
        assert_eq!(remove(l.clone(), 0, b"x"), b(&["a", "b", "c"]));
        assert_eq!(
            remove(l, i64::MIN, b"y"),
            b(&["a", "x", "b", "x", "c", "x"])
        );
    }
}
