//! QUIT — replies OK, then closes once every earlier reply was sent.

use bytes::Bytes;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};
use crate::reply;

pub const QUIT: CommandSpec = cmd(
    "quit",
    -1,
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
.docs(doc(
    "connection",
    "1.0.0",
    "Asks the server to close the connection.",
    "O(1)",
))
.handler(Handler::Conn(run));

pub fn run(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Close(Some(reply::ok()))
}
