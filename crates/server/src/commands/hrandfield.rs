//! HRANDFIELD key [count [WITHVALUES]]
//!
//! Uniform over the fields: it reads the whole hash (O(N)), which a large hash pays for.

use bytes::Bytes;
use rand::seq::SliceRandom;
use rand::Rng;
use rialto_resp::Reply;

use super::util::{checked, is};
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const HRANDFIELD: CommandSpec = cmd(
    "hrandfield",
    -2,
    &["readonly"],
    &["@read", "@hash", "@slow"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "hash",
        "6.2.0",
        "Picks fields of a hash at random.",
        "O(N) for a hash of N fields.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("options", Block).opt().sub(&[
            arg("count", Integer),
            arg("withvalues", PureToken).token("WITHVALUES").opt(),
        ]),
    ]),
)
.handler(Handler::Read(run));

/// Most fields a negative count may ask for.
const MAX_REPEATS: i64 = 1 << 24;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut count = None;
    let mut with_values = false;
    if let Some(c) = args.get(2) {
        let n = reply::int_arg(c)?;
        // A count with repeats is built whole in memory: bounded, as later Redis versions
        // bound it.
        if n < -MAX_REPEATS {
            return Err(Reply::error("ERR value is out of range"));
        }
        count = Some(n);
        match &args[3..] {
            [] => {}
            [w] if is(w, "withvalues") => with_values = true,
            _ => return Err(reply::syntax()),
        }
    }
    let Some(h) = k.hash(&args[1])? else {
        return Ok(match count {
            None => Reply::Null,
            Some(_) => Reply::Array(Vec::new()),
        });
    };
    let entries = checked(h.entries(k.keys()))?;
    let mut rng = rand::thread_rng();
    let Some(n) = count else {
        return Ok(match entries.choose(&mut rng) {
            Some((f, _)) => Reply::Bulk(f.clone()),
            None => Reply::Null,
        });
    };
    let picked: Vec<&(Bytes, Bytes)> = if n >= 0 {
        // Distinct fields; all of them when the count covers the hash.
        let n = n as usize;
        if n >= entries.len() {
            entries.iter().collect()
        } else {
            entries.choose_multiple(&mut rng, n).collect()
        }
    } else {
        // Repeats allowed.
        let n = n.unsigned_abs() as usize;
        if entries.is_empty() {
            Vec::new()
        } else {
            (0..n)
                .map(|_| &entries[rng.gen_range(0..entries.len())])
                .collect()
        }
    };
    Ok(if with_values {
        Reply::Pairs(
            picked
                .into_iter()
                .map(|(f, v)| (Reply::Bulk(f.clone()), Reply::Bulk(v.clone())))
                .collect(),
        )
    } else {
        Reply::Array(
            picked
                .into_iter()
                .map(|(f, _)| Reply::Bulk(f.clone()))
                .collect(),
        )
    })
}
