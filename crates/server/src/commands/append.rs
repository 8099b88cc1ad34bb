//! APPEND key value — keeps the TTL.

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::CmdResult;
use crate::store::{check_key, check_value_len};

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    check_key(&args[1])?;
    let old = k.get(&args[1])?;
    let (mut v, at) = match &old {
        Some(r) => {
            check_value_len(r.value.len() + args[2].len())?;
            let mut v = Vec::with_capacity(r.value.len() + args[2].len());
            v.extend_from_slice(&r.value);
            (v, r.expire_at_ms)
        }
        None => (Vec::with_capacity(args[2].len()), None),
    };
    v.extend_from_slice(&args[2]);
    k.replace(&args[1], old.as_ref(), &v, at);
    Ok(Reply::Integer(v.len() as i64))
}
