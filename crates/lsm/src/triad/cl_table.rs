//! Commit-log tables (TRIAD-LOG): a flushed memtable served from its WAL segment.
//!
//! Instead of copying a memtable's values into a new L0 table, the flush writes an *index
//! table* — an ordinary table (same format, checksums, bloom filter, sketch) whose entries are
//! the memtable's internal keys — with each put's value replaced by a [`ValuePointer`] to the
//! value's bytes inside the WAL segment that logged it. The segment, already durable, becomes
//! the table's data file; it is kept while any live version names the table (the manifest
//! records `(segment number, segment size)` with the table) and deleted with it. Compaction
//! reads a commit-log table like any other (through [`ResolvingIter`]) and writes ordinary
//! tables, so a segment's life ends at the first compaction of its table.
//!
//! Pointer, the value of a put in an index table:
//!
//! ```text
//! pointer := offset: varint64 | len: varint32 | crc: u32 LE
//!            offset of the value bytes in the segment; crc = masked crc32c(value)
//! ```
//!
//! A value read through a pointer is bounds-checked against the segment and its checksum
//! verified (the segment's record checksums cover whole records, which a point read does not
//! read); a mismatch is `Corruption`, never wrong data.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rialto_engine::{BatchOp, Error, Result, WriteBatchIter};
use rialto_io::{Fs, RandomAccessFile};

use crate::iter::InternalIterator;
use crate::key::{self, SequenceNumber, ValueKind};
use crate::sstable::coding::{
    get_varint32, get_varint64, put_varint32, put_varint64, take_varint64,
};
use crate::sstable::format::{mask_crc, unmask_crc};
use crate::wal::{self, SegmentEnd};

/// Where a value lies in a WAL segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValuePointer {
    /// Offset of the value's first byte in the segment.
    pub offset: u64,
    /// Length of the value.
    pub len: u32,
    /// Masked crc32c of the value.
    pub crc: u32,
}

impl ValuePointer {
    /// Appends the encoding (see the module docs).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint32(out, self.len);
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    /// Decodes a pointer that must fill `b` exactly.
    pub fn decode(b: &[u8]) -> std::result::Result<ValuePointer, &'static str> {
        let (offset, n) = get_varint64(b).ok_or("bad value offset")?;
        let (len, m) = get_varint32(&b[n..]).ok_or("bad value length")?;
        let rest = &b[n + m..];
        let crc: [u8; 4] = rest.try_into().map_err(|_| "bad value pointer length")?;
        Ok(ValuePointer {
            offset,
            len,
            crc: u32::from_le_bytes(crc),
        })
    }
}

/// A segment made a table's data file, as the manifest records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClSegment {
    /// WAL segment number (file `NNNNNN.log`).
    pub number: u64,
    /// Its size once it became a table's data file (preallocation trimmed).
    pub size: u64,
}

/// Where each value of a segment lies: sequence number → (offset, length), from one read of
/// the segment.
#[derive(Debug, Default)]
pub struct SegmentIndex {
    values: HashMap<SequenceNumber, (u64, u32)>,
    /// End of the last valid record.
    pub end: u64,
}

impl SegmentIndex {
    /// Reads segment `number` of `dir` and locates every put's value. The segment must end
    /// cleanly: it was synced before the memtable switched away from it.
    pub fn build(fs: &dyn Fs, dir: &Path, number: u64) -> Result<SegmentIndex> {
        let name = wal::segment_file_name(number);
        let mut idx = SegmentIndex::default();
        let end = wal::read_segment(fs, &dir.join(&name), number, |r| {
            if r.kind != wal::KIND_BATCH {
                return Ok(());
            }
            let bad =
                |e: String| Error::corruption(&name, r.offset, format!("bad write batch: {e}"));
            let mut rest = r.payload;
            let first = take_varint64(&mut rest).ok_or_else(|| bad("bad first sequence".into()))?;
            take_varint64(&mut rest).ok_or_else(|| bad("bad operation count".into()))?;
            let base = r.payload.as_ptr() as usize;
            let mut ops = WriteBatchIter::over(rest);
            let mut seq = first;
            while let Some(op) = ops.next_checked().map_err(bad)? {
                if let BatchOp::Put(_, v) = op {
                    // `v` is a slice of the payload: its position there is its offset.
                    let at = r.payload_offset + (v.as_ptr() as usize - base) as u64;
                    let len = u32::try_from(v.len()).map_err(|_| bad("value too long".into()))?;
                    idx.values.insert(seq, (at, len));
                }
                seq += 1;
            }
            idx.end = r.end();
            Ok(())
        })?;
        match end {
            SegmentEnd::Clean => Ok(idx),
            SegmentEnd::TornTail { offset, .. } | SegmentEnd::Corrupt { offset, .. } => Err(
                Error::corruption(name, offset, "a damaged record in a synced WAL segment"),
            ),
        }
    }

    /// Where the value of the put numbered `seq` lies.
    pub fn locate(&self, seq: SequenceNumber) -> Option<(u64, u32)> {
        self.values.get(&seq).copied()
    }
}

/// Rewrites the values of puts as an iterator moves: the machinery [`PointerIter`] and
/// [`ResolvingIter`] share. Tombstones and keys pass through unchanged; a failed rewrite
/// makes the iterator invalid with the error in `status()`.
pub struct MapPuts<I: InternalIterator, M: PutMap> {
    inner: I,
    /// `None`: values pass through.
    map: Option<M>,
    value: Vec<u8>,
    error: Option<Error>,
}

/// How [`MapPuts`] rewrites a put's value.
pub trait PutMap: Send {
    /// Writes the new value of the put `ikey = value` into `out` (cleared first).
    fn map(&self, ikey: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<()>;
}

impl<I: InternalIterator, M: PutMap> MapPuts<I, M> {
    /// Wraps `inner`; with `map` `None` values are not rewritten.
    pub fn new(inner: I, map: Option<M>) -> Self {
        MapPuts {
            inner,
            map,
            value: Vec::new(),
            error: None,
        }
    }

    fn load(&mut self) {
        let Some(map) = &self.map else {
            return;
        };
        if !self.inner.valid() || self.error.is_some() {
            return;
        }
        self.value.clear();
        let k = self.inner.key();
        if key::kind_byte(k) == ValueKind::Put as u8 {
            if let Err(e) = map.map(k, self.inner.value(), &mut self.value) {
                self.error = Some(e);
            }
        }
    }
}

impl<I: InternalIterator, M: PutMap> InternalIterator for MapPuts<I, M> {
    fn valid(&self) -> bool {
        self.error.is_none() && self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.load();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.load();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.load();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
        self.load();
    }
    fn next(&mut self) {
        self.inner.next();
        self.load();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.load();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        if self.map.is_some() && key::kind_byte(self.inner.key()) == ValueKind::Put as u8 {
            &self.value
        } else {
            self.inner.value()
        }
    }
    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }
}

/// A memtable iterator as an index table's input: each put's value becomes a pointer into
/// the segment. A put the segment does not hold as logged (which would be a bug) stops it
/// with an error, and the flush falls back to an ordinary table.
pub type PointerIter<'a, I> = MapPuts<I, &'a SegmentIndex>;

impl PutMap for &SegmentIndex {
    fn map(&self, ikey: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let seq = key::sequence(ikey);
        match self.locate(seq) {
            Some((offset, len)) if len as usize == value.len() => {
                ValuePointer {
                    offset,
                    len,
                    crc: mask_crc(crc32c::crc32c(value)),
                }
                .encode_to(out);
                Ok(())
            }
            _ => Err(Error::corruption(
                "memtable",
                0,
                format!("sequence {seq} is not in its WAL segment as logged"),
            )),
        }
    }
}

/// An open segment serving a commit-log table's values.
pub struct ClSource {
    file: Arc<dyn RandomAccessFile>,
    name: String,
}

impl ClSource {
    /// Opens segment `seg` of `dir`; it must be at least the recorded size.
    pub fn open(fs: &dyn Fs, dir: &Path, seg: ClSegment) -> Result<ClSource> {
        let name = wal::segment_file_name(seg.number);
        let file = fs
            .open_read(&dir.join(&name))
            .map_err(|e| Error::io(format!("open commit-log segment {name}"), e))?;
        if file.len() < seg.size {
            return Err(Error::corruption(
                name,
                file.len(),
                format!(
                    "commit-log segment has {} bytes, the manifest says {}",
                    file.len(),
                    seg.size
                ),
            ));
        }
        Ok(ClSource { file, name })
    }

    /// The value a pointer (an index table's value) designates, checked.
    pub fn read(&self, pointer: &[u8]) -> Result<Bytes> {
        let mut v = Vec::new();
        self.read_into(pointer, &mut v)?;
        Ok(Bytes::from(v))
    }

    /// [`ClSource::read`] into `out` (resized to the value).
    pub fn read_into(&self, pointer: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let p = ValuePointer::decode(pointer)
            .map_err(|r| Error::corruption(&self.name, 0, format!("bad value pointer: {r}")))?;
        let end = p.offset.checked_add(u64::from(p.len));
        if end.is_none_or(|e| e > self.file.len()) {
            return Err(Error::corruption(
                &self.name,
                p.offset,
                "value pointer beyond the end of the segment",
            ));
        }
        out.resize(p.len as usize, 0);
        self.file
            .read_exact_at(p.offset, out)
            .map_err(|e| Error::io(format!("read commit-log segment {}", self.name), e))?;
        if unmask_crc(p.crc) != crc32c::crc32c(out) {
            return Err(Error::corruption(
                &self.name,
                p.offset,
                "value checksum mismatch",
            ));
        }
        Ok(())
    }
}

/// A table iterator whose puts' values are read through the segment when the table is a
/// commit-log table (a `None` source passes values through).
pub type ResolvingIter<I> = MapPuts<I, Arc<ClSource>>;

impl PutMap for Arc<ClSource> {
    fn map(&self, _: &[u8], pointer: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.read_into(pointer, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_round_trip_and_garbage() {
        for p in [
            ValuePointer {
                offset: 0,
                len: 0,
                crc: 0,
            },
            ValuePointer {
                offset: u64::MAX,
                len: u32::MAX,
                crc: 0xdead_beef,
            },
        ] {
            let mut b = Vec::new();
            p.encode_to(&mut b);
            assert_eq!(ValuePointer::decode(&b), Ok(p));
            assert!(ValuePointer::decode(&b[..b.len() - 1]).is_err());
            b.push(0);
            assert!(ValuePointer::decode(&b).is_err());
        }
        assert!(ValuePointer::decode(&[]).is_err());
        assert!(ValuePointer::decode(&[0xff; 3]).is_err());
    }
}
