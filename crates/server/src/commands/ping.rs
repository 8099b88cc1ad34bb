//! PING [message]

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Outcome};
use crate::reply;

pub fn run(_: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(match args.len() {
        1 => Reply::simple("PONG"),
        2 => Reply::Bulk(args[1].clone()),
        _ => reply::wrong_arity("ping"),
    })
}
