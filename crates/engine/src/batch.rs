//! Atomic write batches.
//!
//! A batch is kept in its serialized form so that the WAL writes it without re-encoding:
//!
//! ```text
//! rep := header(12) op*
//! header := sequence: u64 LE (filled by the engine at commit) | count: u32 LE
//! op := kind: u8 (0 = delete, 1 = put) | key_len: varint32 | key | [value_len: varint32 | value]
//! ```

use crate::{Error, Result, MAX_KEY_LEN, MAX_VALUE_LEN};

/// Size of the batch header (sequence and count).
pub const HEADER_LEN: usize = 12;
const KIND_DELETE: u8 = 0;
const KIND_PUT: u8 = 1;

/// One operation of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set a key.
    Put(&'a [u8], &'a [u8]),
    /// Remove a key.
    Delete(&'a [u8]),
}

/// Operations applied atomically, in order (a later op on the same key wins).
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// Sum of key and value lengths, for statistics and limits.
    payload_bytes: u64,
    /// First invalid argument met while building, reported by [`WriteBatch::validate`].
    invalid: Option<String>,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.count)
            .field("bytes", &self.rep.len())
            .finish()
    }
}

/// A position in a [`WriteBatch`] (see [`WriteBatch::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMark {
    len: usize,
    count: u32,
    payload_bytes: u64,
    valid: bool,
}

impl BatchMark {
    /// Where in the batch the mark lies, as an offset comparable with
    /// [`WriteBatch::iter_offsets_from`]'s.
    pub fn offset(&self) -> usize {
        self.len.max(HEADER_LEN)
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            count: 0,
            payload_bytes: 0,
            invalid: None,
        }
    }

    /// An empty batch with room for `bytes` of operations.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            count: 0,
            payload_bytes: 0,
            invalid: None,
        }
    }

    fn check(&mut self, key: &[u8], value_len: Option<usize>) {
        if self.invalid.is_some() {
            return;
        }
        if key.len() > MAX_KEY_LEN {
            self.invalid = Some(format!(
                "key of {} bytes exceeds the {} byte limit",
                key.len(),
                MAX_KEY_LEN
            ));
        } else if let Some(len) = value_len {
            if len > MAX_VALUE_LEN {
                self.invalid = Some(format!(
                    "value of {len} bytes exceeds the {MAX_VALUE_LEN} byte limit"
                ));
            }
        }
    }

    /// Adds a put. Oversized keys or values make [`WriteBatch::validate`] fail.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.check(key, Some(value.len()));
        if self.invalid.is_some() {
            // Never committed: skip copying what may be a huge oversized value.
            return;
        }
        self.rep.push(KIND_PUT);
        put_varint32(&mut self.rep, len32(key.len()));
        self.rep.extend_from_slice(key);
        put_varint32(&mut self.rep, len32(value.len()));
        self.rep.extend_from_slice(value);
        self.count += 1;
        self.payload_bytes += (key.len() + value.len()) as u64;
    }

    /// Adds a put whose value is `value_parts` written back to back (a record's header and
    /// its payload, say), without joining them first.
    pub fn put_parts(&mut self, key: &[u8], value_parts: &[&[u8]]) {
        let len: usize = value_parts.iter().map(|p| p.len()).sum();
        self.check(key, Some(len));
        if self.invalid.is_some() {
            return;
        }
        self.rep.reserve(1 + 5 + key.len() + 5 + len);
        self.rep.push(KIND_PUT);
        put_varint32(&mut self.rep, len32(key.len()));
        self.rep.extend_from_slice(key);
        put_varint32(&mut self.rep, len32(len));
        for p in value_parts {
            self.rep.extend_from_slice(p);
        }
        self.count += 1;
        self.payload_bytes += (key.len() + len) as u64;
    }

    /// Where the batch ends now, to [`WriteBatch::rollback`] to or to iterate from
    /// ([`WriteBatch::iter_from`]).
    pub fn mark(&self) -> BatchMark {
        BatchMark {
            len: self.rep.len(),
            count: self.count,
            payload_bytes: self.payload_bytes,
            valid: self.invalid.is_none(),
        }
    }

    /// Drops every operation added since `mark` (and the invalidity they caused).
    /// REQUIRES: `mark` was taken from this batch, which has not been cleared since.
    pub fn rollback(&mut self, mark: BatchMark) {
        self.rep.truncate(mark.len.max(HEADER_LEN));
        self.count = mark.count;
        self.payload_bytes = mark.payload_bytes;
        if mark.valid {
            self.invalid = None;
        }
    }

    /// The operations added since `mark`, in order.
    pub fn iter_from(&self, mark: BatchMark) -> WriteBatchIter<'_> {
        WriteBatchIter {
            data: self.rep.get(mark.len.max(HEADER_LEN)..).unwrap_or(&[]),
        }
    }

    /// The operations added since `mark`, in order, each with its offset in the batch (see
    /// [`WriteBatch::op_at`]).
    pub fn iter_offsets_from(&self, mark: BatchMark) -> impl Iterator<Item = (usize, BatchOp<'_>)> {
        self.iter_offsets_at(mark.offset())
    }

    /// Every operation, in order, each with its offset in the batch.
    pub fn iter_offsets(&self) -> impl Iterator<Item = (usize, BatchOp<'_>)> {
        self.iter_offsets_at(HEADER_LEN)
    }

    fn iter_offsets_at(&self, start: usize) -> impl Iterator<Item = (usize, BatchOp<'_>)> {
        let mut it = WriteBatchIter {
            data: self.rep.get(start..).unwrap_or(&[]),
        };
        let end = self.rep.len();
        std::iter::from_fn(move || {
            let at = end - it.data.len();
            it.next().map(|op| (at, op))
        })
    }

    /// The operation at `offset`, one [`WriteBatch::iter_offsets_from`] gave; `None` if no
    /// operation starts there any more (the batch was rolled back before it).
    pub fn op_at(&self, offset: usize) -> Option<BatchOp<'_>> {
        if offset < HEADER_LEN {
            return None;
        }
        let mut it = WriteBatchIter {
            data: self.rep.get(offset..)?,
        };
        it.next_checked().ok().flatten()
    }

    /// The operations added before `mark`, in order.
    pub fn iter_until(&self, mark: BatchMark) -> WriteBatchIter<'_> {
        WriteBatchIter {
            data: self
                .rep
                .get(HEADER_LEN..mark.len.max(HEADER_LEN))
                .unwrap_or(&[]),
        }
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        self.check(key, None);
        if self.invalid.is_some() {
            return;
        }
        self.rep.push(KIND_DELETE);
        put_varint32(&mut self.rep, len32(key.len()));
        self.rep.extend_from_slice(key);
        self.count += 1;
        self.payload_bytes += key.len() as u64;
    }

    /// Appends every operation of `other` after those of `self`.
    pub fn append(&mut self, other: &WriteBatch) {
        if self.invalid.is_none() {
            self.invalid.clone_from(&other.invalid);
        }
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.count += other.count;
        self.payload_bytes += other.payload_bytes;
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.rep[..HEADER_LEN].fill(0);
        self.count = 0;
        self.payload_bytes = 0;
        self.invalid = None;
    }

    /// Number of operations.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Sum of the key and value lengths of every operation.
    pub fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// Checks limits (key and value sizes); call before committing.
    pub fn validate(&self) -> Result<()> {
        match &self.invalid {
            Some(msg) => Err(Error::InvalidArgument(msg.clone())),
            None => Ok(()),
        }
    }

    /// Iterates the operations in order.
    pub fn iter(&self) -> WriteBatchIter<'_> {
        WriteBatchIter {
            data: &self.rep[HEADER_LEN..],
        }
    }

    /// Stamps the first sequence number and the count into the header; returns the
    /// serialized batch, ready to be logged.
    pub fn seal(&mut self, sequence: u64) -> &[u8] {
        self.rep[..8].copy_from_slice(&sequence.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }

    /// The serialized batch (header as last sealed).
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// The serialized operations, without the header (what follows the header in `data`).
    pub fn ops_data(&self) -> &[u8] {
        &self.rep[HEADER_LEN..]
    }

    /// Parses a serialized batch (as sealed); returns `(first sequence, batch)`.
    /// Every operation is decoded and checked, so a corrupt payload is reported here.
    pub fn decode(data: &[u8]) -> std::result::Result<(u64, WriteBatch), String> {
        if data.len() < HEADER_LEN {
            return Err(format!(
                "batch of {} bytes is shorter than its header",
                data.len()
            ));
        }
        let seq = u64::from_le_bytes(data[..8].try_into().map_err(|_| "header")?);
        let count = u32::from_le_bytes(data[8..12].try_into().map_err(|_| "header")?);
        Ok((seq, Self::from_ops(count, &data[HEADER_LEN..])?))
    }

    /// Rebuilds a batch from `count` serialized operations (as [`WriteBatch::ops_data`] gives
    /// them). Every operation is decoded and checked.
    pub fn from_ops(count: u32, ops: &[u8]) -> std::result::Result<WriteBatch, String> {
        let mut it = WriteBatchIter { data: ops };
        let mut n = 0u32;
        let mut payload = 0u64;
        while let Some(op) = it.next_checked()? {
            n += 1;
            payload += match op {
                BatchOp::Put(k, v) => (k.len() + v.len()) as u64,
                BatchOp::Delete(k) => k.len() as u64,
            };
        }
        if n != count {
            return Err(format!("batch header says {count} ops, found {n}"));
        }
        let mut rep = Vec::with_capacity(HEADER_LEN + ops.len());
        rep.resize(HEADER_LEN, 0);
        rep[8..12].copy_from_slice(&count.to_le_bytes());
        rep.extend_from_slice(ops);
        Ok(WriteBatch {
            rep,
            count,
            payload_bytes: payload,
            invalid: None,
        })
    }
}

fn len32(n: usize) -> u32 {
    // Sizes are bounded by MAX_KEY_LEN / MAX_VALUE_LEN, both far below u32::MAX; larger
    // inputs are already flagged invalid by `check` and never committed.
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Iterator over the operations of a batch.
#[derive(Debug, Clone)]
pub struct WriteBatchIter<'a> {
    data: &'a [u8],
}

impl<'a> WriteBatchIter<'a> {
    /// Iterates serialized operations (a batch's [`WriteBatch::ops_data`], as logged) in
    /// place: keys and values are slices of `ops`, so a caller can tell where each lies.
    /// Use [`WriteBatchIter::next_checked`] on bytes read back from storage.
    pub fn over(ops: &'a [u8]) -> Self {
        WriteBatchIter { data: ops }
    }

    /// The next operation, or why the bytes are not a well-formed operation.
    pub fn next_checked(&mut self) -> std::result::Result<Option<BatchOp<'a>>, String> {
        if self.data.is_empty() {
            return Ok(None);
        }
        let kind = self.data[0];
        let mut rest = &self.data[1..];
        let key = take_slice(&mut rest).ok_or("truncated key")?;
        let op = match kind {
            KIND_PUT => BatchOp::Put(key, take_slice(&mut rest).ok_or("truncated value")?),
            KIND_DELETE => BatchOp::Delete(key),
            k => return Err(format!("unknown op kind {k}")),
        };
        self.data = rest;
        Ok(Some(op))
    }
}

impl<'a> Iterator for WriteBatchIter<'a> {
    type Item = BatchOp<'a>;
    fn next(&mut self) -> Option<BatchOp<'a>> {
        // Batches built in memory are well-formed and logged ones are checked by `decode`.
        self.next_checked().ok().flatten()
    }
}

fn take_slice<'a>(data: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, n) = get_varint32(data)?;
    let len = len as usize;
    let rest = &data[n..];
    if rest.len() < len {
        return None;
    }
    let (s, r) = rest.split_at(len);
    *data = r;
    Some(s)
}

/// Appends `v` as a LEB128 varint.
pub fn put_varint32(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a LEB128 varint of at most 5 bytes; returns the value and bytes used.
pub fn get_varint32(data: &[u8]) -> Option<(u32, usize)> {
    let mut v: u32 = 0;
    for (i, &b) in data.iter().take(5).enumerate() {
        v |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if i == 4 && b > 0x0f {
                return None;
            }
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_rollback_cuts_what_followed_the_mark_and_parts_read_as_one_value() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        let mark = b.mark();
        b.put_parts(b"b", &[b"he", b"", b"llo"]);
        b.delete(b"a");
        assert_eq!(b.count(), 3);
        let after: Vec<_> = b.iter_from(mark).collect();
        assert_eq!(
            after,
            vec![BatchOp::Put(b"b", b"hello"), BatchOp::Delete(b"a")]
        );
        let before: Vec<_> = b.iter_until(mark).collect();
        assert_eq!(before, vec![BatchOp::Put(b"a", b"1")]);
        // 513 MiB from one 1 MiB buffer: over the limit, refused without copying it.
        let mib = vec![0u8; 1 << 20];
        let parts: Vec<&[u8]> = (0..=(MAX_VALUE_LEN >> 20)).map(|_| &mib[..]).collect();
        b.put_parts(b"big", &parts);
        assert!(b.validate().is_err());
        b.rollback(mark);
        assert!(
            b.validate().is_ok(),
            "the invalid op went with the rollback"
        );
        assert_eq!(b.count(), 1);
        assert_eq!(b.payload_bytes(), 2);
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![BatchOp::Put(b"a", b"1")]);
        let mut whole = WriteBatch::new();
        whole.put(b"a", b"1");
        assert_eq!(b.ops_data(), whole.ops_data());
    }
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete(b"b");
        b.put(b"", &[7u8; 300]);
        let data = b.seal(42).to_vec();
        let (seq, d) = WriteBatch::decode(&data).unwrap();
        assert_eq!(seq, 42);
        let ops: Vec<_> = d.iter().collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put(b"a", b"1"),
                BatchOp::Delete(b"b"),
                BatchOp::Put(b"", &[7u8; 300][..])
            ]
        );
        assert_eq!(d.payload_bytes(), 1 + 1 + 1 + 300);
    }

    #[test]
    fn decode_rejects_garbage() {
        assert!(WriteBatch::decode(&[1, 2, 3]).is_err());
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let mut data = b.seal(1).to_vec();
        data.truncate(data.len() - 1);
        assert!(WriteBatch::decode(&data).is_err());
        let mut data = b.seal(1).to_vec();
        data[HEADER_LEN] = 9;
        assert!(WriteBatch::decode(&data).is_err());
    }

    #[test]
    fn oversized_key_is_invalid() {
        let mut b = WriteBatch::new();
        b.put(&vec![0u8; MAX_KEY_LEN + 1], b"v");
        assert!(matches!(b.validate(), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn varint_edges() {
        for v in [0u32, 1, 127, 128, 16383, 16384, u32::MAX] {
            let mut out = Vec::new();
            put_varint32(&mut out, v);
            assert_eq!(get_varint32(&out), Some((v, out.len())));
        }
        assert_eq!(get_varint32(&[0x80, 0x80]), None);
        assert_eq!(get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x7f]), None);
    }
}
