//! Stores in cluster mode: each partition of the log creates, swaps and rolls back a store at
//! its own offsets (`OpKind::PartitionStore`), so a key is read from the version its own
//! partition serves, a version's data is loaded once for every partition (`stage_sorted`),
//! streamed writes made during a partition's push are replayed onto the new version at that
//! partition's swap, and a version's data goes only once every partition has retired it.

mod common;

use bytes::Bytes;
use rialto_io::MemFs;
use rialto_keyspace::{
    slot, Compression, Keyspace, Op, OpKind, PartStoreOp, Set, SortedRecords, StoreSettings, Value,
    VersionInfo,
};

const PARTS: u32 = 3;
const ID: u32 = 5;

fn open(fs: &MemFs) -> Keyspace {
    let mut o = common::options(fs);
    o.engine.write_buffer_size = 64 << 10;
    o.stores.partitions = PARTS;
    Keyspace::open(std::path::Path::new("/ks/db"), o).unwrap()
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

/// The cluster catalog's offset each change is derived from: later and later.
static AT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn part(ks: &Keyspace, p: u32, op: PartStoreOp) -> rialto_keyspace::Result<Value> {
    let at = AT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    part_at(ks, p, at, op)
}

fn part_at(ks: &Keyspace, p: u32, at: u64, op: PartStoreOp) -> rialto_keyspace::Result<Value> {
    ks.execute(Op::new(
        0,
        1_700_000_000_000,
        OpKind::PartitionStore {
            partition: p,
            at,
            op,
        },
    ))
}

fn create(ks: &Keyspace, p: u32) -> Value {
    part(
        ks,
        p,
        PartStoreOp::Create {
            name: "f".into(),
            id: ID,
            prefix: Bytes::from_static(b"f:"),
            created_ms: 1,
            settings: StoreSettings::default(),
        },
    )
    .unwrap()
}

fn set(ks: &Keyspace, k: &[u8], v: &[u8]) {
    let op = Op::new(
        0,
        1_700_000_000_000,
        OpKind::Set(Set {
            key: Bytes::copy_from_slice(k),
            value: Bytes::copy_from_slice(v),
            expire_at_ms: None,
            keep_ttl: false,
            cond: None,
            get: false,
        }),
    );
    ks.execute(op).unwrap();
}

fn get(ks: &Keyspace, k: &[u8]) -> Option<Vec<u8>> {
    ks.read(0, 1_700_000_000_000, |r| r.get(k))
        .unwrap()
        .map(|r| r.value.to_vec())
}

/// A key under the store's prefix in each partition.
fn keys() -> Vec<Vec<u8>> {
    (0..PARTS)
        .map(|p| {
            (0..)
                .map(|i| format!("f:{i}").into_bytes())
                .find(|k| slot::key_partition(k, PARTS) == p)
                .unwrap()
        })
        .collect()
}

fn begin(ks: &Keyspace, p: u32, version: u32) {
    part(
        ks,
        p,
        PartStoreOp::PushBegin {
            name: "f".into(),
            id: ID,
            version,
            started_ms: 2,
        },
    )
    .unwrap();
}

fn swap(ks: &Keyspace, p: u32, version: u32) {
    part(
        ks,
        p,
        PartStoreOp::PushEnd {
            name: "f".into(),
            id: ID,
            version,
            swap: Some(VersionInfo {
                number: version,
                records: 3,
                bytes: 30,
                created_ms: 3,
            }),
        },
    )
    .unwrap();
}

#[test]
fn each_partition_serves_the_version_it_swapped_in() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let k = keys();
    // Created in partition 0 only: its key is the store's, the others the default store's.
    let made = create(&ks, 0);
    assert!(matches!(made, Value::Store(ref m) if m.id == ID));
    set(&ks, &k[0], b"old0");
    set(&ks, &k[1], b"default1");
    assert_eq!(ks.catalog().route(&k[0]).map(|s| s.id), Some(ID));
    assert_eq!(ks.catalog().route(&k[1]), None);
    // Applied again, a create changes nothing.
    assert_eq!(create(&ks, 0), made);
    for p in 1..PARTS {
        create(&ks, p);
    }
    // The default store's key under the prefix is hidden now, as on one node.
    assert_eq!(get(&ks, &k[1]), None);
    set(&ks, &k[1], b"old1");

    // Version 2 is loaded once, for every partition, before any partition swaps it in.
    let mut records: Vec<(Vec<u8>, Vec<u8>)> = k
        .iter()
        .enumerate()
        .map(|(i, key)| (key[2..].to_vec(), format!("new{i}").into_bytes()))
        .collect();
    records.sort();
    assert_eq!(ks.staged_version(ID, 2).unwrap(), None);
    let staged = ks
        .stage_sorted(ID, 2, b"f:", Compression::None, &mut InOrder(records, 0))
        .unwrap();
    assert_eq!(staged.records, 3);
    assert_eq!(
        ks.staged_version(ID, 2).unwrap().map(|s| s.records),
        Some(3)
    );
    for p in 0..PARTS {
        begin(&ks, p, 2);
    }
    // A streamed write during partition 1's push lands on its current version, and is kept.
    set(&ks, &k[1], b"streamed1");
    assert_eq!(get(&ks, &k[0]), Some(b"old0".to_vec()));

    swap(&ks, 0, 2);
    assert_eq!(get(&ks, &k[0]), Some(b"new0".to_vec()));
    assert_eq!(get(&ks, &k[1]), Some(b"streamed1".to_vec()));
    assert_eq!(get(&ks, &k[2]), None);
    // A swap applied again changes nothing.
    swap(&ks, 0, 2);
    assert_eq!(get(&ks, &k[0]), Some(b"new0".to_vec()));

    swap(&ks, 1, 2);
    // The write made during the push was replayed onto the new version.
    assert_eq!(get(&ks, &k[1]), Some(b"streamed1".to_vec()));
    swap(&ks, 2, 2);
    assert_eq!(get(&ks, &k[2]), Some(b"new2".to_vec()));

    // A rollback of one partition.
    part(
        &ks,
        0,
        PartStoreOp::Rollback {
            name: "f".into(),
            id: ID,
            to: 1,
        },
    )
    .unwrap();
    assert_eq!(get(&ks, &k[0]), Some(b"old0".to_vec()));
    assert_eq!(get(&ks, &k[2]), Some(b"new2".to_vec()));

    // Version 2 is retired by partition 0 only: its data stays for the others.
    ks.maintenance_pass().unwrap();
    assert_eq!(get(&ks, &k[2]), Some(b"new2".to_vec()));

    // Reopened, each partition routes as before.
    ks.close().unwrap();
    drop(ks);
    let ks = open(&fs);
    assert_eq!(get(&ks, &k[0]), Some(b"old0".to_vec()));
    assert_eq!(get(&ks, &k[1]), Some(b"streamed1".to_vec()));
    assert_eq!(get(&ks, &k[2]), Some(b"new2".to_vec()));

    // A change derived from an older catalog than the partition followed is ignored, even
    // after a restart.
    let stale = part_at(
        &ks,
        1,
        0,
        PartStoreOp::Delete {
            name: "f".into(),
            id: ID,
        },
    )
    .unwrap();
    assert_eq!(stale, Value::Ok);
    assert_eq!(get(&ks, &k[1]), Some(b"streamed1".to_vec()));

    // Deleted by every partition, the store's data goes.
    for p in 0..PARTS {
        part(
            &ks,
            p,
            PartStoreOp::Delete {
                name: "f".into(),
                id: ID,
            },
        )
        .unwrap();
    }
    assert_eq!(get(&ks, &k[2]), None);
    let report = ks.maintenance_pass().unwrap();
    assert_eq!(report.ranges_removed, 1);
    ks.close().unwrap();
}

#[test]
fn an_aborted_push_keeps_the_current_version_and_conflicts_are_refused() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let k = keys();
    for p in 0..PARTS {
        create(&ks, p);
    }
    set(&ks, &k[0], b"v1");
    begin(&ks, 0, 2);
    set(&ks, &k[0], b"v1b");
    part(
        &ks,
        0,
        PartStoreOp::PushEnd {
            name: "f".into(),
            id: ID,
            version: 2,
            swap: None,
        },
    )
    .unwrap();
    assert_eq!(get(&ks, &k[0]), Some(b"v1b".to_vec()));
    // A begin of a version the partition is past changes nothing.
    begin(&ks, 0, 2);
    assert!(ks.catalog().get_in(0, "f").unwrap().pushing.is_none());
    // Another store under an overlapping prefix, or the same name with another id: refused.
    let e = part(
        &ks,
        1,
        PartStoreOp::Create {
            name: "g".into(),
            id: ID + 1,
            prefix: Bytes::from_static(b"f:x"),
            created_ms: 1,
            settings: StoreSettings::default(),
        },
    );
    assert!(e.is_err());
    let e = part(
        &ks,
        1,
        PartStoreOp::Create {
            name: "f".into(),
            id: ID + 1,
            prefix: Bytes::from_static(b"h:"),
            created_ms: 1,
            settings: StoreSettings::default(),
        },
    );
    assert!(e.is_err());
    // A partition out of range is refused.
    assert!(part(
        &ks,
        PARTS,
        PartStoreOp::Delete {
            name: "f".into(),
            id: ID
        }
    )
    .is_err());
    ks.close().unwrap();
}

/// A partition's store takes the catalog's compression at its creation and from a configure
/// change (idempotent, like every change), keeps it across a restart, and a version staged
/// with each codec reads back whole.
#[test]
fn a_partition_store_keeps_its_compression_and_staged_versions_read_back_with_each_codec() {
    let fs = MemFs::new();
    let ks = open(&fs);
    for p in 0..PARTS {
        part(
            &ks,
            p,
            PartStoreOp::Create {
                name: "f".into(),
                id: ID,
                prefix: Bytes::from_static(b"f:"),
                created_ms: 1,
                settings: StoreSettings {
                    compression: Some(Compression::Lz4),
                    keep: None,
                },
            },
        )
        .unwrap();
    }
    let codec = |ks: &Keyspace, p: u32| ks.catalog().get_in(p, "f").unwrap().compression;
    assert_eq!(codec(&ks, 2), Compression::Lz4);
    let zstd = PartStoreOp::Configure {
        name: "f".into(),
        id: ID,
        settings: StoreSettings {
            compression: Some(Compression::Zstd),
            keep: None,
        },
    };
    let first = part(&ks, 1, zstd.clone()).unwrap();
    assert_eq!(part(&ks, 1, zstd.clone()).unwrap(), first);
    assert_eq!(codec(&ks, 1), Compression::Zstd);
    assert_eq!(codec(&ks, 0), Compression::Lz4);
    // Another store's id is refused.
    assert!(part(
        &ks,
        1,
        PartStoreOp::Configure {
            name: "f".into(),
            id: ID + 1,
            settings: StoreSettings::default(),
        }
    )
    .is_err());

    let value = |i: usize, v: u32| format!(r#"{{"user":{i},"v":{v},"tags":["a","b","c"]}}"#);
    for (v, c) in [
        (2, Compression::None),
        (3, Compression::Lz4),
        (4, Compression::Zstd),
    ] {
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = (0..2000)
            .map(|i| (format!("{i}").into_bytes(), value(i, v).into_bytes()))
            .collect();
        records.sort();
        let staged = ks
            .stage_sorted(ID, v, b"f:", c, &mut InOrder(records, 0))
            .unwrap();
        assert_eq!(staged.records, 2000, "{c:?}");
        for p in 0..PARTS {
            begin(&ks, p, v);
            swap(&ks, p, v);
        }
        for i in [0usize, 1, 999, 1999] {
            let key = format!("f:{i}").into_bytes();
            assert_eq!(get(&ks, &key), Some(value(i, v).into_bytes()), "{c:?}");
        }
    }
    ks.close().unwrap();
    drop(ks);
    let ks = open(&fs);
    assert_eq!(codec(&ks, 1), Compression::Zstd);
    assert_eq!(codec(&ks, 2), Compression::Lz4);
    assert_eq!(get(&ks, b"f:1999"), Some(value(1999, 4).into_bytes()));
    ks.close().unwrap();
}

/// A partition's store keeps `keep` versions: its swaps keep them, a rollback goes to any of
/// them (retiring the newer ones in the same change, as every replica applies it at once), a
/// configure change to a smaller keep retires the oldest, and each partition does so alone.
#[test]
fn a_partition_keeps_its_versions_and_rolls_back_to_the_one_named() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let k = keys();
    for p in 0..PARTS {
        part(
            &ks,
            p,
            PartStoreOp::Create {
                name: "f".into(),
                id: ID,
                prefix: Bytes::from_static(b"f:"),
                created_ms: 1,
                settings: StoreSettings {
                    compression: None,
                    keep: Some(3),
                },
            },
        )
        .unwrap();
    }
    for v in 2..=4u32 {
        let mut records: Vec<(Vec<u8>, Vec<u8>)> = k
            .iter()
            .map(|key| (key[2..].to_vec(), format!("v{v}").into_bytes()))
            .collect();
        records.sort();
        ks.stage_sorted(ID, v, b"f:", Compression::None, &mut InOrder(records, 0))
            .unwrap();
        for p in 0..PARTS {
            begin(&ks, p, v);
            swap(&ks, p, v);
        }
    }
    let older = |ks: &Keyspace, p: u32| -> Vec<u32> {
        let cat = ks.catalog();
        let m = cat.get_in(p, "f").unwrap();
        m.older().map(|v| v.number).collect()
    };
    assert_eq!(older(&ks, 0), [3, 2]);
    // A streamed write reaches every kept version of its partition.
    set(&ks, &k[0], b"streamed");

    let rollback = |to| PartStoreOp::Rollback {
        name: "f".into(),
        id: ID,
        to,
    };
    // Not kept: refused with the versions it keeps.
    let e = part(&ks, 0, rollback(1)).unwrap_err();
    assert!(e.to_string().contains("are 3, 2"), "{e}");
    part(&ks, 0, rollback(2)).unwrap();
    assert_eq!(get(&ks, &k[0]), Some(b"streamed".to_vec()));
    assert_eq!(older(&ks, 0), Vec::<u32>::new());
    // Applied again, it changes nothing; the other partitions still serve version 4.
    part(&ks, 0, rollback(2)).unwrap();
    assert_eq!(get(&ks, &k[1]), Some(b"v4".to_vec()));
    assert_eq!(older(&ks, 1), [3, 2]);

    // A smaller keep in partition 1 retires its oldest version there.
    part(
        &ks,
        1,
        PartStoreOp::Configure {
            name: "f".into(),
            id: ID,
            settings: StoreSettings {
                compression: None,
                keep: Some(2),
            },
        },
    )
    .unwrap();
    assert_eq!(older(&ks, 1), [3]);

    ks.close().unwrap();
    drop(ks);
    let ks = open(&fs);
    assert_eq!(older(&ks, 1), [3]);
    assert_eq!(older(&ks, 2), [3, 2]);
    assert_eq!(get(&ks, &k[0]), Some(b"streamed".to_vec()));
    assert_eq!(get(&ks, &k[2]), Some(b"v4".to_vec()));
    ks.close().unwrap();
}
