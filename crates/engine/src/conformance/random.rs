//! Model-based testing: random operation sequences run on the engine and on
//! [`ModelEngine`], every observation compared.
//!
//! Operations are plain data ([`Op`]) built from small descriptors ([`KeySpec`],
//! [`ValueSpec`]) rather than raw bytes, so a failing sequence prints compactly and can be
//! pasted into a regression test for [`run_ops_against_model`]. Sequences come from a seed
//! ([`random_ops_against_model`], replayable from the seed and length alone) or from proptest
//! ([`proptest_ops_against_model`], which shrinks a failure to a short sequence).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{entries_diff, show, show_opt, EngineFactory, Kv, SnapOf};
use crate::model::{ModelEngine, ModelIterator, ModelSnapshot};
use crate::{EngineIterator, IterOptions, KvEngine, WriteBatch, WriteOptions};

/// Seeds [`check_random_ops`] runs.
pub const RANDOM_SEEDS: [u64; 4] = [1, 2, 3, 0x00C0_FFEE];
/// Operations per seed in [`check_random_ops`].
pub const RANDOM_OPS_PER_SEED: usize = 500;

/// Names one key of a small key space, so that puts, deletes and reads collide.
///
/// The key is a base key chosen by `id` followed by `pad` bytes of `'~'`. The bases include the
/// empty key, `0x00`/`0xff` bytes, keys that are prefixes of one another, `0x7f` next to `0x80`,
/// and ordinary text keys; a non-zero `pad` makes long keys (up to a few KiB) that extend
/// their base, so they are prefixes of one another too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// Which base key (taken modulo the size of the key space).
    pub id: u8,
    /// How many `'~'` bytes follow the base.
    pub pad: u16,
}

/// Base keys with edge-case bytes; ids past them name text keys `key16`..`key39`.
const BASE_KEYS: [&[u8]; 16] = [
    b"",
    b"\x00",
    b"\x00\x00",
    b"\x00\xff",
    b"a",
    b"a\x00",
    b"aa",
    b"ab",
    b"abc",
    b"b",
    b"k\x7f",
    b"k\x80",
    b"k\xff",
    b"\xff",
    b"\xff\x00",
    b"\xff\xff",
];
/// Number of distinct base keys.
const KEY_SPACE: u8 = 40;
/// Pads used for long keys: few distinct lengths, so long keys collide too.
const PADS: [u16; 6] = [1, 2, 3, 100, 1000, 4000];

impl KeySpec {
    /// The key's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let id = self.id % KEY_SPACE;
        let mut k = match BASE_KEYS.get(usize::from(id)) {
            Some(b) => b.to_vec(),
            None => format!("key{id:02}").into_bytes(),
        };
        k.resize(k.len() + usize::from(self.pad), b'~');
        k
    }
}

/// Describes a value: `len` bytes of a pattern seeded by `tag`.
///
/// Tags are random, so two writes of the same key almost always differ, and a stale read shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueSpec {
    /// Size in bytes.
    pub len: u32,
    /// Seed of the content.
    pub tag: u32,
}

impl ValueSpec {
    /// The value's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        super::pattern(u64::from(self.tag), self.len as usize)
    }
}

/// One operation of a batch: a put (`Some` value) or a delete (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    /// Key written or deleted.
    pub key: KeySpec,
    /// Value put; `None` deletes.
    pub value: Option<ValueSpec>,
}

/// One iterator move of [`Op::Walk`] and [`Op::MoveIter`]. `Next` and `Prev` are skipped while
/// the iterator is invalid (the contract requires `valid()` for them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// `seek_to_first`.
    SeekToFirst,
    /// `seek_to_last`.
    SeekToLast,
    /// `seek(key)`.
    Seek(KeySpec),
    /// `seek_for_prev(key)`.
    SeekForPrev(KeySpec),
    /// `next`.
    Next,
    /// `prev`.
    Prev,
}

/// One step of a model-based run.
///
/// Reads name a snapshot by `snapshot: Option<u8>`: `None` reads the latest state, `Some(i)`
/// the live snapshot `i % count` (the latest state when none is live). Live iterators are
/// named the same way. At most [`MAX_LIVE`] snapshots and iterators are kept each; taking one
/// more releases the oldest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `put`.
    Put { key: KeySpec, value: ValueSpec },
    /// `delete`.
    Delete { key: KeySpec },
    /// `write` of a batch (keys often repeat inside it: the last operation wins).
    Batch {
        entries: Vec<BatchEntry>,
        sync: bool,
    },
    /// `get` or `get_at`, compared with the model.
    Get { key: KeySpec, snapshot: Option<u8> },
    /// `multi_get` or `multi_get_at` of several keys (they may repeat), compared with the
    /// model.
    MultiGet {
        keys: Vec<KeySpec>,
        snapshot: Option<u8>,
    },
    /// A full scan of `[lower, upper)` in one direction, compared with the model's.
    Scan {
        lower: Option<KeySpec>,
        upper: Option<KeySpec>,
        snapshot: Option<u8>,
        reverse: bool,
    },
    /// Opens an iterator, applies `moves` comparing after each, drops it.
    Walk {
        lower: Option<KeySpec>,
        upper: Option<KeySpec>,
        snapshot: Option<u8>,
        moves: Vec<Move>,
    },
    /// Opens an iterator kept across later operations (it must keep its view).
    OpenIter {
        lower: Option<KeySpec>,
        upper: Option<KeySpec>,
        snapshot: Option<u8>,
    },
    /// Moves a live iterator, comparing after each move.
    MoveIter { iter: u8, moves: Vec<Move> },
    /// Drops a live iterator.
    CloseIter { iter: u8 },
    /// Takes a snapshot, kept for later reads.
    TakeSnapshot,
    /// Drops a live snapshot.
    ReleaseSnapshot { snapshot: u8 },
    /// `flush`.
    Flush,
    /// `compact_range` (bounds swapped if needed so that `start <= end`).
    CompactRange {
        start: Option<KeySpec>,
        end: Option<KeySpec>,
    },
    /// Drops every iterator, snapshot and the engine, reopens it from its directory and
    /// compares full scans.
    Reopen,
}

/// Most snapshots, and most live iterators, a run keeps at once.
pub const MAX_LIVE: usize = 6;

/// The operations [`random_ops_against_model`] runs for `seed`.
pub fn generate_ops(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| gen_op(&mut rng)).collect()
}

/// The operation [`proptest_ops_against_model`] derives from one seed (its cases are lists
/// of such seeds, so a failing case replays as `seeds.map(op_from_seed)`).
pub fn op_from_seed(seed: u64) -> Op {
    gen_op(&mut StdRng::seed_from_u64(seed))
}

fn gen_key(rng: &mut StdRng) -> KeySpec {
    KeySpec {
        id: rng.gen_range(0..KEY_SPACE),
        pad: if rng.gen_ratio(1, 12) {
            PADS[rng.gen_range(0..PADS.len())]
        } else {
            0
        },
    }
}

fn gen_value(rng: &mut StdRng) -> ValueSpec {
    let len = match rng.gen_range(0..100) {
        0..=9 => 0,
        10..=64 => rng.gen_range(1..=32),
        65..=84 => rng.gen_range(33..=1024),
        85..=97 => rng.gen_range(1025..=16 * 1024),
        _ => 100 * 1024,
    };
    ValueSpec {
        len,
        tag: rng.gen(),
    }
}

fn gen_bound(rng: &mut StdRng) -> Option<KeySpec> {
    (!rng.gen_ratio(3, 10)).then(|| gen_key(rng))
}

fn gen_snapshot(rng: &mut StdRng) -> Option<u8> {
    rng.gen_ratio(2, 5).then(|| rng.gen())
}

fn gen_moves(rng: &mut StdRng) -> Vec<Move> {
    let n = rng.gen_range(1..=12);
    (0..n)
        .map(|_| match rng.gen_range(0..20) {
            0 => Move::SeekToFirst,
            1 => Move::SeekToLast,
            2..=3 => Move::Seek(gen_key(rng)),
            4..=5 => Move::SeekForPrev(gen_key(rng)),
            6..=12 => Move::Next,
            _ => Move::Prev,
        })
        .collect()
}

fn gen_op(rng: &mut StdRng) -> Op {
    match rng.gen_range(0..100) {
        0..=24 => Op::Put {
            key: gen_key(rng),
            value: gen_value(rng),
        },
        25..=32 => Op::Delete { key: gen_key(rng) },
        33..=42 => {
            // Keys from a pool of four, so a batch often touches a key more than once.
            let pool: Vec<KeySpec> = (0..4).map(|_| gen_key(rng)).collect();
            let n = rng.gen_range(1..=12);
            let entries = (0..n)
                .map(|_| BatchEntry {
                    key: pool[rng.gen_range(0..pool.len())],
                    value: (!rng.gen_ratio(1, 4)).then(|| gen_value(rng)),
                })
                .collect();
            Op::Batch {
                entries,
                sync: rng.gen_ratio(1, 10),
            }
        }
        43..=51 => Op::Get {
            key: gen_key(rng),
            snapshot: gen_snapshot(rng),
        },
        52..=57 => Op::MultiGet {
            keys: (0..rng.gen_range(0..=12)).map(|_| gen_key(rng)).collect(),
            snapshot: gen_snapshot(rng),
        },
        58..=65 => Op::Scan {
            lower: gen_bound(rng),
            upper: gen_bound(rng),
            snapshot: gen_snapshot(rng),
            reverse: rng.gen(),
        },
        66..=73 => Op::Walk {
            lower: gen_bound(rng),
            upper: gen_bound(rng),
            snapshot: gen_snapshot(rng),
            moves: gen_moves(rng),
        },
        74..=76 => Op::OpenIter {
            lower: gen_bound(rng),
            upper: gen_bound(rng),
            snapshot: gen_snapshot(rng),
        },
        77..=82 => Op::MoveIter {
            iter: rng.gen(),
            moves: gen_moves(rng),
        },
        83..=84 => Op::CloseIter { iter: rng.gen() },
        85..=88 => Op::TakeSnapshot,
        89..=91 => Op::ReleaseSnapshot {
            snapshot: rng.gen(),
        },
        92..=94 => Op::Flush,
        95..=97 => Op::CompactRange {
            start: gen_bound(rng),
            end: gen_bound(rng),
        },
        _ => Op::Reopen,
    }
}

/// Runs [`generate_ops`]`(seed, ops)` on the engine in `dir` (which must not hold a database
/// yet) and on a [`ModelEngine`], comparing every observation, then reopens and compares the
/// final state.
///
/// # Panics
/// On the first difference or engine error, naming the seed and the index of the operation,
/// so the run can be replayed (`generate_ops(seed, index + 1)` lists the operations up to it).
pub fn random_ops_against_model<F: EngineFactory>(f: &F, dir: &Path, seed: u64, ops: usize) {
    let list = generate_ops(seed, ops);
    if let Err(e) = run_ops_against_model(f, dir, &list) {
        panic!(
            "random_ops_against_model(seed = {seed}, ops = {ops}) failed at {e}\n\
             replay: random_ops_against_model(factory, dir, {seed}, {ops}); \
             generate_ops({seed}, {ops}) lists the operations"
        );
    }
}

/// Runs `ops` on the engine in `dir` (which must not hold a database yet) and on a
/// [`ModelEngine`], comparing every observation; then drops and reopens the engine and
/// compares the final state.
///
/// Returns the first difference as `"op #index <op>: <what differed>"`.
pub fn run_ops_against_model<F: EngineFactory>(
    f: &F,
    dir: &Path,
    ops: &[Op],
) -> std::result::Result<(), String> {
    let engine = f
        .open(dir)
        .map_err(|e| format!("opening the engine in {} failed: {e}", dir.display()))?;
    let mut r = Runner::<F> {
        factory: f,
        dir,
        engine: Some(engine),
        model: ModelEngine::new(),
        snaps: Vec::new(),
        iters: Vec::new(),
    };
    for (i, op) in ops.iter().enumerate() {
        r.step(op).map_err(|e| format!("op #{i} {op:?}: {e}"))?;
    }
    let n = ops.len();
    r.compare_everything()
        .map_err(|e| format!("the end (after op #{n}): {e}"))?;
    r.step(&Op::Reopen)
        .map_err(|e| format!("the final reopen (after op #{n}): {e}"))
}

/// [`random_ops_against_model`] for each of [`RANDOM_SEEDS`], [`RANDOM_OPS_PER_SEED`]
/// operations each, in a subdirectory per seed.
pub fn check_random_ops<F: EngineFactory>(f: &F, dir: &Path) {
    for seed in RANDOM_SEEDS {
        random_ops_against_model(
            f,
            &dir.join(format!("seed-{seed}")),
            seed,
            RANDOM_OPS_PER_SEED,
        );
    }
}

/// [`proptest_ops_against_model`] with 16 cases of up to 120 operations.
pub fn check_proptest_ops<F: EngineFactory>(f: &F, dir: &Path) {
    proptest_ops_against_model(f, dir, 16, 120);
}

/// Proptest-driven model-based test: `cases` random sequences of 1 to `max_ops` operations,
/// each run by [`run_ops_against_model`] in a fresh subdirectory of `dir` (removed after a
/// passing case). A failure is shrunk to a short sequence and printed with the seeds that
/// replay it.
///
/// Deterministic by default (a fixed proptest seed); set `PROPTEST_RNG_SEED` to explore other
/// sequences.
///
/// # Panics
/// With the shrunk sequence, if any case fails.
pub fn proptest_ops_against_model<F: EngineFactory>(f: &F, dir: &Path, cases: u32, max_ops: usize) {
    let mut config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(0x5157_a170);
    }
    let mut runner = TestRunner::new(config);
    // Each case is a list of per-operation seeds: shrinking drops operations (and simplifies
    // the remaining ones by shrinking their seeds).
    let strategy = proptest::collection::vec(proptest::num::u64::ANY, 1..=max_ops.max(1));
    let to_ops = |seeds: &[u64]| -> Vec<Op> { seeds.iter().map(|&s| op_from_seed(s)).collect() };
    let case = AtomicUsize::new(0);
    let result = runner.run(&strategy, |seeds| {
        let case_dir = dir.join(format!("case-{}", case.fetch_add(1, Ordering::Relaxed)));
        let outcome = run_ops_against_model(f, &case_dir, &to_ops(&seeds));
        if outcome.is_ok() {
            // Best effort: a leftover directory only costs disk space.
            let _ = std::fs::remove_dir_all(&case_dir);
        }
        outcome.map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, seeds)) => {
            let listing: Vec<String> = to_ops(&seeds)
                .iter()
                .enumerate()
                .map(|(i, op)| format!("  #{i} {op:?}"))
                .collect();
            panic!(
                "proptest_ops_against_model: {reason}\n\
                 minimal failing sequence, {} ops (replay: run_ops_against_model(factory, dir, \
                 &{seeds:?}.map(op_from_seed))):\n{}",
                seeds.len(),
                listing.join("\n")
            )
        }
        Err(TestError::Abort(reason)) => panic!("proptest_ops_against_model aborted: {reason}"),
    }
}

type EngineIter<F> = <<F as EngineFactory>::Engine as KvEngine>::Iter;

/// Engine and model side by side, with the snapshots and iterators the run keeps open.
struct Runner<'a, F: EngineFactory> {
    factory: &'a F,
    dir: &'a Path,
    /// `None` only while reopening.
    engine: Option<F::Engine>,
    model: ModelEngine,
    snaps: Vec<(SnapOf<F>, ModelSnapshot)>,
    iters: Vec<(EngineIter<F>, ModelIterator)>,
}

type Outcome = std::result::Result<(), String>;

impl<F: EngineFactory> Runner<'_, F> {
    fn engine(&self) -> std::result::Result<&F::Engine, String> {
        self.engine
            .as_ref()
            .ok_or_else(|| "the engine is closed after a failed reopen".to_string())
    }

    fn pick_snapshot(&self, sel: Option<u8>) -> Option<usize> {
        let n = self.snaps.len();
        sel.filter(|_| n > 0).map(|i| usize::from(i) % n)
    }

    fn step(&mut self, op: &Op) -> Outcome {
        let opts = WriteOptions::default();
        match op {
            Op::Put { key, value } => {
                let (k, v) = (key.bytes(), value.bytes());
                self.engine()?
                    .put(&k, &v, opts)
                    .map_err(|e| format!("engine put failed: {e}"))?;
                self.model
                    .put(&k, &v, opts)
                    .map_err(|e| format!("model put failed: {e}"))
            }
            Op::Delete { key } => {
                let k = key.bytes();
                self.engine()?
                    .delete(&k, opts)
                    .map_err(|e| format!("engine delete failed: {e}"))?;
                self.model
                    .delete(&k, opts)
                    .map_err(|e| format!("model delete failed: {e}"))
            }
            Op::Batch { entries, sync } => {
                let mut b = WriteBatch::new();
                for e in entries {
                    match &e.value {
                        Some(v) => b.put(&e.key.bytes(), &v.bytes()),
                        None => b.delete(&e.key.bytes()),
                    }
                }
                self.engine()?
                    .write(b.clone(), WriteOptions { sync: *sync })
                    .map_err(|e| format!("engine write failed: {e}"))?;
                self.model
                    .write(b, opts)
                    .map_err(|e| format!("model write failed: {e}"))
            }
            Op::Get { key, snapshot } => {
                let k = key.bytes();
                let (got, want) = match self.pick_snapshot(*snapshot) {
                    Some(i) => (
                        self.engine()?.get_at(&self.snaps[i].0, &k),
                        self.model.get_at(&self.snaps[i].1, &k),
                    ),
                    None => (self.engine()?.get(&k), self.model.get(&k)),
                };
                let got = got.map_err(|e| format!("engine get failed: {e}"))?;
                let want = want.map_err(|e| format!("model get failed: {e}"))?;
                if got == want {
                    Ok(())
                } else {
                    Err(format!(
                        "get({}) returned {}, the model has {}",
                        show(&k),
                        show_opt(got.as_deref()),
                        show_opt(want.as_deref())
                    ))
                }
            }
            Op::MultiGet { keys, snapshot } => {
                let ks: Vec<Vec<u8>> = keys.iter().map(KeySpec::bytes).collect();
                let refs: Vec<&[u8]> = ks.iter().map(Vec::as_slice).collect();
                let (got, want) = match self.pick_snapshot(*snapshot) {
                    Some(i) => (
                        self.engine()?.multi_get_at(&self.snaps[i].0, &refs),
                        self.model.multi_get_at(&self.snaps[i].1, &refs),
                    ),
                    None => (self.engine()?.multi_get(&refs), self.model.multi_get(&refs)),
                };
                let got = got.map_err(|e| format!("engine multi_get failed: {e}"))?;
                let want = want.map_err(|e| format!("model multi_get failed: {e}"))?;
                match (0..ks.len()).find(|&j| got.get(j) != want.get(j)) {
                    None if got.len() == want.len() => Ok(()),
                    None => Err(format!(
                        "multi_get of {} keys returned {} values",
                        ks.len(),
                        got.len()
                    )),
                    Some(j) => Err(format!(
                        "multi_get: key {j} ({}) read {}, the model has {}",
                        show(&ks[j]),
                        show_opt(got.get(j).and_then(|v| v.as_deref())),
                        show_opt(want.get(j).and_then(|v| v.as_deref()))
                    )),
                }
            }
            Op::Scan {
                lower,
                upper,
                snapshot,
                reverse,
            } => {
                let (mut ei, mut mi) = self.open_iters(*lower, *upper, *snapshot)?;
                let got = scan(&mut ei, *reverse)?;
                let want = scan(&mut mi, *reverse)?;
                match entries_diff(&got, &want) {
                    None => Ok(()),
                    Some(d) => Err(format!(
                        "{} scan differs from the model: {d}",
                        if *reverse { "backward" } else { "forward" }
                    )),
                }
            }
            Op::Walk {
                lower,
                upper,
                snapshot,
                moves,
            } => {
                let (mut ei, mut mi) = self.open_iters(*lower, *upper, *snapshot)?;
                apply_moves(&mut ei, &mut mi, moves)
            }
            Op::OpenIter {
                lower,
                upper,
                snapshot,
            } => {
                let pair = self.open_iters(*lower, *upper, *snapshot)?;
                if self.iters.len() >= MAX_LIVE {
                    self.iters.remove(0);
                }
                self.iters.push(pair);
                Ok(())
            }
            Op::MoveIter { iter, moves } => {
                let n = self.iters.len();
                if n == 0 {
                    return Ok(());
                }
                let (ei, mi) = &mut self.iters[usize::from(*iter) % n];
                apply_moves(ei, mi, moves)
            }
            Op::CloseIter { iter } => {
                let n = self.iters.len();
                if n > 0 {
                    self.iters.remove(usize::from(*iter) % n);
                }
                Ok(())
            }
            Op::TakeSnapshot => {
                let pair = (self.engine()?.snapshot(), self.model.snapshot());
                if self.snaps.len() >= MAX_LIVE {
                    self.snaps.remove(0);
                }
                self.snaps.push(pair);
                Ok(())
            }
            Op::ReleaseSnapshot { snapshot } => {
                if let Some(i) = self.pick_snapshot(Some(*snapshot)) {
                    self.snaps.remove(i);
                }
                Ok(())
            }
            Op::Flush => self
                .engine()?
                .flush()
                .map_err(|e| format!("engine flush failed: {e}")),
            Op::CompactRange { start, end } => {
                let (mut s, mut e) = (start.map(|k| k.bytes()), end.map(|k| k.bytes()));
                if let (Some(a), Some(b)) = (&s, &e) {
                    if a > b {
                        std::mem::swap(&mut s, &mut e);
                    }
                }
                self.engine()?
                    .compact_range(s.as_deref(), e.as_deref())
                    .map_err(|err| format!("engine compact_range failed: {err}"))
            }
            Op::Reopen => {
                self.iters.clear();
                self.snaps.clear();
                drop(self.engine.take());
                let engine = self.factory.open(self.dir).map_err(|e| {
                    format!("reopening the engine in {} failed: {e}", self.dir.display())
                })?;
                self.engine = Some(engine);
                self.compare_everything()
                    .map_err(|e| format!("after reopen: {e}"))
            }
        }
    }

    fn open_iters(
        &self,
        lower: Option<KeySpec>,
        upper: Option<KeySpec>,
        snapshot: Option<u8>,
    ) -> std::result::Result<(EngineIter<F>, ModelIterator), String> {
        let (lower, upper) = (lower.map(|k| k.bytes()), upper.map(|k| k.bytes()));
        let snap = self.pick_snapshot(snapshot);
        let engine_iter = self
            .engine()?
            .iter(IterOptions {
                lower: lower.clone(),
                upper: upper.clone(),
                snapshot: snap.map(|i| self.snaps[i].0.clone()),
            })
            .map_err(|e| format!("engine iter failed: {e}"))?;
        let model_iter = self
            .model
            .iter(IterOptions {
                lower,
                upper,
                snapshot: snap.map(|i| self.snaps[i].1.clone()),
            })
            .map_err(|e| format!("model iter failed: {e}"))?;
        Ok((engine_iter, model_iter))
    }

    /// Full forward and backward scans of the latest state.
    fn compare_everything(&self) -> Outcome {
        for reverse in [false, true] {
            let (mut ei, mut mi) = self.open_iters(None, None, None)?;
            let got = scan(&mut ei, reverse)?;
            let want = scan(&mut mi, reverse)?;
            if let Some(d) = entries_diff(&got, &want) {
                return Err(format!(
                    "full {} scan differs from the model: {d}",
                    if reverse { "backward" } else { "forward" }
                ));
            }
        }
        Ok(())
    }
}

/// Every entry of an iterator in one direction.
fn scan<I: EngineIterator>(it: &mut I, reverse: bool) -> std::result::Result<Vec<Kv>, String> {
    let mut out = Vec::new();
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status()
        .map_err(|e| format!("iterator status is an error: {e}"))?;
    Ok(out)
}

/// Applies `moves` to both iterators, comparing position, key and value after each.
fn apply_moves<I: EngineIterator>(ei: &mut I, mi: &mut ModelIterator, moves: &[Move]) -> Outcome {
    for (n, m) in moves.iter().enumerate() {
        if matches!(m, Move::Next | Move::Prev) && !mi.valid() {
            continue;
        }
        match m {
            Move::SeekToFirst => {
                ei.seek_to_first();
                mi.seek_to_first();
            }
            Move::SeekToLast => {
                ei.seek_to_last();
                mi.seek_to_last();
            }
            Move::Seek(k) => {
                let k = k.bytes();
                ei.seek(&k);
                mi.seek(&k);
            }
            Move::SeekForPrev(k) => {
                let k = k.bytes();
                ei.seek_for_prev(&k);
                mi.seek_for_prev(&k);
            }
            Move::Next => {
                ei.next();
                mi.next();
            }
            Move::Prev => {
                ei.prev();
                mi.prev();
            }
        }
        ei.status()
            .map_err(|e| format!("move #{n} ({m:?}): iterator status is an error: {e}"))?;
        let got = ei.valid().then(|| (ei.key(), ei.value()));
        let want = mi.valid().then(|| (mi.key(), mi.value()));
        if got != want {
            let fmt = |kv: Option<(&[u8], &[u8])>| {
                kv.map_or("invalid".to_string(), |(k, v)| {
                    format!("{} => {}", show(k), show(v))
                })
            };
            return Err(format!(
                "after move #{n} ({m:?}) the iterator is at {}, the model at {}",
                fmt(got),
                fmt(want)
            ));
        }
    }
    Ok(())
}
