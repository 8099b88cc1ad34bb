//! Deferred-write ingestion and dropping whole files of a dead range (batch pushes).

use std::sync::Arc;

use rialto_engine::{EngineIterator, Error, IterOptions, KvEngine, WriteOptions};
use rialto_io::{CrashMode, Fault, FaultOp, FaultPlan, MemFs};
use rialto_lsm::{Db, Options};

const DIR: &str = "/db";

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 16 << 10,
        target_file_size: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_compaction_trigger: 2,
        ..Options::default()
    }
}

fn key(prefix: &str, i: u32) -> Vec<u8> {
    format!("{prefix}{i:06}").into_bytes()
}

fn ingest(db: &Db, prefix: &str, n: u32) -> rialto_lsm::IngestStats {
    let mut ing = db.ingest().unwrap();
    for i in 0..n {
        ing.add(&key(prefix, i), format!("v{i}").as_bytes())
            .unwrap();
    }
    ing.finish().unwrap()
}

fn tables(fs: &MemFs) -> Vec<String> {
    fs.file_names(DIR)
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

fn scan(db: &Db, lo: &[u8], hi: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db
        .iter(IterOptions {
            lower: Some(lo.to_vec()),
            upper: Some(hi.to_vec()),
            ..IterOptions::default()
        })
        .unwrap();
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
fn ingested_keys_read_back_from_the_bottom_level_and_survive_reopen() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    db.put(b"a-before", b"x", WriteOptions::default()).unwrap();
    let stats = ingest(&db, "m", 2000);
    assert_eq!(stats.entries, 2000);
    assert!(stats.files > 1, "cut at target_file_size: {stats:?}");
    assert_eq!(stats.level, 6);
    assert_eq!(db.num_files_at_level(6), stats.files as usize);
    assert_eq!(db.get(&key("m", 7)).unwrap().as_deref(), Some(&b"v7"[..]));
    assert_eq!(scan(&db, b"m", b"n").len(), 2000);
    assert_eq!(db.get(b"a-before").unwrap().as_deref(), Some(&b"x"[..]));
    let s = db.stats();
    assert_eq!(s.ingest_bytes_written, stats.file_bytes);
    db.close().unwrap();

    fs.crash(CrashMode::DropUnsynced);
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(
        db.get(&key("m", 1999)).unwrap().as_deref(),
        Some(&b"v1999"[..])
    );
    assert_eq!(scan(&db, b"m", b"n").len(), 2000);
}

#[test]
fn later_writes_and_deletes_win_over_ingested_values_through_compaction() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    ingest(&db, "k", 1000);
    let w = WriteOptions::default();
    db.put(&key("k", 10), b"new", w).unwrap();
    db.delete(&key("k", 11), w).unwrap();
    assert_eq!(db.get(&key("k", 10)).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(&key("k", 11)).unwrap(), None);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(&key("k", 10)).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(&key("k", 11)).unwrap(), None);
    assert_eq!(scan(&db, b"k", b"l").len(), 999);
}

#[test]
fn unsorted_keys_are_refused_and_the_files_written_so_far_removed() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let before = tables(&fs);
    let mut ing = db.ingest().unwrap();
    for i in 0..1000 {
        ing.add(&key("k", i), &[b'v'; 50]).unwrap();
    }
    let e = ing.add(&key("k", 5), b"v").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let e = ing.add(&key("k", 999), b"v").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "duplicate: {e}");
    assert!(tables(&fs).len() > before.len());
    drop(ing);
    assert_eq!(tables(&fs), before);
    assert_eq!(db.get(&key("k", 1)).unwrap(), None);
}

#[test]
fn a_range_holding_data_is_refused_and_the_tree_left_unchanged() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    db.put(&key("k", 500), b"live", WriteOptions::default())
        .unwrap();
    let before = tables(&fs);
    let mut ing = db.ingest().unwrap();
    for i in 0..1000 {
        ing.add(&key("k", i), b"v").unwrap();
    }
    let e = ing.finish().unwrap_err();
    assert!(e.to_string().contains("memtable"), "{e}");
    assert_eq!(tables(&fs), before);
    assert_eq!(db.get(&key("k", 1)).unwrap(), None);

    // The same once the key is in a table.
    db.flush().unwrap();
    let mut ing = db.ingest().unwrap();
    ing.add(&key("k", 499), b"v").unwrap();
    ing.add(&key("k", 501), b"v").unwrap();
    let e = ing.finish().unwrap_err();
    assert!(e.to_string().contains("overlaps"), "{e}");
    assert_eq!(
        db.get(&key("k", 500)).unwrap().as_deref(),
        Some(&b"live"[..])
    );
    // A disjoint range is fine.
    ingest(&db, "z", 10);
}

#[test]
fn a_crash_before_finish_leaves_nothing_behind() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let mut ing = db.ingest().unwrap();
    for i in 0..2000 {
        ing.add(&key("k", i), &[b'v'; 20]).unwrap();
    }
    // The process dies with the ingestion unfinished: nothing links its files.
    std::mem::forget(ing);
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(scan(&db, b"k", b"l").len(), 0);
    assert!(tables(&fs).is_empty(), "orphans removed: {:?}", tables(&fs));
}

#[test]
fn a_failed_table_sync_fails_the_ingestion_without_changing_the_tree() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    fs.add_fault(FaultPlan::new(FaultOp::Sync, 1, Fault::Eio).only_paths_containing(".sst"));
    let mut ing = db.ingest().unwrap();
    let mut failed = None;
    for i in 0..2000 {
        if let Err(e) = ing.add(&key("k", i), &[b'v'; 20]) {
            failed = Some(e);
            break;
        }
    }
    let e = match failed {
        Some(e) => e,
        None => ing.finish().unwrap_err(),
    };
    assert!(matches!(e, Error::Io { .. }), "{e}");
    fs.clear_faults();
    assert_eq!(scan(&db, b"k", b"l").len(), 0);
    // The WAL and manifest were not touched: the engine still takes writes and ingestions.
    db.put(b"a", b"b", WriteOptions::default()).unwrap();
    ingest(&db, "k", 100);
    assert_eq!(scan(&db, b"k", b"l").len(), 100);
}

#[test]
fn dropping_a_range_removes_its_whole_files_only() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let a = ingest(&db, "a", 2000);
    let b = ingest(&db, "b", 2000);
    let files_before = tables(&fs).len();
    let (n, bytes) = db.drop_files_in_range(b"a", b"b").unwrap();
    assert_eq!((n, bytes), (a.files, a.file_bytes));
    assert_eq!(tables(&fs).len(), files_before - a.files as usize);
    assert_eq!(scan(&db, b"a", b"b").len(), 0);
    assert_eq!(scan(&db, b"b", b"c").len(), 2000);
    assert_eq!(db.num_files_at_level(6), b.files as usize);
    db.close().unwrap();
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(scan(&db, b"a", b"b").len(), 0);
    assert_eq!(scan(&db, b"b", b"c").len(), 2000);
    // The range can be ingested again.
    ingest(&db, "a", 10);
    assert_eq!(scan(&db, b"a", b"b").len(), 10);
}

#[test]
fn an_empty_ingestion_is_a_no_op() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let s = db.ingest().unwrap().finish().unwrap();
    assert_eq!(s.entries, 0);
    assert!(tables(&fs).is_empty());
}

#[test]
fn with_a_partitioner_a_fresh_partition_between_compacted_ones_can_be_ingested() {
    let fs = MemFs::new();
    let mut opts = options(&fs);
    // Partition = the first byte.
    opts.partitioner = Some(Arc::new(|_k: &[u8]| 1));
    let db = Db::open(DIR, opts.clone()).unwrap();
    let w = WriteOptions::default();
    for i in 0..3000 {
        db.put(&key("a", i), b"x", w).unwrap();
        db.put(&key("c", i), b"y", w).unwrap();
    }
    db.compact_range(None, None).unwrap();
    ingest(&db, "b", 500);
    assert_eq!(scan(&db, b"b", b"c").len(), 500);
    assert_eq!(scan(&db, b"a", b"d").len(), 6500);

    // Without a partitioner, compaction outputs straddle "b" and the ingestion is refused.
    let fs2 = MemFs::new();
    let db2 = Db::open(DIR, options(&fs2)).unwrap();
    for i in 0..3000 {
        db2.put(&key("a", i), b"x", w).unwrap();
        db2.put(&key("c", i), b"y", w).unwrap();
    }
    db2.compact_range(None, None).unwrap();
    let mut ing = db2.ingest().unwrap();
    ing.add(b"b1", b"v").unwrap();
    assert!(ing.finish().is_err());
}

#[test]
fn ingested_tables_use_their_own_restart_interval() {
    let mut sizes = Vec::new();
    for interval in [1, 64] {
        let fs = MemFs::new();
        let opts = Options {
            ingest_block_restart_interval: interval,
            ..options(&fs)
        };
        let db = Db::open(DIR, opts).unwrap();
        let stats = ingest(&db, "restart-interval-key-", 2000);
        for i in [0, 1, 31, 32, 33, 1999] {
            let want = format!("v{i}");
            let got = db.get(&key("restart-interval-key-", i)).unwrap();
            assert_eq!(got.as_deref(), Some(want.as_bytes()), "interval {interval}");
        }
        assert_eq!(scan(&db, b"r", b"s").len(), 2000);
        sizes.push(stats.file_bytes);
    }
    // Every key whole (20-byte shared prefix) against one in 64: far fewer bytes.
    assert!(sizes[1] * 3 < sizes[0] * 2, "{sizes:?}");
}

/// On a real file system, with every table written around the page cache (`O_DIRECT`, no
/// budget) and with the tables beyond a budget's first ones so, ingested tables read back
/// whole, before and after a reopen.
#[test]
fn tables_written_out_of_the_page_cache_read_back_whole() {
    for budget in [0, 300 << 10] {
        let dir = tempfile::tempdir().unwrap();
        let opts = || Options {
            fs: Arc::new(rialto_io::PosixFs::new()),
            target_file_size: 256 << 10,
            ..Options::default()
        };
        let value = |i: u32| format!("{i:0>200}").into_bytes();
        let n = 5_000;
        {
            let db = Db::open(dir.path(), opts()).unwrap();
            let mut ing = db
                .ingest_with(rialto_lsm::IngestOptions {
                    page_cache_bytes: budget,
                    ..Default::default()
                })
                .unwrap();
            for i in 0..n {
                ing.add(&key("k", i), &value(i)).unwrap();
            }
            let stats = ing.finish().unwrap();
            assert!(stats.files >= 3, "{stats:?}");
            let got = scan(&db, b"k", b"l");
            assert_eq!(got.len(), n as usize, "budget {budget}");
            db.close().unwrap();
        }
        let db = Db::open(dir.path(), opts()).unwrap();
        let got = scan(&db, b"k", b"l");
        let want: Vec<_> = (0..n).map(|i| (key("k", i), value(i))).collect();
        assert_eq!(got, want, "budget {budget}");
        db.close().unwrap();
    }
}
