//! RANDOMKEY — seeks to a random point of the key order and returns the next live key
//! (wrapping once). Keys after large gaps in the key space are more likely than others; Redis
//! gives no uniformity promise either.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};
use crate::reply;

pub const RANDOMKEY: CommandSpec = cmd(
    "randomkey",
    1,
    &["readonly"],
    &["@keyspace", "@read", "@slow"],
)
.tips(&["request_policy:all_shards", "nondeterministic_output"])
.docs(doc(
    "generic",
    "1.0.0",
    "Returns a key picked at random from the current database.",
    "O(1)",
))
.handler(Handler::Conn(run));

pub fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let db = ctx.client.db;
    let now = ctx.shared.now_ms();
    let start: [u8; 8] = rand::random();
    let mut found = None;
    let scope = crate::cluster::KeyScope::of(ctx.shared, ctx.client);
    for from in [Some(&start[..]), None] {
        let r = ctx
            .shared
            .keyspace
            .walk_keys_in(scope.partition(), db, from, now, |k, _| {
                if !scope.covers(k) {
                    return true;
                }
                found = Some(Bytes::copy_from_slice(k));
                false
            });
        if let Err(e) = r {
            return Outcome::Reply(reply::keyspace_error(&e));
        }
        if found.is_some() {
            break;
        }
    }
    Outcome::Reply(found.map_or(Reply::Null, Reply::Bulk))
}
