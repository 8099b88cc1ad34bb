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
    if reply::parse_i64(&args[1]).is_none() {
        return Outcome::Reply(reply::not_integer());
    }
    let n = ctx.shared.config.read().databases;
    match target(args, n) {
        Some(db) => {
            ctx.client.select(db);
            Outcome::Reply(reply::ok())
        }
        None => Outcome::Reply(Reply::error("ERR DB index is out of range")),
    }
}

/// The database `SELECT index` switches to among `databases`, if the index is one.
pub fn target(args: &[Bytes], databases: usize) -> Option<u8> {
    let i = reply::parse_i64(args.get(1)?)?;
    (0..databases as i64).contains(&i).then_some(i as u8)
}
