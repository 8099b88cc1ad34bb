//! MONITOR — the connection receives every command the server runs from then on, one status
//! line each (see `crate::monitor`), until RESET or its end.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};
use crate::reply;

pub const MONITOR: CommandSpec = cmd(
    "monitor",
    1,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "1.0.0",
    "Streams every command the server runs, as it runs it.",
    "",
))
.handler(Handler::Conn(run));

fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let handle = &ctx.client.handle;
    if handle.monitor.load(Ordering::Relaxed) {
        // Already monitoring: Redis ignores the request without a reply.
        return Outcome::Silent;
    }
    let mb = match &ctx.client.mailbox {
        Some(mb) => std::sync::Arc::clone(mb),
        None => {
            let mb = ctx.shared.hub.mailbox(handle);
            ctx.client.mailbox = Some(std::sync::Arc::clone(&mb));
            mb
        }
    };
    if ctx.shared.monitors.add(mb) {
        handle.monitor.store(true, Ordering::Relaxed);
    }
    Outcome::Reply(reply::ok())
}

/// Leaves monitor mode (RESET).
pub fn stop(ctx: &mut Ctx<'_>) {
    let handle = &ctx.client.handle;
    if handle.monitor.swap(false, Ordering::Relaxed) {
        ctx.shared.monitors.remove(handle.id);
    }
}
