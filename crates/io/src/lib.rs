//! The one seam through which Rialto touches the outside world: files, fsync, renames,
//! directory syncs, file locks and clocks.
//!
//! Two implementations:
//! - [`PosixFs`]: the real file system (pread/pwrite-style access, `fdatasync`, `flock`).
//! - [`MemFs`]: an in-memory file system that models what a crash keeps. It tracks, per file,
//!   how many bytes were made durable by a sync, and per directory which entries were made
//!   durable by a directory sync. [`MemFs::crash`] turns the state into what a power loss could
//!   leave behind, and [`FaultPlan`]s fail the Nth write, sync or rename with EIO or ENOSPC.
//!
//! Every engine component takes an `Arc<dyn Fs>`; nothing in the engine calls `std::fs`.
//!
//! Errors are plain `std::io::Error`s so that callers can inspect `raw_os_error()` (EIO, ENOSPC)
//! and `kind()` the same way for both implementations.

mod clock;
mod device;
mod direct;
mod mem;
mod posix;

pub use clock::{Clock, ManualClock, SystemClock};
pub use device::{DeviceModel, DeviceStats};
pub use mem::{CrashMode, Fault, FaultOp, FaultPlan, MemFs};
pub use posix::PosixFs;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file opened for appending. Writes may be buffered in user space until [`flush`],
/// and are durable only after [`sync_data`] or [`sync_all`] returned `Ok`.
///
/// After any error from `append`, `flush` or a sync, the file's durable contents are unknown:
/// callers must not retry a sync and trust it (fsyncgate); the engine turns read-only instead.
///
/// [`flush`]: WritableFile::flush
/// [`sync_data`]: WritableFile::sync_data
/// [`sync_all`]: WritableFile::sync_all
pub trait WritableFile: Send + Sync {
    /// Appends `data` at the end of the file.
    fn append(&mut self, data: &[u8]) -> io::Result<()>;
    /// Hands buffered bytes to the operating system (no durability implied).
    fn flush(&mut self) -> io::Result<()>;
    /// Flushes, then makes the file's data durable (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Flushes, then makes the file's data and metadata durable (`fsync`).
    fn sync_all(&mut self) -> io::Result<()>;
    /// Reserves space so the file's size already covers `len` bytes: later appends up to
    /// there change no file size, so an `fdatasync` after them commits no new size (ext4
    /// still commits the conversion of the unwritten extents they land in; see design §3.1).
    /// The reserved range reads as zeros. Appends still go where the last append ended.
    /// Best effort: a file system that cannot reserve does nothing. Default: no-op.
    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        let _ = len;
        Ok(())
    }
    /// Flushes, then asks the operating system to start writing the file's dirty pages back
    /// without waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)` on Linux). Background
    /// writers call it every few hundred KiB so their data trickles to disk instead of landing
    /// in one burst at their final sync, in front of the journal's syncs. Not a durability
    /// point. Default: flush only.
    fn start_writeback(&mut self) -> io::Result<()> {
        self.flush()
    }
    /// Flushes, then writes the file's dirty pages back and waits until they are on the
    /// device (`sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)` on Linux). Not a
    /// durability point: neither metadata nor the device's cache is flushed. For a
    /// background writer that must never leave more than a chunk dirty: on ext4
    /// (`data=ordered`) the next journal commit, which every WAL `fdatasync` of a converted
    /// extent triggers, first writes back all data whose blocks it allocates, so a burst of
    /// dirty pages turns into one long commit stall. Default: flush only.
    fn write_back(&mut self) -> io::Result<()> {
        self.flush()
    }
    /// [`start_writeback`], then waits until the write-back the previous call started is on
    /// the device: a background writer calling it every interval keeps at most about two
    /// intervals of its data dirty or in flight, however far it runs ahead of the disk. On
    /// ext4 (`data=ordered`) a journal commit, which every WAL `fdatasync` that converts an
    /// extent triggers, first writes back the data of every block allocated in it, so what a
    /// compaction has in flight is what a commit can wait for. Measured with
    /// `syncwhilecompacting` (4 writers, 3 alternating runs each): 32-38K commits/s against
    /// 31K with write-back only started, p99.9 3.6-3.8 ms against 4.0-4.5 ms (design §9).
    /// Default: [`start_writeback`].
    ///
    /// [`start_writeback`]: WritableFile::start_writeback
    fn write_back_behind(&mut self) -> io::Result<()> {
        self.start_writeback()
    }
    /// Hint that the file's first `end` bytes will not be read through the operating
    /// system's page cache soon: those already written to disk leave it
    /// (`posix_fadvise(POSIX_FADV_DONTNEED)` on Linux; pages still dirty or under write-back
    /// stay). A writer that streams a large file out calls it behind [`start_writeback`], so
    /// the file recycles a few MiB of page cache instead of taking fresh memory for every
    /// byte. Changes neither contents nor durability. Default: nothing.
    ///
    /// [`start_writeback`]: WritableFile::start_writeback
    fn drop_cache(&mut self, end: u64) -> io::Result<()> {
        let _ = end;
        Ok(())
    }
    /// A handle that syncs this file's data from another thread while this one keeps
    /// appending (the transaction merger syncs batch N while batch N+1 is written). A sync
    /// through it makes durable every byte flushed to the operating system before the call.
    /// Default: unsupported.
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file cannot be synced from another handle",
        ))
    }
    /// Logical length of the file: every byte appended so far, flushed or not. For a handle
    /// from [`Fs::open_overwrite`], the position of the next write.
    fn len(&self) -> u64;
    /// True when nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Syncs one file's data independently of its writer (see [`WritableFile::syncer`]).
///
/// Callers must not run two syncs of one file at once and trust both: after a write-back
/// error, Linux reports it to one of them only. The WAL serializes its syncs for that reason.
pub trait FileSyncer: Send + Sync {
    /// `fdatasync`: makes durable every byte flushed to the operating system before the call.
    fn sync_data(&self) -> io::Result<()>;
}

/// A file opened for positional reads. Safe to share between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`. Reading past the end is an `UnexpectedEof` error.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Reads `len` bytes at `offset` into a new vector. Implementations may skip zeroing the
    /// buffer first (block reads on a cache miss are hot enough for it to show).
    fn read_vec_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
    /// Length of the file when it was opened.
    fn len(&self) -> u64;
    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An exclusive lock on a file, held until dropped.
pub trait FileLock: Send + Sync {}

/// Every file-system operation the engine performs.
pub trait Fs: Send + Sync + 'static {
    /// Creates `path` and its missing parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Creates (or truncates) `path` for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) `path` for appending, written around the operating system's
    /// page cache (`O_DIRECT` on Linux), in 1 MiB chunks written by a thread of the file's own
    /// while the next chunk fills. For large outputs nobody reads soon: it saves the copy into fresh pages and their write-back, and evicts nothing.
    /// `flush` writes the unaligned tail padded and truncates the file back, so the contract
    /// is [`Fs::create`]'s. Where the file system refuses direct I/O, the file is an ordinary
    /// buffered one. Default: [`Fs::create`].
    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens an existing file for appending at its end.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens an existing file for writing from its first byte, keeping its contents and
    /// length: each append overwrites the bytes where the previous one ended, and extends the
    /// file once it passes the end. The handle's `len()` is the position of the next write.
    ///
    /// The WAL writes its records this way over a file of zeros written and synced ahead, so
    /// that an `fdatasync` of them commits data alone (no size, no extent conversion; design
    /// §3.1). Overwritten bytes that were durable stay durable as they were until a sync
    /// covers the new ones: a crash can bring back either, per sector.
    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) `path` holding `len` zero bytes, durable (data and size) when it
    /// returns `Ok`, calling `pace(n)` before each chunk of `n` bytes: it may sleep (pacing)
    /// or fail, which aborts (the partial file stays for the caller to remove). The WAL
    /// prepares segments this way. Written through [`Fs::create`] (for `MemFs`: one create, a
    /// write per chunk and one sync), writing each chunk back before the next
    /// ([`WritableFile::write_back`]): writing the zeros unwaited, with write-back merely
    /// started, left tens of MiB dirty, and the journal commit of the WAL's next `fdatasync`
    /// then waited for all of them (40-50 ms, measured; design §3.1).
    ///
    /// Buffered on purpose, not `O_DIRECT`: the zeros must stay in the page cache. Over a
    /// page that is not cached, the WAL's first (partial) write must read it from disk, and
    /// that read costs more than the extent conversion the zeros save (measured: fillsync with
    /// 4 KiB values, one thread, about 0.9× preallocation with direct zeros, 1.2× buffered).
    fn create_zeroed(
        &self,
        path: &Path,
        len: u64,
        pace: &mut dyn FnMut(u64) -> io::Result<()>,
    ) -> io::Result<()> {
        create_zeroed_buffered(self.create(path)?, len, pace)
    }
    /// Frees `len` bytes of `path` from `offset`: they read as zeros afterwards, their disk
    /// blocks and cached pages are released, dirty ones without being written, and the file
    /// keeps its size (`fallocate(PUNCH_HOLE)` on Linux). For temporary files read once: a
    /// merge frees the part of a sorted run it has read, so that neither the pages' write-back
    /// nor their release when the run is removed is paid for data already used. Only a hint
    /// where unsupported (nothing happens). Default: nothing.
    fn punch_hole(&self, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        let _ = (path, offset, len);
        Ok(())
    }
    /// Opens an existing file for positional reads.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>>;
    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let f = self.open_read(path)?;
        let len = usize::try_from(f.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large"))?;
        let mut buf = vec![0u8; len];
        f.read_exact_at(0, &mut buf)?;
        Ok(buf)
    }
    /// Atomically renames `from` to `to`, replacing `to`. Durable after [`Fs::sync_dir`].
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file. Durable after [`Fs::sync_dir`].
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory; fails if it holds anything. Durable after [`Fs::sync_dir`]
    /// of its parent.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// Removes a file no one reads any more in steps: cuts `step` bytes off its end at a
    /// time, calling `pace(n)` before each cut of `n` bytes (it may sleep, or fail, which
    /// aborts and leaves the shorter file), then removes what is left. Durable after
    /// [`Fs::sync_dir`]; a crash part-way leaves a shorter file under the same name.
    ///
    /// Why: freeing a large file's blocks at once lands in one file-system journal commit,
    /// and on ext4 mounted with `discard` that commit also discards them all, while every
    /// WAL `fdatasync` waits for it. Removing a 73 MiB segment at once stalled a concurrent
    /// journal sync for 14-28 ms here; in 8 MiB cuts, for at most 3.6 ms (design §3.1).
    /// `step` 0 removes at once. Default: [`Fs::remove_file`].
    fn remove_file_gradually(
        &self,
        path: &Path,
        step: u64,
        pace: &mut dyn FnMut(u64) -> io::Result<()>,
    ) -> io::Result<()> {
        let _ = (step, pace);
        self.remove_file(path)
    }
    /// Cuts a file to `len` bytes and syncs it.
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()>;
    /// Names (not paths) of the entries of a directory, in no particular order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// True if `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Current length of a file.
    fn file_size(&self, path: &Path) -> io::Result<u64>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (creating it). Fails with `ErrorKind::WouldBlock`
    /// when another process (or another open database in this process) holds it.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>>;
}

/// Shared handle to a file system.
pub type FsRef = Arc<dyn Fs>;

/// Bytes of zeros [`Fs::create_zeroed`] writes at a time. Each chunk is written back and
/// waited for before the next (see [`WritableFile::write_back`]), so a journal sync issued
/// meanwhile waits for at most one chunk: 256 KiB takes about 0.2 ms on this project's test
/// disk.
pub const ZERO_CHUNK: usize = 256 << 10;

/// [`Fs::create_zeroed`] through an ordinary writable file.
fn create_zeroed_buffered(
    mut f: Box<dyn WritableFile>,
    len: u64,
    pace: &mut dyn FnMut(u64) -> io::Result<()>,
) -> io::Result<()> {
    let zeros = vec![0u8; ZERO_CHUNK];
    let mut written = 0u64;
    while written < len {
        let n = (len - written).min(ZERO_CHUNK as u64);
        pace(n)?;
        f.append(&zeros[..n as usize])?;
        f.write_back()?;
        written += n;
    }
    f.sync_all()
}

/// `dir/name`.
pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// Sets the calling thread's CPU niceness to `nice` (0 changes nothing). On Linux niceness
/// belongs to a thread, and the threads it starts inherit it. Background work (compactions,
/// batch pushes) runs at a higher niceness than the threads that commit and serve, so that
/// on a machine with few cores a commit does not wait for a CPU behind it.
pub fn lower_thread_priority(nice: i32) -> io::Result<()> {
    if nice == 0 {
        return Ok(());
    }
    // SAFETY: gettid and setpriority only read their arguments; PRIO_PROCESS with a thread
    // id changes that thread alone.
    let rc = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Bytes of memory this process could take without swapping or reclaim in its memory cgroup:
/// `MemAvailable` of `/proc/meminfo` (which counts reclaimable page cache), capped by the
/// headroom of the cgroup's limit (v2 or v1) when one is set, since inside a container
/// `/proc/meminfo` shows the host; `None` where unknown.
pub fn mem_available() -> Option<u64> {
    let host = meminfo_available()?;
    Some(match cgroup_headroom() {
        Some(h) => host.min(h),
        None => host,
    })
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn meminfo_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Headroom under this process's memory cgroup limit: the limit less what is in use and not
/// easily reclaimed (usage minus inactive page cache). `None` without a limit.
fn cgroup_headroom() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let num = |s: Option<String>| s.and_then(|s| s.trim().parse::<u64>().ok());
    // cgroup v1 names the memory controller; v2 is the single "0::" hierarchy.
    for line in own.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "memory") {
            let dir = Path::new("/sys/fs/cgroup/memory").join(rel);
            let limit = num(read(&dir.join("memory.limit_in_bytes")))?;
            let usage = num(read(&dir.join("memory.usage_in_bytes")))?;
            let inactive = stat_field(&read(&dir.join("memory.stat"))?, "total_inactive_file");
            return headroom(limit, usage, inactive);
        }
        if id == "0" && controllers.is_empty() {
            let dir = Path::new("/sys/fs/cgroup").join(rel);
            let limit = num(read(&dir.join("memory.max")))?; // "max" does not parse: no limit
            let usage = num(read(&dir.join("memory.current")))?;
            let inactive = stat_field(&read(&dir.join("memory.stat"))?, "inactive_file");
            return headroom(limit, usage, inactive);
        }
    }
    None
}

fn stat_field(stat: &str, name: &str) -> u64 {
    stat.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// `limit - (usage - inactive)`; a limit of 2^60 or more (v1's "unlimited") is none.
fn headroom(limit: u64, usage: u64, inactive: u64) -> Option<u64> {
    (limit < 1 << 60).then(|| limit.saturating_sub(usage.saturating_sub(inactive)))
}

/// CPU priority of a background thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadPriority {
    /// An ordinary thread at this niceness (0..=19; 0 changes nothing).
    Nice(i32),
    /// Linux's `SCHED_IDLE` class, below every niceness: the thread runs only on CPU time no
    /// other thread wants, a waking ordinary thread preempts it at once (a nice-19 thread may
    /// first finish its slice), and the scheduler places waking threads on a CPU running only
    /// idle-class threads as on an idle one.
    Idle,
}

impl std::fmt::Display for ThreadPriority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThreadPriority::Nice(n) => write!(f, "{n}"),
            ThreadPriority::Idle => f.write_str("idle"),
        }
    }
}

/// Gives the calling thread priority `p`; the threads it starts afterwards inherit it.
/// Lowering needs no privilege; raising back does, so callers only lower. Where `SCHED_IDLE`
/// is refused (a seccomp filter, another kernel), `Idle` falls back to niceness 19 and still
/// returns the error, for the caller to report.
pub fn set_thread_priority(p: ThreadPriority) -> io::Result<()> {
    match p {
        ThreadPriority::Nice(n) => lower_thread_priority(n),
        ThreadPriority::Idle => {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: sched_setscheduler with pid 0 changes the calling thread alone and
            // only reads `param`.
            let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
            if rc == 0 {
                Ok(())
            } else {
                let e = io::Error::last_os_error();
                let _ = lower_thread_priority(19);
                Err(e)
            }
        }
    }
}

/// True if `e` is the operating system's "no space left on device".
pub fn is_no_space(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOSPC)
}

#[cfg(test)]
mod mem_tests {
    use super::*;

    #[test]
    fn cgroup_headroom_counts_inactive_cache_as_free_and_ignores_no_limit() {
        assert_eq!(headroom(1000, 700, 200), Some(500));
        assert_eq!(headroom(1000, 1200, 0), Some(0));
        assert_eq!(headroom(9_223_372_036_854_771_712, 5, 0), None);
        let stat = "cache 10\ninactive_file 300\ntotal_inactive_file 700\n";
        assert_eq!(stat_field(stat, "inactive_file"), 300);
        assert_eq!(stat_field(stat, "total_inactive_file"), 700);
        assert_eq!(stat_field(stat, "active_file"), 0);
        // Whatever the machine, the answer is at most what /proc/meminfo says.
        if let (Some(all), Some(host)) = (mem_available(), meminfo_available()) {
            assert!(all <= host + (64 << 20), "{all} vs {host}");
        }
    }
}
