//! CLIENT ID | SETNAME | GETNAME | LIST | INFO | SETINFO | KILL | REPLY | TRACKING | CACHING |
//! GETREDIR | TRACKINGINFO | HELP

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::{Ctx, Handler, Outcome};
use std::sync::atomic::Ordering;

use crate::client::{
    ClientHandle, FLAG_BCAST, FLAG_OPTIN, FLAG_OPTOUT, FLAG_REDIR_BROKEN, FLAG_TRACKING,
};
use crate::command_table::help;
use crate::command_table::ArgType::{Block, Integer, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;
use crate::tracking::{self, ClientTracking};

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

const CLIENT_UNBLOCK: CommandSpec = cmd(
    "client|unblock",
    -3,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous", "@connection"],
)
.docs(
    doc(
        "connection",
        "5.0.0",
        "Ends another client's wait in a blocking command, as a timeout or with an error.",
        "O(log N), N being the number of client connections.",
    )
    .args(&[
        arg("client-id", Integer),
        arg("timeout_error", OneOf).opt().sub(&[
            arg("timeout", PureToken).token("TIMEOUT"),
            arg("error", PureToken).token("ERROR"),
        ]),
    ]),
)
.handler(Handler::Conn(unblock));

const CLIENT_REPLY: CommandSpec = cmd(
    "client|reply",
    3,
    &["noscript", "loading", "stale"],
    &["@slow", "@connection"],
)
.docs(
    doc(
        "connection",
        "3.2.0",
        "Turns the server's replies to this connection off, on, or off for the next command.",
        "O(1)",
    )
    .args(&[arg("on_off_skip", OneOf).sub(&[
        arg("on", PureToken).token("ON"),
        arg("off", PureToken).token("OFF"),
        arg("skip", PureToken).token("SKIP"),
    ])]),
)
.handler(Handler::Conn(reply_mode));

const CLIENT_NO_EVICT: CommandSpec = cmd(
    "client|no-evict",
    3,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous", "@connection"],
)
.docs(
    doc(
        "connection",
        "7.0.0",
        "Exempts this connection from maxmemory-clients, or makes it evictable again.",
        "O(1)",
    )
    .args(&[arg("enabled", OneOf).sub(&[
        arg("on", PureToken).token("ON"),
        arg("off", PureToken).token("OFF"),
    ])]),
)
.handler(Handler::Conn(no_evict));

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

const TRACKING_FLAGS: &[&str] = &["noscript", "loading", "stale"];

const CLIENT_TRACKING: CommandSpec = cmd(
    "client|tracking",
    -3,
    TRACKING_FLAGS,
    &["@slow", "@connection"],
)
.docs(
    doc(
        "connection",
        "6.0.0",
        "Turns server-assisted client-side caching on or off for the connection.",
        "O(1), more with some options.",
    )
    .args(&[
        arg("status", OneOf).sub(&[
            arg("on", PureToken).token("ON"),
            arg("off", PureToken).token("OFF"),
        ]),
        arg("client-id", Integer).token("REDIRECT").opt(),
        arg("prefix", Str)
            .token("PREFIX")
            .opt()
            .multi()
            .multi_token(),
        arg("bcast", PureToken).token("BCAST").opt(),
        arg("optin", PureToken).token("OPTIN").opt(),
        arg("optout", PureToken).token("OPTOUT").opt(),
        arg("noloop", PureToken).token("NOLOOP").opt(),
    ]),
)
.handler(Handler::Conn(tracking));

const CLIENT_CACHING: CommandSpec = cmd(
    "client|caching",
    3,
    TRACKING_FLAGS,
    &["@slow", "@connection"],
)
.docs(
    doc(
        "connection",
        "6.0.0",
        "Says whether the keys of the next command are tracked (OPTIN and OPTOUT modes).",
        "O(1)",
    )
    .args(&[arg("mode", OneOf).sub(&[
        arg("yes", PureToken).token("YES"),
        arg("no", PureToken).token("NO"),
    ])]),
)
.handler(Handler::Conn(caching));

const CLIENT_GETREDIR: CommandSpec = cmd(
    "client|getredir",
    2,
    TRACKING_FLAGS,
    &["@slow", "@connection"],
)
.docs(doc(
    "connection",
    "6.0.0",
    "Returns the id of the client invalidations are redirected to, 0 or -1 if none.",
    "O(1)",
))
.handler(Handler::Conn(getredir));

const CLIENT_TRACKINGINFO: CommandSpec = cmd(
    "client|trackinginfo",
    2,
    TRACKING_FLAGS,
    &["@slow", "@connection"],
)
.docs(doc(
    "connection",
    "6.2.0",
    "Describes the connection's client-side caching state.",
    "O(1)",
))
.handler(Handler::Conn(trackinginfo));

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
        CLIENT_UNBLOCK,
        CLIENT_REPLY,
        CLIENT_NO_EVICT,
        CLIENT_TRACKING,
        CLIENT_CACHING,
        CLIENT_GETREDIR,
        CLIENT_TRACKINGINFO,
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

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the client was waiting in a blocking command (it
/// then answers as if its time ran out, or with an UNBLOCKED error), else 0.
fn unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(id) = reply::parse_i64(&args[2]) else {
        return Outcome::Reply(reply::not_integer());
    };
    let error = match args.get(3) {
        None => false,
        Some(a) if a.eq_ignore_ascii_case(b"timeout") => false,
        Some(a) if a.eq_ignore_ascii_case(b"error") => true,
        Some(_) => {
            return Outcome::Reply(Reply::error(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    if args.len() > 4 {
        return Outcome::Reply(reply::syntax());
    }
    let target = u64::try_from(id)
        .ok()
        .and_then(|id| ctx.shared.clients.get(id))
        .filter(|h| h.blocked.load(Ordering::Acquire));
    let Some(h) = target else {
        return Outcome::Reply(Reply::Integer(0));
    };
    *h.unblock.lock() = Some(error);
    h.unblock_notify.notify_one();
    Outcome::Reply(Reply::Integer(1))
}

fn kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(kill_clients(ctx, args).unwrap_or_else(|e| e))
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&CLIENT))
}

/// Whether a client is of Redis's `pubsub` class: subscribed to a channel or pattern.
fn is_pubsub(c: &ClientHandle) -> bool {
    c.sub.load(Ordering::Relaxed) + c.psub.load(Ordering::Relaxed) + c.ssub.load(Ordering::Relaxed)
        > 0
}

fn list_clients(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    // Redis's shapes: CLIENT LIST, CLIENT LIST TYPE <t> (exactly), CLIENT LIST ID <id>...
    let mut ids: Option<Vec<u64>> = None;
    // Redis's classes: a client subscribed to anything is `pubsub`, not `normal`.
    let mut class: Option<bool> = None;
    if args.len() == 4 && is(&args[2], "type") {
        let t = &args[3];
        if is(t, "normal") {
            class = Some(false);
        } else if is(t, "pubsub") {
            class = Some(true);
        } else if is(t, "master") || is(t, "replica") || is(t, "slave") {
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
            // Any integer is taken (none is below 1, so those match no client), as Redis 7.0.
            match reply::parse_i64(a) {
                Some(n) if n > 0 => v.push(n as u64),
                Some(_) => {}
                None => return Err(Reply::error("ERR Invalid client ID")),
            }
        }
        ids = Some(v);
    } else if args.len() != 2 {
        return Err(reply::syntax());
    }
    let mut text = String::new();
    for c in ctx.shared.clients.all() {
        if ids.as_ref().is_none_or(|ids| ids.contains(&c.id))
            && class.is_none_or(|pubsub| is_pubsub(&c) == pubsub)
        {
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
                filters.push(Box::new(|c| !is_pubsub(c)));
            } else if is(&v, "pubsub") {
                filters.push(Box::new(is_pubsub));
            } else if is(&v, "master") || is(&v, "replica") || is(&v, "slave") {
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

fn tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(set_tracking(ctx, args).unwrap_or_else(|e| e))
}

fn set_tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    let mut new = ClientTracking::default();
    let mut prefixes_given = false;
    let mut j = 3;
    while j < args.len() {
        let a = &args[j];
        let more = j + 1 < args.len();
        if is(a, "redirect") && more {
            j += 1;
            if new.redirect != 0 {
                return Err(Reply::error(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = reply::parse_i64(&args[j]).ok_or_else(reply::not_integer)?;
            let exists = u64::try_from(id)
                .ok()
                .filter(|&id| ctx.shared.clients.contains(id));
            new.redirect = exists.ok_or_else(|| {
                Reply::error("ERR The client ID you want redirect to does not exist")
            })?;
        } else if is(a, "bcast") {
            new.bcast = true;
        } else if is(a, "optin") {
            new.optin = true;
        } else if is(a, "optout") {
            new.optout = true;
        } else if is(a, "noloop") {
            new.noloop = true;
        } else if is(a, "prefix") && more {
            j += 1;
            prefixes_given = true;
            new.prefixes.push(args[j].clone());
        } else {
            return Err(reply::syntax());
        }
        j += 1;
    }
    if is(&args[2], "on") {
        tracking::check_options(ctx.client.tracking.as_ref(), &new, prefixes_given)
            .map_err(reply::err_string)?;
        if new.bcast && new.prefixes.is_empty() && ctx.client.tracking.is_none() {
            new.prefixes.push(Bytes::new());
        }
        if let Some(old) = &ctx.client.tracking {
            // ON again keeps the prefixes already registered and adds the new ones.
            let mut all = old.prefixes.clone();
            all.extend(new.prefixes.iter().cloned());
            new.prefixes = all;
        }
        let id = ctx.client.handle.id;
        if ctx.client.mailbox.is_none() {
            ctx.client.mailbox = Some(ctx.shared.hub.mailbox(&ctx.client.handle));
        }
        ctx.shared.tracking.enable(id, &new);
        let h = &ctx.client.handle;
        let mut flags = FLAG_TRACKING;
        for (on, bit) in [
            (new.bcast, FLAG_BCAST),
            (new.optin, FLAG_OPTIN),
            (new.optout, FLAG_OPTOUT),
        ] {
            if on {
                flags |= bit;
            }
        }
        h.tracking_flags.store(flags, Ordering::Relaxed);
        h.redir.store(new.redirect as i64, Ordering::Relaxed);
        ctx.client.tracking = Some(new);
    } else if is(&args[2], "off") {
        tracking_off(ctx);
    } else {
        return Err(reply::syntax());
    }
    Ok(reply::ok())
}

/// Turns tracking off for the connection (CLIENT TRACKING OFF, RESET).
pub fn tracking_off(ctx: &mut Ctx<'_>) {
    if ctx.client.tracking.take().is_some() {
        ctx.shared.tracking.disable(ctx.client.handle.id);
    }
    ctx.client.handle.tracking_flags.store(0, Ordering::Relaxed);
    ctx.client.handle.redir.store(-1, Ordering::Relaxed);
}

fn caching(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(t) = ctx.client.tracking.as_mut() else {
        return Outcome::Reply(Reply::error(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    };
    Outcome::Reply(if is(&args[2], "yes") {
        if t.optin {
            t.caching = true;
            reply::ok()
        } else {
            Reply::error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            )
        }
    } else if is(&args[2], "no") {
        if t.optout {
            t.caching = true;
            reply::ok()
        } else {
            Reply::error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            )
        }
    } else {
        reply::syntax()
    })
}

fn getredir(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Integer(
        ctx.client
            .tracking
            .as_ref()
            .map_or(-1, |t| t.redirect as i64),
    ))
}

fn trackinginfo(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let t = ctx.client.tracking.as_ref();
    let broken = ctx.client.handle.tracking_flags.load(Ordering::Relaxed) & FLAG_REDIR_BROKEN != 0;
    let mut flags = vec![Reply::bulk(if t.is_some() { "on" } else { "off" })];
    if let Some(t) = t {
        for (on, name) in [
            (t.bcast, "bcast"),
            (t.optin, "optin"),
            (t.optin && t.caching, "caching-yes"),
            (t.optout, "optout"),
            (t.optout && t.caching, "caching-no"),
            (t.noloop, "noloop"),
            (broken, "broken_redirect"),
        ] {
            if on {
                flags.push(Reply::bulk(name));
            }
        }
    }
    // In byte order, as Redis keeps them.
    let mut prefixes: Vec<Bytes> = t
        .filter(|t| t.bcast)
        .map(|t| t.prefixes.clone())
        .unwrap_or_default();
    prefixes.sort();
    let prefixes = prefixes.into_iter().map(Reply::Bulk).collect();
    Outcome::Reply(Reply::Map(vec![
        (Reply::bulk("flags"), Reply::Set(flags)),
        (
            Reply::bulk("redirect"),
            Reply::Integer(t.map_or(-1, |t| t.redirect as i64)),
        ),
        (Reply::bulk("prefixes"), Reply::Array(prefixes)),
    ]))
}

/// CLIENT REPLY ON | OFF | SKIP: only ON answers (OK); OFF and SKIP answer nothing, and SKIP
/// is ignored while replies are off, as in Redis.
fn no_evict(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let on = if is(&args[2], "on") {
        true
    } else if is(&args[2], "off") {
        false
    } else {
        return Outcome::Reply(reply::syntax());
    };
    ctx.client.handle.no_evict.store(on, Ordering::Relaxed);
    Outcome::Reply(reply::ok())
}

fn reply_mode(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mode = &mut ctx.client.reply;
    if is(&args[2], "on") {
        mode.off = false;
        mode.skip = false;
        Outcome::Reply(reply::ok())
    } else if is(&args[2], "off") {
        mode.off = true;
        Outcome::Silent
    } else if is(&args[2], "skip") {
        if !mode.off {
            mode.skip_next = true;
        }
        Outcome::Silent
    } else {
        Outcome::Reply(reply::syntax())
    }
}
