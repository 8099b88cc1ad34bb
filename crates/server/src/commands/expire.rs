//! EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX | XX | GT | LT]

use bytes::Bytes;
use rialto_keyspace::{ExpireCond, Op, OpKind};
use rialto_resp::Reply;

use super::util::is;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, OneOf, PureToken, UnixTime};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const EXPIRE: CommandSpec = cmd(
    "expire",
    -3,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Sets the time to live of a key, in seconds.",
        "O(1)",
    )
    .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        arg("key", Key).key(0),
        arg("seconds", Integer),
        arg("condition", OneOf).since("7.0.0").opt().sub(&[
            arg("nx", PureToken).token("NX"),
            arg("xx", PureToken).token("XX"),
            arg("gt", PureToken).token("GT"),
            arg("lt", PureToken).token("LT"),
        ]),
    ]),
)
.handler(Handler::Write(expire_cmd));

pub const PEXPIRE: CommandSpec = cmd(
    "pexpire",
    -3,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "generic",
        "2.6.0",
        "Sets the time to live of a key, in milliseconds.",
        "O(1)",
    )
    .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        arg("key", Key).key(0),
        arg("milliseconds", Integer),
        arg("condition", OneOf).since("7.0.0").opt().sub(&[
            arg("nx", PureToken).token("NX"),
            arg("xx", PureToken).token("XX"),
            arg("gt", PureToken).token("GT"),
            arg("lt", PureToken).token("LT"),
        ]),
    ]),
)
.handler(Handler::Write(pexpire));

pub const EXPIREAT: CommandSpec = cmd(
    "expireat",
    -3,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "generic",
        "1.2.0",
        "Sets when a key expires, as a Unix time in seconds.",
        "O(1)",
    )
    .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        arg("key", Key).key(0),
        arg("unix-time-seconds", UnixTime),
        arg("condition", OneOf).since("7.0.0").opt().sub(&[
            arg("nx", PureToken).token("NX"),
            arg("xx", PureToken).token("XX"),
            arg("gt", PureToken).token("GT"),
            arg("lt", PureToken).token("LT"),
        ]),
    ]),
)
.handler(Handler::Write(expireat));

pub const PEXPIREAT: CommandSpec = cmd(
    "pexpireat",
    -3,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "generic",
        "2.6.0",
        "Sets when a key expires, as a Unix time in milliseconds.",
        "O(1)",
    )
    .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        arg("key", Key).key(0),
        arg("unix-time-milliseconds", UnixTime),
        arg("condition", OneOf).since("7.0.0").opt().sub(&[
            arg("nx", PureToken).token("NX"),
            arg("xx", PureToken).token("XX"),
            arg("gt", PureToken).token("GT"),
            arg("lt", PureToken).token("LT"),
        ]),
    ]),
)
.handler(Handler::Write(pexpireat));

const NX: u8 = 1;
const XX: u8 = 2;
const GT: u8 = 4;
const LT: u8 = 8;

fn expire(at: At, args: &[Bytes], seconds: bool, relative: bool, cmd: &str) -> CmdResult<Op> {
    let mut flags = 0u8;
    for a in &args[3..] {
        flags |= if is(a, "nx") {
            NX
        } else if is(a, "xx") {
            XX
        } else if is(a, "gt") {
            GT
        } else if is(a, "lt") {
            LT
        } else {
            return Err(reply::err_string(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(a)
            )));
        };
    }
    if flags & NX != 0 && flags & (XX | GT | LT) != 0 {
        return Err(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if flags & GT != 0 && flags & LT != 0 {
        return Err(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    // Redis validates the options before the time.
    let mut when = reply::int_arg(&args[2])?;
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(reply::invalid_expire(cmd));
        }
        when *= 1000;
    }
    if relative {
        when = when
            .checked_add(at.now_ms)
            .ok_or_else(|| reply::invalid_expire(cmd))?;
    }
    let cond = ExpireCond {
        nx: flags & NX != 0,
        xx: flags & XX != 0,
        gt: flags & GT != 0,
        lt: flags & LT != 0,
    };
    Ok(at.op(OpKind::Expire {
        key: args[1].clone(),
        at_ms: when,
        cond,
    }))
}

/// EXPIRE key seconds
pub fn expire_cmd(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, true, true, "expire")
}

/// PEXPIRE key milliseconds
pub fn pexpire(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, false, true, "pexpire")
}

/// EXPIREAT key unix-seconds
pub fn expireat(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, true, false, "expireat")
}

/// PEXPIREAT key unix-milliseconds
pub fn pexpireat(at: At, args: &[Bytes]) -> CmdResult<Op> {
    expire(at, args, false, false, "pexpireat")
}
