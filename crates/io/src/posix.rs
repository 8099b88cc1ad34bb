//! The real file system: buffered appends, positional reads, `fdatasync`, directory fsync and
//! `flock`.
//!
//! Every error is the `std::io::Error` the operating system returned, unchanged, so callers see
//! `raw_os_error() == Some(EIO)` or `Some(ENOSPC)` exactly as the kernel reported it. The one
//! exception is a held lock, reported as `ErrorKind::WouldBlock` with a message naming the path.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use crate::{FileLock, FileSyncer, Fs, RandomAccessFile, WritableFile};

/// Bytes a writable file buffers in user space before handing them to `write(2)`.
///
/// Large enough that a WAL made of small records costs one syscall per ~64 KiB; an append at
/// least this large bypasses the buffer (after the buffer is written, to keep the order).
const WRITE_BUFFER_CAPACITY: usize = 64 * 1024;

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFs {
    /// Keeps the struct open to future options without breaking `PosixFs::new()` callers.
    _private: (),
}

impl PosixFs {
    /// The real file system.
    pub fn new() -> Self {
        PosixFs { _private: () }
    }
}

impl Fs for PosixFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(PosixWritableFile::new(file, 0, false)))
    }

    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        use std::os::unix::fs::OpenOptionsExt;
        let opened = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(path);
        match opened {
            Ok(file) => Ok(Box::new(crate::direct::DirectWritableFile::new(file))),
            // tmpfs and some others refuse O_DIRECT at open.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.create(path),
            Err(e) => Err(e),
        }
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        // O_APPEND: every write(2) lands at the end, whatever else wrote to the file.
        let file = OpenOptions::new().append(true).open(path)?;
        let len = file.metadata()?.len();
        Ok(Box::new(PosixWritableFile::new(file, len, true)))
    }

    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        // Neither O_APPEND nor O_TRUNC: write(2) goes at the file position, which starts at 0.
        let file = OpenOptions::new().write(true).open(path)?;
        Ok(Box::new(PosixWritableFile::new(file, 0, false)))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Arc::new(PosixRandomAccessFile { file, len }))
    }

    fn punch_hole(&self, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(path)?;
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
        else {
            return Ok(());
        };
        // Punching keeps the size (KEEP_SIZE is required with PUNCH_HOLE).
        fallocate_if_supported(
            &file,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset,
            len,
        )
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn remove_file_gradually(
        &self,
        path: &Path,
        step: u64,
        pace: &mut dyn FnMut(u64) -> io::Result<()>,
    ) -> io::Result<()> {
        if step > 0 {
            let file = OpenOptions::new().write(true).open(path)?;
            let mut len = file.metadata()?.len();
            while len > step {
                pace(step)?;
                len -= step;
                // No sync: the cuts reach the file system's journal with the commits that
                // others' syncs make anyway, a few at a time.
                file.set_len(len)?;
            }
        }
        fs::remove_file(path)
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(path)?;
        file.set_len(len)?;
        file.sync_all()
    }

    /// Non-UTF-8 names are converted lossily: the engine only acts on names it wrote itself
    /// (all ASCII), so a stray foreign file must not make listing the directory fail.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(path)? {
            let name = entry?.file_name();
            names.push(
                name.into_string()
                    .unwrap_or_else(|raw| raw.to_string_lossy().into_owned()),
            );
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        try_lock_exclusive(&file).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "{}: lock is held by another process or by another open database in \
                         this process",
                        path.display()
                    ),
                )
            } else {
                e
            }
        })?;
        Ok(Box::new(PosixFileLock { _file: file }))
    }
}

/// `fallocate(2)` on `file`, retrying on EINTR. Its callers only optimize (preallocation,
/// freeing read data), so a file system without it is not an error: nothing happens.
fn fallocate_if_supported(
    file: &File,
    mode: libc::c_int,
    offset: libc::off_t,
    len: libc::off_t,
) -> io::Result<()> {
    loop {
        // SAFETY: fallocate on a descriptor `file` keeps open for the whole call, over a range
        // of the file; it reads no memory of ours.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), mode, offset, len) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => return Ok(()),
            _ => return Err(e),
        }
    }
}

/// Takes a non-blocking exclusive `flock` on `file`, retrying on EINTR.
///
/// `flock` locks belong to the open file description, so a second open of the same path in
/// this process conflicts with the first exactly as another process would.
fn try_lock_exclusive(file: &File) -> io::Result<()> {
    loop {
        // SAFETY: `file` owns a valid open descriptor for the whole call; `flock` reads no
        // memory of ours and only changes the lock state of that descriptor.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Holds an `flock`ed descriptor; closing it on drop releases the lock.
struct PosixFileLock {
    _file: File,
}

impl FileLock for PosixFileLock {}

/// A file opened for appending through a user-space buffer.
///
/// Invariant: `len` = the file position the kernel has reached (the length at open for
/// O_APPEND, 0 for `open_overwrite`, plus every successful write) + `buf.len()`.
struct PosixWritableFile {
    file: File,
    buf: Vec<u8>,
    len: u64,
    /// Opened with O_APPEND (see `preallocate`).
    append_mode: bool,
    /// File position up to which `start_writeback` has already asked for write-back, so each
    /// call covers only the bytes written since (the kernel need not walk the whole file).
    writeback_from: u64,
    /// File position up to which write-back has been waited for (`write_back`,
    /// `write_back_behind`).
    waited_to: u64,
}

impl PosixWritableFile {
    fn new(file: File, len: u64, append_mode: bool) -> Self {
        PosixWritableFile {
            file,
            buf: Vec::with_capacity(WRITE_BUFFER_CAPACITY),
            len,
            append_mode,
            writeback_from: 0,
            waited_to: 0,
        }
    }

    /// Writes the whole buffer. On error the bytes already written are removed from the
    /// buffer, so a later flush does not write them twice.
    fn flush_buffer(&mut self) -> io::Result<()> {
        let (written, result) = write_fully(&self.file, &self.buf);
        self.buf.drain(..written);
        result
    }

    /// Flushes, then `sync_file_range(flags)` over the bytes written since the last call:
    /// starts (and with the `WAIT` flags awaits) their write-back. Only a hint where the file
    /// system lacks it.
    fn sync_range(&mut self, flags: libc::c_uint) -> io::Result<()> {
        self.flush_buffer()?;
        // Every byte before `len` is now in the kernel (the buffer is empty).
        let (from, to) = (self.writeback_from, self.len);
        self.sync_file_range(from, to, flags)?;
        self.writeback_from = self.writeback_from.max(to);
        Ok(())
    }

    /// `sync_file_range(flags)` over `from..to`, retrying on EINTR. Only a hint where the file
    /// system lacks it.
    fn sync_file_range(&self, from: u64, to: u64, flags: libc::c_uint) -> io::Result<()> {
        if to <= from {
            return Ok(());
        }
        let (Ok(offset), Ok(nbytes)) = (
            libc::off64_t::try_from(from),
            libc::off64_t::try_from(to - from),
        ) else {
            return Ok(());
        };
        loop {
            // SAFETY: sync_file_range on a file descriptor we own, over a range of the file;
            // it writes back and waits, it never changes the file.
            let rc = unsafe { libc::sync_file_range(self.file.as_raw_fd(), offset, nbytes, flags) };
            if rc == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // Only a hint: file systems without it lose nothing.
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::EINVAL) => return Ok(()),
                _ => return Err(e),
            }
        }
    }
}

/// `sync_file_range` flags that write a range back and wait until it is on the device.
const WAIT_WRITE_WAIT: libc::c_uint = libc::SYNC_FILE_RANGE_WAIT_BEFORE
    | libc::SYNC_FILE_RANGE_WRITE
    | libc::SYNC_FILE_RANGE_WAIT_AFTER;

/// Writes all of `data` with as many `write(2)` calls as it takes (short writes, EINTR).
/// Returns how many bytes were written, also when it fails part-way.
fn write_fully(mut file: &File, data: &[u8]) -> (usize, io::Result<()>) {
    let mut written = 0;
    while written < data.len() {
        match file.write(&data[written..]) {
            Ok(0) => {
                let err = io::Error::new(io::ErrorKind::WriteZero, "write(2) accepted no bytes");
                return (written, Err(err));
            }
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (written, Err(e)),
        }
    }
    (written, Ok(()))
}

impl WritableFile for PosixWritableFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.buf.len() + data.len() > WRITE_BUFFER_CAPACITY {
            self.flush_buffer()?;
        }
        if data.len() >= WRITE_BUFFER_CAPACITY {
            let (written, result) = write_fully(&self.file, data);
            self.len += written as u64;
            return result;
        }
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_buffer()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.flush_buffer()?;
        self.file.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.flush_buffer()?;
        self.file.sync_all()
    }

    fn start_writeback(&mut self) -> io::Result<()> {
        self.sync_range(libc::SYNC_FILE_RANGE_WRITE)
    }

    fn write_back(&mut self) -> io::Result<()> {
        self.sync_range(WAIT_WRITE_WAIT)?;
        self.waited_to = self.writeback_from;
        Ok(())
    }

    fn write_back_behind(&mut self) -> io::Result<()> {
        // The range the previous calls started: likely written already, waited for if not.
        let (from, to) = (self.waited_to, self.writeback_from);
        self.sync_range(libc::SYNC_FILE_RANGE_WRITE)?;
        self.sync_file_range(from, to, WAIT_WRITE_WAIT)?;
        self.waited_to = to;
        Ok(())
    }

    fn drop_cache(&mut self, end: u64) -> io::Result<()> {
        // Bytes still in the user-space buffer have no pages to drop yet. The range always
        // starts at 0: a page skipped by an earlier call because it was still being written
        // is dropped by a later one (the kernel walks cached pages only, so re-advising a
        // dropped range costs little).
        let end = end.min(self.len - self.buf.len() as u64);
        if end == 0 {
            return Ok(());
        }
        let Ok(len) = libc::off_t::try_from(end) else {
            return Ok(());
        };
        // SAFETY: posix_fadvise on a file descriptor we own, over a range of the file; it
        // only changes what the kernel caches.
        let rc = unsafe {
            libc::posix_fadvise(self.file.as_raw_fd(), 0, len, libc::POSIX_FADV_DONTNEED)
        };
        match rc {
            0 => Ok(()),
            // Only a hint: where it is unsupported nothing is lost.
            libc::ESPIPE | libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        // A duplicated descriptor shares the open file description, so its fdatasync covers
        // everything written through this one.
        Ok(Arc::new(PosixFileSyncer {
            file: self.file.try_clone()?,
        }))
    }

    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        if self.append_mode || len <= self.len {
            // O_APPEND writes land at the end of the file, which reserving would move.
            return Ok(());
        }
        let len = libc::off_t::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length overflows"))?;
        // Mode 0 allocates and extends the size, leaving the file position (where the next
        // write goes) alone.
        fallocate_if_supported(&self.file, 0, 0, len)
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// A duplicated descriptor of a file being appended to, for syncing it from another thread.
struct PosixFileSyncer {
    file: File,
}

impl FileSyncer for PosixFileSyncer {
    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

impl Drop for PosixWritableFile {
    /// Best effort: the engine syncs explicitly whatever it needs durable, and has already
    /// seen (or will never care about) any error here.
    fn drop(&mut self) {
        let _ = self.flush_buffer();
    }
}

/// A file opened for positional reads (`pread`), shareable between threads.
struct PosixRandomAccessFile {
    file: File,
    /// Length when opened; reads beyond it still succeed if the file has grown since.
    len: u64,
}

impl RandomAccessFile for PosixRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn read_vec_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf: Vec<u8> = Vec::with_capacity(len);
        let mut done = 0usize;
        while done < len {
            let at = offset
                .checked_add(done as u64)
                .and_then(|o| libc::off_t::try_from(o).ok())
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset overflows"))?;
            // SAFETY: the destination is the vector's spare capacity (len - done bytes from
            // `done`), which pread writes and never reads; `set_len` below covers only bytes
            // pread reported as written.
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    buf.as_mut_ptr().add(done).cast(),
                    len - done,
                    at,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                ));
            }
            done += n as usize;
            // SAFETY: pread initialized bytes up to `done`.
            unsafe { buf.set_len(done) };
        }
        Ok(buf)
    }

    fn len(&self) -> u64 {
        self.len
    }
}
