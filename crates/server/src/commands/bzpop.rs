//! BZPOPMIN key [key ...] timeout, BZPOPMAX key [key ...] timeout

use bytes::Bytes;
use rialto_keyspace::{OpKind, ZSetOp};
use rialto_resp::Reply;

use super::list_util::timeout_ms;
use super::util::checked;
use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Double, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const BZPOPMIN: CommandSpec = cmd(
    "bzpopmin",
    -3,
    &["write", "noscript", "blocking", "fast"],
    &["@write", "@sortedset", "@fast", "@blocking"],
)
.keys(1, -2, 1)
.key_specs(&[KeySpec::range(1, -2, 1, 0, &["RW", "access", "delete"])])
.docs(
    doc(
        "sorted-set",
        "5.0.0",
        "Pops the member of lowest score from the first non-empty sorted set of several, waiting for one if all are empty.",
        "O(log(N)) for N members.",
    )
    .history(&[("6.0.0", "`timeout` is a float, not an integer.")])
    .args(&[arg("key", Key).key(0).multi(), arg("timeout", Double)]),
)
.handler(Handler::Block(run_min));

pub const BZPOPMAX: CommandSpec = cmd(
    "bzpopmax",
    -3,
    &["write", "noscript", "blocking", "fast"],
    &["@write", "@sortedset", "@fast", "@blocking"],
)
.keys(1, -2, 1)
.key_specs(&[KeySpec::range(1, -2, 1, 0, &["RW", "access", "delete"])])
.docs(
    doc(
        "sorted-set",
        "5.0.0",
        "Pops the member of highest score from the first non-empty sorted set of several, waiting for one if all are empty.",
        "O(log(N)) for N members.",
    )
    .history(&[("6.0.0", "`timeout` is a float, not an integer.")])
    .args(&[arg("key", Key).key(0).multi(), arg("timeout", Double)]),
)
.handler(Handler::Block(run_max));

fn pop(at: At, args: &[Bytes], max: bool) -> CmdResult<BlockingPop> {
    let timeout_ms = timeout_ms(&args[args.len() - 1])?;
    let keys = args[1..args.len() - 1].to_vec();
    for k in &keys {
        checked(rialto_keyspace::check_key(k))?;
    }
    Ok(BlockingPop {
        op: at.op(OpKind::ZSet(ZSetOp::MPop {
            keys: keys.clone(),
            max,
            count: None,
        })),
        keys,
        timeout_ms,
        timed_out: Reply::NullArray,
        may_wait: true,
        in_script: None,
    })
}

pub fn run_min(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    pop(at, args, false)
}

pub fn run_max(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    pop(at, args, true)
}
