//! XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT count]
//! [FORCE] [JUSTID] [LASTID id]

use bytes::Bytes;
use rialto_keyspace::{OpKind, StreamOp};

use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, PureToken, String as Str, UnixTime};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const XCLAIM: CommandSpec = cmd(
    "xclaim",
    -6,
    &["write", "fast"],
    &["@write", "@stream", "@fast"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Gives pending entries idle for long enough to another consumer of the group.",
        "O(1) per id.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("group", Str),
        arg("consumer", Str),
        arg("min-idle-time", Str),
        arg("id", Str).multi(),
        arg("ms", Integer).token("IDLE").opt(),
        arg("unix-time-milliseconds", UnixTime).token("TIME").opt(),
        arg("count", Integer).token("RETRYCOUNT").opt(),
        arg("force", PureToken).token("FORCE").opt(),
        arg("justid", PureToken).token("JUSTID").opt(),
        arg("id", Str).token("LASTID").opt(),
    ]),
)
.handler(Handler::Write(run));

/// The arguments after the consumer are parsed where the op is applied: Redis reports a bad
/// one only once the key and group are found.
pub fn run(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    Ok(at.op(OpKind::Stream(StreamOp::Claim {
        key: args[1].clone(),
        group: args[2].clone(),
        consumer: args[3].clone(),
        args: args[4..].to_vec(),
    })))
}
