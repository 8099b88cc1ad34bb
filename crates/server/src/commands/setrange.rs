//! SETRANGE key offset value — zero-pads, keeps the TTL.

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::{self, CmdResult};
use crate::store::{check_key, check_value_len};

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let offset = reply::int_arg(&args[2])?;
    if offset < 0 {
        return Err(Reply::error("ERR offset is out of range"));
    }
    let patch = &args[3];
    let old = k.get(&args[1])?;
    let Some(old_rec) = &old else {
        if patch.is_empty() {
            return Ok(Reply::Integer(0));
        }
        check_value_len(offset as usize + patch.len())?;
        check_key(&args[1])?;
        let mut v = vec![0u8; offset as usize + patch.len()];
        v[offset as usize..].copy_from_slice(patch);
        k.set(&args[1], &v, None);
        return Ok(Reply::Integer(v.len() as i64));
    };
    if patch.is_empty() {
        return Ok(Reply::Integer(old_rec.value.len() as i64));
    }
    check_value_len((offset as usize).saturating_add(patch.len()))?;
    let offset = offset as usize;
    let mut v = old_rec.value.to_vec();
    if v.len() < offset + patch.len() {
        v.resize(offset + patch.len(), 0);
    }
    v[offset..offset + patch.len()].copy_from_slice(patch);
    k.replace(&args[1], old.as_ref(), &v, old_rec.expire_at_ms);
    Ok(Reply::Integer(v.len() as i64))
}
