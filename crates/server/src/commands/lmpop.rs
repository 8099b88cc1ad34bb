//! LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]

use bytes::Bytes;
use rialto_keyspace::{ListOp, Op, OpKind};

use super::list_util::{mpop_args, side};
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, BeginSearch, CommandSpec, FindKeys, KeySpec};
use crate::reply::CmdResult;

/// The key spec of LMPOP and ZMPOP (`at` 1) and of their blocking forms (`at` 2).
pub const fn mpop_keys(at: i32) -> KeySpec {
    KeySpec {
        notes: None,
        flags: &["RW", "access", "delete"],
        begin_search: BeginSearch::Index(at),
        find_keys: FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    }
}

pub const LMPOP: CommandSpec = cmd(
    "lmpop",
    -4,
    &["write", "movablekeys"],
    &["@write", "@list", "@slow"],
)
.key_specs(&[mpop_keys(1)])
.docs(
    doc(
        "list",
        "7.0.0",
        "Pops elements from the first non-empty list of several.",
        "O(N+M) for N keys and M elements popped.",
    )
    .args(&[
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        super::lmove::side_arg("where"),
        arg("count", Integer).token("COUNT").opt(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let (keys, left, count) = mpop_args(args, 1, side)?;
    Ok(at.op(OpKind::List(ListOp::MPop {
        keys,
        left,
        count: Some(count),
    })))
}
