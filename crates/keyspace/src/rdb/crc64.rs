//! Redis's CRC-64 (the Jones polynomial, reflected, initial value 0, no final xor): the
//! checksum a DUMP payload ends with.

/// The Jones polynomial, bit-reflected.
const POLY: u64 = 0x95ac_9329_ac4b_c9b5;

const fn table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 { (c >> 1) ^ POLY } else { c >> 1 };
            bit += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u64; 256] = table();

/// The checksum of `bytes`.
pub fn crc64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |c, &b| {
        TABLE[((c ^ u64::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_redis_check_value() {
        // Redis's own test vector (crc64.c).
        assert_eq!(super::crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(super::crc64(b""), 0);
    }
}
