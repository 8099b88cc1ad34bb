//! SWAPDB index1 index2 — two databases exchange their contents, in O(1).

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::{At, Handler};
use crate::command_table::ArgType::Integer;
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply::{self, CmdResult};

pub const SWAPDB: CommandSpec = cmd(
    "swapdb",
    3,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast", "@dangerous"],
)
.docs(
    doc(
        "server",
        "4.0.0",
        "Exchanges the contents of two databases.",
        "O(N) for N clients watching or blocked on keys of the two databases.",
    )
    .args(&[arg("index1", Integer), arg("index2", Integer)]),
)
.handler(Handler::Write(run));

/// A database index as Redis's `getIntFromObjectOrReply` reads it, with `what` the error.
fn index(arg: &[u8], what: &'static str) -> CmdResult<i64> {
    reply::parse_i64(arg)
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or_else(|| Reply::error(what))
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let a = index(&args[1], "ERR invalid first DB index")?;
    let b = index(&args[2], "ERR invalid second DB index")?;
    let n = at.databases as i64;
    if !(0..n).contains(&a) || !(0..n).contains(&b) {
        return Err(Reply::error("ERR DB index is out of range"));
    }
    Ok(at.op(OpKind::SwapDb {
        a: a as u8,
        b: b as u8,
    }))
}
