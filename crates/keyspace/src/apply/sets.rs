//! Set writes.

use super::W;
use crate::collections::set::{self, Popped};
use crate::collections::Encodings;
use crate::error::Result;
use crate::op::SetOp;
use crate::value::Value;

pub(super) fn apply(k: &mut W<'_, '_, '_>, enc: &Encodings, op: &SetOp) -> Result<Value> {
    Ok(match op {
        SetOp::Add { key, members } => Value::Int(set::add(k, enc, key, members)?),
        SetOp::Rem { key, members } => Value::Int(set::rem(k, enc, key, members)?),
        SetOp::Pop { key, count, seed } => match set::pop(k, enc, key, *count, *seed)? {
            Popped::One(Some(m)) => Value::Bulk(m),
            Popped::One(None) => Value::Null,
            Popped::Many(ms) => Value::Members(ms),
        },
        SetOp::Move { src, dst, member } => {
            Value::Int(i64::from(set::smove(k, enc, src, dst, member)?))
        }
        SetOp::Store { algebra, dst, keys } => Value::Int(set::store(k, enc, *algebra, dst, keys)?),
    })
}
