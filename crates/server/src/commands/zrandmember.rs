//! ZRANDMEMBER key [count [WITHSCORES]]
//!
//! Uniform over the members: it reads the whole set (O(N)), which a large set pays for.

use bytes::Bytes;
use rand::seq::SliceRandom;
use rand::Rng;
use rialto_resp::Reply;

use super::util::{checked, is};
use super::zset_util::members_reply;
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const ZRANDMEMBER: CommandSpec = cmd(
    "zrandmember",
    -2,
    &["readonly"],
    &["@read", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "sorted-set",
        "6.2.0",
        "Picks members of a sorted set at random.",
        "O(N) for a set of N members.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("options", Block).opt().sub(&[
            arg("count", Integer),
            arg("withscores", PureToken).token("WITHSCORES").opt(),
        ]),
    ]),
)
.handler(Handler::Read(run));

/// Most members a negative count may ask for (as HRANDFIELD's bound).
const MAX_REPEATS: i64 = 1 << 24;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut count = None;
    let mut with_scores = false;
    if let Some(c) = args.get(2) {
        let n = reply::int_arg(c)?;
        if n == i64::MIN {
            return Err(Reply::error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ));
        }
        match &args[3..] {
            [] => {}
            [w] if is(w, "withscores") => with_scores = true,
            _ => return Err(reply::syntax()),
        }
        // A count with repeats is built whole in memory: bounded, as later Redis versions
        // bound it.
        if n < -MAX_REPEATS {
            return Err(Reply::error("ERR value is out of range"));
        }
        count = Some(n);
    }
    let Some(z) = k.zset(&args[1])? else {
        return Ok(match count {
            None => Reply::Null,
            Some(_) => Reply::Array(Vec::new()),
        });
    };
    let entries = checked(z.entries(k.keys()))?;
    let mut rng = rand::thread_rng();
    let Some(n) = count else {
        return Ok(match entries.choose(&mut rng) {
            Some((m, _)) => Reply::Bulk(m.clone()),
            None => Reply::Null,
        });
    };
    let picked: Vec<(Bytes, f64)> = if n >= 0 {
        let n = n as usize;
        if n >= entries.len() {
            entries
        } else {
            entries.choose_multiple(&mut rng, n).cloned().collect()
        }
    } else if entries.is_empty() {
        Vec::new()
    } else {
        (0..n.unsigned_abs())
            .map(|_| entries[rng.gen_range(0..entries.len())].clone())
            .collect()
    };
    Ok(members_reply(picked, with_scores))
}
