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

const CONFIG_REWRITE: CommandSpec = cmd(
    "config|rewrite",
    2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(doc(
    "server",
    "2.8.0",
    "Writes the running configuration into the configuration file the server started with.",
    "O(1)",
))
.handler(Handler::Conn(rewrite));

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
    .subs(&[
        CONFIG_GET,
        CONFIG_SET,
        CONFIG_RESETSTAT,
        CONFIG_REWRITE,
        CONFIG_HELP,
    ]);

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
        &ctx.shared.clients.memory.evicted,
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

fn rewrite(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(match rewrite_file(ctx) {
        Ok(()) => reply::ok(),
        Err(e) => e,
    })
}

/// Rewrites the configuration file in place: the new text goes to a file beside it, synced,
/// then renamed over it, so a crash leaves the old file or the new one, never a mix.
fn rewrite_file(ctx: &Ctx<'_>) -> Result<(), Reply> {
    let cfg = ctx.shared.config.read().clone();
    let Some(path) = cfg.config_file.clone() else {
        return Err(reply::err_string(
            "ERR The server is running without a config file".into(),
        ));
    };
    let failed = |why: String| reply::err_string(format!("ERR Rewriting config file: {why}"));
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(failed(e.to_string())),
    };
    // Users go in only when the ACL changed since start: otherwise the file's own entries
    // (perhaps with clear-text passwords its owner chose) stay as written.
    let live = user_lines(&ctx.shared.acl.read());
    let at_start = crate::auth::acl_from_config(&cfg)
        .map(|a| user_lines(&a))
        .unwrap_or_default();
    let users = (live != at_start).then_some(live);
    let text = cfg
        .rewrite_toml(&old, users.as_deref())
        .map_err(|e| failed(format!("{}: {e}", path.display())))?;
    write_atomically(&path, text.as_bytes()).map_err(|e| failed(e.to_string()))?;
    tracing::info!(file = %path.display(), "configuration rewritten (CONFIG REWRITE)");
    Ok(())
}

/// Every ACL user as a `user` entry takes it (ACL LIST's lines without `user `).
fn user_lines(acl: &crate::acl::Acl) -> Vec<String> {
    acl.users()
        .into_iter()
        .map(|u| {
            let mut line = String::from_utf8_lossy(u.name()).into_owned();
            line.push(' ');
            line.push_str(&String::from_utf8_lossy(&u.describe()));
            line
        })
        .collect()
}

fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path.file_name().map_or_else(
        || std::ffi::OsString::from("config"),
        std::ffi::OsStr::to_os_string,
    );
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(&name);
    tmp_name.push(".rewrite");
    let tmp = dir.join(tmp_name);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
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

/// Whether setting `name` to `value` leaves `current` as it is.
fn unchanged(current: &crate::config::Config, name: &str, value: &[u8]) -> bool {
    let mut probe = current.clone();
    probe.set(name, &String::from_utf8_lossy(value)).is_ok() && probe.get(name) == current.get(name)
}

/// The system's reason a listener failed.
fn cause(e: &crate::listen::ListenError) -> String {
    match e {
        crate::listen::ListenError::Bind { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Changes options (all or none): `args` are option, value pairs.
fn set_all(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(reply::wrong_arity("config|set"));
    }
    // Every name is checked before any value, as Redis does: the first unknown, immutable or
    // repeated one fails the whole call. A parameter fixed at start accepts the value it has
    // (a tool that sets every parameter CONFIG GET lists changes nothing and succeeds).
    let current = ctx.shared.config.read().clone();
    let mut seen: Vec<&'static str> = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks_exact(2) {
        let name = String::from_utf8_lossy(&pair[0]);
        let Some(key) = crate::config::key(&name) else {
            return Err(reply::err_string(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
            )));
        };
        let why = if !key.mutable && !unchanged(&current, key.name, &pair[1]) {
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
    let mut next = current.clone();
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
    // What can fail to apply goes first: on a failure nothing has changed.
    let relevel = next.log_level != current.log_level;
    if relevel {
        crate::config::apply_log_level(&next.log_level).map_err(|why| {
            reply::err_string(format!(
                "ERR CONFIG SET failed (possibly related to argument 'loglevel') - {why}"
            ))
        })?;
    }
    if next.port != current.port || next.bind != current.bind {
        let port = ctx
            .shared
            .listeners
            .rebind(ctx.shared, &next.bind, next.port)
            .map_err(|e| {
                let (name, why) = if next.port != current.port {
                    (
                        "port",
                        format!("Unable to listen on this port: {}", cause(&e)),
                    )
                } else {
                    (
                        "bind",
                        format!("Failed to bind to specified addresses: {}", cause(&e)),
                    )
                };
                if relevel {
                    let _ = crate::config::apply_log_level(&current.log_level);
                }
                reply::err_string(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                ))
            })?;
        next.port = port;
        ctx.shared.port.store(port, Ordering::Relaxed);
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
    ctx.shared
        .clients
        .memory
        .set_limit(next.maxmemory_clients.bytes(next.maxmemory));
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
