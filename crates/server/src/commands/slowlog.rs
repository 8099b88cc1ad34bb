//! SLOWLOG GET [count] | LEN | RESET | HELP

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::{Ctx, Outcome};
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let log = &ctx.shared.slowlog;
    Outcome::Reply(if is(sub, "get") && args.len() > 3 {
        reply::err_string(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
            String::from_utf8_lossy(sub)
        ))
    } else if is(sub, "get") {
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
        log.get(count)
    } else if is(sub, "len") {
        Reply::Integer(log.len() as i64)
    } else if is(sub, "reset") {
        log.reset();
        reply::ok()
    } else {
        Reply::Array(
            [
                "SLOWLOG <subcommand> [<arg> ...]:",
                "GET [<count>]",
                "    The newest <count> entries (10 by default, -1 for all): id, Unix time,",
                "    execution microseconds, arguments, client address, client name.",
                "LEN",
                "    How many entries the log holds.",
                "RESET",
                "    Empties the log.",
                "HELP",
                "    This text.",
            ]
            .into_iter()
            .map(Reply::simple)
            .collect(),
        )
    })
}
