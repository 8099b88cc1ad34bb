//! Tests of `PosixFs` against a temporary directory.

use std::io::ErrorKind;
use std::path::Path;

use rialto_io::{Fs, PosixFs};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

#[test]
fn write_read_round_trip() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let path = dir.path().join("data");

    let mut w = fs.create(&path).unwrap();
    assert!(w.is_empty());
    w.append(b"hello ").unwrap();
    w.append(b"world").unwrap();
    assert_eq!(w.len(), 11);
    w.sync_data().unwrap();

    let r = fs.open_read(&path).unwrap();
    assert_eq!(r.len(), 11);
    let mut buf = [0u8; 5];
    r.read_exact_at(6, &mut buf).unwrap();
    assert_eq!(&buf, b"world");
    let err = r.read_exact_at(8, &mut buf).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    assert_eq!(fs.read_all(&path).unwrap(), b"hello world");
    assert_eq!(fs.file_size(&path).unwrap(), 11);
}

#[test]
fn buffered_appends_reach_the_file_on_flush() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let path = dir.path().join("wal");

    let mut w = fs.create(&path).unwrap();
    for _ in 0..100 {
        w.append(b"0123456789").unwrap();
    }
    assert_eq!(w.len(), 1000, "len counts buffered bytes");
    assert_eq!(
        fs.file_size(&path).unwrap(),
        0,
        "small appends stay buffered"
    );
    w.flush().unwrap();
    assert_eq!(fs.file_size(&path).unwrap(), 1000);

    // An append larger than the buffer goes straight to the file, after what was buffered.
    w.append(b"abc").unwrap();
    let big = vec![7u8; 100 * 1024];
    w.append(&big).unwrap();
    assert_eq!(fs.file_size(&path).unwrap(), 1003 + big.len() as u64);
    let data = fs.read_all(&path).unwrap();
    assert_eq!(&data[1000..1003], b"abc");
    assert_eq!(&data[1003..], &big[..]);
}

#[test]
fn drop_flushes_and_open_append_continues_at_the_end() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let path = dir.path().join("log");

    let mut w = fs.create(&path).unwrap();
    w.append(b"first").unwrap();
    drop(w);
    assert_eq!(fs.read_all(&path).unwrap(), b"first");

    let mut w = fs.open_append(&path).unwrap();
    assert_eq!(w.len(), 5);
    w.append(b"+second").unwrap();
    w.sync_all().unwrap();
    assert_eq!(w.len(), 12);
    assert_eq!(fs.read_all(&path).unwrap(), b"first+second");
}

#[test]
fn lock_excludes_a_second_lock_in_the_same_process() {
    let dir = tempdir();
    let path = dir.path().join("LOCK");
    let fs = PosixFs::new();

    let guard = fs.lock(&path).unwrap();
    // Another instance, as a second database opened in this process would use.
    let err = PosixFs::new()
        .lock(&path)
        .err()
        .expect("second lock must fail");
    assert_eq!(err.kind(), ErrorKind::WouldBlock);
    assert!(
        err.to_string().contains("LOCK"),
        "message names the path: {err}"
    );

    drop(guard);
    let again = fs.lock(&path).unwrap();
    drop(again);
}

#[test]
fn rename_replaces_and_sync_dir_succeeds() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let tmp = dir.path().join("CURRENT.tmp");
    let current = dir.path().join("CURRENT");

    write_file(&fs, &current, b"old");
    write_file(&fs, &tmp, b"new");
    fs.rename(&tmp, &current).unwrap();
    fs.sync_dir(dir.path()).unwrap();

    assert!(!fs.exists(&tmp));
    assert_eq!(fs.read_all(&current).unwrap(), b"new");
    assert_eq!(
        fs.list_dir(dir.path()).unwrap(),
        vec!["CURRENT".to_string()]
    );

    fs.remove_file(&current).unwrap();
    assert!(!fs.exists(&current));
    let err = fs.remove_file(&current).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[test]
fn only_empty_directories_are_removed() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let sub = dir.path().join("push-1");
    fs.create_dir_all(&sub).unwrap();
    write_file(&fs, &sub.join("run-0"), b"x");
    assert!(fs.remove_dir(&sub).is_err());
    fs.remove_file(&sub.join("run-0")).unwrap();
    fs.remove_dir(&sub).unwrap();
    assert!(!fs.exists(&sub));
    assert_eq!(fs.remove_dir(&sub).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn truncate_cuts_the_file() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let path = dir.path().join("wal");

    write_file(&fs, &path, &[1u8; 100]);
    fs.truncate(&path, 40).unwrap();
    assert_eq!(fs.file_size(&path).unwrap(), 40);
    assert_eq!(fs.read_all(&path).unwrap(), vec![1u8; 40]);
}

#[test]
fn missing_paths_are_not_found() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let missing = dir.path().join("nope");

    assert_eq!(
        fs.open_read(&missing).err().unwrap().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        fs.open_append(&missing).err().unwrap().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        fs.list_dir(&missing).unwrap_err().kind(),
        ErrorKind::NotFound
    );

    let nested = dir.path().join("a/b");
    fs.create_dir_all(&nested).unwrap();
    assert!(fs.exists(&nested));
    assert_eq!(
        fs.list_dir(&dir.path().join("a")).unwrap(),
        vec!["b".to_string()]
    );
}

fn write_file(fs: &PosixFs, path: &Path, data: &[u8]) {
    let mut w = fs.create(path).unwrap();
    w.append(data).unwrap();
    w.sync_data().unwrap();
}

#[test]
fn read_vec_at_reads_exactly_and_reports_eof() {
    let dir = tempfile::tempdir().unwrap();
    let fs = rialto_io::PosixFs::new();
    let p = dir.path().join("f");
    let mut w = rialto_io::Fs::create(&fs, &p).unwrap();
    w.append(b"0123456789").unwrap();
    w.sync_data().unwrap();
    let r = rialto_io::Fs::open_read(&fs, &p).unwrap();
    assert_eq!(r.read_vec_at(3, 4).unwrap(), b"3456");
    assert_eq!(r.read_vec_at(0, 0).unwrap(), b"");
    let e = r.read_vec_at(8, 4).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
}

#[test]
fn preallocate_keeps_appends_in_place_and_reads_zeros_beyond() {
    let dir = tempfile::tempdir().unwrap();
    let fs = rialto_io::PosixFs::new();
    let p = dir.path().join("wal");
    let mut w = rialto_io::Fs::create(&fs, &p).unwrap();
    w.append(b"abc").unwrap();
    w.preallocate(4096).unwrap();
    w.append(b"def").unwrap();
    w.sync_data().unwrap();
    assert_eq!(w.len(), 6);
    let data = rialto_io::Fs::read_all(&fs, &p).unwrap();
    assert!(data.len() == 4096 || data.len() == 6, "{}", data.len());
    assert_eq!(&data[..6], b"abcdef");
    assert!(data[6..].iter().all(|&b| b == 0));
}

#[test]
fn open_overwrite_writes_from_the_start_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let fs = rialto_io::PosixFs::new();
    let p = dir.path().join("spare");
    write_file(&fs, &p, &[0u8; 8192]);
    let mut w = rialto_io::Fs::open_overwrite(&fs, &p).unwrap();
    assert_eq!(w.len(), 0);
    w.append(b"abc").unwrap();
    w.append(b"def").unwrap();
    w.sync_data().unwrap();
    assert_eq!(w.len(), 6);
    let data = rialto_io::Fs::read_all(&fs, &p).unwrap();
    assert_eq!(data.len(), 8192, "the length is kept");
    assert_eq!(&data[..6], b"abcdef");
    assert!(data[6..].iter().all(|&b| b == 0));

    // Past the end, the file grows.
    w.append(&vec![7u8; 8190]).unwrap();
    w.flush().unwrap();
    assert_eq!(rialto_io::Fs::file_size(&fs, &p).unwrap(), 8196);
    let missing = dir.path().join("missing");
    let e = rialto_io::Fs::open_overwrite(&fs, &missing).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn remove_file_gradually_cuts_the_file_in_steps_then_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let fs = rialto_io::PosixFs::new();
    let p = dir.path().join("big");
    std::fs::write(&p, vec![7u8; 10 * 1024 + 5]).unwrap();
    let mut cuts = Vec::new();
    rialto_io::Fs::remove_file_gradually(&fs, &p, 4096, &mut |n| {
        cuts.push((n, std::fs::metadata(&p).unwrap().len()));
        Ok(())
    })
    .unwrap();
    assert_eq!(cuts, vec![(4096, 10 * 1024 + 5), (4096, 6 * 1024 + 5)]);
    assert!(!p.exists());

    // A pacing error stops it: the file stays, shorter, for a later attempt.
    std::fs::write(&p, vec![7u8; 10 * 1024]).unwrap();
    let mut calls = 0;
    let e = rialto_io::Fs::remove_file_gradually(&fs, &p, 4096, &mut |_| {
        calls += 1;
        if calls == 2 {
            return Err(std::io::Error::other("closing"));
        }
        Ok(())
    })
    .unwrap_err();
    assert_eq!(e.to_string(), "closing");
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 6 * 1024);

    // Step 0, or a file no longer than a step: removed at once, no pacing.
    for step in [0, 1 << 20] {
        std::fs::write(&p, vec![7u8; 10 * 1024]).unwrap();
        rialto_io::Fs::remove_file_gradually(&fs, &p, step, &mut |_| panic!("paced")).unwrap();
        assert!(!p.exists());
    }
    let missing = dir.path().join("missing");
    let e = rialto_io::Fs::remove_file_gradually(&fs, &missing, 4096, &mut |_| Ok(()));
    assert_eq!(e.unwrap_err().kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn create_zeroed_writes_durable_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let fs = rialto_io::PosixFs::new();
    for len in [3 * 1024 * 1024 + 8192, 10_001, 0] {
        let p = dir.path().join(format!("zeros-{len}"));
        let mut paced = 0u64;
        rialto_io::Fs::create_zeroed(&fs, &p, len, &mut |n| {
            paced += n;
            Ok(())
        })
        .unwrap();
        assert_eq!(paced, len);
        let data = rialto_io::Fs::read_all(&fs, &p).unwrap();
        assert_eq!(data.len() as u64, len);
        assert!(data.iter().all(|&b| b == 0));
    }
    // A pacing error aborts.
    let p = dir.path().join("aborted");
    let e = rialto_io::Fs::create_zeroed(&fs, &p, 4 << 20, &mut |_| {
        Err(std::io::Error::other("stop"))
    })
    .unwrap_err();
    assert_eq!(e.to_string(), "stop");
}

#[test]
fn start_writeback_between_appends_keeps_every_byte() {
    // Each call asks for write-back of the bytes written since the previous one only (and
    // the waiting kinds wait for earlier ones); the file must read back whole, also for a
    // handle that starts at a non-zero length.
    let dir = tempdir();
    let fs = PosixFs::new();
    let path = dir.path().join("data");
    let mut expected = Vec::new();
    let mut w = fs.create(&path).unwrap();
    for i in 0..40u8 {
        let chunk = vec![i; 10_000 + usize::from(i) * 997];
        w.append(&chunk).unwrap();
        expected.extend_from_slice(&chunk);
        match i % 4 {
            0 => w.start_writeback().unwrap(),
            1 => w.write_back_behind().unwrap(),
            2 if i % 8 == 2 => w.write_back().unwrap(),
            _ => {}
        }
    }
    w.write_back_behind().unwrap();
    w.write_back_behind().unwrap();
    w.start_writeback().unwrap();
    w.start_writeback().unwrap();
    drop(w);
    let mut w = fs.open_append(&path).unwrap();
    w.append(b"tail").unwrap();
    w.start_writeback().unwrap();
    expected.extend_from_slice(b"tail");
    w.sync_data().unwrap();
    let r = fs.open_read(&path).unwrap();
    assert_eq!(r.read_vec_at(0, expected.len()).unwrap(), expected);
}

/// Pages of `path`'s first `len` bytes that are in the page cache, or `None` where that
/// cannot be told (a tmpfs keeps every page).
fn resident_pages(path: &Path, len: usize) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).unwrap();
    // SAFETY: fstatfs, mmap, mincore and munmap over a file we opened and a buffer of the
    // size mincore needs; the mapping is only inspected, never read.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::fstatfs(file.as_raw_fd(), &mut st) != 0 || st.f_type == libc::TMPFS_MAGIC {
            return None;
        }
        let map = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(map, libc::MAP_FAILED);
        let mut vec = vec![0u8; len.div_ceil(4096)];
        let rc = libc::mincore(map, len, vec.as_mut_ptr());
        libc::munmap(map, len);
        assert_eq!(rc, 0);
        Some(vec.iter().filter(|&&b| b & 1 == 1).count())
    }
}

#[test]
fn drop_cache_releases_written_pages_and_keeps_every_byte() {
    let dir = tempdir();
    let fs = PosixFs::new();
    let path = dir.path().join("data");
    let mut expected = Vec::new();
    let mut w = fs.create(&path).unwrap();
    for i in 0..64u8 {
        let chunk = vec![i; 64 << 10];
        w.append(&chunk).unwrap();
        expected.extend_from_slice(&chunk);
        w.start_writeback().unwrap();
        // Behind the write-back, as a table writer calls it; a page still being written
        // stays cached until a later call.
        w.drop_cache(w.len() / 2).unwrap();
    }
    // Bytes still in the user-space buffer are not touched.
    w.append(b"tail").unwrap();
    w.drop_cache(u64::MAX).unwrap();
    expected.extend_from_slice(b"tail");
    w.sync_data().unwrap();
    w.drop_cache(w.len()).unwrap();
    if let Some(resident) = resident_pages(&path, expected.len()) {
        let pages = expected.len().div_ceil(4096);
        assert!(
            resident < pages / 4,
            "{resident} of {pages} pages still cached"
        );
    }
    let r = fs.open_read(&path).unwrap();
    assert_eq!(r.read_vec_at(0, expected.len()).unwrap(), expected);
}

#[test]
fn an_idle_priority_thread_is_in_sched_idle_and_its_threads_inherit_it() {
    use rialto_io::{set_thread_priority, ThreadPriority};
    let policies = std::thread::spawn(|| {
        if let Err(e) = set_thread_priority(ThreadPriority::Idle) {
            // Refused here (a seccomp filter): the fallback is niceness 19.
            assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
            return None;
        }
        // SAFETY: sched_getscheduler(0) reads the calling thread's policy.
        let own = unsafe { libc::sched_getscheduler(0) };
        let child = std::thread::spawn(|| unsafe { libc::sched_getscheduler(0) })
            .join()
            .unwrap();
        Some((own, child))
    })
    .join()
    .unwrap();
    if let Some(p) = policies {
        assert_eq!(p, (libc::SCHED_IDLE, libc::SCHED_IDLE));
    }
    // SAFETY: as above; the test thread itself was left alone.
    assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
    assert_eq!(ThreadPriority::Idle.to_string(), "idle");
    assert_eq!(ThreadPriority::Nice(19).to_string(), "19");
}
