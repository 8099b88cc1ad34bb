//! XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]

use bytes::Bytes;
use rialto_keyspace::{OpKind, StreamOp};

use super::stream_util::add_or_trim;
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const XTRIM: CommandSpec = cmd("xtrim", -4, &["write"], &["@write", "@stream", "@slow"])
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output"])
    .key_specs(&[KeySpec::single(1, &["RW", "delete"])])
    .docs(
        doc(
            "stream",
            "5.0.0",
            "Deletes a stream's oldest entries by length or by id.",
            "O(N) for N entries removed.",
        )
        .history(&[("6.2.0", "The `MINID` strategy and the `LIMIT` option.")])
        .args(&[
            arg("key", Key).key(0),
            arg("trim", Block).sub(&[
                arg("strategy", OneOf).sub(&[
                    arg("maxlen", PureToken).token("MAXLEN"),
                    arg("minid", PureToken).token("MINID").since("6.2.0"),
                ]),
                arg("operator", OneOf).opt().sub(&[
                    arg("equal", PureToken).token("="),
                    arg("approximately", PureToken).token("~"),
                ]),
                arg("threshold", Str),
                arg("count", Integer).token("LIMIT").since("6.2.0").opt(),
            ]),
        ]),
    )
    .handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let p = add_or_trim(args, false, at.stream_node)?;
    let trim = p.trim.ok_or_else(reply::syntax)?;
    Ok(at.op(OpKind::Stream(StreamOp::Trim {
        key: args[1].clone(),
        trim,
        node: at.stream_node,
    })))
}
