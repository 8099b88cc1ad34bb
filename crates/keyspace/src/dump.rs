//! DUMP: a key's value read whole and written as Redis's DUMP payload (see [`crate::rdb`]).

use crate::collections::{hash::Hash, list::List, set::SetValue, zset::ZSet};
use crate::error::Result;
use crate::keys::{Keys, RawRead};
use crate::layout::Kind;
use crate::rdb::{self, DumpValue};

/// A key's value as a DUMP payload, and the expiry of the record it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dumped {
    /// The payload.
    pub payload: Vec<u8>,
    /// When the key expires, Unix milliseconds (`None`: never).
    pub expire_at_ms: Option<i64>,
}

/// The DUMP payload of `key`'s value, `None` if it has none. O(N) in a collection's members,
/// read in one state.
pub fn dump<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, key: &[u8]) -> Result<Option<Dumped>> {
    let Some(rec) = k.get(key)? else {
        return Ok(None);
    };
    let value = match rec.kind {
        Kind::String => Some(DumpValue::String(rec.value.clone())),
        Kind::Hash => match Hash::load(k, key)? {
            Some(h) => Some(DumpValue::Hash(h.entries(k)?)),
            None => None,
        },
        Kind::List => match List::load(k, key)? {
            Some(l) => Some(DumpValue::List(l.all(k)?)),
            None => None,
        },
        Kind::Set => match SetValue::load(k, key)? {
            Some(s) => Some(DumpValue::Set(s.members(k)?)),
            None => None,
        },
        Kind::ZSet => match ZSet::load(k, key)? {
            Some(z) => Some(DumpValue::ZSet(z.entries(k)?)),
            None => None,
        },
        Kind::Stream => match crate::collections::stream::Stream::load(k, key)? {
            Some(s) => Some(DumpValue::Stream(Box::new(
                crate::collections::stream::export(k, &s)?,
            ))),
            None => None,
        },
    };
    Ok(value.map(|v| Dumped {
        payload: rdb::encode(&v),
        expire_at_ms: rec.expire_at_ms,
    }))
}
