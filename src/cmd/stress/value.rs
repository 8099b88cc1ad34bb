//! Stress values: each encodes its key, its version and a checksum, so a value read back
//! proves which write produced it, and a value no write produced cannot pass for one.
//!
//! ```text
//! key index u32 LE | version u32 LE | filler (length from the pair) | crc32c u32 LE
//! ```
//! The crc covers everything before it; the filler is a function of (key, version).

/// The smallest value: key index, version and checksum, no filler.
pub const MIN_LEN: usize = 12;

/// The key of index `i`.
pub fn key(i: u32) -> Vec<u8> {
    format!("stress:{i:08}").into_bytes()
}

/// The value the write of version `version` to key `i` stores; `max_len` bounds its size.
pub fn encode(i: u32, version: u32, max_len: usize) -> Vec<u8> {
    let mut s = (u64::from(i) << 32) | u64::from(version);
    let r = rialto_killpoint::splitmix64(&mut s);
    let max_len = max_len.max(MIN_LEN);
    let len = MIN_LEN + (r as usize) % (max_len - MIN_LEN + 1);
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&i.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    while v.len() < len - 4 {
        v.push(b'a' + (rialto_killpoint::splitmix64(&mut s) % 26) as u8);
    }
    let crc = crc32c::crc32c(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// Why a stored value is not one this tool wrote for that key.
#[derive(Debug, PartialEq, Eq)]
pub enum Bad {
    /// Shorter than any value written.
    TooShort(usize),
    /// The checksum does not match: damaged bytes.
    Checksum,
    /// A valid value of another key.
    WrongKey(u32),
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::TooShort(n) => {
                write!(f, "a {n}-byte value (no write stores fewer than {MIN_LEN})")
            }
            Bad::Checksum => write!(f, "a value whose checksum does not match"),
            Bad::WrongKey(k) => write!(f, "a value written for key {k}"),
        }
    }
}

/// The version of a value stored under key `i`.
pub fn decode(i: u32, v: &[u8]) -> Result<u32, Bad> {
    if v.len() < MIN_LEN {
        return Err(Bad::TooShort(v.len()));
    }
    let (body, crc) = v.split_at(v.len() - 4);
    let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32c::crc32c(body) != crc {
        return Err(Bad::Checksum);
    }
    let k = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
    if k != i {
        return Err(Bad::WrongKey(k));
    }
    Ok(u32::from_le_bytes([body[4], body[5], body[6], body[7]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        for (i, ver, max) in [(0, 1, 12), (7, 99, 100), (123_456, u32::MAX, 1000)] {
            let v = encode(i, ver, max);
            assert!(v.len() >= MIN_LEN && v.len() <= max.max(MIN_LEN));
            assert_eq!(decode(i, &v), Ok(ver));
            assert_eq!(decode(i + 1, &v), Err(Bad::WrongKey(i)));
            let mut d = v.clone();
            d[5] ^= 1;
            assert_eq!(decode(i, &d), Err(Bad::Checksum));
        }
        assert_eq!(decode(0, b"short"), Err(Bad::TooShort(5)));
    }
}
