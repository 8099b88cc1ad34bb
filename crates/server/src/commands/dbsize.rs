//! DBSIZE — counts the live keys of the selected database by walking it (O(n)), off the
//! connection threads. Unlike Redis, keys that expired but were not yet removed are not
//! counted.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Outcome};
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let shared = std::sync::Arc::clone(ctx.shared);
    let db = ctx.client.db;
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || {
            let mut n = 0i64;
            shared
                .keyspace
                .walk_keys(db, None, shared.now_ms(), |_, _| {
                    n += 1;
                    true
                })
                .map(|_| Reply::Integer(n))
                .unwrap_or_else(|e| reply::keyspace_error(&e))
        });
        job.await
            .unwrap_or_else(|e| reply::err_string(format!("ERR DBSIZE failed: {e}")))
    }))
}
