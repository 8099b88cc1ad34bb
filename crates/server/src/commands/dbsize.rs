//! DBSIZE — counts the live keys of the selected database by walking it (O(n)), off the
//! connection threads. Unlike Redis, keys that expired but were not yet removed are not
//! counted.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};
use crate::reply;

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
    let shared = std::sync::Arc::clone(ctx.shared);
    let db = ctx.client.db;
    let scope = crate::cluster::KeyScope::of(ctx.shared, ctx.client);
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || {
            let mut n = 0i64;
            shared
                .keyspace
                .walk_keys_in(scope.partition(), db, None, shared.now_ms(), |k, _| {
                    n += i64::from(scope.covers(k));
                    true
                })
                .map(|_| Reply::Integer(n))
                .unwrap_or_else(|e| reply::keyspace_error(&e))
        });
        job.await
            .unwrap_or_else(|e| reply::err_string(format!("ERR DBSIZE failed: {e}")))
    }))
}
