//! STRLEN key

use bytes::Bytes;
use rialto_resp::Reply;

use super::R;
use crate::reply::CmdResult;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let len = k.get(&args[1])?.map_or(0, |r| r.value.len());
    Ok(Reply::Integer(len as i64))
}
