//! BITFIELD_RO key [GET type offset ...]

use bytes::Bytes;
use rialto_keyspace::FieldSub;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const BITFIELD_RO: CommandSpec = cmd(
    "bitfield_ro",
    -2,
    &["readonly", "fast"],
    &["@read", "@bitmap", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "bitmap",
        "6.0.0",
        "Reads integers of any width at any bit offset of a string.",
        "O(1) for each GET given.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("encoding_offset", Block)
            .token("GET")
            .opt()
            .multi()
            .multi_token()
            .sub(&[arg("encoding", Str), arg("offset", Integer)]),
    ]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    // As Redis: the whole request parsed first, then anything but GET refused.
    let subs = super::bitfield::parse(args)?;
    if subs.iter().any(|s| !matches!(s, FieldSub::Get { .. })) {
        return Err(only_get());
    }
    let rec = k.get_string(&args[1])?;
    let v = rec.as_ref().map(|r| &r.value[..]).unwrap_or_default();
    let mut out = Vec::with_capacity(subs.len());
    for s in subs {
        match s {
            FieldSub::Get { ty, offset } => out.push(Reply::Integer(
                rialto_keyspace::bits::field_get(v, ty, offset),
            )),
            _ => return Err(only_get()),
        }
    }
    Ok(Reply::Array(out))
}

fn only_get() -> Reply {
    Reply::error("ERR BITFIELD_RO only supports the GET subcommand")
}
