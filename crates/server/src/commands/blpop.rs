//! BLPOP key [key ...] timeout, BRPOP key [key ...] timeout

use bytes::Bytes;
use rialto_keyspace::{ListOp, OpKind};
use rialto_resp::Reply;

use super::list_util::timeout_ms;
use super::util::checked;
use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Double, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const BLPOP: CommandSpec = cmd(
    "blpop",
    -3,
    &["write", "noscript", "blocking"],
    &["@write", "@list", "@slow", "@blocking"],
)
.keys(1, -2, 1)
.key_specs(&[KeySpec::range(1, -2, 1, 0, &["RW", "access", "delete"])])
.docs(
    doc(
        "list",
        "2.0.0",
        "Pops the first element of the first non-empty list of several, waiting for one if all are empty.",
        "O(N) for N keys.",
    )
    .history(&[("6.0.0", "`timeout` is a float, not an integer.")])
    .args(&[arg("key", Key).key(0).multi(), arg("timeout", Double)]),
)
.handler(Handler::Block(run_left));

pub const BRPOP: CommandSpec = cmd(
    "brpop",
    -3,
    &["write", "noscript", "blocking"],
    &["@write", "@list", "@slow", "@blocking"],
)
.keys(1, -2, 1)
.key_specs(&[KeySpec::range(1, -2, 1, 0, &["RW", "access", "delete"])])
.docs(
    doc(
        "list",
        "2.0.0",
        "Pops the last element of the first non-empty list of several, waiting for one if all are empty.",
        "O(N) for N keys.",
    )
    .history(&[("6.0.0", "`timeout` is a float, not an integer.")])
    .args(&[arg("key", Key).key(0).multi(), arg("timeout", Double)]),
)
.handler(Handler::Block(run_right));

fn pop(at: At, args: &[Bytes], left: bool) -> CmdResult<BlockingPop> {
    let timeout_ms = timeout_ms(&args[args.len() - 1])?;
    let keys = args[1..args.len() - 1].to_vec();
    for k in &keys {
        checked(rialto_keyspace::check_key(k))?;
    }
    Ok(BlockingPop {
        op: at.op(OpKind::List(ListOp::MPop {
            keys: keys.clone(),
            left,
            count: None,
        })),
        keys,
        timeout_ms,
        timed_out: Reply::NullArray,
        may_wait: true,
        in_script: None,
    })
}

pub fn run_left(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    pop(at, args, true)
}

pub fn run_right(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    pop(at, args, false)
}
