//! RENAME key newkey, RENAMENX key newkey — the value moves with its TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::{At, Handler};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const RENAME: CommandSpec = cmd("rename", 3, &["write"], &["@keyspace", "@write", "@slow"])
    .keys(1, 2, 1)
    .key_specs(&[
        KeySpec::single(1, &["RW", "access", "delete"]),
        KeySpec::single(2, &["OW", "update"]),
    ])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Gives a key a new name, replacing any key that already had it.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0), arg("newkey", Key).key(1)]),
    )
    .handler(Handler::Write(rename_cmd));

pub const RENAMENX: CommandSpec = cmd(
    "renamenx",
    3,
    &["write", "fast"],
    &["@keyspace", "@write", "@fast"],
)
.keys(1, 2, 1)
.key_specs(&[
    KeySpec::single(1, &["RW", "access", "delete"]),
    KeySpec::single(2, &["OW", "insert"]),
])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Gives a key a new name, only if no other key has that name.",
        "O(1)",
    )
    .history(&[(
        "3.2.0",
        "Renaming a key to its own name is no longer an error.",
    )])
    .args(&[arg("key", Key).key(0), arg("newkey", Key).key(1)]),
)
.handler(Handler::Write(renamenx));

fn rename(at: At, args: &[Bytes], nx: bool) -> CmdResult<Op> {
    Ok(at.op(OpKind::Rename {
        src: args[1].clone(),
        dst: args[2].clone(),
        nx,
    }))
}

/// RENAME
pub fn rename_cmd(at: At, args: &[Bytes]) -> CmdResult<Op> {
    rename(at, args, false)
}

/// RENAMENX
pub fn renamenx(at: At, args: &[Bytes]) -> CmdResult<Op> {
    rename(at, args, true)
}
