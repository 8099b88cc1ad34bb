//! Variable-length and fixed-width integer encodings used by the table format.
//!
//! Varints are little-endian base-128 (7 payload bits per byte, high bit set on every byte
//! but the last). Decoders never read past the slice they are given and reject over-long
//! encodings, so they are safe on arbitrary (corrupt) input.

/// Longest encoding of a `u32` varint.
pub const MAX_VARINT32_LEN: usize = 5;
/// Longest encoding of a `u64` varint.
pub const MAX_VARINT64_LEN: usize = 10;

/// Appends `v` as a varint.
#[inline]
pub fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, u64::from(v));
}

/// Appends `v` as a varint.
#[inline]
pub fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes `v` as a varint at the start of `out` and returns its length: for encoders that
/// keep a short prefix on the stack. REQUIRES: `out.len() >= varint_len(v)`.
#[inline]
pub fn encode_varint64(out: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Decodes a `u64` varint at the start of `*data` and advances `*data` past it (for parsers
/// that walk a record field by field).
#[inline]
pub fn take_varint64(data: &mut &[u8]) -> Option<u64> {
    let (v, n) = get_varint64(data)?;
    *data = &data[n..];
    Some(v)
}

/// Bytes [`put_varint64`] writes for `v`.
#[inline]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a `u32` varint at the start of `data`: `(value, bytes consumed)`, or `None` if the
/// encoding is truncated, longer than 5 bytes or overflows 32 bits.
#[inline]
pub fn get_varint32(data: &[u8]) -> Option<(u32, usize)> {
    // Fast path: one byte, the common case for entry headers.
    if let Some(&b) = data.first() {
        if b < 0x80 {
            return Some((u32::from(b), 1));
        }
    }
    let (v, n) = decode_varint(data, MAX_VARINT32_LEN)?;
    u32::try_from(v).ok().map(|v| (v, n))
}

/// Decodes a `u64` varint at the start of `data`: `(value, bytes consumed)`, or `None` if the
/// encoding is truncated, longer than 10 bytes or overflows 64 bits.
#[inline]
pub fn get_varint64(data: &[u8]) -> Option<(u64, usize)> {
    decode_varint(data, MAX_VARINT64_LEN)
}

#[inline]
fn decode_varint(data: &[u8], max_len: usize) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    for (i, &b) in data.iter().take(max_len).enumerate() {
        let shift = 7 * i as u32;
        let payload = u64::from(b & 0x7f);
        // The 10th byte of a u64 may only carry the top bit.
        if shift == 63 && payload > 1 {
            return None;
        }
        result |= payload << shift;
        if b < 0x80 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Reads a little-endian `u32` at `pos`, or `None` if it does not fit in `data`.
#[inline]
pub fn read_u32_le(data: &[u8], pos: usize) -> Option<u32> {
    let b = data.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian `u64` at `pos`, or `None` if it does not fit in `data`.
#[inline]
pub fn read_u64_le(data: &[u8], pos: usize) -> Option<u64> {
    let b = data.get(pos..pos.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip() {
        let mut vals: Vec<u64> = vec![0, 1, 127, 128, 255, 300, 16383, 16384, u64::MAX];
        for s in 0..64 {
            vals.push(1u64 << s);
            vals.push((1u64 << s) - 1);
        }
        for &v in &vals {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v));
            assert_eq!(get_varint64(&buf), Some((v, buf.len())));
            if let Ok(v32) = u32::try_from(v) {
                assert_eq!(get_varint32(&buf), Some((v32, buf.len())));
            } else {
                assert_eq!(get_varint32(&buf), None);
            }
            // Every truncation fails.
            for cut in 0..buf.len() {
                assert_eq!(get_varint64(&buf[..cut]), None);
            }
        }
    }

    #[test]
    fn varint_rejects_overlong() {
        assert_eq!(get_varint64(&[0xff; 11]), None);
        assert_eq!(
            get_varint64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            None
        );
        assert_eq!(get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f]), None);
        assert_eq!(
            get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x0f]),
            Some((u32::MAX, 5))
        );
    }

    #[test]
    fn fixed_reads_are_bounded() {
        assert_eq!(read_u32_le(&[1, 0, 0, 0], 0), Some(1));
        assert_eq!(read_u32_le(&[1, 0, 0], 0), None);
        assert_eq!(read_u32_le(&[1, 0, 0, 0], usize::MAX), None);
        assert_eq!(read_u64_le(&7u64.to_le_bytes(), 0), Some(7));
    }
}
