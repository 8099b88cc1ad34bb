//! PFCOUNT key [key ...]
//!
//! One key: an op, because a stale cached cardinality is computed and written back into the
//! value as Redis does (a write WATCH and replicas see); a valid cache is replied without a
//! write. Several keys: a read of the union, which writes nothing.

use bytes::Bytes;
use rialto_keyspace::hll::{self, Hll, REGISTERS};
use rialto_keyspace::{HllOp, Op, OpKind};
use rialto_resp::Reply;

use super::{At, Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const PFCOUNT: CommandSpec = cmd(
    "pfcount",
    -2,
    &["readonly"],
    &["@read", "@hyperloglog", "@slow"],
)
.keys(1, -1, 1)
.key_specs(&[KeySpec::range(1, -1, 1, 0, &["RW", "access"])
    .notes("Rewrites a key's cached cardinality when it is stale, a change replicas must see")])
.docs(
    doc(
        "hyperloglog",
        "2.8.9",
        "Estimates how many distinct elements a HyperLogLog, or the union of several, has seen.",
        "O(1) for one key with a valid cached value; O(N) for N keys, with a large constant.",
    )
    .args(&[arg("key", Key).key(0).multi()]),
)
.may_replicate()
.handler(Handler::Write(run))
.read_form(union, writes);

/// One key may write its cache.
fn writes(args: &[Bytes]) -> bool {
    args.len() == 2
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::Hll(HllOp::Count {
        key: args[1].clone(),
    })))
}

/// The estimate of the union of several keys, read in one state; each key is checked in
/// order, as Redis checks them.
fn union(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut max = [0u8; REGISTERS];
    for rec in k.get_many(&args[1..])? {
        let Some(rec) = rec else {
            continue;
        };
        if !rec.is_string() {
            return Err(reply::wrong_type());
        }
        let merged = Hll::from_value(&rec.value).and_then(|h| h.merge_into(&mut max));
        merged.map_err(|e| reply::hll_error(&e))?;
    }
    Ok(Reply::Integer(hll::count_registers(&max) as i64))
}
