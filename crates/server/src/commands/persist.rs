//! PERSIST key

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::CmdResult;

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let Some(rec) = k.get(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    if rec.expire_at_ms.is_none() {
        return Ok(Reply::Integer(0));
    }
    k.replace(&args[1], Some(&rec), &rec.value, None);
    Ok(Reply::Integer(1))
}
