//! SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT] — a graceful stop: every acknowledged write
//! is already durable, so SAVE/NOSAVE change nothing; the server finishes in-flight commands,
//! syncs and flushes, then exits 0. Like Redis, no reply on success: the connection closes.
//! While a script is busy, only SHUTDOWN NOSAVE is taken: it stops the script, whose writes
//! are dropped (a script takes effect whole or not at all).

use bytes::Bytes;
use rialto_resp::Reply;
use tracing::info;

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::{OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

pub const SHUTDOWN: CommandSpec = cmd(
    "shutdown",
    -1,
    &[
        "admin",
        "noscript",
        "loading",
        "stale",
        "no_multi",
        "allow_busy",
    ],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "1.0.0",
        "Stops the server, saving the data first unless told otherwise.",
        "O(N) when saving, N being the number of keys across all databases; O(1) otherwise.",
    )
    .history(&[("7.0.0", "Modifiers `NOW`, `FORCE` and `ABORT`.")])
    .args(&[
        arg("nosave_save", OneOf).opt().sub(&[
            arg("nosave", PureToken).token("NOSAVE"),
            arg("save", PureToken).token("SAVE"),
        ]),
        arg("now", PureToken).token("NOW").since("7.0.0").opt(),
        arg("force", PureToken).token("FORCE").since("7.0.0").opt(),
        arg("abort", PureToken).token("ABORT").since("7.0.0").opt(),
    ]),
)
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut abort = false;
    let (mut save, mut nosave) = (false, false);
    for a in &args[1..] {
        if is(a, "nosave") {
            nosave = true;
        } else if is(a, "save") {
            save = true;
        } else if is(a, "now") || is(a, "force") {
        } else if is(a, "abort") {
            abort = true;
        } else {
            return Outcome::Reply(reply::syntax());
        }
    }
    if (save && nosave) || (abort && args.len() > 2) {
        return Outcome::Reply(reply::syntax());
    }
    if abort {
        return Outcome::Reply(Reply::error("ERR No shutdown in progress."));
    }
    let scripts = &ctx.shared.scripts;
    if scripts.busy() {
        // As in Redis, a busy script leaves only the stop that keeps none of its effects.
        if !nosave {
            return Outcome::Reply(scripts.busy_reply());
        }
        if scripts.abort() {
            info!(
                client = ctx.client.handle.id,
                "SHUTDOWN NOSAVE stops the busy script; its writes are dropped"
            );
        }
    }
    info!(client = ctx.client.handle.id, "SHUTDOWN requested");
    ctx.shared.request_shutdown();
    Outcome::Close(None)
}
