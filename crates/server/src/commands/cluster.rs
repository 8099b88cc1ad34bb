//! CLUSTER ..., READONLY, READWRITE — a single `rialto serve` is a standalone server, and
//! refuses them as Redis without cluster-enabled does; cluster mode (on Kafka) answers these.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Outcome};

pub fn run(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::error(
        "ERR This instance has cluster support disabled",
    ))
}
