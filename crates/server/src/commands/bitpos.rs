//! BITPOS key bit [start [end [BYTE|BIT]]]

use bytes::Bytes;
use rialto_keyspace::bits;
use rialto_resp::Reply;

use super::bitcount::in_bits;
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const BITPOS: CommandSpec = cmd("bitpos", -3, &["readonly"], &["@read", "@bitmap", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "bitmap",
            "2.8.7",
            "Finds the first set or clear bit of a string, or of a range of it.",
            "O(N), N being the bytes searched.",
        )
        .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
        .args(&[
            arg("key", Key).key(0),
            arg("bit", Integer),
            arg("index", Block).opt().sub(&[
                arg("start", Integer),
                arg("end_index", Block).opt().sub(&[
                    arg("end", Integer),
                    arg("index_unit", OneOf).opt().since("7.0.0").sub(&[
                        arg("byte", PureToken).token("BYTE"),
                        arg("bit", PureToken).token("BIT"),
                    ]),
                ]),
            ]),
        ]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let bit = match reply::int_arg(&args[2])? {
        0 => false,
        1 => true,
        _ => return Err(Reply::error("ERR The bit argument must be 1 or 0.")),
    };
    // A missing key is an endless run of zeros.
    let Some(rec) = k.get_string(&args[1])? else {
        return Ok(Reply::Integer(if bit { -1 } else { 0 }));
    };
    let v = &rec.value;
    let (mut first, mut last, end_given, in_bit) = match args.len() {
        3 => (0, v.len() as i64 - 1, false, false),
        4..=6 => {
            let start = reply::int_arg(&args[3])?;
            let in_bit = in_bits(args.get(5))?;
            let len = v.len() as i64 * if in_bit { 8 } else { 1 };
            let end = match args.get(4) {
                Some(e) => reply::int_arg(e)?,
                None => len - 1,
            };
            let fix = |i: i64| if i < 0 { (len + i).max(0) } else { i };
            (fix(start), fix(end).min(len - 1), args.len() >= 5, in_bit)
        }
        _ => return Err(reply::syntax()),
    };
    if first > last || v.is_empty() {
        return Ok(Reply::Integer(-1));
    }
    if !in_bit {
        first *= 8;
        last = last * 8 + 7;
    }
    // Without an end, the string is taken as zero-padded on the right: a clear bit past the
    // end is found.
    let search_last = if bit || end_given {
        last as u64
    } else {
        last as u64 + 1
    };
    Ok(Reply::Integer(
        match bits::position(v, bit, first as u64, search_last) {
            Some(p) => p as i64,
            None => -1,
        },
    ))
}
