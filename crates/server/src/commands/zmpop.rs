//! ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, ZSetOp};

use super::list_util::mpop_args;
use super::util::is;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, Arg, CommandSpec};
use crate::reply::{self, CmdResult};

/// MIN or MAX (true).
pub fn min_max(arg: &[u8]) -> CmdResult<bool> {
    if is(arg, "min") {
        Ok(false)
    } else if is(arg, "max") {
        Ok(true)
    } else {
        Err(reply::syntax())
    }
}

/// MIN or MAX, as the docs of ZMPOP and BZMPOP name them.
pub const fn min_max_arg() -> Arg {
    arg("where", OneOf).sub(MIN_MAX)
}

const MIN_MAX: &[Arg] = &[
    arg("min", PureToken).token("MIN"),
    arg("max", PureToken).token("MAX"),
];

pub const ZMPOP: CommandSpec = cmd(
    "zmpop",
    -4,
    &["write", "movablekeys"],
    &["@write", "@sortedset", "@slow"],
)
.key_specs(&[super::lmpop::mpop_keys(1)])
.docs(
    doc(
        "sorted-set",
        "7.0.0",
        "Pops the members of lowest or highest score from the first non-empty sorted set of several.",
        "O(K + M*log(N)) for K keys and M members popped.",
    )
    .args(&[
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        min_max_arg(),
        arg("count", Integer).token("COUNT").opt(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let (keys, max, count) = mpop_args(args, 1, min_max)?;
    Ok(at.op(OpKind::ZSet(ZSetOp::MPop {
        keys,
        max,
        count: Some(count),
    })))
}
