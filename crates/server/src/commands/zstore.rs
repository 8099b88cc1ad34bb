//! ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE destination numkeys key [key ...] [WEIGHTS w ...]
//! [AGGREGATE SUM|MIN|MAX]
//!
//! Parsed where the command arrives as ZUNION is; an option error travels in the op and is
//! replied once the inputs are checked, as Redis orders its errors.

use bytes::Bytes;
use rialto_keyspace::{Combine, Op, OpKind, ZSetOp};

use super::util::checked;
use super::zcombine::parse;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, BeginSearch, CommandSpec, FindKeys, KeySpec};
use crate::reply::CmdResult;

pub const ZUNIONSTORE: CommandSpec = cmd(
    "zunionstore",
    -4,
    &["write", "denyoom", "movablekeys"],
    &["@write", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[
    KeySpec::single(1, &["OW", "update"]),
    KeySpec {
        notes: None,
        flags: &["RO", "access"],
        begin_search: BeginSearch::Index(2),
        find_keys: FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    },
])
.docs(
    doc(
        "sorted-set",
        "2.0.0",
        "Stores the union of sorted sets in a key.",
        "O(N) reads for N members of the inputs, plus O(M) writes for M members stored.",
    )
    .args(&[
        arg("destination", Key).key(0),
        arg("numkeys", Integer),
        arg("key", Key).key(1).multi(),
        arg("weight", Integer).token("WEIGHTS").opt().multi(),
        arg("aggregate", OneOf).token("AGGREGATE").opt().sub(&[
            arg("sum", PureToken).token("SUM"),
            arg("min", PureToken).token("MIN"),
            arg("max", PureToken).token("MAX"),
        ]),
    ]),
)
.handler(Handler::Write(run_union));

pub const ZINTERSTORE: CommandSpec = cmd(
    "zinterstore",
    -4,
    &["write", "denyoom", "movablekeys"],
    &["@write", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[
    KeySpec::single(1, &["OW", "update"]),
    KeySpec {
        notes: None,
        flags: &["RO", "access"],
        begin_search: BeginSearch::Index(2),
        find_keys: FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    },
])
.docs(
    doc(
        "sorted-set",
        "2.0.0",
        "Stores the intersection of sorted sets in a key.",
        "O(N) reads for N members of the inputs, plus O(M) writes for M members stored.",
    )
    .args(&[
        arg("destination", Key).key(0),
        arg("numkeys", Integer),
        arg("key", Key).key(1).multi(),
        arg("weight", Integer).token("WEIGHTS").opt().multi(),
        arg("aggregate", OneOf).token("AGGREGATE").opt().sub(&[
            arg("sum", PureToken).token("SUM"),
            arg("min", PureToken).token("MIN"),
            arg("max", PureToken).token("MAX"),
        ]),
    ]),
)
.handler(Handler::Write(run_inter));

pub const ZDIFFSTORE: CommandSpec = cmd(
    "zdiffstore",
    -4,
    &["write", "denyoom", "movablekeys"],
    &["@write", "@sortedset", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[
    KeySpec::single(1, &["OW", "update"]),
    KeySpec {
        notes: None,
        flags: &["RO", "access"],
        begin_search: BeginSearch::Index(2),
        find_keys: FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    },
])
.docs(
    doc(
        "sorted-set",
        "6.2.0",
        "Stores the members of the first sorted set that no other one has in a key.",
        "O(N) reads for N members of the inputs, plus O(M) writes for M members stored.",
    )
    .args(&[
        arg("destination", Key).key(0),
        arg("numkeys", Integer),
        arg("key", Key).key(1).multi(),
    ]),
)
.handler(Handler::Write(run_diff));

fn store(at: At, args: &[Bytes], op: Combine, name: &str) -> CmdResult<Op> {
    let req = parse(args, 2, op, true, false, name)?;
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::ZSet(ZSetOp::Store {
        dst: args[1].clone(),
        op,
        keys: req.keys,
        weights: req.weights,
        aggregate: req.aggregate,
        late: req.late.map(|l| l.for_op()),
    })))
}

pub fn run_union(at: At, args: &[Bytes]) -> CmdResult<Op> {
    store(at, args, Combine::Union, "zunionstore")
}

pub fn run_inter(at: At, args: &[Bytes]) -> CmdResult<Op> {
    store(at, args, Combine::Inter, "zinterstore")
}

pub fn run_diff(at: At, args: &[Bytes]) -> CmdResult<Op> {
    store(at, args, Combine::Diff, "zdiffstore")
}
