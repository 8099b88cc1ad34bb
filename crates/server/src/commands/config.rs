//! CONFIG GET pattern [pattern ...] | SET key value [key value ...] | RESETSTAT | HELP
//! over the keys of [`crate::config::KEYS`].

use std::sync::atomic::Ordering;

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{Block, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::config::KEYS;
use crate::reply;

const CONFIG_GET: CommandSpec = cmd(
    "config|get",
    -3,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "2.0.0",
        "Returns the configuration parameters matching the patterns, with their values.",
        "O(N), N being the number of parameters requested.",
    )
    .history(&[("7.0.0", "Takes several patterns.")])
    .args(&[arg("parameter", Block)
        .multi()
        .sub(&[arg("parameter", Str)])]),
)
.handler(Handler::Conn(get));

const CONFIG_SET: CommandSpec = cmd(
    "config|set",
    -4,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
.docs(
    doc(
        "server",
        "2.0.0",
        "Changes configuration parameters while the server runs.",
        "O(N), N being the number of parameters given.",
    )
    .history(&[("7.0.0", "Sets several parameters in one call.")])
    .args(&[arg("parameter_value", Block)
        .multi()
        .sub(&[arg("parameter", Str), arg("value", Str)])]),
)
.handler(Handler::Conn(set));

const CONFIG_RESETSTAT: CommandSpec = cmd(
    "config|resetstat",
    2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "2.0.0",
    "Zeroes the statistics reported by INFO.",
    "O(1)",
))
.handler(Handler::Conn(resetstat));

const CONFIG_HELP: CommandSpec = cmd("config|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "server",
        "5.0.0",
        "Lists the CONFIG subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(help));

pub const CONFIG: CommandSpec = cmd("config", -2, &[], &["@slow"])
    .docs(doc(
        "server",
        "2.0.0",
        "Groups the subcommands that read and change the server configuration.",
        "Varies by subcommand.",
    ))
    .subs(&[CONFIG_GET, CONFIG_SET, CONFIG_RESETSTAT, CONFIG_HELP]);

fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(matching(ctx, &args[2..]))
}

fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(set_all(ctx, &args[2..]).unwrap_or_else(|e| e))
}

fn resetstat(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let s = &ctx.shared.stats;
    for c in [
        &s.commands,
        &s.net_input_bytes,
        &s.net_output_bytes,
        &s.expired_keys,
        &s.rejected_protocol,
        &s.auth_failures,
    ] {
        c.store(0, Ordering::Relaxed);
    }
    for e in ctx.shared.registry.entries() {
        for c in [&e.calls, &e.micros, &e.rejected, &e.failed] {
            c.store(0, Ordering::Relaxed);
        }
    }
    ctx.shared.errors.reset();
    ctx.shared.command_latencies.reset();
    Outcome::Reply(reply::ok())
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&CONFIG))
}

/// The options whose names match a pattern, with their values.
fn matching(ctx: &Ctx<'_>, patterns: &[Bytes]) -> Reply {
    let cfg = ctx.shared.config.read();
    let mut pairs = Vec::new();
    for k in KEYS {
        if patterns
            .iter()
            .any(|p| crate::glob::glob_match(p, k.name.as_bytes(), true))
        {
            let v = cfg.get(k.name).unwrap_or_default();
            pairs.push((Reply::bulk(k.name), Reply::bulk(v)));
        }
    }
    Reply::Map(pairs)
}

/// Changes options (all or none): `args` are option, value pairs.
fn set_all(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(reply::wrong_arity("config|set"));
    }
    // Every name is checked before any value, as Redis does: the first unknown, immutable or
    // repeated one fails the whole call.
    let mut seen: Vec<&'static str> = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks_exact(2) {
        let name = String::from_utf8_lossy(&pair[0]);
        let Some(key) = crate::config::key(&name) else {
            return Err(reply::err_string(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
            )));
        };
        // appendfsync is fixed at start; restating the value it has changes nothing and is
        // accepted (Redis's test suites restate it in their overrides).
        let restated = key.name == "appendfsync"
            && ctx.shared.config.read().get(key.name).as_deref()
                == Some(&*String::from_utf8_lossy(&pair[1]).to_ascii_lowercase());
        let why = if !key.mutable && !restated {
            "can't set immutable config"
        } else if seen.contains(&key.name) {
            "duplicate parameter"
        } else {
            seen.push(key.name);
            continue;
        };
        return Err(reply::err_string(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        )));
    }
    let mut next = ctx.shared.config.read().clone();
    for pair in args.chunks_exact(2) {
        let name = String::from_utf8_lossy(&pair[0]).into_owned();
        let value = String::from_utf8_lossy(&pair[1]).into_owned();
        if let Err(e) = next.set(&name, &value) {
            let reason = match e {
                crate::config::ConfigError::Invalid { reason, .. } => reason,
                other => other.to_string(),
            };
            return Err(reply::err_string(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}"
            )));
        }
    }
    // Side effects of keys that live outside the config struct.
    ctx.shared
        .slowlog
        .configure(next.slowlog_log_slower_than, next.slowlog_max_len);
    ctx.shared
        .acl
        .write()
        .set_requirepass(next.requirepass.as_deref().map(str::as_bytes));
    ctx.shared
        .tracking
        .set_max_keys(next.tracking_table_max_keys, next.pubsub_limit);
    ctx.shared
        .latency
        .set_threshold_ms(next.latency_monitor_threshold_ms);
    ctx.shared
        .command_latencies
        .set_enabled(next.latency_tracking);
    ctx.shared.acl_log.lock().set_max_len(next.acllog_max_len);
    ctx.shared.memory_limit.set_limit(next.maxmemory);
    ctx.shared.monitors.set_limit(crate::monitor::limit_of(
        next.obuf_normal,
        next.output_buffer_limit,
    ));
    ctx.shared.keyspace.set_compression(next.compression);
    ctx.shared
        .lacks_good_replicas
        .store(next.lacks_good_replicas(), Ordering::Relaxed);
    crate::server::apply_encodings(&ctx.shared.keyspace, &next);
    *ctx.shared.config.write() = next;
    Ok(reply::ok())
}
