//! End-to-end basics of the LSM engine on the real file system.

use rialto_engine::{EngineIterator, IterOptions, KvEngine, WriteOptions};
use rialto_lsm::{Db, Options};

fn small_options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    }
}

#[test]
fn put_get_flush_compact_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000u32;
    {
        let db = Db::open(dir.path(), small_options()).unwrap();
        for i in 0..n {
            let k = format!("key{:08}", (i * 7919) % n);
            db.put(
                k.as_bytes(),
                format!("value{i}").as_bytes(),
                WriteOptions::default(),
            )
            .unwrap();
        }
        for i in (0..n).step_by(3) {
            db.delete(format!("key{i:08}").as_bytes(), WriteOptions::default())
                .unwrap();
        }
        db.wait_for_background_work().unwrap();
        assert!(db.stats().flushes > 0);
        assert!(db.get(b"key00000001").unwrap().unwrap().len() > 5);
        assert_eq!(db.get(b"key00000003").unwrap(), None);
        db.compact_range(None, None).unwrap();
        assert_eq!(db.num_files_at_level(0), 0);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), small_options()).unwrap();
    let mut it = db.iter(IterOptions::default()).unwrap();
    it.seek_to_first();
    let mut count = 0;
    while it.valid() {
        let k = std::str::from_utf8(it.key()).unwrap();
        let i: u32 = k[3..].parse().unwrap();
        assert_ne!(i % 3, 0, "{k} was deleted");
        count += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(count, n - n.div_ceil(3));
    let stats = db.stats();
    println!("{stats}");
}

#[test]
fn second_open_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let _db = Db::open(dir.path(), Options::default()).unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(rialto_engine::Error::Locked(_)) => {}
        other => panic!("expected Locked, got {:?}", other.map(|_| ())),
    }
}
