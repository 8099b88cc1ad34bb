//! `check`: a clean database passes; a flipped byte in a table, a damaged WAL record, a missing
//! table and a database in use are each reported.

use std::path::Path;
use std::sync::Arc;

use rialto_engine::{KvEngine, WriteBatch, WriteOptions};
use rialto_io::{Fs, FsRef, MemFs};
use rialto_lsm::check::check;
use rialto_lsm::{Db, Options};

const DIR: &str = "/db";

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

/// A database with tables (flushed) and a WAL with unflushed writes.
fn populate(fs: &MemFs) {
    let db = Db::open(DIR, options(fs)).unwrap();
    for i in 0..3000u32 {
        let mut b = WriteBatch::new();
        b.put(format!("key{i:06}").as_bytes(), &[b'v'; 100]);
        db.write(b, WriteOptions::default()).unwrap();
    }
    db.flush().unwrap();
    for i in 0..50u32 {
        let mut b = WriteBatch::new();
        b.put(format!("late{i:04}").as_bytes(), b"x");
        db.write(b, WriteOptions::default()).unwrap();
    }
    db.close().unwrap();
}

fn files(fs: &MemFs, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

fn rewrite(fs: &MemFs, name: &str, edit: impl FnOnce(&mut Vec<u8>)) {
    let path = Path::new(DIR).join(name);
    let mut data = fs.read_all(&path).unwrap();
    edit(&mut data);
    let mut f = fs.create(&path).unwrap();
    f.append(&data).unwrap();
    f.sync_all().unwrap();
}

fn run(fs: &MemFs) -> rialto_lsm::check::Report {
    let r: FsRef = Arc::new(fs.clone());
    check(r, Path::new(DIR)).unwrap()
}

#[test]
fn a_clean_database_passes() {
    let fs = MemFs::new();
    populate(&fs);
    let r = run(&fs);
    assert!(r.ok(), "{:?}", r.problems);
    assert!(r.tables >= 1 && r.entries >= 3000, "{r:?}");
    assert!(r.wal_records >= 1, "{r:?}");
}

#[test]
fn a_flipped_byte_in_a_table_is_reported() {
    let fs = MemFs::new();
    populate(&fs);
    let table = files(&fs, ".sst").into_iter().next().expect("a table");
    rewrite(&fs, &table, |d| {
        let mid = d.len() / 3;
        d[mid] ^= 0x40;
    });
    let r = run(&fs);
    assert!(!r.ok());
    assert!(
        r.problems.iter().any(|(f, _)| *f == table),
        "{:?}",
        r.problems
    );
}

#[test]
fn a_damaged_record_in_the_middle_of_the_wal_is_reported() {
    let fs = MemFs::new();
    populate(&fs);
    let wal = files(&fs, ".log").into_iter().last().expect("a segment");
    rewrite(&fs, &wal, |d| d[12] ^= 0x01);
    let r = run(&fs);
    assert!(
        r.problems
            .iter()
            .any(|(f, w)| *f == wal && w.contains("corrupt record at offset 0")),
        "{:?} {:?}",
        r.problems,
        r.notes
    );
}

#[test]
fn a_missing_table_is_reported() {
    let fs = MemFs::new();
    populate(&fs);
    let table = files(&fs, ".sst").into_iter().next().expect("a table");
    fs.remove_file(&Path::new(DIR).join(&table)).unwrap();
    let r = run(&fs);
    assert!(
        r.problems
            .iter()
            .any(|(f, w)| *f == table && w.contains("cannot be opened")),
        "{:?}",
        r.problems
    );
}

#[test]
fn a_database_in_use_is_not_checked() {
    let fs = MemFs::new();
    populate(&fs);
    let _db = Db::open(DIR, options(&fs)).unwrap();
    let r: FsRef = Arc::new(fs.clone());
    let e = check(r, Path::new(DIR)).unwrap_err();
    assert!(e.to_string().contains("locked"), "{e}");
}
