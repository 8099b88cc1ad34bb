//! The write-ahead log: segment files of CRC32C-framed records.
//!
//! ```text
//! segment file NNNNNN.log := record*
//! record := crc: u32 LE | len: u32 LE | kind: u8 | payload (len bytes)
//! crc    := masked crc32c(segment_number: u64 LE | len: u32 LE | kind: u8 | payload)
//! kind   := 1 (a write batch, without a durable mark: written by older versions)
//!         | 2 (a version edit, manifest only)
//!         | 3 (a write batch with its durable mark)
//! kind 3 payload := durable_back: varint64 | write batch payload
//!                   (the record's offset minus the bytes of the segment that were known
//!                   durable, synced, when it was written)
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
//! A power loss can leave the bytes that were never synced in any state: any subset of their
//! sectors on disk, in any order, so a write may persist with a hole in it and valid records
//! after the hole. Such a *torn tail* is cut at recovery: nothing in it was acknowledged as
//! durable, and cutting keeps what survives a prefix of the log. A bad record inside bytes
//! that were *proven* durable is *corruption*, and fails the open unless the caller asked to
//! salvage. The proof is the durable mark: a later valid record whose mark lies past the bad
//! record's offset was written after a sync covered it. Batches written before marks existed
//! (kind 1) and manifest edits (each synced before the next is appended) prove it by merely
//! following it. See design §5 for the cases.

pub mod prepare;

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
/// A write-batch record, as readers see it (written as [`KIND_MARKED_BATCH`]).
pub const KIND_BATCH: u8 = 1;
/// Kind byte of a version-edit record (the manifest uses the same framing).
pub const KIND_EDIT: u8 = 2;
/// Kind byte on disk of a write batch that carries its durable mark.
pub const KIND_MARKED_BATCH: u8 = 3;
/// Longest durable mark (a varint64).
pub const MAX_MARK_LEN: usize = 10;
/// Largest payload of one record. Batches are bounded well below this by key/value limits and
/// the commit path's group size.
pub const MAX_RECORD_LEN: usize = u32::MAX as usize;

/// The masked CRC of a record: over `segment | len | kind`, then `payload_head` (a durable
/// mark, or nothing) in the same call, then each of `parts` (the rest of the payload).
fn record_crc(segment: u64, len: u32, kind: u8, payload_head: &[u8], parts: &[&[u8]]) -> u32 {
    let mut head = [0u8; 13 + MAX_MARK_LEN];
    head[..8].copy_from_slice(&segment.to_le_bytes());
    head[8..12].copy_from_slice(&len.to_le_bytes());
    head[12] = kind;
    head[13..13 + payload_head.len()].copy_from_slice(payload_head);
    let crc = parts
        .iter()
        .fold(crc32c::crc32c(&head[..13 + payload_head.len()]), |c, p| {
            crc32c::crc32c_append(c, p)
        });
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
    /// Bytes of whole records handed to the operating system (set by the writer after each
    /// hand-off completes, so a sync that reads it covers at least that much).
    handed_off: AtomicU64,
    /// Bytes a successful sync covered: the durable mark the next records carry. Never more
    /// than what was really synced, so a mark never claims an unsynced byte.
    durable: AtomicU64,
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
        // Read before the sync: only bytes handed over before it began are sure to be covered.
        let covered = self.handed_off.load(Ordering::Acquire);
        self.file.sync_data().map_err(|e| {
            *failed = Some(e.to_string());
            Error::io(format!("sync WAL {}", self.name), e)
        })?;
        self.durable.fetch_max(covered, Ordering::AcqRel);
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
    /// `wal::prepare`), to write records over it from its first byte.
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
            handed_off: AtomicU64::new(0),
            durable: AtomicU64::new(0),
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
        let at = self.offset;
        // The header, then a batch's durable mark (see the module docs; an edit needs none),
        // appended as one piece.
        let mut head = [0u8; HEADER_LEN + MAX_MARK_LEN];
        let (kind, mark_len) = if kind == KIND_BATCH {
            let durable = self.syncer.durable.load(Ordering::Acquire);
            debug_assert!(durable <= at, "a sync covered bytes not yet written");
            let back = at.saturating_sub(durable);
            (
                KIND_MARKED_BATCH,
                encode_varint64(&mut head[HEADER_LEN..], back),
            )
        } else {
            (kind, 0)
        };
        let head_len = HEADER_LEN + mark_len;
        let total = mark_len + parts.iter().map(|p| p.len()).sum::<usize>();
        let len = u32::try_from(total).map_err(|_| {
            Error::InvalidArgument(format!(
                "WAL record of {total} bytes exceeds {MAX_RECORD_LEN} bytes"
            ))
        })?;
        let mark = &head[HEADER_LEN..head_len];
        let crc = record_crc(self.number, len, kind, mark, parts);
        head[..4].copy_from_slice(&crc.to_le_bytes());
        head[4..8].copy_from_slice(&len.to_le_bytes());
        head[8] = kind;
        let written = self.append_all(&head[..head_len], parts, hand_off);
        if let Err(e) = written {
            self.failed = Some(e.to_string());
            return Err(Error::io(format!("append to WAL {}", self.name), e));
        }
        self.offset += (HEADER_LEN + total) as u64;
        if hand_off {
            self.buffered = 0;
            self.syncer.handed_off.store(self.offset, Ordering::Release);
        } else {
            self.buffered += (HEADER_LEN + total) as u64;
        }
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
        self.syncer.handed_off.store(self.offset, Ordering::Release);
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

    /// Syncs, then appends and syncs an empty batch whose durable mark covers every record
    /// before it: a segment closed this way proves all its bytes durable, so damage found in
    /// it later is corruption, never a torn tail. For a clean close; nothing may follow it but
    /// records of a later open (there are none: recovery starts a new segment).
    pub fn seal(&mut self) -> Result<()> {
        self.sync()?;
        let (prefix, n) = batch_prefix(0, 0);
        self.add(KIND_BATCH, &[&prefix[..n]], true)?;
        self.sync()
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
    /// From `offset` on, the bytes are a partial or garbled record that nothing proves was
    /// ever durable: a write torn by a crash, to be cut.
    TornTail {
        /// Offset of the first byte that is not part of a valid record.
        offset: u64,
        /// What check the bad record failed.
        reason: String,
        /// Valid records found after it (written, never proven durable, cut with it).
        records_after: u64,
    },
    /// A bad record at `offset` lies in bytes proven durable: the log is damaged.
    Corrupt {
        /// Offset of the bad record.
        offset: u64,
        /// What check failed.
        reason: String,
    },
}

impl SegmentEnd {
    /// Where the valid records end: the segment's length in use.
    pub fn offset(&self) -> Option<u64> {
        match self {
            SegmentEnd::Clean => None,
            SegmentEnd::TornTail { offset, .. } | SegmentEnd::Corrupt { offset, .. } => {
                Some(*offset)
            }
        }
    }
}

/// One valid record of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Offset of the record's header: its address.
    pub offset: u64,
    /// [`KIND_BATCH`] (whether or not written with a mark) or [`KIND_EDIT`].
    pub kind: u8,
    /// The batch or edit, without the durable mark.
    pub payload: &'a [u8],
    /// Offset of the payload's first byte in the segment.
    pub payload_offset: u64,
    /// Bytes of the segment known durable when the record was written; `None` when the
    /// record has no mark (an edit, or a batch written before marks existed).
    pub durable: Option<u64>,
}

impl Record<'_> {
    /// Offset just past the record.
    pub fn end(&self) -> u64 {
        self.payload_offset + self.payload.len() as u64
    }

    /// True if this record proves that the byte at `offset` (before it) had been synced when
    /// it was written. A record without a mark proves it by following it: an edit is synced
    /// before the next one is appended, and records written before marks existed are held to
    /// the rule of that time.
    pub fn proves_durable(&self, offset: u64) -> bool {
        self.durable.is_none_or(|d| d > offset)
    }
}

/// Reads the records of segment `number` at `path` in order, calling `f` for each valid one,
/// and reports how the segment ended. Stops at the first bad record.
pub fn read_segment(
    fs: &dyn Fs,
    path: &Path,
    number: u64,
    mut f: impl FnMut(Record<'_>) -> Result<()>,
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
            Ok(record) => {
                pos = record.end() as usize;
                f(record)?;
            }
            Err(reason) => return Ok(judge_bad_record(&data, pos, end, number, reason)),
        }
    }
    Ok(SegmentEnd::Clean)
}

/// Decides whether the bad record at `bad` is a torn tail or corruption: corruption only if a
/// valid record after it proves it durable. Records are looked for at every offset in
/// `bad + 1..end` and parsed against all of `data` (a valid record may end in zero bytes past
/// `end`: found by the `wal_reader` fuzz target); a record found is skipped whole, so bytes
/// inside a valid record's payload are never taken for a record. The checksum covers the
/// segment number, so garbage and stale bytes do not pass by accident.
fn judge_bad_record(
    data: &[u8],
    bad: usize,
    end: usize,
    number: u64,
    reason: String,
) -> SegmentEnd {
    let mut records_after = 0;
    let mut p = bad + 1;
    while p < end {
        match parse_record(data, p, number) {
            Ok(r) if r.proves_durable(bad as u64) => {
                return SegmentEnd::Corrupt {
                    offset: bad as u64,
                    reason,
                };
            }
            Ok(r) => {
                records_after += 1;
                p = r.end() as usize;
            }
            Err(_) => p += 1,
        }
    }
    SegmentEnd::TornTail {
        offset: bad as u64,
        reason,
        records_after,
    }
}

/// A torn tail of a segment becomes corruption if any of the `later` segments (of the same
/// directory, ascending) holds a valid record: the log moves on to a new segment only after a
/// sync covered every record of the old one (a memtable switch syncs it first; recovery
/// installs a new log number before anything is written to its new segment), so such a
/// record proves every byte of the earlier segments durable. Other ends are returned as given.
pub fn judge_against_later_segments(
    fs: &dyn Fs,
    dir: &Path,
    end: SegmentEnd,
    later: &[u64],
) -> Result<SegmentEnd> {
    let SegmentEnd::TornTail { offset, reason, .. } = &end else {
        return Ok(end);
    };
    for &number in later {
        let mut found = false;
        let tail = read_segment(fs, &segment_path(dir, number), number, |_| {
            found = true;
            Ok(())
        })?;
        if found
            || matches!(tail, SegmentEnd::TornTail { records_after, .. } if records_after > 0)
            || matches!(tail, SegmentEnd::Corrupt { .. })
        {
            return Ok(SegmentEnd::Corrupt {
                offset: *offset,
                reason: format!(
                    "{reason}, in bytes proven durable by the records of {}",
                    segment_file_name(number)
                ),
            });
        }
    }
    Ok(end)
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
) -> std::result::Result<Record<'_>, String> {
    let pos = usize::try_from(offset).map_err(|_| "offset out of range".to_string())?;
    parse_record(data, pos, number)
}

fn parse_record(data: &[u8], pos: usize, number: u64) -> std::result::Result<Record<'_>, String> {
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
    if !matches!(kind, KIND_BATCH | KIND_EDIT | KIND_MARKED_BATCH) {
        return Err(format!("unknown record kind {kind}"));
    }
    let body = &rest[HEADER_LEN..];
    if len as usize > body.len() {
        return Err(format!(
            "record claims {len} bytes, only {} remain",
            body.len()
        ));
    }
    let mut payload = &body[..len as usize];
    if record_crc(number, len, kind, &[], &[payload]) != crc {
        return Err("checksum mismatch".to_string());
    }
    let mut durable = None;
    if kind == KIND_MARKED_BATCH {
        let back = take_varint64(&mut payload).ok_or("bad durable mark")?;
        durable = Some(
            (pos as u64)
                .checked_sub(back)
                .ok_or_else(|| format!("durable mark {back} bytes before the segment's start"))?,
        );
    }
    let payload_offset = (pos + HEADER_LEN + len as usize - payload.len()) as u64;
    Ok(Record {
        offset: pos as u64,
        kind: if kind == KIND_EDIT {
            KIND_EDIT
        } else {
            KIND_BATCH
        },
        payload,
        payload_offset,
        durable,
    })
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

    /// Writes `records` to segment 7, each synced before the next (so each one's mark proves
    /// the ones before it durable); returns their offsets.
    fn write(fs: &MemFs, records: &[&[u8]]) -> Vec<u64> {
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(fs, Path::new("/db"), 7).unwrap();
        records
            .iter()
            .map(|r| {
                let at = w.add_record(KIND_BATCH, r).unwrap();
                w.sync().unwrap();
                at
            })
            .collect()
    }

    fn torn(offset: u64, records_after: u64) -> impl Fn(&SegmentEnd) -> bool {
        move |e| {
            matches!(e, SegmentEnd::TornTail { offset: o, records_after: n, .. }
                if *o == offset && *n == records_after)
        }
    }

    fn read(fs: &MemFs) -> (Vec<(u64, Vec<u8>)>, SegmentEnd) {
        let mut out = Vec::new();
        let end = read_segment(fs, &segment_path(Path::new("/db"), 7), 7, |r| {
            out.push((r.offset, r.payload.to_vec()));
            Ok(())
        })
        .unwrap();
        (out, end)
    }

    #[test]
    fn round_trip_with_offsets() {
        let fs = MemFs::new();
        let offs = write(&fs, &[b"one", b"", b"three33"]);
        // 9 header bytes, a 1-byte durable mark, the payload.
        assert_eq!(offs, vec![0, 13, 23]);
        let (recs, end) = read(&fs);
        assert_eq!(end, SegmentEnd::Clean);
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2], (23, b"three33".to_vec()));
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
        assert!(torn(26, 0)(&end), "{end:?}");
    }

    #[test]
    fn damage_before_a_valid_record_is_corruption() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two", b"three"]);
        let p = segment_path(Path::new("/db"), 7);
        fs.corrupt(&p, 14, 0x40).unwrap();
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 1);
        assert!(
            matches!(end, SegmentEnd::Corrupt { offset: 13, .. }),
            "{end:?}"
        );
    }

    #[test]
    fn garbled_last_record_is_torn() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two", b"three"]);
        let p = segment_path(Path::new("/db"), 7);
        fs.corrupt(&p, 29, 0x01).unwrap();
        let (_, end) = read(&fs);
        assert!(torn(26, 0)(&end), "{end:?}");
    }

    /// Zeros `range` of segment 7 (bytes a power loss never wrote), leaving the rest.
    fn zero(fs: &MemFs, range: std::ops::Range<u64>) {
        let p = segment_path(Path::new("/db"), 7);
        let data = fs.read_all(&p).unwrap();
        for i in range {
            let b = data[i as usize];
            if b != 0 {
                fs.corrupt(&p, i, b).unwrap();
            }
        }
    }

    /// A writer with `synced` records made durable, then `unsynced` ones handed to the OS in
    /// one write and never synced (the power-loss case); returns every record's offset.
    fn synced_then_unsynced(fs: &MemFs, synced: &[&[u8]], unsynced: &[&[u8]]) -> Vec<u64> {
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(fs, Path::new("/db"), 7).unwrap();
        let mut offs = Vec::new();
        for r in synced {
            offs.push(w.add_record(KIND_BATCH, r).unwrap());
            w.sync().unwrap();
        }
        for r in unsynced {
            offs.push(w.add_record_parts_buffered(KIND_BATCH, &[r]).unwrap());
        }
        w.flush().unwrap();
        offs
    }

    /// The shape that once kept a server down after a power loss: the last write (several
    /// records, never synced) reached the disk with a hole in its middle and a whole record
    /// after the hole. Nothing proves the hole durable: a torn tail, cut at the hole's record.
    #[test]
    fn a_hole_inside_the_last_unsynced_write_is_a_torn_tail() {
        let fs = MemFs::new();
        let offs = synced_then_unsynced(&fs, &[b"one", b"two"], &[b"three", &[7; 300], b"five"]);
        zero(&fs, offs[3] + 20..offs[3] + 120);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 3, "the records before the hole are kept");
        assert!(torn(offs[3], 1)(&end), "{end:?}");
    }

    /// Later pages of a write reached the disk, earlier ones did not.
    #[test]
    fn later_parts_of_an_unsynced_write_persisted_before_earlier_ones_are_a_torn_tail() {
        let fs = MemFs::new();
        let offs = synced_then_unsynced(&fs, &[b"one"], &[&[1; 100], &[2; 100], &[3; 100]]);
        zero(&fs, offs[1]..offs[2] + 50);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 1);
        assert!(torn(offs[1], 1)(&end), "{end:?}");
    }

    /// Async commit: a group is written while the sync of the one before is still running,
    /// so its mark does not yet cover that group; a crash before the sync returns may tear
    /// both. Neither mark proves the torn bytes durable.
    #[test]
    fn a_group_written_during_the_previous_groups_sync_proves_nothing_about_it() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
        w.add_record(KIND_BATCH, b"acknowledged").unwrap();
        w.sync().unwrap();
        let in_sync = w.add_record(KIND_BATCH, &[5; 200]).unwrap();
        // The sync covering `in_sync` has not returned when the next group is written.
        let next = w.add_record(KIND_BATCH, &[6; 200]).unwrap();
        drop(w);
        zero(&fs, in_sync + 50..in_sync + 60);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 1);
        assert!(torn(in_sync, 1)(&end), "{end:?}");
        assert!(next > in_sync);
    }

    /// A record written after a sync returned proves every byte that sync covered.
    #[test]
    fn a_hole_in_bytes_a_later_mark_covers_is_corruption() {
        let fs = MemFs::new();
        let offs = synced_then_unsynced(&fs, &[b"one", &[4; 300], b"three"], &[b"four"]);
        zero(&fs, offs[1] + 20..offs[1] + 120);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 1);
        assert!(
            matches!(end, SegmentEnd::Corrupt { offset, .. } if offset == offs[1]),
            "{end:?}"
        );
    }

    /// A prepared segment (written as zeros ahead of use): the unsynced records over it come
    /// back with holes of zeros, and zeros after them.
    #[test]
    fn a_torn_write_over_a_prepared_segment_is_a_torn_tail() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let p = segment_path(Path::new("/db"), 7);
        let mut f = fs.create(&p).unwrap();
        f.append(&[0; 8192]).unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        drop(f);
        let mut w = WalWriter::overwrite(&fs, Path::new("/db"), 7).unwrap();
        w.add_record(KIND_BATCH, b"durable").unwrap();
        w.sync().unwrap();
        let a = w.add_record(KIND_BATCH, &[8; 1000]).unwrap();
        w.add_record(KIND_BATCH, &[9; 1000]).unwrap();
        drop(w);
        fs.crash(rialto_io::CrashMode::KeepAll);
        zero(&fs, a + 4..a + 600);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 1);
        assert!(torn(a, 1)(&end), "{end:?}");
    }

    /// Records written before durable marks existed (kind 1) keep the rule of their time: a
    /// valid one after a bad one makes it corruption.
    #[test]
    fn unmarked_batches_after_a_bad_record_are_corruption() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut raw = Vec::new();
        for payload in [&b"one"[..], b"two", b"three"] {
            let len = payload.len() as u32;
            raw.extend_from_slice(&record_crc(7, len, KIND_BATCH, &[], &[payload]).to_le_bytes());
            raw.extend_from_slice(&len.to_le_bytes());
            raw.push(KIND_BATCH);
            raw.extend_from_slice(payload);
        }
        fs.create(&segment_path(Path::new("/db"), 7)).unwrap();
        append_raw(&fs, &raw);
        let (recs, end) = read(&fs);
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1], (12, b"two".to_vec()));
        assert_eq!(end, SegmentEnd::Clean);
        fs.corrupt(segment_path(Path::new("/db"), 7), 14, 1)
            .unwrap();
        let (_, end) = read(&fs);
        assert!(
            matches!(end, SegmentEnd::Corrupt { offset: 12, .. }),
            "{end:?}"
        );
    }

    /// Records written without syncs between them prove nothing about each other; the seal
    /// of a clean close proves them all.
    #[test]
    fn a_sealed_segment_reports_damage_anywhere_as_corruption() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
        for r in [&b"one"[..], b"two", b"three"] {
            w.add_record(KIND_BATCH, r).unwrap();
        }
        w.seal().unwrap();
        let (recs, end) = read(&fs);
        assert_eq!(end, SegmentEnd::Clean);
        assert_eq!(recs.len(), 4, "three records and the seal");
        assert_eq!(
            decode_batch(&recs[3].1).unwrap().1.count(),
            0,
            "the seal is empty"
        );
        fs.corrupt(segment_path(Path::new("/db"), 7), 15, 1)
            .unwrap();
        let (_, end) = read(&fs);
        assert!(
            matches!(end, SegmentEnd::Corrupt { offset: 13, .. }),
            "{end:?}"
        );
    }

    /// A mark counts only what a sync returned for: bytes handed over after a sync began, or
    /// still buffered, are not claimed.
    #[test]
    fn marks_claim_only_what_a_finished_sync_covered() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
        let mark_of = |fs: &MemFs, at: u64| {
            let data = fs.read_all(&segment_path(Path::new("/db"), 7)).unwrap();
            read_record_at(&data, at, 7).unwrap().durable
        };
        let a = w.add_record(KIND_BATCH, b"a").unwrap();
        let b = w.add_record_parts_buffered(KIND_BATCH, &[b"b"]).unwrap();
        w.syncer().sync().unwrap(); // covers `a` only: `b` is still in the process
        let c = w.add_record(KIND_BATCH, b"c").unwrap();
        w.sync().unwrap();
        let d = w.add_record(KIND_BATCH, b"d").unwrap();
        assert_eq!(mark_of(&fs, a), Some(0));
        assert_eq!(mark_of(&fs, b), Some(0));
        assert_eq!(mark_of(&fs, c), Some(b), "the first sync covered `a` alone");
        assert_eq!(mark_of(&fs, d), Some(d));
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
        assert!(torn(26, 0)(&end), "{end:?}");
    }

    #[test]
    fn damage_followed_by_a_record_and_zeros_is_corruption() {
        let fs = MemFs::new();
        write(&fs, &[b"one", b"two", b"three"]);
        append_raw(&fs, &[0u8; 5000]);
        fs.corrupt(segment_path(Path::new("/db"), 7), 14, 0x40)
            .unwrap();
        let (_, end) = read(&fs);
        assert!(
            matches!(end, SegmentEnd::Corrupt { offset: 13, .. }),
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
        assert!(torn(13, 0)(&end), "{end:?}");
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
        assert_eq!(w.flush().unwrap(), 2 * (HEADER_LEN + 4) as u64);
        assert_eq!(on_disk().len(), 2 * (HEADER_LEN + 4));
        assert_eq!(w.flush().unwrap(), 0, "nothing more buffered");
        w.add_record_parts_buffered(KIND_BATCH, &[b"three"])
            .unwrap();
        // An unbuffered add hands over what is buffered before it, too.
        w.add_record(KIND_BATCH, b"four").unwrap();
        w.add_record_parts_buffered(KIND_BATCH, &[b"five"]).unwrap();
        w.sync().unwrap();
        let mut recs = Vec::new();
        read_segment(&fs, &path, 7, |r| {
            recs.push(r.payload.to_vec());
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
        assert_eq!(w.buffered_bytes(), 2 * (HEADER_LEN + 4) as u64);
        w.add_record(KIND_BATCH, b"three").unwrap();
        assert_eq!(w.buffered_bytes(), 0, "the unbuffered add handed them over");
        w.add_record_parts_buffered(KIND_BATCH, &[b"four"]).unwrap();
        assert_eq!(w.buffered_bytes(), (HEADER_LEN + 5) as u64);
        assert_eq!(w.flush().unwrap(), (HEADER_LEN + 5) as u64);
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
        assert_eq!(read_record_at(&data, 0, 7).unwrap().durable, Some(0));
        assert!(read_record_at(&data, 0, 8).is_err());
    }
}
