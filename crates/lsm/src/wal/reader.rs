//! Reading a segment's records back, and telling a torn tail from corruption (the rule is in
//! [`crate::wal`]).

use std::path::Path;

use rialto_engine::{Error, Result};
use rialto_io::Fs;

use super::{
    record_crc, segment_file_name, segment_path, HEADER_LEN, KIND_BATCH, KIND_EDIT,
    KIND_MARKED_BATCH,
};
use crate::sstable::coding::take_varint64;

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
pub(super) fn data_end(data: &[u8]) -> usize {
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
