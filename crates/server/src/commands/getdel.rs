//! GETDEL key

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::CmdResult;

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let old = k.get(&args[1])?;
    if old.is_some() {
        k.remove(&args[1])?;
    }
    Ok(old.map_or(Reply::Null, |r| Reply::Bulk(r.value)))
}
