//! PUSH BEGIN store [DUPLICATES ERROR|LAST-WINS] [MIN-RECORDS n] [MAX-SHRINK percent] |
//! ADD id key value [key value ...] |
//! COMMIT id | ABORT id | LIST | HELP — batch pushes over RESP (what `rialto push --server`
//! sends). Records are sorted and loaded on the ingestion pool, never on connection threads;
//! a push whose connection closes before COMMIT is aborted.

use std::sync::Arc;

use bytes::Bytes;
use rialto_keyspace::{DuplicatePolicy, PushGuard};
use rialto_resp::Reply;

use super::store::error;
use super::util::is;
use super::{Ctx, Outcome};
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let shared = Arc::clone(ctx.shared);
    if is(sub, "list") {
        let v = shared
            .keyspace
            .pushes()
            .into_iter()
            .flat_map(|(id, store)| [Reply::Integer(id as i64), Reply::bulk(store)])
            .collect();
        return Outcome::Reply(Reply::Array(v));
    }
    if is(sub, "help") {
        return Outcome::Reply(help());
    }
    if is(sub, "begin") {
        let name = String::from_utf8_lossy(&args[2]).into_owned();
        let (duplicates, guard) = match begin_options(&args[3..], shared.config.read().push_guard())
        {
            Ok(o) => o,
            Err(r) => return Outcome::Reply(r),
        };
        let owner = ctx.client.handle.id;
        return later(&shared, move |sh| {
            let id = sh
                .keyspace
                .push_begin(&name, duplicates, Some(guard), Some(owner))?;
            Ok(Reply::Integer(id as i64))
        });
    }
    let id = match reply::parse_i64(&args[2]).filter(|&n| n > 0) {
        Some(n) => n as u64,
        None => return Outcome::Reply(Reply::error("ERR invalid push id")),
    };
    if is(sub, "add") {
        if args.len() % 2 != 1 {
            return Outcome::Reply(reply::wrong_arity("push|add"));
        }
        let records = args[3..].to_vec();
        return later(&shared, move |sh| {
            let pairs = records.chunks_exact(2).map(|p| (&p[0][..], &p[1][..]));
            let n = sh.keyspace.push_add(id, pairs)?;
            Ok(Reply::Integer(n as i64))
        });
    }
    if is(sub, "commit") {
        return later(&shared, move |sh| {
            let r = sh.keyspace.push_commit(id)?;
            let n = |v: u64| Reply::Integer(v.min(i64::MAX as u64) as i64);
            Ok(Reply::Map(vec![
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
            ]))
        });
    }
    if is(sub, "abort") {
        return later(&shared, move |sh| {
            sh.keyspace.push_abort(id)?;
            Ok(reply::ok())
        });
    }
    Outcome::Reply(reply::syntax())
}

/// `[DUPLICATES ERROR|LAST-WINS] [MIN-RECORDS n] [MAX-SHRINK percent]`, in any order; what
/// is not given comes from the server's configuration (`guard`).
fn begin_options(
    opts: &[Bytes],
    mut guard: PushGuard,
) -> Result<(DuplicatePolicy, PushGuard), Reply> {
    let mut duplicates = DuplicatePolicy::Error;
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
        } else if is(name, "max-shrink") {
            guard.max_shrink_percent = reply::parse_i64(value)
                .filter(|p| (0..=100).contains(p))
                .map(|p| p as u32)
                .ok_or_else(|| Reply::error("ERR MAX-SHRINK must be a percentage, 0 to 100"))?;
        } else {
            return Err(reply::syntax());
        }
    }
    Ok((duplicates, guard))
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

fn help() -> Reply {
    Reply::Array(
        [
            "PUSH <subcommand> [<arg> ...]:",
            "BEGIN <store> [DUPLICATES ERROR|LAST-WINS] [MIN-RECORDS <n>] [MAX-SHRINK <percent>]",
            "    Begins a push into <store>; returns its id. The push is refused at COMMIT if it",
            "    loads fewer than <n> records (default push-min-records, 1) or its record count",
            "    falls more than <percent> below the current version's (default push-max-shrink, 50).",
            "ADD <id> <key> <value> [<key> <value> ...]",
            "    Adds records; keys are relative to the store's prefix, in any order.",
            "COMMIT <id>",
            "    Sorts and loads the records as the store's new version and swaps it in.",
            "ABORT <id>",
            "    Abandons the push; the current version stays.",
            "LIST",
            "    Pushes in progress, as id and store.",
            "HELP",
            "    This text.",
        ]
        .into_iter()
        .map(Reply::simple)
        .collect(),
    )
}
