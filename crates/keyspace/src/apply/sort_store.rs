//! SORT ... STORE.

use bytes::Bytes;

use super::W;
use crate::collections::list::Writer;
use crate::collections::Encodings;
use crate::error::Result;
use crate::op::SortStore;
use crate::sort::{sort, SortMode};
use crate::value::Value;

/// Sorts, then makes `dst` a new list of the result (a missing GET value an empty string),
/// dropping what it held and its expiry, or deletes it when the result is empty. Replies the
/// result's length.
pub(super) fn apply(k: &mut W<'_, '_, '_>, enc: &Encodings, op: &SortStore) -> Result<Value> {
    let mode = SortMode {
        store: true,
        script: false,
    };
    let items: Vec<Bytes> = sort(k, &op.sort, mode)?
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    k.remove(&op.dst)?;
    let n = items.len();
    if n > 0 {
        let mut w = Writer::open_or_new(k, enc.list_max_size(), &op.dst)?;
        w.push(k, false, &items)?;
        w.finish(k, &op.dst)?;
    }
    Ok(Value::Int(n as i64))
}
