//! RENAME key newkey, RENAMENX key newkey — the value moves with its TTL.

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::{self, CmdResult};
use crate::store::check_key;

fn rename(k: &mut W<'_>, args: &[Bytes], nx: bool) -> CmdResult {
    let (src, dst) = (&args[1], &args[2]);
    let Some(rec) = k.get(src)? else {
        return Err(Reply::error("ERR no such key"));
    };
    check_key(dst)?;
    if src == dst {
        return Ok(if nx { Reply::Integer(0) } else { reply::ok() });
    }
    let old_dst = k.get(dst)?;
    if nx && old_dst.is_some() {
        return Ok(Reply::Integer(0));
    }
    k.remove(src)?;
    k.replace(dst, old_dst.as_ref(), &rec.value, rec.expire_at_ms);
    Ok(if nx { Reply::Integer(1) } else { reply::ok() })
}

/// RENAME
pub fn rename_cmd(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    rename(k, args, false)
}

/// RENAMENX
pub fn renamenx(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    rename(k, args, true)
}
