//! SAVE — Redis writes a snapshot; Rialto has none to write (the journal is the database), so
//! SAVE makes every write acknowledged before it durable, which only `appendfsync everysec`
//! or `no` can have left unsynced, and answers OK once it is.

use std::sync::Arc;

use bytes::Bytes;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};
use crate::reply;

pub const SAVE: CommandSpec = cmd(
    "save",
    1,
    &["admin", "noscript", "no_async_loading", "no_multi"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "1.0.0",
    "Synchronously saves the database(s) to disk.",
    "O(N) where N is the total number of keys in all databases",
))
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let shared = Arc::clone(ctx.shared);
    Outcome::Later(Box::pin(async move {
        // A sync is disk I/O: off the connection's thread.
        let synced = tokio::task::spawn_blocking(move || shared.keyspace.sync()).await;
        match synced {
            Ok(Ok(())) => reply::ok(),
            Ok(Err(e)) => reply::keyspace_error(&e),
            Err(_) => rialto_resp::Reply::error("ERR the sync of the journal did not finish"),
        }
    }))
}
