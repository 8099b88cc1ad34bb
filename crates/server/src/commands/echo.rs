//! ECHO message

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::String as Str;
use crate::command_table::{arg, cmd, doc, CommandSpec};

pub const ECHO: CommandSpec = cmd(
    "echo",
    2,
    &["loading", "stale", "fast"],
    &["@fast", "@connection"],
)
.docs(
    doc(
        "connection",
        "1.0.0",
        "Replies with the message it was given.",
        "O(1)",
    )
    .args(&[arg("message", Str)]),
)
.handler(Handler::Conn(run));

pub fn run(_: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Bulk(Bytes::copy_from_slice(&args[1])))
}
