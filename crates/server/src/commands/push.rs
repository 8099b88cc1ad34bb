//! PUSH BEGIN store [DUPLICATES ERROR|LAST-WINS] | ADD id key value [key value ...] |
//! COMMIT id | ABORT id | LIST | HELP — batch pushes over RESP (what `rialto push --server`
//! sends). Records are sorted and loaded on the ingestion pool, never on connection threads;
//! a push whose connection closes before COMMIT is aborted.

use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;
use rialto_sort::DuplicatePolicy;

use super::store::error;
use super::util::is;
use super::{Ctx, Outcome};
use crate::reply;

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let shared = Arc::clone(ctx.shared);
    if is(sub, "list") {
        let v = shared
            .stores
            .pushes
            .list()
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
        let duplicates = match &args[3..] {
            [] => DuplicatePolicy::Error,
            [t, p] if is(t, "duplicates") && is(p, "error") => DuplicatePolicy::Error,
            [t, p] if is(t, "duplicates") && is(p, "last-wins") => DuplicatePolicy::LastWins,
            _ => return Outcome::Reply(reply::syntax()),
        };
        let owner = ctx.client.handle.id;
        return later(&shared, move |sh| {
            let id = sh.stores.push_begin(
                &sh.merger,
                Arc::clone(&sh.fs),
                &name,
                duplicates,
                Some(owner),
                sh.now_ms(),
            )?;
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
            let n = sh.stores.push_add(&sh.merger, id, pairs)?;
            Ok(Reply::Integer(n as i64))
        });
    }
    if is(sub, "commit") {
        return later(&shared, move |sh| {
            let clock = Arc::clone(&sh.clock);
            let r = sh
                .stores
                .push_commit(&sh.db, &sh.merger, id, move || clock.unix_millis() as i64)?;
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
            sh.stores.push_abort(&sh.merger, id)?;
            Ok(reply::ok())
        });
    }
    Outcome::Reply(reply::syntax())
}

/// Runs `job` on the ingestion pool and replies with its result.
fn later(
    shared: &Arc<crate::server::Shared>,
    job: impl FnOnce(&crate::server::Shared) -> Result<Reply, crate::stores::StoreError>
        + Send
        + 'static,
) -> Outcome {
    let sh = Arc::clone(shared);
    let rx = shared.stores.pushes.run(move || job(&sh));
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
            "BEGIN <store> [DUPLICATES ERROR|LAST-WINS]",
            "    Begins a push into <store>; returns its id.",
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
