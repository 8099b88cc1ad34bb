//! STORE CREATE name [PREFIX p] [REWIND seconds] [COMPRESSION codec] [KEEP n] | CONFIG name
//! [COMPRESSION codec] [KEEP n] | DESCRIBE name | LIST | DELETE name | ROLLBACK name
//! [version] | HELP — stores and their versions (see `rialto_keyspace`'s `stores`). Changes
//! run off the connection thread and reply once durable.

use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;

use rialto_keyspace::{Compression, PushStatus, StoreError, StoreMeta, StoreSettings, VersionInfo};

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{Integer, OneOf, PureToken, String as Str};
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
        "Creates a store owning the keys that start with its prefix (default `NAME:`), with an empty version 1. REWIND: how many seconds before a push's start the writes streamed into the store are replayed onto the pushed version (default 0). COMPRESSION: the block codec of the tables written for its versions, by pushes and by flushes and compactions of streamed writes (default: the server's `compression`). KEEP: the versions kept, the current one and KEEP - 1 older ones a rollback can go back to, every one receiving the writes streamed into the store (default 2, at most `store-max-keep`).",
        "O(1)",
    )
    .args(&[
        arg("name", Str),
        arg("prefix", Str).token("PREFIX").opt(),
        arg("seconds", Integer).token("REWIND").opt(),
        CODEC_ARG,
        KEEP_ARG,
    ]),
)
.handler(Handler::Conn(create));

const CODEC_ARG: crate::command_table::Arg = arg("codec", OneOf).token("COMPRESSION").opt().sub(&[
    arg("none", PureToken).token("NONE"),
    arg("lz4", PureToken).token("LZ4"),
    arg("zstd", PureToken).token("ZSTD"),
]);

const KEEP_ARG: crate::command_table::Arg = arg("n", Integer).token("KEEP").opt();

const STORE_CONFIG: CommandSpec = cmd(
    "store|config",
    -5,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Changes a store's settings. COMPRESSION: the block codec of the tables written for its versions from now on (pushes begun after the change, flushes and compactions); tables already written keep theirs. KEEP: the versions kept from now on; a smaller value retires the oldest kept versions at once.",
        "O(1)",
    )
    .args(&[arg("name", Str), CODEC_ARG, KEEP_ARG]),
)
.handler(Handler::Conn(configure));

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
        "Makes a kept older version of a store current again: the one named, or without a version the newest older one; the versions newer than it (the current one among them) are retired. A rollback only goes back: with no older version kept it is refused. Naming the current version changes nothing.",
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
        STORE_CONFIG,
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
    let max_keep = ctx.shared.config.read().store_max_keep;
    let (prefix, rewind_ms, mut settings) = match create_options(&name, &args[3..], max_keep) {
        Ok(o) => o,
        Err(r) => return Outcome::Reply(r),
    };
    // The server's codec when none is named, fixed in the store as it is created.
    settings.compression = settings
        .compression
        .or(Some(ctx.shared.keyspace.compression()));
    if ctx.shared.cluster.is_some() {
        if rewind_ms > 0 {
            return Outcome::Reply(Reply::error(
                "ERR REWIND is not available in cluster mode: a push replays the writes streamed into its store from its begin on",
            ));
        }
        return blocking(ctx, move |sh| {
            let c = cluster_of(sh)?;
            crate::cluster_stores::create(c, &sh.keyspace, &name, &prefix, settings)?;
            Ok(cluster_describe(sh, c, &name))
        });
    }
    blocking(ctx, move |sh| {
        let m = sh
            .keyspace
            .create_store_with(&name, &prefix, rewind_ms, settings)?;
        Ok(describe(&m))
    })
}

fn configure(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    let max_keep = ctx.shared.config.read().store_max_keep;
    let mut settings = StoreSettings::default();
    for pair in args[3..].chunks(2) {
        let [opt, value] = pair else {
            return Outcome::Reply(reply::syntax());
        };
        if let Err(r) = setting(&mut settings, opt, value, max_keep) {
            return Outcome::Reply(r);
        }
    }
    blocking(ctx, move |sh| {
        if let Some(c) = &sh.cluster {
            crate::cluster_stores::configure(c, &sh.keyspace, &name, settings)?;
            return Ok(cluster_describe(sh, c, &name));
        }
        let m = sh.keyspace.configure_store(&name, settings)?;
        Ok(describe(&m))
    })
}

/// Sets the store setting `opt` (COMPRESSION, KEEP up to `max_keep`) to `value` in `s`; a
/// syntax error for another.
fn setting(s: &mut StoreSettings, opt: &[u8], value: &[u8], max_keep: u32) -> Result<(), Reply> {
    if is(opt, "compression") {
        let codec = std::str::from_utf8(value)
            .ok()
            .and_then(|v| match v.to_ascii_lowercase().as_str() {
                "none" => Some(Compression::None),
                "lz4" => Some(Compression::Lz4),
                "zstd" => Some(Compression::Zstd),
                _ => None,
            })
            .ok_or_else(|| Reply::error("ERR COMPRESSION must be none, lz4 or zstd"))?;
        s.compression = Some(codec);
        Ok(())
    } else if is(opt, "keep") {
        let n = reply::int_arg(value)?;
        let keep = u32::try_from(n)
            .ok()
            .filter(|k| (1..=max_keep).contains(k))
            .ok_or_else(|| {
                reply::err_string(format!("ERR KEEP must be 1 to {max_keep} (store-max-keep)"))
            })?;
        s.keep = Some(keep);
        Ok(())
    } else {
        Err(reply::syntax())
    }
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

fn create_options(
    name: &str,
    opts: &[Bytes],
    max_keep: u32,
) -> Result<(Vec<u8>, u64, StoreSettings), Reply> {
    let mut prefix = format!("{name}:").into_bytes();
    let mut rewind_ms = 0u64;
    let mut settings = StoreSettings::default();
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
            setting(&mut settings, &opts[i], value, max_keep)?;
        }
        i += 2;
    }
    Ok((prefix, rewind_ms, settings))
}

/// The `pushing-phase`, `-records`, `-bytes`, `-written-records`, `-elapsed-ms`, the sort's
/// (`-sort-records`, `-sort-done-records`, `-sort-merge-passes`, `-sort-records-per-s`) and
/// the replay's (`-replay-entries`, `-replay-done-entries`) fields: what `rialto push` polls
/// to show the server's phases, with rates and ETAs, while it waits for PUSH COMMIT.
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
    let sort = &st.sort;
    out.push((Reply::bulk("pushing-sort-records"), num(sort.records)));
    out.push((Reply::bulk("pushing-sort-done-records"), num(sort.done)));
    out.push((
        Reply::bulk("pushing-sort-merge-passes"),
        num(sort.merge_passes),
    ));
    // Null when nothing was spilled: the sort is in memory and has no speed to go by.
    out.push((
        Reply::bulk("pushing-sort-records-per-s"),
        sort.spill_records_per_s.map_or(Reply::Null, num),
    ));
    out.push((Reply::bulk("pushing-replay-entries"), num(st.replay_total)));
    out.push((
        Reply::bulk("pushing-replay-done-entries"),
        num(st.replay_done),
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
    version(
        "previous",
        s.previous().unwrap_or(&VersionInfo::default()),
        &mut out,
    );
    out.push((Reply::bulk("keep"), Reply::Integer(i64::from(s.keep))));
    out.push((
        Reply::bulk("kept-versions"),
        Reply::Array(
            s.older()
                .map(|v| Reply::Integer(i64::from(v.number)))
                .collect(),
        ),
    ));
    out.push((
        Reply::bulk("rewind-seconds"),
        Reply::Integer((s.rewind_ms / 1000).min(i64::MAX as u64) as i64),
    ));
    out.push((
        Reply::bulk("compression"),
        Reply::bulk(s.compression.name()),
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

    use rialto_keyspace::{FinishProgress, PushPhase, Pushing};

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
            kept: vec![v(1)],
            keep: 2,
            next_version: 4,
            rewind_ms: 0,
            pushing: pushing.map(|version| Pushing {
                version,
                started_ms: 7,
            }),
            created_ms: 1,
            compression: Compression::None,
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
            phase: PushPhase::Sorting,
            records: 200,
            bytes: 2000,
            written: 50,
            sort: FinishProgress {
                records: 300,
                done: 100,
                in_memory: 100,
                merge_passes: 1,
                spill_records_per_s: Some(4000),
            },
            replay_done: 5,
            replay_total: 8,
            elapsed: Duration::from_millis(1500),
        };
        let r = describe_with_push(&meta(Some(3)), Some(&st));
        assert_eq!(field(&r, "pushing-version"), Some(&Reply::Integer(3)));
        assert_eq!(field(&r, "pushing-phase"), Some(&Reply::bulk("sorting")));
        assert_eq!(field(&r, "pushing-records"), Some(&Reply::Integer(200)));
        assert_eq!(field(&r, "pushing-bytes"), Some(&Reply::Integer(2000)));
        let written = field(&r, "pushing-written-records");
        assert_eq!(written, Some(&Reply::Integer(50)));
        let elapsed = field(&r, "pushing-elapsed-ms");
        assert_eq!(elapsed, Some(&Reply::Integer(1500)));
        for (name, n) in [
            ("pushing-sort-records", 300),
            ("pushing-sort-done-records", 100),
            ("pushing-sort-merge-passes", 1),
            ("pushing-sort-records-per-s", 4000),
            ("pushing-replay-entries", 8),
            ("pushing-replay-done-entries", 5),
        ] {
            assert_eq!(field(&r, name), Some(&Reply::Integer(n)), "{name}");
        }
        // No spill, no speed.
        let in_memory = PushStatus {
            sort: FinishProgress::default(),
            ..st.clone()
        };
        let r2 = describe_with_push(&meta(Some(3)), Some(&in_memory));
        let speed = field(&r2, "pushing-sort-records-per-s");
        assert_eq!(speed, Some(&Reply::Null));
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
