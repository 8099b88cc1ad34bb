//! SELECT index

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::Integer;
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

pub const SELECT: CommandSpec = cmd(
    "select",
    2,
    &["loading", "stale", "fast"],
    &["@fast", "@connection"],
)
.docs(
    doc(
        "connection",
        "1.0.0",
        "Switches the connection to another numbered database.",
        "O(1)",
    )
    .args(&[arg("index", Integer)]),
)
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(i) = reply::parse_i64(&args[1]) else {
        return Outcome::Reply(reply::not_integer());
    };
    let n = ctx.shared.config.read().databases as i64;
    if !(0..n).contains(&i) {
        return Outcome::Reply(Reply::error("ERR DB index is out of range"));
    }
    ctx.client.select(i as u8);
    Outcome::Reply(reply::ok())
}
