//! READONLY, READWRITE — cluster-only in Redis; a standalone server refuses them the same way.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Outcome};

pub fn run(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::error(
        "ERR This instance has cluster support disabled",
    ))
}
