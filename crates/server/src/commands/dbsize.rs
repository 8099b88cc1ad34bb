//! DBSIZE — the keys of the selected database, from the keyspace's maintained counts (O(1)
//! in the keys). As in Redis, keys whose time has passed count until they are removed. In
//! cluster mode: the keys of the slots the connection's address serves.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};

pub const DBSIZE: CommandSpec = cmd(
    "dbsize",
    1,
    &["readonly", "fast"],
    &["@keyspace", "@read", "@fast"],
)
.tips(&["request_policy:all_shards", "response_policy:agg_sum"])
.docs(doc(
    "server",
    "1.0.0",
    "Returns how many keys the current database holds.",
    "O(1)",
))
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let scope = crate::cluster::KeyScope::of(ctx.shared, ctx.client);
    let part = ctx.shared.cluster.is_some().then(|| scope.partition());
    let n = ctx.shared.keyspace.key_count(ctx.client.db, part).keys;
    Outcome::Reply(Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX)))
}
