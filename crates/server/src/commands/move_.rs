//! MOVE key db — the value and its TTL to another database, if the key is not there yet.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;

use super::copy::db_arg;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const MOVE: CommandSpec = cmd(
    "move",
    3,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Moves a key to another database unless it exists there.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("db", Integer)]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let dst_db = db_arg(&args[2], at.databases)?;
    if dst_db == at.db {
        return Err(Reply::error(
            "ERR source and destination objects are the same",
        ));
    }
    Ok(at.op(OpKind::Move {
        key: args[1].clone(),
        dst_db,
    }))
}
