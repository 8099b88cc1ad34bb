//! KEYS pattern — walks the whole database (O(n)); runs off the connection threads.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Outcome};
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let shared = std::sync::Arc::clone(ctx.shared);
    let db = ctx.client.db;
    let pattern = args[1].clone();
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || {
            let mut keys = Vec::new();
            let all = &pattern[..] == b"*";
            shared
                .keyspace
                .walk_keys(db, None, shared.now_ms(), |k, _| {
                    if all || crate::glob::glob_match(&pattern, k, false) {
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
