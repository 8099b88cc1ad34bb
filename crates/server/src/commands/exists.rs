//! EXISTS key [key ...] — counts repeated keys each time, as Redis does.

use bytes::Bytes;
use rialto_resp::Reply;

use super::R;
use crate::reply::CmdResult;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut n = 0;
    for key in &args[1..] {
        n += i64::from(k.exists(key)?);
    }
    Ok(Reply::Integer(n))
}
