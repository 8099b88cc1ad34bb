//! XDEL key id [id ...]

use bytes::Bytes;
use rialto_keyspace::{OpKind, StreamId, StreamOp};

use super::{At, Handler};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const XDEL: CommandSpec = cmd(
    "xdel",
    -3,
    &["write", "fast"],
    &["@write", "@stream", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "delete"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Deletes entries from a stream by id.",
        "O(1) per entry deleted, plus a read of its node.",
    )
    .args(&[arg("key", Key).key(0), arg("id", Str).multi()]),
)
.handler(Handler::Write(run));

/// Strict ids; whether one did not parse (an error once the key is found, as Redis reports it).
pub fn ids(args: &[Bytes]) -> (Vec<StreamId>, bool) {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        match StreamId::parse(a, 0, true, false) {
            Some((id, _)) => out.push(id),
            None => return (Vec::new(), true),
        }
    }
    (out, false)
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let (ids, bad) = ids(&args[2..]);
    Ok(at.op(OpKind::Stream(StreamOp::Del {
        key: args[1].clone(),
        ids,
        bad,
    })))
}
