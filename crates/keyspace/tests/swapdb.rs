//! SWAPDB: two databases exchange contents without their data moving; reads, counts, walks,
//! expiry, WATCH and blocked pops follow the database numbers clients name, and the exchange
//! survives a reopen.

mod common;

use std::sync::mpsc;

use bytes::Bytes;
use common::options;
use rialto_io::MemFs;
use rialto_keyspace::{Keyspace, ListOp, Op, OpKind, Set, Value};

fn open(fs: &MemFs) -> Keyspace {
    Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap()
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

fn set(ks: &Keyspace, db: u8, key: &str, value: &str, expire_at_ms: Option<i64>) {
    let op = Op::new(
        db,
        ks.now_ms(),
        OpKind::Set(Set {
            key: b(key),
            value: b(value),
            expire_at_ms,
            keep_ttl: false,
            cond: None,
            get: false,
        }),
    );
    ks.execute(op).unwrap();
}

fn get(ks: &Keyspace, db: u8, key: &str) -> Option<Bytes> {
    ks.read(db, ks.now_ms(), |k| {
        k.get(key.as_bytes()).unwrap().map(|r| r.value)
    })
}

fn swap(ks: &Keyspace, a: u8, b: u8) -> rialto_keyspace::Result<Value> {
    ks.execute(Op::new(0, ks.now_ms(), OpKind::SwapDb { a, b }))
}

#[test]
fn databases_exchange_contents_counts_and_walks_and_it_survives_a_reopen() {
    let fs = MemFs::new();
    let ks = open(&fs);
    set(&ks, 0, "a", "zero", None);
    set(&ks, 1, "a", "one", None);
    set(&ks, 1, "b", "one-b", Some(ks.now_ms() + 3_600_000));
    swap(&ks, 0, 1).unwrap();
    assert_eq!(get(&ks, 0, "a"), Some(b("one")));
    assert_eq!(get(&ks, 1, "a"), Some(b("zero")));
    assert_eq!(ks.key_count(0, None).keys, 2);
    assert_eq!(ks.key_count(0, None).expires, 1);
    assert_eq!(ks.key_count(1, None).keys, 1);
    let mut walked = Vec::new();
    ks.walk_keys(0, None, ks.now_ms(), |k, _| {
        walked.push(k.to_vec());
        true
    })
    .unwrap();
    assert_eq!(walked, vec![b"a".to_vec(), b"b".to_vec()]);
    // Writes after the exchange land where the client's database now is.
    set(&ks, 0, "c", "new", None);
    assert_eq!(ks.key_count(0, None).keys, 3);
    // A swap with itself changes nothing; a chain of swaps composes.
    swap(&ks, 2, 2).unwrap();
    swap(&ks, 1, 2).unwrap();
    assert_eq!(get(&ks, 2, "a"), Some(b("zero")));
    drop(ks);
    let ks = open(&fs);
    assert_eq!(get(&ks, 0, "a"), Some(b("one")));
    assert_eq!(get(&ks, 2, "a"), Some(b("zero")));
    assert_eq!(get(&ks, 1, "a"), None);
    // Flushing a database flushes the one the client names.
    ks.flush(Some(2)).unwrap();
    assert_eq!(get(&ks, 2, "a"), None);
    assert_eq!(get(&ks, 0, "a"), Some(b("one")));
}

#[test]
fn a_watched_key_is_touched_when_it_exists_on_either_side() {
    let fs = MemFs::new();
    let ks = open(&fs);
    set(&ks, 1, "x", "v", None);
    let present = ks.new_watch();
    let h = ks.watch(&present, 0, vec![b("x")]);
    ks.run_queued();
    h.wait().unwrap();
    let absent = ks.new_watch();
    let h = ks.watch(&absent, 0, vec![b("nowhere")]);
    ks.run_queued();
    h.wait().unwrap();
    swap(&ks, 0, 1).unwrap();
    assert!(!ks.watch_intact(&present, ks.now_ms()));
    assert!(ks.watch_intact(&absent, ks.now_ms()));
}

#[test]
fn a_blocked_pop_is_served_by_the_list_a_swap_brings() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.execute(Op::new(
        1,
        ks.now_ms(),
        OpKind::List(ListOp::Push {
            key: b("q"),
            left: true,
            existing: false,
            items: vec![b("item")],
        }),
    ))
    .unwrap();
    let (tx, rx) = mpsc::channel();
    let pop = Op::new(
        0,
        ks.now_ms(),
        OpKind::List(ListOp::MPop {
            keys: vec![b("q")],
            left: true,
            count: None,
        }),
    );
    let h = ks.block(
        pop,
        vec![b("q")],
        Box::new(move |r| tx.send(r.unwrap()).unwrap()),
        |r, w| (r.unwrap(), w.is_some()),
    );
    ks.run_queued();
    let (v, waiting) = h.wait().unwrap();
    assert_eq!((v, waiting), (Value::NullArray, true));
    assert_eq!(ks.blocked().0, 1);
    swap(&ks, 0, 1).unwrap();
    assert_eq!(
        rx.recv().unwrap(),
        Value::Array(vec![Value::Bulk(b("q")), Value::Bulk(b("item"))])
    );
    assert_eq!(ks.blocked(), (0, 0));
    assert_eq!(ks.key_count(0, None).keys, 0);
}
