//! Block compression: LZ4 (block format) and zstd (bulk API, level 3).
//!
//! A compressed block's stored contents are `uncompressed_len: varint32 | payload`. Storing
//! the length lets the reader allocate the exact output buffer up front and check that the
//! codec produced exactly that many bytes. The length is bounded twice before anything is
//! allocated — by [`MAX_BLOCK_LEN`] and by the codec's largest possible expansion ratio
//! applied to the payload actually read, and for zstd against the content size in the frame
//! header — so a corrupt length (possible when checksum verification is off) yields an
//! error instead of a huge allocation.

use std::cell::RefCell;

use crate::Compression;

use super::coding::{get_varint32, put_varint32};
use super::format::CompressionType;

/// Largest uncompressed block a reader accepts: 1 GiB. A block holds at most
/// `block_size` (≤ [`super::MAX_BLOCK_SIZE`], 256 MiB) plus one entry (key ≤ 64 KiB,
/// value ≤ 512 MiB), which stays below this bound.
pub const MAX_BLOCK_LEN: usize = 1 << 30;

/// zstd level used for blocks.
pub const ZSTD_LEVEL: i32 = 3;

/// LZ4 never expands more than ~255× (each extra match-length byte adds at most 255 bytes).
const LZ4_MAX_RATIO: usize = 255;
/// A zstd block of at most 128 KiB takes at least 4 bytes (an RLE block), so no frame
/// expands more than 32768×; 65536 leaves headroom.
const ZSTD_MAX_RATIO: usize = 1 << 16;

/// Reusable compression state of one table builder.
#[derive(Default)]
pub struct Compressor {
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl Compressor {
    /// A compressor with no codec state yet (created on first use).
    pub fn new() -> Self {
        Compressor::default()
    }

    /// Compresses `raw` with `compression` into `out` (cleared first). Returns the type to
    /// record in the trailer, or `None` when the block should be stored uncompressed: no
    /// compression asked, the codec failed, or the result is not at least 12.5% smaller.
    pub fn compress(
        &mut self,
        raw: &[u8],
        compression: Compression,
        out: &mut Vec<u8>,
    ) -> Option<CompressionType> {
        let raw_len = u32::try_from(raw.len()).ok()?;
        out.clear();
        put_varint32(out, raw_len);
        let hdr = out.len();
        let ty = match compression {
            Compression::None => return None,
            Compression::Lz4 => {
                out.resize(hdr + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
                let n = lz4_flex::block::compress_into(raw, &mut out[hdr..]).ok()?;
                out.truncate(hdr + n);
                CompressionType::Lz4
            }
            Compression::Zstd => {
                if self.zstd.is_none() {
                    self.zstd = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL).ok()?);
                }
                let z = self.zstd.as_mut()?;
                out.resize(hdr + zstd::zstd_safe::compress_bound(raw.len()), 0);
                let n = z.compress_to_buffer(raw, &mut out[hdr..]).ok()?;
                out.truncate(hdr + n);
                CompressionType::Zstd
            }
        };
        (out.len() < raw.len() - raw.len() / 8).then_some(ty)
    }
}

thread_local! {
    /// One zstd decompression context per thread: creating one per block would allocate
    /// ~100 KiB on every cache miss.
    static ZSTD_DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decompresses stored block contents of type `ty` (not [`CompressionType::None`]).
/// The error names the failed check.
pub fn decompress(ty: CompressionType, stored: &[u8]) -> Result<Vec<u8>, &'static str> {
    let (len, n) = get_varint32(stored).ok_or("bad uncompressed length")?;
    let len = len as usize;
    let payload = &stored[n..];
    let max_ratio = match ty {
        CompressionType::None => return Err("block is not compressed"),
        CompressionType::Lz4 => LZ4_MAX_RATIO,
        CompressionType::Zstd => ZSTD_MAX_RATIO,
    };
    let bound = payload.len().saturating_mul(max_ratio).saturating_add(64);
    if len > MAX_BLOCK_LEN || len > bound {
        return Err("uncompressed length out of bounds");
    }
    if ty == CompressionType::Zstd {
        // The frame header records the size too (the writer always sets it): a second,
        // independent witness before allocating.
        match zstd::zstd_safe::get_frame_content_size(payload) {
            Ok(Some(n)) if n == len as u64 => {}
            _ => return Err("zstd frame size disagrees with the block header"),
        }
    }
    let mut out = vec![0u8; len];
    let produced = match ty {
        CompressionType::Lz4 => lz4_flex::block::decompress_into(payload, &mut out)
            .map_err(|_| "lz4 decompression failed")?,
        _ => ZSTD_DCTX.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(
                    zstd::bulk::Decompressor::new()
                        .map_err(|_| "zstd context allocation failed")?,
                );
            }
            let d = slot.as_mut().ok_or("zstd context allocation failed")?;
            d.decompress_to_buffer(payload, &mut out[..])
                .map_err(|_| "zstd decompression failed")
        })?,
    };
    if produced != len {
        return Err("decompressed length mismatch");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compressible(n: usize) -> Vec<u8> {
        (0..n).map(|i| b"abcdefgh"[(i / 7) % 8]).collect()
    }

    #[test]
    fn round_trip_both_codecs() {
        let raw = compressible(10_000);
        let mut c = Compressor::new();
        for (comp, ty) in [
            (Compression::Lz4, CompressionType::Lz4),
            (Compression::Zstd, CompressionType::Zstd),
        ] {
            let mut out = Vec::new();
            assert_eq!(c.compress(&raw, comp, &mut out), Some(ty));
            assert!(out.len() < raw.len() / 2);
            assert_eq!(decompress(ty, &out).as_deref(), Ok(&raw[..]));
        }
        let mut out = Vec::new();
        assert_eq!(c.compress(&raw, Compression::None, &mut out), None);
    }

    #[test]
    fn incompressible_is_stored_raw() {
        use rand::{RngCore, SeedableRng};
        let mut raw = vec![0u8; 4096];
        rand::rngs::SmallRng::seed_from_u64(7).fill_bytes(&mut raw);
        let mut c = Compressor::new();
        let mut out = Vec::new();
        assert_eq!(c.compress(&raw, Compression::Lz4, &mut out), None);
        assert_eq!(c.compress(&raw, Compression::Zstd, &mut out), None);
    }

    #[test]
    fn corrupt_length_is_rejected_without_allocating() {
        let raw = compressible(1000);
        let mut c = Compressor::new();
        for (comp, ty) in [
            (Compression::Lz4, CompressionType::Lz4),
            (Compression::Zstd, CompressionType::Zstd),
        ] {
            let mut out = Vec::new();
            c.compress(&raw, comp, &mut out);
            // Claim 4 GiB - 1: rejected by the bounds, not by a failed allocation.
            let mut bad = Vec::new();
            put_varint32(&mut bad, u32::MAX);
            bad.extend_from_slice(&out[2..]);
            assert_eq!(
                decompress(ty, &bad),
                Err("uncompressed length out of bounds")
            );
            // Off by one either way.
            for delta in [-1i64, 1] {
                let mut bad = Vec::new();
                put_varint32(&mut bad, (raw.len() as i64 + delta) as u32);
                bad.extend_from_slice(&out[2..]);
                assert!(decompress(ty, &bad).is_err());
            }
            assert!(decompress(ty, &[]).is_err());
            assert!(decompress(ty, &[0x80]).is_err());
        }
    }
}
