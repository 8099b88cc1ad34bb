//! CLIENT ID | SETNAME | GETNAME | LIST | INFO | SETINFO | KILL | HELP

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::client::ClientHandle;
use crate::command_table::help;
use crate::command_table::ArgType::{Block, Integer, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

const CLIENT_SETNAME: CommandSpec = cmd(
    "client|setname",
    3,
    &["noscript", "loading", "stale"],
    &["@slow", "@connection"],
)
.docs(
    doc(
        "connection",
        "2.6.9",
        "Assigns a name to the current connection.",
        "O(1)",
    )
    .args(&[arg("connection-name", Str)]),
)
.handler(Handler::Conn(setname));

const CLIENT_GETNAME: CommandSpec = cmd(
    "client|getname",
    2,
    &["noscript", "loading", "stale"],
    &["@slow", "@connection"],
)
.docs(doc(
    "connection",
    "2.6.9",
    "Returns the name of the current connection, if it has one.",
    "O(1)",
))
.handler(Handler::Conn(getname));

const CLIENT_ID: CommandSpec = cmd(
    "client|id",
    2,
    &["noscript", "loading", "stale"],
    &["@slow", "@connection"],
)
.docs(doc(
    "connection",
    "5.0.0",
    "Returns the ID the server assigned to this connection.",
    "O(1)",
))
.handler(Handler::Conn(id));

const CLIENT_LIST: CommandSpec = cmd(
    "client|list",
    -2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous", "@connection"],
)
.tips(&["nondeterministic_output"])
.docs(
    doc(
        "connection",
        "2.4.0",
        "Lists the open client connections and their properties.",
        "O(N), N being the number of connected clients.",
    )
    .history(&[
        ("2.8.12", "New field `id`."),
        ("5.0.0", "New `TYPE` filter."),
        ("6.0.0", "New field `user`."),
        (
            "6.2.0",
            "New fields `argv-mem`, `tot-mem`, `laddr` and `redir`; new `ID` filter.",
        ),
        ("7.0.0", "New fields `resp`, `multi-mem`, `rbs` and `rbp`."),
        ("7.0.3", "New field `ssub`."),
    ])
    .args(&[
        arg("normal_master_replica_pubsub", OneOf)
            .token("TYPE")
            .since("5.0.0")
            .opt()
            .sub(&[
                arg("normal", PureToken).token("NORMAL"),
                arg("master", PureToken).token("MASTER"),
                arg("replica", PureToken).token("REPLICA"),
                arg("pubsub", PureToken).token("PUBSUB"),
            ]),
        arg("id", Block)
            .token("ID")
            .since("6.2.0")
            .opt()
            .sub(&[arg("client-id", Integer).multi()]),
    ]),
)
.handler(Handler::Conn(list));

const CLIENT_INFO: CommandSpec = cmd(
    "client|info",
    2,
    &["noscript", "loading", "stale"],
    &["@slow", "@connection"],
)
.tips(&["nondeterministic_output"])
.docs(doc(
    "connection",
    "6.2.0",
    "Describes the current connection in the format of CLIENT LIST.",
    "O(1)",
))
.handler(Handler::Conn(info));

// Redis 7.2 added SETINFO; this is 7.2's metadata.
const CLIENT_SETINFO: CommandSpec = cmd(
    "client|setinfo",
    4,
    &["noscript", "loading", "stale"],
    &["@slow", "@connection"],
)
.docs(
    doc(
        "connection",
        "7.2.0",
        "Records the name or version of the client library on the connection.",
        "O(1)",
    )
    .args(&[arg("attr", OneOf).sub(&[
        arg("libname", Str).token("lib-name"),
        arg("libver", Str).token("lib-ver"),
    ])]),
)
.handler(Handler::Conn(setinfo));

const CLIENT_KILL: CommandSpec = cmd(
    "client|kill",
    -3,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous", "@connection"],
)
.docs(
    doc(
        "connection",
        "2.4.0",
        "Closes the client connections that match the given filters.",
        "O(N), N being the number of connected clients.",
    )
    .history(&[
        ("2.8.12", "Filters given as option and value pairs."),
        ("2.8.12", "Filter `ID`."),
        ("3.2.0", "Value `master` for the `TYPE` filter."),
        (
            "5.0.0",
            "`TYPE replica` supersedes `TYPE slave`, which keeps working.",
        ),
        ("6.2.0", "Filter `LADDR`."),
    ])
    .args(&[arg("filter", OneOf).sub(&[
        arg("ip:port", Str).deprecated("2.8.12"),
        arg("new-format", OneOf).multi().sub(&[
            arg("client-id", Integer).token("ID").since("2.8.12").opt(),
            arg("normal_master_slave_pubsub", OneOf)
                .token("TYPE")
                .since("2.8.12")
                .opt()
                .sub(&[
                    arg("normal", PureToken).token("NORMAL"),
                    arg("master", PureToken).token("MASTER").since("3.2.0"),
                    arg("slave", PureToken).token("SLAVE"),
                    arg("replica", PureToken).token("REPLICA").since("5.0.0"),
                    arg("pubsub", PureToken).token("PUBSUB"),
                ]),
            arg("username", Str).token("USER").opt(),
            arg("ip:port", Str).token("ADDR").opt(),
            arg("ip:port", Str).token("LADDR").since("6.2.0").opt(),
            arg("yes/no", Str).token("SKIPME").opt(),
        ]),
    ])]),
)
.handler(Handler::Conn(kill));

const CLIENT_HELP: CommandSpec = cmd(
    "client|help",
    2,
    &["loading", "stale"],
    &["@slow", "@connection"],
)
.docs(doc(
    "connection",
    "5.0.0",
    "Lists the CLIENT subcommands with a short description of each.",
    "O(1)",
))
.handler(Handler::Conn(help));

pub const CLIENT: CommandSpec = cmd("client", -2, &[], &["@slow"])
    .docs(doc(
        "connection",
        "2.4.0",
        "Groups the subcommands that inspect and manage client connections.",
        "Varies by subcommand.",
    ))
    .subs(&[
        CLIENT_SETNAME,
        CLIENT_GETNAME,
        CLIENT_ID,
        CLIENT_LIST,
        CLIENT_INFO,
        CLIENT_SETINFO,
        CLIENT_KILL,
        CLIENT_HELP,
    ]);

/// Client names and library names: printable ASCII without spaces (Redis's rule).
pub fn valid_name(n: &[u8]) -> bool {
    n.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// Names the connection (an empty name clears it), or the error Redis gives for a bad name.
pub fn set_name(client: &crate::client::Client, n: &[u8]) -> Result<(), Reply> {
    if !valid_name(n) {
        return Err(Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    client.handle.info.lock().name = (!n.is_empty()).then(|| Bytes::copy_from_slice(n));
    Ok(())
}

fn verbatim(text: String) -> Reply {
    Reply::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    }
}

fn setname(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(match set_name(ctx.client, &args[2]) {
        Ok(()) => reply::ok(),
        Err(r) => r,
    })
}

fn getname(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let name = ctx.client.handle.info.lock().name.clone();
    Outcome::Reply(name.map_or(Reply::Null, Reply::Bulk))
}

fn id(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Integer(ctx.client.handle.id as i64))
}

fn info(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(verbatim(format!("{}\n", ctx.client.handle.describe())))
}

fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(list_clients(ctx, args).unwrap_or_else(|e| e))
}

fn setinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (attr, v) = (&args[2], &args[3]);
    let lib_name = if is(attr, "lib-name") {
        true
    } else if is(attr, "lib-ver") {
        false
    } else {
        return Outcome::Reply(reply::err_string(format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(attr)
        )));
    };
    if !valid_name(v) {
        return Outcome::Reply(reply::err_string(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            if lib_name { "lib-name" } else { "lib-ver" }
        )));
    }
    let v = (!v.is_empty()).then(|| Bytes::copy_from_slice(v));
    let mut info = ctx.client.handle.info.lock();
    if lib_name {
        info.lib_name = v;
    } else {
        info.lib_ver = v;
    }
    Outcome::Reply(reply::ok())
}

fn kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(kill_clients(ctx, args).unwrap_or_else(|e| e))
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&CLIENT))
}

fn list_clients(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    // Redis's shapes: CLIENT LIST, CLIENT LIST TYPE <t> (exactly), CLIENT LIST ID <id>...
    let mut ids: Option<Vec<u64>> = None;
    if args.len() == 4 && is(&args[2], "type") {
        let t = &args[3];
        if is(t, "normal") {
        } else if is(t, "master") || is(t, "replica") || is(t, "slave") || is(t, "pubsub") {
            // No client of these kinds exists here.
            ids = Some(Vec::new());
        } else {
            return Err(reply::err_string(format!(
                "ERR Unknown client type '{}'",
                String::from_utf8_lossy(t)
            )));
        }
    } else if args.len() > 3 && is(&args[2], "id") {
        let mut v = Vec::new();
        for a in &args[3..] {
            match reply::parse_i64(a) {
                Some(n) if n > 0 => v.push(n as u64),
                _ => return Err(Reply::error("ERR Invalid client ID")),
            }
        }
        ids = Some(v);
    } else if args.len() != 2 {
        return Err(reply::syntax());
    }
    let mut text = String::new();
    for c in ctx.shared.clients.all() {
        if ids.as_ref().is_none_or(|ids| ids.contains(&c.id)) {
            text.push_str(&c.describe());
            text.push('\n');
        }
    }
    Ok(verbatim(text))
}

fn kill_clients(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    let me = ctx.client.handle.id;
    let all = ctx.shared.clients.all();
    if args.len() == 3 {
        // Old form: CLIENT KILL addr:port.
        let addr = String::from_utf8_lossy(&args[2]);
        let target = all.iter().find(|c| c.addr.to_string() == addr);
        return match target {
            Some(c) => {
                c.kill();
                Ok(reply::ok())
            }
            None => Err(Reply::error("ERR No such client")),
        };
    }
    if !args.len().is_multiple_of(2) {
        return Err(reply::syntax());
    }
    type Filter = Box<dyn Fn(&ClientHandle) -> bool>;
    let mut filters: Vec<Filter> = Vec::new();
    let mut skipme = true;
    for pair in args[2..].chunks_exact(2) {
        let (k, v) = (&pair[0], pair[1].clone());
        if is(k, "id") {
            let id = match reply::parse_i64(&v) {
                Some(n) if n > 0 => n as u64,
                _ => return Err(Reply::error("ERR client-id should be greater than 0")),
            };
            filters.push(Box::new(move |c| c.id == id));
        } else if is(k, "addr") {
            filters.push(Box::new(move |c| c.addr.to_string().as_bytes() == &v[..]));
        } else if is(k, "laddr") {
            filters.push(Box::new(move |c| c.laddr.to_string().as_bytes() == &v[..]));
        } else if is(k, "user") {
            if ctx.shared.acl.read().user(&v).is_none() {
                return Err(reply::err_string(format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(&v)
                )));
            }
            filters.push(Box::new(move |c| c.info.lock().user.as_bytes() == &v[..]));
        } else if is(k, "type") {
            if is(&v, "normal") {
            } else if is(&v, "master") || is(&v, "replica") || is(&v, "slave") || is(&v, "pubsub") {
                filters.push(Box::new(|_| false));
            } else {
                return Err(reply::err_string(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(&v)
                )));
            }
        } else if is(k, "skipme") {
            skipme = if is(&v, "yes") {
                true
            } else if is(&v, "no") {
                false
            } else {
                return Err(reply::syntax());
            };
        } else if is(k, "maxage") {
            let age = reply::parse_i64(&v).ok_or_else(reply::syntax)?;
            filters.push(Box::new(move |c| {
                c.created.elapsed().as_secs() as i64 >= age
            }));
        } else {
            return Err(reply::syntax());
        }
    }
    let mut n = 0;
    for c in &all {
        if (skipme && c.id == me) || !filters.iter().all(|f| f(c)) {
            continue;
        }
        c.kill();
        n += 1;
    }
    Ok(Reply::Integer(n))
}
