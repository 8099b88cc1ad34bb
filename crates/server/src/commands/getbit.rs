//! GETBIT key offset

use bytes::Bytes;
use rialto_resp::Reply;

use super::setbit::bit_offset;
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const GETBIT: CommandSpec = cmd(
    "getbit",
    3,
    &["readonly", "fast"],
    &["@read", "@bitmap", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "bitmap",
        "2.2.0",
        "Reads one bit of a string (0 past its end).",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0), arg("offset", Integer)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let offset = bit_offset(&args[2])?;
    let bit = k
        .get_string(&args[1])?
        .is_some_and(|r| rialto_keyspace::bits::get(&r.value, offset));
    Ok(Reply::Integer(i64::from(bit)))
}
