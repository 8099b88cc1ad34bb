//! ACL WHOAMI | SETUSER | GETUSER | DELUSER | LIST | USERS | CAT | GENPASS | DRYRUN | LOG |
//! LOAD | SAVE | HELP over the users of [`crate::acl`]. SETUSER and DELUSER take the users'
//! write lock, the rest the read lock (GENPASS none).

use bytes::Bytes;
use rand::RngCore;
use rialto_resp::Reply;

use super::{AclCtx, Handler};
use crate::acl::rules::hex;
use crate::command_table::ArgType::{Integer, OneOf, PureToken, String as Str};
use crate::command_table::{self, arg, cmd, doc, help, CommandSpec};
use crate::reply;

const ACL_WHOAMI: CommandSpec = cmd(
    "acl|whoami",
    2,
    &["noscript", "loading", "stale"],
    &["@slow"],
)
.docs(doc(
    "server",
    "6.0.0",
    "Returns the user the current connection is authenticated as.",
    "O(1)",
))
.handler(Handler::Acl(whoami));

const ACL_SETUSER: CommandSpec = cmd(
    "acl|setuser",
    -3,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "6.0.0",
        "Creates a user or changes the access rules of a user.",
        "O(N), N being the number of rules given.",
    )
    .history(&[
        ("6.2.0", "Pub/Sub channel patterns."),
        ("7.0.0", "Selectors, and key permissions by kind of access."),
    ])
    .args(&[arg("username", Str), arg("rule", Str).opt().multi()]),
)
.handler(Handler::Acl(setuser));

const ACL_GETUSER: CommandSpec = cmd(
    "acl|getuser",
    3,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "6.0.0",
        "Returns the access rules of a user.",
        "O(N), N being the number of passwords, command rules and patterns of the user.",
    )
    .history(&[
        ("6.2.0", "Pub/Sub channel patterns."),
        (
            "7.0.0",
            "Selectors; key and channel patterns shown as rules rather than lists.",
        ),
    ])
    .args(&[arg("username", Str)]),
)
.handler(Handler::Acl(getuser));

const ACL_DELUSER: CommandSpec = cmd(
    "acl|deluser",
    -3,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "6.0.0",
        "Deletes users and their access rules.",
        "O(1) amortized per user.",
    )
    .args(&[arg("username", Str).multi()]),
)
.handler(Handler::Acl(deluser));

const ACL_LIST: CommandSpec = cmd(
    "acl|list",
    2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "6.0.0",
    "Returns the rules of every user in the format of the ACL file.",
    "O(N), N being the number of users.",
))
.handler(Handler::Acl(list));

const ACL_USERS: CommandSpec = cmd(
    "acl|users",
    2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "6.0.0",
    "Returns the names of all users.",
    "O(N), N being the number of users.",
))
.handler(Handler::Acl(users));

const ACL_CAT: CommandSpec = cmd("acl|cat", -2, &["noscript", "loading", "stale"], &["@slow"])
    .docs(
        doc(
            "server",
            "6.0.0",
            "Returns the ACL category names, or the commands of one category.",
            "O(1), the categories and commands being fixed.",
        )
        .args(&[arg("categoryname", Str).opt()]),
    )
    .handler(Handler::Acl(cat));

const ACL_GENPASS: CommandSpec = cmd(
    "acl|genpass",
    -2,
    &["noscript", "loading", "stale"],
    &["@slow"],
)
.docs(
    doc(
        "server",
        "6.0.0",
        "Returns a random password of 256 bits, or of the given number of bits, in hex digits.",
        "O(1)",
    )
    .args(&[arg("bits", Integer).opt()]),
)
.handler(Handler::Acl(genpass));

const ACL_DRYRUN: CommandSpec = cmd(
    "acl|dryrun",
    -4,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "7.0.0",
        "Tells whether a user could run a command, without running it.",
        "O(1)",
    )
    .args(&[
        arg("username", Str),
        arg("command", Str),
        arg("arg", Str).opt().multi(),
    ]),
)
.handler(Handler::Acl(dryrun));

const ACL_LOG: CommandSpec = cmd(
    "acl|log",
    -2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "6.0.0",
        "Lists the latest requests the ACL refused and failed authentications, or clears the list.",
        "O(N), N being the number of entries listed.",
    )
    .args(&[arg("operation", OneOf).opt().sub(&[
        arg("count", Integer),
        arg("reset", PureToken).token("RESET"),
    ])]),
)
.handler(Handler::Acl(log));

const ACL_LOAD: CommandSpec = cmd(
    "acl|load",
    2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "6.0.0",
    "Reloads users from the ACL file; refused here, where users come from the configuration and ACL SETUSER.",
    "O(N), N being the number of users.",
))
.handler(Handler::Acl(no_acl_file));

const ACL_SAVE: CommandSpec = cmd(
    "acl|save",
    2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "6.0.0",
    "Saves users to the ACL file; refused here, where users come from the configuration and ACL SETUSER.",
    "O(N), N being the number of users.",
))
.handler(Handler::Acl(no_acl_file));

const ACL_HELP: CommandSpec = cmd("acl|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "server",
        "6.0.0",
        "Lists the ACL subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Acl(help));

pub const ACL: CommandSpec = cmd("acl", -2, &[], &["@slow"])
    .docs(doc(
        "server",
        "6.0.0",
        "Groups the subcommands that manage users and their access rules.",
        "Varies by subcommand.",
    ))
    .subs(&[
        ACL_WHOAMI,
        ACL_SETUSER,
        ACL_GETUSER,
        ACL_DELUSER,
        ACL_LIST,
        ACL_USERS,
        ACL_CAT,
        ACL_GENPASS,
        ACL_DRYRUN,
        ACL_LOG,
        ACL_LOAD,
        ACL_SAVE,
        ACL_HELP,
    ]);

/// Runs `ACL ...` (`args` as received; `me` the name of the connection's user, for WHOAMI) as a
/// connection would after admission: the subcommand resolved, its arity checked, its handler
/// called.
#[cfg(test)]
pub fn acl_command(acl: &parking_lot::RwLock<crate::acl::Acl>, me: &[u8], args: &[Bytes]) -> Reply {
    let base: &'static CommandSpec = &ACL;
    match command_table::resolve_in(base, args) {
        Ok(spec) => match spec.handler {
            Some(Handler::Acl(f)) => {
                let log = parking_lot::Mutex::new(crate::acl::log::AclLog::new(128));
                f(
                    &AclCtx {
                        acl,
                        me,
                        log: &log,
                        now_ms: 0,
                    },
                    args,
                )
            }
            // ACL's subcommands are all declared with Acl handlers (tested).
            _ => reply::err_string(format!("ERR '{}' does not run here", spec.name)),
        },
        Err(r) => r,
    }
}

fn whoami(ctx: &AclCtx<'_>, _: &[Bytes]) -> Reply {
    Reply::bulk(ctx.me)
}

fn setuser(ctx: &AclCtx<'_>, args: &[Bytes]) -> Reply {
    let rules: Vec<&[u8]> = args[3..].iter().map(|a| &a[..]).collect();
    match ctx.acl.write().set_user(&args[2], &rules) {
        Ok(()) => reply::ok(),
        Err(e) => e.to_reply(),
    }
}

fn deluser(ctx: &AclCtx<'_>, args: &[Bytes]) -> Reply {
    let names: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
    match ctx.acl.write().del_user(&names) {
        Ok(n) => Reply::Integer(n as i64),
        Err(e) => e.to_reply(),
    }
}

fn getuser(ctx: &AclCtx<'_>, args: &[Bytes]) -> Reply {
    match ctx.acl.read().user(&args[2]) {
        Some(u) => u.getuser_reply(),
        None => Reply::Null,
    }
}

fn list(ctx: &AclCtx<'_>, _: &[Bytes]) -> Reply {
    let lines = ctx.acl.read().users().into_iter().map(|u| {
        let mut line = b"user ".to_vec();
        line.extend_from_slice(u.name());
        line.push(b' ');
        line.extend_from_slice(&u.describe());
        Reply::Bulk(Bytes::from(line))
    });
    Reply::Array(lines.collect())
}

fn users(ctx: &AclCtx<'_>, _: &[Bytes]) -> Reply {
    let acl = ctx.acl.read();
    Reply::Array(acl.user_names().into_iter().map(Reply::bulk).collect())
}

fn cat(ctx: &AclCtx<'_>, args: &[Bytes]) -> Reply {
    let acl = ctx.acl.read();
    match args.get(2) {
        None => Reply::Array(acl.categories().into_iter().map(Reply::bulk).collect()),
        Some(_) if args.len() > 3 => syntax(args),
        Some(name) => match std::str::from_utf8(name)
            .ok()
            .and_then(|n| acl.category_commands(n))
        {
            Some(names) => Reply::Array(names.into_iter().map(Reply::bulk).collect()),
            None => err_with(b"ERR Unknown category '", truncated(name, 128), b"'"),
        },
    }
}

fn genpass(_: &AclCtx<'_>, args: &[Bytes]) -> Reply {
    if args.len() > 3 {
        return syntax(args);
    }
    let bits = match args.get(2) {
        None => 256,
        Some(a) => match parse_long(a) {
            None => return Reply::error("ERR value is not an integer or out of range"),
            Some(b) if !(1..=4096).contains(&b) => return Reply::error(
                "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
            ),
            Some(b) => b as usize,
        },
    };
    let chars = bits.div_ceil(4);
    let mut raw = vec![0u8; chars.div_ceil(2)];
    rand::thread_rng().fill_bytes(&mut raw);
    let mut h = hex(&raw);
    h.truncate(chars);
    Reply::Bulk(Bytes::from(h))
}

/// Whether a user could run a command line: found, checked for arity and permissions as
/// admission would, among the commands the ACL knows.
fn dryrun(ctx: &AclCtx<'_>, args: &[Bytes]) -> Reply {
    let (name, cmd_args) = (&args[2], &args[3..]);
    let acl = ctx.acl.read();
    let Some(user) = acl.user(name) else {
        return err_with(b"ERR User '", name, b"' not found");
    };
    let Some(spec) = acl.command(cmd_args) else {
        return err_with(b"ERR Command '", &args[3], b"' not found");
    };
    if !command_table::check_arity(spec, cmd_args.len()) {
        return reply::wrong_arity(spec.name);
    }
    match user.check(spec.name, cmd_args) {
        Ok(()) => reply::ok(),
        Err(d) => Reply::Bulk(Bytes::from(d.dryrun_text())),
    }
}

/// ACL LOG [count | RESET]: the newest refusals (10 without a count; a negative count lists
/// none, as in Redis), or clears them.
fn log(ctx: &AclCtx<'_>, args: &[Bytes]) -> Reply {
    let count = match args.get(2) {
        None => crate::acl::log::DEFAULT_LISTED,
        Some(_) if args.len() > 3 => return syntax(args),
        Some(a) if a.eq_ignore_ascii_case(b"reset") => {
            ctx.log.lock().reset();
            return reply::ok();
        }
        Some(a) => match parse_long(a) {
            Some(n) => usize::try_from(n).unwrap_or(0),
            None => return Reply::error("ERR value is not an integer or out of range"),
        },
    };
    ctx.log.lock().reply(count, ctx.now_ms)
}

fn no_acl_file(_: &AclCtx<'_>, _: &[Bytes]) -> Reply {
    Reply::error(
        "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.",
    )
}

fn help(_: &AclCtx<'_>, _: &[Bytes]) -> Reply {
    help::reply(&ACL)
}

/// Redis's answer to extra arguments a subcommand's arity lets through.
fn syntax(args: &[Bytes]) -> Reply {
    let mut t = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    t.extend_from_slice(truncated(&args[1], 128));
    t.extend_from_slice(b"'. Try ");
    t.extend_from_slice(&args[0].to_ascii_uppercase());
    t.extend_from_slice(b" HELP.");
    Reply::Error(Bytes::from(t))
}

fn err_with(prefix: &[u8], middle: &[u8], suffix: &[u8]) -> Reply {
    let mut t = prefix.to_vec();
    t.extend_from_slice(middle);
    t.extend_from_slice(suffix);
    Reply::Error(Bytes::from(t))
}

/// At most `n` bytes of `s`, as C's `%.128s` prints an argument.
fn truncated(s: &[u8], n: usize) -> &[u8] {
    &s[..s.len().min(n)]
}

/// Redis's `string2ll` followed by a range check for `long`: strict decimal.
fn parse_long(s: &[u8]) -> Option<i64> {
    let digits = s.strip_prefix(b"-").unwrap_or(s);
    let leading_ok = match digits {
        [b'0'] => s.len() == 1,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !leading_ok {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_long_strict() {
        assert_eq!(parse_long(b"12"), Some(12));
        assert_eq!(parse_long(b"-3"), Some(-3));
        assert_eq!(parse_long(b"0"), Some(0));
        for bad in [
            &b"01"[..],
            b"+1",
            b" 1",
            b"",
            b"-",
            b"-0",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_long(bad), None, "{bad:?}");
        }
    }
}
