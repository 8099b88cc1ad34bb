//! Sorted-set writes.

use super::W;
use crate::collections::geo;
use crate::collections::{zset, Encodings};
use crate::error::{Error, Result};
use crate::op::ZSetOp;
use crate::value::{Score, Value};

pub(super) fn apply(k: &mut W<'_, '_, '_>, enc: &Encodings, op: &ZSetOp) -> Result<Value> {
    Ok(match op {
        ZSetOp::Add { key, flags, items } => {
            let (n, score) = zset::add(k, enc, key, *flags, items)?;
            match (flags.incr, score) {
                (false, _) => Value::Int(n),
                (true, Some(s)) => Value::Score(Score(s)),
                (true, None) => Value::Null,
            }
        }
        ZSetOp::Rem { key, members } => Value::Int(zset::rem(k, enc, key, members)?),
        ZSetOp::RemRange { key, range } => Value::Int(zset::rem_range(k, enc, key, range)?),
        ZSetOp::Pop { key, max, count } => {
            let popped = zset::pop(k, enc, key, *max, count.unwrap_or(1))?;
            Value::Scored {
                items: popped.into_iter().map(|(m, s)| (m, Score(s))).collect(),
                nested: count.is_some(),
            }
        }
        ZSetOp::MPop { keys, max, count } => {
            for key in keys {
                let popped = zset::pop(k, enc, key, *max, count.unwrap_or(1))?;
                if !popped.is_empty() {
                    let mut out = vec![Value::Bulk(key.clone())];
                    match count {
                        Some(_) => out.push(Value::ScoredPairs(
                            popped.into_iter().map(|(m, s)| (m, Score(s))).collect(),
                        )),
                        None => {
                            for (m, s) in popped {
                                out.push(Value::Bulk(m));
                                out.push(Value::Score(Score(s)));
                            }
                        }
                    }
                    return Ok(Value::Array(out));
                }
            }
            Value::NullArray
        }
        ZSetOp::RangeStore {
            dst,
            src,
            range,
            rev,
            limit,
        } => Value::Int(zset::range_store(k, enc, dst, src, range, *rev, *limit)?),
        ZSetOp::Store {
            dst,
            op,
            keys,
            weights,
            aggregate,
            late,
        } => {
            let items = zset::combine(k, *op, keys, weights, *aggregate, *late)?;
            Value::Int(zset::store(k, enc, dst, items)?)
        }
        ZSetOp::GeoStore { form, args } => {
            let src = args.get(form.src()).map(|a| &a[..]).unwrap_or_default();
            let z = zset::ZSet::load(k, src)?;
            let req = geo::parse(k, z.as_ref(), args, *form)?;
            let Some((dst, dist)) = req.store.clone() else {
                return Err(Error::Syntax);
            };
            let found = match &z {
                Some(z) => geo::run(k, z, &req)?,
                None => Vec::new(),
            };
            let items = found
                .into_iter()
                .map(|f| (f.member, if dist { f.dist } else { f.score }))
                .collect();
            Value::Int(zset::store(k, enc, &dst, items)?)
        }
    })
}
