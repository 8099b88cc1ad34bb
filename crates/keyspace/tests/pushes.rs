//! Pushes and rollbacks as operators see them: a push is named by the number of the version
//! it loads and belongs to whoever began it, its spill directory goes when it ends, and a
//! rollback only ever goes back.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rialto_io::{Clock, Fs, MemFs, SystemClock};
use rialto_keyspace::{
    DuplicatePolicy, Keyspace, KeyspaceOptions, PushGuard, StoreError, StoreMeta, StoreOptions,
};

const TMP: &str = "/ks/push-tmp";

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
                // Small: a few hundred records spill runs into the push's directory.
                push_memory_limit: 64 << 10,
                push_tmp_dir: TMP.into(),
                push_threads: 1,
                push_nice: rialto_io::ThreadPriority::Nice(0),
                push_page_cache: rialto_keyspace::PushPageCache::All,
                push_guard: PushGuard::default(),
                partitions: 1,
            },
        },
    )
    .unwrap()
}

fn begin(ks: &Keyspace, store: &str, owner: Option<u64>) -> u64 {
    ks.push_begin(store, DuplicatePolicy::Error, None, owner)
        .unwrap()
}

/// `n` records of about 1 KiB, tagged.
fn records(n: usize, tag: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            (
                format!("k{i:05}").into_bytes(),
                format!("{tag}-{i}-{}", "x".repeat(1000)).into_bytes(),
            )
        })
        .collect()
}

fn add(ks: &Keyspace, id: u64, caller: Option<u64>, recs: &[(Vec<u8>, Vec<u8>)]) {
    ks.push_add(id, caller, recs.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
}

fn push(ks: &Keyspace, store: &str, tag: &str) -> u32 {
    let id = begin(ks, store, None);
    add(ks, id, None, &records(10, tag));
    ks.push_commit(id, None).unwrap().version
}

fn get(ks: &Keyspace, key: &str) -> Option<Bytes> {
    ks.read(0, ks.now_ms(), |k| k.get(key.as_bytes()).unwrap())
        .map(|r| r.value)
}

fn tag_of(ks: &Keyspace, store: &str) -> Option<String> {
    get(ks, &format!("{store}:k00001")).map(|v| {
        let v = String::from_utf8_lossy(&v).into_owned();
        v.split('-').next().unwrap_or_default().to_string()
    })
}

/// The version a rollback without a version goes to (0: none).
fn previous(m: &StoreMeta) -> u32 {
    m.previous().map_or(0, |v| v.number)
}

fn spill_dirs(fs: &MemFs) -> Vec<String> {
    let mut v = fs.list_dir(Path::new(TMP)).unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_push_is_named_by_the_version_it_loads_even_when_stores_run_in_step() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("a", b"a:", 0).unwrap();
    ks.create_store("b", b"b:", 0).unwrap();
    // Both stores are at version 1: their next number is 2 in each.
    let a = begin(&ks, "a", Some(7));
    let b = begin(&ks, "b", Some(8));
    assert_eq!(a, 2);
    assert_ne!(a, b, "two pushes in progress never share an id");
    let cat = ks.catalog();
    for (store, id) in [("a", a), ("b", b)] {
        let pushing = cat.get(store).unwrap().pushing.unwrap().version;
        assert_eq!(u64::from(pushing), id, "{store}: id is the pushing version");
    }
    drop(cat);
    let mut listed = ks.pushes();
    listed.sort();
    assert_eq!(listed, vec![(a, "a".to_string()), (b, "b".to_string())]);
    add(&ks, a, Some(7), &records(10, "a"));
    add(&ks, b, Some(8), &records(10, "b"));
    assert_eq!(ks.push_commit(a, Some(7)).unwrap().version as u64, a);
    assert_eq!(ks.push_commit(b, Some(8)).unwrap().version as u64, b);
    // The number a push skipped is not reused in its store: versions only grow.
    let next = begin(&ks, "b", None);
    assert!(next > b, "{next} after {b}");
    ks.push_abort(next, None).unwrap();
    ks.close().unwrap();
}

#[test]
fn only_the_connection_that_began_a_push_can_add_commit_or_abort_it() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("s", b"s:", 0).unwrap();
    let id = begin(&ks, "s", Some(14));
    let recs = records(10, "mine");
    let theirs = ks.push_add(id, Some(15), recs.iter().map(|(k, v)| (&k[..], &v[..])));
    assert!(
        matches!(theirs, Err(StoreError::NotOwner { id: i, owner: 14 }) if i == id),
        "{theirs:?}"
    );
    let text = theirs.unwrap_err().to_string();
    assert!(
        text.contains("another connection") && text.contains("14"),
        "{text}"
    );
    assert!(matches!(
        ks.push_abort(id, Some(15)),
        Err(StoreError::NotOwner { .. })
    ));
    assert!(matches!(
        ks.push_commit(id, Some(15)),
        Err(StoreError::NotOwner { .. })
    ));
    // The owner was not disturbed.
    add(&ks, id, Some(14), &recs);
    let r = ks.push_commit(id, Some(14)).unwrap();
    assert_eq!(r.records, 10);
    assert_eq!(tag_of(&ks, "s").as_deref(), Some("mine"));
    ks.close().unwrap();
}

#[test]
fn a_push_spill_directory_goes_when_the_push_ends_and_leftovers_at_the_next_start() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("s", b"s:", 0).unwrap();

    // Committed (with runs spilled).
    let id = begin(&ks, "s", None);
    add(&ks, id, None, &records(300, "a"));
    assert_eq!(spill_dirs(&fs), vec![format!("push-{id}")]);
    assert!(ks.push_commit(id, None).unwrap().runs_spilled > 0);
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));

    // Aborted.
    let id = begin(&ks, "s", None);
    add(&ks, id, None, &records(300, "b"));
    ks.push_abort(id, None).unwrap();
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));

    // Failed: a duplicate key, found at commit.
    let id = begin(&ks, "s", None);
    add(&ks, id, None, &records(300, "c"));
    add(&ks, id, None, &records(1, "c"));
    assert!(ks.push_commit(id, None).is_err());
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));

    // Refused by the guard: nothing loaded.
    let id = begin(&ks, "s", None);
    assert!(matches!(
        ks.push_commit(id, None),
        Err(StoreError::Refused(_))
    ));
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));
    assert_eq!(tag_of(&ks, "s").as_deref(), Some("a"));
    ks.close().unwrap();
    drop(ks);

    // What a stop left (a run in a push's directory, an empty one) is swept at the start.
    fs.create_dir_all(Path::new("/ks/push-tmp/push-41"))
        .unwrap();
    fs.create(Path::new("/ks/push-tmp/push-41/run-0")).unwrap();
    fs.create_dir_all(Path::new("/ks/push-tmp/push-42"))
        .unwrap();
    let ks = open(&fs);
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));
    ks.close().unwrap();
}

#[test]
fn a_rollback_goes_back_once_and_retires_the_version_it_leaves() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("s", b"s:", 0).unwrap();
    let v2 = push(&ks, "s", "two");
    let v3 = push(&ks, "s", "three");
    assert_eq!((v2, v3), (2, 3));
    ks.maintenance_pass().unwrap();

    // A version newer than the current one, or one not kept, is refused with the reason.
    let e = ks.rollback_store("s", Some(4)).unwrap_err();
    assert!(matches!(e, StoreError::RollbackForward { .. }), "{e}");
    let e = ks.rollback_store("s", Some(1)).unwrap_err();
    assert!(
        matches!(e, StoreError::VersionNotKept { ref kept, .. } if *kept == [2]),
        "{e}"
    );
    assert!(e.to_string().contains("roll back to is 2"), "{e}");
    assert_eq!(ks.catalog().get("s").unwrap().current.number, 3);

    let m = ks.rollback_store("s", Some(2)).unwrap();
    assert_eq!((m.current.number, previous(&m)), (2, 0));
    assert_eq!(tag_of(&ks, "s").as_deref(), Some("two"));
    // The version left is retired: maintenance removes it.
    assert_eq!(ks.maintenance_pass().unwrap().ranges_removed, 1);

    // Going back to where it is changes nothing; a second plain rollback is refused, not
    // a flip back to the version just left.
    let m = ks.rollback_store("s", Some(2)).unwrap();
    assert_eq!(m.current.number, 2);
    let e = ks.rollback_store("s", None).unwrap_err();
    assert!(
        matches!(e, StoreError::NoPrevious { current: 2, .. }),
        "{e}"
    );
    assert_eq!(tag_of(&ks, "s").as_deref(), Some("two"));

    // The next push keeps 2 as the version to go back to.
    let v4 = push(&ks, "s", "four");
    let m = ks.rollback_store("s", None).unwrap();
    assert_eq!((m.current.number, previous(&m)), (2, 0));
    assert_eq!(tag_of(&ks, "s").as_deref(), Some("two"));
    assert!(v4 > v3);
    ks.close().unwrap();
    drop(ks);

    // And it holds over a restart.
    let ks = open(&fs);
    let s = Arc::clone(ks.catalog().get("s").unwrap());
    assert_eq!((s.current.number, previous(&s)), (2, 0));
    assert_eq!(tag_of(&ks, "s").as_deref(), Some("two"));
    ks.close().unwrap();
}

#[test]
fn a_rollback_interrupted_before_it_retired_the_version_left_is_finished_at_the_start() {
    use rialto_keyspace::{Op, OpKind, StoreOp};
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("s", b"s:", 0).unwrap();
    push(&ks, "s", "two");
    push(&ks, "s", "three");
    ks.maintenance_pass().unwrap();
    // The rollback's first change alone, as a stop right after it leaves the store.
    let op = Op::new(
        0,
        ks.now_ms(),
        OpKind::Store(StoreOp::Rollback {
            name: "s".into(),
            to: None,
        }),
    );
    ks.execute(op).unwrap();
    let s = Arc::clone(ks.catalog().get("s").unwrap());
    assert_eq!((s.current.number, previous(&s)), (2, 0));
    assert_eq!(s.left().map(|v| v.number).collect::<Vec<_>>(), [3]);
    // Not a version to roll back to: a rollback only goes back.
    assert!(matches!(
        ks.rollback_store("s", Some(3)),
        Err(StoreError::RollbackForward { .. })
    ));
    ks.close().unwrap();
    drop(ks);

    let ks = open(&fs);
    let s = Arc::clone(ks.catalog().get("s").unwrap());
    assert_eq!((s.current.number, previous(&s)), (2, 0));
    assert_eq!(tag_of(&ks, "s").as_deref(), Some("two"));
    assert_eq!(ks.maintenance_pass().unwrap().ranges_removed, 1);
    ks.close().unwrap();
}

/// A push with the hash layout takes packed hash payloads only: anything else is refused
/// with the key named and aborts the push, the current version serving; a good one commits
/// hashes.
#[test]
fn a_hash_push_refuses_a_value_that_is_no_hash_and_loads_those_that_are() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("h", b"h:", 0).unwrap();
    push(&ks, "h", "a");
    let hash = |id: u64| {
        ks.push_begin_with(
            "h",
            rialto_keyspace::PushOptions {
                layout: rialto_keyspace::PushLayout::Hash,
                owner: Some(id),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let mut good = Vec::new();
    rialto_keyspace::encode_hash_payload(&[(b"f", b"v")], &mut good);
    let id = hash(7);
    let e = ks
        .push_add(id, Some(7), [(&b"k1"[..], &good[..]), (b"k2", b"text")])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "push failed: the value of key 'k2' is not a hash: it does not decode as a packed hash"
    );
    assert!(ks.pushes().is_empty(), "the push was aborted");
    assert_eq!(tag_of(&ks, "h").as_deref(), Some("a"));

    let id = hash(8);
    let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..10)
        .map(|i| (format!("k{i:05}").into_bytes(), good.clone()))
        .collect();
    add(&ks, id, Some(8), &recs);
    ks.push_commit(id, Some(8)).unwrap();
    let rec = ks
        .read(0, ks.now_ms(), |k| k.get(b"h:k00001").unwrap())
        .unwrap();
    assert_eq!(rec.kind, rialto_keyspace::Kind::Hash);
    assert_eq!(&rec.value[..], &good[..]);
}
