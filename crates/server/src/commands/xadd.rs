//! XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [...]

use bytes::Bytes;
use rialto_keyspace::{AddId, OpKind, StreamError, StreamId, StreamOp};

use super::stream_util::add_or_trim;
use super::util::checked;
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const XADD: CommandSpec = cmd(
    "xadd",
    -5,
    &["write", "denyoom", "fast"],
    &["@write", "@stream", "@fast"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RW", "update"])
    .notes("UPDATE instead of INSERT because of the optional trimming feature")])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Appends an entry to a stream, creating the stream if needed, and may trim it.",
        "O(1) to add the entry; a trim costs O(entries removed).",
    )
    .history(&[
        (
            "6.2.0",
            "The `NOMKSTREAM` option, the `MINID` strategy and the `LIMIT` option.",
        ),
        ("7.0.0", "Ids of the form `<ms>-*`."),
    ])
    .args(&[
        arg("key", Key).key(0),
        arg("nomkstream", PureToken)
            .token("NOMKSTREAM")
            .since("6.2.0")
            .opt(),
        arg("trim", Block).opt().sub(&[
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
        arg("id_or_auto", OneOf).sub(&[arg("auto_id", PureToken).token("*"), arg("id", Str)]),
        arg("field_value", Block)
            .multi()
            .sub(&[arg("field", Str), arg("value", Str)]),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let p = add_or_trim(args, true, at.stream_node)?;
    let fields = &args[(p.id_at + 1).min(args.len())..];
    if fields.len() < 2 || !fields.len().is_multiple_of(2) {
        return Err(reply::wrong_arity("xadd"));
    }
    let id = match p.id {
        None => AddId::Auto,
        Some((id, true)) if id == StreamId::MIN => {
            return Err(reply::stream_error(&StreamError::IdZero))
        }
        Some((id, true)) => AddId::Exact(id),
        Some((id, false)) => AddId::Ms(id.ms),
    };
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::Stream(StreamOp::Add {
        key: args[1].clone(),
        nomkstream: p.nomkstream,
        id,
        fields: fields.to_vec(),
        trim: p.trim,
        node: at.stream_node,
    })))
}
