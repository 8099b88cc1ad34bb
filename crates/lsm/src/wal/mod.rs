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
//!
//! `writer.rs` appends and syncs records, `reader.rs` reads them back and tells a torn tail
//! from corruption, `prepare.rs` readies the next segment ahead of a memtable switch.

pub(crate) mod prepare;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

use std::path::{Path, PathBuf};

use rialto_engine::WriteBatch;

use crate::sstable::coding::{encode_varint64, take_varint64};
use crate::sstable::format::mask_crc;

pub use reader::{judge_against_later_segments, read_record_at, read_segment, Record, SegmentEnd};
pub use writer::{SegmentSyncer, WalWriter};

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

/// Path of segment `number` in `dir`.
pub fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(segment_file_name(number))
}
