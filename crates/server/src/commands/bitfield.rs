//! BITFIELD key [GET type offset | [OVERFLOW WRAP|SAT|FAIL] SET type offset value |
//! [OVERFLOW WRAP|SAT|FAIL] INCRBY type offset increment ...]

use bytes::Bytes;
use rialto_keyspace::bits::{FieldType, Overflow};
use rialto_keyspace::{FieldSub, Op, OpKind};
use rialto_resp::Reply;

use super::util::{checked, is};
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{self, arg, cmd, doc, CommandSpec, KeyRef, KeySpec};
use crate::reply::{self, CmdResult};

pub const BITFIELD: CommandSpec = cmd(
    "bitfield",
    -2,
    &["write", "denyoom"],
    &["@write", "@bitmap", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[
    KeySpec::single(1, &["RW", "access", "update", "variable_flags"])
        .notes("Reads the key, and writes it when a SET or INCRBY is given"),
])
.docs(
    doc(
        "bitmap",
        "3.2.0",
        "Reads, sets and increments integers of any width at any bit offset of a string.",
        "O(1) for each operation given.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("operation", OneOf).opt().multi().sub(&[
            arg("encoding_offset", Block)
                .token("GET")
                .sub(&[arg("encoding", Str), arg("offset", Integer)]),
            arg("write", Block).sub(&[
                arg("wrap_sat_fail", OneOf).token("OVERFLOW").opt().sub(&[
                    arg("wrap", PureToken).token("WRAP"),
                    arg("sat", PureToken).token("SAT"),
                    arg("fail", PureToken).token("FAIL"),
                ]),
                arg("write_operation", OneOf).sub(&[
                    arg("encoding_offset_value", Block).token("SET").sub(&[
                        arg("encoding", Str),
                        arg("offset", Integer),
                        arg("value", Integer),
                    ]),
                    arg("encoding_offset_increment", Block)
                        .token("INCRBY")
                        .sub(&[
                            arg("encoding", Str),
                            arg("offset", Integer),
                            arg("increment", Integer),
                        ]),
                ]),
            ]),
        ]),
    ]),
)
.getkeys(keys)
.handler(Handler::Write(run));

/// The key, read-only when only GETs (and OVERFLOWs) follow it, as Redis judges it.
fn keys(args: &[Bytes]) -> Vec<KeyRef> {
    let mut read_only = true;
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        if is(&args[i], "get") && left >= 2 {
            i += 3;
        } else if is(&args[i], "overflow") && left >= 1 {
            i += 2;
        } else {
            // A write, or a syntax error (taken as a write, to be safe).
            read_only = false;
            break;
        }
    }
    let flags: &'static [&'static str] = if read_only {
        &["RO", "access"]
    } else {
        &["RW", "access", "update"]
    };
    let found = command_table::spec_keys(&BITFIELD, args).into_iter();
    found.map(|k| KeyRef { flags, ..k }).collect()
}

/// Parses BITFIELD's operations (`args[2..]`), in Redis's order of checks.
pub(super) fn parse(args: &[Bytes]) -> CmdResult<Vec<FieldSub>> {
    let mut subs = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if is(a, "overflow") && left >= 1 {
            overflow = if is(&args[j + 1], "wrap") {
                Overflow::Wrap
            } else if is(&args[j + 1], "sat") {
                Overflow::Sat
            } else if is(&args[j + 1], "fail") {
                Overflow::Fail
            } else {
                return Err(Reply::error("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        }
        let (what, need) = if is(a, "get") && left >= 2 {
            (0, 2)
        } else if is(a, "set") && left >= 3 {
            (1, 3)
        } else if is(a, "incrby") && left >= 3 {
            (2, 3)
        } else {
            return Err(reply::syntax());
        };
        let ty = FieldType::parse(&args[j + 1]).ok_or_else(|| {
            Reply::error("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
        })?;
        let offset = field_offset(&args[j + 2], ty)?;
        subs.push(match what {
            0 => FieldSub::Get { ty, offset },
            1 => FieldSub::Set {
                ty,
                offset,
                value: reply::int_arg(&args[j + 3])?,
                overflow,
            },
            _ => FieldSub::IncrBy {
                ty,
                offset,
                incr: reply::int_arg(&args[j + 3])?,
                overflow,
            },
        });
        j += 1 + need;
    }
    Ok(subs)
}

/// A field's bit offset: a number, or `#n` for the n-th field of its type's width.
fn field_offset(arg: &[u8], ty: FieldType) -> CmdResult<u64> {
    let bad = || Reply::error("ERR bit offset is not an integer or out of range");
    let (n, scale) = match arg.strip_prefix(b"#") {
        Some(rest) => (reply::parse_i64(rest).ok_or_else(bad)?, i64::from(ty.bits)),
        None => (reply::parse_i64(arg).ok_or_else(bad)?, 1),
    };
    let off = n.checked_mul(scale).ok_or_else(bad)?;
    if !(0..1i64 << 32).contains(&off) {
        return Err(bad());
    }
    Ok(off as u64)
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let subs = parse(args)?;
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::BitField {
        key: args[1].clone(),
        subs,
    }))
}
