//! PUSH BEGIN store [DUPLICATES ERROR|LAST-WINS] [MIN-RECORDS n] [MAX-SHRINK percent]
//! [LAYOUT STRING|HASH] | ADD id key value [key value ...] |
//! COMMIT id | ABORT id | LIST | HELP — batch pushes over RESP (what `rialto push --server`
//! sends). A push's id is the number of the version it loads (STORE DESCRIBE's
//! `pushing-version`). A push belongs to the connection that began it: ADD, COMMIT and ABORT
//! from another connection are refused, and the push is aborted when its connection closes
//! before COMMIT. Records are sorted and loaded on the ingestion pool, never on connection
//! threads. Under `LAYOUT HASH` each value is a packed hash payload (`rialto_keyspace::
//! encode_hash_payload`); one that is not is refused and aborts the push, so nothing a client
//! sends can be stored as a record that does not decode.

use std::sync::Arc;

use bytes::Bytes;
use rialto_keyspace::{DuplicatePolicy, PushGuard, PushLayout, PushOptions};
use rialto_resp::Reply;

use super::store::error;
use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{Block, Integer, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

const PUSH_BEGIN: CommandSpec = cmd("push|begin",
    -3,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Begins a batch push into a store and returns its id, the number of the version it loads; only this connection may add to, commit or abort it. COMMIT refuses it if it loads fewer than MIN-RECORDS records (default push-min-records) or its record count falls more than MAX-SHRINK percent below the current version's (default push-max-shrink). LAYOUT HASH makes every key a hash, each value being a packed hash payload (default STRING).",
        "O(1)",
    )
    .args(&[
        arg("store", Str),
        arg("policy", OneOf).token("DUPLICATES").opt().sub(&[
            arg("error", PureToken).token("ERROR"),
            arg("last-wins", PureToken).token("LAST-WINS"),
        ]),
        arg("n", Integer).token("MIN-RECORDS").opt(),
        arg("percent", Integer).token("MAX-SHRINK").opt(),
        arg("layout", OneOf).token("LAYOUT").opt().sub(&[
            arg("string", PureToken).token("STRING"),
            arg("hash", PureToken).token("HASH"),
        ]),
    ]),
)
.handler(Handler::Conn(begin));

const PUSH_ADD: CommandSpec = cmd(
    "push|add",
    -5,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Adds records (keys relative to the store's prefix) to a push, in any order.",
        "O(N), N being the number of records.",
    )
    .args(&[
        arg("id", Integer),
        arg("data", Block)
            .multi()
            .sub(&[arg("key", Str), arg("value", Str)]),
    ]),
)
.handler(Handler::Conn(add));

const PUSH_COMMIT: CommandSpec = cmd(
    "push|commit",
    3,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Sorts and loads a push's records as the store's new version and swaps it in.",
        "O(N log N), N being the number of records.",
    )
    .args(&[arg("id", Integer)]),
)
.handler(Handler::Conn(commit));

const PUSH_ABORT: CommandSpec = cmd(
    "push|abort",
    3,
    &["admin", "noscript"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Abandons a push; the store keeps its current version.",
        "O(1)",
    )
    .args(&[arg("id", Integer)]),
)
.handler(Handler::Conn(abort));

const PUSH_LIST: CommandSpec = cmd("push|list", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "rialto",
        "0.1.0",
        "Returns the pushes in progress as id (the version each loads), store pairs.",
        "O(N), N being the number of pushes in progress.",
    ))
    .handler(Handler::Conn(list));

const PUSH_HELP: CommandSpec = cmd("push|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "rialto",
        "0.1.0",
        "Lists the PUSH subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(help));

pub const PUSH: CommandSpec = cmd("push", -2, &["no_multi"], &["@slow"])
    .docs(doc(
        "rialto",
        "0.1.0",
        "Groups the subcommands of batch pushes.",
        "Varies by subcommand.",
    ))
    .subs(&[
        PUSH_BEGIN,
        PUSH_ADD,
        PUSH_COMMIT,
        PUSH_ABORT,
        PUSH_LIST,
        PUSH_HELP,
    ]);

fn list(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let pushes = match &ctx.shared.cluster {
        Some(c) => crate::cluster_stores::pushes(c),
        None => ctx.shared.keyspace.pushes(),
    };
    let v = pushes
        .into_iter()
        .flat_map(|(id, store)| [Reply::Integer(id as i64), Reply::bulk(store)])
        .collect();
    Outcome::Reply(Reply::Array(v))
}

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&PUSH))
}

fn begin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    let guard = ctx.shared.config.read().push_guard();
    let mut opts = match begin_options(&args[3..], guard) {
        Ok(o) => o,
        Err(r) => return Outcome::Reply(r),
    };
    opts.owner = Some(ctx.client.handle.id);
    later(ctx.shared, move |sh| {
        let id = match &sh.cluster {
            Some(c) => crate::cluster_stores::push_begin(
                c,
                &sh.keyspace,
                &name,
                opts,
                sh.config.read().push_memory_limit,
                &sh.config.read().dir.join("push-tmp"),
            )?,
            None => sh.keyspace.push_begin_with(&name, opts)?,
        };
        Ok(Reply::Integer(id as i64))
    })
}

fn add(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let id = match push_id(&args[2]) {
        Ok(id) => id,
        Err(r) => return Outcome::Reply(r),
    };
    if args.len() % 2 != 1 {
        return Outcome::Reply(reply::wrong_arity("push|add"));
    }
    let records = args[3..].to_vec();
    let caller = Some(ctx.client.handle.id);
    later(ctx.shared, move |sh| {
        if let Some(c) = &sh.cluster {
            let n = crate::cluster_stores::push_add(c, id, caller, &records)?;
            return Ok(Reply::Integer(n as i64));
        }
        // Each value is checked against the push's layout as it is added.
        let pairs = records.chunks_exact(2).map(|p| (&p[0][..], &p[1][..]));
        let n = sh.keyspace.push_add(id, caller, pairs)?;
        Ok(Reply::Integer(n as i64))
    })
}

fn commit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let id = match push_id(&args[2]) {
        Ok(id) => id,
        Err(r) => return Outcome::Reply(r),
    };
    let caller = Some(ctx.client.handle.id);
    later(ctx.shared, move |sh| {
        let n = |v: u64| Reply::Integer(v.min(i64::MAX as u64) as i64);
        if let Some(c) = &sh.cluster {
            let timeout = sh.config.read().cluster.push_timeout;
            let r = crate::cluster_stores::push_commit(c, &sh.keyspace, id, caller, timeout)?;
            return Ok(Reply::Map(vec![
                (Reply::bulk("store"), Reply::bulk(r.store)),
                (Reply::bulk("version"), Reply::Integer(i64::from(r.version))),
                (Reply::bulk("records"), n(r.records)),
                (Reply::bulk("bytes"), n(r.bytes)),
                (Reply::bulk("nodes"), n(r.nodes as u64)),
                (Reply::bulk("elapsed-ms"), n(r.elapsed.as_millis() as u64)),
            ]));
        }
        let r = sh.keyspace.push_commit(id, caller)?;
        let mut out = vec![
            (Reply::bulk("store"), Reply::bulk(r.store)),
            (Reply::bulk("version"), Reply::Integer(i64::from(r.version))),
            (Reply::bulk("records"), n(r.records)),
            (Reply::bulk("bytes"), n(r.bytes)),
            (Reply::bulk("files"), n(r.files)),
            (Reply::bulk("file-bytes"), n(r.file_bytes)),
            (Reply::bulk("runs-spilled"), n(r.runs_spilled)),
            (Reply::bulk("duplicates-dropped"), n(r.duplicates_dropped)),
            (Reply::bulk("replayed"), n(r.replayed)),
            (Reply::bulk("elapsed-ms"), n(r.elapsed.as_millis() as u64)),
        ];
        // The commit's phases in order (`sort-ms`, `write-ms`, `link-ms`, `replay-ms`,
        // `cleanup-ms`): what `rialto push` reports each server phase took.
        for (name, d) in &r.phases {
            out.push((Reply::bulk(format!("{name}-ms")), n(d.as_millis() as u64)));
        }
        Ok(Reply::Map(out))
    })
}

fn abort(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let id = match push_id(&args[2]) {
        Ok(id) => id,
        Err(r) => return Outcome::Reply(r),
    };
    let caller = Some(ctx.client.handle.id);
    later(ctx.shared, move |sh| {
        match &sh.cluster {
            Some(c) => crate::cluster_stores::push_abort(c, id, caller)?,
            None => sh.keyspace.push_abort(id, caller)?,
        }
        Ok(reply::ok())
    })
}

/// A push id: a positive integer.
fn push_id(arg: &[u8]) -> Result<u64, Reply> {
    match reply::parse_i64(arg).filter(|&n| n > 0) {
        Some(n) => Ok(n as u64),
        None => Err(Reply::error("ERR invalid push id")),
    }
}

/// `[DUPLICATES ERROR|LAST-WINS] [MIN-RECORDS n] [MAX-SHRINK percent] [LAYOUT STRING|HASH]`,
/// in any order; the guard's figures not given come from the server's configuration
/// (`guard`). The owner is left for the caller to set.
fn begin_options(opts: &[Bytes], mut guard: PushGuard) -> Result<PushOptions, Reply> {
    let mut duplicates = DuplicatePolicy::Error;
    let mut layout = PushLayout::String;
    for pair in opts.chunks(2) {
        let [name, value] = pair else {
            return Err(reply::syntax());
        };
        if is(name, "duplicates") && is(value, "error") {
            duplicates = DuplicatePolicy::Error;
        } else if is(name, "duplicates") && is(value, "last-wins") {
            duplicates = DuplicatePolicy::LastWins;
        } else if is(name, "min-records") {
            guard.min_records = reply::parse_i64(value)
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| Reply::error("ERR MIN-RECORDS must be a non-negative integer"))?;
        } else if is(name, "layout") && is(value, "string") {
            layout = PushLayout::String;
        } else if is(name, "layout") && is(value, "hash") {
            layout = PushLayout::Hash;
        } else if is(name, "max-shrink") {
            guard.max_shrink_percent = reply::parse_i64(value)
                .filter(|p| (0..=100).contains(p))
                .map(|p| p as u32)
                .ok_or_else(|| Reply::error("ERR MAX-SHRINK must be a percentage, 0 to 100"))?;
        } else {
            return Err(reply::syntax());
        }
    }
    Ok(PushOptions {
        duplicates,
        guard: Some(guard),
        owner: None,
        layout,
    })
}

/// Runs `job` on the ingestion pool and replies with its result.
fn later(
    shared: &Arc<crate::server::Shared>,
    job: impl FnOnce(&crate::server::Shared) -> Result<Reply, rialto_keyspace::StoreError>
        + Send
        + 'static,
) -> Outcome {
    let sh = Arc::clone(shared);
    let rx = shared.keyspace.run_on_ingestion_pool(move || job(&sh));
    Outcome::Later(Box::pin(async move {
        match rx.await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => error(&e),
            Err(_) => Reply::error("ERR the ingestion pool dropped the job"),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(args: &[&str]) -> Result<PushOptions, Reply> {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
        begin_options(&args, PushGuard::default())
    }

    #[test]
    fn begin_takes_a_layout_in_any_case_and_defaults_to_strings() {
        assert_eq!(opts(&[]).unwrap().layout, PushLayout::String);
        assert_eq!(opts(&["LAYOUT", "HASH"]).unwrap().layout, PushLayout::Hash);
        assert_eq!(opts(&["layout", "hash"]).unwrap().layout, PushLayout::Hash);
        let o = opts(&[
            "MIN-RECORDS",
            "0",
            "LAYOUT",
            "STRING",
            "DUPLICATES",
            "LAST-WINS",
        ])
        .unwrap();
        assert_eq!(o.layout, PushLayout::String);
        assert_eq!(o.duplicates, DuplicatePolicy::LastWins);
        assert_eq!(o.guard.map(|g| g.min_records), Some(0));
        assert!(opts(&["LAYOUT", "LIST"]).is_err());
        assert!(opts(&["LAYOUT"]).is_err());
    }
}
