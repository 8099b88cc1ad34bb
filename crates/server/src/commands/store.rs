//! STORE CREATE name [PREFIX p] [REWIND seconds] | DESCRIBE name | LIST | DELETE name |
//! ROLLBACK name [version] | HELP — stores and their versions (see `rialto_keyspace`'s
//! `stores`). Changes run off the connection thread and reply once durable.

use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;

use rialto_keyspace::{PushStatus, StoreError, StoreMeta, VersionInfo};

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{Integer, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;
use crate::server::Shared;

// Rialto's own commands (docs group "rialto"): stores and batch pushes.
const STORE_CREATE: CommandSpec = cmd("store|create",
    -3,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Creates a store owning the keys that start with its prefix (default `NAME:`), with an empty version 1. REWIND: how many seconds before a push's start the writes streamed into the store are replayed onto the pushed version (default 0).",
        "O(1)",
    )
    .args(&[
        arg("name", Str),
        arg("prefix", Str).token("PREFIX").opt(),
        arg("seconds", Integer).token("REWIND").opt(),
    ]),
)
.handler(Handler::Conn(create));

const STORE_DESCRIBE: CommandSpec = cmd("store|describe", 3, &["loading", "stale"], &["@slow"])
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Returns a store's prefix, versions and push in progress, with the push's phase and how far it is.",
            "O(1)",
        )
        .args(&[arg("name", Str)]),
    )
    .handler(Handler::Conn(describe_cmd));

const STORE_LIST: CommandSpec = cmd("store|list", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "rialto",
        "0.1.0",
        "Returns the names of every store.",
        "O(N), N being the number of stores.",
    ))
    .handler(Handler::Conn(list));

const STORE_DELETE: CommandSpec = cmd(
    "store|delete",
    3,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Deletes a store; its data is removed in the background.",
        "O(1); the removal is O(N) in the store's files and streamed keys.",
    )
    .args(&[arg("name", Str)]),
)
.handler(Handler::Conn(delete));

const STORE_ROLLBACK: CommandSpec = cmd(
    "store|rollback",
    -3,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Makes a store's previous version current again and retires the version it leaves. A rollback only goes back: with no older version kept it is refused. With a version, only if that is the version it goes back to; naming the current version changes nothing.",
        "O(1)",
    )
    .args(&[arg("name", Str), arg("version", Integer).opt()]),
)
.handler(Handler::Conn(rollback));

const STORE_HELP: CommandSpec = cmd("store|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "rialto",
        "0.1.0",
        "Lists the STORE subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(help));

pub const STORE: CommandSpec = cmd("store", -2, &["no_multi"], &["@slow"])
    .docs(doc(
        "rialto",
        "0.1.0",
        "Groups the subcommands that manage stores and their versions.",
        "Varies by subcommand.",
    ))
    .subs(&[
        STORE_CREATE,
        STORE_DESCRIBE,
        STORE_LIST,
        STORE_DELETE,
        STORE_ROLLBACK,
        STORE_HELP,
    ]);

fn list(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    if let Some(c) = &ctx.shared.cluster {
        let names = crate::cluster_stores::names(c)
            .into_iter()
            .map(Reply::bulk)
            .collect();
        return Outcome::Reply(Reply::Array(names));
    }
    let names = ctx
        .shared
        .keyspace
        .catalog()
        .iter()
        .map(|s| Reply::bulk(s.name.as_bytes()))
        .collect();
    Outcome::Reply(Reply::Array(names))
}

fn describe_cmd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    if let Some(c) = &ctx.shared.cluster {
        return Outcome::Reply(
            crate::cluster_stores::describe(c, &ctx.shared.keyspace, &name)
                .unwrap_or_else(|| error(&StoreError::NoSuchStore(name))),
        );
    }
    let ks = &ctx.shared.keyspace;
    let cat = ks.catalog();
    Outcome::Reply(match cat.get(&name) {
        Some(s) => {
            // Matched by version: a push's id is the version it loads.
            let live = s.pushing.and_then(|p| {
                ks.push_statuses()
                    .into_iter()
                    .find(|st| st.id == u64::from(p.version) && st.store == s.name)
            });
            describe_with_push(s, live.as_ref())
        }
        None => error(&StoreError::NoSuchStore(name)),
    })
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&STORE))
}

fn create(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    let (prefix, rewind_ms) = match create_options(&name, &args[3..]) {
        Ok(o) => o,
        Err(r) => return Outcome::Reply(r),
    };
    if ctx.shared.cluster.is_some() {
        if rewind_ms > 0 {
            return Outcome::Reply(Reply::error(
                "ERR REWIND is not available in cluster mode: a push replays the writes streamed into its store from its begin on",
            ));
        }
        return blocking(ctx, move |sh| {
            let c = cluster_of(sh)?;
            crate::cluster_stores::create(c, &sh.keyspace, &name, &prefix)?;
            Ok(cluster_describe(sh, c, &name))
        });
    }
    blocking(ctx, move |sh| {
        let m = sh.keyspace.create_store(&name, &prefix, rewind_ms)?;
        Ok(describe(&m))
    })
}

fn delete(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    blocking(ctx, move |sh| {
        match &sh.cluster {
            Some(c) => crate::cluster_stores::delete(c, &sh.keyspace, &name)?,
            None => sh.keyspace.delete_store(&name)?,
        }
        Ok(reply::ok())
    })
}

fn rollback(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    let to = match args.get(3..) {
        Some([]) | None => None,
        Some([v]) => match version_arg(v) {
            Ok(v) => Some(v),
            Err(r) => return Outcome::Reply(r),
        },
        Some(_) => return Outcome::Reply(reply::syntax()),
    };
    blocking(ctx, move |sh| {
        if let Some(c) = &sh.cluster {
            crate::cluster_stores::rollback(c, &sh.keyspace, &name, to)?;
            return Ok(cluster_describe(sh, c, &name));
        }
        let m = sh.keyspace.rollback_store(&name, to)?;
        Ok(describe(&m))
    })
}

fn cluster_of(sh: &Shared) -> Result<&crate::cluster::Cluster, StoreError> {
    sh.cluster
        .as_deref()
        .ok_or_else(|| StoreError::Corrupt("not in cluster mode".into()))
}

fn cluster_describe(sh: &Shared, c: &crate::cluster::Cluster, name: &str) -> Reply {
    crate::cluster_stores::describe(c, &sh.keyspace, name)
        .unwrap_or_else(|| error(&StoreError::NoSuchStore(name.to_string())))
}

/// A version number: a positive integer that fits a version.
fn version_arg(arg: &[u8]) -> Result<u32, Reply> {
    reply::parse_i64(arg)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| Reply::error("ERR invalid version number"))
}

/// Runs a store change off the connection thread; the reply comes once it is durable.
fn blocking(
    ctx: &Ctx<'_>,
    job: impl FnOnce(&Shared) -> Result<Reply, StoreError> + Send + 'static,
) -> Outcome {
    let shared = Arc::clone(ctx.shared);
    Outcome::Later(Box::pin(async move {
        match tokio::task::spawn_blocking(move || job(&shared)).await {
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

/// The `pushing-phase`, `-records`, `-bytes`, `-written-records` and `-elapsed-ms` fields:
/// what `rialto push` polls to show the server's phases while it waits for PUSH COMMIT.
fn push_progress(st: &PushStatus, out: &mut Vec<(Reply, Reply)>) {
    let num = |n: u64| Reply::Integer(n.min(i64::MAX as u64) as i64);
    out.push((Reply::bulk("pushing-phase"), Reply::bulk(st.phase.name())));
    out.push((Reply::bulk("pushing-records"), num(st.records)));
    out.push((Reply::bulk("pushing-bytes"), num(st.bytes)));
    out.push((Reply::bulk("pushing-written-records"), num(st.written)));
    out.push((
        Reply::bulk("pushing-elapsed-ms"),
        num(st.elapsed.as_millis().min(u128::from(u64::MAX)) as u64),
    ));
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

/// A store as STORE DESCRIBE reports it (a map; a flat array in RESP2), without the progress
/// of its push (see [`describe_with_push`]).
pub fn describe(s: &StoreMeta) -> Reply {
    describe_with_push(s, None)
}

/// [`describe`] with the progress of the push in progress, `live`, as the push registry
/// has it (`None`: not registered, as at a start after a crash, or not known here).
pub fn describe_with_push(s: &StoreMeta, live: Option<&PushStatus>) -> Reply {
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
            if let Some(st) = live {
                push_progress(st, &mut out);
            }
        }
        None => out.push((Reply::bulk("pushing-version"), Reply::Null)),
    }
    out.push((Reply::bulk("created-ms"), Reply::Integer(s.created_ms)));
    Reply::Map(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rialto_keyspace::{PushPhase, Pushing};

    use super::*;

    fn meta(pushing: Option<u32>) -> StoreMeta {
        let v = |number| VersionInfo {
            number,
            records: 10,
            bytes: 100,
            created_ms: 5,
        };
        StoreMeta {
            name: "s".into(),
            id: 1,
            prefix: b"s:".to_vec(),
            current: v(2),
            previous: v(1),
            next_version: 4,
            rewind_ms: 0,
            pushing: pushing.map(|version| Pushing {
                version,
                started_ms: 7,
            }),
            created_ms: 1,
        }
    }

    fn field<'a>(r: &'a Reply, name: &str) -> Option<&'a Reply> {
        let Reply::Map(pairs) = r else {
            panic!("not a map: {r:?}")
        };
        pairs
            .iter()
            .find(|(k, _)| *k == Reply::bulk(name))
            .map(|(_, v)| v)
    }

    #[test]
    fn describe_shows_the_phase_and_figures_of_a_registered_push() {
        let st = PushStatus {
            id: 3,
            store: "s".into(),
            owner: Some(9),
            phase: PushPhase::Writing,
            records: 200,
            bytes: 2000,
            written: 50,
            elapsed: Duration::from_millis(1500),
        };
        let r = describe_with_push(&meta(Some(3)), Some(&st));
        assert_eq!(field(&r, "pushing-version"), Some(&Reply::Integer(3)));
        assert_eq!(field(&r, "pushing-phase"), Some(&Reply::bulk("writing")));
        assert_eq!(field(&r, "pushing-records"), Some(&Reply::Integer(200)));
        assert_eq!(field(&r, "pushing-bytes"), Some(&Reply::Integer(2000)));
        let written = field(&r, "pushing-written-records");
        assert_eq!(written, Some(&Reply::Integer(50)));
        let elapsed = field(&r, "pushing-elapsed-ms");
        assert_eq!(elapsed, Some(&Reply::Integer(1500)));
        // Still the last field, as before these were added.
        let Reply::Map(pairs) = &r else {
            unreachable!()
        };
        assert_eq!(pairs.last().map(|p| &p.0), Some(&Reply::bulk("created-ms")));

        // Not registered (a start after a crash) or no push: no progress fields.
        let r = describe_with_push(&meta(Some(3)), None);
        assert!(field(&r, "pushing-version").is_some());
        assert!(field(&r, "pushing-phase").is_none());
        let r = describe(&meta(None));
        assert_eq!(field(&r, "pushing-version"), Some(&Reply::Null));
        assert!(field(&r, "pushing-phase").is_none());
    }
}
