//! AUTH [username] password

use bytes::Bytes;

use super::{Ctx, Outcome};
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (user, pass) = match args.len() {
        2 => (None, &args[1]),
        3 => (Some(&args[1][..]), &args[2]),
        _ => return Outcome::Reply(reply::syntax()),
    };
    Outcome::Reply(match crate::auth::authenticate(ctx.shared, user, pass) {
        Ok(u) => {
            crate::auth::login(ctx.client, u);
            reply::ok()
        }
        Err(r) => r,
    })
}
