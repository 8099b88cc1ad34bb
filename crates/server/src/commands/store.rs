//! STORE CREATE name [PREFIX p] [REWIND seconds] | DESCRIBE name | LIST | DELETE name |
//! ROLLBACK name | HELP — stores and their versions (see `crate::stores`). Changes run off the
//! connection thread and reply once durable.

use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;

use rialto_keyspace::{StoreError, StoreMeta, VersionInfo};

use super::util::is;
use super::{Ctx, Outcome};
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    if is(sub, "list") {
        let names = ctx
            .shared
            .keyspace
            .catalog()
            .iter()
            .map(|s| Reply::bulk(s.name.as_bytes()))
            .collect();
        return Outcome::Reply(Reply::Array(names));
    }
    if is(sub, "describe") {
        let name = String::from_utf8_lossy(&args[2]).into_owned();
        let cat = ctx.shared.keyspace.catalog();
        return Outcome::Reply(match cat.get(&name) {
            Some(s) => describe(s),
            None => error(&StoreError::NoSuchStore(name)),
        });
    }
    if is(sub, "help") {
        return Outcome::Reply(help());
    }
    let shared = Arc::clone(ctx.shared);
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    let job: Box<dyn FnOnce() -> Result<Reply, StoreError> + Send> = if is(sub, "create") {
        let (prefix, rewind_ms) = match create_options(&name, &args[3..]) {
            Ok(o) => o,
            Err(r) => return Outcome::Reply(r),
        };
        Box::new(move || {
            let m = shared.keyspace.create_store(&name, &prefix, rewind_ms)?;
            Ok(describe(&m))
        })
    } else if is(sub, "delete") {
        if args.len() != 3 {
            return Outcome::Reply(reply::wrong_arity("store|delete"));
        }
        Box::new(move || {
            shared.keyspace.delete_store(&name)?;
            Ok(reply::ok())
        })
    } else if is(sub, "rollback") {
        Box::new(move || {
            let m = shared.keyspace.rollback_store(&name)?;
            Ok(describe(&m))
        })
    } else {
        return Outcome::Reply(reply::syntax());
    };
    Outcome::Later(Box::pin(async move {
        match tokio::task::spawn_blocking(job).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => error(&e),
            Err(e) => reply::err_string(format!("ERR store command failed: {e}")),
        }
    }))
}

/// The Redis-style error reply of a store error.
pub fn error(e: &StoreError) -> Reply {
    reply::store_error(e)
}

fn create_options(name: &str, opts: &[Bytes]) -> Result<(Vec<u8>, u64), Reply> {
    let mut prefix = format!("{name}:").into_bytes();
    let mut rewind_ms = 0u64;
    let mut i = 0;
    while i < opts.len() {
        let value = opts.get(i + 1).ok_or_else(reply::syntax)?;
        if is(&opts[i], "prefix") {
            prefix = value.to_vec();
        } else if is(&opts[i], "rewind") {
            let secs = reply::int_arg(value)?;
            if !(0..=i64::MAX / 1000).contains(&secs) {
                return Err(Reply::error(
                    "ERR REWIND must be a non-negative number of seconds",
                ));
            }
            rewind_ms = secs as u64 * 1000;
        } else {
            return Err(reply::syntax());
        }
        i += 2;
    }
    Ok((prefix, rewind_ms))
}

fn version(prefix: &str, v: &VersionInfo, out: &mut Vec<(Reply, Reply)>) {
    let num = |n: u64| Reply::Integer(n.min(i64::MAX as u64) as i64);
    if v.number == 0 {
        out.push((Reply::bulk(format!("{prefix}-version")), Reply::Null));
        return;
    }
    out.push((
        Reply::bulk(format!("{prefix}-version")),
        Reply::Integer(i64::from(v.number)),
    ));
    out.push((Reply::bulk(format!("{prefix}-records")), num(v.records)));
    out.push((Reply::bulk(format!("{prefix}-bytes")), num(v.bytes)));
    out.push((
        Reply::bulk(format!("{prefix}-created-ms")),
        Reply::Integer(v.created_ms),
    ));
}

/// A store as STORE DESCRIBE reports it (a map; a flat array in RESP2).
pub fn describe(s: &StoreMeta) -> Reply {
    let mut out = vec![
        (Reply::bulk("name"), Reply::bulk(s.name.as_bytes())),
        (Reply::bulk("prefix"), Reply::bulk(&s.prefix)),
    ];
    version("current", &s.current, &mut out);
    version("previous", &s.previous, &mut out);
    out.push((
        Reply::bulk("rewind-seconds"),
        Reply::Integer((s.rewind_ms / 1000).min(i64::MAX as u64) as i64),
    ));
    match s.pushing {
        Some(p) => {
            out.push((
                Reply::bulk("pushing-version"),
                Reply::Integer(i64::from(p.version)),
            ));
            out.push((
                Reply::bulk("pushing-started-ms"),
                Reply::Integer(p.started_ms),
            ));
        }
        None => out.push((Reply::bulk("pushing-version"), Reply::Null)),
    }
    out.push((Reply::bulk("created-ms"), Reply::Integer(s.created_ms)));
    Reply::Map(out)
}

fn help() -> Reply {
    Reply::Array(
        [
            "STORE <subcommand> [<arg> ...]:",
            "CREATE <name> [PREFIX <prefix>] [REWIND <seconds>]",
            "    Creates a store owning keys that start with <prefix> (default '<name>:').",
            "    REWIND: how far before a push's start streamed writes are replayed (default 0).",
            "DESCRIBE <name>",
            "    The store's prefix, versions and push in progress.",
            "LIST",
            "    Every store's name.",
            "DELETE <name>",
            "    Deletes the store and, in the background, its data.",
            "ROLLBACK <name>",
            "    Makes the previous version current again.",
            "HELP",
            "    This text.",
        ]
        .into_iter()
        .map(Reply::simple)
        .collect(),
    )
}
