//! ROLE — whether the address is a master or a replica, and its replication offset. A
//! standalone server is a master without replicas; in cluster mode each address answers for
//! the partition it serves, as `INFO replication` does.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};

pub const ROLE: CommandSpec = cmd(
    "role",
    1,
    &["noscript", "loading", "stale", "fast"],
    &["@admin", "@fast", "@dangerous"],
)
.docs(doc(
    "server",
    "2.8.12",
    "Returns the replication role.",
    "O(1)",
))
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(match &ctx.shared.cluster {
        Some(c) => c.role(
            ctx.client.handle.laddr.port(),
            ctx.shared.config.read().cluster.replica_max_lag,
        ),
        None => Reply::Array(vec![
            Reply::bulk("master"),
            Reply::Integer(0),
            Reply::Array(Vec::new()),
        ]),
    })
}
