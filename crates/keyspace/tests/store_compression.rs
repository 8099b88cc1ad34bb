//! A store's compression: a push writes its version with the store's codec as the push
//! began, every codec reads back the same records before and after a reopen, a change
//! applies to later pushes, and a store created without one takes the engine's.

use std::path::Path;
use std::sync::Arc;

use rialto_io::{Clock, Fs, MemFs, SystemClock};
use rialto_keyspace::{
    Compression, DuplicatePolicy, Keyspace, KeyspaceOptions, PushGuard, PushReport, StoreOptions,
    StoreSettings,
};

const CODECS: [Compression; 3] = [Compression::None, Compression::Lz4, Compression::Zstd];

fn open(fs: &MemFs, compression: Compression) -> Keyspace {
    let fsref: rialto_io::FsRef = Arc::new(fs.clone());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    fs.create_dir_all(Path::new("/ks")).unwrap();
    Keyspace::open(
        Path::new("/ks/db"),
        KeyspaceOptions {
            engine: rialto_lsm::Options {
                fs: fsref,
                clock,
                compression,
                ..rialto_lsm::Options::default()
            },
            merger: rialto_txn::MergerOptions::default(),
            stores: StoreOptions {
                push_memory_limit: 1 << 20,
                push_tmp_dir: "/ks/push-tmp".into(),
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

/// Derived data as a feature store holds it: JSON-ish blobs repeating field names.
fn value(i: usize, tag: &str) -> Vec<u8> {
    format!(
        r#"{{"id":{i},"tag":"{tag}","country":"FR","score":0.{:04},"segments":["sports","news"],"clicks_7d":{}}}"#,
        i % 9973,
        i % 113
    )
    .into_bytes()
}

fn push(ks: &Keyspace, store: &str, n: usize, tag: &str) -> PushReport {
    let id = ks
        .push_begin(store, DuplicatePolicy::Error, None, None)
        .unwrap();
    let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| (format!("k{i:06}").into_bytes(), value(i, tag)))
        .collect();
    ks.push_add(id, None, recs.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
    ks.push_commit(id, None).unwrap()
}

/// Every record of `store`'s current version, as reads see it.
fn contents(ks: &Keyspace, store: &str, n: usize) -> Vec<Option<Vec<u8>>> {
    ks.read(0, ks.now_ms(), |r| {
        (0..n)
            .map(|i| {
                r.get(format!("{store}:k{i:06}").as_bytes())
                    .unwrap()
                    .map(|rec| rec.value.to_vec())
            })
            .collect()
    })
}

#[test]
fn a_version_pushed_with_each_codec_reads_back_the_same_and_survives_reopen() {
    let n = 3000;
    let want: Vec<Option<Vec<u8>>> = (0..n).map(|i| Some(value(i, "v"))).collect();
    let mut file_bytes = Vec::new();
    for codec in CODECS {
        let fs = MemFs::new();
        let ks = open(&fs, Compression::None);
        let settings = StoreSettings {
            compression: Some(codec),
            keep: None,
        };
        let m = ks.create_store_with("f", b"f:", 0, settings).unwrap();
        assert_eq!(m.compression, codec);
        let rep = push(&ks, "f", n, "v");
        file_bytes.push(rep.file_bytes);
        assert_eq!(contents(&ks, "f", n), want, "{codec:?}");
        ks.close().unwrap();
        drop(ks);
        let ks = open(&fs, Compression::None);
        assert_eq!(ks.catalog().get("f").unwrap().compression, codec);
        assert_eq!(contents(&ks, "f", n), want, "{codec:?} after reopen");
        ks.close().unwrap();
    }
    assert!(
        file_bytes[1] < file_bytes[0] * 3 / 4,
        "lz4 against none: {file_bytes:?}"
    );
    assert!(
        file_bytes[2] < file_bytes[1],
        "zstd against lz4: {file_bytes:?}"
    );
}

#[test]
fn a_codec_change_applies_to_pushes_begun_after_it() {
    let n = 2000;
    let fs = MemFs::new();
    let ks = open(&fs, Compression::None);
    ks.create_store("f", b"f:", 0).unwrap();
    let plain = push(&ks, "f", n, "a").file_bytes;

    // A push begun before the change keeps the codec it began with.
    let id = ks
        .push_begin("f", DuplicatePolicy::Error, None, None)
        .unwrap();
    let zstd = StoreSettings {
        compression: Some(Compression::Zstd),
        keep: None,
    };
    let m = ks.configure_store("f", zstd).unwrap();
    assert_eq!(m.compression, Compression::Zstd);
    assert!(m.pushing.is_some(), "a change leaves the push running");
    let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| (format!("k{i:06}").into_bytes(), value(i, "b")))
        .collect();
    ks.push_add(id, None, recs.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
    let begun_before = ks.push_commit(id, None).unwrap().file_bytes;
    assert!(
        begun_before * 10 > plain * 9,
        "none {plain}, begun before the change {begun_before}"
    );

    let after = push(&ks, "f", n, "c").file_bytes;
    assert!(after < plain / 2, "none {plain}, zstd {after}");
    assert_eq!(
        contents(&ks, "f", n),
        (0..n).map(|i| Some(value(i, "c"))).collect::<Vec<_>>()
    );
    // An empty change changes nothing; an unknown store is refused.
    let same = ks.configure_store("f", StoreSettings::default()).unwrap();
    assert_eq!(same.compression, Compression::Zstd);
    assert!(ks.configure_store("nope", zstd).is_err());
    ks.close().unwrap();
}

#[test]
fn a_store_created_without_a_codec_takes_the_engines() {
    let fs = MemFs::new();
    let ks = open(&fs, Compression::Lz4);
    assert_eq!(ks.compression(), Compression::Lz4);
    assert_eq!(
        ks.create_store("a", b"a:", 0).unwrap().compression,
        Compression::Lz4
    );
    // Fixed at creation: a later change of the engine's codec leaves the store's.
    ks.set_compression(Compression::Zstd);
    assert_eq!(
        ks.create_store("b", b"b:", 0).unwrap().compression,
        Compression::Zstd
    );
    assert_eq!(ks.catalog().get("a").unwrap().compression, Compression::Lz4);
    ks.close().unwrap();
}
