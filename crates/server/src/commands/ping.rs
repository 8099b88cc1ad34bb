//! PING [message]

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::String as Str;
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

pub const PING: CommandSpec = cmd("ping", -1, &["fast"], &["@fast", "@connection"])
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .docs(
        doc(
            "connection",
            "1.0.0",
            "Checks that the connection is alive: replies PONG, or echoes the argument.",
            "O(1)",
        )
        .args(&[arg("message", Str).opt()]),
    )
    .handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.client.in_resp2_pubsub() && args.len() <= 2 {
        // RESP2's subscribed mode answers in the shape of a message: `pong` and the argument.
        let msg = args.get(1).cloned().unwrap_or_default();
        return Outcome::Reply(Reply::Array(vec![Reply::bulk("pong"), Reply::Bulk(msg)]));
    }
    Outcome::Reply(match args.len() {
        1 => Reply::simple("PONG"),
        2 => Reply::Bulk(args[1].clone()),
        _ => reply::wrong_arity("ping"),
    })
}
