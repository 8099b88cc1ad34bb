//! Batch point lookups against single ones, over data spread across memtables, level 0 and
//! deeper levels, with overwrites, deletions, duplicates, absent keys and snapshots.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rialto_engine::{KvEngine, WriteBatch, WriteOptions};
use rialto_lsm::{Db, Options};

fn small_options(row_cache: bool) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        block_size: 512,
        row_cache_size: if row_cache { 1 << 20 } else { 0 },
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

/// Writes in waves (each overwriting or deleting some earlier keys), so that versions of one
/// key sit in several sources at once.
fn fill(db: &Db, rng: &mut StdRng, n: u32) {
    for wave in 0..6u32 {
        let mut b = WriteBatch::new();
        for _ in 0..n / 2 {
            let i = rng.gen_range(0..n);
            if rng.gen_ratio(1, 5) {
                b.delete(&key(i));
            } else {
                b.put(&key(i), format!("v{wave}-{i}").as_bytes());
            }
            if b.count() >= 200 {
                db.write(std::mem::take(&mut b), WriteOptions::default())
                    .unwrap();
            }
        }
        db.write(b, WriteOptions::default()).unwrap();
        if wave == 2 {
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
        }
        if wave == 4 {
            db.flush().unwrap();
        }
    }
}

fn check_batches(db: &Db, rng: &mut StdRng, n: u32) {
    for _ in 0..300 {
        let len = rng.gen_range(0..=150);
        // Keys past both ends and duplicates included.
        let ks: Vec<Vec<u8>> = (0..len)
            .map(|_| key(rng.gen_range(0..n + n / 10)))
            .collect();
        let refs: Vec<&[u8]> = ks.iter().map(Vec::as_slice).collect();
        let snap = db.snapshot();
        let got = db.multi_get_at(&snap, &refs).unwrap();
        let want: Vec<_> = refs.iter().map(|k| db.get_at(&snap, k).unwrap()).collect();
        assert_eq!(got, want);
        let got = db.multi_get(&refs).unwrap();
        let want: Vec<_> = refs.iter().map(|k| db.get(k).unwrap()).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn multi_get_reads_what_get_reads() {
    for row_cache in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), small_options(row_cache)).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let n = 20_000;
        fill(&db, &mut rng, n);
        db.wait_for_background_work().unwrap();
        assert!(db.num_files_at_level(0) + db.num_files_at_level(1) > 0);
        check_batches(&db, &mut rng, n);
        // Once more with everything in tables, after the memtables are gone.
        db.flush().unwrap();
        check_batches(&db, &mut rng, n);
    }
}

#[test]
fn multi_get_of_nothing_and_of_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options(true)).unwrap();
    assert_eq!(
        db.multi_get(&[]).unwrap(),
        Vec::<Option<bytes::Bytes>>::new()
    );
    assert_eq!(db.multi_get(&[b"a", b"a"]).unwrap(), vec![None, None]);
}
