//! FLUSHDB [ASYNC | SYNC], FLUSHALL [ASYNC | SYNC] — delete every key (and expiry entry) of
//! one or all databases (`Keyspace::flush`), in bounded transactions; replies once the last is
//! durable. O(n) in the keys deleted. ASYNC and SYNC behave alike (the reply always waits for
//! durability).
//!
//! A write that another client had in flight may land before or after the flush, exactly as
//! its acknowledgement and the flush's are ordered by the journal.

use std::sync::Arc;

use bytes::Bytes;

use super::util::is;
use super::{Ctx, Outcome};
use crate::reply;

pub fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    flush(ctx, args, Some(ctx.client.db))
}

pub fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    flush(ctx, args, None)
}

fn flush(ctx: &mut Ctx<'_>, args: &[Bytes], db: Option<u8>) -> Outcome {
    match args.get(1) {
        None => {}
        Some(a) if args.len() == 2 && (is(a, "async") || is(a, "sync")) => {}
        Some(_) => return Outcome::Reply(reply::syntax()),
    }
    let shared = Arc::clone(ctx.shared);
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || shared.keyspace.flush(db));
        match job.await {
            Ok(Ok(())) => reply::ok(),
            Ok(Err(e)) => reply::keyspace_error(&e),
            Err(e) => reply::err_string(format!("ERR flush failed: {e}")),
        }
    }))
}
