//! BITCOUNT key [start end [BYTE|BIT]]

use bytes::Bytes;
use rialto_keyspace::bits;
use rialto_resp::Reply;

use super::util::is;
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const BITCOUNT: CommandSpec = cmd(
    "bitcount",
    -2,
    &["readonly"],
    &["@read", "@bitmap", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "bitmap",
        "2.6.0",
        "Counts the set bits of a string, or of a range of its bytes or bits.",
        "O(N), N being the bytes counted.",
    )
    .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
    .args(&[
        arg("key", Key).key(0),
        arg("index", Block).opt().sub(&[
            arg("start", Integer),
            arg("end", Integer),
            arg("index_unit", OneOf).opt().since("7.0.0").sub(&[
                arg("byte", PureToken).token("BYTE"),
                arg("bit", PureToken).token("BIT"),
            ]),
        ]),
    ]),
)
.handler(Handler::Read(run));

/// Whether a range's unit argument says BIT (BYTE, the default, otherwise); a syntax error
/// for anything else.
pub(super) fn in_bits(unit: Option<&Bytes>) -> CmdResult<bool> {
    match unit {
        None => Ok(false),
        Some(u) if is(u, "byte") => Ok(false),
        Some(u) if is(u, "bit") => Ok(true),
        Some(_) => Err(reply::syntax()),
    }
}

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    // As Redis: a missing key counts 0 before the arguments are looked at.
    let Some(rec) = k.get_string(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    let v = &rec.value;
    let (first, last) = match args.len() {
        2 => match (v.len() as u64 * 8).checked_sub(1) {
            Some(last) => (0, last),
            None => return Ok(Reply::Integer(0)),
        },
        4 | 5 => {
            let start = reply::int_arg(&args[2])?;
            let end = reply::int_arg(&args[3])?;
            // As Redis: a range empty from the end is 0 before the unit is looked at.
            if start < 0 && end < 0 && start > end {
                return Ok(Reply::Integer(0));
            }
            let bit = in_bits(args.get(4))?;
            let len = v.len() as i64 * if bit { 8 } else { 1 };
            let Some((s, e)) = bits::range(start, end, len) else {
                return Ok(Reply::Integer(0));
            };
            if bit {
                (s, e)
            } else {
                (s * 8, e * 8 + 7)
            }
        }
        _ => return Err(reply::syntax()),
    };
    Ok(Reply::Integer(bits::count(v, first, last) as i64))
}
