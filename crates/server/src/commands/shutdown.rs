//! SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT] — a graceful stop: every acknowledged write
//! is already durable, so SAVE/NOSAVE change nothing; the server finishes in-flight commands,
//! syncs and flushes, then exits 0. Like Redis, no reply on success: the connection closes.

use bytes::Bytes;
use rialto_resp::Reply;
use tracing::info;

use super::util::is;
use super::{Ctx, Outcome};
use crate::reply;

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
    info!(client = ctx.client.handle.id, "SHUTDOWN requested");
    ctx.shared.request_shutdown();
    Outcome::Close(None)
}
