//! A store's settings as a change carries them (STORE CREATE's and STORE CONFIG's options),
//! and their byte format, shared by the op codec and the cluster's catalog records:
//!
//! ```text
//! settings := n: u8 | field * n            (each tag at most once, in any order)
//! field    := 1 compression: u8 (0 none, 1 lz4, 2 zstd)
//!           | 2 keep: u32 LE (at least 1)
//! ```
//!
//! A field left out is unchanged (STORE CONFIG) or takes its default (a store's creation:
//! compression none, keep [`DEFAULT_KEEP`]). An unknown tag refuses the whole record: a reader never half-applies a
//! newer writer's change.

use rialto_lsm::Compression;

/// Settings a store change sets; `None`: unchanged, or the default at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreSettings {
    /// Block compression of the tables a push writes for the store's versions (and of the
    /// tables flushes and compactions write for them).
    pub compression: Option<Compression>,
    /// Versions kept: the current one and up to `keep - 1` older ones a rollback can go back
    /// to, every one receiving the streamed writes (at least 1).
    pub keep: Option<u32>,
}

/// Versions a store keeps unless told otherwise: the current one and one previous.
pub const DEFAULT_KEEP: u32 = 2;

/// Settings that do not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadSettings(pub &'static str);

const TAG_COMPRESSION: u8 = 1;
const TAG_KEEP: u8 = 2;

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
    /// Sets on `m` what these settings set (a smaller `keep` is applied by the caller, which
    /// retires the versions beyond it).
    pub fn apply_to(&self, m: &mut super::StoreMeta) {
        if let Some(c) = self.compression {
            m.compression = c;
        }
        if let Some(k) = self.keep {
            m.keep = k;
        }
    }

    /// Appends the settings' bytes.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let n = u8::from(self.compression.is_some()) + u8::from(self.keep.is_some());
        out.push(n);
        if let Some(c) = self.compression {
            out.push(TAG_COMPRESSION);
            out.push(codec_byte(c));
        }
        if let Some(k) = self.keep {
            out.push(TAG_KEEP);
            out.extend_from_slice(&k.to_le_bytes());
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
                TAG_KEEP if s.keep.is_none() => {
                    let b = take(4)?;
                    let k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    if k == 0 {
                        return Err(BadSettings("a store keeps at least one version"));
                    }
                    s.keep = Some(k);
                }
                TAG_COMPRESSION | TAG_KEEP => {
                    return Err(BadSettings("a store setting given twice"))
                }
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
                keep: None,
            },
            StoreSettings {
                compression: Some(Compression::None),
                keep: Some(7),
            },
            StoreSettings {
                compression: None,
                keep: Some(1),
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
        for bad in [
            &[1, 1, 3][..],
            &[1, 9, 0],
            &[2, 1, 0, 1, 1],
            &[1, 2, 0, 0, 0, 0],
            &[2, 2, 1, 0, 0, 0, 2, 1, 0, 0, 0],
        ] {
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
