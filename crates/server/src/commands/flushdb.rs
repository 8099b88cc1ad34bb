//! FLUSHDB [ASYNC | SYNC], FLUSHALL [ASYNC | SYNC] — delete every key (and expiry entry) of
//! one or all databases (`Keyspace::flush`), in bounded transactions; replies once the last is
//! durable. O(n) in the keys deleted. ASYNC and SYNC behave alike (the reply always waits for
//! durability).
//!
//! A write that another client had in flight may land before or after the flush, exactly as
//! its acknowledgement and the flush's are ordered by the journal. In cluster mode an address
//! flushes its partition's slots, in steps through the log (`cluster::flush_partition`).

use std::sync::Arc;

use bytes::Bytes;

use super::util::is;
use rialto_keyspace::{Op, OpKind};

use super::{At, Ctx, Handler, Outcome};
use crate::command_table::ArgType::{OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply::{self, CmdResult};

pub const FLUSHDB: CommandSpec = cmd(
    "flushdb",
    -1,
    &["write"],
    &["@keyspace", "@write", "@slow", "@dangerous"],
)
.tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
.docs(
    doc(
        "server",
        "1.0.0",
        "Deletes every key of the current database.",
        "O(N), N being the number of keys in the current database.",
    )
    .history(&[
        ("4.0.0", "Modifier `ASYNC`."),
        ("6.2.0", "Modifier `SYNC`."),
    ])
    .args(&[arg("async", OneOf).opt().sub(&[
        arg("async", PureToken).token("ASYNC").since("4.0.0"),
        arg("sync", PureToken).token("SYNC").since("6.2.0"),
    ])]),
)
.handler(Handler::Conn(flushdb));

pub const FLUSHALL: CommandSpec = cmd(
    "flushall",
    -1,
    &["write"],
    &["@keyspace", "@write", "@slow", "@dangerous"],
)
.tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
.docs(
    doc(
        "server",
        "1.0.0",
        "Deletes every key of every database.",
        "O(N), N being the number of keys across all databases.",
    )
    .history(&[
        ("4.0.0", "Modifier `ASYNC`."),
        ("6.2.0", "Modifier `SYNC`."),
    ])
    .args(&[arg("async", OneOf).opt().sub(&[
        arg("async", PureToken).token("ASYNC").since("4.0.0"),
        arg("sync", PureToken).token("SYNC").since("6.2.0"),
    ])]),
)
.handler(Handler::Conn(flushall));

pub fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    flush(ctx, args, Some(ctx.client.db))
}

pub fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    flush(ctx, args, None)
}

/// FLUSHDB or FLUSHALL queued in a transaction, as the op it applies there (one step that
/// deletes everything it covers); `None` for any other command.
pub fn in_transaction(spec: &CommandSpec, at: At, args: &[Bytes]) -> Option<CmdResult<Op>> {
    let all = match spec.name {
        "flushdb" => false,
        "flushall" => true,
        _ => return None,
    };
    Some(check_options(args).map(|()| {
        at.op(OpKind::FlushStep {
            all,
            limit: u64::MAX,
        })
    }))
}

fn check_options(args: &[Bytes]) -> CmdResult<()> {
    match args.get(1) {
        None => Ok(()),
        Some(a) if args.len() == 2 && (is(a, "async") || is(a, "sync")) => Ok(()),
        Some(_) => Err(reply::syntax()),
    }
}

fn flush(ctx: &mut Ctx<'_>, args: &[Bytes], db: Option<u8>) -> Outcome {
    if let Err(r) = check_options(args) {
        return Outcome::Reply(r);
    }
    let shared = Arc::clone(ctx.shared);
    if let Some(c) = shared.cluster.clone() {
        // An address flushes the slots it serves, as a Redis Cluster node does.
        let p = c.partition_of_port(ctx.client.handle.laddr.port());
        let now_ms = shared.now_ms();
        return Outcome::Later(Box::pin(crate::cluster::flush_partition(c, p, now_ms)));
    }
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || shared.keyspace.flush(db));
        match job.await {
            Ok(Ok(())) => reply::ok(),
            Ok(Err(e)) => reply::keyspace_error(&e),
            Err(e) => reply::err_string(format!("ERR flush failed: {e}")),
        }
    }))
}
