//! QUIT — replies OK, then closes once every earlier reply was sent.

use bytes::Bytes;

use super::{Ctx, Outcome};
use crate::reply;

pub fn run(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Close(Some(reply::ok()))
}
