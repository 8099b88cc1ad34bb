//! LZF decompression (the format Redis compresses RDB strings in), bounds-checked: a damaged
//! stream is an error, never a read or write outside the buffers.

/// `input` decompressed into exactly `len` bytes; `None` if it is damaged or does not make
/// `len` bytes.
pub fn decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let run = ctrl + 1;
            let lit = input.get(ip..ip + run)?;
            if out.len() + run > len {
                return None;
            }
            out.extend_from_slice(lit);
            ip += run;
        } else {
            // A back reference: length in the top 3 bits (7: one more byte), offset in 13.
            let mut n = ctrl >> 5;
            if n == 7 {
                n += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(ip)?) + 1;
            ip += 1;
            n += 2;
            if back > out.len() || out.len() + n > len {
                return None;
            }
            let from = out.len() - back;
            // Byte by byte: the reference may overlap what it produces.
            for i in 0..n {
                let b = out[from + i];
                out.push(b);
            }
        }
    }
    (out.len() == len).then_some(out)
}

/// The most one input byte can expand to: a 3-byte back reference makes 264 bytes.
pub const MAX_RATIO: usize = 88;

#[cfg(test)]
mod tests {
    use super::decompress;

    #[test]
    fn literals_and_overlapping_references() {
        // "abc" literal, then a reference of 9 bytes at distance 3.
        let input = [2, b'a', b'b', b'c', (7 << 5) as u8, 0, 2];
        assert_eq!(decompress(&input, 12).unwrap(), b"abcabcabcabc");
        // Wrong declared length, a reference before the start, a truncated literal.
        assert!(decompress(&input, 11).is_none());
        assert!(decompress(&input, 13).is_none());
        assert!(decompress(&[(1 << 5) as u8, 0], 3).is_none());
        assert!(decompress(&[5, b'a'], 6).is_none());
    }
}
