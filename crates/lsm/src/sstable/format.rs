//! On-disk building blocks of a table: checksums, block handles, the block trailer and the
//! footer. See the [module docs](super) for the byte layout.

use super::coding::{get_varint64, put_varint64, read_u32_le, read_u64_le};

/// Bytes after every block's contents: compression type (1) + masked CRC32C (4).
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Bytes of the fixed footer at the end of every table.
pub const FOOTER_LEN: usize = 64;
/// Identifies a Rialto table: the ASCII bytes `RIALTSST` read as a little-endian `u64`.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"RIALTSST");
/// Format version written by this code; readers reject others.
pub const FORMAT_VERSION: u32 = 1;

const MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC before it is stored.
///
/// Why: a CRC computed over bytes that themselves contain CRCs (a block that stores a WAL
/// record, a file of checksummed blocks) is weak when the stored CRC is the raw value;
/// rotating and adding a constant breaks that relation.
#[inline]
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask_crc`].
#[inline]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// CRC32C (Castagnoli) of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Extends CRC32C `crc` (of some prefix) with `data`.
#[inline]
pub fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// How a block's contents are compressed; the byte stored in the block trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CompressionType {
    /// Stored as is.
    None = 0,
    /// LZ4 block format, uncompressed length prepended as a varint32.
    Lz4 = 1,
    /// A zstd frame, uncompressed length prepended as a varint32.
    Zstd = 2,
}

impl CompressionType {
    /// Decodes a trailer byte; `None` for an unknown type.
    pub fn from_u8(b: u8) -> Option<CompressionType> {
        match b {
            0 => Some(CompressionType::None),
            1 => Some(CompressionType::Lz4),
            2 => Some(CompressionType::Zstd),
            _ => None,
        }
    }
}

/// Masked CRC stored in a block trailer: CRC32C of `contents ++ [type]`.
#[inline]
pub fn block_crc(contents: &[u8], ty: u8) -> u32 {
    mask_crc(crc32c_extend(crc32c(contents), &[ty]))
}

/// Encodes the 5-byte trailer of a block.
pub fn encode_block_trailer(contents: &[u8], ty: CompressionType) -> [u8; BLOCK_TRAILER_LEN] {
    let crc = block_crc(contents, ty as u8);
    let c = crc.to_le_bytes();
    [ty as u8, c[0], c[1], c[2], c[3]]
}

/// Where a block lives: its offset in the file and the length of its stored contents
/// (compressed if compressed), excluding the 5-byte trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// Offset of the first byte of the block.
    pub offset: u64,
    /// Length of the stored contents, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// A handle.
    pub const fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// Appends the varint form used in index entries: `offset: varint64 | size: varint64`.
    pub fn encode_varint(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
    }

    /// Decodes the varint form; `None` on malformed input or trailing bytes.
    pub fn decode_varint(data: &[u8]) -> Option<BlockHandle> {
        let (offset, n) = get_varint64(data)?;
        let (size, m) = get_varint64(&data[n..])?;
        (n + m == data.len()).then_some(BlockHandle { offset, size })
    }

    /// First byte past the block's trailer, `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }

    fn encode_fixed(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.size.to_le_bytes());
    }
}

/// The fixed 64-byte footer: where the index, filter and properties blocks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The index block.
    pub index: BlockHandle,
    /// The filter block; `size == 0` when the table has no filter.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// Format version ([`FORMAT_VERSION`]).
    pub format_version: u32,
}

impl Footer {
    /// Encodes the footer.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        self.index.encode_fixed(&mut b[0..16]);
        self.filter.encode_fixed(&mut b[16..32]);
        self.properties.encode_fixed(&mut b[32..48]);
        b[48..52].copy_from_slice(&self.format_version.to_le_bytes());
        let crc = mask_crc(crc32c(&b[..52]));
        b[52..56].copy_from_slice(&crc.to_le_bytes());
        b[56..64].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
        b
    }

    /// Decodes and checks a footer; the error says which check failed.
    pub fn decode(b: &[u8]) -> Result<Footer, &'static str> {
        if b.len() != FOOTER_LEN {
            return Err("footer has the wrong length");
        }
        let field = |pos: usize| read_u64_le(b, pos).ok_or("footer truncated");
        if field(56)? != TABLE_MAGIC {
            return Err("bad table magic (not a Rialto table)");
        }
        let stored = read_u32_le(b, 52).ok_or("footer truncated")?;
        if unmask_crc(stored) != crc32c(&b[..52]) {
            return Err("footer checksum mismatch");
        }
        let format_version = read_u32_le(b, 48).ok_or("footer truncated")?;
        if format_version != FORMAT_VERSION {
            return Err("unsupported table format version");
        }
        Ok(Footer {
            index: BlockHandle::new(field(0)?, field(8)?),
            filter: BlockHandle::new(field(16)?, field(24)?),
            properties: BlockHandle::new(field(32)?, field(40)?),
            format_version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_round_trip_and_differs() {
        for crc in [0u32, 1, 0xdead_beef, u32::MAX, crc32c(b"hello")] {
            assert_eq!(unmask_crc(mask_crc(crc)), crc);
            assert_ne!(mask_crc(crc), crc);
            assert_ne!(mask_crc(mask_crc(crc)), mask_crc(crc));
        }
    }

    #[test]
    fn crc32c_known_value() {
        // RFC 3720 test vector: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(
            crc32c_extend(crc32c(b"hello "), b"world"),
            crc32c(b"hello world")
        );
    }

    #[test]
    fn handle_varint_round_trip() {
        let h = BlockHandle::new(123_456_789, 4096);
        let mut buf = Vec::new();
        h.encode_varint(&mut buf);
        assert_eq!(BlockHandle::decode_varint(&buf), Some(h));
        buf.push(0);
        assert_eq!(BlockHandle::decode_varint(&buf), None);
        assert_eq!(BlockHandle::decode_varint(&[0x80]), None);
        assert_eq!(BlockHandle::new(u64::MAX, 1).end_with_trailer(), None);
    }

    #[test]
    fn footer_round_trip_and_checks() {
        let f = Footer {
            index: BlockHandle::new(100, 20),
            filter: BlockHandle::new(0, 0),
            properties: BlockHandle::new(50, 45),
            format_version: FORMAT_VERSION,
        };
        let b = f.encode();
        assert_eq!(&b[56..], b"RIALTSST");
        assert_eq!(Footer::decode(&b), Ok(f));
        for i in 0..FOOTER_LEN {
            let mut c = b;
            c[i] ^= 0x10;
            assert!(Footer::decode(&c).is_err(), "flip at {i} undetected");
        }
        assert!(Footer::decode(&b[1..]).is_err());
    }
}
