//! LATENCY LATEST | HISTORY | RESET | GRAPH | DOCTOR | HELP — the latency monitor
//! (`crate::latency`); LATENCY HISTOGRAM — the per-command latency histograms
//! (`crate::latency_histograms`).

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::String as Str;
use crate::command_table::{self, arg, cmd, doc, CommandSpec};
use crate::reply;

const FLAGS: &[&str] = &["admin", "noscript", "loading", "stale"];
const ACL: &[&str] = &["@admin", "@slow", "@dangerous"];
const TIPS: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_nodes",
    "response_policy:special",
];

const LATENCY_HELP: CommandSpec = cmd("latency|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "server",
        "2.8.13",
        "Lists the LATENCY subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(help));

const LATENCY_GRAPH: CommandSpec = cmd("latency|graph", 3, FLAGS, ACL)
    .tips(TIPS)
    .docs(
        doc(
            "server",
            "2.8.13",
            "Draws the latency samples of an event.",
            "O(1)",
        )
        .args(&[arg("event", Str)]),
    )
    .handler(Handler::Conn(graph));

const LATENCY_LATEST: CommandSpec = cmd("latency|latest", 2, FLAGS, ACL)
    .tips(TIPS)
    .docs(doc(
        "server",
        "2.8.13",
        "Returns each event's newest latency sample and its highest.",
        "O(1)",
    ))
    .handler(Handler::Conn(latest));

const LATENCY_HISTORY: CommandSpec = cmd("latency|history", 3, FLAGS, ACL)
    .tips(TIPS)
    .docs(
        doc(
            "server",
            "2.8.13",
            "Returns an event's latency samples with their times.",
            "O(1)",
        )
        .args(&[arg("event", Str)]),
    )
    .handler(Handler::Conn(history));

const LATENCY_DOCTOR: CommandSpec = cmd("latency|doctor", 2, FLAGS, ACL)
    .tips(TIPS)
    .docs(doc(
        "server",
        "2.8.13",
        "Describes the latency samples in words, with advice.",
        "O(1)",
    ))
    .handler(Handler::Conn(doctor));

const LATENCY_HISTOGRAM: CommandSpec = cmd("latency|histogram", -2, FLAGS, ACL)
    .tips(TIPS)
    .docs(
        doc(
            "server",
            "7.0.0",
            "Returns the cumulative distribution of the latencies of some commands, or of all.",
            "O(N), N being the number of commands with latency data returned.",
        )
        .args(&[arg("command", Str).opt().multi()]),
    )
    .handler(Handler::Conn(histogram));

const LATENCY_RESET: CommandSpec = cmd("latency|reset", -2, FLAGS, ACL)
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .docs(
        doc(
            "server",
            "2.8.13",
            "Forgets the latency samples of the events named, or of all.",
            "O(1)",
        )
        .args(&[arg("event", Str).opt().multi()]),
    )
    .handler(Handler::Conn(reset));

pub const LATENCY: CommandSpec = cmd("latency", -2, &[], &["@slow"])
    .docs(doc(
        "server",
        "2.8.13",
        "Groups the subcommands of the latency monitor.",
        "Depends on subcommand.",
    ))
    .subs(&[
        LATENCY_DOCTOR,
        LATENCY_GRAPH,
        LATENCY_HISTORY,
        LATENCY_LATEST,
        LATENCY_RESET,
        LATENCY_HISTOGRAM,
        LATENCY_HELP,
    ]);

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&LATENCY))
}

fn latest(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let int = |n: u64| Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    Outcome::Reply(Reply::Array(
        ctx.shared
            .latency
            .latest()
            .into_iter()
            .map(|l| {
                Reply::Array(vec![
                    Reply::bulk(l.event),
                    int(l.time),
                    int(l.latency_ms),
                    int(l.max_ms),
                ])
            })
            .collect(),
    ))
}

fn history(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let int = |n: u64| Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    Outcome::Reply(Reply::Array(
        ctx.shared
            .latency
            .history(&args[2])
            .into_iter()
            .map(|(t, ms)| Reply::Array(vec![int(t), int(ms)]))
            .collect(),
    ))
}

fn reset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let names: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
    Outcome::Reply(Reply::Integer(ctx.shared.latency.reset(&names) as i64))
}

/// LATENCY HISTOGRAM [command ...]: each command (or subcommand, `client|id`) with calls
/// recorded, as Redis 7.0 replies: a map of name to `calls` and `histogram_usec` (the
/// cumulative counts at each reporting level). A command named is followed by those of its
/// subcommands that have calls; an unknown name is skipped; none named: every command.
fn histogram(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let merged = ctx.shared.command_latencies.merged();
    let mut wanted: Vec<(usize, &'static CommandSpec)> = Vec::new();
    if args.len() == 2 {
        wanted.extend(command_table::slots());
    }
    for name in &args[2..] {
        let Some(spec) = command_table::lookup_fullname(name) else {
            continue;
        };
        let top = spec.name.split('|').next().unwrap_or_default();
        let Some(index) = command_table::index_of(top.as_bytes()) else {
            continue;
        };
        let slot = command_table::slot_of(index, spec);
        wanted.push((slot, spec));
        for (i, sub) in spec.subcommands.iter().enumerate() {
            wanted.push((slot + 1 + i, sub));
        }
    }
    let int = |n: u64| Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let entries = wanted
        .into_iter()
        .filter_map(|(slot, spec)| {
            let h = merged.get(slot)?.as_ref()?;
            let levels = crate::latency_histograms::cdf(h)
                .into_iter()
                .map(|(micros, calls)| (int(micros), int(calls)))
                .collect();
            Some((
                Reply::bulk(spec.name),
                Reply::Map(vec![
                    (Reply::bulk("calls"), int(h.len())),
                    (Reply::bulk("histogram_usec"), Reply::Map(levels)),
                ]),
            ))
        })
        .collect();
    Outcome::Reply(Reply::Map(entries))
}

fn graph(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(match ctx.shared.latency.graph(&args[2]) {
        Some(text) => Reply::Verbatim {
            format: *b"txt",
            text: text.into(),
        },
        None => reply::err_string(format!(
            "ERR No samples available for event '{}'",
            String::from_utf8_lossy(&args[2])
        )),
    })
}

fn doctor(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Verbatim {
        format: *b"txt",
        text: ctx.shared.latency.doctor().into(),
    })
}
