//! SRANDMEMBER key [count]
//!
//! Uniform over the members: it reads the whole set (O(N)), which a large set pays for.

use bytes::Bytes;
use rand::seq::SliceRandom;
use rand::Rng;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const SRANDMEMBER: CommandSpec = cmd(
    "srandmember",
    -2,
    &["readonly"],
    &["@read", "@set", "@slow"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "set",
        "1.0.0",
        "Picks members of a set at random.",
        "O(N) for a set of N members.",
    )
    .history(&[("2.6.0", "Added the optional `count` argument.")])
    .args(&[
        arg("key", Key).key(0),
        arg("count", Integer).since("2.6.0").opt(),
    ]),
)
.handler(Handler::Read(run));

/// Most members a negative count may ask for (as HRANDFIELD's).
const MAX_REPEATS: i64 = 1 << 24;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let count = match args {
        [_, _] => None,
        [_, _, c] => {
            let n = reply::int_arg(c)?;
            if n == i64::MIN {
                return Err(Reply::error(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                ));
            }
            // A count with repeats is built whole in memory: bounded, as later Redis
            // versions bound it.
            if n < -MAX_REPEATS {
                return Err(Reply::error("ERR value is out of range"));
            }
            Some(n)
        }
        _ => return Err(reply::syntax()),
    };
    let Some(s) = k.set(&args[1])? else {
        return Ok(match count {
            None => Reply::Null,
            Some(_) => Reply::Array(Vec::new()),
        });
    };
    let members = checked(s.members(k.keys()))?;
    let mut rng = rand::thread_rng();
    let Some(n) = count else {
        return Ok(match members.choose(&mut rng) {
            Some(m) => Reply::Bulk(m.clone()),
            None => Reply::Null,
        });
    };
    let picked: Vec<Bytes> = if n >= 0 {
        // Distinct members; all of them when the count covers the set.
        let n = n as usize;
        if n >= members.len() {
            members
        } else {
            members.choose_multiple(&mut rng, n).cloned().collect()
        }
    } else if members.is_empty() {
        Vec::new()
    } else {
        (0..n.unsigned_abs())
            .map(|_| members[rng.gen_range(0..members.len())].clone())
            .collect()
    };
    Ok(Reply::Array(picked.into_iter().map(Reply::Bulk).collect()))
}
