//! Passes over whole tables read around the block cache; point reads and scans fill it.

use rialto_engine::{EngineIterator, IterOptions, KvEngine, WriteOptions};
use rialto_lsm::triad::TriadOptions;
use rialto_lsm::{BlockCache, Db, Options};

fn options(cache: &std::sync::Arc<BlockCache>) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        block_cache: Some(cache.clone()),
        row_cache_size: 0,
        triad: TriadOptions::off(),
        ..Options::default()
    }
}

#[test]
fn compaction_reads_no_block_into_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = BlockCache::new(64 << 20);
    let db = Db::open(dir.path(), options(&cache)).unwrap();
    for round in 0..4 {
        for i in 0..5_000u32 {
            let k = format!("key{:06}", (i * 7919) % 5_000);
            db.put(
                k.as_bytes(),
                format!("v{round}-{i:0100}").as_bytes(),
                WriteOptions::default(),
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    assert!(db.stats().compactions > 0);
    assert_eq!(cache.usage(), 0, "compaction filled the block cache");
    assert_eq!(cache.hits() + cache.misses(), 0);

    // A point read and a scan do fill it.
    assert!(db.get(b"key000042").unwrap().is_some());
    assert!(cache.usage() > 0);
    let before = cache.usage();
    let mut it = db.iter(IterOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert_eq!(n, 5_000);
    assert!(cache.usage() > before);
}

#[test]
fn behind_a_row_cache_a_point_read_caches_its_block_on_a_second_miss() {
    let dir = tempfile::tempdir().unwrap();
    let cache = BlockCache::new(64 << 20);
    let db = Db::open(
        dir.path(),
        Options {
            row_cache_size: 8 << 20,
            row_cache_warm: false,
            ..options(&cache)
        },
    )
    .unwrap();
    for i in 0..5_000u32 {
        db.put(
            format!("key{i:06}").as_bytes(),
            &[7u8; 100],
            WriteOptions::default(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // The first read of a block leaves it out of the cache (the row cache keeps the row);
    // a read of another key of the same block caches it.
    assert!(db.get(b"key000100").unwrap().is_some());
    assert_eq!(cache.usage(), 0);
    assert!(db.get(b"key000101").unwrap().is_some());
    assert!(cache.usage() > 0);
}
