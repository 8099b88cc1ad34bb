//! SINTERCARD numkeys key [key ...] [LIMIT limit]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::{checked, is};
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, BeginSearch, CommandSpec, FindKeys, KeySpec};
use crate::reply::{self, CmdResult};

pub const SINTERCARD: CommandSpec = cmd(
    "sintercard",
    -3,
    &["readonly", "movablekeys"],
    &["@read", "@set", "@slow"],
)
.key_specs(&[KeySpec {
    notes: None,
    flags: &["RO", "access"],
    begin_search: BeginSearch::Index(1),
    find_keys: FindKeys::Keynum {
        keynumidx: 0,
        firstkey: 1,
        keystep: 1,
    },
}])
.docs(
    doc(
        "set",
        "7.0.0",
        "Counts the members every given set has, up to an optional limit.",
        "O(N*M) at worst, for the smallest set of N members and M sets.",
    )
    .args(&[
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        arg("limit", Integer).token("LIMIT").opt(),
    ]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let numkeys = reply::parse_i64(&args[1])
        .filter(|&n| n >= 1)
        .ok_or_else(|| Reply::error("ERR numkeys should be greater than 0"))?;
    if numkeys > (args.len() - 2) as i64 {
        return Err(Reply::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let end = 2 + numkeys as usize;
    let mut limit = 0u64;
    let mut i = end;
    while i < args.len() {
        match args.get(i + 1) {
            Some(v) if is(&args[i], "limit") => {
                let n = reply::parse_i64(v)
                    .filter(|&n| n >= 0)
                    .ok_or_else(|| Reply::error("ERR LIMIT can't be negative"))?;
                limit = n as u64;
            }
            _ => return Err(reply::syntax()),
        }
        i += 2;
    }
    let found = checked(rialto_keyspace::set_inter(
        k.keys(),
        &args[2..end],
        (limit > 0).then_some(limit),
    ))?;
    Ok(Reply::Integer(found.len() as i64))
}
