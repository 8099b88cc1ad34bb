//! Values that compress to a chosen ratio, the way db_bench's generator makes them.
//!
//! Benchmarks with all-random values would make compression look useless, and all-zero
//! values would make it look free; db_bench's compromise is a buffer built of 100-byte
//! pieces, each made of `100 x ratio` random bytes repeated to fill the piece. A compressor
//! keeps the random part and replaces the repeats by back-references, so values compress to
//! about `ratio` of their size. Values are consecutive windows of the buffer, so producing
//! one costs no random numbers.
//!
//! The random bytes span all 256 values (db_bench uses printable characters), so that an
//! entropy coder such as Zstd cannot shrink the random part below `ratio` either.

use std::ops::Range;

use rand::Rng;

/// Bytes of one piece of the buffer.
const PIECE: usize = 100;
/// Minimum buffer size: large enough that consecutive values of a benchmark differ.
const MIN_BUFFER: usize = 1 << 20;

/// Source of compressible values; one per thread.
#[derive(Debug, Clone)]
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    /// A generator whose values compress to about `ratio` (in (0, 1]) of their size; it can
    /// produce values of up to `max_value_size` bytes.
    pub fn new<R: Rng>(rng: &mut R, ratio: f64, max_value_size: usize) -> ValueGen {
        let size = MIN_BUFFER.max(max_value_size);
        let raw_len = ((PIECE as f64 * ratio).round() as usize).clamp(1, PIECE);
        let mut data = Vec::with_capacity(size + PIECE);
        let mut raw = vec![0u8; raw_len];
        while data.len() < size {
            rng.fill(&mut raw[..]);
            let start = data.len();
            while data.len() - start < PIECE {
                let take = raw_len.min(PIECE - (data.len() - start));
                data.extend_from_slice(&raw[..take]);
            }
        }
        data.truncate(size);
        ValueGen { data, pos: 0 }
    }

    /// The next value of `len` bytes. REQUIRES: `len <= max_value_size` given to `new`.
    pub fn next(&mut self, len: usize) -> &[u8] {
        let r = self.next_range(len);
        &self.data[r]
    }

    /// Where the next value of `len` bytes lies in [`ValueGen::data`]: lets a caller hold
    /// several values at once (a write batch) without copying them.
    pub fn next_range(&mut self, len: usize) -> Range<usize> {
        let len = len.min(self.data.len());
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let r = self.pos..self.pos + len;
        self.pos += len;
        r
    }

    /// The whole buffer; index it with ranges from [`ValueGen::next_range`].
    pub fn data(&self) -> &[u8] {
        &self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn lz4_ratio(data: &[u8]) -> f64 {
        lz4_flex::block::compress(data).len() as f64 / data.len() as f64
    }

    #[test]
    fn values_compress_to_the_ratio() {
        for ratio in [0.25, 0.5, 0.75, 1.0] {
            let mut g = ValueGen::new(&mut SmallRng::seed_from_u64(1), ratio, 100);
            // Compress values in 4 KiB groups, like table blocks.
            let mut block = Vec::new();
            for _ in 0..41 {
                block.extend_from_slice(g.next(100));
            }
            let got = lz4_ratio(&block);
            // LZ4 spends a few bytes per back-reference: allow a small excess, never less.
            assert!(
                got >= ratio - 0.02 && got <= ratio + 0.1,
                "ratio {ratio}: got {got:.3}"
            );
        }
    }

    #[test]
    fn values_are_windows_of_the_buffer() {
        let mut g = ValueGen::new(&mut SmallRng::seed_from_u64(2), 0.5, 100);
        let a = g.next(100).to_vec();
        let b = g.next(100).to_vec();
        assert_eq!(a.len(), 100);
        assert_ne!(a, b, "consecutive values differ");
        // A piece is its random half twice.
        assert_eq!(a[..50], a[50..]);
        let r = g.next_range(7);
        assert_eq!(r, 200..207);
    }

    #[test]
    fn wraps_and_serves_large_values() {
        let big = 3 << 20;
        let mut g = ValueGen::new(&mut SmallRng::seed_from_u64(3), 0.5, big);
        assert_eq!(g.data().len(), big);
        assert_eq!(g.next(big).len(), big);
        // The next one wraps to the start instead of running off the end.
        assert_eq!(g.next_range(10), 0..10);
        let mut small = ValueGen::new(&mut SmallRng::seed_from_u64(4), 0.5, 10);
        for _ in 0..(MIN_BUFFER / 99 + 10) {
            assert_eq!(small.next(99).len(), 99);
        }
    }

    #[test]
    fn same_seed_same_values() {
        let mut a = ValueGen::new(&mut SmallRng::seed_from_u64(9), 0.5, 100);
        let mut b = ValueGen::new(&mut SmallRng::seed_from_u64(9), 0.5, 100);
        assert_eq!(a.next(100), b.next(100));
    }
}
