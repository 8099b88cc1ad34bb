//! BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]

use bytes::Bytes;
use rialto_keyspace::{ListOp, OpKind};
use rialto_resp::Reply;

use super::list_util::{mpop_args, side, timeout_ms};
use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Double, Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply::CmdResult;

pub const BLMPOP: CommandSpec = cmd(
    "blmpop",
    -5,
    &["write", "blocking", "movablekeys"],
    &["@write", "@list", "@slow", "@blocking"],
)
.key_specs(&[super::lmpop::mpop_keys(2)])
.docs(
    doc(
        "list",
        "7.0.0",
        "Pops elements from the first non-empty list of several, waiting for one if all are empty.",
        "O(N+M) for N keys and M elements popped.",
    )
    .args(&[
        arg("timeout", Double),
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        super::lmove::side_arg("where"),
        arg("count", Integer).token("COUNT").opt(),
    ]),
)
.handler(Handler::Block(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    // Redis reads the timeout after the other arguments.
    let (keys, left, count) = mpop_args(args, 2, side)?;
    let timeout_ms = timeout_ms(&args[1])?;
    Ok(BlockingPop {
        op: at.op(OpKind::List(ListOp::MPop {
            keys: keys.clone(),
            left,
            count: Some(count),
        })),
        keys,
        timeout_ms,
        timed_out: Reply::NullArray,
        may_wait: true,
        in_script: None,
    })
}
