//! SMISMEMBER key member [member ...]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const SMISMEMBER: CommandSpec = cmd(
    "smismember",
    -3,
    &["readonly", "fast"],
    &["@read", "@set", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "set",
        "6.2.0",
        "Tells, for each member named, whether a set has it.",
        "O(N) for N members named.",
    )
    .args(&[arg("key", Key).key(0), arg("member", Str).multi()]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let Some(s) = k.set(&args[1])? else {
        return Ok(Reply::Array(vec![Reply::Integer(0); args.len() - 2]));
    };
    let mut out = Vec::with_capacity(args.len() - 2);
    for m in &args[2..] {
        out.push(Reply::Integer(i64::from(checked(s.contains(k.keys(), m))?)));
    }
    Ok(Reply::Array(out))
}
