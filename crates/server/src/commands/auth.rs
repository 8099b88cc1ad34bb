//! AUTH [username] password

use bytes::Bytes;

use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::String as Str;
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

pub const AUTH: CommandSpec = cmd(
    "auth",
    -2,
    &[
        "noscript",
        "loading",
        "stale",
        "fast",
        "no_auth",
        "allow_busy",
    ],
    &["@fast", "@connection"],
)
.docs(
    doc(
        "connection",
        "1.0.0",
        "Authenticates the connection as a user, or as the default user given only a password.",
        "O(N), N being the number of passwords the user has.",
    )
    .history(&[("6.0.0", "Takes a username, for ACL users.")])
    .args(&[
        arg("username", Str).since("6.0.0").opt(),
        arg("password", Str),
    ]),
)
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (user, pass) = match args.len() {
        2 => (None, &args[1]),
        3 => (Some(&args[1][..]), &args[2]),
        _ => return Outcome::Reply(reply::syntax()),
    };
    let handle = &ctx.client.handle;
    Outcome::Reply(
        match crate::auth::authenticate(ctx.shared, handle, &args[0], user, pass) {
            Ok(u) => {
                crate::auth::login(ctx.client, u);
                reply::ok()
            }
            Err(r) => r,
        },
    )
}
