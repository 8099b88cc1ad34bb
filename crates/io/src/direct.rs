//! Files written around the page cache (`O_DIRECT`), for large outputs that nobody reads
//! through the cache soon: an ingestion's tables beyond its page-cache budget.
//!
//! Why: a buffered write costs a kernel copy into freshly allocated pages, then the kernel's
//! write-back of them. On this machine's disk `dd` wrote 1.2–1.4 GB/s with `O_DIRECT` and
//! 0.63–0.73 GB/s buffered. Why a second thread: a direct write returns once the device has
//! the data, so a writer doing its own writes would wait out every chunk; with chunks in
//! flight on the file's I/O thread, filling the next ones overlaps the disk.
//!
//! Invariants:
//! - `fill` always starts at an aligned file offset, `base`; every write covers whole blocks of
//!   [`ALIGN`] bytes from an aligned buffer.
//! - Only full [`CHUNK`]s go to the I/O thread, in order, at most [`DEPTH`] at a time;
//!   `flush` waits for them, then writes what is left, its last block padded with zeros, and
//!   truncates the file back to its logical length. That block stays in `fill`, so the next
//!   write rewrites it with the bytes appended after it.
//! - After a failed write the file refuses everything (fsyncgate: its contents are unknown).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::WritableFile;

/// Alignment of direct writes' buffers, offsets and lengths: covers the logical block sizes
/// Linux file systems use (512 and 4096 bytes).
pub(crate) const ALIGN: usize = 4096;
/// Full chunks queued for or being written by a file's I/O thread at once, so that the thread
/// finds the next chunk ready when a write ends and the disk is not left idle between writes.
const DEPTH: usize = 2;
/// Bytes per direct write. `dd` reached the disk's bandwidth here with 1 MiB writes (1.2 GB/s,
/// as with 4 and 16 MiB); [`DEPTH`] + 1 of them per open file are its memory.
pub(crate) const CHUNK: usize = 1 << 20;

/// [`CHUNK`] bytes at an [`ALIGN`]ed address, the first `len` of them filled.
struct AlignedBuf {
    raw: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    fn new() -> AlignedBuf {
        let raw = vec![0u8; CHUNK + ALIGN];
        let off = raw.as_ptr().align_offset(ALIGN);
        AlignedBuf { raw, off, len: 0 }
    }

    fn room(&self) -> usize {
        CHUNK - self.len
    }

    fn extend(&mut self, data: &[u8]) {
        let at = self.off + self.len;
        self.raw[at..at + data.len()].copy_from_slice(data);
        self.len += data.len();
    }

    /// The filled bytes, zero-padded to whole blocks.
    fn padded(&mut self) -> &[u8] {
        let end = self.len.div_ceil(ALIGN) * ALIGN;
        self.raw[self.off + self.len..self.off + end].fill(0);
        &self.raw[self.off..self.off + end]
    }

    /// Drops the whole blocks at the front, keeping the partial last one (moved to the front).
    fn keep_tail(&mut self) -> usize {
        let whole = self.len / ALIGN * ALIGN;
        self.raw
            .copy_within(self.off + whole..self.off + self.len, self.off);
        self.len -= whole;
        whole
    }
}

/// A chunk for the I/O thread, and what it sends back.
struct Job {
    buf: AlignedBuf,
    offset: u64,
}
type Done = (AlignedBuf, io::Result<()>);

/// The file's I/O thread: writes each chunk it is sent, in order, and hands the buffer back.
struct Worker {
    jobs: Option<SyncSender<Job>>,
    /// In a mutex only so that the file is `Sync`; one thread uses it.
    done: parking_lot::Mutex<Receiver<Done>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    fn start(file: Arc<File>) -> io::Result<Worker> {
        let (jobs, rx) = mpsc::sync_channel::<Job>(DEPTH);
        let (done_tx, done) = mpsc::channel::<Done>();
        let thread = std::thread::Builder::new()
            .name("rialto-direct-io".into())
            .spawn(move || {
                for job in rx {
                    let len = job.buf.len;
                    let r = file.write_all_at(&job.buf.raw[job.buf.off..][..len], job.offset);
                    if done_tx.send((job.buf, r)).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Worker {
            jobs: Some(jobs),
            done: parking_lot::Mutex::new(done),
            thread: Some(thread),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Ends the thread's loop after the write in flight, if any.
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file opened with `O_DIRECT` for appending (see the module's invariants).
pub(crate) struct DirectWritableFile {
    file: Arc<File>,
    fill: AlignedBuf,
    /// File offset of `fill`'s first byte; a multiple of [`ALIGN`].
    base: u64,
    /// Logical length: every byte appended.
    len: u64,
    /// Chunks with the I/O thread, at most [`DEPTH`].
    in_flight: usize,
    /// Buffers back from the I/O thread, for the next fills.
    spares: Vec<AlignedBuf>,
    /// `None` when the thread could not be started: chunks are then written inline.
    worker: Option<Worker>,
    /// Why the file refuses everything, after a failed write.
    failed: Option<(io::ErrorKind, String)>,
}

impl DirectWritableFile {
    /// Wraps `file`, which must be empty and opened with `O_DIRECT` for writing.
    pub(crate) fn new(file: File) -> DirectWritableFile {
        let file = Arc::new(file);
        DirectWritableFile {
            worker: Worker::start(Arc::clone(&file)).ok(),
            file,
            fill: AlignedBuf::new(),
            base: 0,
            len: 0,
            in_flight: 0,
            spares: Vec::new(),
            failed: None,
        }
    }

    fn check(&self) -> io::Result<()> {
        match &self.failed {
            None => Ok(()),
            Some((kind, msg)) => Err(io::Error::new(
                *kind,
                format!("an earlier write to this file failed: {msg}"),
            )),
        }
    }

    /// Remembers a failed write so that every later call fails too, and returns it.
    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed = Some((e.kind(), e.to_string()));
        e
    }

    /// Takes back the buffer of the oldest chunk in flight, waiting for its write when
    /// `block`; without `block`, only if that write is done. Reports the write's error.
    fn collect(&mut self, block: bool) -> io::Result<()> {
        let Some(w) = self.worker.as_ref().filter(|_| self.in_flight > 0) else {
            return Ok(());
        };
        let got = {
            let done = w.done.lock();
            if block {
                done.recv().ok()
            } else {
                match done.try_recv() {
                    Ok(d) => Some(d),
                    Err(mpsc::TryRecvError::Empty) => return Ok(()),
                    Err(mpsc::TryRecvError::Disconnected) => None,
                }
            }
        };
        self.in_flight -= 1;
        match got {
            Some((buf, r)) => {
                self.spares.push(buf);
                r.map_err(|e| self.fail(e))
            }
            None => Err(self.fail(io::Error::other("the direct-I/O thread stopped"))),
        }
    }

    /// Waits until every chunk in flight is written.
    fn wait(&mut self) -> io::Result<()> {
        while self.in_flight > 0 {
            self.collect(true)?;
        }
        Ok(())
    }

    /// Hands the full `fill` to the I/O thread (or writes it here) and starts the next one.
    fn submit(&mut self) -> io::Result<()> {
        while self.in_flight >= DEPTH {
            self.collect(true)?;
        }
        self.collect(false)?;
        let next = self.spares.pop().unwrap_or_else(AlignedBuf::new);
        let mut buf = std::mem::replace(&mut self.fill, next);
        self.fill.len = 0;
        let offset = self.base;
        self.base += buf.len as u64;
        if let Some(jobs) = self.worker.as_ref().and_then(|w| w.jobs.as_ref()) {
            match jobs.send(Job { buf, offset }) {
                Ok(()) => {
                    self.in_flight += 1;
                    return Ok(());
                }
                Err(mpsc::SendError(job)) => buf = job.buf,
            }
        }
        let r = self
            .file
            .write_all_at(&buf.raw[buf.off..][..buf.len], offset);
        self.spares.push(buf);
        r.map_err(|e| self.fail(e))
    }
}

impl WritableFile for DirectWritableFile {
    fn append(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.check()?;
        while !data.is_empty() {
            let n = self.fill.room().min(data.len());
            self.fill.extend(&data[..n]);
            self.len += n as u64;
            data = &data[n..];
            if self.fill.room() == 0 {
                self.submit()?;
            }
        }
        Ok(())
    }

    /// Writes every appended byte: after it, a reader of the file sees them all.
    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.wait()?;
        if self.fill.len == 0 {
            return Ok(());
        }
        let r = self.file.write_all_at(self.fill.padded(), self.base);
        r.map_err(|e| self.fail(e))?;
        if !self.fill.len.is_multiple_of(ALIGN) {
            // The padding went past the logical end.
            self.file.set_len(self.len).map_err(|e| self.fail(e))?;
        }
        self.base += self.fill.keep_tail() as u64;
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.flush()?;
        self.file.sync_data().map_err(|e| self.fail(e))
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.flush()?;
        self.file.sync_all().map_err(|e| self.fail(e))
    }

    /// Full chunks are on their way to the disk already; the tail waits for `flush` (writing
    /// it here would cost a padded write and a truncation every interval).
    fn start_writeback(&mut self) -> io::Result<()> {
        self.check()
    }

    /// Nothing of the file is cached.
    fn drop_cache(&mut self, _end: u64) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Fs, PosixFs};

    /// A new direct file `t` in a fresh directory (kept alive by the returned guard).
    fn direct_file() -> (tempfile::TempDir, std::path::PathBuf, Box<dyn WritableFile>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let f = PosixFs::new().create_direct(&path).unwrap();
        (dir, path, f)
    }

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    /// Appends of every size around the block and chunk sizes, flushes and syncs between them:
    /// the file always reads back as exactly what was appended.
    #[test]
    fn reads_back_exactly_what_was_appended_across_flushes() {
        let (_dir, path, mut f) = direct_file();
        let mut want = Vec::new();
        let sizes = [
            1,
            ALIGN - 1,
            ALIGN,
            ALIGN + 1,
            3 * CHUNK + 17,
            CHUNK - ALIGN,
            5000,
            CHUNK,
            0,
            123,
        ];
        for (i, &n) in sizes.iter().enumerate() {
            let d = pattern(n, i as u8);
            f.append(&d).unwrap();
            want.extend_from_slice(&d);
            assert_eq!(f.len(), want.len() as u64);
            match i % 3 {
                0 => f.flush().unwrap(),
                1 => f.sync_data().unwrap(),
                _ => {}
            }
            if i % 3 != 2 {
                assert_eq!(std::fs::read(&path).unwrap(), want, "after append {i}");
            }
        }
        f.sync_all().unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    /// Chunks written on the I/O thread and the tail written at sync land in order.
    #[test]
    fn a_large_file_written_in_small_appends_is_whole() {
        let (_dir, path, mut f) = direct_file();
        let data = pattern(5 * CHUNK + 999, 7);
        for piece in data.chunks(4093) {
            f.append(piece).unwrap();
        }
        f.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
    }

    /// Dropped unsynced, the file holds at most what was appended, never a panic or a hang.
    #[test]
    fn dropping_with_a_chunk_in_flight_is_clean() {
        let (_dir, path, mut f) = direct_file();
        f.append(&pattern(2 * CHUNK + 5, 1)).unwrap();
        drop(f);
        assert!(std::fs::metadata(&path).unwrap().len() <= (2 * CHUNK + 5) as u64);
    }

    /// A failed write poisons the file: later calls fail, naming the first error.
    #[test]
    fn a_failed_write_makes_every_later_call_fail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, b"").unwrap();
        // Read-only descriptor: every write fails with EBADF.
        let file = std::fs::File::open(&path).unwrap();
        let mut f = DirectWritableFile::new(file);
        let first = f.append(&pattern(CHUNK, 0)).and_then(|()| f.flush());
        let first = first.expect_err("write to a read-only descriptor");
        let later = f.append(b"x").expect_err("poisoned");
        assert!(later.to_string().contains("earlier write"), "{later}");
        assert_eq!(later.kind(), first.kind());
        assert!(f.sync_data().is_err());
    }
}
