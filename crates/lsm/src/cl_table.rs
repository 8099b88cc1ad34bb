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
        let end = wal::read_segment(fs, &dir.join(&name), number, |offset, kind, payload| {
            if kind != wal::KIND_BATCH {
                return Ok(());
            }
            let bad = |r: String| Error::corruption(&name, offset, format!("bad write batch: {r}"));
            let mut rest = payload;
            let first = take_varint64(&mut rest).ok_or_else(|| bad("bad first sequence".into()))?;
            take_varint64(&mut rest).ok_or_else(|| bad("bad operation count".into()))?;
            let payload_at = offset + wal::HEADER_LEN as u64;
            let base = payload.as_ptr() as usize;
            let mut ops = WriteBatchIter::over(rest);
            let mut seq = first;
            while let Some(op) = ops.next_checked().map_err(bad)? {
                if let BatchOp::Put(_, v) = op {
                    // `v` is a slice of `payload`: its position there is its offset.
                    let at = payload_at + (v.as_ptr() as usize - base) as u64;
                    let len = u32::try_from(v.len()).map_err(|_| bad("value too long".into()))?;
                    idx.values.insert(seq, (at, len));
                }
                seq += 1;
            }
            idx.end = offset + (wal::HEADER_LEN + payload.len()) as u64;
            Ok(())
        })?;
        match end {
            SegmentEnd::Clean => Ok(idx),
            SegmentEnd::TornTail { offset } | SegmentEnd::Corrupt { offset, .. } => Err(
                Error::corruption(name, offset, "a damaged record in a synced WAL segment"),
            ),
        }
    }

    /// Where the value of the put numbered `seq` lies.
    pub fn locate(&self, seq: SequenceNumber) -> Option<(u64, u32)> {
        self.values.get(&seq).copied()
    }
}

/// Turns a memtable iterator into an index table's input: each put's value becomes a pointer
/// into the segment. A put the segment does not hold (which would be a bug) stops the
/// iteration with an error, and the flush falls back to an ordinary table.
pub struct PointerIter<'a, I: InternalIterator> {
    inner: I,
    index: &'a SegmentIndex,
    value: Vec<u8>,
    error: Option<Error>,
}

impl<'a, I: InternalIterator> PointerIter<'a, I> {
    /// Wraps `inner`, a memtable iterator over the writes logged in `index`'s segment.
    pub fn new(inner: I, index: &'a SegmentIndex) -> Self {
        PointerIter {
            inner,
            index,
            value: Vec::with_capacity(16),
            error: None,
        }
    }

    fn load(&mut self) {
        self.value.clear();
        if !self.inner.valid() || self.error.is_some() {
            return;
        }
        let k = self.inner.key();
        if key::kind_byte(k) != ValueKind::Put as u8 {
            return;
        }
        let v = self.inner.value();
        match self.index.locate(key::sequence(k)) {
            Some((offset, len)) if len as usize == v.len() => {
                ValuePointer {
                    offset,
                    len,
                    crc: mask_crc(crc32c::crc32c(v)),
                }
                .encode_to(&mut self.value);
            }
            _ => {
                self.error = Some(Error::corruption(
                    "memtable",
                    0,
                    format!(
                        "sequence {} is not in its WAL segment as logged",
                        key::sequence(k)
                    ),
                ))
            }
        }
    }
}

impl<I: InternalIterator> InternalIterator for PointerIter<'_, I> {
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
        if key::kind_byte(self.inner.key()) == ValueKind::Put as u8 {
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
        let v = self
            .file
            .read_vec_at(p.offset, p.len as usize)
            .map_err(|e| Error::io(format!("read commit-log segment {}", self.name), e))?;
        if unmask_crc(p.crc) != crc32c::crc32c(&v) {
            return Err(Error::corruption(
                &self.name,
                p.offset,
                "value checksum mismatch",
            ));
        }
        Ok(Bytes::from(v))
    }
}

/// A table iterator whose values are resolved through a [`ClSource`] when the table is a
/// commit-log table (puts only; tombstones have no value).
pub struct ResolvingIter<I: InternalIterator> {
    inner: I,
    source: Option<Arc<ClSource>>,
    value: Bytes,
    error: Option<Error>,
}

impl<I: InternalIterator> ResolvingIter<I> {
    /// Wraps a table iterator; `source` is the segment of a commit-log table, else `None`.
    pub fn new(inner: I, source: Option<Arc<ClSource>>) -> Self {
        ResolvingIter {
            inner,
            source,
            value: Bytes::new(),
            error: None,
        }
    }

    fn load(&mut self) {
        let Some(src) = &self.source else {
            return;
        };
        if !self.inner.valid() || self.error.is_some() {
            return;
        }
        if key::kind_byte(self.inner.key()) != ValueKind::Put as u8 {
            self.value = Bytes::new();
            return;
        }
        match src.read(self.inner.value()) {
            Ok(v) => self.value = v,
            Err(e) => self.error = Some(e),
        }
    }
}

impl<I: InternalIterator> InternalIterator for ResolvingIter<I> {
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
        if self.source.is_some() {
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
