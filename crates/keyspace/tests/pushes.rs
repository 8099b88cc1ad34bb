//! Pushes as operators see them: a push's spill directory goes when it ends.

use std::path::Path;
use std::sync::Arc;

use rialto_io::{Clock, Fs, MemFs, SystemClock};
use rialto_keyspace::{
    DuplicatePolicy, Keyspace, KeyspaceOptions, PushGuard, StoreError, StoreOptions,
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
            },
        },
    )
    .unwrap()
}

fn begin(ks: &Keyspace, store: &str) -> u64 {
    ks.push_begin(store, DuplicatePolicy::Error, None, None)
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

fn add(ks: &Keyspace, id: u64, recs: &[(Vec<u8>, Vec<u8>)]) {
    ks.push_add(id, recs.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
}

fn tag_of(ks: &Keyspace, store: &str) -> Option<String> {
    let key = format!("{store}:k00001");
    let v = ks.read(0, ks.now_ms(), |k| k.get(key.as_bytes()).unwrap())?;
    let v = String::from_utf8_lossy(&v.value).into_owned();
    Some(v.split('-').next().unwrap_or_default().to_string())
}

fn spill_dirs(fs: &MemFs) -> Vec<String> {
    let mut v = fs.list_dir(Path::new(TMP)).unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_push_spill_directory_goes_when_the_push_ends_and_leftovers_at_the_next_start() {
    let fs = MemFs::new();
    let ks = open(&fs);
    ks.create_store("s", b"s:", 0).unwrap();

    // Committed (with runs spilled).
    let id = begin(&ks, "s");
    add(&ks, id, &records(300, "a"));
    assert_eq!(spill_dirs(&fs), vec![format!("push-{id}")]);
    assert!(ks.push_commit(id).unwrap().runs_spilled > 0);
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));

    // Aborted.
    let id = begin(&ks, "s");
    add(&ks, id, &records(300, "b"));
    ks.push_abort(id).unwrap();
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));

    // Failed: a duplicate key, found at commit.
    let id = begin(&ks, "s");
    add(&ks, id, &records(300, "c"));
    add(&ks, id, &records(1, "c"));
    assert!(ks.push_commit(id).is_err());
    assert!(spill_dirs(&fs).is_empty(), "{:?}", spill_dirs(&fs));

    // Refused by the guard: nothing loaded.
    let id = begin(&ks, "s");
    assert!(matches!(ks.push_commit(id), Err(StoreError::Refused(_))));
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
