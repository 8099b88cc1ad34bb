//! ECHO message

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Outcome};

pub fn run(_: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Bulk(Bytes::copy_from_slice(&args[1])))
}
