//! GETEX key [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, TtlChange};

use super::util_opts::{self as opts, For, PERSIST};
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, OneOf, PureToken, UnixTime};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const GETEX: CommandSpec = cmd(
    "getex",
    -2,
    &["write", "fast"],
    &["@write", "@string", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "access", "update"])
    .notes("Changing the expiry modifies the key, hence RW and UPDATE")])
.docs(
    doc(
        "string",
        "6.2.0",
        "Returns the string value of a key, optionally changing or clearing its expiry.",
        "O(1)",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("expiration", OneOf).opt().sub(&[
            arg("seconds", Integer).token("EX"),
            arg("milliseconds", Integer).token("PX"),
            arg("unix-time-seconds", UnixTime).token("EXAT"),
            arg("unix-time-milliseconds", UnixTime).token("PXAT"),
            arg("persist", PureToken).token("PERSIST"),
        ]),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let o = opts::parse(args, 2, For::GetEx)?;
    // As Redis: a missing key answers nil before the expiry is validated, so an invalid time
    // travels in the op and fails only once the key is found.
    let ttl = if o.flags & PERSIST != 0 {
        TtlChange::Persist
    } else {
        match opts::expire_time(&o, at.now_ms) {
            Ok(Some(t)) => TtlChange::At(t),
            Ok(None) => TtlChange::Keep,
            Err(bad) => TtlChange::Bad(bad),
        }
    };
    Ok(at.op(OpKind::GetEx {
        key: args[1].clone(),
        ttl,
    }))
}
