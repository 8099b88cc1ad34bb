//! Hash writes.

use bytes::Bytes;

use super::W;
use crate::collections::{hash, Encodings};
use crate::error::Result;
use crate::op::HashOp;
use crate::value::Value;

pub(super) fn apply(k: &mut W<'_, '_, '_>, enc: &Encodings, op: &HashOp) -> Result<Value> {
    Ok(match op {
        HashOp::Set { key, pairs, ok } => {
            let added = hash::set(k, enc, key, pairs)?;
            if *ok {
                Value::Ok
            } else {
                Value::Int(added)
            }
        }
        HashOp::SetNx { key, field, value } => {
            Value::Int(i64::from(hash::set_nx(k, enc, key, field, value)?))
        }
        HashOp::Del { key, fields } => Value::Int(hash::del(k, enc, key, fields)?),
        HashOp::IncrBy { key, field, delta } => {
            Value::Int(hash::incr_by(k, enc, key, field, *delta)?)
        }
        HashOp::IncrByFloat { key, field, incr } => Value::Bulk(Bytes::clone(
            &hash::incr_by_float(k, enc, key, field, incr)?,
        )),
    })
}
