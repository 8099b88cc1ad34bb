//! HINCRBYFLOAT key field increment — computed in C `long double` by the keyspace, as Redis
//! does.

use bytes::Bytes;
use rialto_keyspace::{HashOp, Op, OpKind};
use rialto_resp::Reply;

use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Double, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const HINCRBYFLOAT: CommandSpec = cmd(
    "hincrbyfloat",
    4,
    &["write", "denyoom", "fast"],
    &["@write", "@hash", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
.docs(
    doc(
        "hash",
        "2.6.0",
        "Adds a number to a hash field's numeric value (a missing field counts as 0).",
        "O(1)",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("field", Str),
        arg("increment", Double),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    // Redis refuses a bad increment before it looks at the key.
    match rialto_keyspace::float_add(b"0", &args[3]) {
        Err(rialto_keyspace::Error::NotFloat) => return Err(reply::not_float()),
        Err(rialto_keyspace::Error::NanOrInfinity) => {
            return Err(Reply::error("ERR value is NaN or Infinity"))
        }
        _ => {}
    }
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Hash(HashOp::IncrByFloat {
        key: args[1].clone(),
        field: args[2].clone(),
        incr: args[3].clone(),
    })))
}
