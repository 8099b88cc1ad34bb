//! The packed encoding: a collection's members inside its record.
//!
//! ```text
//! packed   := n (varint) | item * n
//! item     := len (varint) | bytes
//! hash     := items field, value, field, value, ... in insertion order (n = 2 × fields)
//! set      := mode (1 byte: 0 intset, members sorted by value; 1 listpack, insertion
//!             order) | items member, member, ...
//! ```
//!
//! Varints are LEB128. Decoding checks every length against the bytes left, so a damaged
//! record is an error, never a read past its end.

use bytes::Bytes;

use crate::layout::CorruptRecord;

fn corrupt() -> CorruptRecord {
    CorruptRecord("packed collection")
}

fn read_varint(b: &[u8], at: &mut usize) -> Result<u64, CorruptRecord> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or_else(corrupt)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(corrupt())
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// The items of a packed payload, zero-copy slices of it.
pub fn decode(payload: &Bytes) -> Result<Vec<Bytes>, CorruptRecord> {
    let mut at = 0;
    let n = read_varint(payload, &mut at)?;
    // Each item takes at least one byte: a count beyond that is damage, not an allocation.
    if n > payload.len() as u64 {
        return Err(corrupt());
    }
    let mut items = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = read_varint(payload, &mut at)?;
        let end = (at as u64)
            .checked_add(len)
            .filter(|&e| e <= payload.len() as u64)
            .ok_or_else(corrupt)? as usize;
        items.push(payload.slice(at..end));
        at = end;
    }
    if at != payload.len() {
        return Err(corrupt());
    }
    Ok(items)
}

/// The packed payload of `items`.
pub fn encode<'a>(items: impl IntoIterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let (mut n, mut len) = (0u64, 0usize);
    for i in items.clone() {
        n += 1;
        len += varint_len(i.len() as u64) + i.len();
    }
    let mut out = Vec::with_capacity(varint_len(n) + len);
    write_varint(&mut out, n);
    for i in items {
        write_varint(&mut out, i.len() as u64);
        out.extend_from_slice(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn items_round_trip(items in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..300), 0..40)) {
            let payload = Bytes::from(encode(items.iter().map(|i| &i[..])));
            let back = decode(&payload).unwrap();
            prop_assert_eq!(back.iter().map(|b| b.to_vec()).collect::<Vec<_>>(), items);
        }

        #[test]
        fn damaged_payloads_fail_or_decode_within_bounds(raw in proptest::collection::vec(
            any::<u8>(), 0..64)) {
            let payload = Bytes::from(raw);
            if let Ok(items) = decode(&payload) {
                let total: usize = items.iter().map(|i| i.len()).sum();
                prop_assert!(total <= payload.len());
            }
        }
    }

    #[test]
    fn truncation_and_trailing_bytes_are_errors() {
        let p = encode([&b"field"[..], b"value"]);
        for cut in 0..p.len() {
            assert!(decode(&Bytes::copy_from_slice(&p[..cut])).is_err(), "{cut}");
        }
        let mut longer = p.clone();
        longer.push(0);
        assert!(decode(&Bytes::from(longer)).is_err());
        assert_eq!(
            decode(&Bytes::from(encode([]))).unwrap(),
            Vec::<Bytes>::new()
        );
    }
}
