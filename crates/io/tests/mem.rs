//! Tests of `MemFs`: the crash model, fault injection and thread safety.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;

use rialto_io::{CrashMode, Fault, FaultOp, FaultPlan, Fs, MemFs};

const DIR: &str = "/db";

/// A file system with the directory `/db`.
fn setup() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    fs
}

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

/// Creates `name` holding `data`, syncs it and its directory.
fn durable_file(fs: &MemFs, name: &str, data: &[u8]) {
    let mut w = fs.create(&path(name)).unwrap();
    w.append(data).unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();
}

/// A durable file of `synced` bytes followed by `tail` unsynced bytes; its bytes are `i % 251`.
fn file_with_tail(fs: &MemFs, name: &str, synced: usize, tail: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..synced + tail).map(|i| (i % 251) as u8).collect();
    let mut w = fs.create(&path(name)).unwrap();
    w.append(&data[..synced]).unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();
    w.append(&data[synced..]).unwrap();
    data
}

#[test]
fn crash_drops_unsynced_data() {
    let fs = setup();
    let mut w = fs.create(&path("wal")).unwrap();
    w.append(b"durable").unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();
    w.append(b" lost").unwrap();
    w.flush().unwrap();
    assert_eq!(fs.read_all(&path("wal")).unwrap(), b"durable lost");
    assert_eq!(fs.synced_len(path("wal")).unwrap(), 7);

    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(fs.read_all(&path("wal")).unwrap(), b"durable");
    assert_eq!(fs.synced_len(path("wal")).unwrap(), 7);
}

#[test]
fn keep_all_keeps_unsynced_data() {
    let fs = setup();
    let data = file_with_tail(&fs, "wal", 10, 5000);
    fs.crash(CrashMode::KeepAll);
    assert_eq!(fs.read_all(&path("wal")).unwrap(), data);
    assert_eq!(fs.synced_len(path("wal")).unwrap(), data.len() as u64);
}

#[test]
fn file_in_unsynced_directory_disappears() {
    let fs = setup();
    let mut w = fs.create(&path("000001.sst")).unwrap();
    w.append(b"table").unwrap();
    w.sync_all().unwrap();
    assert!(fs.exists(&path("000001.sst")));

    fs.crash(CrashMode::KeepAll);
    assert!(!fs.exists(&path("000001.sst")));
    assert!(fs.file_names(DIR).is_empty());
    // Directories created with create_dir_all are durable at once.
    assert!(fs.exists(Path::new(DIR)));
}

#[test]
fn synced_directory_entry_survives() {
    let fs = setup();
    let mut w = fs.create(&path("MANIFEST")).unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();
    w.append(b"never synced").unwrap();

    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(fs.file_names(DIR), vec!["MANIFEST".to_string()]);
    assert_eq!(fs.file_size(&path("MANIFEST")).unwrap(), 0);
}

#[test]
fn unsynced_rename_and_removal_are_undone() {
    let fs = setup();
    durable_file(&fs, "CURRENT", b"old");
    durable_file(&fs, "OBSOLETE", b"x");
    let mut w = fs.create(&path("CURRENT.tmp")).unwrap();
    w.append(b"new").unwrap();
    w.sync_data().unwrap();
    fs.rename(&path("CURRENT.tmp"), &path("CURRENT")).unwrap();
    fs.remove_file(&path("OBSOLETE")).unwrap();
    assert_eq!(fs.read_all(&path("CURRENT")).unwrap(), b"new");
    assert_eq!(fs.file_names(DIR), vec!["CURRENT".to_string()]);

    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(fs.read_all(&path("CURRENT")).unwrap(), b"old");
    assert_eq!(
        fs.file_names(DIR),
        vec!["CURRENT".to_string(), "OBSOLETE".to_string()]
    );
}

#[test]
fn synced_rename_survives() {
    let fs = setup();
    durable_file(&fs, "CURRENT", b"old");
    durable_file(&fs, "CURRENT.tmp", b"new");
    fs.rename(&path("CURRENT.tmp"), &path("CURRENT")).unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();

    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(fs.read_all(&path("CURRENT")).unwrap(), b"new");
    assert_eq!(fs.file_names(DIR), vec!["CURRENT".to_string()]);
}

#[test]
fn recreate_before_directory_sync_brings_back_the_old_file() {
    let fs = setup();
    durable_file(&fs, "LOG", b"old contents");
    let mut w = fs.create(&path("LOG")).unwrap();
    w.append(b"new").unwrap();
    w.sync_data().unwrap();
    assert_eq!(fs.read_all(&path("LOG")).unwrap(), b"new");

    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(fs.read_all(&path("LOG")).unwrap(), b"old contents");
}

/// What a `RandomTail` crash left of a file with `synced` durable bytes and `original` data.
// `usize::is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
#[allow(clippy::manual_is_multiple_of)]
fn check_random_tail(after: &[u8], original: &[u8], synced: usize) -> (usize, bool) {
    let kept = after.len();
    assert!(kept >= synced && kept <= original.len(), "kept {kept}");
    assert!(
        kept == synced || kept == original.len() || kept % 512 == 0,
        "cut at {kept} is not on a sector boundary"
    );
    // Only the last kept sector (at most 4096 bytes) may differ, and never in synced bytes.
    let intact = if kept == 0 {
        0
    } else {
        ((kept - 1) / 4096 * 4096).max(synced)
    };
    assert_eq!(&after[..intact], &original[..intact]);
    (kept, after != &original[..kept])
}

#[test]
#[allow(clippy::manual_is_multiple_of)] // See `check_random_tail`.
fn random_tail_cuts_at_sector_boundaries() {
    let (synced, tail) = (1000, 20_000);
    let mut cuts = std::collections::BTreeSet::new();
    let mut garbled = 0;
    for seed in 0..200 {
        let fs = setup();
        let original = file_with_tail(&fs, "wal", synced, tail);
        fs.crash(CrashMode::RandomTail { seed });
        let after = fs.read_all(&path("wal")).unwrap();
        let (kept, was_garbled) = check_random_tail(&after, &original, synced);
        assert_eq!(fs.synced_len(path("wal")).unwrap(), kept as u64);
        cuts.insert(kept);
        garbled += usize::from(was_garbled);
    }
    assert!(
        cuts.contains(&synced),
        "sometimes nothing of the tail is kept"
    );
    assert!(cuts.contains(&(synced + tail)), "sometimes all of it");
    assert!(
        cuts.iter().any(|c| c % 4096 != 0 && c % 512 == 0),
        "512-byte sectors are used"
    );
    assert!(
        garbled > 0 && garbled < 200,
        "torn sectors sometimes: {garbled}"
    );
}

#[test]
fn random_tail_is_reproducible_from_the_seed() {
    let run = |seed: u64| {
        let fs = setup();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            file_with_tail(&fs, name, 100 * i, 30_000);
        }
        fs.crash(CrashMode::RandomTail { seed });
        ["a", "b", "c"].map(|name| fs.read_all(&path(name)).unwrap())
    };
    for seed in [1, 42, u64::MAX] {
        assert_eq!(run(seed), run(seed));
    }
    let outcomes: std::collections::HashSet<_> = (0..20).map(run).collect();
    assert!(outcomes.len() > 1, "different seeds give different disks");
}

#[test]
fn random_tail_never_touches_synced_files() {
    let fs = setup();
    durable_file(&fs, "sst", &[9u8; 10_000]);
    for seed in 0..20 {
        fs.crash(CrashMode::RandomTail { seed });
        assert_eq!(fs.read_all(&path("sst")).unwrap(), vec![9u8; 10_000]);
    }
}

#[test]
fn fault_fires_on_exactly_the_nth_op_once() {
    let fs = setup();
    let mut w = fs.create(&path("wal")).unwrap();
    w.append(b"before").unwrap();
    fs.add_fault(FaultPlan::new(FaultOp::Write, 3, Fault::NoSpace));

    w.append(b"1").unwrap();
    w.append(b"2").unwrap();
    let err = w.append(b"3").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    assert!(rialto_io::is_no_space(&err));
    w.append(b"4").unwrap();
    w.flush().unwrap();

    // The failed append wrote nothing.
    assert_eq!(fs.read_all(&path("wal")).unwrap(), b"before124");
    assert_eq!(fs.faults_fired(), 1);
    assert_eq!(fs.op_count(FaultOp::Write), 6);
    assert_eq!(fs.op_count(FaultOp::Create), 1);
    assert_eq!(fs.op_count(FaultOp::Any), 7);
}

#[test]
fn persistent_fault_keeps_failing_until_cleared() {
    let fs = setup();
    fs.add_fault(FaultPlan::new(FaultOp::Sync, 2, Fault::Eio).persistent());
    let mut w = fs.create(&path("wal")).unwrap();
    w.append(b"x").unwrap();
    w.sync_data().unwrap();
    for _ in 0..3 {
        let err = w.sync_all().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
    }
    assert_eq!(
        fs.sync_dir(Path::new(DIR)).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    assert_eq!(fs.faults_fired(), 4);
    fs.clear_faults();
    w.sync_data().unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();
}

#[test]
fn fault_plan_filters_by_path() {
    let fs = setup();
    fs.add_fault(
        FaultPlan::new(FaultOp::Any, 1, Fault::Eio)
            .persistent()
            .only_paths_containing(".sst"),
    );
    let mut wal = fs.create(&path("000001.log")).unwrap();
    wal.append(b"ok").unwrap();
    wal.sync_data().unwrap();
    let err = fs.create(&path("000002.sst")).err().unwrap();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert!(
        !fs.exists(&path("000002.sst")),
        "a failed create creates nothing"
    );
    // A rename matches on either path, and fails without effect.
    let err = fs
        .rename(&path("000001.log"), &path("000003.sst"))
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(fs.file_names(DIR), vec!["000001.log".to_string()]);
}

#[test]
fn failed_rename_and_remove_change_nothing() {
    let fs = setup();
    durable_file(&fs, "a", b"1");
    fs.add_fault(FaultPlan::new(FaultOp::Rename, 1, Fault::Eio));
    fs.add_fault(FaultPlan::new(FaultOp::Remove, 1, Fault::Eio));
    assert!(fs.rename(&path("a"), &path("b")).is_err());
    assert!(fs.remove_file(&path("a")).is_err());
    assert_eq!(fs.file_names(DIR), vec!["a".to_string()]);
    // Invalid operations fail on their own and are not counted.
    assert_eq!(
        fs.remove_file(&path("missing")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(fs.op_count(FaultOp::Remove), 1);
}

#[test]
fn failed_sync_does_not_advance_synced_len() {
    let fs = setup();
    let mut w = fs.create(&path("wal")).unwrap();
    w.append(b"first").unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();
    w.append(b" second").unwrap();

    fs.add_fault(FaultPlan::new(FaultOp::Sync, 1, Fault::Eio));
    assert!(w.sync_data().is_err());
    assert_eq!(fs.synced_len(path("wal")).unwrap(), 5);

    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(fs.read_all(&path("wal")).unwrap(), b"first");
}

#[test]
fn failed_directory_sync_keeps_the_old_namespace() {
    let fs = setup();
    fs.add_fault(FaultPlan::new(FaultOp::Sync, 2, Fault::Eio));
    let mut w = fs.create(&path("new")).unwrap();
    w.sync_data().unwrap();
    assert!(fs.sync_dir(Path::new(DIR)).is_err());
    fs.crash(CrashMode::KeepAll);
    assert!(!fs.exists(&path("new")));
}

/// SQLite-style countdown: learn how many writes a workload makes, then fail each in turn.
#[test]
fn countdown_over_every_write_of_a_workload() {
    fn workload(fs: &MemFs) -> std::io::Result<()> {
        let mut w = fs.create(&path("wal"))?;
        for i in 0..5u8 {
            w.append(&[i; 10])?;
        }
        w.sync_data()?;
        fs.sync_dir(Path::new(DIR))
    }

    let clean = setup();
    workload(&clean).unwrap();
    let writes = clean.op_count(FaultOp::Write);
    assert_eq!(writes, 5);

    for n in 1..=writes {
        let fs = setup();
        fs.add_fault(FaultPlan::new(FaultOp::Write, n, Fault::NoSpace));
        let err = workload(&fs).unwrap_err();
        assert!(rialto_io::is_no_space(&err));
        assert_eq!(fs.file_size(&path("wal")).unwrap(), (n - 1) * 10);
        fs.crash(CrashMode::DropUnsynced);
        assert!(!fs.exists(&path("wal")), "never reached the directory sync");
    }
}

#[test]
fn handles_from_before_a_crash_fail() {
    let fs = setup();
    let mut w = fs.create(&path("wal")).unwrap();
    w.append(b"abc").unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();
    let r = fs.open_read(&path("wal")).unwrap();

    fs.crash(CrashMode::KeepAll);
    assert!(w.append(b"d").is_err());
    assert!(w.flush().is_err());
    assert!(w.sync_data().is_err());
    assert!(r.read_exact_at(0, &mut [0u8; 3]).is_err());

    // New handles work, and the dead ones changed nothing.
    let r = fs.open_read(&path("wal")).unwrap();
    let mut buf = [0u8; 3];
    r.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf, b"abc");
    assert_eq!(r.len(), 3);
}

#[test]
fn locks_exclude_and_vanish_in_a_crash() {
    let fs = setup();
    let lock_path = path("LOCK");
    let old = fs.lock(&lock_path).unwrap();
    let err = fs.clone().lock(&lock_path).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::WouldBlock);
    assert!(fs.exists(&lock_path), "lock creates its file");

    fs.crash(CrashMode::KeepAll);
    let new = fs.lock(&lock_path).unwrap();
    // The dead process's guard must not release the new owner's lock.
    drop(old);
    assert_eq!(
        fs.lock(&lock_path).err().unwrap().kind(),
        ErrorKind::WouldBlock
    );
    drop(new);
    fs.lock(&lock_path).unwrap();
}

#[test]
fn readers_see_data_appended_after_open() {
    let fs = setup();
    let mut w = fs.create(&path("wal")).unwrap();
    w.append(b"head").unwrap();
    let r = fs.open_read(&path("wal")).unwrap();
    assert_eq!(r.len(), 4);
    w.append(b"tail").unwrap();
    let mut buf = [0u8; 8];
    r.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf, b"headtail");
    let err = r.read_exact_at(5, &mut buf).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
}

#[test]
fn missing_paths_are_not_found() {
    let fs = setup();
    let kind = |r: std::io::Result<()>| r.unwrap_err().kind();
    assert_eq!(
        kind(fs.create(Path::new("/nodir/file")).map(drop)),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(fs.open_read(&path("nope")).map(drop)),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(fs.open_append(&path("nope")).map(drop)),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(fs.list_dir(Path::new("/nodir")).map(drop)),
        ErrorKind::NotFound
    );
    assert_eq!(kind(fs.sync_dir(Path::new("/nodir"))), ErrorKind::NotFound);
    assert_eq!(
        kind(fs.rename(&path("nope"), &path("x"))),
        ErrorKind::NotFound
    );
}

#[test]
fn directories_and_paths() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db/archive/old")).unwrap();
    fs.create_dir_all(Path::new("/db/archive")).unwrap();
    durable_file(&fs, "CURRENT", b"x");
    let mut names = fs.list_dir(Path::new("/db/")).unwrap();
    names.sort();
    assert_eq!(names, vec!["CURRENT", "archive"]);
    assert_eq!(fs.file_names("/db"), vec!["CURRENT"]);
    assert!(fs.exists(Path::new("/db/./archive//old")));
    assert!(fs.exists(Path::new("/db/CURRENT")));
    assert!(fs.create(Path::new("/db/archive")).is_err());
    assert!(fs.create_dir_all(Path::new("/db/CURRENT")).is_err());

    // Relative paths live under the implicit root "".
    fs.create_dir_all(Path::new("rel")).unwrap();
    fs.create(Path::new("rel/f")).unwrap();
    assert!(fs.exists(Path::new("./rel/f")));
}

#[test]
fn only_empty_directories_are_removed() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db/tmp/push-1")).unwrap();
    fs.create(Path::new("/db/tmp/push-1/run-0")).unwrap();
    let full = fs.remove_dir(Path::new("/db/tmp/push-1")).unwrap_err();
    assert_eq!(full.kind(), ErrorKind::DirectoryNotEmpty);
    assert_eq!(
        fs.remove_dir(Path::new("/db/tmp")).unwrap_err().kind(),
        ErrorKind::DirectoryNotEmpty
    );
    fs.remove_file(Path::new("/db/tmp/push-1/run-0")).unwrap();
    fs.remove_dir(Path::new("/db/tmp/push-1")).unwrap();
    assert!(!fs.exists(Path::new("/db/tmp/push-1")));
    assert!(fs.list_dir(Path::new("/db/tmp")).unwrap().is_empty());
    assert_eq!(
        fs.remove_dir(Path::new("/db/tmp/push-1"))
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    // A directory removed is gone after a crash too, and can be made again.
    fs.crash(CrashMode::DropUnsynced);
    assert!(!fs.exists(Path::new("/db/tmp/push-1")));
    fs.create_dir_all(Path::new("/db/tmp/push-1")).unwrap();
}

#[test]
fn test_helpers() {
    let fs = setup();
    durable_file(&fs, "a", &[0u8; 100]);
    durable_file(&fs, "b", &[0u8; 50]);
    assert_eq!(fs.total_bytes(), 150);

    fs.corrupt(path("a"), 10, 0xff).unwrap();
    let data = fs.read_all(&path("a")).unwrap();
    assert_eq!(data[10], 0xff);
    assert!(fs.corrupt(path("a"), 100, 1).is_err());
    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(
        fs.read_all(&path("a")).unwrap()[10],
        0xff,
        "corruption is on disk"
    );

    fs.truncate_raw(path("a"), 30).unwrap();
    assert_eq!(fs.file_size(&path("a")).unwrap(), 30);
    assert_eq!(fs.synced_len(path("a")).unwrap(), 30);

    fs.truncate(&path("b"), 20).unwrap();
    assert_eq!(fs.synced_len(path("b")).unwrap(), 20);
    assert_eq!(fs.total_bytes(), 50);
}

#[test]
fn memfs_is_shareable() {
    fn assert_shareable<T: Send + Sync + Clone + 'static>() {}
    assert_shareable::<MemFs>();
}

#[test]
fn concurrent_readers_and_writers() {
    const THREADS: usize = 4;
    const RECORDS: usize = 200;
    let fs = setup();
    let shared: Arc<dyn Fs> = Arc::new(fs.clone());

    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let fs = Arc::clone(&shared);
            thread::spawn(move || {
                let name = path(&format!("{t}.log"));
                let mut w = fs.create(&name).unwrap();
                let r = fs.open_read(&name).unwrap();
                for i in 0..RECORDS {
                    w.append(&[t as u8; 16]).unwrap();
                    if i % 10 == 0 {
                        w.sync_data().unwrap();
                        fs.sync_dir(Path::new(DIR)).unwrap();
                    }
                    let mut buf = [0u8; 16];
                    r.read_exact_at((i * 16) as u64, &mut buf).unwrap();
                    assert_eq!(buf, [t as u8; 16]);
                    // Read another thread's file while it grows.
                    let other = path(&format!("{}.log", (t + 1) % THREADS));
                    if let Ok(data) = fs.read_all(&other) {
                        assert!(data.iter().all(|&b| b as usize == (t + 1) % THREADS));
                    }
                }
                w.sync_data().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }

    fs.sync_dir(Path::new(DIR)).unwrap();
    fs.crash(CrashMode::DropUnsynced);
    for t in 0..THREADS {
        let size = fs.file_size(&path(&format!("{t}.log"))).unwrap();
        assert_eq!(size, (RECORDS * 16) as u64);
    }
    assert_eq!(fs.op_count(FaultOp::Write), (THREADS * RECORDS) as u64);
}

/// A durable file of `len` zero bytes, as the WAL prepares its segments.
fn zero_file(fs: &MemFs, name: &str, len: usize) {
    durable_file(fs, name, &vec![0u8; len]);
}

#[test]
fn overwrite_writes_from_the_start_keeps_the_length_and_extends_past_it() {
    let fs = setup();
    zero_file(&fs, "seg", 100);
    let mut w = fs.open_overwrite(&path("seg")).unwrap();
    assert_eq!(w.len(), 0);
    w.append(b"abc").unwrap();
    assert_eq!(w.len(), 3);
    let data = fs.read_all(&path("seg")).unwrap();
    assert_eq!(data.len(), 100);
    assert_eq!(&data[..3], b"abc");
    w.append(&[5u8; 120]).unwrap();
    assert_eq!(w.len(), 123);
    assert_eq!(fs.file_size(&path("seg")).unwrap(), 123);
    assert_eq!(
        fs.open_overwrite(&path("missing")).err().unwrap().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn a_crash_brings_back_the_durable_bytes_an_unsynced_overwrite_replaced() {
    let fs = setup();
    zero_file(&fs, "seg", 8192);
    let mut w = fs.open_overwrite(&path("seg")).unwrap();
    w.append(&[1u8; 100]).unwrap();
    w.sync_data().unwrap();
    w.append(&[2u8; 200]).unwrap();
    let mut expected = vec![0u8; 8192];
    expected[..100].fill(1);

    let other = setup();
    zero_file(&other, "seg", 8192);
    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(fs.read_all(&path("seg")).unwrap(), expected);
    assert_eq!(fs.synced_len(path("seg")).unwrap(), 8192);

    // KeepAll keeps the overwrite; past the old end the file grew and keeps that too.
    let mut w = other.open_overwrite(&path("seg")).unwrap();
    w.append(&[3u8; 9000]).unwrap();
    other.crash(CrashMode::KeepAll);
    assert_eq!(other.read_all(&path("seg")).unwrap(), vec![3u8; 9000]);
}

#[test]
fn random_tail_over_an_overwrite_keeps_new_bytes_up_to_a_cut_and_old_ones_after() {
    let (len, synced_new, unsynced_new) = (20_000, 1000, 12_000);
    let mut cuts = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let fs = setup();
        let old: Vec<u8> = (0..len).map(|i| (i % 13) as u8 + 1).collect();
        durable_file(&fs, "seg", &old);
        let new: Vec<u8> = (0..len).map(|i| (i % 7) as u8 + 100).collect();
        let mut w = fs.open_overwrite(&path("seg")).unwrap();
        w.append(&new[..synced_new]).unwrap();
        w.sync_data().unwrap();
        w.append(&new[synced_new..synced_new + unsynced_new])
            .unwrap();
        fs.crash(CrashMode::RandomTail { seed });
        let after = fs.read_all(&path("seg")).unwrap();
        assert_eq!(after.len(), len, "the durable length stays");
        assert!(
            after[..synced_new] == new[..synced_new],
            "synced bytes stay"
        );
        // The cut: new bytes before it (the last sector maybe torn), old bytes from it on.
        let cut = (synced_new..=synced_new + unsynced_new)
            .find(|&c| after[c..] == old[c..])
            .unwrap();
        let torn_from = if cut == synced_new {
            cut
        } else {
            ((cut - 1) / 4096 * 4096).max(synced_new)
        };
        assert!(
            after[synced_new..torn_from] == new[synced_new..torn_from],
            "seed {seed}: new bytes up to the last sector before the cut at {cut}"
        );
        cuts.insert(cut);
    }
    assert!(cuts.contains(&synced_new), "sometimes nothing new is kept");
    assert!(cuts.contains(&(synced_new + unsynced_new)), "sometimes all");
    assert!(cuts.len() > 5, "cuts vary: {cuts:?}");
}

/// Model check: random overwrites, appends past the end and syncs, then each crash mode,
/// against a model holding the durable image and the current one.
#[test]
fn overwrites_and_syncs_against_a_model() {
    let mut rng = 0x1234_5678_9abc_def0_u64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    for case in 0..300 {
        let fs = setup();
        let base: Vec<u8> = (0..next(3000) + 1).map(|i| (i % 250) as u8 + 1).collect();
        durable_file(&fs, "f", &base);
        let mut durable = base.clone();
        let mut current = base;
        let mut w = fs.open_overwrite(&path("f")).unwrap();
        let mut pos = 0usize;
        for _ in 0..next(12) {
            if next(3) == 0 {
                w.sync_data().unwrap();
                durable = current.clone();
            } else {
                let chunk: Vec<u8> = (0..next(900)).map(|_| next(256) as u8).collect();
                w.append(&chunk).unwrap();
                if current.len() < pos + chunk.len() {
                    current.resize(pos + chunk.len(), 0);
                }
                current[pos..pos + chunk.len()].copy_from_slice(&chunk);
                pos += chunk.len();
            }
        }
        assert!(fs.read_all(&path("f")).unwrap() == current, "case {case}");
        let mode = if case % 2 == 0 {
            CrashMode::DropUnsynced
        } else {
            CrashMode::KeepAll
        };
        fs.crash(mode);
        let expected = if mode == CrashMode::KeepAll {
            &current
        } else {
            &durable
        };
        assert!(&fs.read_all(&path("f")).unwrap() == expected, "case {case}");
    }
}

/// Per 512-byte sector of `after[from..]`: whether it holds the new bytes, the old ones, or
/// neither (a torn sector).
fn sector_states(after: &[u8], new: &[u8], old: &[u8], from: usize) -> Vec<char> {
    (from..after.len())
        .step_by(512)
        .map(|a| {
            let b = (a + 512).min(after.len());
            if after[a..b] == new[a..b] {
                'n'
            } else if after[a..b] == old[a..b] {
                'o'
            } else {
                't'
            }
        })
        .collect()
}

#[test]
fn scattered_crashes_keep_any_subset_of_unsynced_sectors_and_never_synced_bytes() {
    let (synced, tail) = (1000, 40_000);
    let zeros = vec![0u8; synced + tail];
    let (mut holes, mut later_kept, mut torn, mut none, mut all) = (0, 0, 0, 0, 0);
    for seed in 0..300 {
        let fs = setup();
        let original = file_with_tail(&fs, "wal", synced, tail);
        fs.crash(CrashMode::Scattered { seed });
        let after = fs.read_all(&path("wal")).unwrap();
        assert!(after.len() >= synced && after.len() <= original.len());
        assert_eq!(&after[..synced], &original[..synced], "synced bytes stay");
        assert_eq!(fs.synced_len(path("wal")).unwrap(), after.len() as u64);
        // Sectors are aligned to the file: the first unsynced one starts at 512.
        let states = sector_states(&after, &original, &zeros, 1024);
        let t = states.iter().filter(|&&c| c == 't').count();
        assert!(t <= 8, "at most one torn sector (8 of 512 bytes): {t}");
        torn += usize::from(t > 0);
        let s: String = states.iter().collect();
        holes += usize::from(s.trim_end_matches('o').contains("no") || s.contains("nto"));
        later_kept += usize::from(s.starts_with('o') && s.contains('n'));
        none += usize::from(after.len() == synced);
        all += usize::from(after == original);
    }
    assert!(holes > 0, "sometimes a hole between kept sectors");
    assert!(
        later_kept > 0,
        "sometimes later sectors kept, earlier ones not"
    );
    assert!(torn > 0 && torn < 300, "torn sectors sometimes: {torn}");
    assert!(
        none > 0 && all > 0,
        "sometimes nothing, sometimes everything: {none} {all}"
    );
}

#[test]
fn scattered_crashes_put_back_the_durable_bytes_that_dropped_sectors_overwrote() {
    let len = 64 << 10;
    let old: Vec<u8> = (0..len).map(|i| (i % 13) as u8 + 1).collect();
    let new: Vec<u8> = (0..len).map(|i| (i % 7) as u8 + 100).collect();
    let mut mixed = 0;
    for seed in 0..100 {
        let fs = setup();
        durable_file(&fs, "seg", &old);
        let mut w = fs.open_overwrite(&path("seg")).unwrap();
        w.append(&new[..4096]).unwrap();
        w.sync_data().unwrap();
        w.append(&new[4096..40_000]).unwrap();
        fs.crash(CrashMode::Scattered { seed });
        let after = fs.read_all(&path("seg")).unwrap();
        assert_eq!(after.len(), len, "the durable length stays");
        assert_eq!(&after[..4096], &new[..4096], "synced bytes stay");
        assert_eq!(&after[40_960..], &old[40_960..], "never-written bytes stay");
        let states = sector_states(&after[..40_000], &new, &old, 4096);
        mixed += usize::from(states.contains(&'n') && states.contains(&'o'));
    }
    assert!(mixed > 0, "some sectors new, some old");
}

#[test]
fn scattered_crashes_are_reproducible_from_the_seed() {
    let run = |seed: u64| {
        let fs = setup();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            file_with_tail(&fs, name, 100 * i, 30_000);
        }
        fs.crash(CrashMode::Scattered { seed });
        ["a", "b", "c"].map(|name| fs.read_all(&path(name)).unwrap())
    };
    for seed in [1, 42, u64::MAX] {
        assert_eq!(run(seed), run(seed));
    }
    let outcomes: std::collections::HashSet<_> = (0..20).map(run).collect();
    assert!(outcomes.len() > 1, "different seeds give different disks");
}
