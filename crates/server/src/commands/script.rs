//! SCRIPT LOAD | EXISTS | FLUSH | KILL | DEBUG | HELP — the script cache, and stopping a
//! script that runs too long. The cache lives in memory only and is empty after a restart, as
//! in Redis.

use bytes::Bytes;
use rialto_resp::Reply;
use rialto_scripting::{KillError, Scripts};

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

const SCRIPT_EXISTS: CommandSpec = cmd("script|exists", -3, &["noscript"], &["@slow", "@scripting"])
    .tips(&["request_policy:all_shards", "response_policy:agg_logical_and"])
    .docs(
        doc(
            "scripting",
            "2.6.0",
            "Tells, for each SHA1, whether the script cache holds that script.",
            "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        )
        .args(&[arg("sha1", Str).multi()]),
    )
    .handler(Handler::Conn(exists));

const SCRIPT_DEBUG: CommandSpec = cmd("script|debug", 3, &["noscript"], &["@slow", "@scripting"])
    .docs(
        doc(
            "scripting",
            "3.2.0",
            "Sets the debug mode of the scripts that follow (Rialto has no Lua debugger: only NO).",
            "O(1)",
        )
        .args(&[arg("mode", OneOf).sub(&[
            arg("yes", PureToken).token("YES"),
            arg("sync", PureToken).token("SYNC"),
            arg("no", PureToken).token("NO"),
        ])]),
    )
    .handler(Handler::Conn(debug));

const SCRIPT_HELP: CommandSpec = cmd(
    "script|help",
    2,
    &["loading", "stale"],
    &["@slow", "@scripting"],
)
.docs(doc(
    "scripting",
    "5.0.0",
    "Lists the SCRIPT subcommands with a short description of each.",
    "O(1)",
))
.handler(Handler::Conn(help));

const SCRIPT_FLUSH: CommandSpec = cmd("script|flush", -2, &["noscript"], &["@slow", "@scripting"])
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .docs(
        doc(
            "scripting",
            "2.6.0",
            "Empties the script cache.",
            "O(N) with N being the number of scripts in cache",
        )
        .history(&[(
            "6.2.0",
            "Added the `ASYNC` and `SYNC` flushing mode modifiers.",
        )])
        .args(&[arg("async", OneOf).opt().since("6.2.0").sub(&[
            arg("async", PureToken).token("ASYNC"),
            arg("sync", PureToken).token("SYNC"),
        ])]),
    )
    .handler(Handler::Conn(flush));

const SCRIPT_KILL: CommandSpec = cmd(
    "script|kill",
    2,
    &["noscript", "allow_busy"],
    &["@slow", "@scripting"],
)
.tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
.docs(doc(
    "scripting",
    "2.6.0",
    "Stops the script running now, if it has not written.",
    "O(1)",
))
.handler(Handler::Conn(kill));

const SCRIPT_LOAD: CommandSpec = cmd(
    "script|load",
    3,
    &["noscript", "stale"],
    &["@slow", "@scripting"],
)
.tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
.docs(
    doc(
        "scripting",
        "2.6.0",
        "Compiles a script into the script cache without running it; replies its SHA1.",
        "O(N) with N being the length in bytes of the script body.",
    )
    .args(&[arg("script", Str)]),
)
.handler(Handler::Conn(load));

pub const SCRIPT: CommandSpec = cmd("script", -2, &[], &["@slow"])
    .docs(doc(
        "scripting",
        "2.6.0",
        "Groups the subcommands that manage the script cache.",
        "Depends on subcommand.",
    ))
    .subs(&[
        SCRIPT_DEBUG,
        SCRIPT_EXISTS,
        SCRIPT_FLUSH,
        SCRIPT_KILL,
        SCRIPT_LOAD,
        SCRIPT_HELP,
    ]);

/// The SCRIPT subcommands that act on the interpreter alone (by `name`), which a
/// transaction runs at their place in it.
pub fn on_scripts(name: &str) -> Option<fn(&Scripts, &[Bytes]) -> Reply> {
    Some(match name {
        "script|exists" => exists_on,
        "script|flush" => flush_on,
        "script|kill" => kill_on,
        "script|load" => load_on,
        _ => return None,
    })
}

fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(exists_on(&ctx.shared.scripts, args))
}

fn flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(flush_on(&ctx.shared.scripts, args))
}

fn kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(kill_on(&ctx.shared.scripts, args))
}

fn load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(load_on(&ctx.shared.scripts, args))
}

fn exists_on(scripts: &Scripts, args: &[Bytes]) -> Reply {
    let mut out = Vec::with_capacity(args.len() - 2);
    for sha in &args[2..] {
        match scripts.exists(sha) {
            Ok(known) => out.push(Reply::Integer(i64::from(known))),
            Err(busy) => return busy,
        }
    }
    Reply::Array(out)
}

fn debug(_: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(match &args[2] {
        a if is(a, "no") => reply::ok(),
        a if is(a, "yes") || is(a, "sync") => {
            Reply::error("ERR Rialto has no Lua debugger: SCRIPT DEBUG takes only NO")
        }
        _ => Reply::error("ERR Use SCRIPT DEBUG YES/SYNC/NO"),
    })
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&SCRIPT))
}

fn flush_on(scripts: &Scripts, args: &[Bytes]) -> Reply {
    match args.get(2) {
        None => {}
        Some(a) if args.len() == 3 && (is(a, "async") || is(a, "sync")) => {}
        Some(_) => return Reply::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"),
    }
    match scripts.flush() {
        Ok(()) => reply::ok(),
        Err(r) => r,
    }
}

fn kill_on(scripts: &Scripts, _: &[Bytes]) -> Reply {
    match scripts.kill(false) {
        Ok(()) => reply::ok(),
        Err(KillError::OtherKind) => scripts.busy_reply(),
        Err(KillError::NotBusy) => Reply::error("NOTBUSY No scripts in execution right now."),
        Err(KillError::Unkillable) => Reply::error(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
        ),
    }
}

fn load_on(scripts: &Scripts, args: &[Bytes]) -> Reply {
    match scripts.load(&args[2]) {
        Ok(sha) => Reply::bulk(sha),
        Err(r) => r,
    }
}
