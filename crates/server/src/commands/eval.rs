//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO: a Lua script run as one merger transaction. The
//! connection runs them (`crate::conn`'s script half); these are their declarations.

use super::{Handler, ScriptCmd};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, BeginSearch, CommandSpec, FindKeys, KeySpec};

pub(super) const FLAGS: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "movablekeys",
];
pub(super) const RO_FLAGS: &[&str] = &[
    "readonly",
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "movablekeys",
];

/// The keys: `numkeys` at index 2, then that many keys (FCALL's too).
pub(super) const fn keys(flags: &'static [&'static str]) -> KeySpec {
    KeySpec {
        notes: None,
        flags,
        begin_search: BeginSearch::Index(2),
        find_keys: FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    }
}

pub(super) const RW: &[&str] = &["RW", "access", "update"];
pub(super) const RO: &[&str] = &["RO", "access"];

pub const EVAL: CommandSpec = cmd("eval", -3, FLAGS, &["@slow", "@scripting"])
    .key_specs(&[keys(RW)
        .notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")])
    .docs(
        doc(
            "scripting",
            "2.6.0",
            "Runs a Lua script on the server, atomically.",
            "Depends on the script that is executed.",
        )
        .args(&[
            arg("script", Str),
            arg("numkeys", Integer),
            arg("key", Key).key(0).opt().multi(),
            arg("arg", Str).opt().multi(),
        ]),
    )
    .handler(Handler::Script(ScriptCmd::Eval));

pub const EVALSHA: CommandSpec = cmd("evalsha", -3, FLAGS, &["@slow", "@scripting"])
    .key_specs(&[keys(RW)])
    .docs(
        doc(
            "scripting",
            "2.6.0",
            "Runs a cached Lua script, named by its SHA1, atomically.",
            "Depends on the script that is executed.",
        )
        .args(&[
            arg("sha1", Str),
            arg("numkeys", Integer),
            arg("key", Key).key(0).opt().multi(),
            arg("arg", Str).opt().multi(),
        ]),
    )
    .handler(Handler::Script(ScriptCmd::EvalSha));

pub const EVAL_RO: CommandSpec = cmd("eval_ro", -3, RO_FLAGS, &["@slow", "@scripting"])
    .key_specs(&[keys(RO)
        .notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")])
    .docs(
        doc(
            "scripting",
            "7.0.0",
            "Runs a Lua script that may only read.",
            "Depends on the script that is executed.",
        )
        .args(&[
            arg("script", Str),
            arg("numkeys", Integer),
            arg("key", Key).key(0).opt().multi(),
            arg("arg", Str).opt().multi(),
        ]),
    )
    .handler(Handler::Script(ScriptCmd::EvalRo));

pub const EVALSHA_RO: CommandSpec = cmd("evalsha_ro", -3, RO_FLAGS, &["@slow", "@scripting"])
    .key_specs(&[keys(RO)])
    .docs(
        doc(
            "scripting",
            "7.0.0",
            "Runs a cached Lua script that may only read, named by its SHA1.",
            "Depends on the script that is executed.",
        )
        .args(&[
            arg("sha1", Str),
            arg("numkeys", Integer),
            arg("key", Key).key(0).opt().multi(),
            arg("arg", Str).opt().multi(),
        ]),
    )
    .handler(Handler::Script(ScriptCmd::EvalShaRo));
