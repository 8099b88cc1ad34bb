//! SET key value [NX | XX] [GET] [EX s | PX ms | EXAT ts | PXAT ms-ts | KEEPTTL]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util_opts::{self as opts, For, GET, KEEPTTL, NX, XX};
use super::W;
use crate::reply::{self, CmdResult};
use crate::store::{check_key, check_value_len};

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let (key, value) = (&args[1], &args[2]);
    let o = opts::parse(args, 3, For::Set)?;
    let at = opts::expire_at(&o, k.now_ms, "set")?;
    check_key(key)?;
    check_value_len(value.len())?;
    // A blind write when nothing depends on the old value (the common case).
    if o.flags & (NX | XX | GET | KEEPTTL) == 0 {
        k.set(key, value, at);
        return Ok(reply::ok());
    }
    let old = k.get(key)?;
    let get = o.flags & GET != 0;
    let old_reply = || match &old {
        Some(r) => Reply::Bulk(r.value.clone()),
        None => Reply::Null,
    };
    let blocked = (o.flags & NX != 0 && old.is_some()) || (o.flags & XX != 0 && old.is_none());
    if blocked {
        return Ok(if get { old_reply() } else { Reply::Null });
    }
    let at = if o.flags & KEEPTTL != 0 {
        old.as_ref().and_then(|r| r.expire_at_ms)
    } else {
        at
    };
    k.replace(key, old.as_ref(), value, at);
    Ok(if get { old_reply() } else { reply::ok() })
}
