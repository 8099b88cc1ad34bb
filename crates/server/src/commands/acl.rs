//! ACL WHOAMI | SETUSER | GETUSER | DELUSER | LIST | USERS | CAT | GENPASS | DRYRUN | HELP

use bytes::Bytes;

use super::{Ctx, Outcome};

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(crate::auth::acl_command(ctx.shared, ctx.client, args))
}
