//! FCALL, FCALL_RO: a function of a loaded library, run as one merger transaction. The
//! connection runs them (`crate::conn`'s script half); these are their declarations.

use super::eval::{keys, FLAGS, RO, RO_FLAGS, RW};
use super::{Handler, ScriptCmd};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};

pub const FCALL: CommandSpec = cmd("fcall", -3, FLAGS, &["@slow", "@scripting"])
    .key_specs(&[keys(RW)
        .notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")])
    .docs(
        doc(
            "scripting",
            "7.0.0",
            "Runs a function of a loaded library, atomically.",
            "Depends on the function that is executed.",
        )
        .args(&[
            arg("function", Str),
            arg("numkeys", Integer),
            arg("key", Key).key(0).opt().multi(),
            arg("arg", Str).opt().multi(),
        ]),
    )
    .handler(Handler::Script(ScriptCmd::FCall));

pub const FCALL_RO: CommandSpec = cmd("fcall_ro", -3, RO_FLAGS, &["@slow", "@scripting"])
    .key_specs(&[keys(RO)
        .notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")])
    .docs(
        doc(
            "scripting",
            "7.0.0",
            "Runs a function declared no-writes, which may only read.",
            "Depends on the function that is executed.",
        )
        .args(&[
            arg("function", Str),
            arg("numkeys", Integer),
            arg("key", Key).key(0).opt().multi(),
            arg("arg", Str).opt().multi(),
        ]),
    )
    .handler(Handler::Script(ScriptCmd::FCallRo));
