//! GET key

use bytes::Bytes;
use rialto_resp::Reply;

use super::R;
use crate::reply::CmdResult;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(match k.get(&args[1])? {
        Some(rec) => Reply::Bulk(rec.value),
        None => Reply::Null,
    })
}
