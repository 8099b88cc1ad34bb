//! Key distributions (`--key_dist`): uniform, and YCSB's scrambled Zipfian.
//!
//! The Zipfian generator is Gray et al.'s ("Quickly generating billion-record synthetic
//! databases", SIGMOD 1994), as YCSB's `ZipfianGenerator` implements it: `zeta(n, theta)` is
//! computed once per key space, then each draw costs one uniform number and one `powf`.
//! Rank `r` (0 = hottest) is drawn with probability about `(r + 1)^-theta / zeta(n, theta)`.
//!
//! Ranks are then *scrambled* as YCSB's `ScrambledZipfianGenerator` does: the key index is the
//! FNV-1a hash of the rank modulo the key space, so the hot keys are spread over the key
//! space (and over the tree's tables) instead of being the lowest indices. The hash is fixed,
//! not seeded, so every thread and every benchmark of a run agrees on which keys are hot (a
//! zipf fill makes hot the keys a zipf read then asks for). Hashing modulo `n` maps a few
//! ranks onto the same key and leaves a few keys unused, which YCSB accepts too.
//!
//! Draws are deterministic given the thread's generator, which the runner seeds from
//! `--seed` and the thread number, as for uniform keys.

use rand::Rng;

/// `--key_dist`: how random key indices are drawn from `[0, --num)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform,
    /// Scrambled Zipfian with exponent --zipf_theta: a few hot keys get most operations.
    Zipf,
}

impl KeyDist {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            KeyDist::Uniform => "uniform",
            KeyDist::Zipf => "zipf",
        }
    }
}

/// `--zipf_theta`'s default: YCSB's (a 1M key space then sends about two thirds of the
/// operations to the hottest 1% of its keys).
pub const DEFAULT_ZIPF_THETA: f64 = 0.99;

/// Key spaces up to this size get `zeta` summed term by term; larger ones add an
/// Euler–Maclaurin tail to an exact head, so that 10^8 or 10^10 keys cost no more.
const EXACT_ZETA_MAX: u64 = 1 << 20;

/// `sum_{i=1..=n} i^-theta`: the normalisation of a Zipfian over `n` ranks.
pub fn zeta(n: u64, theta: f64) -> f64 {
    if n <= EXACT_ZETA_MAX {
        return (1..=n).map(|i| (i as f64).powf(-theta)).sum();
    }
    // Exact up to m - 1, then Euler–Maclaurin for the terms m..=n:
    //   sum f(i) = ∫_m^n f + (f(m) + f(n)) / 2 + (f'(n) - f'(m)) / 12 - (f'''(n) - f'''(m)) / 720
    // with f(x) = x^-theta. The next term is of order m^-(theta + 5), far below f64's
    // precision of the sum for m = 2^16.
    const M: u64 = 1 << 16;
    let head: f64 = (1..M).map(|i| (i as f64).powf(-theta)).sum();
    let (m, nf) = (M as f64, n as f64);
    let f = |x: f64| x.powf(-theta);
    let d1 = |x: f64| -theta * x.powf(-theta - 1.0);
    let d3 = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    let integral = if (theta - 1.0).abs() < f64::EPSILON {
        (nf / m).ln()
    } else {
        (nf.powf(1.0 - theta) - m.powf(1.0 - theta)) / (1.0 - theta)
    };
    head + integral + (f(m) + f(nf)) / 2.0 + (d1(nf) - d1(m)) / 12.0 - (d3(nf) - d3(m)) / 720.0
}

/// Zipfian ranks over `[0, n)` with exponent `theta` in (0, 1) (Gray et al.; YCSB's
/// `ZipfianGenerator`). Cheap to copy: every thread gets its own copy of the precomputed
/// constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    /// `1 + 0.5^theta` = `zeta(2, theta)`: below it (times zetan) the rank is 1.
    zeta2: f64,
}

impl Zipf {
    /// The generator over `n` ranks, or `None` unless `n >= 1` and `0 < theta < 1` (the
    /// range in which Gray's inversion holds). Sums `zeta(n, theta)`: call once per key space.
    pub fn new(n: u64, theta: f64) -> Option<Zipf> {
        if n == 0 || !valid_theta(theta) {
            return None;
        }
        let zetan = zeta(n, theta);
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        // For n <= 2 the last branch of `rank` is never reached (u * zetan < zeta2 always), so
        // a non-finite eta there is harmless.
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Some(Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            zeta2,
        })
    }

    /// Ranks (and keys) are in `[0, n)`.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The rank for a uniform `u` in `[0, 1)`: the inverse of Gray's approximate CDF.
    pub fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.zeta2 {
            return 1.min(self.n - 1);
        }
        let r = self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        // `as` saturates (NaN gives 0); u close to 1 gives n itself.
        (r as u64).min(self.n - 1)
    }

    /// A random rank.
    pub fn sample_rank<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.rank(rng.gen::<f64>())
    }

    /// The exact Zipfian probability of rank `r` (what draws approximate).
    #[cfg(test)]
    pub fn probability(&self, r: u64) -> f64 {
        ((r + 1) as f64).powf(-self.theta) / self.zetan
    }
}

/// True for the exponents [`Zipf`] accepts: `0 < theta < 1`.
pub fn valid_theta(theta: f64) -> bool {
    theta > 0.0 && theta < 1.0
}

/// The key index of Zipfian rank `rank` over `n` keys: FNV-1a (64-bit) of the rank's 8
/// little-endian bytes, modulo `n` (YCSB's `ScrambledZipfianGenerator` and `fnvhash64`).
pub fn scramble(rank: u64, n: u64) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h = OFFSET;
    for b in rank.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    h % n.max(1)
}

/// Draws the key indices of one thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyGen {
    /// Uniform over `[0, n)` (exactly the draws the harness always made).
    Uniform {
        /// Key space.
        n: u64,
    },
    /// Scrambled Zipfian.
    Zipf(Zipf),
}

impl KeyGen {
    /// The next key index.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            KeyGen::Uniform { n } => rng.gen_range(0..*n),
            KeyGen::Zipf(z) => scramble(z.sample_rank(rng), z.n),
        }
    }

    /// How the flag would name it: `uniform` or `zipf 0.99`.
    pub fn describe(&self) -> String {
        match self {
            KeyGen::Uniform { .. } => "uniform".to_string(),
            KeyGen::Zipf(z) => format!("zipf {}", z.theta),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn rejects_bad_parameters() {
        for theta in [0.0, 1.0, 1.5, -0.5, f64::NAN, f64::INFINITY] {
            assert!(Zipf::new(100, theta).is_none(), "{theta}");
        }
        assert!(Zipf::new(0, 0.5).is_none());
        assert!(Zipf::new(1, 0.5).is_some());
    }

    #[test]
    fn stays_in_range() {
        let mut rng = SmallRng::seed_from_u64(1);
        for n in [1u64, 2, 3, 10, 1000, 1 << 21] {
            for theta in [0.01, 0.5, 0.99, 0.999] {
                let z = Zipf::new(n, theta).unwrap();
                let g = KeyGen::Zipf(z);
                for _ in 0..2000 {
                    assert!(z.sample_rank(&mut rng) < n);
                    assert!(g.next(&mut rng) < n);
                }
                // The extremes of u.
                assert_eq!(z.rank(0.0), 0);
                assert!(z.rank(1.0 - f64::EPSILON) < n);
                assert!(z.rank(1.0) < n);
            }
        }
    }

    #[test]
    fn rank_zero_is_the_most_frequent() {
        let z = Zipf::new(1000, 0.99).unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = vec![0u32; 1000];
        let mut keys = std::collections::HashMap::new();
        for _ in 0..200_000 {
            let r = z.sample_rank(&mut rng);
            counts[r as usize] += 1;
            *keys.entry(scramble(r, 1000)).or_insert(0u32) += 1;
        }
        let max = counts.iter().copied().max().unwrap();
        assert_eq!(counts[0], max);
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[500]);
        // Rank 0's share is close to its exact probability.
        let share = f64::from(counts[0]) / 200_000.0;
        assert!((share - z.probability(0)).abs() < 0.01, "{share}");
        // After scrambling, rank 0's key is the hottest key, and it is not index 0.
        let hottest = keys.iter().max_by_key(|(_, &c)| c).map(|(&k, _)| k);
        assert_eq!(hottest, Some(scramble(0, 1000)));
        assert_ne!(scramble(0, 1000), 0);
    }

    #[test]
    fn top_one_percent_share_matches_theory() {
        // theta 0.99 over 1M keys: the 10,000 hottest ranks hold zeta(10^4) / zeta(10^6) of
        // the mass, about 0.66 (Gray's inversion is an approximation: loose bounds).
        let n = 1_000_000;
        let z = Zipf::new(n, 0.99).unwrap();
        let expected = zeta(n / 100, 0.99) / zeta(n, 0.99);
        assert!(expected > 0.6 && expected < 0.75, "{expected}");
        let mut rng = SmallRng::seed_from_u64(42);
        let draws = 1_000_000;
        let top = (0..draws)
            .filter(|_| z.sample_rank(&mut rng) < n / 100)
            .count();
        let share = top as f64 / draws as f64;
        assert!((share - expected).abs() < 0.03, "{share} vs {expected}");
        // Scrambled keys spread over the whole key space: about half land in each half.
        let low = (0..100_000)
            .filter(|_| KeyGen::Zipf(z).next(&mut rng) < n / 2)
            .count();
        assert!(low > 30_000 && low < 70_000, "{low}");
    }

    #[test]
    fn lower_theta_is_flatter() {
        let mut rng = SmallRng::seed_from_u64(3);
        let share = |theta: f64, rng: &mut SmallRng| {
            let z = Zipf::new(100_000, theta).unwrap();
            (0..100_000).filter(|_| z.sample_rank(rng) < 1000).count()
        };
        let skewed = share(0.99, &mut rng);
        let flat = share(0.2, &mut rng);
        assert!(skewed > 3 * flat, "{skewed} vs {flat}");
    }

    #[test]
    fn zeta_tail_matches_the_exact_sum() {
        for theta in [0.2, 0.5, 0.99] {
            let n = EXACT_ZETA_MAX + 12_345;
            let exact: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
            let approx = zeta(n, theta);
            assert!(
                ((approx - exact) / exact).abs() < 1e-10,
                "{theta}: {approx} vs {exact}"
            );
        }
        // Large key spaces cost nothing and stay monotone.
        assert!(zeta(100_000_000, 0.99) > zeta(10_000_000, 0.99));
        assert!((zeta(2, 0.5) - (1.0 + 0.5f64.sqrt())).abs() < 1e-12);
    }

    #[test]
    fn uniform_is_unchanged() {
        // The uniform generator makes exactly the draws of `gen_range(0..n)`, so runs with
        // the default --key_dist repeat earlier runs of the same seed.
        let mut a = SmallRng::seed_from_u64(9);
        let mut b = SmallRng::seed_from_u64(9);
        let g = KeyGen::Uniform { n: 12_345 };
        for _ in 0..1000 {
            assert_eq!(g.next(&mut a), b.gen_range(0..12_345u64));
        }
        assert_eq!(g.describe(), "uniform");
        assert_eq!(
            KeyGen::Zipf(Zipf::new(10, 0.9).unwrap()).describe(),
            "zipf 0.9"
        );
    }
}
