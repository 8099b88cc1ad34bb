//! End-to-end basics of the LSM engine on the real file system.

use rialto_engine::{EngineIterator, IterOptions, KvEngine, WriteOptions};
use rialto_lsm::triad::TriadOptions;
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

/// Obsolete tables and segments are removed in 4 KiB cuts outside the state lock, and
/// `wait_for_background_work` returns only once the removals it waited for are done.
#[test]
fn obsolete_files_removed_in_steps_are_gone_when_background_work_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            delete_step_bytes: 4096,
            ..small_options()
        },
    )
    .unwrap();
    for round in 0..3u32 {
        for i in 0..8_000u32 {
            let k = format!("key{:08}", (i * 7919) % 8_000);
            db.put(k.as_bytes(), &[round as u8; 100], WriteOptions::default())
                .unwrap();
        }
        db.wait_for_background_work().unwrap();
        let tables_on_disk = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".sst")
            })
            .count();
        let live: usize = (0..7).map(|l| db.num_files_at_level(l)).sum();
        assert_eq!(tables_on_disk, live, "round {round}: obsolete tables left");
    }
    assert!(db.stats().compactions > 0);
    assert_eq!(db.get(b"key00000005").unwrap().unwrap(), vec![2u8; 100]);
    db.close().unwrap();
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

/// A preallocated WAL (the default on the real file system) ends in zeros; damage to its last
/// record before them is a torn tail: the last write is dropped, the others recovered.
#[test]
fn preallocated_wal_with_a_torn_last_record() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i:03}").as_bytes(), b"v", WriteOptions::SYNC)
                .unwrap();
        }
        // Dropped without close: recovery must read the WAL.
    }
    let wal = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap();
    // A process killed while running leaves its segment preallocated (a dropped handle gives
    // the space back): put the zeros back as the kill would have left them.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let mut data = std::fs::read(&wal).unwrap();
    let last = data.iter().rposition(|&b| b != 0).unwrap();
    data[last] ^= 0xff;
    std::fs::write(&wal, &data).unwrap();
    for _ in 0..2 {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(db.get(b"k098").unwrap().as_deref(), Some(&b"v"[..]));
        assert_eq!(db.get(b"k099").unwrap(), None);
    }
}

/// A closed database gives back the space preallocated past the end of its WAL segment, and
/// reopens with every write.
#[test]
fn close_releases_the_wal_preallocation() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 8 << 20,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    db.put(b"k", b"v", WriteOptions::default()).unwrap();
    let wal_len = || -> u64 {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    };
    let open_len = wal_len();
    db.close().unwrap();
    let closed_len = wal_len();
    assert!(
        closed_len < 4096,
        "closed WAL {closed_len} bytes (open: {open_len})"
    );
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// Inline mode: with no background thread, the writer that fills the memtable runs the flush
/// and the compactions then due, so by the time `put` returns the tree is already shaped (L0
/// below its trigger, data in L1 and below) without any wait. TRIAD-DISK is off: its
/// deferral may rightly keep a small, barely overlapping L0 file waiting, which is not what
/// this test is about.
#[test]
fn inline_background_work_runs_on_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_background_jobs: 0,
        level0_compaction_trigger: 2,
        triad: TriadOptions {
            disk: false,
            ..TriadOptions::default()
        },
        ..small_options()
    };
    let n = 20_000u32;
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..n {
            let k = format!("key{:08}", (i * 7919) % n);
            db.put(k.as_bytes(), &[b'v'; 100], WriteOptions::default())
                .unwrap();
        }
        let s = db.stats();
        assert!(s.flushes >= 10, "{} flushes", s.flushes);
        assert!(db.num_files_at_level(0) < 2);
        assert!(db.num_files_at_level(1) + db.num_files_at_level(2) > 0);
        // Nothing is left for a background thread to do.
        db.wait_for_background_work().unwrap();
        db.flush().unwrap();
        assert!(db.num_files_at_level(0) < 2);
        db.compact_range(None, None).unwrap();
        assert_eq!(db.num_files_at_level(0), 0);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), opts).unwrap();
    let mut it = db.iter(IterOptions::default()).unwrap();
    it.seek_to_first();
    let mut count = 0;
    while it.valid() {
        count += 1;
        it.next();
    }
    assert_eq!(count, n);
}

/// The niceness of each of this process's threads named `name`, from `/proc` (Linux).
fn thread_nices(name: &str) -> Vec<i64> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut nices = Vec::new();
    for dir in tasks.filter_map(|t| t.ok()).map(|t| t.path()) {
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        // Fields after the parenthesized command; niceness is field 19 of the whole line.
        let nice = stat
            .rfind(')')
            .and_then(|i| stat.get(i + 2..))
            .and_then(|rest| rest.split(' ').nth(16))
            .and_then(|n| n.parse().ok());
        if let (true, Some(n)) = (comm.trim_end() == name, nice) {
            nices.push(n);
        }
    }
    nices
}

#[test]
fn background_threads_run_at_the_configured_niceness() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        background_nice: 7,
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).unwrap();
    // The thread sets its niceness first thing; give it a moment to start. Other tests'
    // databases have threads of the same name at niceness 0.
    let mut seen = false;
    for _ in 0..200 {
        seen = thread_nices("rialto-bg-0").contains(&7);
        if seen {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(seen, "no background thread at niceness 7");
    drop(db);
    let bad = Options {
        background_nice: 20,
        ..Options::default()
    };
    let e = Db::open(tempfile::tempdir().unwrap().path(), bad)
        .err()
        .unwrap();
    assert!(e.to_string().contains("background_nice"), "{e}");
}
