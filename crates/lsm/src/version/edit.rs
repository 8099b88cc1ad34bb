//! Version edits: the records of the manifest.
//!
//! ```text
//! edit  := field*
//! field := tag: varint32 | body
//!   1 log_number      varint64   WAL segments below this hold nothing that is not in tables
//!   2 next_file_number varint64  no file number below this will be handed out again
//!   3 last_sequence   varint64   every sequence number up to this is used
//!   4 deleted_file    level: varint32 | number: varint64
//!   5 new_file        level: varint32 | number: varint64 | file_size: varint64
//!                     | smallest: bytes | largest: bytes | smallest_seq: varint64
//!                     | largest_seq: varint64 | num_entries: varint64 | num_deletions: varint64
//!                     | raw_bytes: varint64
//!   6 compact_pointer level: varint32 | key: bytes
//!   7 new_cl_file     new_file's body | cl_segment: varint64 | cl_segment_size: varint64
//!                     a commit-log table (TRIAD-LOG) and the WAL segment holding its values
//! bytes := len: varint32 | data
//! ```
//! Unknown tags make the edit undecodable: a manifest written by a newer format is refused
//! rather than half-understood.

use crate::key::SequenceNumber;
use crate::sstable::coding::{put_varint32, put_varint64, take_varint64};
use crate::triad::cl_table::ClSegment;
use crate::version::FileMeta;

const TAG_LOG_NUMBER: u32 = 1;
const TAG_NEXT_FILE: u32 = 2;
const TAG_LAST_SEQUENCE: u32 = 3;
const TAG_DELETED_FILE: u32 = 4;
const TAG_NEW_FILE: u32 = 5;
const TAG_COMPACT_POINTER: u32 = 6;
const TAG_NEW_CL_FILE: u32 = 7;

/// Levels a file can be in; bounds decoded level numbers.
pub const MAX_LEVELS: usize = 16;

/// A change to the set of live files and counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WAL segments with smaller numbers are obsolete.
    pub log_number: Option<u64>,
    /// Next file number to hand out.
    pub next_file_number: Option<u64>,
    /// Largest sequence number used.
    pub last_sequence: Option<SequenceNumber>,
    /// Files removed, as (level, file number).
    pub deleted: Vec<(usize, u64)>,
    /// Files added, as (level, metadata).
    pub added: Vec<(usize, FileMeta)>,
    /// Where the next compaction of a level starts (round-robin over the key space).
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
}

impl VersionEdit {
    /// Serializes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(n) = self.log_number {
            put_varint32(&mut out, TAG_LOG_NUMBER);
            put_varint64(&mut out, n);
        }
        if let Some(n) = self.next_file_number {
            put_varint32(&mut out, TAG_NEXT_FILE);
            put_varint64(&mut out, n);
        }
        if let Some(n) = self.last_sequence {
            put_varint32(&mut out, TAG_LAST_SEQUENCE);
            put_varint64(&mut out, n);
        }
        for &(level, number) in &self.deleted {
            put_varint32(&mut out, TAG_DELETED_FILE);
            put_varint32(&mut out, level as u32);
            put_varint64(&mut out, number);
        }
        for (level, f) in &self.added {
            put_varint32(
                &mut out,
                if f.cl_segment.is_some() {
                    TAG_NEW_CL_FILE
                } else {
                    TAG_NEW_FILE
                },
            );
            put_varint32(&mut out, *level as u32);
            put_varint64(&mut out, f.number);
            put_varint64(&mut out, f.file_size);
            put_bytes(&mut out, &f.smallest);
            put_bytes(&mut out, &f.largest);
            put_varint64(&mut out, f.smallest_seq);
            put_varint64(&mut out, f.largest_seq);
            put_varint64(&mut out, f.num_entries);
            put_varint64(&mut out, f.num_deletions);
            put_varint64(&mut out, f.raw_bytes);
            if let Some(seg) = f.cl_segment {
                put_varint64(&mut out, seg.number);
                put_varint64(&mut out, seg.size);
            }
        }
        for (level, key) in &self.compact_pointers {
            put_varint32(&mut out, TAG_COMPACT_POINTER);
            put_varint32(&mut out, *level as u32);
            put_bytes(&mut out, key);
        }
        out
    }

    /// Parses an edit; the error says which field is bad.
    pub fn decode(mut data: &[u8]) -> Result<VersionEdit, String> {
        let mut e = VersionEdit::default();
        while !data.is_empty() {
            let tag = get_varint32(&mut data).ok_or("bad tag")?;
            match tag {
                TAG_LOG_NUMBER => {
                    e.log_number = Some(get_varint64(&mut data).ok_or("bad log number")?)
                }
                TAG_NEXT_FILE => {
                    e.next_file_number =
                        Some(get_varint64(&mut data).ok_or("bad next file number")?)
                }
                TAG_LAST_SEQUENCE => {
                    e.last_sequence = Some(get_varint64(&mut data).ok_or("bad last sequence")?)
                }
                TAG_DELETED_FILE => {
                    let level = get_level(&mut data)?;
                    let n = get_varint64(&mut data).ok_or("bad deleted file number")?;
                    e.deleted.push((level, n));
                }
                TAG_NEW_FILE | TAG_NEW_CL_FILE => {
                    let level = get_level(&mut data)?;
                    let mut f = FileMeta {
                        number: get_varint64(&mut data).ok_or("bad file number")?,
                        file_size: get_varint64(&mut data).ok_or("bad file size")?,
                        smallest: get_bytes(&mut data).ok_or("bad smallest key")?.to_vec(),
                        largest: get_bytes(&mut data).ok_or("bad largest key")?.to_vec(),
                        smallest_seq: get_varint64(&mut data).ok_or("bad smallest seq")?,
                        largest_seq: get_varint64(&mut data).ok_or("bad largest seq")?,
                        num_entries: get_varint64(&mut data).ok_or("bad entry count")?,
                        num_deletions: get_varint64(&mut data).ok_or("bad deletion count")?,
                        raw_bytes: get_varint64(&mut data).ok_or("bad raw bytes")?,
                        sketch: Default::default(),
                        cl_segment: None,
                    };
                    if tag == TAG_NEW_CL_FILE {
                        f.cl_segment = Some(ClSegment {
                            number: get_varint64(&mut data).ok_or("bad commit-log segment")?,
                            size: get_varint64(&mut data).ok_or("bad commit-log size")?,
                        });
                    }
                    if f.smallest.len() < crate::key::TRAILER_LEN
                        || f.largest.len() < crate::key::TRAILER_LEN
                    {
                        return Err(format!("file {} has a malformed key range", f.number));
                    }
                    e.added.push((level, f));
                }
                TAG_COMPACT_POINTER => {
                    let level = get_level(&mut data)?;
                    let k = get_bytes(&mut data).ok_or("bad compact pointer")?;
                    e.compact_pointers.push((level, k.to_vec()));
                }
                t => return Err(format!("unknown tag {t}")),
            }
        }
        Ok(e)
    }
}

fn get_level(data: &mut &[u8]) -> Result<usize, String> {
    let l = get_varint32(data).ok_or("bad level")? as usize;
    if l >= MAX_LEVELS {
        return Err(format!("level {l} out of range"));
    }
    Ok(l)
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint64(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn get_varint32(data: &mut &[u8]) -> Option<u32> {
    u32::try_from(get_varint64(data)?).ok()
}

fn get_varint64(data: &mut &[u8]) -> Option<u64> {
    take_varint64(data)
}

fn get_bytes<'a>(data: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(get_varint64(data)?).ok()?;
    if data.len() < len {
        return None;
    }
    let (b, rest) = data.split_at(len);
    *data = rest;
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn meta(n: u64) -> FileMeta {
        FileMeta {
            number: n,
            file_size: 1000 + n,
            smallest: make_internal_key(b"a", 1, ValueKind::Put),
            largest: make_internal_key(b"z", 9, ValueKind::Delete),
            smallest_seq: 1,
            largest_seq: 9,
            num_entries: 10,
            num_deletions: 2,
            raw_bytes: 500,
            sketch: Default::default(),
            cl_segment: n.is_multiple_of(2).then_some(ClSegment {
                number: n + 100,
                size: 1 << 20,
            }),
        }
    }

    #[test]
    fn round_trip() {
        let e = VersionEdit {
            log_number: Some(5),
            next_file_number: Some(99),
            last_sequence: Some(1 << 40),
            deleted: vec![(0, 3), (2, 7)],
            added: vec![(1, meta(8)), (6, meta(9))],
            compact_pointers: vec![(1, b"key".to_vec())],
        };
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        assert_eq!(VersionEdit::decode(&[]).unwrap(), VersionEdit::default());
    }

    #[test]
    fn truncations_never_decode() {
        let e = VersionEdit {
            added: vec![(1, meta(8))],
            ..Default::default()
        };
        let data = e.encode();
        for n in 1..data.len() {
            assert!(VersionEdit::decode(&data[..n]).is_err(), "prefix {n}");
        }
        assert!(VersionEdit::decode(&[99, 1]).is_err());
        assert!(VersionEdit::decode(&[TAG_DELETED_FILE as u8, 40, 1]).is_err());
    }
}
