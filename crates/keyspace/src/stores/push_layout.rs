//! What the values of a push are: strings, or hashes. A push declares its layout when it
//! begins (`PUSH BEGIN ... LAYOUT HASH`); every value it is given is checked against it before
//! the sorter takes it, so no client can make the push store a record that does not decode.
//!
//! A hash value is the payload of a packed hash record (`collections::packed`): the record a
//! push writes is the hash's flags byte followed by the value, exactly what HSET writes for a
//! hash under a store's prefix (always packed there), so every hash command reads it.
//!
//! ```text
//! hash value := n (varint, 2 × fields) | (len (varint) | bytes) * n   field, value, field, value...
//! ```
//!
//! Checked: the payload decodes to the last byte, holds pairs, at least one (a hash is never
//! empty), and no field twice (HLEN counts what the record holds).

use std::collections::HashSet;

use crate::collections::packed;
use crate::layout::Kind;

/// Fields up to which duplicates are looked for pair by pair; above, with a set.
const QUADRATIC_FIELDS: usize = 32;

/// What each value of a push is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PushLayout {
    /// A string: the value's bytes.
    #[default]
    String,
    /// A hash: the value is a packed hash payload ([`encode_hash_payload`]).
    Hash,
}

impl PushLayout {
    /// The kind of the records the push writes.
    pub fn kind(self) -> Kind {
        match self {
            PushLayout::String => Kind::String,
            PushLayout::Hash => Kind::Hash,
        }
    }

    /// The name PUSH BEGIN's `LAYOUT` takes (upper case on the wire, any case accepted).
    pub fn name(self) -> &'static str {
        match self {
            PushLayout::String => "string",
            PushLayout::Hash => "hash",
        }
    }

    /// Whether `value` may be stored under this layout.
    pub fn check(self, value: &[u8]) -> Result<(), HashPayloadError> {
        match self {
            PushLayout::String => Ok(()),
            PushLayout::Hash => check_hash_payload(value),
        }
    }
}

/// Why a value is not a hash payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashPayloadError {
    /// A length runs past the end, or bytes are left after the last item.
    #[error("it does not decode as a packed hash")]
    Malformed,
    /// Fields and values go in pairs.
    #[error("it holds {0} items, an odd number: fields and values go in pairs")]
    OddItems(usize),
    /// A hash is never empty.
    #[error("it has no field")]
    Empty,
    /// A field given twice (shown lossily, at most 64 bytes).
    #[error("field '{0}' is given twice")]
    DuplicateField(String),
}

/// The packed payload of a hash of `fields`, in order, appended to `out`: the value a push
/// with the hash layout takes for a key.
pub fn encode_hash_payload(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    out.extend_from_slice(&packed::encode(fields.iter().flat_map(|&(f, v)| [f, v])));
}

/// Checks that `value` is a packed hash payload with at least one field and no field twice.
/// Reads the items in place (a push checks every value it takes); `packed::decode` reads the
/// same layout, which a test checks this against.
pub fn check_hash_payload(value: &[u8]) -> Result<(), HashPayloadError> {
    let mut at = 0;
    let n = varint(value, &mut at)?;
    // Each item takes a byte at least: a larger count is damage.
    if n > value.len() as u64 {
        return Err(HashPayloadError::Malformed);
    }
    let n = n as usize;
    let mut fields: Vec<&[u8]> = Vec::with_capacity(n / 2 + 1);
    for i in 0..n {
        let len = varint(value, &mut at)?;
        let end = (at as u64)
            .checked_add(len)
            .filter(|&e| e <= value.len() as u64)
            .ok_or(HashPayloadError::Malformed)? as usize;
        if i.is_multiple_of(2) {
            fields.push(&value[at..end]);
        }
        at = end;
    }
    if at != value.len() {
        return Err(HashPayloadError::Malformed);
    }
    if n == 0 {
        return Err(HashPayloadError::Empty);
    }
    if !n.is_multiple_of(2) {
        return Err(HashPayloadError::OddItems(n));
    }
    let twice = |f: &[u8]| {
        let shown = &f[..f.len().min(64)];
        HashPayloadError::DuplicateField(String::from_utf8_lossy(shown).into_owned())
    };
    if fields.len() <= QUADRATIC_FIELDS {
        for (i, f) in fields.iter().enumerate() {
            if fields[..i].contains(f) {
                return Err(twice(f));
            }
        }
    } else {
        let mut seen = HashSet::with_capacity(fields.len());
        for f in &fields {
            if !seen.insert(*f) {
                return Err(twice(f));
            }
        }
    }
    Ok(())
}

/// A LEB128 varint at `at`, as `packed` writes them.
fn varint(b: &[u8], at: &mut usize) -> Result<u64, HashPayloadError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or(HashPayloadError::Malformed)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(HashPayloadError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn payload(fields: &[(&str, &str)]) -> Vec<u8> {
        let pairs: Vec<(&[u8], &[u8])> = fields
            .iter()
            .map(|(f, v)| (f.as_bytes(), v.as_bytes()))
            .collect();
        let mut out = Vec::new();
        encode_hash_payload(&pairs, &mut out);
        out
    }

    #[test]
    fn an_encoded_hash_passes_and_decodes_to_its_fields_in_order() {
        let p = payload(&[("b", "2"), ("a", ""), ("", "empty field name")]);
        assert_eq!(PushLayout::Hash.check(&p), Ok(()));
        let items = packed::decode(&Bytes::from(p)).unwrap();
        let items: Vec<&[u8]> = items.iter().map(|b| &b[..]).collect();
        assert_eq!(
            items,
            vec![&b"b"[..], b"2", b"a", b"", b"", b"empty field name"]
        );
    }

    #[test]
    fn values_that_are_no_hash_are_refused() {
        let h = PushLayout::Hash;
        assert_eq!(h.check(b""), Err(HashPayloadError::Malformed));
        assert_eq!(h.check(b"plain text"), Err(HashPayloadError::Malformed));
        assert_eq!(h.check(&payload(&[])), Err(HashPayloadError::Empty));
        // Regression (found by the agreement test): no items, then a byte: damage, as the
        // decoder says, not an empty hash.
        assert_eq!(h.check(&[0, 0]), Err(HashPayloadError::Malformed));
        let three = packed::encode([&b"a"[..], b"1", b"b"]);
        assert_eq!(h.check(&three), Err(HashPayloadError::OddItems(3)));
        let mut trailing = payload(&[("a", "1")]);
        trailing.push(0);
        assert_eq!(h.check(&trailing), Err(HashPayloadError::Malformed));
        let p = payload(&[("a", "1"), ("b", "2")]);
        for cut in 0..p.len() {
            assert!(h.check(&p[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(
            h.check(&payload(&[("a", "1"), ("b", "2"), ("a", "3")])),
            Err(HashPayloadError::DuplicateField("a".into()))
        );
        // Strings take any bytes.
        assert_eq!(PushLayout::String.check(b""), Ok(()));
    }

    #[test]
    fn duplicates_are_found_in_wide_hashes_too() {
        let names: Vec<String> = (0..200).map(|i| format!("f{i}")).collect();
        let mut fields: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
        assert_eq!(PushLayout::Hash.check(&payload(&fields)), Ok(()));
        fields.push(("f150", "again"));
        assert_eq!(
            PushLayout::Hash.check(&payload(&fields)),
            Err(HashPayloadError::DuplicateField("f150".into()))
        );
    }

    proptest::proptest! {
        /// The check reads the layout `packed::decode` reads: whatever bytes, it passes
        /// exactly what decodes to pairs, at least one, of distinct fields.
        #[test]
        fn the_check_agrees_with_the_decoder(
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48),
            items in proptest::collection::vec(
                proptest::collection::vec(0u8..3, 0..3), 0..9),
        ) {
            let encoded = packed::encode(items.iter().map(|i| &i[..]));
            for bytes in [raw, encoded] {
                let want = match packed::decode(&Bytes::from(bytes.clone())) {
                    Err(_) => Err(HashPayloadError::Malformed),
                    Ok(items) if items.is_empty() => Err(HashPayloadError::Empty),
                    Ok(items) if !items.len().is_multiple_of(2) => Err(HashPayloadError::OddItems(items.len())),
                    Ok(items) => {
                        let fields: Vec<&Bytes> = items.iter().step_by(2).collect();
                        match fields.iter().enumerate().find(|(i, f)| fields[..*i].contains(f)) {
                            Some((_, f)) => Err(HashPayloadError::DuplicateField(
                                String::from_utf8_lossy(f).into_owned(),
                            )),
                            None => Ok(()),
                        }
                    }
                };
                proptest::prop_assert_eq!(check_hash_payload(&bytes), want);
            }
        }
    }

    #[test]
    fn the_layout_names_the_record_kind() {
        assert_eq!(PushLayout::default(), PushLayout::String);
        assert_eq!(PushLayout::String.kind(), Kind::String);
        assert_eq!(PushLayout::Hash.kind(), Kind::Hash);
        assert_eq!(PushLayout::Hash.name(), "hash");
    }
}
