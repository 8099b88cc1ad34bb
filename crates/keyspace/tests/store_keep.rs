//! A store keeping several versions (`keep`): every kept version receives the streamed
//! writes, a rollback goes to any kept older version and retires the versions newer than it,
//! a smaller `keep` retires the oldest at once, and a stop between a rollback's two changes
//! is finished at the next start or by the next push.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rialto_io::{Clock, Fs, MemFs, SystemClock};
use rialto_keyspace::{
    DuplicatePolicy, Keyspace, KeyspaceOptions, Op, OpKind, PushGuard, Set, StoreError, StoreMeta,
    StoreOp, StoreOptions, StoreSettings,
};

fn open(fs: &MemFs) -> Keyspace {
    let fsref: rialto_io::FsRef = Arc::new(fs.clone());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    fs.create_dir_all(Path::new("/ks")).unwrap();
    Keyspace::open(
        Path::new("/ks/db"),
        KeyspaceOptions {
            engine: rialto_lsm::Options {
                fs: fsref,
                clock,
                ..rialto_lsm::Options::default()
            },
            merger: rialto_txn::MergerOptions::default(),
            stores: StoreOptions {
                push_memory_limit: 1 << 20,
                push_tmp_dir: "/ks/push-tmp".into(),
                push_threads: 1,
                push_nice: rialto_io::ThreadPriority::Nice(0),
                push_page_cache: rialto_keyspace::PushPageCache::All,
                // Pushes of a few records replace versions of a few records.
                push_guard: PushGuard {
                    min_records: 1,
                    max_shrink_percent: 100,
                },
                partitions: 1,
            },
        },
    )
    .unwrap()
}

fn keep(n: u32) -> StoreSettings {
    StoreSettings {
        compression: None,
        keep: Some(n),
    }
}

/// Pushes version `tag`: keys k0..k9 holding `tag`.
fn push(ks: &Keyspace, tag: &str) -> u32 {
    let id = ks
        .push_begin("s", DuplicatePolicy::Error, None, None)
        .unwrap();
    let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..10)
        .map(|i| (format!("k{i}").into_bytes(), tag.as_bytes().to_vec()))
        .collect();
    ks.push_add(id, None, recs.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
    ks.push_commit(id, None).unwrap().version
}

fn set(ks: &Keyspace, key: &str, value: &str) {
    let op = Op::new(
        0,
        ks.now_ms(),
        OpKind::Set(Set {
            key: Bytes::copy_from_slice(key.as_bytes()),
            value: Bytes::copy_from_slice(value.as_bytes()),
            expire_at_ms: None,
            keep_ttl: false,
            cond: None,
            get: false,
        }),
    );
    ks.execute(op).unwrap();
}

fn get(ks: &Keyspace, key: &str) -> Option<String> {
    ks.read(0, ks.now_ms(), |r| r.get(key.as_bytes()).unwrap())
        .map(|r| String::from_utf8_lossy(&r.value).into_owned())
}

fn store(ks: &Keyspace) -> Arc<StoreMeta> {
    Arc::clone(ks.catalog().get("s").unwrap())
}

fn older(m: &StoreMeta) -> Vec<u32> {
    m.older().map(|v| v.number).collect()
}

#[test]
fn a_rollback_goes_to_any_kept_version_and_streamed_writes_reach_every_kept_one() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let m = ks.create_store_with("s", b"s:", 0, keep(4)).unwrap();
    assert_eq!((m.keep, older(&m)), (4, vec![]));
    for tag in ["v2", "v3", "v4"] {
        push(&ks, tag);
    }
    // A streamed write lands on the current version and every kept one.
    set(&ks, "s:streamed", "early");
    assert_eq!(push(&ks, "v5"), 5);
    assert_eq!(older(&store(&ks)), [4, 3, 2]);
    set(&ks, "s:streamed", "late");
    set(&ks, "s:k1", "overwritten");
    // Version 1 was pushed out by the fourth older version: retired, then removed.
    assert_eq!(ks.maintenance_pass().unwrap().ranges_removed, 1);

    // Not kept, forward: refused with the versions it could go to.
    let e = ks.rollback_store("s", Some(1)).unwrap_err();
    assert!(
        matches!(&e, StoreError::VersionNotKept { kept, .. } if *kept == [4, 3, 2]),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("the versions to roll back to are 4, 3, 2"),
        "{e}"
    );
    assert!(matches!(
        ks.rollback_store("s", Some(6)),
        Err(StoreError::RollbackForward { .. })
    ));

    // Two versions back at once: 5 and 4 are retired, 2 stays kept.
    let m = ks.rollback_store("s", Some(3)).unwrap();
    assert_eq!((m.current.number, older(&m)), (3, vec![2]));
    assert_eq!(m.left().count(), 0, "the versions left are retired");
    assert_eq!(get(&ks, "s:k0").as_deref(), Some("v3"));
    assert_eq!(get(&ks, "s:k1").as_deref(), Some("overwritten"));
    assert_eq!(get(&ks, "s:streamed").as_deref(), Some("late"));
    assert_eq!(ks.maintenance_pass().unwrap().ranges_removed, 2);
    // Naming the current version changes nothing.
    assert_eq!(ks.rollback_store("s", Some(3)).unwrap().current.number, 3);

    // Over a restart: the kept versions and keep stay.
    ks.close().unwrap();
    drop(ks);
    let ks = open(&fs);
    let m = store(&ks);
    assert_eq!((m.current.number, older(&m), m.keep), (3, vec![2], 4));
    // Without a version: the newest older one.
    let m = ks.rollback_store("s", None).unwrap();
    assert_eq!((m.current.number, older(&m)), (2, vec![]));
    assert_eq!(get(&ks, "s:k0").as_deref(), Some("v2"));
    assert_eq!(get(&ks, "s:streamed").as_deref(), Some("late"));
    assert!(matches!(
        ks.rollback_store("s", None),
        Err(StoreError::NoPrevious { current: 2, .. })
    ));
    ks.close().unwrap();
}

#[test]
fn a_smaller_keep_retires_the_oldest_versions_at_once_and_a_larger_one_keeps_more() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store_with("s", b"s:", 0, keep(4)).unwrap();
    for tag in ["v2", "v3", "v4", "v5"] {
        push(&ks, tag);
    }
    ks.maintenance_pass().unwrap();
    let m = ks.configure_store("s", keep(2)).unwrap();
    assert_eq!((m.keep, older(&m)), (2, vec![4]));
    assert_eq!(get(&ks, "s:k0").as_deref(), Some("v5"));
    assert_eq!(ks.maintenance_pass().unwrap().ranges_removed, 2);
    let m = ks.configure_store("s", keep(1)).unwrap();
    assert_eq!(older(&m), Vec::<u32>::new());
    push(&ks, "v6");
    assert_eq!(older(&store(&ks)), Vec::<u32>::new(), "keep 1: no older");
    ks.configure_store("s", keep(3)).unwrap();
    push(&ks, "v7");
    push(&ks, "v8");
    assert_eq!(older(&store(&ks)), [7, 6]);
    // The default store keeps two.
    let m = ks.create_store("t", b"t:", 0).unwrap();
    assert_eq!(m.keep, 2);
    ks.close().unwrap();
}

#[test]
fn a_rollback_stopped_before_retiring_the_versions_it_left_is_finished_at_the_start() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store_with("s", b"s:", 0, keep(4)).unwrap();
    for tag in ["v2", "v3", "v4", "v5"] {
        push(&ks, tag);
    }
    ks.maintenance_pass().unwrap();
    // The rollback's first change alone, as a stop right after it leaves the store.
    let op = Op::new(
        0,
        ks.now_ms(),
        OpKind::Store(StoreOp::Rollback {
            name: "s".into(),
            to: Some(3),
        }),
    );
    ks.execute(op).unwrap();
    let m = store(&ks);
    assert_eq!(m.current.number, 3);
    assert_eq!(m.left().map(|v| v.number).collect::<Vec<_>>(), [5, 4]);
    assert_eq!(older(&m), [2]);
    // The versions left still receive the streamed writes; none is a rollback target.
    set(&ks, "s:between", "x");
    assert!(matches!(
        ks.rollback_store("s", Some(4)),
        Err(StoreError::RollbackForward { .. })
    ));
    ks.close().unwrap();
    drop(ks);

    let ks = open(&fs);
    let m = store(&ks);
    assert_eq!(
        (m.current.number, m.left().count(), older(&m)),
        (3, 0, vec![2])
    );
    assert_eq!(get(&ks, "s:k0").as_deref(), Some("v3"));
    assert_eq!(get(&ks, "s:between").as_deref(), Some("x"));
    assert_eq!(ks.maintenance_pass().unwrap().ranges_removed, 2);
    ks.close().unwrap();
}

#[test]
fn a_push_retires_the_versions_a_stopped_rollback_left() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store_with("s", b"s:", 0, keep(3)).unwrap();
    for tag in ["v2", "v3", "v4"] {
        push(&ks, tag);
    }
    ks.maintenance_pass().unwrap();
    let op = Op::new(
        0,
        ks.now_ms(),
        OpKind::Store(StoreOp::Rollback {
            name: "s".into(),
            to: Some(2),
        }),
    );
    ks.execute(op).unwrap();
    assert_eq!(store(&ks).left().count(), 2);
    assert_eq!(push(&ks, "v5"), 5);
    let m = store(&ks);
    assert_eq!((m.current.number, older(&m)), (5, vec![2]));
    assert_eq!(m.left().count(), 0);
    assert_eq!(ks.maintenance_pass().unwrap().ranges_removed, 2);
    assert_eq!(ks.rollback_store("s", None).unwrap().current.number, 2);
    assert_eq!(get(&ks, "s:k0").as_deref(), Some("v2"));
    ks.close().unwrap();
}
