//! Bit arithmetic on string values, as Redis's bitmap commands do it: bit 0 is the most
//! significant bit of byte 0; ranges are Redis's (negative indexes from the end, clamped).

/// Most bits a value may address: 512 MiB of bytes.
pub const MAX_BITS: u64 = 512 * 1024 * 1024 * 8;

/// The bit at `offset` (0 past the end).
pub fn get(v: &[u8], offset: u64) -> bool {
    let byte = (offset >> 3) as usize;
    v.get(byte).is_some_and(|b| b & (0x80 >> (offset & 7)) != 0)
}

/// Sets the bit at `offset` (growing `v` with zero bytes); the bit it had.
pub fn set(v: &mut Vec<u8>, offset: u64, on: bool) -> bool {
    let byte = (offset >> 3) as usize;
    if v.len() <= byte {
        v.resize(byte + 1, 0);
    }
    let mask = 0x80 >> (offset & 7);
    let old = v[byte] & mask != 0;
    if on {
        v[byte] |= mask;
    } else {
        v[byte] &= !mask;
    }
    old
}

/// Redis's clamping of a `[start, end]` range over `len` units (bytes or bits), as BITCOUNT
/// does it: negative indexes count from the end; `None` when the range is empty.
pub fn range(start: i64, end: i64, len: i64) -> Option<(u64, u64)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let fix = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (s, e) = (fix(start), fix(end).min(len - 1));
    (len > 0 && s <= e).then_some((s as u64, e as u64))
}

/// Set bits in bits `[first, last]` of `v` (within its length).
pub fn count(v: &[u8], first: u64, last: u64) -> u64 {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    if fb >= v.len() {
        return 0;
    }
    let lb = lb.min(v.len() - 1);
    let mut n: u64 = v[fb..=lb].iter().map(|b| u64::from(b.count_ones())).sum();
    // Bits of the first byte before `first`, and of the last byte after `last`.
    let head = (first & 7) as u32;
    if head > 0 {
        n -= u64::from((v[fb] >> (8 - head)).count_ones());
    }
    if (last >> 3) as usize == lb {
        let tail = 7 - (last & 7) as u32;
        if tail > 0 {
            n -= u64::from((v[lb] & ((1u8 << tail) - 1)).count_ones());
        }
    }
    n
}

/// The first bit equal to `bit` in bits `[first, last]`, reading bits past the value's end as
/// 0; `None` if there is none.
pub fn position(v: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    let mut i = first;
    while i <= last {
        let byte = (i >> 3) as usize;
        let b = v.get(byte).copied().unwrap_or(0);
        // A whole byte that cannot hold the bit is skipped at once.
        if i & 7 == 0 && i + 7 <= last && b == if bit { 0x00 } else { 0xff } {
            i += 8;
            continue;
        }
        if (b & (0x80 >> (i & 7)) != 0) == bit {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// BITOP's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// `op` over `sources` (missing ones are empty): as long as the longest, shorter ones read
/// as zero-padded.
pub fn combine(op: BitOp, sources: &[&[u8]]) -> Vec<u8> {
    let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![0u8; len];
    for (i, o) in out.iter_mut().enumerate() {
        let at = |s: &&[u8]| s.get(i).copied().unwrap_or(0);
        *o = match op {
            BitOp::And => sources.iter().map(at).fold(0xff, |a, b| a & b),
            BitOp::Or => sources.iter().map(at).fold(0, |a, b| a | b),
            BitOp::Xor => sources.iter().map(at).fold(0, |a, b| a ^ b),
            BitOp::Not => !sources.first().map(at).unwrap_or(0),
        };
    }
    out
}

/// A BITFIELD integer type: signed or unsigned, of `bits` bits (i1..i64, u1..u63).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldType {
    pub signed: bool,
    pub bits: u8,
}

impl FieldType {
    /// Parses `i8`, `u16`, ... (case-insensitive, as Redis).
    pub fn parse(s: &[u8]) -> Option<FieldType> {
        let (signed, digits) = match s.first()? {
            b'i' | b'I' => (true, &s[1..]),
            b'u' | b'U' => (false, &s[1..]),
            _ => return None,
        };
        if digits.is_empty() || digits.len() > 2 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let bits: u8 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let max = if signed { 64 } else { 63 };
        (1..=max)
            .contains(&bits)
            .then_some(FieldType { signed, bits })
    }

    fn min(self) -> i64 {
        if self.signed {
            if self.bits == 64 {
                i64::MIN
            } else {
                -(1i64 << (self.bits - 1))
            }
        } else {
            0
        }
    }

    fn max(self) -> i64 {
        if self.signed {
            if self.bits == 64 {
                i64::MAX
            } else {
                (1i64 << (self.bits - 1)) - 1
            }
        } else {
            ((1u64 << self.bits) - 1) as i64
        }
    }
}

/// What BITFIELD does when a value does not fit its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// Modulo arithmetic (the default).
    #[default]
    Wrap,
    /// Clamped to the type's range.
    Sat,
    /// Nothing written; the reply is nil.
    Fail,
}

/// The raw `bits` bits at bit `offset`, as an unsigned number (bits past the end are 0).
fn read_raw(v: &[u8], offset: u64, bits: u8) -> u64 {
    let mut x = 0u64;
    for i in 0..u64::from(bits) {
        x = (x << 1) | u64::from(get(v, offset + i));
    }
    x
}

/// The field of type `t` at bit `offset`.
pub fn field_get(v: &[u8], t: FieldType, offset: u64) -> i64 {
    let raw = read_raw(v, offset, t.bits);
    if t.signed && t.bits < 64 && raw & (1 << (t.bits - 1)) != 0 {
        (raw | (u64::MAX << t.bits)) as i64
    } else {
        raw as i64
    }
}

/// Writes `value` (already fitted to `t`) as the field at bit `offset`.
pub fn field_set(v: &mut Vec<u8>, t: FieldType, offset: u64, value: i64) {
    let raw = value as u64;
    for i in 0..u64::from(t.bits) {
        let bit = (raw >> (u64::from(t.bits) - 1 - i)) & 1 != 0;
        set(v, offset + i, bit);
    }
}

/// `value` fitted to `t` by `overflow`; `None` when it does not fit and `overflow` is FAIL.
/// `value` is the exact result as an i128 (a sum may leave i64's range).
pub fn fit(t: FieldType, value: i128, overflow: Overflow) -> Option<i64> {
    let (min, max) = (i128::from(t.min()), i128::from(t.max()));
    if (min..=max).contains(&value) {
        return Some(value as i64);
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if value > max { max as i64 } else { min as i64 }),
        Overflow::Wrap => {
            let m = 1i128 << t.bits;
            let mut r = value.rem_euclid(m);
            if t.signed && r > max {
                r -= m;
            }
            Some(r as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_msb_first_and_grow_the_value() {
        let mut v = Vec::new();
        assert!(!set(&mut v, 7, true));
        assert_eq!(v, [0x01]);
        assert!(set(&mut v, 7, false));
        set(&mut v, 9, true);
        assert_eq!(v, [0x00, 0x40]);
        assert!(get(&v, 9) && !get(&v, 8) && !get(&v, 1000));
    }

    #[test]
    fn ranges_clamp_as_redis() {
        assert_eq!(range(0, -1, 4), Some((0, 3)));
        assert_eq!(range(-2, -1, 4), Some((2, 3)));
        assert_eq!(range(2, 100, 4), Some((2, 3)));
        assert_eq!(range(-100, 1, 4), Some((0, 1)));
        assert_eq!(range(3, 1, 4), None);
        assert_eq!(range(0, -1, 0), None);
        assert_eq!(range(-1, -100, 1), None);
        assert_eq!(range(0, -100, 1), Some((0, 0)));
    }

    #[test]
    fn counts_and_positions_over_bit_ranges() {
        let v = [0xff, 0xf0, 0x00];
        assert_eq!(count(&v, 0, 23), 12);
        assert_eq!(count(&v, 4, 11), 8);
        assert_eq!(count(&v, 12, 23), 0);
        assert_eq!(count(&v, 1, 1), 1);
        assert_eq!(position(&v, false, 0, 23), Some(12));
        assert_eq!(position(&v, true, 12, 23), None);
        assert_eq!(position(&v, false, 0, 100), Some(12));
        assert_eq!(position(&[0xff, 0xff], false, 0, 40), Some(16));
    }

    #[test]
    fn bitop_pads_short_sources_with_zeros() {
        let (a, b) = (&[0xf0u8, 0x0f][..], &[0xffu8][..]);
        assert_eq!(combine(BitOp::And, &[a, b]), [0xf0, 0x00]);
        assert_eq!(combine(BitOp::Or, &[a, b]), [0xff, 0x0f]);
        assert_eq!(combine(BitOp::Xor, &[a, b]), [0x0f, 0x0f]);
        assert_eq!(combine(BitOp::Not, &[a]), [0x0f, 0xf0]);
        assert!(combine(BitOp::Or, &[]).is_empty());
    }

    #[test]
    fn fields_read_write_and_overflow_as_redis() {
        let t = FieldType::parse(b"i8").unwrap();
        let u = FieldType::parse(b"u4").unwrap();
        assert_eq!(FieldType::parse(b"u64"), None);
        assert_eq!(FieldType::parse(b"i65"), None);
        assert_eq!(FieldType::parse(b"i0"), None);
        assert!(FieldType::parse(b"I64").is_some());
        let mut v = Vec::new();
        field_set(&mut v, t, 0, -1);
        assert_eq!(v, [0xff]);
        assert_eq!(field_get(&v, t, 0), -1);
        assert_eq!(field_get(&v, u, 2), 15);
        assert_eq!(fit(t, 128, Overflow::Wrap), Some(-128));
        assert_eq!(fit(t, 128, Overflow::Sat), Some(127));
        assert_eq!(fit(t, -129, Overflow::Sat), Some(-128));
        assert_eq!(fit(t, 128, Overflow::Fail), None);
        assert_eq!(fit(u, 16, Overflow::Wrap), Some(0));
        assert_eq!(fit(u, -1, Overflow::Wrap), Some(15));
        let i64t = FieldType::parse(b"i64").unwrap();
        assert_eq!(
            fit(i64t, i128::from(i64::MAX) + 1, Overflow::Wrap),
            Some(i64::MIN)
        );
    }
}
