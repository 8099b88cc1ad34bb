//! The write-ahead log: segment files of CRC32C-framed records.
//!
//! ```text
//! segment file NNNNNN.log := record*
//! record := crc: u32 LE | len: u32 LE | kind: u8 | payload (len bytes)
//! crc    := masked crc32c(segment_number: u64 LE | len: u32 LE | kind: u8 | payload)
//! kind   := 1 (a write batch) | 2 (a version edit, manifest only)
//! write batch payload := first_sequence: varint64 | count: varint32 | op*
//!                        (ops as in rialto_engine::WriteBatch; op i has sequence first + i)
//! ```
//!
//! A record is addressed by `(segment number, byte offset of its header)`, so an index over a
//! segment can later serve the segment as a level-0 table (TRIAD's commit-log-as-L0).
//!
//! The segment number inside the checksum makes a record copied or left over from another
//! segment fail its check. Records are never split: a segment ends where its last record ends.
//!
//! Segments are preallocated (`Options::wal_preallocate`) so that appends do not change the
//! file size (see design §3.1 for what an `fdatasync` still commits); the unused rest reads
//! as zeros. An all-zero remainder is the end of the segment, not damage.
//!
//! ## Torn tails versus corruption
//! A crash can leave the newest segment ending in a partial or garbled record: bytes of a write
//! that was never acknowledged as durable. Such a *torn tail* is truncated at recovery. A bad
//! record that is followed by a valid record, or a bad record in an older segment (older
//! segments are synced before the log moves on), is *corruption*: acknowledged data may be
//! missing, so the open fails unless the caller asked to salvage.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rialto_engine::{Error, Result, WriteBatch};
use rialto_io::{FileSyncer, Fs, WritableFile};

use crate::sstable::coding::{encode_varint64, take_varint64};
use crate::sstable::format::mask_crc;

/// Header bytes before a record's payload.
pub const HEADER_LEN: usize = 9;
/// Kind byte of a write-batch record.
pub const KIND_BATCH: u8 = 1;
/// Kind byte of a version-edit record (the manifest uses the same framing).
pub const KIND_EDIT: u8 = 2;
/// Largest payload of one record. Batches are bounded well below this by key/value limits and
/// the commit path's group size.
pub const MAX_RECORD_LEN: usize = u32::MAX as usize;

fn record_crc(segment: u64, len: u32, kind: u8, parts: &[&[u8]]) -> u32 {
    let mut head = [0u8; 13];
    head[..8].copy_from_slice(&segment.to_le_bytes());
    head[8..12].copy_from_slice(&len.to_le_bytes());
    head[12] = kind;
    let crc = parts
        .iter()
        .fold(crc32c::crc32c(&head), |c, p| crc32c::crc32c_append(c, p));
    mask_crc(crc)
}

/// Longest write-batch prefix: a varint64 sequence and a varint32 count.
pub const MAX_BATCH_PREFIX_LEN: usize = 15;

/// Encodes a write batch's WAL payload prefix (its ops follow): the first sequence and the
/// count as varints, 5 bytes for most records instead of a fixed 12. Returns the buffer and
/// the length used; it lives on the stack because every group commit writes one.
pub fn batch_prefix(first_sequence: u64, count: u32) -> ([u8; MAX_BATCH_PREFIX_LEN], usize) {
    let mut buf = [0u8; MAX_BATCH_PREFIX_LEN];
    let n = encode_varint64(&mut buf, first_sequence);
    let m = encode_varint64(&mut buf[n..], u64::from(count));
    (buf, n + m)
}

/// Parses a write-batch payload: `(first sequence, batch)`.
pub fn decode_batch(mut payload: &[u8]) -> std::result::Result<(u64, WriteBatch), String> {
    let seq = take_varint64(&mut payload).ok_or("bad first sequence")?;
    let count = take_varint64(&mut payload)
        .and_then(|c| u32::try_from(c).ok())
        .ok_or("bad operation count")?;
    Ok((seq, WriteBatch::from_ops(count, payload)?))
}

/// File name of WAL segment `number`.
pub fn segment_file_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// Syncs one segment, from any thread, one sync at a time.
///
/// Syncs are serialized and a failure poisons the segment: after a write-back error Linux
/// reports it to one sync only, so a second, concurrent or later, sync could return `Ok` for
/// data that never reached the disk. Every later sync therefore fails too (fsyncgate).
pub struct SegmentSyncer {
    file: Arc<dyn FileSyncer>,
    name: String,
    /// The first failure, if any; held while syncing.
    failed: Mutex<Option<String>>,
    /// Successful syncs (they decide whether the next segment is prepared ahead).
    syncs: AtomicU64,
}

impl SegmentSyncer {
    /// `fdatasync`s every record handed to the operating system before the call.
    pub fn sync(&self) -> Result<()> {
        let mut failed = self.failed.lock();
        if let Some(reason) = failed.as_ref() {
            return Err(Error::ReadOnly(format!(
                "an earlier sync of WAL {} failed: {reason}",
                self.name
            )));
        }
        self.file.sync_data().map_err(|e| {
            *failed = Some(e.to_string());
            Error::io(format!("sync WAL {}", self.name), e)
        })?;
        self.syncs.fetch_add(1, Ordering::Relaxed);
        // Durable, not yet acknowledged.
        rialto_killpoint::kill_point("wal.sync");
        Ok(())
    }
}

/// Appends records to one segment.
pub struct WalWriter {
    file: Box<dyn WritableFile>,
    syncer: Arc<SegmentSyncer>,
    number: u64,
    name: String,
    offset: u64,
    /// The first failed append: the file may end in part of a record, and anything appended
    /// behind it would turn that torn tail into corruption in the middle of the segment, so
    /// every later append fails.
    failed: Option<String>,
    /// Bytes of records added buffered since the last hand-off to the OS.
    buffered: u64,
}

impl WalWriter {
    /// Creates segment `number` in `dir`. The caller syncs the directory before relying on it.
    pub fn create(fs: &dyn Fs, dir: &Path, number: u64) -> Result<WalWriter> {
        Self::create_named(fs, dir, segment_file_name(number), number)
    }

    /// Creates a file of this framing under another name (the manifest); `number` is the
    /// number the checksums bind the records to.
    pub fn create_named(fs: &dyn Fs, dir: &Path, name: String, number: u64) -> Result<WalWriter> {
        let file = fs
            .create(&dir.join(&name))
            .map_err(|e| Error::io(format!("create WAL {name}"), e))?;
        Self::with_file(file, name, number)
    }

    /// Opens segment `number`, an existing file of zeros (a prepared segment, see
    /// `wal_prepare`), to write records over it from its first byte.
    pub fn overwrite(fs: &dyn Fs, dir: &Path, number: u64) -> Result<WalWriter> {
        let name = segment_file_name(number);
        let file = fs
            .open_overwrite(&dir.join(&name))
            .map_err(|e| Error::io(format!("open prepared WAL {name}"), e))?;
        Self::with_file(file, name, number)
    }

    fn with_file(file: Box<dyn WritableFile>, name: String, number: u64) -> Result<WalWriter> {
        let syncer = Arc::new(SegmentSyncer {
            file: file
                .syncer()
                .map_err(|e| Error::io(format!("open a sync handle on WAL {name}"), e))?,
            name: name.clone(),
            failed: Mutex::new(None),
            syncs: AtomicU64::new(0),
        });
        Ok(WalWriter {
            file,
            syncer,
            number,
            name,
            offset: 0,
            failed: None,
            buffered: 0,
        })
    }

    /// Segment number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far (the offset of the next record).
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// True when no record was written.
    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }

    /// Successful syncs of this segment so far.
    pub fn syncs(&self) -> u64 {
        self.syncer.syncs.load(Ordering::Relaxed)
    }

    /// Appends a record and hands it to the operating system; returns its offset.
    /// Not durable until [`WalWriter::sync`].
    pub fn add_record(&mut self, kind: u8, payload: &[u8]) -> Result<u64> {
        self.add_record_parts(kind, &[payload])
    }

    /// [`WalWriter::add_record`] with the payload given in pieces (written back to back), so
    /// callers need not copy them into one buffer.
    pub fn add_record_parts(&mut self, kind: u8, parts: &[&[u8]]) -> Result<u64> {
        self.add(kind, parts, true)
    }

    /// [`WalWriter::add_record_parts`], but the record may stay in the process's buffer until
    /// the next [`WalWriter::flush`], [`WalWriter::sync`] or unbuffered add: for writes that
    /// nobody is told about before the next sync, so a process crash can only lose what was
    /// never acknowledged. Saves a `write(2)` per record where many records share one sync.
    pub fn add_record_parts_buffered(&mut self, kind: u8, parts: &[&[u8]]) -> Result<u64> {
        self.add(kind, parts, false)
    }

    fn add(&mut self, kind: u8, parts: &[&[u8]], hand_off: bool) -> Result<u64> {
        self.check_not_failed()?;
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let len = u32::try_from(total).map_err(|_| {
            Error::InvalidArgument(format!(
                "WAL record of {total} bytes exceeds {MAX_RECORD_LEN} bytes"
            ))
        })?;
        let mut header = [0u8; HEADER_LEN];
        header[..4].copy_from_slice(&record_crc(self.number, len, kind, parts).to_le_bytes());
        header[4..8].copy_from_slice(&len.to_le_bytes());
        header[8] = kind;
        let at = self.offset;
        let written = self.append_all(&header, parts, hand_off);
        if let Err(e) = written {
            self.failed = Some(e.to_string());
            return Err(Error::io(format!("append to WAL {}", self.name), e));
        }
        self.offset += (HEADER_LEN + total) as u64;
        self.buffered = if hand_off {
            0
        } else {
            self.buffered + (HEADER_LEN + total) as u64
        };
        // Handed to the OS (or buffered), not synced.
        rialto_killpoint::kill_point("wal.append");
        Ok(at)
    }

    /// Refuses to add or hand over anything after a failed append or hand-off.
    fn check_not_failed(&self) -> Result<()> {
        match &self.failed {
            Some(reason) => Err(Error::ReadOnly(format!(
                "an earlier append to WAL {} failed: {reason}",
                self.name
            ))),
            None => Ok(()),
        }
    }

    fn append_all(
        &mut self,
        header: &[u8],
        parts: &[&[u8]],
        hand_off: bool,
    ) -> std::io::Result<()> {
        self.file.append(header)?;
        for p in parts {
            self.file.append(p)?;
        }
        if hand_off {
            self.file.flush()?;
        }
        Ok(())
    }

    /// Hands every buffered record to the operating system; returns the bytes of the records
    /// added buffered since the last hand-off. A failure fails the segment: no later add or
    /// flush is trusted, since part of the buffer may have been written.
    pub fn flush(&mut self) -> Result<u64> {
        self.check_not_failed()?;
        self.file.flush().map_err(|e| {
            self.failed = Some(e.to_string());
            Error::io(format!("write WAL {}", self.name), e)
        })?;
        Ok(std::mem::take(&mut self.buffered))
    }

    /// Bytes of records added buffered and not yet handed to the OS: an unbuffered add or
    /// [`WalWriter::flush`] hands them over.
    pub fn buffered_bytes(&self) -> u64 {
        self.buffered
    }

    /// Reserves `bytes` for the segment (see `WritableFile::preallocate`): appends within
    /// them make `fdatasync` cheaper. The reserved space reads as zeros, which readers take as
    /// the end of the segment. Best effort.
    pub fn preallocate(&mut self, bytes: u64) {
        if let Err(e) = self.file.preallocate(bytes) {
            tracing::warn!(file = %self.name, error = %e, "WAL preallocation failed; continuing without");
        }
    }

    /// Makes every record added so far durable: hands buffered ones to the operating system,
    /// then the segment's [`SegmentSyncer::sync`] (fdatasync). After a failed append nothing
    /// more is handed over, but what reached the operating system can still be synced.
    pub fn sync(&mut self) -> Result<()> {
        if self.failed.is_none() {
            self.flush()?;
        }
        self.syncer.sync()
    }

    /// The segment's syncer, for syncing while another thread appends.
    pub fn syncer(&self) -> Arc<SegmentSyncer> {
        Arc::clone(&self.syncer)
    }
}

/// How reading a segment ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentEnd {
    /// Every byte belonged to a valid record.
    Clean,
    /// From `offset` on, the bytes are a partial or garbled record with nothing valid after it.
    TornTail {
        /// Offset of the first byte that is not part of a valid record.
        offset: u64,
    },
    /// A bad record at `offset` is followed by valid data: the log is damaged in its middle.
    Corrupt {
        /// Offset of the bad record.
        offset: u64,
        /// What check failed.
        reason: String,
    },
}

/// Reads the records of segment `number` at `path` in order, calling `f(offset, kind, payload)`
/// for each valid one, and reports how the segment ended. Stops at the first bad record.
pub fn read_segment(
    fs: &dyn Fs,
    path: &Path,
    number: u64,
    mut f: impl FnMut(u64, u8, &[u8]) -> Result<()>,
) -> Result<SegmentEnd> {
    let name = file_name(path);
    let data = fs
        .read_all(path)
        .map_err(|e| Error::io(format!("read WAL {name}"), e))?;
    // Preallocated space after the last record reads as zeros. No valid record is all zeros
    // (kind 0 does not exist), so nothing at or after the last non-zero byte's header can be
    // one, and a segment whose remaining bytes are all zero simply ends there.
    let end = data_end(&data);
    let mut pos = 0usize;
    while pos < end {
        match parse_record(&data, pos, number) {
            Ok((kind, payload)) => {
                f(pos as u64, kind, payload)?;
                pos += HEADER_LEN + payload.len();
            }
            Err(reason) => {
                return Ok(if valid_record_after(&data, pos + 1, end, number) {
                    SegmentEnd::Corrupt {
                        offset: pos as u64,
                        reason,
                    }
                } else {
                    SegmentEnd::TornTail { offset: pos as u64 }
                });
            }
        }
    }
    Ok(SegmentEnd::Clean)
}

/// The length of `data` without its trailing zeros. A preallocated segment ends in up to
/// 64 MiB of them: compared a page at a time (a `memcmp`), not byte by byte.
fn data_end(data: &[u8]) -> usize {
    const PAGE: usize = 4096;
    static ZEROS: [u8; PAGE] = [0; PAGE];
    let mut end = data.len();
    let tail = end % PAGE;
    if tail != 0 && data[end - tail..] == ZEROS[..tail] {
        end -= tail;
    }
    while end >= PAGE && data[end - PAGE..end] == ZEROS {
        end -= PAGE;
    }
    data[..end]
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |i| i + 1)
}

/// Reads the record at `offset` of a segment, verifying it (used for reading a WAL segment
/// by record address).
pub fn read_record_at(
    data: &[u8],
    offset: u64,
    number: u64,
) -> std::result::Result<(u8, &[u8]), String> {
    let pos = usize::try_from(offset).map_err(|_| "offset out of range".to_string())?;
    parse_record(data, pos, number)
}

fn parse_record(data: &[u8], pos: usize, number: u64) -> std::result::Result<(u8, &[u8]), String> {
    // An offset past the end is an error, not a panic (`read_record_at` takes any offset).
    let rest = data
        .get(pos..)
        .ok_or_else(|| format!("offset {pos} is past the end ({} bytes)", data.len()))?;
    if rest.len() < HEADER_LEN {
        return Err(format!(
            "{} bytes left, shorter than a record header",
            rest.len()
        ));
    }
    let crc = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
    let len = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    let kind = rest[8];
    let body = &rest[HEADER_LEN..];
    if len as usize > body.len() {
        return Err(format!(
            "record claims {len} bytes, only {} remain",
            body.len()
        ));
    }
    let payload = &body[..len as usize];
    if record_crc(number, len, kind, &[payload]) != crc {
        return Err("checksum mismatch".to_string());
    }
    if kind != KIND_BATCH && kind != KIND_EDIT {
        return Err(format!("unknown record kind {kind}"));
    }
    Ok((kind, payload))
}

/// True if any offset in `from..end` starts a valid record of this segment. Records are
/// parsed against all of `data`: a valid record may end in zero bytes past `end` (found by the
/// `wal_reader` fuzz target; cutting at `end` took such corruption for a torn tail). The
/// checksum covers the segment number, so garbage and stale bytes do not pass by accident.
fn valid_record_after(data: &[u8], from: usize, end: usize, number: u64) -> bool {
    (from..end).any(|p| parse_record(data, p, number).is_ok())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Path of segment `number` in `dir`.
pub fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(segment_file_name(number))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_io::{Fault, FaultOp, FaultPlan, MemFs};

    fn write(fs: &MemFs, records: &[&[u8]]) -> Vec<u64> {
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(fs, Path::new("/db"), 7).unwrap();
        let offs = records
            .iter()
            .map(|r| w.add_record(KIND_BATCH, r).unwrap())
            .collect();
        w.sync().unwrap();
        offs
    }

    fn read(fs: &MemFs) -> (Vec<(u64, Vec<u8>)>, SegmentEnd) {
        let mut out = Vec::new();
        let end = read_segment(fs, &segment_path(Path::new("/db"), 7), 7, |o, _, p| {
            out.push((o, p.to_vec()));
            Ok(())
        })
        .unwrap();
        (out, end)
    }

    #[test]
    fn round_trip_with_offsets() {
        let fs = MemFs::new();
        let offs = write(&fs, &[b"one", b"", b"three33"]);
        assert_eq!(offs, vec![0, 12, 21]);
        let (recs, end) = read(&fs);
        assert_eq!(end, SegmentEnd::Clean);
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2], (21, b"three33".to_vec()));
    }

    #[test]
    fn truncated_tail_is_torn() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two", b"three"]);
        let p = segment_path(Path::new("/db"), 7);
        let len = fs.file_size(&p).unwrap();
        fs.truncate(&p, len - 2).unwrap();
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 2);
        assert_eq!(end, SegmentEnd::TornTail { offset: 24 });
    }

    #[test]
    fn damage_before_a_valid_record_is_corruption() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two", b"three"]);
        let p = segment_path(Path::new("/db"), 7);
        fs.corrupt(&p, 13, 0x40).unwrap();
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 1);
        assert!(
            matches!(end, SegmentEnd::Corrupt { offset: 12, .. }),
            "{end:?}"
        );
    }

    #[test]
    fn garbled_last_record_is_torn() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two", b"three"]);
        let p = segment_path(Path::new("/db"), 7);
        fs.corrupt(&p, 26, 0x01).unwrap();
        let (_, end) = read(&fs);
        assert_eq!(end, SegmentEnd::TornTail { offset: 24 });
    }

    #[test]
    fn batch_payload_round_trip() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.delete(b"gone");
        let (prefix, n) = batch_prefix(1 << 40, b.count());
        assert_eq!(n, 7);
        let mut payload = prefix[..n].to_vec();
        payload.extend_from_slice(b.ops_data());
        let (seq, d) = decode_batch(&payload).unwrap();
        assert_eq!(seq, 1 << 40);
        assert_eq!(d.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        assert!(decode_batch(&payload[..payload.len() - 1]).is_err());
        assert!(decode_batch(&[0x80]).is_err());
    }

    fn append_raw(fs: &MemFs, bytes: &[u8]) {
        let p = segment_path(Path::new("/db"), 7);
        let mut w = fs.open_append(&p).unwrap();
        w.append(bytes).unwrap();
        w.sync_data().unwrap();
    }

    #[test]
    fn zeros_after_the_last_record_are_a_clean_end() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two"]);
        append_raw(&fs, &[0u8; 10_000]);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 2);
        assert_eq!(end, SegmentEnd::Clean);
    }

    #[test]
    fn torn_record_before_zeros_is_a_torn_tail() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two"]);
        append_raw(&fs, &[9, 9, 9, 9, 200, 0, 0, 0, 1, 7, 7]);
        append_raw(&fs, &[0u8; 5000]);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 2);
        assert_eq!(end, SegmentEnd::TornTail { offset: 24 });
    }

    #[test]
    fn damage_followed_by_a_record_and_zeros_is_corruption() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two", b"three"]);
        append_raw(&fs, &[0u8; 5000]);
        fs.corrupt(segment_path(Path::new("/db"), 7), 13, 0x40)
            .unwrap();
        let (_, end) = read(&fs);
        assert!(
            matches!(end, SegmentEnd::Corrupt { offset: 12, .. }),
            "{end:?}"
        );
    }

    /// Regression (error countdown, `Write` EIO): a flush's hot-key re-log failed in the
    /// middle of a record, a writer that had checked the engine before the failure appended
    /// behind the torn bytes, and the next sync made the torn record corruption in the middle
    /// of a durable segment.
    #[test]
    fn an_append_after_a_failed_one_fails_and_the_torn_record_stays_last() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
        w.add_record(KIND_BATCH, b"one").unwrap();
        // The header of the next record goes out; its payload's append fails.
        fs.add_fault(FaultPlan::new(FaultOp::Write, 2, Fault::Eio));
        assert!(w.add_record(KIND_BATCH, b"two").is_err());
        let err = w.add_record(KIND_BATCH, b"three").unwrap_err();
        assert!(matches!(err, Error::ReadOnly(_)), "{err:?}");
        w.sync().unwrap();
        let (recs, end) = read(&fs);
        assert_eq!(recs, vec![(0, b"one".to_vec())]);
        assert_eq!(end, SegmentEnd::TornTail { offset: 12 });
    }

    #[test]
    fn buffered_records_reach_the_os_at_the_next_flush_or_sync_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let fs = rialto_io::PosixFs::new();
        let path = segment_path(dir.path(), 7);
        let on_disk = || std::fs::read(&path).unwrap();
        let mut w = WalWriter::create(&fs, dir.path(), 7).unwrap();
        w.add_record_parts_buffered(KIND_BATCH, &[b"one"]).unwrap();
        w.add_record_parts_buffered(KIND_BATCH, &[b"two"]).unwrap();
        assert!(on_disk().is_empty(), "still in the process");
        assert_eq!(w.flush().unwrap(), 2 * (HEADER_LEN + 3) as u64);
        assert_eq!(on_disk().len(), 2 * (HEADER_LEN + 3));
        assert_eq!(w.flush().unwrap(), 0, "nothing more buffered");
        w.add_record_parts_buffered(KIND_BATCH, &[b"three"])
            .unwrap();
        // An unbuffered add hands over what is buffered before it, too.
        w.add_record(KIND_BATCH, b"four").unwrap();
        w.add_record_parts_buffered(KIND_BATCH, &[b"five"]).unwrap();
        w.sync().unwrap();
        let mut recs = Vec::new();
        read_segment(&fs, &path, 7, |_, _, p| {
            recs.push(p.to_vec());
            Ok(())
        })
        .unwrap();
        let want: Vec<&[u8]> = vec![b"one", b"two", b"three", b"four", b"five"];
        assert_eq!(recs, want);
    }

    #[test]
    fn buffered_bytes_count_what_the_next_hand_off_carries() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
        w.add_record_parts_buffered(KIND_BATCH, &[b"one"]).unwrap();
        w.add_record_parts_buffered(KIND_BATCH, &[b"two"]).unwrap();
        assert_eq!(w.buffered_bytes(), 2 * (HEADER_LEN + 3) as u64);
        w.add_record(KIND_BATCH, b"three").unwrap();
        assert_eq!(w.buffered_bytes(), 0, "the unbuffered add handed them over");
        w.add_record_parts_buffered(KIND_BATCH, &[b"four"]).unwrap();
        assert_eq!(w.buffered_bytes(), (HEADER_LEN + 4) as u64);
        assert_eq!(w.flush().unwrap(), (HEADER_LEN + 4) as u64);
        assert_eq!(w.buffered_bytes(), 0);
    }

    #[test]
    fn a_failed_flush_fails_the_segment() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
        w.add_record(KIND_BATCH, b"one").unwrap();
        w.add_record_parts_buffered(KIND_BATCH, &[b"two"]).unwrap();
        // MemFs counts a flush as a write: fail it.
        fs.add_fault(FaultPlan::new(FaultOp::Write, 1, Fault::Eio));
        assert!(
            matches!(w.flush(), Err(Error::Io { .. })),
            "the flush fails"
        );
        let err = w.add_record(KIND_BATCH, b"three").unwrap_err();
        assert!(matches!(err, Error::ReadOnly(_)), "{err:?}");
        assert!(matches!(w.flush(), Err(Error::ReadOnly(_))));
    }

    #[test]
    fn data_end_drops_trailing_zeros_across_pages() {
        for len in [0usize, 1, 4095, 4096, 4097, 8192, 3 * 4096 + 17] {
            for last in [None, Some(0), Some(len / 2), len.checked_sub(1)] {
                let mut data = vec![0u8; len];
                let want = match last.filter(|&i| i < len) {
                    Some(i) => {
                        data[i] = 1;
                        i + 1
                    }
                    None => 0,
                };
                assert_eq!(data_end(&data), want, "len {len}, non-zero at {last:?}");
            }
        }
    }

    #[test]
    fn record_from_another_segment_fails() {
        let fs = MemFs::new();
        write(&fs, &[b"one"]);
        let data = fs.read_all(&segment_path(Path::new("/db"), 7)).unwrap();
        assert!(read_record_at(&data, 0, 7).is_ok());
        assert!(read_record_at(&data, 0, 8).is_err());
    }
}
