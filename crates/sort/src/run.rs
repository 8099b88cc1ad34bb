//! Run files: writing sorted records in checksummed blocks and reading them back.
//!
//! ```text
//! run    := block*
//! block  := len: u32 LE | crc: u32 LE | payload[len]      (len > 0)
//! crc    := crc32c(len as 4 LE bytes ++ payload)            (plain, not masked)
//! payload:= record+
//! record := varint key_len | varint value_len | varint seq | key | value
//! ```
//!
//! Records never straddle blocks; a block is cut before a record that would take it past the
//! target size, and a record larger than the target gets a block of its own.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;

use rialto_io::{FsRef, RandomAccessFile, WritableFile};

use crate::buffer::key_prefix;
use crate::progress::Tally;
use crate::{Counters, SortError};

/// Bytes of a block header: payload length and checksum.
pub(crate) const HEADER_LEN: usize = 8;

/// Bytes of a block that [`RunReader::touch_ahead`] brings into the cache at once.
const TOUCH_SPAN: usize = 4096;

/// A reader frees the part of its run it has read (`Fs::punch_hole`) in spans of this many
/// bytes. Run files are read once, front to back; freed as they go, their pages are never
/// written back (many are still dirty when the merge reads them) and are not all released at
/// once when the runs are removed: that release took 1.1–1.5 s of a 5M × 1 KiB push's commit.
const DISCARD_SPAN: u64 = 8 << 20;
/// Freed ranges end at a multiple of this (whole pages).
const PAGE: u64 = 4096;

/// Largest encoding of a `u64` varint.
const MAX_VARINT_LEN: usize = 10;

#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a varint at `*pos`, advancing it; `None` when truncated or over 64 bits.
#[inline]
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

fn block_crc(len_le: &[u8], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(len_le), payload)
}

/// A temporary file that is removed when this guard is dropped (errors ignored: the file
/// may already be gone, and a drop has nobody to report to).
pub(crate) struct TempFile {
    fs: FsRef,
    path: PathBuf,
}

impl TempFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = self.fs.remove_file(&self.path);
    }
}

/// A complete run file and what was written to it.
pub(crate) struct Run {
    pub file: TempFile,
    pub len: u64,
    pub records: u64,
}

/// Writes one run file. The file is removed if the writer is dropped before
/// [`RunWriter::finish`].
pub(crate) struct RunWriter {
    // Declared before `guard`: the handle is closed before the file is removed.
    file: Box<dyn WritableFile>,
    guard: TempFile,
    /// The block being filled, starting with room for its header.
    block: Vec<u8>,
    block_size: usize,
    len: u64,
    records: u64,
    /// Records of the blocks written so far, and where they are counted.
    records_counted: u64,
    tally: Tally,
    counters: Arc<Counters>,
    cancel: Option<Arc<AtomicBool>>,
}

impl RunWriter {
    pub fn create(
        fs: &FsRef,
        path: PathBuf,
        block_size: usize,
        counters: Arc<Counters>,
        tally: Tally,
        cancel: Option<Arc<AtomicBool>>,
    ) -> Result<Self, SortError> {
        let file = fs.create(&path).map_err(|e| SortError::io(&path, e))?;
        let mut block = Vec::with_capacity(block_size + HEADER_LEN + 64);
        block.resize(HEADER_LEN, 0);
        Ok(RunWriter {
            file,
            guard: TempFile {
                fs: Arc::clone(fs),
                path,
            },
            block,
            block_size,
            len: 0,
            records: 0,
            records_counted: 0,
            tally,
            counters,
            cancel,
        })
    }

    #[inline]
    pub fn add(&mut self, key: &[u8], value: &[u8], seq: u64) -> Result<(), SortError> {
        let max_len = key.len() + value.len() + 3 * MAX_VARINT_LEN;
        if self.block.len() > HEADER_LEN && self.block.len() + max_len > self.block_size {
            self.write_block()?;
        }
        put_varint(&mut self.block, key.len() as u64);
        put_varint(&mut self.block, value.len() as u64);
        put_varint(&mut self.block, seq);
        self.block.extend_from_slice(key);
        self.block.extend_from_slice(value);
        self.records += 1;
        Ok(())
    }

    fn write_block(&mut self) -> Result<(), SortError> {
        if let Some(cancel) = &self.cancel {
            if cancel.load(Ordering::Relaxed) {
                return Err(SortError::io(
                    self.guard.path(),
                    io::Error::other("sort cancelled"),
                ));
            }
        }
        let payload_len = u32::try_from(self.block.len() - HEADER_LEN).map_err(|_| {
            SortError::io(
                self.guard.path(),
                io::Error::new(io::ErrorKind::InvalidInput, "record too large for a block"),
            )
        })?;
        let len_le = payload_len.to_le_bytes();
        let crc = block_crc(&len_le, &self.block[HEADER_LEN..]);
        self.block[..4].copy_from_slice(&len_le);
        self.block[4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        self.file
            .append(&self.block)
            .map_err(|e| SortError::io(self.guard.path(), e))?;
        let written = self.block.len() as u64;
        self.len += written;
        self.counters
            .bytes_spilled
            .fetch_add(written, Ordering::Relaxed);
        self.counters
            .finish
            .add(self.tally, self.records - self.records_counted);
        self.records_counted = self.records;
        if self.block.capacity() > 4 * (self.block_size + HEADER_LEN) {
            // A huge record passed through: give its memory back.
            self.block = Vec::with_capacity(self.block_size + HEADER_LEN + 64);
        }
        self.block.clear();
        self.block.resize(HEADER_LEN, 0);
        Ok(())
    }

    pub fn finish(mut self) -> Result<Run, SortError> {
        if self.block.len() > HEADER_LEN {
            self.write_block()?;
        }
        self.file
            .flush()
            .map_err(|e| SortError::io(self.guard.path(), e))?;
        let RunWriter {
            file,
            guard,
            len,
            records,
            ..
        } = self;
        drop(file);
        Ok(Run {
            file: guard,
            len,
            records,
        })
    }
}

/// Where a block is and what its header says, checked against the file length.
#[derive(Clone, Copy, Debug)]
struct BlockLoc {
    /// File offset of the header.
    off: u64,
    len: usize,
    crc: u32,
    /// Bytes of the next block's header read along with the payload: 8, or 0 for the last
    /// block.
    extra: usize,
}

impl BlockLoc {
    fn parse(
        path: &Path,
        file_len: u64,
        off: u64,
        header: [u8; HEADER_LEN],
    ) -> Result<Self, SortError> {
        let mut len_le = [0u8; 4];
        len_le.copy_from_slice(&header[..4]);
        let len = u32::from_le_bytes(len_le);
        let mut crc_le = [0u8; 4];
        crc_le.copy_from_slice(&header[4..]);
        let block_end = off + (HEADER_LEN as u64) + u64::from(len);
        if len == 0 || block_end > file_len {
            return Err(SortError::corrupt(
                path,
                off,
                format!("bad block length {len}"),
            ));
        }
        let extra = (file_len - block_end).min(HEADER_LEN as u64) as usize;
        if extra > 0 && extra < HEADER_LEN {
            return Err(SortError::corrupt(
                path,
                block_end,
                "trailing bytes after the last block",
            ));
        }
        Ok(BlockLoc {
            off,
            len: len as usize,
            crc: u32::from_le_bytes(crc_le),
            extra,
        })
    }

    fn end(&self) -> u64 {
        self.off + (HEADER_LEN + self.len) as u64
    }
}

fn read_at(
    file: &dyn RandomAccessFile,
    path: &Path,
    offset: u64,
    buf: &mut [u8],
) -> Result<(), SortError> {
    file.read_exact_at(offset, buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            SortError::corrupt(path, offset, "file ends inside a block")
        } else {
            SortError::io(path, e)
        }
    })
}

/// Reads the block at `loc` (its payload, then the next header if any) into `buf` and checks
/// its checksum.
fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    loc: &BlockLoc,
    buf: &mut Vec<u8>,
) -> Result<(), SortError> {
    let want = loc.len + loc.extra;
    if buf.capacity() > 4 * want && buf.capacity() > (4 << 20) {
        // A huge record passed through: give its memory back.
        *buf = Vec::new();
    }
    buf.clear();
    buf.resize(want, 0);
    read_at(file, path, loc.off + HEADER_LEN as u64, buf)?;
    let len_le = (loc.len as u32).to_le_bytes();
    if block_crc(&len_le, &buf[..loc.len]) != loc.crc {
        return Err(SortError::corrupt(path, loc.off, "block checksum mismatch"));
    }
    Ok(())
}

/// A range of a run file already read, to free.
struct Discard {
    fs: FsRef,
    from: u64,
    to: u64,
}

impl Discard {
    /// Frees the range. Only a hint: what it read is in memory, so a failure loses nothing.
    fn run(&self, path: &Path) {
        let _ = self.fs.punch_hole(path, self.from, self.to - self.from);
    }
}

/// A request to the read-ahead thread.
struct ReadRequest {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    loc: BlockLoc,
    buf: Vec<u8>,
    reply: SyncSender<BlockReply>,
    /// Freed after the read, off the merging thread.
    discard: Option<Discard>,
}

/// A block read by the read-ahead thread: the buffer, and whether it is sound.
type BlockReply = (Vec<u8>, Result<(), SortError>);

/// A thread that reads (and checksums) the next block of each run of a merge while the merge
/// works on the current ones, so that reads overlap merging, and disk latency too when the
/// runs are not in the page cache. Each reader has at most one request out; the thread serves
/// them in order and stops when every reader is gone.
#[derive(Clone)]
pub(crate) struct ReadAhead {
    tx: Sender<ReadRequest>,
}

impl ReadAhead {
    /// Starts the thread; `None` if it cannot be started (readers then read synchronously).
    pub fn start() -> Option<Self> {
        let (tx, rx) = mpsc::channel::<ReadRequest>();
        std::thread::Builder::new()
            .name("rialto-sort-read".into())
            .spawn(move || {
                for mut req in rx {
                    let result = read_block(&*req.file, &req.path, &req.loc, &mut req.buf);
                    if let Some(d) = &req.discard {
                        d.run(&req.path);
                    }
                    // The reader may be gone (dropped mid-merge): nothing to do then.
                    let _ = req.reply.send((req.buf, result));
                }
            })
            .ok()?;
        Some(ReadAhead { tx })
    }
}

/// Reads a run file record by record, holding the block being parsed and, with a
/// [`ReadAhead`], the next one being read.
pub(crate) struct RunReader {
    fs: FsRef,
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    /// Bytes before this offset were freed ([`DISCARD_SPAN`]).
    discarded: u64,
    /// Removes the file once read to the end (or when the reader is dropped).
    guard: Option<TempFile>,
    len: u64,
    records: u64,
    records_read: u64,
    /// The current block's payload, possibly followed by the next block's header.
    buf: Vec<u8>,
    /// The previous block's buffer, for the next read-ahead request.
    spare: Vec<u8>,
    payload_end: usize,
    /// Where the next record of the current block starts.
    pos: usize,
    /// Bytes of the block up to here were touched by [`RunReader::touch_ahead`].
    touched: usize,
    /// File offset of the current block's header.
    block_off: u64,
    /// File offset of the next block's header.
    next_off: u64,
    next_header: Option<[u8; HEADER_LEN]>,
    read_ahead: Option<ReadAhead>,
    /// The next block, requested from the read-ahead thread and not received yet, and where
    /// it will come. (A channel per request: if the thread dies, the request's sender goes
    /// with it and the receiver sees an error instead of waiting forever.)
    pending: Option<(BlockLoc, Receiver<BlockReply>)>,
    // The current record.
    done: bool,
    prefix: u64,
    seq: u64,
    key_start: usize,
    key_end: usize,
    value_end: usize,
}

impl RunReader {
    /// Opens `run` and reads its first record.
    pub fn open(fs: &FsRef, run: Run, read_ahead: Option<ReadAhead>) -> Result<Self, SortError> {
        let path: Arc<Path> = Arc::from(run.file.path());
        let file = fs.open_read(&path).map_err(|e| SortError::io(&path, e))?;
        if file.len() != run.len {
            return Err(SortError::corrupt(
                &path,
                file.len(),
                format!("run file is {} bytes, {} were written", file.len(), run.len),
            ));
        }
        let mut r = RunReader {
            fs: Arc::clone(fs),
            file,
            path,
            discarded: 0,
            guard: Some(run.file),
            len: run.len,
            records: run.records,
            records_read: 0,
            buf: Vec::new(),
            spare: Vec::new(),
            payload_end: 0,
            pos: 0,
            touched: 0,
            block_off: 0,
            next_off: 0,
            next_header: None,
            read_ahead,
            pending: None,
            done: false,
            prefix: 0,
            seq: 0,
            key_start: 0,
            key_end: 0,
            value_end: 0,
        };
        r.advance()?;
        Ok(r)
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    #[inline]
    pub fn prefix(&self) -> u64 {
        self.prefix
    }

    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq
    }

    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.buf[self.key_start..self.key_end]
    }

    #[inline]
    pub fn value(&self) -> &[u8] {
        &self.buf[self.key_end..self.value_end]
    }

    /// Moves to the next record (or to the end).
    pub fn advance(&mut self) -> Result<(), SortError> {
        loop {
            if self.done {
                return Ok(());
            }
            if self.pos < self.payload_end {
                return self.parse_record();
            }
            if self.next_off >= self.len {
                if self.records_read != self.records {
                    return Err(SortError::corrupt(
                        &self.path,
                        self.len,
                        format!(
                            "run holds {} records, {} were written",
                            self.records_read, self.records
                        ),
                    ));
                }
                self.done = true;
                self.buf = Vec::new();
                self.spare = Vec::new();
                self.pos = 0;
                self.payload_end = 0;
                self.guard = None;
                return Ok(());
            }
            self.load_block()?;
        }
    }

    fn load_block(&mut self) -> Result<(), SortError> {
        let loc = if let Some((loc, reply)) = self.pending.take() {
            let (buf, result) = reply.recv().map_err(|_| {
                SortError::io(
                    &self.path,
                    io::Error::other("the read-ahead thread stopped"),
                )
            })?;
            self.spare = std::mem::replace(&mut self.buf, buf);
            result?;
            loc
        } else {
            let off = self.next_off;
            let header = match self.next_header.take() {
                Some(h) => h,
                None => {
                    let mut h = [0u8; HEADER_LEN];
                    read_at(&*self.file, &self.path, off, &mut h)?;
                    h
                }
            };
            let loc = BlockLoc::parse(&self.path, self.len, off, header)?;
            read_block(&*self.file, &self.path, &loc, &mut self.buf)?;
            if let Some(d) = self.take_discard(loc.end()) {
                d.run(&self.path);
            }
            loc
        };
        self.next_header = (loc.extra == HEADER_LEN).then(|| {
            let mut h = [0u8; HEADER_LEN];
            h.copy_from_slice(&self.buf[loc.len..]);
            h
        });
        self.block_off = loc.off;
        self.next_off = loc.end();
        self.pos = 0;
        self.touched = 0;
        self.payload_end = loc.len;
        self.request_next();
        Ok(())
    }

    /// Reads one byte per cache line of the next [`TOUCH_SPAN`] bytes of the block. The
    /// block was filled by the read-ahead thread a while ago and is likely out of the cache,
    /// and a merge of many runs reads too many interleaved streams for the hardware
    /// prefetcher: these independent loads have the misses of a whole span in flight at once.
    #[cold]
    fn touch_ahead(&mut self) {
        let end = (self.pos + TOUCH_SPAN).min(self.payload_end);
        let mut acc = 0u8;
        for i in (self.pos..end).step_by(64) {
            acc ^= self.buf[i];
        }
        std::hint::black_box(acc);
        self.touched = end;
    }

    /// The range to free once every byte before `read_to` is in memory, if a whole span has
    /// gathered since the last one.
    fn take_discard(&mut self, read_to: u64) -> Option<Discard> {
        let to = read_to / PAGE * PAGE;
        if to < self.discarded + DISCARD_SPAN {
            return None;
        }
        let from = std::mem::replace(&mut self.discarded, to);
        Some(Discard {
            fs: Arc::clone(&self.fs),
            from,
            to,
        })
    }

    /// Asks the read-ahead thread for the next block, if there is one and its header is
    /// sound (a bad one is reported when the block is needed, by the synchronous path).
    fn request_next(&mut self) {
        let (true, Some(header)) = (self.read_ahead.is_some(), self.next_header) else {
            return;
        };
        let Ok(loc) = BlockLoc::parse(&self.path, self.len, self.next_off, header) else {
            return;
        };
        // Every byte before the requested block is in memory already.
        let discard = self.take_discard(loc.off);
        let Some(read_ahead) = &self.read_ahead else {
            return;
        };
        let (reply, reply_rx) = mpsc::sync_channel(1);
        let req = ReadRequest {
            file: Arc::clone(&self.file),
            path: Arc::clone(&self.path),
            loc,
            buf: std::mem::take(&mut self.spare),
            reply,
            discard,
        };
        match read_ahead.tx.send(req) {
            Ok(()) => {
                self.pending = Some((loc, reply_rx));
                self.next_header = None;
            }
            Err(mpsc::SendError(req)) => {
                // The thread is gone: read synchronously from now on.
                if let Some(d) = &req.discard {
                    d.run(&self.path);
                }
                self.spare = req.buf;
                self.read_ahead = None;
            }
        }
    }

    #[inline]
    fn parse_record(&mut self) -> Result<(), SortError> {
        if self.pos >= self.touched {
            self.touch_ahead();
        }
        let buf = &self.buf[..self.payload_end];
        let mut p = self.pos;
        let parsed = (|| {
            let klen = usize::try_from(get_varint(buf, &mut p)?).ok()?;
            let vlen = usize::try_from(get_varint(buf, &mut p)?).ok()?;
            let seq = get_varint(buf, &mut p)?;
            let key_end = p.checked_add(klen)?;
            let value_end = key_end.checked_add(vlen)?;
            (klen > 0 && value_end <= buf.len()).then_some((seq, key_end, value_end))
        })();
        let Some((seq, key_end, value_end)) = parsed else {
            return Err(SortError::corrupt(
                &self.path,
                self.block_off + (HEADER_LEN + self.pos) as u64,
                "unparsable record",
            ));
        };
        self.seq = seq;
        self.key_start = p;
        self.key_end = key_end;
        self.value_end = value_end;
        self.prefix = key_prefix(&buf[p..key_end]);
        self.pos = value_end;
        self.records_read += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_io::MemFs;

    #[test]
    fn varints_round_trip_and_reject_garbage() {
        let mut buf = Vec::new();
        let values = [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ];
        for v in values {
            put_varint(&mut buf, v);
        }
        let mut p = 0;
        for v in values {
            assert_eq!(get_varint(&buf, &mut p), Some(v));
        }
        assert_eq!(p, buf.len());
        assert_eq!(get_varint(&[0x80], &mut 0), None);
        assert_eq!(get_varint(&[0xff; 10], &mut 0), None);
        assert_eq!(get_varint(&[0xff; 11], &mut 0), None);
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(get_varint(&over, &mut 0), None);
    }

    type Expected = Vec<(Vec<u8>, Vec<u8>, u64)>;

    /// A run of 500 records, some larger than a block, in `/t/r`.
    fn write_run(fs: &FsRef, counters: Arc<Counters>) -> (Run, Expected) {
        fs.create_dir_all(Path::new("/t")).unwrap();
        let mut w =
            RunWriter::create(fs, "/t/r".into(), 4096, counters, Tally::Nothing, None).unwrap();
        let mut expect = Vec::new();
        for i in 0..500u64 {
            let key = format!("key{i:05}").into_bytes();
            let len = if i % 100 == 7 {
                20_000
            } else {
                (i % 50) as usize
            };
            let value = vec![i as u8; len];
            w.add(&key, &value, i).unwrap();
            expect.push((key, value, i));
        }
        (w.finish().unwrap(), expect)
    }

    fn read_all(r: &mut RunReader, expect: Expected) -> Result<(), SortError> {
        for (k, v, s) in expect {
            assert!(!r.is_done());
            assert_eq!((r.key(), r.value(), r.seq()), (&k[..], &v[..], s));
            assert_eq!(r.prefix(), key_prefix(&k));
            r.advance()?;
        }
        assert!(r.is_done());
        Ok(())
    }

    #[test]
    fn write_and_read_back_with_big_records() {
        for read_ahead in [false, true] {
            let mem = MemFs::new();
            let fs: FsRef = Arc::new(mem.clone());
            let counters = Arc::new(Counters::default());
            let (run, expect) = write_run(&fs, counters.clone());
            assert_eq!(run.records, 500);
            assert_eq!(mem.total_bytes(), run.len);
            assert_eq!(counters.bytes_spilled.load(Ordering::Relaxed), run.len);
            let ra = if read_ahead { ReadAhead::start() } else { None };
            let mut r = RunReader::open(&fs, run, ra).unwrap();
            read_all(&mut r, expect).unwrap();
            // Read to the end: the file is gone.
            assert!(mem.file_names("/t").is_empty());
        }
    }

    /// A reader frees what it has read, span by span, and never a byte it has not: MemFs
    /// zeros a punched range, so freeing too early would fail a checksum or a record.
    #[test]
    fn a_reader_frees_the_run_behind_it_and_nothing_ahead() {
        for read_ahead in [false, true] {
            let mem = MemFs::new();
            let fs: FsRef = Arc::new(mem.clone());
            fs.create_dir_all(Path::new("/t")).unwrap();
            let mut w = RunWriter::create(
                &fs,
                "/t/r".into(),
                4096,
                Arc::default(),
                Tally::Nothing,
                None,
            )
            .unwrap();
            let mut expect = Vec::new();
            // About 3.5 spans, values of every length up to ~3 blocks.
            let mut i = 0u64;
            while (expect.len() as u64) < 3 || w.len < DISCARD_SPAN * 7 / 2 {
                let key = format!("key{i:08}").into_bytes();
                let value = vec![(i % 251) as u8 + 1; (i * 7919 % 12_000) as usize];
                w.add(&key, &value, i).unwrap();
                expect.push((key, value, i));
                i += 1;
            }
            let run = w.finish().unwrap();
            let len = run.len as usize;
            let ra = if read_ahead { ReadAhead::start() } else { None };
            let mut r = RunReader::open(&fs, run, ra).unwrap();
            let half = expect.len() / 2;
            let rest = expect.split_off(half);
            for (k, v, s) in expect {
                assert_eq!((r.key(), r.value(), r.seq()), (&k[..], &v[..], s));
                r.advance().unwrap();
            }
            // Past the first span: its bytes are freed (zeros); the second half is intact.
            let bytes = fs.read_all(Path::new("/t/r")).unwrap();
            assert_eq!(bytes.len(), len, "punching keeps the size");
            assert!(bytes[..DISCARD_SPAN as usize].iter().all(|&b| b == 0));
            assert!(bytes[len - 4096..].iter().any(|&b| b != 0));
            read_all(&mut r, rest).unwrap();
            assert!(mem.file_names("/t").is_empty());
        }
    }

    #[test]
    fn read_ahead_thread_gone_before_or_during_a_read() {
        // Gone before: the reader falls back to reading synchronously.
        let fs: FsRef = Arc::new(MemFs::new());
        let (run, expect) = write_run(&fs, Arc::default());
        let (tx, rx) = mpsc::channel();
        drop(rx);
        let mut r = RunReader::open(&fs, run, Some(ReadAhead { tx })).unwrap();
        read_all(&mut r, expect).unwrap();

        // Gone with a request pending (its reply sender dropped): an error, not a hang.
        let (run, expect) = write_run(&fs, Arc::default());
        let (tx, rx) = mpsc::channel::<ReadRequest>();
        let dies = std::thread::spawn(move || drop(rx.recv()));
        let mut r = RunReader::open(&fs, run, Some(ReadAhead { tx })).unwrap();
        dies.join().unwrap();
        let err = read_all(&mut r, expect).unwrap_err();
        assert!(
            err.to_string().contains("read-ahead thread stopped"),
            "{err}"
        );
    }

    #[test]
    fn dropped_writer_removes_its_file() {
        let mem = MemFs::new();
        let fs: FsRef = Arc::new(mem.clone());
        fs.create_dir_all(Path::new("/t")).unwrap();
        let mut w = RunWriter::create(
            &fs,
            "/t/r".into(),
            4096,
            Arc::default(),
            Tally::Nothing,
            None,
        )
        .unwrap();
        w.add(b"k", b"v", 0).unwrap();
        assert_eq!(mem.file_names("/t").len(), 1);
        drop(w);
        assert!(mem.file_names("/t").is_empty());
    }
}
