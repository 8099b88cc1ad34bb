//! FUNCTION LOAD | DELETE | LIST | STATS | KILL | FLUSH | DUMP | RESTORE | HELP — function
//! libraries. A library is checked by the interpreter, stored by the keyspace as an op (it
//! lives with the data and survives a restart, unlike the script cache), and installed in the
//! interpreter inside the same merger transaction, so every FCALL ordered after the change
//! sees it.

use std::sync::Arc;

use bytes::Bytes;
use rialto_keyspace::Transaction;
use rialto_keyspace::{LibraryOp, LibrarySource, Op, OpKind, RestorePolicy};
use rialto_resp::Reply;
use rialto_scripting::{KillError, LibraryInfo, Scripts};

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::{OneOf, PureToken, String as Str};
use crate::command_table::{self, help};
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
.handler(Handler::Conn(change_command));

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
.handler(Handler::Conn(change_command));

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
.handler(Handler::Conn(change_command));

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
.handler(Handler::Conn(change_command));

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

/// A FUNCTION change, parsed and checked: the op the keyspace applies, what then installs it
/// in the interpreter (in the same transaction), and the reply on success.
pub struct Change {
    pub(crate) op: LibraryOp,
    install: Box<dyn FnOnce(&Scripts) + Send>,
    pub(crate) done: Reply,
}

impl Change {
    /// Applies the change in `tx`; its reply.
    pub fn apply(self, tx: &mut Transaction<'_, '_>, scripts: &Scripts) -> Reply {
        let op = Op::new(0, tx.now_ms(), OpKind::Library(self.op));
        match tx.apply(&op) {
            Ok(_) => {
                (self.install)(scripts);
                self.done
            }
            Err(e) => reply::keyspace_error(&e),
        }
    }
}

/// FUNCTION LOAD, DELETE, FLUSH or RESTORE (by `name`, `function|load`...) parsed into its
/// change, or the reply refusing it; `None` for any other command.
pub fn prepare(name: &str, scripts: &Scripts, args: &[Bytes]) -> Option<Result<Change, Reply>> {
    Some(match name {
        "function|load" => prepare_load(scripts, args),
        "function|delete" => {
            let lib = String::from_utf8_lossy(&args[2]).into_owned();
            Ok(Change {
                op: LibraryOp::Delete { name: lib.clone() },
                install: Box::new(move |s| s.remove_library(&lib)),
                done: reply::ok(),
            })
        }
        "function|flush" => match args.get(2) {
            _ if args.len() > 3 => Err(subcommand_syntax_error(args)),
            Some(a) if !(is(a, "async") || is(a, "sync")) => Err(Reply::error(
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            )),
            _ => Ok(Change {
                op: LibraryOp::Flush,
                install: Box::new(|s| s.flush_libraries()),
                done: reply::ok(),
            }),
        },
        "function|restore" => prepare_restore(scripts, args),
        _ => return None,
    })
}

fn prepare_load(scripts: &Scripts, args: &[Bytes]) -> Result<Change, Reply> {
    let replace = match args.len() {
        3 => false,
        4 if is(&args[2], "replace") => true,
        _ => {
            return Err(reply::err_string(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(&args[2])
            )))
        }
    };
    let lib = scripts.check_library(&args[args.len() - 1])?;
    let done = Reply::bulk(&lib.name);
    Ok(Change {
        op: LibraryOp::Put {
            lib: source(&lib),
            replace,
        },
        // Checked just before: it loads the same way again.
        install: Box::new(move |s| {
            let _ = s.install_library(lib);
        }),
        done,
    })
}

/// Redis's answer to a FUNCTION subcommand given more arguments than it takes.
fn subcommand_syntax_error(args: &[Bytes]) -> Reply {
    reply::err_string(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(&args[1]),
        String::from_utf8_lossy(&args[0]).to_uppercase()
    ))
}

fn prepare_restore(scripts: &Scripts, args: &[Bytes]) -> Result<Change, Reply> {
    if args.len() > 4 {
        return Err(subcommand_syntax_error(args));
    }
    let policy =
        match args.get(3) {
            None => RestorePolicy::Append,
            Some(p) if is(p, "flush") => RestorePolicy::Flush,
            Some(p) if is(p, "append") => RestorePolicy::Append,
            Some(p) if is(p, "replace") => RestorePolicy::Replace,
            Some(_) => return Err(Reply::error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
    let codes = rialto_scripting::undump(&args[2])
        .ok_or_else(|| Reply::error("ERR DUMP payload version or checksum are wrong"))?;
    let libs = codes
        .iter()
        .map(|code| scripts.check_library(code))
        .collect::<Result<Vec<_>, Reply>>()?;
    Ok(Change {
        op: LibraryOp::Restore {
            libs: libs.iter().map(source).collect(),
            policy,
        },
        install: Box::new(move |s| {
            if policy == RestorePolicy::Flush {
                s.flush_libraries();
            }
            for lib in libs {
                let _ = s.install_library(lib);
            }
        }),
        done: reply::ok(),
    })
}

/// Runs a change in the merger's order (its own transaction) and replies once durable.
fn submit(shared: &Arc<Shared>, prepared: Result<Change, Reply>) -> Outcome {
    let change = match prepared {
        Ok(c) => c,
        Err(r) => return Outcome::Reply(r),
    };
    let shared = Arc::clone(shared);
    Outcome::Later(Box::pin(async move {
        let scripts = Arc::clone(&shared.scripts);
        let h = shared
            .keyspace
            .transaction(None, shared.now_ms(), move |tx| match tx {
                Some(tx) => change.apply(tx, &scripts),
                None => Reply::NullArray,
            });
        shared.keyspace.run_queued();
        h.await.unwrap_or_else(|e| reply::engine_error(&e))
    }))
}

fn change_command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = command_table::lookup_command(args).map_or("", |c| c.name);
    if let Some(c) = ctx.shared.cluster.clone() {
        let p = c.partition_of_port(ctx.client.handle.laddr.port());
        return change_in_cluster(ctx.shared, c, p, name, args);
    }
    match prepare(name, &ctx.shared.scripts, args) {
        Some(prepared) => submit(ctx.shared, prepared),
        None => Outcome::Reply(Reply::error("ERR unknown FUNCTION subcommand")),
    }
}

/// A library change in cluster mode: a record of the partition the address serves, which
/// every replica applies to that partition's libraries (as each Redis Cluster shard keeps
/// its own functions, loaded on its master and replicated).
fn change_in_cluster(
    shared: &Arc<Shared>,
    c: Arc<crate::cluster::Cluster>,
    p: u32,
    name: &str,
    args: &[Bytes],
) -> Outcome {
    if !c.node.is_master(p) {
        return Outcome::Reply(Reply::error(
            "READONLY You can't write against a read only replica.",
        ));
    }
    let Some(libs) = c.node.machine().libraries(p) else {
        return Outcome::Reply(Reply::error("ERR unknown partition"));
    };
    let change = match prepare(name, &libs, args) {
        Some(Ok(change)) => change,
        Some(Err(r)) => return Outcome::Reply(r),
        None => return Outcome::Reply(Reply::error("ERR unknown FUNCTION subcommand")),
    };
    let op = Op::new(
        0,
        shared.now_ms(),
        OpKind::PartitionLibrary {
            partition: p,
            op: change.op,
        },
    );
    let done = change.done;
    let payload = crate::cluster::Payload::One(op);
    let submitted = match c.submit(p, &payload) {
        Ok(s) => s,
        Err(e) => return Outcome::Reply(crate::cluster::write_error(&c, &e, None)),
    };
    Outcome::Later(Box::pin(async move {
        match c.outcome(submitted).await {
            Ok(((crate::cluster::Applied::One(Ok(_)), _), _)) => done,
            Ok(((crate::cluster::Applied::One(Err(e)), _), _)) => reply::keyspace_error(&e),
            Ok(_) => Reply::error("ERR unexpected reply to a library change"),
            Err(e) => crate::cluster::write_error(&c, &e, None),
        }
    }))
}

/// The libraries FUNCTION LIST, STATS, DUMP and KILL look at: the server's, or in cluster
/// mode those of the partition the address serves.
fn libraries_of(ctx: &Ctx<'_>) -> Arc<Scripts> {
    if let Some(c) = &ctx.shared.cluster {
        let p = c.partition_of_port(ctx.client.handle.laddr.port());
        if let Some(libs) = c.node.machine().libraries(p) {
            return libs;
        }
    }
    Arc::clone(&ctx.shared.scripts)
}

/// The FUNCTION subcommands that only read the interpreter's state (by `name`), which a
/// transaction runs at their place in it.
pub fn reader(name: &str) -> Option<fn(&Scripts, &[Bytes]) -> Reply> {
    Some(match name {
        "function|list" => list_on,
        "function|stats" => stats_on,
        "function|kill" => kill_on,
        "function|dump" => dump_on,
        _ => return None,
    })
}

fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(list_on(&libraries_of(ctx), args))
}

fn stats(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(stats_on(&libraries_of(ctx), args))
}

fn kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(kill_on(&libraries_of(ctx), args))
}

fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(dump_on(&libraries_of(ctx), args))
}

fn list_on(scripts: &Scripts, args: &[Bytes]) -> Reply {
    let (mut pattern, mut withcode) = (None, false);
    let mut i = 2;
    while i < args.len() {
        if is(&args[i], "withcode") && !withcode {
            withcode = true;
        } else if is(&args[i], "libraryname") && pattern.is_none() {
            let Some(p) = args.get(i + 1) else {
                return Reply::error("ERR library name argument was not given");
            };
            pattern = Some(p.clone());
            i += 1;
        } else {
            return reply::err_string(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(&args[i])
            ));
        }
        i += 1;
    }
    let bulk = |s: &str| Reply::bulk(s);
    let libs = scripts.libraries();
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
    Reply::Array(out)
}

fn stats_on(scripts: &Scripts, _: &[Bytes]) -> Reply {
    if scripts.eval_running() {
        // Redis's FUNCTION STATS tells of functions only.
        return scripts.busy_reply();
    }
    let libs = scripts.libraries();
    let functions: usize = libs.iter().map(|l| l.functions.len()).sum();
    let bulk = |s: &str| Reply::bulk(s);
    Reply::Map(vec![
        (
            bulk("running_script"),
            match scripts.running() {
                None => Reply::Null,
                Some((name, command, ms)) => Reply::Map(vec![
                    (bulk("name"), Reply::bulk(name)),
                    (
                        bulk("command"),
                        Reply::Array(command.into_iter().map(Reply::Bulk).collect()),
                    ),
                    (bulk("duration_ms"), Reply::Integer(ms as i64)),
                ]),
            },
        ),
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
    ])
}

fn kill_on(scripts: &Scripts, _: &[Bytes]) -> Reply {
    match scripts.kill(true) {
        Ok(()) => reply::ok(),
        Err(KillError::OtherKind) => scripts.busy_reply(),
        Err(KillError::NotBusy) => Reply::error("NOTBUSY No scripts in execution right now."),
        Err(KillError::Unkillable) => Reply::error(
            "UNKILLABLE The busy script was sent a write command, it can not be killed.",
        ),
    }
}

fn dump_on(scripts: &Scripts, _: &[Bytes]) -> Reply {
    Reply::Bulk(rialto_scripting::dump(&scripts.libraries()))
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&FUNCTION))
}
