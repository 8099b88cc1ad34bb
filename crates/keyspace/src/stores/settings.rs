//! A store's settings as a change carries them (STORE CREATE's and STORE CONFIG's options),
//! and their byte format, shared by the op codec and the cluster's catalog records:
//!
//! ```text
//! settings := n: u8 | field * n            (each tag at most once, in any order)
//! field    := 1 compression: u8 (0 none, 1 lz4, 2 zstd)
//! ```
//!
//! A field left out is unchanged (STORE CONFIG) or takes its default (a store's creation:
//! compression none). An unknown tag refuses the whole record: a reader never half-applies a
//! newer writer's change.

use rialto_lsm::Compression;

/// Settings a store change sets; `None`: unchanged, or the default at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreSettings {
    /// Block compression of the tables a push writes for the store's versions (and of the
    /// tables flushes and compactions write for them).
    pub compression: Option<Compression>,
}

/// Settings that do not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadSettings(pub &'static str);

const TAG_COMPRESSION: u8 = 1;

/// The byte a compression is stored as (store records, settings).
pub fn codec_byte(c: Compression) -> u8 {
    match c {
        Compression::None => 0,
        Compression::Lz4 => 1,
        Compression::Zstd => 2,
    }
}

/// The compression stored as `b`, if `b` names one.
pub fn codec_of(b: u8) -> Option<Compression> {
    match b {
        0 => Some(Compression::None),
        1 => Some(Compression::Lz4),
        2 => Some(Compression::Zstd),
        _ => None,
    }
}

impl StoreSettings {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        *self == StoreSettings::default()
    }

    /// Sets on `m` what these settings set.
    pub fn apply_to(&self, m: &mut super::StoreMeta) {
        if let Some(c) = self.compression {
            m.compression = c;
        }
    }

    /// Appends the settings' bytes.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let n = u8::from(self.compression.is_some());
        out.push(n);
        if let Some(c) = self.compression {
            out.push(TAG_COMPRESSION);
            out.push(codec_byte(c));
        }
    }

    /// Parses settings from the front of `b`, advancing it past them.
    pub fn decode_from(b: &mut &[u8]) -> Result<StoreSettings, BadSettings> {
        let mut take = |n: usize| -> Result<&[u8], BadSettings> {
            if b.len() < n {
                return Err(BadSettings("truncated store settings"));
            }
            let (head, rest) = b.split_at(n);
            *b = rest;
            Ok(head)
        };
        let n = take(1)?[0];
        let mut s = StoreSettings::default();
        for _ in 0..n {
            match take(1)?[0] {
                TAG_COMPRESSION if s.compression.is_none() => {
                    s.compression =
                        Some(codec_of(take(1)?[0]).ok_or(BadSettings("unknown compression"))?);
                }
                TAG_COMPRESSION => return Err(BadSettings("a store setting given twice")),
                _ => return Err(BadSettings("unknown store setting")),
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_damage_is_refused() {
        for s in [
            StoreSettings::default(),
            StoreSettings {
                compression: Some(Compression::Zstd),
            },
            StoreSettings {
                compression: Some(Compression::None),
            },
        ] {
            let mut b = Vec::new();
            s.encode_into(&mut b);
            b.push(0xEE);
            let mut r = &b[..];
            assert_eq!(StoreSettings::decode_from(&mut r), Ok(s));
            assert_eq!(r, &[0xEE], "only the settings are consumed");
            for cut in 0..b.len() - 1 {
                let mut r = &b[..cut];
                assert!(
                    StoreSettings::decode_from(&mut r).is_err(),
                    "{s:?} cut {cut}"
                );
            }
        }
        for bad in [&[1, 1, 3][..], &[1, 9, 0], &[2, 1, 0, 1, 1]] {
            let mut r = bad;
            assert!(StoreSettings::decode_from(&mut r).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn codec_bytes_name_each_codec() {
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            assert_eq!(codec_of(codec_byte(c)), Some(c));
        }
        assert_eq!(codec_of(3), None);
    }
}
