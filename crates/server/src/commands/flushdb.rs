//! FLUSHDB [ASYNC | SYNC], FLUSHALL [ASYNC | SYNC] — delete every key (and expiry entry) of
//! one or all databases, in transactions of `store::DELETE_CHUNK` deletions through the merger; replies once
//! the last is durable. O(n) in the keys deleted. ASYNC and SYNC behave alike (the reply always
//! waits for durability).
//!
//! A write that another client had in flight may land before or after the flush, exactly as
//! its acknowledgement and the flush's are ordered by the journal.

use std::sync::Arc;

use bytes::Bytes;

use super::util::is;
use super::{Ctx, Outcome};
use crate::keyspace::{DATA, EXPIRY};
use crate::reply;
use crate::server::Shared;

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
        let job = tokio::task::spawn_blocking(move || delete_all(&shared, db));
        match job.await {
            Ok(Ok(())) => reply::ok(),
            Ok(Err(e)) => reply::engine_error(&e),
            Err(e) => reply::err_string(format!("ERR flush failed: {e}")),
        }
    }))
}

fn ranges(db: Option<u8>) -> Vec<(Vec<u8>, Vec<u8>)> {
    match db {
        Some(d) => vec![
            crate::keyspace::data_range(d),
            (vec![EXPIRY, d], {
                let mut v = vec![EXPIRY, d];
                // [EXPIRY, d+1) or [EXPIRY+1) for d = 255.
                match d.checked_add(1) {
                    Some(n) => v[1] = n,
                    None => v = vec![EXPIRY + 1],
                }
                v
            }),
        ],
        None => vec![(vec![DATA], vec![EXPIRY + 1])],
    }
}

fn delete_all(shared: &Shared, db: Option<u8>) -> rialto_engine::Result<()> {
    let mut all = ranges(db);
    if db.is_none_or(|d| d == 0) {
        // Stores' keys are in database 0: empty every live version (a version being pushed
        // is not reached: it replaces what it replaces).
        for s in shared.stores.exec_catalog().iter() {
            all.extend(
                s.live_versions()
                    .map(|v| crate::stores::catalog::version_range(s.id, v)),
            );
        }
    }
    for (lo, hi) in all {
        crate::store::delete_range(&shared.db, &shared.merger, &lo, &hi, |_| true)?;
    }
    Ok(())
}
