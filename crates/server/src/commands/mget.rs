//! MGET key [key ...]

use bytes::Bytes;
use rialto_resp::Reply;

use super::R;
use crate::reply::CmdResult;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut out = Vec::with_capacity(args.len() - 1);
    for key in &args[1..] {
        out.push(match k.get(key)? {
            Some(rec) => Reply::Bulk(rec.value),
            None => Reply::Null,
        });
    }
    Ok(Reply::Array(out))
}
