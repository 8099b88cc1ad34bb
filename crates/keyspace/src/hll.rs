//! HyperLogLog values (design §11.1): plain strings holding Redis 7.0's representation byte for
//! byte, so GET, SET, APPEND, GETRANGE, DUMP and RESTORE see what Redis would.
//!
//! ```text
//! header    "HYLL" | encoding (u8: 0 dense, 1 sparse) | 3 zero bytes | cardinality (u64 LE)
//!           (the cardinality's top bit set: the cached value is stale)
//! dense     16,384 registers of 6 bits, least significant bits first (12,288 bytes)
//! sparse    opcodes covering the 16,384 registers in order:
//!           00xxxxxx              ZERO:  x + 1 registers at 0 (1 to 64)
//!           01xxxxxx yyyyyyyy     XZERO: (x << 8 | y) + 1 registers at 0 (1 to 16,384)
//!           1vvvvvxx              VAL:   x + 1 registers (1 to 4) at v + 1 (1 to 32)
//! ```
//!
//! An element's register and value come from MurmurHash64A with seed `0xadc83b19`: the low 14
//! bits pick the register, the position of the first 1 bit above them (1 to 51) is the value;
//! a register keeps the largest value it saw. The cardinality is Ertl's estimator over the
//! registers' histogram (arXiv:1702.01284), as Redis 7 computes it.
//!
//! The sparse edits are done in place, opcode by opcode, the way Redis edits them, so the
//! bytes after any sequence of additions equal Redis's; a sparse value is promoted to dense
//! when a register needs a value above 32 or the value would outgrow `hll-sparse-max-bytes`.
//! Every walk is bounded by the bytes it reads: a damaged value is reported, never trusted.

use bytes::Bytes;

/// Bytes before the registers.
pub const HEADER_LEN: usize = 16;
/// Registers per HyperLogLog (2^14).
pub const REGISTERS: usize = 1 << P;
/// The length of every dense HyperLogLog.
pub const DENSE_LEN: usize = HEADER_LEN + REGISTERS * BITS / 8;
/// `hll-sparse-max-bytes`'s default.
pub const DEFAULT_SPARSE_MAX_BYTES: usize = 3000;

const P: u32 = 14;
/// Hash bits above the register index.
const Q: usize = 64 - P as usize;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SEED: u64 = 0xadc8_3b19;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
/// 0.5 / ln 2: the estimator's constant for an unbounded number of registers.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// Why a HyperLogLog command refused a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HllError {
    /// A string that is not a HyperLogLog (magic, encoding or dense length wrong).
    #[error("the string is not a HyperLogLog")]
    NotHll,
    /// A HyperLogLog whose registers do not decode (a sparse value not covering exactly the
    /// registers).
    #[error("the HyperLogLog's registers are damaged")]
    Corrupt,
    /// PFDEBUG on a key that does not exist.
    #[error("the key does not exist")]
    NoKey,
    /// PFDEBUG DECODE of a dense HyperLogLog.
    #[error("the HyperLogLog is not sparse")]
    NotSparse,
    /// PFDEBUG with a subcommand it does not know (as sent).
    #[error("unknown PFDEBUG subcommand '{0}'")]
    UnknownSubcommand(String),
}

/// MurmurHash64A (little-endian reads, as Redis's endian-neutral variant).
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and the value it offers there (1 to Q + 1).
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The sentinel bit bounds the run at Q zeros.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

fn val_len(b: u8) -> usize {
    usize::from(b & 3) + 1
}

fn val_op(value: u8, len: usize) -> u8 {
    0x80 | (value - 1) << 2 | (len - 1) as u8
}

fn zero_ops(len: usize, out: &mut Vec<u8>) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        out.push(0x40 | (l >> 8) as u8);
        out.push((l & 0xff) as u8);
    } else {
        out.push((len - 1) as u8);
    }
}

/// One sparse opcode: what it covers and its length in bytes. A two-byte opcode cut short by
/// the end of the value reads its missing byte as 0, as Redis reads its string's terminator.
#[derive(Clone, Copy)]
enum Opcode {
    Zero(usize),
    XZero(usize),
    Val(u8, usize),
}

impl Opcode {
    fn at(v: &[u8], p: usize) -> Opcode {
        let b = v[p];
        if is_zero(b) {
            Opcode::Zero(usize::from(b & 0x3f) + 1)
        } else if is_xzero(b) {
            let lo = v.get(p + 1).copied().unwrap_or(0);
            Opcode::XZero((usize::from(b & 0x3f) << 8 | usize::from(lo)) + 1)
        } else {
            Opcode::Val(val_value(b), val_len(b))
        }
    }

    fn span(self) -> usize {
        match self {
            Opcode::Zero(n) | Opcode::XZero(n) | Opcode::Val(_, n) => n,
        }
    }

    fn bytes(self) -> usize {
        match self {
            Opcode::XZero(_) => 2,
            _ => 1,
        }
    }
}

fn dense_get(regs: &[u8], index: usize) -> u8 {
    let byte = index * BITS / 8;
    let fb = (index * BITS) & 7;
    let b0 = u16::from(regs.get(byte).copied().unwrap_or(0));
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u16::from(REGISTER_MAX)) as u8
}

fn dense_put(regs: &mut [u8], index: usize, value: u8) {
    let byte = index * BITS / 8;
    let fb = (index * BITS) & 7;
    let v = u16::from(value & REGISTER_MAX);
    let mask = u16::from(REGISTER_MAX);
    if let Some(b) = regs.get_mut(byte) {
        *b = ((u16::from(*b) & !(mask << fb)) | (v << fb)) as u8;
    }
    // The last register has no bits in a following byte (there is none).
    if let Some(b) = regs.get_mut(byte + 1) {
        *b = ((u16::from(*b) & !(mask >> (8 - fb))) | (v >> (8 - fb))) as u8;
    }
}

/// A HyperLogLog value: the string's bytes, checked to have a HyperLogLog's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hll(Vec<u8>);

impl Default for Hll {
    fn default() -> Self {
        Hll::new()
    }
}

impl Hll {
    /// An empty HyperLogLog: sparse, one XZERO covering every register, cache 0 and valid.
    pub fn new() -> Hll {
        let mut v = Vec::with_capacity(HEADER_LEN + 2);
        v.extend_from_slice(b"HYLL");
        v.push(SPARSE);
        v.resize(HEADER_LEN, 0);
        let mut left = REGISTERS;
        while left > 0 {
            let n = left.min(XZERO_MAX_LEN) - 1;
            v.push(0x40 | (n >> 8) as u8);
            v.push((n & 0xff) as u8);
            left -= n + 1;
        }
        Hll(v)
    }

    /// An empty dense HyperLogLog.
    fn new_dense() -> Hll {
        let mut v = vec![0u8; DENSE_LEN];
        v[..4].copy_from_slice(b"HYLL");
        Hll(v)
    }

    /// The value of a string, if it is a HyperLogLog.
    pub fn from_value(value: &[u8]) -> Result<Hll, HllError> {
        Self::check(value)?;
        Ok(Hll(value.to_vec()))
    }

    /// Whether a string is a HyperLogLog: long enough for the header, `HYLL`, a known
    /// encoding, and exactly the dense length when dense.
    pub fn check(value: &[u8]) -> Result<(), HllError> {
        if value.len() < HEADER_LEN || &value[..4] != b"HYLL" || value[4] > SPARSE {
            return Err(HllError::NotHll);
        }
        if value[4] == DENSE && value.len() != DENSE_LEN {
            return Err(HllError::NotHll);
        }
        Ok(())
    }

    /// The bytes, as stored.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes, as stored.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// Whether the dense encoding holds the registers.
    pub fn is_dense(&self) -> bool {
        self.0[4] == DENSE
    }

    /// The cached cardinality, if it is valid.
    pub fn cached(&self) -> Option<u64> {
        let mut c = [0u8; 8];
        c.copy_from_slice(&self.0[8..16]);
        (c[7] & 0x80 == 0).then(|| u64::from_le_bytes(c))
    }

    /// Caches a cardinality (its top bit clear: valid).
    pub fn set_cached(&mut self, card: u64) {
        self.0[8..16].copy_from_slice(&card.to_le_bytes());
    }

    /// Marks the cached cardinality stale.
    pub fn invalidate(&mut self) {
        self.0[15] |= 0x80;
    }

    /// Adds an element: whether a register changed (and the cache was invalidated).
    pub fn add(&mut self, element: &[u8], sparse_max: usize) -> Result<bool, HllError> {
        let (index, value) = pattern(element);
        self.raise(index, value, sparse_max)
    }

    /// Raises register `index` to `value` (1 to 63) if it is lower: whether it changed. A
    /// dense value's cache is left to the caller, a sparse edit invalidates it.
    pub fn raise(&mut self, index: usize, value: u8, sparse_max: usize) -> Result<bool, HllError> {
        if value == 0 || value > REGISTER_MAX || index >= REGISTERS {
            // Every register already holds at least 0; no register holds more than 6 bits.
            return Ok(false);
        }
        if self.is_dense() {
            Ok(self.dense_raise(index, value))
        } else {
            self.sparse_raise(index, value, sparse_max)
        }
    }

    fn dense_raise(&mut self, index: usize, value: u8) -> bool {
        let regs = &mut self.0[HEADER_LEN..];
        if value > dense_get(regs, index) {
            dense_put(regs, index, value);
            true
        } else {
            false
        }
    }

    /// The in-place sparse edit: find the opcode covering `index`, then either nothing to do,
    /// a one-byte rewrite, or a split into up to three opcodes; then merge equal VAL
    /// neighbours among the next few opcodes.
    fn sparse_raise(
        &mut self,
        index: usize,
        value: u8,
        sparse_max: usize,
    ) -> Result<bool, HllError> {
        if value > VAL_MAX_VALUE {
            return self.promote(index, value);
        }
        let v = &mut self.0;
        let end = v.len();
        let mut p = HEADER_LEN;
        let mut first = 0usize;
        let mut prev = None;
        let mut op = None;
        while p < end {
            let o = Opcode::at(v, p);
            if index < first + o.span() {
                op = Some(o);
                break;
            }
            prev = Some(p);
            p += o.bytes();
            first += o.span();
        }
        let Some(op) = op else {
            return Err(HllError::Corrupt);
        };
        let next = Some(p + op.bytes()).filter(|&n| n < end);
        let last = first + op.span() - 1;
        let mut seq = Vec::with_capacity(5);
        match op {
            Opcode::Val(old, _) if old >= value => return Ok(false),
            Opcode::Val(_, 1) | Opcode::Zero(1) => {
                v[p] = val_op(value, 1);
                return Ok(self.merge_after(prev));
            }
            Opcode::Zero(_) | Opcode::XZero(_) => {
                if index != first {
                    zero_ops(index - first, &mut seq);
                }
                seq.push(val_op(value, 1));
                if index != last {
                    zero_ops(last - index, &mut seq);
                }
            }
            Opcode::Val(old, _) => {
                if index != first {
                    seq.push(val_op(old, index - first));
                }
                seq.push(val_op(value, 1));
                if index != last {
                    seq.push(val_op(old, last - index));
                }
            }
        }
        let new_len = end - op.bytes() + seq.len();
        if seq.len() > op.bytes() && new_len > sparse_max {
            return self.promote(index, value);
        }
        let tail = next.map(|n| v[n..].to_vec()).unwrap_or_default();
        v.truncate(p);
        v.extend_from_slice(&seq);
        v.extend_from_slice(&tail);
        // An XZERO cut short by the end loses the bytes it lacked.
        v.truncate(new_len);
        Ok(self.merge_after(prev))
    }

    /// Merges adjacent VAL opcodes of one value (up to four registers together) among the
    /// five opcodes from `from` on, then invalidates the cache. Always true: a register
    /// changed.
    fn merge_after(&mut self, from: Option<usize>) -> bool {
        let v = &mut self.0;
        let mut p = from.unwrap_or(HEADER_LEN);
        let mut scans = 5;
        while p < v.len() && scans > 0 {
            scans -= 1;
            let b = v[p];
            if is_xzero(b) {
                p += 2;
                continue;
            }
            if is_zero(b) {
                p += 1;
                continue;
            }
            if let Some(&b2) = v.get(p + 1) {
                if is_val(b2) && val_value(b) == val_value(b2) {
                    let len = val_len(b) + val_len(b2);
                    if len <= VAL_MAX_LEN {
                        v[p + 1] = val_op(val_value(b), len);
                        v.remove(p);
                        // The merged opcode may merge again with the one after it.
                        continue;
                    }
                }
            }
            p += 1;
        }
        self.invalidate();
        true
    }

    fn promote(&mut self, index: usize, value: u8) -> Result<bool, HllError> {
        self.to_dense()?;
        Ok(self.dense_raise(index, value))
    }

    /// Converts a sparse value to dense (header and cache kept): whether it was sparse.
    pub fn to_dense(&mut self) -> Result<bool, HllError> {
        if self.is_dense() {
            return Ok(false);
        }
        let mut dense = vec![0u8; DENSE_LEN];
        dense[..HEADER_LEN].copy_from_slice(&self.0[..HEADER_LEN]);
        dense[4] = DENSE;
        let regs = &mut dense[HEADER_LEN..];
        self.runs(|idx, value, n| {
            if value > 0 {
                for i in idx..idx + n {
                    dense_put(regs, i, value);
                }
            }
        })?;
        self.0 = dense;
        Ok(true)
    }

    /// Walks a sparse value's runs (first register, value, length) in order. Valid only when
    /// the runs cover exactly the registers: a run past the last register is refused before
    /// `f` sees it, so `f` only ever sees registers that exist.
    fn runs(&self, mut f: impl FnMut(usize, u8, usize)) -> Result<(), HllError> {
        let mut idx = 0usize;
        for op in self.opcodes() {
            let (value, n) = match op {
                Opcode::Zero(n) | Opcode::XZero(n) => (0, n),
                Opcode::Val(value, n) => (value, n),
            };
            if idx + n > REGISTERS {
                return Err(HllError::Corrupt);
            }
            f(idx, value, n);
            idx += n;
        }
        if idx != REGISTERS {
            return Err(HllError::Corrupt);
        }
        Ok(())
    }

    fn opcodes(&self) -> impl Iterator<Item = Opcode> + '_ {
        let v = &self.0;
        let mut p = HEADER_LEN;
        std::iter::from_fn(move || {
            (p < v.len()).then(|| {
                let o = Opcode::at(v, p);
                p += o.bytes();
                o
            })
        })
    }

    /// Raises each register of `max` to this value's (for PFMERGE and a PFCOUNT of several
    /// keys).
    pub fn merge_into(&self, max: &mut [u8; REGISTERS]) -> Result<(), HllError> {
        if self.is_dense() {
            let regs = &self.0[HEADER_LEN..];
            for (i, m) in max.iter_mut().enumerate() {
                *m = (*m).max(dense_get(regs, i));
            }
            return Ok(());
        }
        self.runs(|idx, value, n| {
            for m in &mut max[idx..idx + n] {
                *m = (*m).max(value);
            }
        })
    }

    /// The estimated cardinality, from the registers (the cache is not read).
    pub fn count(&self) -> Result<u64, HllError> {
        let mut hist = [0u64; 64];
        if self.is_dense() {
            let regs = &self.0[HEADER_LEN..];
            for i in 0..REGISTERS {
                hist[usize::from(dense_get(regs, i))] += 1;
            }
        } else {
            self.runs(|_, value, n| hist[usize::from(value)] += n as u64)?;
        }
        Ok(estimate(&hist))
    }

    /// Every register's value (a dense value's; a sparse one is converted first by the
    /// caller).
    pub fn registers(&self) -> Vec<u8> {
        let mut max = [0u8; REGISTERS];
        // A dense value always decodes.
        let _ = self.merge_into(&mut max);
        max.to_vec()
    }

    /// PFDEBUG DECODE's text: the sparse opcodes, `z:len`, `Z:len`, `v:value,len`.
    pub fn decode(&self) -> Result<Bytes, HllError> {
        if self.is_dense() {
            return Err(HllError::NotSparse);
        }
        let parts: Vec<String> = self
            .opcodes()
            .map(|o| match o {
                Opcode::Zero(n) => format!("z:{n}"),
                Opcode::XZero(n) => format!("Z:{n}"),
                Opcode::Val(v, n) => format!("v:{v},{n}"),
            })
            .collect();
        Ok(Bytes::from(parts.join(" ")))
    }
}

/// The cardinality of registers given one per byte (the union a PFCOUNT of several keys
/// builds).
pub fn count_registers(registers: &[u8; REGISTERS]) -> u64 {
    let mut hist = [0u64; 64];
    for &r in registers.iter() {
        hist[usize::from(r & 63)] += 1;
    }
    estimate(&hist)
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if before == z {
            return z / 3.0;
        }
    }
}

/// Ertl's improved estimator over the histogram of register values, rounded half away from
/// zero. The arithmetic is done in the order Redis does it, so the result is the same double.
fn estimate(hist: &[u64; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - hist[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += hist[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(hist[0] as f64 / m);
    llround(ALPHA_INF * m * m / z) as u64
}

/// C's `llround` on x86-64: half away from zero, and `i64::MIN` for what no `i64` holds
/// (every register at 63 divides by zero), which Redis then replies as a negative number.
fn llround(x: f64) -> i64 {
    let r = x.round();
    if r >= -(2f64.powi(63)) && r < 2f64.powi(63) {
        r as i64
    } else {
        i64::MIN
    }
}

/// What PFSELFTEST found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelfTestFailure {
    /// A dense register read back another value than was written.
    #[error("register {index} should be {expected} but is {got}")]
    Register { index: usize, expected: u8, got: u8 },
    /// A small HyperLogLog was not sparse.
    #[error("sparse encoding not used")]
    NotSparse,
    /// The sparse and dense encodings of the same elements estimated differently.
    #[error("dense/sparse disagree")]
    Disagree,
    /// An estimate was off by more than six standard errors.
    #[error("too big error. card:{card} abserr:{abserr}")]
    TooBigError { card: u64, abserr: u64 },
}

/// PFSELFTEST: dense registers keep what is written without touching their neighbours, and
/// 10,000,000 distinct elements added to a dense and a sparse HyperLogLog give equal
/// estimates within six standard errors at each power of ten. `seed` picks the values.
pub fn self_test(seed: u64, sparse_max: usize) -> Result<(), SelfTestFailure> {
    run_self_test(seed, sparse_max, 1000, 10_000_000)
}

fn run_self_test(
    seed: u64,
    sparse_max: usize,
    rounds: usize,
    elements: u64,
) -> Result<(), SelfTestFailure> {
    let mut rng = seed;
    let mut next = move || {
        // splitmix64
        rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut dense = Hll::new_dense();
    let mut expected = vec![0u8; REGISTERS];
    for _ in 0..rounds {
        for (i, e) in expected.iter_mut().enumerate() {
            *e = (next() & u64::from(REGISTER_MAX)) as u8;
            dense_put(&mut dense.0[HEADER_LEN..], i, *e);
        }
        for (i, &e) in expected.iter().enumerate() {
            let got = dense_get(&dense.0[HEADER_LEN..], i);
            if got != e {
                return Err(SelfTestFailure::Register {
                    index: i,
                    expected: e,
                    got,
                });
            }
        }
    }
    let mut dense = Hll::new_dense();
    let mut sparse = Hll::new();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let salt = next();
    let mut checkpoint = 1u64;
    for j in 1..=elements {
        let element = (j ^ salt).to_le_bytes();
        let (index, value) = pattern(&element);
        dense.dense_raise(index, value);
        sparse
            .raise(index, value, sparse_max)
            .map_err(|_| SelfTestFailure::Disagree)?;
        if j != checkpoint {
            continue;
        }
        if j < (sparse_max / 2) as u64 && sparse.is_dense() {
            return Err(SelfTestFailure::NotSparse);
        }
        let card = dense.count().map_err(|_| SelfTestFailure::Disagree)?;
        if sparse.count() != Ok(card) {
            return Err(SelfTestFailure::Disagree);
        }
        let abserr = checkpoint.abs_diff(card);
        // A handful of elements can collide often enough to be one off.
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(SelfTestFailure::TooBigError {
                card: checkpoint,
                abserr,
            });
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add_all(h: &mut Hll, items: impl IntoIterator<Item = Vec<u8>>) -> bool {
        let mut changed = false;
        for e in items {
            changed |= h.add(&e, DEFAULT_SPARSE_MAX_BYTES).unwrap();
        }
        changed
    }

    #[test]
    fn elements_fall_where_redis_puts_them() {
        // Register and value of single elements, as redis-server 7.0's PFDEBUG DECODE shows
        // them (the last element's length exercises the 8-byte blocks and the tail).
        for (e, reg, val) in [
            (&b"a"[..], 12711, 2),
            (b"b", 15780, 1),
            (b"c", 8436, 1),
            (b"hello", 9216, 1),
            (b"", 5938, 2),
            (b"foobar123", 638, 1),
        ] {
            assert_eq!(pattern(e), (reg, val), "{e:?}");
        }
    }

    #[test]
    fn new_value_is_redis_empty_hll() {
        let h = Hll::new();
        let mut want = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        want.extend_from_slice(&[0x7f, 0xff]);
        assert_eq!(h.as_bytes(), &want[..]);
        assert_eq!(h.count(), Ok(0));
        assert_eq!(h.decode().unwrap(), Bytes::from_static(b"Z:16384"));
    }

    #[test]
    fn dense_registers_round_trip_without_touching_neighbours() {
        let mut regs = vec![0u8; REGISTERS * BITS / 8];
        for i in 0..REGISTERS {
            dense_put(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
        dense_put(&mut regs, 5, 0);
        assert_eq!(dense_get(&regs, 4), 4);
        assert_eq!(dense_get(&regs, 6), 6);
        assert_eq!(
            dense_get(&regs, REGISTERS - 1),
            ((REGISTERS - 1) % 64) as u8
        );
    }

    #[test]
    fn sparse_and_dense_agree_and_promotion_keeps_registers() {
        let items: Vec<Vec<u8>> = (0..2000u32).map(|i| format!("e{i}").into_bytes()).collect();
        let mut sparse = Hll::new();
        let mut dense = Hll::new();
        dense.to_dense().unwrap();
        for (n, e) in items.iter().enumerate() {
            let a = sparse.add(e, 1 << 20).unwrap();
            let b = dense.add(e, 1 << 20).unwrap();
            assert_eq!(a, b, "element {n}");
        }
        assert!(!sparse.is_dense());
        assert_eq!(sparse.count(), dense.count());
        let before = sparse.count().unwrap();
        assert!((1900..2100).contains(&before), "{before}");
        let mut promoted = sparse.clone();
        assert_eq!(promoted.to_dense(), Ok(true));
        assert_eq!(promoted.registers(), dense.registers());
        // Sparse cache bytes are carried over.
        assert_eq!(&promoted.as_bytes()[..4], b"HYLL");
        assert_eq!(promoted.as_bytes().len(), DENSE_LEN);
        // Every opcode's registers add up, and the sparse walk decodes.
        let mut max = [0u8; REGISTERS];
        sparse.merge_into(&mut max).unwrap();
        assert_eq!(max.to_vec(), dense.registers());
    }

    #[test]
    fn sparse_promotes_past_max_bytes() {
        let mut h = Hll::new();
        let mut n = 0u32;
        while !h.is_dense() {
            h.add(format!("x{n}").as_bytes(), 300).unwrap();
            assert!(h.as_bytes().len() <= 300 || h.is_dense());
            n += 1;
        }
        assert!(n > 20, "{n}");
        assert_eq!(h.as_bytes().len(), DENSE_LEN);
        assert!(h.count().unwrap() > 0);
    }

    #[test]
    fn values_above_32_promote() {
        let mut h = Hll::new();
        assert_eq!(h.raise(7, 33, DEFAULT_SPARSE_MAX_BYTES), Ok(true));
        assert!(h.is_dense());
        assert_eq!(h.registers()[7], 33);
    }

    #[test]
    fn adjacent_equal_values_merge() {
        let mut h = Hll::new();
        for i in 0..4 {
            h.raise(100 + i, 3, DEFAULT_SPARSE_MAX_BYTES).unwrap();
        }
        assert_eq!(
            h.decode().unwrap(),
            Bytes::from_static(b"Z:100 v:3,4 Z:16280")
        );
        h.raise(104, 3, DEFAULT_SPARSE_MAX_BYTES).unwrap();
        assert_eq!(
            h.decode().unwrap(),
            Bytes::from_static(b"Z:100 v:3,4 v:3,1 Z:16279")
        );
        h.raise(101, 5, DEFAULT_SPARSE_MAX_BYTES).unwrap();
        assert_eq!(
            h.decode().unwrap(),
            Bytes::from_static(b"Z:100 v:3,1 v:5,1 v:3,3 Z:16279")
        );
        h.raise(20, 2, DEFAULT_SPARSE_MAX_BYTES).unwrap();
        assert_eq!(
            h.decode().unwrap(),
            Bytes::from_static(b"z:20 v:2,1 Z:79 v:3,1 v:5,1 v:3,3 Z:16279")
        );
    }

    #[test]
    fn cache_bits() {
        let mut h = Hll::new();
        assert_eq!(h.cached(), Some(0));
        assert!(add_all(&mut h, [b"a".to_vec()]));
        assert_eq!(h.cached(), None);
        assert_eq!(h.as_bytes()[15], 0x80);
        h.set_cached(1);
        assert_eq!(h.cached(), Some(1));
        assert!(!add_all(&mut h, [b"a".to_vec()]));
    }

    #[test]
    fn header_checks() {
        assert_eq!(Hll::check(b"HYLL"), Err(HllError::NotHll));
        assert_eq!(
            Hll::check(b"HYLX\x01\0\0\0\0\0\0\0\0\0\0\0"),
            Err(HllError::NotHll)
        );
        assert_eq!(
            Hll::check(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"),
            Err(HllError::NotHll)
        );
        assert_eq!(
            Hll::check(b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\0\x7f\xff"),
            Err(HllError::NotHll)
        );
        assert_eq!(Hll::check(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0"), Ok(()));
        let h = Hll::from_value(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0").unwrap();
        // No opcodes: nothing covers the registers.
        assert_eq!(h.count(), Err(HllError::Corrupt));
        assert_eq!(h.clone().to_dense(), Err(HllError::Corrupt));
        assert_eq!(h.clone().add(b"a", 3000), Err(HllError::Corrupt));
    }

    #[test]
    fn estimator_of_empty_and_full() {
        assert_eq!(count_registers(&[0; REGISTERS]), 0);
        // redis-server's replies for dense values of these registers.
        assert_eq!(count_registers(&[1; REGISTERS]), 23637);
        assert_eq!(count_registers(&[63; REGISTERS]), 1 << 63);
    }

    #[test]
    fn self_test_passes() {
        // The first 100,000 elements of PFSELFTEST's 10,000,000 (a debug build is slow).
        for seed in 0..3 {
            assert_eq!(
                run_self_test(seed, DEFAULT_SPARSE_MAX_BYTES, 20, 100_000),
                Ok(())
            );
        }
    }

    mod damaged {
        use super::*;
        use proptest::prelude::*;

        fn valid(items: u32, dense: bool) -> Vec<u8> {
            let mut h = Hll::new();
            for i in 0..items {
                h.add(format!("{i}").as_bytes(), DEFAULT_SPARSE_MAX_BYTES)
                    .unwrap();
            }
            if dense {
                h.to_dense().unwrap();
            }
            h.into_bytes()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            /// Damaged bytes are refused or read, never a panic; whatever is accepted stays
            /// a HyperLogLog after additions and merges.
            #[test]
            fn damaged_values_never_panic(
                items in 0u32..400,
                dense in any::<bool>(),
                edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..6),
                cut in proptest::option::of(any::<u16>()),
                extra in proptest::collection::vec(any::<u8>(), 0..8),
                adds in proptest::collection::vec(any::<u32>(), 0..20),
                sparse_max in 16usize..4000,
            ) {
                let mut v = valid(items, dense);
                for (pos, b) in edits {
                    let n = v.len();
                    v[usize::from(pos) % n] = b;
                }
                if let Some(c) = cut {
                    let n = v.len();
                    v.truncate(usize::from(c) % (n + 1));
                }
                v.extend_from_slice(&extra);
                let Ok(mut h) = Hll::from_value(&v) else { return Ok(()); };
                let _ = h.count();
                let _ = h.decode();
                let mut max = [0u8; REGISTERS];
                let _ = h.merge_into(&mut max);
                let _ = count_registers(&max);
                for a in adds {
                    if h.add(&a.to_le_bytes(), sparse_max).is_err() {
                        break;
                    }
                    prop_assert!(Hll::check(h.as_bytes()).is_ok());
                }
                let mut d = h.clone();
                if d.to_dense().is_ok() {
                    prop_assert_eq!(d.as_bytes().len(), DENSE_LEN);
                    prop_assert!(d.count().is_ok());
                }
            }

            /// Any element sequence: sparse and dense give the same registers and estimate.
            #[test]
            fn encodings_agree(items in proptest::collection::vec(any::<u64>(), 0..300)) {
                let mut s = Hll::new();
                let mut d = Hll::new();
                d.to_dense().unwrap();
                for i in &items {
                    let a = s.add(&i.to_le_bytes(), DEFAULT_SPARSE_MAX_BYTES).unwrap();
                    let b = d.add(&i.to_le_bytes(), DEFAULT_SPARSE_MAX_BYTES).unwrap();
                    prop_assert_eq!(a, b);
                }
                prop_assert_eq!(s.count(), d.count());
                let mut max = [0u8; REGISTERS];
                s.merge_into(&mut max).unwrap();
                prop_assert_eq!(max.to_vec(), d.registers());
            }
        }
    }
}
