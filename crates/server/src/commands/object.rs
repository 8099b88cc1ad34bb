//! OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT | HELP: what Redis tools ask of a key's value,
//! as far as it means something here. The encoding follows Redis's names: a string's by
//! Redis's rules for its value (`int`, `embstr`, `raw`), a hash `listpack` while it is
//! packed in its record and `hashtable` once its fields are keys of their own, a set `intset`
//! while it is packed in intset mode and `hashtable` otherwise (Redis 7.0 has no other set
//! encoding). Access times
//! and frequencies are not tracked: Rialto evicts nothing (IDLETIME answers 0, FREQ what
//! Redis answers without an LFU policy).

use bytes::Bytes;
use rialto_keyspace::{Kind, Record};
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome, R};
use crate::command_table::help;
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

const OBJECT_ENCODING: CommandSpec = cmd(
    "object|encoding",
    3,
    &["readonly"],
    &["@keyspace", "@read", "@slow"],
)
.keys(2, 2, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(2, &["RO"])])
.docs(
    doc(
        "generic",
        "2.2.3",
        "Names how a key's value is stored.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(encoding));

const OBJECT_FREQ: CommandSpec = cmd(
    "object|freq",
    3,
    &["readonly"],
    &["@keyspace", "@read", "@slow"],
)
.keys(2, 2, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(2, &["RO"])])
.docs(
    doc(
        "generic",
        "4.0.0",
        "Gives a key's access frequency (not tracked here).",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(freq));

const OBJECT_IDLETIME: CommandSpec = cmd(
    "object|idletime",
    3,
    &["readonly"],
    &["@keyspace", "@read", "@slow"],
)
.keys(2, 2, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(2, &["RO"])])
.docs(
    doc(
        "generic",
        "2.2.3",
        "Gives the seconds since a key was last used (not tracked here: 0).",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(idletime));

const OBJECT_REFCOUNT: CommandSpec = cmd(
    "object|refcount",
    3,
    &["readonly"],
    &["@keyspace", "@read", "@slow"],
)
.keys(2, 2, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(2, &["RO"])])
.docs(
    doc(
        "generic",
        "2.2.3",
        "Gives how many references share a key's value.",
        "O(1)",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(refcount));

const OBJECT_HELP: CommandSpec = cmd(
    "object|help",
    2,
    &["loading", "stale"],
    &["@keyspace", "@slow"],
)
.docs(doc(
    "generic",
    "6.2.0",
    "Lists the OBJECT subcommands with a short description of each.",
    "O(1)",
))
.handler(Handler::Conn(help));

pub const OBJECT: CommandSpec = cmd("object", -2, &[], &["@slow"])
    .docs(doc(
        "generic",
        "2.2.3",
        "Groups the commands that look at a key's value.",
        "Depends on subcommand.",
    ))
    .subs(&[
        OBJECT_ENCODING,
        OBJECT_FREQ,
        OBJECT_IDLETIME,
        OBJECT_REFCOUNT,
        OBJECT_HELP,
    ]);

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&OBJECT))
}

/// Redis's name for the encoding of `rec`.
pub fn encoding_of(rec: &Record) -> &'static str {
    match (rec.kind, rec.large) {
        (Kind::String, _) => super::debug::encoding(&rec.value),
        (Kind::Hash, false) => "listpack",
        (Kind::Hash, true) => "hashtable",
        // Redis 7.0 keeps a small set as an intset or a hash table.
        (Kind::Set, false) if rialto_keyspace::is_intset_record(rec) => "intset",
        (Kind::Set, false) => "hashtable",
        (Kind::Set, true) => "hashtable",
        (Kind::ZSet, false) => "listpack",
        (Kind::ZSet, true) => "skiplist",
        (Kind::List, _) => "quicklist",
        (Kind::Stream, _) => "stream",
    }
}

fn encoding(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(match k.get(&args[2])? {
        Some(rec) => Reply::bulk(encoding_of(&rec)),
        None => Reply::Null,
    })
}

fn freq(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    if !k.exists(&args[2])? {
        return Ok(Reply::Null);
    }
    Ok(Reply::error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."))
}

fn idletime(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(if k.exists(&args[2])? {
        Reply::Integer(0)
    } else {
        Reply::Null
    })
}

fn refcount(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    Ok(match k.get(&args[2])? {
        Some(rec) if rec.kind == Kind::String => Reply::Integer(super::debug::refcount(&rec.value)),
        Some(_) => Reply::Integer(1),
        None => Reply::Null,
    })
}
