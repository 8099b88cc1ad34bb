//! KEYS pattern — walks the whole database (O(n)); runs off the connection threads.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::Pattern;
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

pub const KEYS: CommandSpec = cmd(
    "keys",
    2,
    &["readonly"],
    &["@keyspace", "@read", "@slow", "@dangerous"],
)
.tips(&["request_policy:all_shards", "nondeterministic_output_order"])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Returns every key whose name matches a glob-style pattern.",
        "O(N), N being the number of keys in the database, for short key names and patterns.",
    )
    .args(&[arg("pattern", Pattern)]),
)
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let shared = std::sync::Arc::clone(ctx.shared);
    let db = ctx.client.db;
    let pattern = args[1].clone();
    let scope = crate::cluster::KeyScope::of(ctx.shared, ctx.client);
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || {
            let mut keys = Vec::new();
            let all = &pattern[..] == b"*";
            shared
                .keyspace
                .walk_keys_in(scope.partition(), db, None, shared.now_ms(), |k, _| {
                    if (all || crate::glob::glob_match(&pattern, k, false)) && scope.covers(k) {
                        keys.push(Reply::bulk(k));
                    }
                    true
                })
                .map(|_| Reply::Array(keys))
                .unwrap_or_else(|e| reply::keyspace_error(&e))
        });
        job.await
            .unwrap_or_else(|e| reply::err_string(format!("ERR KEYS failed: {e}")))
    }))
}
