//! RANDOMKEY — a live key of the database, each equally likely. At most `UNIFORM_MAX` keys
//! (by the database's maintained count) are walked and one is drawn. Beyond, the engine
//! draws entries at random by position and keeps only live keys of the database
//! (`Keyspace::random_key_in`), still uniform; only if its bounded draws all miss (live keys
//! rare among the entries drawn from) does it fall back to seeking a random point of the key
//! order, where keys after large gaps are more likely than others.

use bytes::Bytes;
use rialto_keyspace::RandomKey;
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

/// Most keys RANDOMKEY walks to draw one uniformly.
const UNIFORM_MAX: u64 = 10_000;

pub fn run(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let db = ctx.client.db;
    let now = ctx.shared.now_ms();
    let scope = crate::cluster::KeyScope::of(ctx.shared, ctx.client);
    let part = ctx.shared.cluster.is_some().then(|| scope.partition());
    if ctx.shared.keyspace.key_count(db, part).keys <= UNIFORM_MAX {
        let mut keys = Vec::new();
        let r = ctx
            .shared
            .keyspace
            .walk_keys_in(scope.partition(), db, None, now, |k, _| {
                if scope.covers(k) {
                    keys.push(Bytes::copy_from_slice(k));
                }
                keys.len() as u64 <= UNIFORM_MAX
            });
        if let Err(e) = r {
            return Outcome::Reply(reply::keyspace_error(&e));
        }
        if keys.len() as u64 <= UNIFORM_MAX {
            use rand::seq::SliceRandom;
            let picked = keys.choose(&mut rand::thread_rng()).cloned();
            return Outcome::Reply(picked.map_or(Reply::Null, Reply::Bulk));
        }
    }
    let drawn = ctx.shared.keyspace.random_key_in(
        scope.partition(),
        db,
        now,
        &mut rand::thread_rng(),
        |k| scope.covers(k),
    );
    match drawn {
        Ok(RandomKey::Found(k)) => return Outcome::Reply(Reply::Bulk(Bytes::from(k))),
        Ok(RandomKey::Empty) => return Outcome::Reply(Reply::Null),
        Ok(RandomKey::Undecided) => {}
        Err(e) => return Outcome::Reply(reply::keyspace_error(&e)),
    }
    let start: [u8; 8] = rand::random();
    let mut found = None;
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
