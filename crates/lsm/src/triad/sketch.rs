//! HyperLogLog sketches of the distinct user keys of a table (Flajolet et al. 2007, with the
//! small-range correction), for TRIAD-DISK's overlap estimate.
//!
//! A sketch has 2^[`PRECISION`] one-byte registers (1 KiB, standard error about 3.3%). Each
//! key is hashed with xxh3 (64 bits, the bloom filter's hash): the top `PRECISION` bits pick a register, which keeps
//! the largest rank (position of the first set bit, from 1) of the remaining bits seen. The
//! union of two sketches is their register-wise maximum, so the distinct keys of several
//! tables together are estimated without reading them.
//!
//! Encoding (stored as the `key_sketch` table property): `version: u8 = 1 | precision: u8 |
//! registers: [u8; 2^precision]`, each register at most `64 - precision + 1`.

use std::sync::OnceLock;

use crate::sstable::bloom::bloom_hash;

/// Register-index bits.
pub const PRECISION: u32 = 10;
const REGISTERS: usize = 1 << PRECISION;
const ENCODING_VERSION: u8 = 1;
/// Largest possible rank: all `64 - PRECISION` remaining bits zero.
const MAX_RANK: u8 = (64 - PRECISION + 1) as u8;

/// `2^-r` for every possible register value, exact (an exponent field with a zero mantissa).
const POW2_NEG: [f64; MAX_RANK as usize + 1] = {
    let mut t = [0.0; MAX_RANK as usize + 1];
    let mut r = 0;
    while r < t.len() {
        t[r] = f64::from_bits((1023 - r as u64) << 52);
        r += 1;
    }
    t
};

/// A HyperLogLog sketch of a set of keys.
#[derive(Clone)]
pub struct KeySketch {
    registers: Box<[u8]>,
    /// The estimate, computed once: the compaction picker asks for each table's on every
    /// pick. Reset by every change to the registers.
    estimate: OnceLock<f64>,
}

impl PartialEq for KeySketch {
    fn eq(&self, other: &Self) -> bool {
        self.registers == other.registers
    }
}

impl Eq for KeySketch {}

impl std::fmt::Debug for KeySketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeySketch(~{:.0} keys)", self.estimate())
    }
}

impl Default for KeySketch {
    fn default() -> Self {
        Self::new()
    }
}

impl KeySketch {
    /// An empty sketch.
    pub fn new() -> Self {
        KeySketch {
            registers: vec![0u8; REGISTERS].into_boxed_slice(),
            estimate: OnceLock::new(),
        }
    }

    /// The hash a key is sketched by: the bloom filter's, so a table builder hashes each key
    /// once for both.
    pub fn hash(user_key: &[u8]) -> u64 {
        bloom_hash(user_key)
    }

    /// Adds a key.
    pub fn add(&mut self, user_key: &[u8]) {
        self.add_hash(Self::hash(user_key));
    }

    /// Adds a key by its [`KeySketch::hash`].
    pub fn add_hash(&mut self, h: u64) {
        let index = (h >> (64 - PRECISION)) as usize;
        // The remaining bits, shifted to the top; the sentinel bit bounds the rank.
        let rest = (h << PRECISION) | (1 << (PRECISION - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        let r = &mut self.registers[index];
        if rank > *r {
            *r = rank;
            self.estimate = OnceLock::new();
        }
    }

    /// Adds every key of `other` (the union of the two sets).
    pub fn merge(&mut self, other: &KeySketch) {
        for (a, b) in self.registers.iter_mut().zip(other.registers.iter()) {
            *a = (*a).max(*b);
        }
        self.estimate = OnceLock::new();
    }

    /// Estimated number of distinct keys added.
    pub fn estimate(&self) -> f64 {
        *self
            .estimate
            .get_or_init(|| estimate_from(&histogram(&self.registers)))
    }

    /// The encoded sketch (see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 + REGISTERS);
        out.push(ENCODING_VERSION);
        out.push(PRECISION as u8);
        out.extend_from_slice(&self.registers);
        out
    }

    /// Decodes [`KeySketch::encode`]'s output; the error names the failed check.
    pub fn decode(b: &[u8]) -> Result<KeySketch, &'static str> {
        match b {
            [ENCODING_VERSION, p, regs @ ..] => {
                if u32::from(*p) != PRECISION || regs.len() != REGISTERS {
                    return Err("key sketch of an unsupported precision");
                }
                if !registers_in_range(regs) {
                    return Err("key sketch register out of range");
                }
                Ok(KeySketch {
                    registers: regs.into(),
                    estimate: OnceLock::new(),
                })
            }
            [] => Err("empty key sketch"),
            _ => Err("key sketch of an unknown encoding version"),
        }
    }
}

/// Whether every register is at most [`MAX_RANK`], eight at a time: `(b & 0x7f) + (128 -
/// 56)` cannot carry out of its byte and has its top bit set exactly when `b & 0x7f >= 56`;
/// or-ing `b` back in also catches `b >= 128`. Every table's sketch is checked at open.
fn registers_in_range(registers: &[u8]) -> bool {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const TOP: u64 = 0x8080_8080_8080_8080;
    const BIAS: u64 = (128 - (MAX_RANK as u64 + 1)) * 0x0101_0101_0101_0101;
    let mut chunks = registers.chunks_exact(8);
    let word_ok = |w: u64| (((w & LOW7) + BIAS) | w) & TOP == 0;
    chunks.all(|c| word_ok(u64::from_le_bytes(c.try_into().unwrap_or([0xff; 8]))))
        && chunks.remainder().iter().all(|&b| b <= MAX_RANK)
}

/// How many registers hold each value: one pass with no branch per register.
fn histogram(registers: &[u8]) -> [u32; 256] {
    let mut counts = [0u32; 256];
    for &r in registers {
        counts[usize::from(r)] += 1;
    }
    counts
}

/// The HyperLogLog estimate from a register [`histogram`] whose values are all at most
/// [`MAX_RANK`].
fn estimate_from(counts: &[u32; 256]) -> f64 {
    let m = REGISTERS as f64;
    let sum: f64 = POW2_NEG
        .iter()
        .zip(counts)
        .map(|(p, &c)| p * f64::from(c))
        .sum();
    let zeros = counts[0];
    let alpha = 0.7213 / (1.0 + 1.079 / m);
    let raw = alpha * m * m / sum;
    if raw <= 2.5 * m && zeros > 0 {
        // Few keys: linear counting over the empty registers is more accurate.
        m * (m / f64::from(zeros)).ln()
    } else {
        raw
    }
}

/// Estimated fraction of redundant keys across `sketches`: `1 - distinct(union) / Σ
/// distinct(each)`, in `[0, 1]`. 0 means the sets are disjoint (merging them removes
/// nothing), values near 1 that most keys appear in several of them. `None` for no sketch or
/// only empty ones.
pub fn overlap_ratio<'a>(sketches: impl IntoIterator<Item = &'a KeySketch>) -> Option<f64> {
    let mut union = KeySketch::new();
    let mut sum = 0.0;
    for s in sketches {
        union.merge(s);
        sum += s.estimate();
    }
    if sum < 1.0 {
        return None;
    }
    Some((1.0 - union.estimate() / sum).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sketch(range: std::ops::Range<u64>) -> KeySketch {
        let mut s = KeySketch::new();
        for i in range {
            s.add(format!("key{i:012}").as_bytes());
        }
        s
    }

    fn assert_close(got: f64, want: f64, rel: f64) {
        assert!(
            (got - want).abs() <= want * rel,
            "estimate {got:.1}, expected {want} within {:.1}%",
            rel * 100.0
        );
    }

    #[test]
    fn estimates_within_a_few_standard_errors() {
        assert_eq!(KeySketch::new().estimate(), 0.0);
        for n in [1u64, 10, 100, 1_000, 10_000, 100_000, 1_000_000] {
            // 3.3% standard error; 4 sigma (small counts are nearly exact).
            assert_close(sketch(0..n).estimate(), n as f64, 0.13);
        }
    }

    #[test]
    fn powers_of_two_are_exact() {
        for (r, p) in POW2_NEG.iter().enumerate() {
            assert_eq!(*p, (-(r as f64)).exp2(), "2^-{r}");
        }
    }

    #[test]
    fn cached_estimate_follows_every_change() {
        let mut s = sketch(0..100);
        let small = s.estimate();
        s.merge(&sketch(100..10_000));
        assert_eq!(s.estimate(), sketch(0..10_000).estimate());
        assert!(s.estimate() > small);
        for i in 10_000..20_000 {
            s.add(format!("key{i:012}").as_bytes());
        }
        assert_eq!(s.estimate(), sketch(0..20_000).estimate());
        let decoded = KeySketch::decode(&s.encode()).unwrap();
        assert_eq!(decoded.estimate(), s.estimate());
    }

    #[test]
    fn duplicates_do_not_count() {
        let mut s = sketch(0..5_000);
        let before = s.estimate();
        for i in 0..5_000 {
            s.add(format!("key{i:012}").as_bytes());
        }
        assert_eq!(s.estimate(), before);
    }

    #[test]
    fn union_and_overlap() {
        let a = sketch(0..50_000);
        let b = sketch(25_000..75_000);
        let mut u = a.clone();
        u.merge(&b);
        assert_close(u.estimate(), 75_000.0, 0.13);
        // 100k keys, 75k distinct: a quarter is redundant.
        let o = overlap_ratio([&a, &b]).unwrap();
        assert!((o - 0.25).abs() < 0.08, "overlap {o}");
        let disjoint = overlap_ratio([&a, &sketch(100_000..150_000)]).unwrap();
        assert!(disjoint < 0.08, "disjoint overlap {disjoint}");
        let same = overlap_ratio([&a, &a.clone(), &a.clone()]).unwrap();
        assert!((same - 2.0 / 3.0).abs() < 0.01, "same overlap {same}");
        assert_eq!(overlap_ratio([&KeySketch::new()]), None);
        assert_eq!(overlap_ratio(std::iter::empty()), None);
    }

    #[test]
    fn encode_decode_round_trip_and_rejects_garbage() {
        let s = sketch(0..1000);
        let e = s.encode();
        assert_eq!(e.len(), 2 + REGISTERS);
        assert_eq!(KeySketch::decode(&e).unwrap(), s);
        assert!(KeySketch::decode(&[]).is_err());
        assert!(KeySketch::decode(&e[..e.len() - 1]).is_err());
        let mut bad = e.clone();
        bad[0] = 9;
        assert!(KeySketch::decode(&bad).is_err());
        let mut bad = e.clone();
        bad[1] = 12;
        assert!(KeySketch::decode(&bad).is_err());
        for at in [2, 5, 9, e.len() - 1] {
            for v in [MAX_RANK + 1, 0x7f, 0x80, 0xb7, 0xff] {
                let mut bad = e.clone();
                bad[at] = v;
                assert!(KeySketch::decode(&bad).is_err(), "register {v} at {at}");
            }
        }
    }

    #[test]
    fn register_range_check_matches_a_plain_comparison() {
        for v in 0..=255u8 {
            for at in 0..9 {
                let mut regs = [MAX_RANK; 9];
                regs[at] = v;
                assert_eq!(registers_in_range(&regs), v <= MAX_RANK, "{v} at {at}");
            }
        }
    }
}
