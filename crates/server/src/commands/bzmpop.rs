//! BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]

use bytes::Bytes;
use rialto_keyspace::{OpKind, ZSetOp};
use rialto_resp::Reply;

use super::list_util::{mpop_args, timeout_ms};
use super::zmpop::{min_max, min_max_arg};
use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Double, Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply::CmdResult;

pub const BZMPOP: CommandSpec = cmd(
    "bzmpop",
    -5,
    &["write", "blocking", "movablekeys"],
    &["@write", "@sortedset", "@slow", "@blocking"],
)
.key_specs(&[super::lmpop::mpop_keys(2)])
.docs(
    doc(
        "sorted-set",
        "7.0.0",
        "Pops the members of lowest or highest score from the first non-empty sorted set of several, waiting for one if all are empty.",
        "O(K + M*log(N)) for K keys and M members popped.",
    )
    .args(&[
        arg("timeout", Double),
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        min_max_arg(),
        arg("count", Integer).token("COUNT").opt(),
    ]),
)
.handler(Handler::Block(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    // Redis reads the timeout after the other arguments.
    let (keys, max, count) = mpop_args(args, 2, min_max)?;
    let timeout_ms = timeout_ms(&args[1])?;
    Ok(BlockingPop {
        op: at.op(OpKind::ZSet(ZSetOp::MPop {
            keys: keys.clone(),
            max,
            count: Some(count),
        })),
        keys,
        timeout_ms,
        timed_out: Reply::NullArray,
        may_wait: true,
        in_script: None,
    })
}
