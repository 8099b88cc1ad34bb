//! TYPE key — every Rialto value is a string.

use bytes::Bytes;
use rialto_resp::Reply;

use super::R;
use crate::reply::CmdResult;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(if k.exists(&args[1])? {
        Reply::simple("string")
    } else {
        Reply::simple("none")
    })
}
