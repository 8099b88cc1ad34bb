//! GETEX key [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util_opts::{self as opts, For, PERSIST};
use super::W;
use crate::reply::CmdResult;

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let o = opts::parse(args, 2, For::GetEx)?;
    let key = &args[1];
    // As Redis: a missing key answers nil before the expiry is validated.
    let Some(rec) = k.get(key)? else {
        return Ok(Reply::Null);
    };
    let at = opts::expire_at(&o, k.now_ms, "getex")?;
    if o.flags & PERSIST != 0 {
        if rec.expire_at_ms.is_some() {
            k.replace(key, Some(&rec), &rec.value, None);
        }
    } else if let Some(at) = at {
        if at <= k.now_ms {
            // A time already past deletes the key, as EXPIREAT does.
            k.remove(key)?;
        } else {
            k.replace(key, Some(&rec), &rec.value, Some(at));
        }
    }
    Ok(Reply::Bulk(rec.value))
}
