//! Which codec a table is written with: an ingestion's own, the database's (changeable while
//! it runs) for flushes and compactions, and `compression_for`'s choice by a table's first key.

use std::path::Path;
use std::sync::Arc;

use rialto_engine::{EngineIterator, IterOptions, KvEngine, WriteBatch, WriteOptions};
use rialto_io::{Fs, MemFs};
use rialto_lsm::{Compression, Db, IngestOptions, Options};

const DIR: &str = "/db";
const CODECS: [Compression; 3] = [Compression::None, Compression::Lz4, Compression::Zstd];

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn key(prefix: &str, i: u32) -> Vec<u8> {
    format!("{prefix}{i:06}").into_bytes()
}

/// A value that compresses well: a JSON-ish record with repeated field names.
fn value(i: u32) -> Vec<u8> {
    format!(r#"{{"user":{i},"country":"FR","score":0.{i:04},"segments":["a","b","c"]}}"#)
        .into_bytes()
}

fn table_bytes(fs: &MemFs) -> u64 {
    fs.file_names(DIR)
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| fs.file_size(&Path::new(DIR).join(n)).unwrap())
        .sum()
}

fn scan(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(IterOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

#[test]
fn an_ingestion_writes_with_its_own_codec_and_reads_back_after_reopen() {
    let n = 5_000;
    let want: Vec<_> = (0..n).map(|i| (key("k", i), value(i))).collect();
    let mut sizes = Vec::new();
    for codec in CODECS {
        let fs = MemFs::new();
        {
            // The database's own codec differs: the ingestion's wins.
            let db = Db::open(
                DIR,
                Options {
                    compression: Compression::Lz4,
                    ..options(&fs)
                },
            )
            .unwrap();
            let mut ing = db
                .ingest_with(IngestOptions {
                    compression: Some(codec),
                    ..IngestOptions::default()
                })
                .unwrap();
            for (k, v) in &want {
                ing.add(k, v).unwrap();
            }
            let stats = ing.finish().unwrap();
            assert_eq!(stats.file_bytes, table_bytes(&fs), "{codec:?}");
            sizes.push(stats.file_bytes);
            assert_eq!(scan(&db), want, "{codec:?}");
            db.close().unwrap();
        }
        let db = Db::open(DIR, options(&fs)).unwrap();
        assert_eq!(scan(&db), want, "{codec:?} after reopen");
        db.close().unwrap();
    }
    assert!(sizes[1] < sizes[0] * 3 / 4, "lz4 against none: {sizes:?}");
    assert!(sizes[2] < sizes[1], "zstd against lz4: {sizes:?}");
}

/// Flushes `n` records under `prefix` and returns the bytes of the tables written.
fn flush_records(db: &Db, fs: &MemFs, prefix: &str, n: u32) -> u64 {
    let before = table_bytes(fs);
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.put(&key(prefix, i), &value(i));
    }
    db.write(b, WriteOptions::default()).unwrap();
    db.flush().unwrap();
    table_bytes(fs) - before
}

#[test]
fn a_codec_change_applies_to_the_tables_flushed_after_it() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(db.compression(), Compression::None);
    let plain = flush_records(&db, &fs, "a", 2000);
    db.set_compression(Compression::Zstd);
    assert_eq!(db.compression(), Compression::Zstd);
    let packed = flush_records(&db, &fs, "b", 2000);
    assert!(packed < plain / 2, "none {plain}, zstd {packed}");
    // Tables of both codecs read back, before and after a reopen (which starts from the
    // configured codec again).
    let want = scan(&db);
    assert_eq!(want.len(), 4000);
    db.close().unwrap();
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(db.compression(), Compression::None);
    assert_eq!(scan(&db), want);
    db.close().unwrap();
}

#[test]
fn compression_for_chooses_a_table_codec_by_its_first_key() {
    let fs = MemFs::new();
    let db = Db::open(
        DIR,
        Options {
            // One partition per first byte, so no table mixes "z" keys with others.
            partitioner: Some(Arc::new(|_: &[u8]| 1)),
            compression_for: Some(Arc::new(|k: &[u8]| {
                k.starts_with(b"z").then_some(Compression::Zstd)
            })),
            ..options(&fs)
        },
    )
    .unwrap();
    let plain = flush_records(&db, &fs, "a", 2000);
    let packed = flush_records(&db, &fs, "z", 2000);
    assert!(packed < plain / 2, "none {plain}, chosen zstd {packed}");
    assert_eq!(scan(&db).len(), 4000);
    db.close().unwrap();
}
