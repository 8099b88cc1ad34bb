//! RESTORE: a DUMP payload becomes a key's value, checked in Redis's order.

use super::W;
use crate::collections::list::Writer as ListWriter;
use crate::collections::{hash, set, zset, Encodings};
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value_len};
use crate::layout::Kind;
use crate::op::RestoreOp;
use crate::rdb::{self, DumpValue};
use crate::value::Value;

/// As Redis's `restoreCommand` after its options: BUSYKEY when the key exists without
/// REPLACE, then the TTL (not an integer, negative), then the payload (footer, then value);
/// a time already past deletes the key with REPLACE and writes nothing else. The value is
/// written through the collections' own writers, so this keyspace's encoding thresholds and
/// size limits apply as for any write.
pub(super) fn apply(k: &mut W<'_, '_, '_>, enc: &Encodings, op: &RestoreOp) -> Result<Value> {
    let key = &op.key[..];
    if !op.replace && k.get(key)?.is_some() {
        return Err(Error::BusyKey);
    }
    let ttl = op.ttl_ms.ok_or(Error::NotInteger)?;
    if ttl < 0 {
        return Err(Error::NegativeTtl);
    }
    let value = rdb::decode(&op.payload)?;
    check_key(key)?;
    let at = match ttl {
        0 => None,
        t if op.absolute => Some(t),
        t => Some(t.saturating_add(k.now_ms)),
    };
    k.remove(key)?;
    if at.is_some_and(|at| at <= k.now_ms) {
        return Ok(Value::Ok);
    }
    match value {
        DumpValue::String(s) => {
            check_value_len(s.len())?;
            k.put_record(key, None, Kind::String, false, &s, at);
            return Ok(Value::Ok);
        }
        DumpValue::Hash(pairs) => {
            hash::set(k, enc, key, &pairs)?;
        }
        DumpValue::Set(members) => {
            set::add(k, enc, key, &members)?;
        }
        DumpValue::ZSet(items) => {
            zset::store(k, enc, key, items)?;
        }
        DumpValue::Stream(st) => {
            crate::collections::stream::import(k, key, &st)?;
        }
        DumpValue::List(items) => {
            for i in &items {
                check_value_len(i.len())?;
            }
            let mut w = ListWriter::open_or_new(k, enc.list_max_size(), key)?;
            w.push(k, false, &items)?;
            w.finish(k, key)?;
        }
    }
    if let Some(at) = at {
        let rec = k.get(key)?.ok_or(Error::NoSuchKey)?;
        k.retime(key, &rec, Some(at));
    }
    Ok(Value::Ok)
}
