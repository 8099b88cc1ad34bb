//! Key counts (DBSIZE, INFO keyspace) kept as the data changes: they follow pushes, streamed
//! writes replayed at a swap, rollbacks and deletions of stores, per partition in cluster
//! mode; they survive a reopen; and a database written before counts were kept is counted by
//! a walk at its first open.

mod common;

use std::path::Path;

use bytes::Bytes;
use rialto_engine::KvEngine;
use rialto_io::MemFs;
use rialto_keyspace::{
    slot, Compression, DuplicatePolicy, KeyCount, Keyspace, KeyspaceOptions, Op, OpKind,
    PartStoreOp, PushGuard, Set, SortedRecords, StoreSettings, VersionInfo,
};

const NOW: i64 = 1_700_000_000_000;

fn options(fs: &MemFs, partitions: u32) -> KeyspaceOptions {
    let mut o = common::options(fs);
    o.engine.write_buffer_size = 64 << 10;
    o.stores.push_guard = PushGuard {
        min_records: 0,
        ..PushGuard::default()
    };
    o.stores.partitions = partitions;
    o
}

fn open(fs: &MemFs, partitions: u32) -> Keyspace {
    Keyspace::open(Path::new("/ks/db"), options(fs, partitions)).unwrap()
}

fn set(ks: &Keyspace, db: u8, key: &[u8], ttl: bool) {
    let op = Op::new(
        db,
        NOW,
        OpKind::Set(Set {
            key: Bytes::copy_from_slice(key),
            value: Bytes::from_static(b"v"),
            expire_at_ms: ttl.then_some(NOW + 3_600_000),
            keep_ttl: false,
            cond: None,
            get: false,
        }),
    );
    ks.execute(op).unwrap();
}

fn del(ks: &Keyspace, key: &[u8]) {
    let op = Op::new(
        0,
        NOW,
        OpKind::Del {
            keys: vec![Bytes::copy_from_slice(key)],
        },
    );
    ks.execute(op).unwrap();
}

/// What a walk of `db` (in partition `part`'s routing, keys of that partition only) finds.
fn walked(ks: &Keyspace, db: u8, part: Option<(u32, u32)>) -> KeyCount {
    let mut c = KeyCount::default();
    ks.walk_keys_in(part.map_or(0, |p| p.0), db, None, i64::MIN, |k, r| {
        if part.is_none_or(|(p, n)| slot::key_partition(k, n) == p) {
            c.keys += 1;
            c.expires += u64::from(r.expire_at_ms.is_some());
        }
        true
    })
    .unwrap();
    c
}

fn push(ks: &Keyspace, store: &str, n: usize) -> u32 {
    let id = ks
        .push_begin(store, DuplicatePolicy::Error, None, None)
        .unwrap();
    let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| (format!("k{i:04}").into_bytes(), b"pushed".to_vec()))
        .collect();
    ks.push_add(id, None, recs.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
    ks.push_commit(id, None).unwrap().version
}

#[test]
fn counts_follow_pushes_streamed_writes_rollbacks_and_store_deletion() {
    let fs = MemFs::new();
    let ks = open(&fs, 1);
    let count = |ks: &Keyspace| ks.key_count(0, None);
    set(&ks, 0, b"a", false);
    set(&ks, 0, b"b", true);
    set(&ks, 1, b"a", true);
    ks.create_store("s", b"s:", 0).unwrap();
    set(&ks, 0, b"s:x", true);
    assert_eq!(
        count(&ks),
        KeyCount {
            keys: 3,
            expires: 2
        }
    );
    assert_eq!(
        ks.key_count(1, None),
        KeyCount {
            keys: 1,
            expires: 1
        }
    );

    push(&ks, "s", 100);
    // The pushed version replaces the store's keys.
    assert_eq!(
        count(&ks),
        KeyCount {
            keys: 102,
            expires: 1
        }
    );
    assert_eq!(count(&ks), walked(&ks, 0, None));
    // Streamed writes land on the current and the previous version.
    set(&ks, 0, b"s:k0001", true);
    set(&ks, 0, b"s:new", false);
    del(&ks, b"s:k0002");
    assert_eq!(
        count(&ks),
        KeyCount {
            keys: 102,
            expires: 2
        }
    );
    assert_eq!(count(&ks), walked(&ks, 0, None));

    ks.rollback_store("s", None).unwrap();
    assert_eq!(count(&ks), walked(&ks, 0, None));
    // The previous version had the streamed writes too.
    assert_eq!(
        count(&ks),
        KeyCount {
            keys: 5,
            expires: 3
        }
    );

    ks.close().unwrap();
    drop(ks);
    let ks = open(&fs, 1);
    assert_eq!(
        count(&ks),
        KeyCount {
            keys: 5,
            expires: 3
        }
    );
    ks.delete_store("s").unwrap();
    ks.maintenance_pass().unwrap();
    assert_eq!(
        count(&ks),
        KeyCount {
            keys: 2,
            expires: 1
        }
    );
    assert_eq!(count(&ks), walked(&ks, 0, None));
    ks.close().unwrap();
}

#[test]
fn a_database_written_before_counts_were_kept_is_counted_at_its_first_open() {
    let fs = MemFs::new();
    let opts = options(&fs, 1);
    {
        // Records as the keyspace lays them out, written straight into the engine.
        let db = rialto_lsm::Db::open(Path::new("/ks/db"), opts.engine.clone()).unwrap();
        let mut b = rialto_engine::WriteBatch::new();
        for i in 0..50u32 {
            let mut k = vec![0x01, 0];
            k.extend_from_slice(format!("key{i}").as_bytes());
            // No TTL: flags 0, then the value.
            b.put(&k, b"\0v");
        }
        let mut k = vec![0x01, 3];
        k.extend_from_slice(b"ttl");
        let mut v = vec![0x01];
        v.extend_from_slice(&(NOW + 60_000).to_le_bytes());
        v.push(b'v');
        b.put(&k, &v);
        db.write(b, rialto_engine::WriteOptions::default()).unwrap();
        db.close().unwrap();
    }
    let ks = Keyspace::open(Path::new("/ks/db"), opts).unwrap();
    assert_eq!(
        ks.key_count(0, None),
        KeyCount {
            keys: 50,
            expires: 0
        }
    );
    assert_eq!(
        ks.key_count(3, None),
        KeyCount {
            keys: 1,
            expires: 1
        }
    );
    set(&ks, 0, b"key1", true);
    set(&ks, 0, b"key50", false);
    ks.close().unwrap();
    drop(ks);
    let ks = open(&fs, 1);
    assert_eq!(
        ks.key_count(0, None),
        KeyCount {
            keys: 51,
            expires: 1
        }
    );
    ks.close().unwrap();
}

/// Records already in key order.
struct InOrder(Vec<(Vec<u8>, Vec<u8>)>, usize);

impl SortedRecords for InOrder {
    fn next_record(&mut self) -> rialto_keyspace::StoreResult<Option<(&[u8], &[u8])>> {
        let i = self.1;
        self.1 += 1;
        Ok(self.0.get(i).map(|(k, v)| (k.as_slice(), v.as_slice())))
    }
}

#[test]
fn in_cluster_mode_each_partition_counts_the_version_it_serves() {
    const PARTS: u32 = 3;
    const ID: u32 = 9;
    let fs = MemFs::new();
    let ks = open(&fs, PARTS);
    let at = std::sync::atomic::AtomicU64::new(1);
    let part = |p: u32, op: PartStoreOp| {
        let at = at.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ks.execute(Op::new(
            0,
            NOW,
            OpKind::PartitionStore {
                partition: p,
                at,
                op,
            },
        ))
        .unwrap();
    };
    for i in 0..30 {
        set(&ks, 0, format!("d{i}").as_bytes(), i % 3 == 0);
    }
    for p in 0..PARTS {
        part(
            p,
            PartStoreOp::Create {
                name: "f".into(),
                id: ID,
                prefix: Bytes::from_static(b"f:"),
                created_ms: 1,
                settings: StoreSettings::default(),
            },
        );
    }
    let mut records: Vec<(Vec<u8>, Vec<u8>)> = (0..40)
        .map(|i| (format!("{i:03}").into_bytes(), b"x".to_vec()))
        .collect();
    records.sort();
    ks.stage_sorted(ID, 2, b"f:", Compression::None, &mut InOrder(records, 0))
        .unwrap();
    let check = |ks: &Keyspace| {
        let mut total = 0;
        for p in 0..PARTS {
            let c = ks.key_count(0, Some(p));
            assert_eq!(c, walked(ks, 0, Some((p, PARTS))), "partition {p}");
            total += c.keys;
        }
        total
    };
    assert_eq!(check(&ks), 30);
    for p in 0..PARTS {
        part(
            p,
            PartStoreOp::PushBegin {
                name: "f".into(),
                id: ID,
                version: 2,
                started_ms: 2,
            },
        );
    }
    // Written during partition 1's push: replayed onto version 2 at its swap.
    let streamed = (0..)
        .map(|i| format!("f:s{i}").into_bytes())
        .find(|k| slot::key_partition(k, PARTS) == 1)
        .unwrap();
    set(&ks, 0, &streamed, false);
    for p in 0..PARTS {
        part(
            p,
            PartStoreOp::PushEnd {
                name: "f".into(),
                id: ID,
                version: 2,
                swap: Some(VersionInfo {
                    number: 2,
                    records: 40,
                    bytes: 0,
                    created_ms: 3,
                }),
            },
        );
        check(&ks);
    }
    assert_eq!(check(&ks), 71);
    part(
        0,
        PartStoreOp::Rollback {
            name: "f".into(),
            id: ID,
            to: 1,
        },
    );
    let back = records_in_partition(40, 0, PARTS);
    assert_eq!(check(&ks), 71 - back);
    ks.close().unwrap();
    drop(ks);
    let ks = open(&fs, PARTS);
    assert_eq!(check(&ks), 71 - back);
    ks.close().unwrap();
}

/// How many of the pushed records `f:000`.. fall in partition `p`.
fn records_in_partition(n: usize, p: u32, parts: u32) -> u64 {
    (0..n)
        .filter(|i| slot::key_partition(format!("f:{i:03}").as_bytes(), parts) == p)
        .count() as u64
}
