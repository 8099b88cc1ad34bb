//! FUNCTION LOAD | DELETE | LIST | STATS | KILL | FLUSH | DUMP | RESTORE | HELP — function
//! libraries. A library is checked by the interpreter, stored by the keyspace as an op (it
//! lives with the data and survives a restart, unlike the script cache), and installed in the
//! interpreter inside the same merger transaction, so every FCALL ordered after the change
//! sees it.

use std::sync::Arc;

use bytes::Bytes;
use rialto_keyspace::{LibraryOp, LibrarySource, Op, OpKind, RestorePolicy};
use rialto_resp::Reply;
use rialto_scripting::{KillError, LibraryInfo};

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;
use crate::server::Shared;

const FUNCTION_LOAD: CommandSpec = cmd(
    "function|load",
    -3,
    &["write", "denyoom", "noscript"],
    &["@write", "@slow", "@scripting"],
)
.tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
.docs(
    doc(
        "scripting",
        "7.0.0",
        "Loads a library of functions; its first line names it (#!lua name=...).",
        "O(1) (considering compilation time is redundant)",
    )
    .args(&[
        arg("replace", PureToken).token("REPLACE").opt(),
        arg("function-code", Str),
    ]),
)
.handler(Handler::Conn(load));

const FUNCTION_DELETE: CommandSpec = cmd(
    "function|delete",
    3,
    &["write", "noscript"],
    &["@write", "@slow", "@scripting"],
)
.tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
.docs(
    doc(
        "scripting",
        "7.0.0",
        "Deletes a library and its functions.",
        "O(1)",
    )
    .args(&[arg("library-name", Str)]),
)
.handler(Handler::Conn(delete));

const FUNCTION_LIST: CommandSpec =
    cmd("function|list", -2, &["noscript"], &["@slow", "@scripting"])
        .tips(&["nondeterministic_output_order"])
        .docs(
            doc(
                "scripting",
                "7.0.0",
                "Lists the libraries, their functions and, with WITHCODE, their code.",
                "O(N) where N is the number of functions",
            )
            .args(&[
                arg("library-name-pattern", Str).token("LIBRARYNAME").opt(),
                arg("withcode", PureToken).token("WITHCODE").opt(),
            ]),
        )
        .handler(Handler::Conn(list));

const FUNCTION_STATS: CommandSpec = cmd(
    "function|stats",
    2,
    &["noscript", "allow_busy"],
    &["@slow", "@scripting"],
)
.tips(&[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
])
.docs(doc(
    "scripting",
    "7.0.0",
    "Tells what function runs now and how many libraries and functions are loaded.",
    "O(1)",
))
.handler(Handler::Conn(stats));

const FUNCTION_KILL: CommandSpec = cmd(
    "function|kill",
    2,
    &["noscript", "allow_busy"],
    &["@slow", "@scripting"],
)
.tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
.docs(doc(
    "scripting",
    "7.0.0",
    "Stops the function running now, if it has not written.",
    "O(1)",
))
.handler(Handler::Conn(kill));

const FUNCTION_FLUSH: CommandSpec = cmd(
    "function|flush",
    -2,
    &["write", "noscript"],
    &["@write", "@slow", "@scripting"],
)
.tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
.docs(
    doc(
        "scripting",
        "7.0.0",
        "Deletes every library.",
        "O(N) where N is the number of functions deleted",
    )
    .args(&[arg("async", OneOf).opt().sub(&[
        arg("async", PureToken).token("ASYNC"),
        arg("sync", PureToken).token("SYNC"),
    ])]),
)
.handler(Handler::Conn(flush));

const FUNCTION_DUMP: CommandSpec = cmd("function|dump", 2, &["noscript"], &["@slow", "@scripting"])
    .docs(doc(
        "scripting",
        "7.0.0",
        "Serialises every library into a payload FUNCTION RESTORE takes back.",
        "O(N) where N is the number of functions",
    ))
    .handler(Handler::Conn(dump));

const FUNCTION_RESTORE: CommandSpec = cmd(
    "function|restore",
    -3,
    &["write", "denyoom", "noscript"],
    &["@write", "@slow", "@scripting"],
)
.tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
.docs(
    doc(
        "scripting",
        "7.0.0",
        "Loads the libraries of a FUNCTION DUMP payload; the policy says what happens to those loaded.",
        "O(N) where N is the number of functions on the payload",
    )
    .args(&[
        arg("serialized-value", Str),
        arg("policy", OneOf).opt().sub(&[
            arg("flush", PureToken).token("FLUSH"),
            arg("append", PureToken).token("APPEND"),
            arg("replace", PureToken).token("REPLACE"),
        ]),
    ]),
)
.handler(Handler::Conn(restore));

const FUNCTION_HELP: CommandSpec = cmd(
    "function|help",
    2,
    &["loading", "stale"],
    &["@slow", "@scripting"],
)
.docs(doc(
    "scripting",
    "7.0.0",
    "Lists the FUNCTION subcommands with a short description of each.",
    "O(1)",
))
.handler(Handler::Conn(help));

pub const FUNCTION: CommandSpec = cmd("function", -2, &[], &["@slow"])
    .docs(doc(
        "scripting",
        "7.0.0",
        "Groups the subcommands that manage function libraries.",
        "Depends on subcommand.",
    ))
    .subs(&[
        FUNCTION_LOAD,
        FUNCTION_DELETE,
        FUNCTION_LIST,
        FUNCTION_STATS,
        FUNCTION_KILL,
        FUNCTION_FLUSH,
        FUNCTION_DUMP,
        FUNCTION_RESTORE,
        FUNCTION_HELP,
    ]);

fn source(lib: &LibraryInfo) -> LibrarySource {
    LibrarySource {
        name: lib.name.clone(),
        functions: lib.functions.iter().map(|f| f.name.clone()).collect(),
        code: lib.code.clone(),
    }
}

/// Applies a library change in the merger's order and, if the keyspace took it, makes the
/// interpreter agree (`install`) in the same transaction; replies `done` on success.
fn change(
    shared: &Arc<Shared>,
    op: LibraryOp,
    install: impl FnOnce(&rialto_scripting::Scripts) + Send + 'static,
    done: Reply,
) -> Outcome {
    let shared = Arc::clone(shared);
    Outcome::Later(Box::pin(async move {
        let scripts = Arc::clone(&shared.scripts);
        let op = Op::new(0, shared.now_ms(), OpKind::Library(op));
        let h = shared
            .keyspace
            .transaction(None, op.now_ms, move |tx| match tx {
                Some(tx) => tx.apply(&op).map(|_| install(&scripts)),
                None => Ok(()),
            });
        shared.keyspace.run_queued();
        match h.await {
            Ok(Ok(())) => done,
            Ok(Err(e)) => reply::keyspace_error(&e),
            Err(e) => reply::engine_error(&e),
        }
    }))
}

fn load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let replace = match args.len() {
        3 => false,
        4 if is(&args[2], "replace") => true,
        _ => {
            return Outcome::Reply(reply::err_string(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(&args[2])
            )))
        }
    };
    let lib = match ctx.shared.scripts.check_library(&args[args.len() - 1]) {
        Ok(lib) => lib,
        Err(r) => return Outcome::Reply(r),
    };
    let name = Reply::bulk(&lib.name);
    let op = LibraryOp::Put {
        lib: source(&lib),
        replace,
    };
    change(
        ctx.shared,
        op,
        move |scripts| {
            // Checked just before: it loads the same way again.
            let _ = scripts.install_library(lib);
        },
        name,
    )
}

fn delete(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    let op = LibraryOp::Delete { name: name.clone() };
    change(
        ctx.shared,
        op,
        move |s| s.remove_library(&name),
        reply::ok(),
    )
}

fn flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    match args.get(2) {
        None => {}
        Some(a) if args.len() == 3 && (is(a, "async") || is(a, "sync")) => {}
        Some(_) => {
            return Outcome::Reply(Reply::error(
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
    }
    change(
        ctx.shared,
        LibraryOp::Flush,
        |s| s.flush_libraries(),
        reply::ok(),
    )
}

fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let policy =
        match args.get(3) {
            None => RestorePolicy::Append,
            Some(p) if args.len() == 4 && is(p, "flush") => RestorePolicy::Flush,
            Some(p) if args.len() == 4 && is(p, "append") => RestorePolicy::Append,
            Some(p) if args.len() == 4 && is(p, "replace") => RestorePolicy::Replace,
            Some(_) => return Outcome::Reply(Reply::error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
    let Some(codes) = rialto_scripting::undump(&args[2]) else {
        return Outcome::Reply(Reply::error(
            "ERR DUMP payload version or checksum are wrong",
        ));
    };
    let mut libs = Vec::with_capacity(codes.len());
    for code in codes {
        match ctx.shared.scripts.check_library(&code) {
            Ok(lib) => libs.push(lib),
            Err(r) => return Outcome::Reply(r),
        }
    }
    let op = LibraryOp::Restore {
        libs: libs.iter().map(source).collect(),
        policy,
    };
    change(
        ctx.shared,
        op,
        move |s| {
            if policy == RestorePolicy::Flush {
                s.flush_libraries();
            }
            for lib in libs {
                let _ = s.install_library(lib);
            }
        },
        reply::ok(),
    )
}

fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (mut pattern, mut withcode) = (None, false);
    let mut i = 2;
    while i < args.len() {
        if is(&args[i], "withcode") && !withcode {
            withcode = true;
        } else if is(&args[i], "libraryname") && pattern.is_none() {
            let Some(p) = args.get(i + 1) else {
                return Outcome::Reply(Reply::error("ERR library name argument was not given"));
            };
            pattern = Some(p.clone());
            i += 1;
        } else {
            return Outcome::Reply(reply::err_string(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(&args[i])
            )));
        }
        i += 1;
    }
    let bulk = |s: &str| Reply::bulk(s);
    let libs = ctx.shared.scripts.libraries();
    let out = libs
        .iter()
        .filter(|l| {
            pattern
                .as_ref()
                .is_none_or(|p| crate::glob::glob_match(p, l.name.as_bytes(), false))
        })
        .map(|l| {
            let functions = l
                .functions
                .iter()
                .map(|f| {
                    Reply::Map(vec![
                        (bulk("name"), bulk(&f.name)),
                        (
                            bulk("description"),
                            f.description.as_deref().map_or(Reply::Null, bulk),
                        ),
                        (
                            bulk("flags"),
                            Reply::Set(
                                f.flags
                                    .iter()
                                    .map(|fl| Reply::Simple(Bytes::from_static(fl.as_bytes())))
                                    .collect(),
                            ),
                        ),
                    ])
                })
                .collect();
            let mut entry = vec![
                (bulk("library_name"), bulk(&l.name)),
                (bulk("engine"), bulk("LUA")),
                (bulk("functions"), Reply::Array(functions)),
            ];
            if withcode {
                entry.push((bulk("library_code"), Reply::Bulk(l.code.clone())));
            }
            Reply::Map(entry)
        })
        .collect();
    Outcome::Reply(Reply::Array(out))
}

fn stats(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let libs = ctx.shared.scripts.libraries();
    let functions: usize = libs.iter().map(|l| l.functions.len()).sum();
    let bulk = |s: &str| Reply::bulk(s);
    Outcome::Reply(Reply::Map(vec![
        (bulk("running_script"), Reply::Null),
        (
            bulk("engines"),
            Reply::Map(vec![(
                bulk("LUA"),
                Reply::Map(vec![
                    (bulk("libraries_count"), Reply::Integer(libs.len() as i64)),
                    (bulk("functions_count"), Reply::Integer(functions as i64)),
                ]),
            )]),
        ),
    ]))
}

fn kill(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(match ctx.shared.scripts.kill() {
        Ok(()) => reply::ok(),
        Err(KillError::NotBusy) => Reply::error("NOTBUSY No scripts in execution right now."),
        Err(KillError::Unkillable) => Reply::error(
            "UNKILLABLE The busy script was sent a write command, it can not be killed.",
        ),
    })
}

fn dump(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Bulk(rialto_scripting::dump(
        &ctx.shared.scripts.libraries(),
    )))
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&FUNCTION))
}
