//! COPY source destination [DB destination-db] [REPLACE] — the value and its TTL; a large
//! collection's members are copied under a new version (O(N)).

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::util::{checked, is};
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const COPY: CommandSpec = cmd(
    "copy",
    -3,
    &["write", "denyoom"],
    &["@keyspace", "@write", "@slow"],
)
.keys(1, 2, 1)
.key_specs(&[
    KeySpec::single(1, &["RO", "access"]),
    KeySpec::single(2, &["OW", "update"]),
])
.docs(
    doc(
        "generic",
        "6.2.0",
        "Copies a key's value, and its TTL, to another key.",
        "O(1) for a string or a small collection; O(N) for a collection of N members kept as keys of their own.",
    )
    .args(&[
        arg("source", Key).key(0),
        arg("destination", Key).key(1),
        arg("destination-db", Integer).token("DB").opt(),
        arg("replace", PureToken).token("REPLACE").opt(),
    ]),
)
.handler(Handler::Write(run));

/// The database `arg` names among `databases`, as Redis checks it.
pub(super) fn db_arg(arg: &[u8], databases: usize) -> CmdResult<u8> {
    let n = reply::int_arg(arg)?;
    if !(i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&n) {
        return Err(Reply::error(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ));
    }
    if n < 0 || n as usize >= databases || n > 255 {
        return Err(Reply::error("ERR DB index is out of range"));
    }
    Ok(n as u8)
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let mut dst_db = at.db;
    let mut replace = false;
    let mut j = 3;
    while j < args.len() {
        if is(&args[j], "replace") {
            replace = true;
        } else if is(&args[j], "db") && j + 1 < args.len() {
            dst_db = db_arg(&args[j + 1], at.databases)?;
            j += 1;
        } else {
            return Err(reply::syntax());
        }
        j += 1;
    }
    if dst_db == at.db && args[1] == args[2] {
        return Err(Reply::error(
            "ERR source and destination objects are the same",
        ));
    }
    checked(rialto_keyspace::check_key(&args[2]))?;
    Ok(at.op(OpKind::Copy {
        src: args[1].clone(),
        dst: args[2].clone(),
        dst_db,
        replace,
    }))
}
