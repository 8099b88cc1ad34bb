//! The write observer: it sees each observed write with the value it replaces (as the
//! transaction sees it, group writes included), only committed transactions' writes count,
//! a savepoint rolled back drops the writes after it, and what it stages at a group's end is
//! logged with the group.

mod common;

use std::sync::Arc;

use parking_lot::Mutex;
use rialto_engine::KvEngine;
use rialto_io::SystemClock;
use rialto_txn::{Merger, MergerOptions, WriteObserver};

/// A write seen: key, old value, new value.
type Seen = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// Observes keys starting with `o`; records what it sees and keeps the committed writes.
#[derive(Default)]
struct Log {
    pending: Mutex<Vec<Seen>>,
    committed: Mutex<Vec<Seen>>,
}

impl WriteObserver for Log {
    fn observes(&self, key: &[u8]) -> bool {
        key.first() == Some(&b'o')
    }
    fn staged(&self, key: &[u8], old: Option<&[u8]>, new: Option<&[u8]>) {
        self.pending.lock().push((
            key.to_vec(),
            old.map(<[u8]>::to_vec),
            new.map(<[u8]>::to_vec),
        ));
    }
    fn mark(&self) -> usize {
        self.pending.lock().len()
    }
    fn cut(&self, mark: usize) {
        self.pending.lock().truncate(mark);
    }
    fn committed(&self) {
        let moved: Vec<_> = self.pending.lock().drain(..).collect();
        self.committed.lock().extend(moved);
    }
    fn group_writes(&self) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let n = self.committed.lock().len();
        vec![(b"seen".to_vec(), Some(n.to_string().into_bytes()))]
    }
}

#[test]
fn the_observer_sees_old_values_commits_and_savepoints_and_logs_with_the_group() {
    let (_fs, dynfs) = common::mem();
    let db = common::open(dynfs);
    let log = Arc::new(Log::default());
    let observer: Arc<dyn WriteObserver> = log.clone();
    let merger = Merger::start_observed(
        Arc::clone(&db),
        MergerOptions {
            inline_execution: true,
            ..MergerOptions::default()
        },
        Arc::new(SystemClock::new()),
        Some(observer),
    )
    .unwrap();
    let a = merger.enqueue(|tx| {
        tx.put(b"o1", b"a");
        tx.put(b"x", b"not observed");
        Ok(())
    });
    // Sees the write of the transaction before it in the same group.
    let b = merger.enqueue(|tx| {
        tx.put_parts(b"o1", &[b"b", b"c"]);
        let sp = tx.savepoint();
        tx.delete(b"o1");
        tx.rollback_to(sp);
        Ok(())
    });
    let c = merger.enqueue(|tx| {
        tx.delete(b"o1");
        Err::<(), _>(rialto_engine::Error::InvalidArgument("refused".into()))
    });
    merger.run_queued();
    a.wait().unwrap();
    b.wait().unwrap();
    assert!(c.wait().is_err());
    let seen = log.committed.lock().clone();
    assert_eq!(
        seen,
        vec![
            (b"o1".to_vec(), None, Some(b"a".to_vec())),
            // A value staged in parts is seen by its first part.
            (b"o1".to_vec(), Some(b"a".to_vec()), Some(b"b".to_vec())),
        ]
    );
    assert!(log.pending.lock().is_empty());
    assert_eq!(db.get(b"seen").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"o1").unwrap().as_deref(), Some(&b"bc"[..]));
    merger.close().unwrap();
}

#[test]
fn a_transaction_reads_its_own_writes_through_savepoints_and_sees_many_writes_once() {
    let (_fs, dynfs) = common::mem();
    let db = common::open(dynfs);
    let log = Arc::new(Log::default());
    let observer: Arc<dyn WriteObserver> = log.clone();
    let merger = Merger::start_observed(
        Arc::clone(&db),
        MergerOptions::default(),
        Arc::new(SystemClock::new()),
        Some(observer),
    )
    .unwrap();
    let n = 20_000usize;
    merger
        .submit_and_wait(move |tx| {
            // Each of many writes is observed once, with what it replaces in this transaction.
            for i in 0..n {
                tx.put(format!("o{i}").as_bytes(), b"1");
            }
            for i in (0..n).step_by(2) {
                tx.put(format!("o{i}").as_bytes(), b"2");
            }
            assert_eq!(tx.get(b"o0")?.as_deref(), Some(&b"2"[..]));
            assert_eq!(tx.get(b"o1")?.as_deref(), Some(&b"1"[..]));
            let sp = tx.savepoint();
            tx.delete(b"o0");
            tx.put(b"new", b"x");
            assert_eq!(tx.get(b"o0")?, None);
            tx.rollback_to(sp);
            assert_eq!(tx.get(b"o0")?.as_deref(), Some(&b"2"[..]));
            assert_eq!(tx.get(b"new")?, None);
            Ok(())
        })
        .unwrap();
    let seen = log.committed.lock();
    assert_eq!(seen.len(), n + n / 2);
    assert!(seen[..n].iter().all(|(_, old, _)| old.is_none()));
    assert!(seen[n..]
        .iter()
        .all(|(_, old, new)| old.as_deref() == Some(b"1") && new.as_deref() == Some(b"2")));
    drop(seen);
    merger.close().unwrap();
}

#[test]
fn a_read_before_a_write_serves_the_observer_until_the_key_is_written() {
    let (_fs, dynfs) = common::mem();
    let db = common::open(dynfs);
    let log = Arc::new(Log::default());
    let observer: Arc<dyn WriteObserver> = log.clone();
    let merger = Merger::start_observed(
        Arc::clone(&db),
        MergerOptions::default(),
        Arc::new(SystemClock::new()),
        Some(observer),
    )
    .unwrap();
    merger
        .submit_and_wait(|tx| {
            tx.put(b"o1", b"v1");
            Ok(())
        })
        .unwrap();
    merger
        .submit_and_wait(|tx| {
            // Read-modify-write: the observer sees the value read.
            assert_eq!(tx.get(b"o1")?.as_deref(), Some(&b"v1"[..]));
            tx.put(b"o1", b"v2");
            // Written since: the next write replaces v2, not the value read before.
            tx.put(b"o1", b"v3");
            // A read of another key does not stand in for this one.
            tx.get(b"o2")?;
            tx.delete(b"o1");
            let sp = tx.savepoint();
            assert_eq!(tx.get(b"o1")?, None);
            tx.put(b"o1", b"gone");
            tx.rollback_to(sp);
            tx.put(b"o1", b"v4");
            Ok(())
        })
        .unwrap();
    let seen = log.committed.lock();
    let olds: Vec<Option<&[u8]>> = seen
        .iter()
        .filter(|(k, _, _)| k == b"o1")
        .map(|(_, old, _)| old.as_deref())
        .collect();
    assert_eq!(
        olds,
        vec![
            None,
            Some(&b"v1"[..]),
            Some(&b"v2"[..]),
            Some(&b"v3"[..]),
            None
        ]
    );
}
