//! RESET — back to a fresh connection's state: database 0, RESP2, no name, no subscriptions,
//! no tracking, the default user (unauthenticated if it needs a password).

use bytes::Bytes;
use rialto_resp::{Protocol, Reply};

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};

pub const RESET: CommandSpec = cmd(
    "reset",
    1,
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
    "6.2.0",
    "Returns the connection to the state of a new one.",
    "O(1)",
))
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    ctx.client.select(0);
    ctx.client.set_protocol(Protocol::Resp2);
    ctx.client.handle.info.lock().name = None;
    crate::auth::logout(ctx.shared, ctx.client);
    if let Some(mb) = &ctx.client.mailbox {
        ctx.shared.hub.unsubscribe_all(mb);
    }
    super::client::tracking_off(ctx);
    super::monitor::stop(ctx);
    ctx.client.reply = Default::default();
    Outcome::Reply(Reply::simple("RESET"))
}
