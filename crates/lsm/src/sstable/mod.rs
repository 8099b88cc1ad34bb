//! Sorted string tables: immutable files of internal-key/value entries in key order.
//!
//! # File layout
//!
//! ```text
//! table         := data_block* filter_block? properties_block index_block footer
//!
//! block_on_disk := contents | type: u8 | crc: u32 LE
//!                  type: 0 none, 1 lz4, 2 zstd
//!                  crc:  masked CRC32C of (contents ++ type)       (see format::mask_crc)
//!                  a compressed block's contents are
//!                  uncompressed_len: varint32 | codec payload
//!
//! data block (uncompressed contents; see block.rs):
//!   +--------------------------------------------------------------------+
//!   | entry 0 | entry 1 | ... | entry k-1 | restart[0..n]: u32 LE | n: u32 |
//!   +--------------------------------------------------------------------+
//!   entry := shared: varint32 | unshared: varint32 | value_len: varint32
//!            | key_delta: [u8; unshared] | value: [u8; value_len]
//!   Keys are internal keys (user_key ++ 8-byte LE trailer seq<<8|kind), prefix-compressed
//!   against the previous key; every `block_restart_interval`-th entry (default 16) stores
//!   its key in full and is listed in the restart array.
//!
//! filter block (absent when bloom_bits_per_key = 0: footer filter handle = (0, 0)):
//!   +----------------------------+----------------+-------------------+
//!   | bits: 64 * num_lines bytes | num_probes: u8 | num_lines: u32 LE |
//!   +----------------------------+----------------+-------------------+
//!   whole-table bloom filter over user keys; each key sets and probes bits of a single
//!   64-byte line (see bloom.rs)
//!
//! properties block: block format, restart interval 1, entries sorted by name:
//!   block_entries, format_version, largest_key, largest_seq, num_data_blocks, num_deletions,
//!   num_entries, raw_key_bytes, raw_value_bytes, smallest_key, smallest_seq
//!   (numbers varint64, keys raw internal keys; block_entries one varint64 per data block,
//!   its entry count; unknown names are ignored by readers)
//!
//! index block: block format, restart interval 1, one entry per data block:
//!   key   = separator(last key of block, first key of next block),
//!           or successor(last key) for the last block        (internal keys)
//!   value = offset: varint64 | size: varint64   (size excludes the 5-byte trailer)
//!
//! footer (fixed 64 bytes at the end of the file):
//!   byte 0            16            32               48        52           56        64
//!        +-------------+-------------+----------------+---------+------------+---------+
//!        | index       | filter      | properties     | version | footer_crc | magic   |
//!        | handle      | handle      | handle         | u32 LE  | u32 LE     | u64 LE  |
//!        +-------------+-------------+----------------+---------+------------+---------+
//!   handle     := offset: u64 LE | size: u64 LE   (size excludes the block trailer)
//!   version    := 1
//!   footer_crc := masked CRC32C of bytes 0..52
//!   magic      := the ASCII bytes "RIALTSST" (u64 0x5453_5354_4C41_4952, stored LE)
//! ```
//!
//! Only data blocks are compressed (when compression saves at least 12.5%); the filter,
//! properties and index blocks are always stored uncompressed, though the reader accepts
//! any block type anywhere.
//!
//! # Integrity
//!
//! The footer CRC and the CRCs of the index, filter and properties blocks are always
//! verified at open; data-block CRCs are verified on every read from the file when
//! `verify_checksums` is set (the default). Every length and offset read from the file is
//! bounds-checked against the file and its region before it is used or allocated, so a
//! corrupt table yields `Error::Corruption { file, offset, reason }` (offset = the bad
//! block's offset, or the footer's) rather than a panic, a huge allocation or wrong data.
//! With `verify_checksums` off, damage inside a data block that still decodes can go
//! unnoticed, but it still never causes a panic or an unbounded allocation.
//!
//! # Reading
//!
//! A [`TableReader`] keeps the parsed index (separator keys and handles) and the bloom
//! filter in memory. A point lookup ([`TableReader::get`]) probes one cache line of the
//! filter, binary-searches the index, fetches one data block through the shared
//! [`BlockCache`](crate::cache::BlockCache) and binary-searches its restart points; the
//! value it returns is a zero-copy slice of the cached block.

pub mod block;
pub mod bloom;
pub mod builder;
pub mod coding;
pub mod compression;
pub mod format;
pub mod properties;
pub mod reader;
pub mod table_iter;

#[cfg(test)]
mod tests;

pub use block::{Block, BlockBuilder, BlockIter};
pub use builder::{TableBuildOptions, TableBuilder, TableMeta};
pub use format::{mask_crc, unmask_crc, BlockHandle, CompressionType, Footer};
pub use properties::TableProperties;
pub use reader::{BlockFill, BlockReads, TableReader};
pub use table_iter::TableIter;

/// Largest `block_size` honoured (larger values are clamped): keeps every block, plus one
/// maximal entry, under [`compression::MAX_BLOCK_LEN`].
pub const MAX_BLOCK_SIZE: usize = 256 << 20;
