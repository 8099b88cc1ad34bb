//! CONFIG GET pattern [pattern ...] | SET key value [key value ...] | RESETSTAT | HELP
//! over the keys of [`crate::config::KEYS`].

use std::sync::atomic::Ordering;

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::{Ctx, Outcome};
use crate::config::KEYS;
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    Outcome::Reply(if is(sub, "get") {
        get(ctx, &args[2..])
    } else if is(sub, "set") {
        set(ctx, &args[2..]).unwrap_or_else(|e| e)
    } else if is(sub, "resetstat") {
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
            e.calls.store(0, Ordering::Relaxed);
            e.micros.store(0, Ordering::Relaxed);
        }
        reply::ok()
    } else {
        Reply::Array(
            [
                "CONFIG <subcommand> [<arg> ...]:",
                "GET <pattern> [<pattern> ...]",
                "    Options whose names match a pattern, with their values.",
                "SET <option> <value> [<option> <value> ...]",
                "    Changes options at run time (all or none).",
                "RESETSTAT",
                "    Zeroes the counters INFO reports.",
                "HELP",
                "    This text.",
            ]
            .into_iter()
            .map(Reply::simple)
            .collect(),
        )
    })
}

fn get(ctx: &Ctx<'_>, patterns: &[Bytes]) -> Reply {
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

fn set(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(reply::wrong_arity("config|set"));
    }
    let mut next = ctx.shared.config.read().clone();
    for pair in args.chunks_exact(2) {
        let name = String::from_utf8_lossy(&pair[0]).into_owned();
        let value = String::from_utf8_lossy(&pair[1]).into_owned();
        let Some(key) = crate::config::key(&name) else {
            return Err(reply::err_string(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
            )));
        };
        if !key.mutable {
            return Err(reply::err_string(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
            )));
        }
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
    *ctx.shared.config.write() = next;
    Ok(reply::ok())
}
