//! GETSET key value — sets and returns the old value; the TTL is dropped.

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::CmdResult;
use crate::store::{check_key, check_value_len};

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    check_key(&args[1])?;
    check_value_len(args[2].len())?;
    let old = k.get(&args[1])?;
    k.replace(&args[1], old.as_ref(), &args[2], None);
    Ok(old.map_or(Reply::Null, |r| Reply::Bulk(r.value)))
}
