//! Work a transaction leaves for its commit: run once the group is durable, just before the
//! transaction's own handle resolves; dropped, never run, when the transaction fails or rolls
//! back past it.

mod common;

use std::sync::Arc;

use parking_lot::Mutex;
use rialto_engine::KvEngine;
use rialto_io::SystemClock;
use rialto_txn::{Merger, MergerOptions};

#[test]
fn after_commit_runs_once_durable_and_never_for_what_was_cut() {
    let (_fs, dynfs) = common::mem();
    let db = common::open(dynfs);
    let merger = Merger::start(
        Arc::clone(&db),
        MergerOptions::default(),
        Arc::new(SystemClock::new()),
    )
    .unwrap();
    let ran: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let (r, d) = (Arc::clone(&ran), Arc::clone(&db));
    merger
        .submit(move |tx| {
            tx.put(b"k", b"v");
            let seen = Arc::clone(&r);
            let db = Arc::clone(&d);
            tx.after_commit(Box::new(move |failure| {
                assert!(failure.is_none());
                // Durable and published by the time it runs.
                assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
                seen.lock().push("kept");
            }));
            let at = tx.savepoint();
            let seen = Arc::clone(&r);
            tx.after_commit(Box::new(move |_| seen.lock().push("rolled back")));
            tx.rollback_to(at);
            Ok(())
        })
        .wait()
        .unwrap();
    // Done by the time the handle resolves.
    assert_eq!(*ran.lock(), vec!["kept"]);
    let r = Arc::clone(&ran);
    let failed = merger
        .submit(move |tx| {
            tx.after_commit(Box::new(move |_| r.lock().push("failed")));
            Err::<(), _>(rialto_engine::Error::InvalidArgument("no".into()))
        })
        .wait();
    assert!(failed.is_err());
    merger.close().unwrap();
    assert_eq!(*ran.lock(), vec!["kept"]);
}
