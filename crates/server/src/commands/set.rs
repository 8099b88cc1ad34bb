//! SET key value [NX | XX] [GET] [EX s | PX ms | EXAT ts | PXAT ms-ts | KEEPTTL]

use bytes::Bytes;
use rialto_keyspace::{Cond, Op, OpKind, Set};

use super::util::checked;
use super::util_opts::{self as opts, For, GET, KEEPTTL, NX, XX};
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, OneOf, PureToken, String as Str, UnixTime};
use crate::command_table::{self, arg, cmd, doc, CommandSpec, KeyRef, KeySpec};
use crate::reply::CmdResult;

pub const SET: CommandSpec = cmd(
    "set",
    -3,
    &["write", "denyoom"],
    &["@write", "@string", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[
    KeySpec::single(1, &["RW", "access", "update", "variable_flags"])
        .notes("Flags vary: RW and ACCESS only with GET, which reads the old value"),
])
.docs(
    doc(
        "string",
        "1.0.0",
        "Stores a string value at a key, with optional expiry and existence conditions.",
        "O(1)",
    )
    .history(&[
        ("2.6.12", "Options `EX`, `PX`, `NX` and `XX`."),
        ("6.0.0", "Option `KEEPTTL`."),
        ("6.2.0", "Options `GET`, `EXAT` and `PXAT`."),
        ("7.0.0", "`NX` may be combined with `GET`."),
    ])
    .args(&[
        arg("key", Key).key(0),
        arg("value", Str),
        arg("condition", OneOf).since("2.6.12").opt().sub(&[
            arg("nx", PureToken).token("NX"),
            arg("xx", PureToken).token("XX"),
        ]),
        arg("get", PureToken).token("GET").since("6.2.0").opt(),
        arg("expiration", OneOf).opt().sub(&[
            arg("seconds", Integer).token("EX").since("2.6.12"),
            arg("milliseconds", Integer).token("PX").since("2.6.12"),
            arg("unix-time-seconds", UnixTime)
                .token("EXAT")
                .since("6.2.0"),
            arg("unix-time-milliseconds", UnixTime)
                .token("PXAT")
                .since("6.2.0"),
            arg("keepttl", PureToken).token("KEEPTTL").since("6.0.0"),
        ]),
    ]),
)
.getkeys(keys)
.handler(Handler::Write(run));

/// SET reads the old value only with GET (options follow key and value), so its key's flags
/// depend on the arguments.
fn keys(args: &[Bytes]) -> Vec<KeyRef> {
    let get = args
        .get(3..)
        .is_some_and(|opts| opts.iter().any(|a| a.eq_ignore_ascii_case(b"get")));
    let flags: &'static [&'static str] = if get {
        &["RW", "access", "update"]
    } else {
        &["OW", "update"]
    };
    let found = command_table::spec_keys(&SET, args).into_iter();
    found.map(|k| KeyRef { flags, ..k }).collect()
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let (key, value) = (&args[1], &args[2]);
    let o = opts::parse(args, 3, For::Set)?;
    let expire_at_ms = opts::expire_at(&o, at.now_ms, "set")?;
    checked(rialto_keyspace::check_key(key))?;
    checked(rialto_keyspace::check_value_len(value.len()))?;
    let cond = if o.flags & NX != 0 {
        Some(Cond::Nx)
    } else if o.flags & XX != 0 {
        Some(Cond::Xx)
    } else {
        None
    };
    Ok(at.op(OpKind::Set(Set {
        key: key.clone(),
        value: value.clone(),
        expire_at_ms,
        keep_ttl: o.flags & KEEPTTL != 0,
        cond,
        get: o.flags & GET != 0,
    })))
}
