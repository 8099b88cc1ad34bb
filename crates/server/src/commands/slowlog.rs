//! SLOWLOG GET [count] | LEN | RESET | HELP

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::Integer;
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

const SLOWLOG_GET: CommandSpec = cmd(
    "slowlog|get",
    -2,
    &["admin", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.tips(&["request_policy:all_nodes", "nondeterministic_output"])
.docs(
    doc(
        "server",
        "2.2.12",
        "Returns the newest entries of the slow query log.",
        "O(N), N being the number of entries returned.",
    )
    .history(&[("4.0.0", "Entries include the client's address and name.")])
    .args(&[arg("count", Integer).opt()]),
)
.handler(Handler::Conn(get));

const SLOWLOG_LEN: CommandSpec = cmd(
    "slowlog|len",
    2,
    &["admin", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.tips(&[
    "request_policy:all_nodes",
    "response_policy:agg_sum",
    "nondeterministic_output",
])
.docs(doc(
    "server",
    "2.2.12",
    "Returns the number of entries in the slow query log.",
    "O(1)",
))
.handler(Handler::Conn(len));

const SLOWLOG_RESET: CommandSpec = cmd(
    "slowlog|reset",
    2,
    &["admin", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
.docs(doc(
    "server",
    "2.2.12",
    "Empties the slow query log.",
    "O(N), N being the number of entries removed.",
))
.handler(Handler::Conn(reset));

const SLOWLOG_HELP: CommandSpec = cmd("slowlog|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "server",
        "6.2.0",
        "Lists the SLOWLOG subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(help));

pub const SLOWLOG: CommandSpec = cmd("slowlog", -2, &[], &["@slow"])
    .docs(doc(
        "server",
        "2.2.12",
        "Groups the subcommands that inspect the slow query log.",
        "Varies by subcommand.",
    ))
    .subs(&[SLOWLOG_GET, SLOWLOG_LEN, SLOWLOG_RESET, SLOWLOG_HELP]);

fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 3 {
        return Outcome::Reply(reply::err_string(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
            String::from_utf8_lossy(&args[1])
        )));
    }
    let count = match args.get(2) {
        None => Some(10),
        Some(a) => match reply::parse_i64(a) {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                return Outcome::Reply(Reply::error(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        },
    };
    Outcome::Reply(ctx.shared.slowlog.get(count))
}

fn len(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Integer(ctx.shared.slowlog.len() as i64))
}

fn reset(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    ctx.shared.slowlog.reset();
    Outcome::Reply(reply::ok())
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&SLOWLOG))
}
