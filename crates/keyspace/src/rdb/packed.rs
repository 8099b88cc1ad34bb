//! The blobs Redis stores small collections in, read with every length checked against the
//! blob: listpack (Redis 7), ziplist (before 7) and intset.
//!
//! ```text
//! listpack  total (u32 LE) | count (u16 LE, 65535: unknown) | entry* | 0xFF
//!   entry   encoding+data | backlen (1-5 bytes, the encoding+data's length)
//!           0xxxxxxx 7-bit uint · 10xxxxxx 6-bit-long string · 110xxxxx +1 13-bit int
//!           1110xxxx +1 12-bit-long string · F0 32-bit-long string · F1/F2/F3/F4 16/24/32/64-bit int
//! ziplist   total (u32 LE) | tail (u32 LE) | count (u16 LE) | entry* | 0xFF
//!   entry   prevlen (1 byte, or FE + u32 LE) | encoding | data
//!           00xxxxxx / 01xxxxxx +1 (BE) / 80 + u32 BE: string length · C0 i16 · D0 i32 · E0 i64
//!           F0 i24 · FE i8 · F1..FD: the integer 0..12 itself
//! intset    encoding (u32 LE: 2, 4, 8) | count (u32 LE) | values (LE, sorted)
//! ```

use bytes::Bytes;

use super::PayloadError;

type R<T> = Result<T, PayloadError>;

fn bad<T>() -> R<T> {
    Err(PayloadError::BadData)
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x))
}

/// A signed little-endian integer of `b.len()` bytes.
fn sle(b: &[u8]) -> i64 {
    let bits = 64 - 8 * b.len() as u32;
    ((le(b) << bits) as i64) >> bits
}

fn int_text(n: i64) -> Bytes {
    Bytes::from(n.to_string())
}

/// The entries of a listpack, as strings (integers in decimal).
pub fn listpack(blob: &[u8]) -> R<Vec<Bytes>> {
    if blob.len() < 7 || le(&blob[..4]) != blob.len() as u64 || blob[blob.len() - 1] != 0xff {
        return bad();
    }
    let declared = le(&blob[4..6]);
    let end = blob.len() - 1;
    let mut out = Vec::new();
    let mut at = 6;
    while at < end {
        let b = blob[at];
        let take = |from: usize, n: usize| blob.get(from..from + n).filter(|_| from + n <= end);
        let (entry, len) = if b & 0x80 == 0 {
            (int_text(i64::from(b & 0x7f)), 1)
        } else if b & 0xc0 == 0x80 {
            let n = usize::from(b & 0x3f);
            (
                Bytes::copy_from_slice(take(at + 1, n).ok_or(PayloadError::BadData)?),
                1 + n,
            )
        } else if b & 0xe0 == 0xc0 {
            let lo = *take(at + 1, 1)
                .ok_or(PayloadError::BadData)?
                .first()
                .unwrap_or(&0);
            let v = (i64::from(b & 0x1f) << 8) | i64::from(lo);
            (int_text((v << 51) >> 51), 2)
        } else if b & 0xf0 == 0xe0 {
            let lo = *take(at + 1, 1)
                .ok_or(PayloadError::BadData)?
                .first()
                .unwrap_or(&0);
            let n = (usize::from(b & 0x0f) << 8) | usize::from(lo);
            (
                Bytes::copy_from_slice(take(at + 2, n).ok_or(PayloadError::BadData)?),
                2 + n,
            )
        } else {
            match b {
                0xf0 => {
                    let n = le(take(at + 1, 4).ok_or(PayloadError::BadData)?) as usize;
                    let s = take(at + 5, n).ok_or(PayloadError::BadData)?;
                    (Bytes::copy_from_slice(s), 5 + n)
                }
                0xf1..=0xf4 => {
                    let n = [2, 3, 4, 8][usize::from(b - 0xf1)];
                    (
                        int_text(sle(take(at + 1, n).ok_or(PayloadError::BadData)?)),
                        1 + n,
                    )
                }
                _ => return bad(),
            }
        };
        let backlen = match len {
            0..=127 => 1,
            128..=16_382 => 2,
            16_383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        };
        at += len + backlen;
        if at > end {
            return bad();
        }
        out.push(entry);
    }
    if declared != 0xffff && declared != out.len() as u64 {
        return bad();
    }
    Ok(out)
}

/// The entries of a ziplist, as strings (integers in decimal).
pub fn ziplist(blob: &[u8]) -> R<Vec<Bytes>> {
    if blob.len() < 11 || le(&blob[..4]) != blob.len() as u64 || blob[blob.len() - 1] != 0xff {
        return bad();
    }
    let declared = le(&blob[8..10]);
    let end = blob.len() - 1;
    let take = |from: usize, n: usize| {
        blob.get(from..from + n)
            .filter(|_| from + n <= end)
            .ok_or(PayloadError::BadData)
    };
    let mut out = Vec::new();
    let mut at = 10;
    while at < end {
        at += if blob[at] < 0xfe { 1 } else { 5 };
        let b = take(at, 1)?[0];
        let (entry, len) = match b >> 6 {
            0 => {
                let n = usize::from(b & 0x3f);
                (Bytes::copy_from_slice(take(at + 1, n)?), 1 + n)
            }
            1 => {
                let n = (usize::from(b & 0x3f) << 8) | usize::from(take(at + 1, 1)?[0]);
                (Bytes::copy_from_slice(take(at + 2, n)?), 2 + n)
            }
            2 if b == 0x80 => {
                let s = take(at + 1, 4)?;
                let n = u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize;
                (Bytes::copy_from_slice(take(at + 5, n)?), 5 + n)
            }
            2 => return bad(),
            _ => {
                let n = match b {
                    0xc0 => 2,
                    0xd0 => 4,
                    0xe0 => 8,
                    0xf0 => 3,
                    0xfe => 1,
                    0xf1..=0xfd => 0,
                    _ => return bad(),
                };
                let v = if n == 0 {
                    i64::from(b & 0x0f) - 1
                } else {
                    sle(take(at + 1, n)?)
                };
                (int_text(v), 1 + n)
            }
        };
        at += len;
        out.push(entry);
    }
    if at != end || (declared != 0xffff && declared != out.len() as u64) {
        return bad();
    }
    Ok(out)
}

/// The members of an intset, in decimal.
pub fn intset(blob: &[u8]) -> R<Vec<Bytes>> {
    if blob.len() < 8 {
        return bad();
    }
    let width = le(&blob[..4]) as usize;
    let n = le(&blob[4..8]) as usize;
    if !matches!(width, 2 | 4 | 8)
        || n.checked_mul(width).and_then(|b| b.checked_add(8)) != Some(blob.len())
    {
        return bad();
    }
    Ok(blob[8..]
        .chunks_exact(width)
        .map(|c| int_text(sle(c)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[Bytes]) -> Vec<&[u8]> {
        v.iter().map(|b| &b[..]).collect()
    }

    #[test]
    fn ziplist_of_every_encoding() {
        // Entries "ab", 7 (immediate), -2 (int8), 1000 (int16), built by hand.
        let mut body = vec![0, 0x02, b'a', b'b'];
        body.extend([4, 0xf8]); // prevlen 4, immediate 7
        body.extend([2, 0xfe, 0xfe]); // int8 -2
        body.extend([3, 0xc0, 0xe8, 0x03]); // int16 1000
        let total = 10 + body.len() + 1;
        let mut blob = (total as u32).to_le_bytes().to_vec();
        blob.extend(0u32.to_le_bytes());
        blob.extend(4u16.to_le_bytes());
        blob.extend(&body);
        blob.push(0xff);
        let v = ziplist(&blob).unwrap();
        assert_eq!(strs(&v), vec![&b"ab"[..], b"7", b"-2", b"1000"]);
        // Every cut is refused.
        for cut in 0..blob.len() {
            assert!(ziplist(&blob[..cut]).is_err());
        }
    }

    #[test]
    fn intset_widths_and_damage() {
        let mut blob = 4u32.to_le_bytes().to_vec();
        blob.extend(2u32.to_le_bytes());
        blob.extend((-70_000i32).to_le_bytes());
        blob.extend(5i32.to_le_bytes());
        assert_eq!(strs(&intset(&blob).unwrap()), vec![&b"-70000"[..], b"5"]);
        assert!(intset(&blob[..15]).is_err());
        blob[0] = 3;
        assert!(intset(&blob).is_err());
    }

    #[test]
    fn listpack_refuses_wrong_totals_and_counts() {
        // One 7-bit integer entry (5) and its backlen.
        let blob = [9, 0, 0, 0, 1, 0, 5, 1, 0xff];
        assert_eq!(strs(&listpack(&blob).unwrap()), vec![&b"5"[..]]);
        let mut wrong_count = blob;
        wrong_count[4] = 2;
        assert!(listpack(&wrong_count).is_err());
        let mut no_end = blob;
        no_end[8] = 0;
        assert!(listpack(&no_end).is_err());
    }
}
