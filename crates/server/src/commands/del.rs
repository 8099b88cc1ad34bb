//! DEL key [key ...], UNLINK key [key ...] — identical here: deletion never blocks on memory.

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::CmdResult;

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    let mut n = 0;
    for key in &args[1..] {
        n += i64::from(k.remove(key)?);
    }
    Ok(Reply::Integer(n))
}
