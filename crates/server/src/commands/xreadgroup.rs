//! XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK]
//! STREAMS key [key ...] id [id ...]

use bytes::Bytes;
use rialto_keyspace::{BadStreamId, OpKind, StreamId, StreamOp};
use rialto_resp::Reply;

use super::xread::{no_block_in_scripts, read_args, streams_keys};
use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Block, Integer, Key, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply::CmdResult;

pub const XREADGROUP: CommandSpec = cmd(
    "xreadgroup",
    -7,
    &["write", "blocking", "movablekeys"],
    &["@write", "@stream", "@slow", "@blocking"],
)
.key_specs(&[streams_keys(4)])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Reads entries for a consumer of a group: new ones (`>`), which become pending for it, or its pending history; may wait for new ones.",
        "O(N) for N entries returned, each new one adding a pending entry.",
    )
    .args(&[
        arg("group_consumer", Block).token("GROUP").sub(&[
            arg("group", Str),
            arg("consumer", Str),
        ]),
        arg("count", Integer).token("COUNT").opt(),
        arg("milliseconds", Integer).token("BLOCK").opt(),
        arg("noack", PureToken).token("NOACK").opt(),
        arg("streams", Block).token("STREAMS").sub(&[
            arg("key", Key).key(0).multi(),
            arg("id", Str).multi(),
        ]),
    ]),
)
.handler(Handler::Block(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    let r = read_args(args, true)?;
    let (group, consumer) = r.group.clone().unwrap_or_default();
    let mut streams = Vec::with_capacity(r.keys.len());
    let mut bad = None;
    for (i, (key, id)) in r.keys.iter().zip(&r.ids).enumerate() {
        let from = match &id[..] {
            b">" => None,
            b"$" => {
                bad.get_or_insert((i as u64, BadStreamId::Dollar));
                None
            }
            other => match StreamId::parse(other, 0, true, false) {
                // The greatest id is how Redis marks `>`.
                Some((id, _)) if id == StreamId::MAX => None,
                Some((id, _)) => Some(id),
                None => {
                    bad.get_or_insert((i as u64, BadStreamId::Invalid));
                    None
                }
            },
        };
        streams.push((key.clone(), from));
    }
    Ok(BlockingPop {
        op: at.op(OpKind::Stream(StreamOp::ReadGroup {
            group,
            consumer,
            streams,
            count: r.count,
            noack: r.noack,
            served: false,
            bad,
        })),
        keys: r.keys,
        timeout_ms: r.block.flatten(),
        timed_out: Reply::NullArray,
        may_wait: r.block.is_some(),
        in_script: r.block.is_some().then(|| no_block_in_scripts(args)),
    })
}
