//! Random draws of live entries (`Db::sampler`): each live user key of the given ranges is
//! equally likely, whatever the gaps between keys and however the keys are spread over the
//! memtables and tables.
//!
//! A draw picks a *position* uniformly among the positions the sampler counts, reads the
//! entry there, and keeps it only if it is what a read of its user key finds: the newest
//! version visible at the sampler's sequence, found first in the same source (the first
//! memtable or table, in read order, that holds a version of the key), and a put. Positions:
//!
//! - a memtable counts every entry it held when the sampler was made, by insertion order
//!   (`MemTable::entry_at`); an entry outside the ranges is rejected;
//! - a table counts, per range, every entry of the data blocks that may hold keys of the
//!   range, numbered through the table's `block_entries` property (each block's first
//!   entry number); an entry outside the range is rejected.
//!
//! Every entry of every range is therefore counted exactly once per source holding it (the
//! ranges are disjoint) and drawn with the same probability, and exactly one entry per live
//! key passes the check, so a draw that keeps an entry keeps each live key with the same
//! probability. Rejected draws are the cost: shadowed versions, tombstones, and entries
//! outside the ranges in memtables and in the first and last block of a span.
//!
//! A table written before `block_entries` was recorded counts twice its mean entries per
//! block as each block's slots, and a slot past its block's last entry is rejected: an
//! entry past that many in a fuller block is never drawn, so such a table's keys are drawn
//! only nearly uniformly (its next compaction rewrites it with the property).

use std::sync::Arc;

use bytes::Bytes;
use rand::Rng;
use rialto_engine::Result;

use super::{DbInner, SuperVersion};
use crate::cache::table::TableCache;
use crate::key::{self, SequenceNumber, ValueKind, KIND_SEEK};
use crate::memtable::MemTable;
use crate::sstable::properties::TableProperties;
use crate::sstable::TableReader;
use crate::version::{find_file, FileMeta};

/// Where an entry lives, in read order: memtable `i` (0 the active one, then the immutable
/// ones newest first), or a table by file number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Mem(usize),
    Table(u64),
}

/// Positions a draw may land on.
enum Unit {
    /// Every entry of memtable `mem`.
    Mem { mem: usize },
    /// Entries of a table's blocks from `first`, for keys of range `range`.
    Table {
        file: Arc<FileMeta>,
        reader: Arc<TableReader>,
        range: usize,
        first: usize,
        slots: Slots,
    },
}

/// How a table's positions map to its entries.
enum Slots {
    /// Position `p` is the entry numbered `from + p` (the table's `block_entries`).
    Exact { from: u64 },
    /// Each block has this many slots, the first ones its entries (tables written before
    /// `block_entries`).
    PerBlock(u64),
}

/// Draws random live entries of a set of user-key ranges, as of one published state. Made by
/// [`crate::Db::sampler`]; holds its state (and so its files) while it lives.
pub struct Sampler {
    tables: Arc<TableCache>,
    sv: Arc<SuperVersion>,
    seq: SequenceNumber,
    /// Disjoint `[lower, upper)` user-key ranges, sorted.
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// Units by their first position, ascending.
    units: Vec<(u64, Unit)>,
    total: u64,
    /// Blocks read and lookups made so far.
    work: u64,
}

impl Sampler {
    pub(super) fn new(inner: &DbInner, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Sampler> {
        // Sequence first, then the state: the state holds every write up to the sequence.
        let seq = inner.visible_seq.load(std::sync::atomic::Ordering::Acquire);
        let sv = inner.sv.load_full();
        let mut ranges: Vec<(Vec<u8>, Vec<u8>)> =
            ranges.iter().filter(|(l, h)| l < h).cloned().collect();
        ranges.sort();
        if ranges.windows(2).any(|w| w[0].1 > w[1].0) {
            return Err(rialto_engine::Error::InvalidArgument(
                "sample ranges overlap".into(),
            ));
        }
        let mut units = Vec::new();
        let mut total = 0u64;
        if !ranges.is_empty() {
            for (i, m) in memtables(&sv).enumerate() {
                let n = m.len() as u64;
                if n > 0 {
                    units.push((total, Unit::Mem { mem: i }));
                    total += n;
                }
            }
        }
        let version = &sv.version;
        for (r, (lo, hi)) in ranges.iter().enumerate() {
            for level in 0..version.num_levels() {
                // `overlapping` takes its upper bound inclusive; the block span trims it.
                for file in version.overlapping(level, Some(lo), Some(hi)) {
                    let reader = inner.tables.reader(&file)?;
                    let span = reader.blocks_spanning(lo, hi);
                    if span.is_empty() {
                        continue;
                    }
                    let (slots, n) = match &reader.properties().block_starts {
                        // The reader checked there is one start per block, and the total.
                        Some(starts) => (
                            Slots::Exact {
                                from: starts[span.start],
                            },
                            starts[span.end] - starts[span.start],
                        ),
                        None => {
                            let per = per_block(reader.properties());
                            (
                                Slots::PerBlock(per),
                                (span.len() as u64).saturating_mul(per),
                            )
                        }
                    };
                    if n == 0 {
                        continue;
                    }
                    units.push((
                        total,
                        Unit::Table {
                            file,
                            reader,
                            range: r,
                            first: span.start,
                            slots,
                        },
                    ));
                    total = total.saturating_add(n);
                }
            }
        }
        Ok(Sampler {
            tables: Arc::clone(&inner.tables),
            sv,
            seq,
            ranges,
            units,
            total,
            work: 0,
        })
    }

    /// Whether no draw can find anything: the ranges hold no entry in any source.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Positions a draw chooses from (entries and slots).
    pub fn positions(&self) -> u64 {
        self.total
    }

    /// Blocks read and point lookups made by the draws so far: what bounds their cost.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// One draw: a live entry (user key, value), each live key of the ranges with the same
    /// probability, or `None` when the position drawn holds nothing that counts (try again).
    pub fn draw(&mut self, rng: &mut impl Rng) -> Result<Option<(Vec<u8>, Bytes)>> {
        if self.total == 0 {
            return Ok(None);
        }
        let pos = rng.gen_range(0..self.total);
        let i = self.units.partition_point(|(start, _)| *start <= pos) - 1;
        let (start, unit) = &self.units[i];
        let off = pos - start;
        let (ikey, source) = match unit {
            Unit::Mem { mem } => {
                let Some(m) = memtables(&self.sv).nth(*mem) else {
                    return Ok(None);
                };
                let Some((k, _)) = usize::try_from(off).ok().and_then(|o| m.entry_at(o)) else {
                    return Ok(None);
                };
                let Some(p) = key::parse(k) else {
                    return Ok(None);
                };
                if !self.in_ranges(p.user_key) {
                    return Ok(None);
                }
                (k.to_vec(), Source::Mem(*mem))
            }
            Unit::Table {
                file,
                reader,
                range,
                first,
                slots,
            } => {
                let (block, n) = match slots {
                    Slots::Exact { from } => {
                        let starts = reader.properties().block_starts.as_deref().unwrap_or(&[]);
                        let at = from + off;
                        // The block whose entries hold number `at`: the last start <= at.
                        let b = starts.partition_point(|&s| s <= at).saturating_sub(1);
                        (b, (at - starts.get(b).copied().unwrap_or(0)) as usize)
                    }
                    Slots::PerBlock(per) => (first + (off / per) as usize, (off % per) as usize),
                };
                self.work += 1;
                let Some((k, _)) = reader.block_entry(block, n)? else {
                    return Ok(None);
                };
                let Some(p) = key::parse(&k) else {
                    return Ok(None);
                };
                let (lo, hi) = &self.ranges[*range];
                if p.user_key < lo.as_slice() || p.user_key >= hi.as_slice() {
                    return Ok(None);
                }
                (k, Source::Table(file.number))
            }
        };
        let user_key = key::user_key(&ikey);
        self.work += 1;
        Ok(match self.newest(user_key)? {
            Some((found, trailer, Some(value)))
                if found == source && trailer == key::trailer(&ikey) =>
            {
                Some((user_key.to_vec(), value))
            }
            _ => None,
        })
    }

    fn in_ranges(&self, user_key: &[u8]) -> bool {
        let i = self
            .ranges
            .partition_point(|(lo, _)| lo.as_slice() <= user_key);
        i > 0 && user_key < self.ranges[i - 1].1.as_slice()
    }

    /// What a read of `user_key` at the sampler's sequence finds first: its source, its
    /// trailer and its value (`None`: a tombstone). The same order as the engine's reads.
    fn newest(&self, user_key: &[u8]) -> Result<Option<(Source, u64, Option<Bytes>)>> {
        for (i, m) in memtables(&self.sv).enumerate() {
            if let Some((k, v)) = m.newest(user_key, self.seq) {
                let put = key::kind_byte(k) == ValueKind::Put as u8;
                return Ok(Some((
                    Source::Mem(i),
                    key::trailer(k),
                    put.then(|| Bytes::copy_from_slice(v)),
                )));
            }
        }
        let lookup = key::make_internal_key(user_key, self.seq, KIND_SEEK);
        let version = &self.sv.version;
        for f in &version.levels[0] {
            if user_key < f.smallest_user() || user_key > f.largest_user() {
                continue;
            }
            if let Some((t, v)) = self.tables.newest(f, &lookup)? {
                return Ok(Some((Source::Table(f.number), t, v)));
            }
        }
        for files in &version.levels[1..] {
            if let Some(f) = find_file(files, user_key) {
                if let Some((t, v)) = self.tables.newest(f, &lookup)? {
                    return Ok(Some((Source::Table(f.number), t, v)));
                }
            }
        }
        Ok(None)
    }
}

/// The memtables in read order.
fn memtables(sv: &SuperVersion) -> impl Iterator<Item = &Arc<MemTable>> {
    std::iter::once(&sv.mem).chain(sv.imms.iter())
}

/// Slots per block of a table written without `block_entries`: twice its mean entries per
/// block.
fn per_block(p: &TableProperties) -> u64 {
    (2 * p.num_entries.div_ceil(p.num_data_blocks.max(1))).max(1)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rialto_engine::{KvEngine, PipelinedCommit, WriteBatch, WriteOptions};
    use rialto_io::MemFs;

    use super::*;
    use crate::triad::TriadOptions;
    use crate::{Db, Options};

    fn options(fs: &MemFs, triad: TriadOptions) -> Options {
        Options {
            fs: Arc::new(fs.clone()),
            write_buffer_size: 4 << 20,
            target_file_size: 64 << 10,
            max_bytes_for_level_base: 256 << 10,
            // Inline: the tree's shape is a function of the writes.
            max_background_jobs: 0,
            triad,
            ..Options::default()
        }
    }

    fn k(i: u64) -> Vec<u8> {
        format!("k{i:010}").into_bytes()
    }

    /// Short values in the dense run, long ones in the sparse run: its blocks hold a few
    /// entries where the dense run's hold many, so a draw weighted by blocks would show.
    fn v(i: u64, round: u64) -> Vec<u8> {
        let mut out = format!("{round}:{i}:").into_bytes();
        let len = match i {
            0..1_000_000_000 => 5 + (i % 3) * 10,
            1_000_000_000..5_000_000_000 => 120 + (i % 5) * 20,
            _ => 40,
        };
        out.resize(len as usize, b'v');
        out
    }

    fn put(db: &Db, key: &[u8], value: &[u8], model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
        db.put(key, value, WriteOptions::default()).unwrap();
        model.insert(key.to_vec(), value.to_vec());
    }

    fn del(db: &Db, key: &[u8], model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
        db.delete(key, WriteOptions::default()).unwrap();
        model.remove(key);
    }

    /// About 50,000 live keys under `k`, spread unevenly: a dense run, a sparse one across a
    /// wide gap, and a third run in the memtable; overwrites and deletions in later layers;
    /// keys outside the range on both sides. Returns the model of the `k` keys.
    fn uneven(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut m = BTreeMap::new();
        let mut outside = BTreeMap::new();
        for i in 0..36_000 {
            put(db, &k(i), &v(i, 1), &mut m);
            if i % 9_000 == 8_999 {
                // Four level-0 tables, compacted into level 1.
                db.flush().unwrap();
            }
        }
        for i in 0..3_000 {
            put(db, format!("a{i}").as_bytes(), b"out", &mut outside);
        }
        db.flush().unwrap();
        for j in 0..15_000 {
            let i = 1_000_000_000 + j * 99_991;
            put(db, &k(i), &v(i, 2), &mut m);
        }
        for i in (0..36_000).step_by(6) {
            del(db, &k(i), &mut m);
        }
        for i in (1..36_000).step_by(9) {
            put(db, &k(i), &v(i, 3), &mut m);
        }
        db.flush().unwrap();
        for j in 0..5_000 {
            let i = 5_000_000_000 + j * 3;
            put(db, &k(i), &v(i, 4), &mut m);
        }
        for j in (0..15_000).step_by(7) {
            del(db, &k(1_000_000_000 + j * 99_991), &mut m);
        }
        for i in (2..36_000).step_by(11) {
            put(db, &k(i), &v(i, 5), &mut m);
        }
        for i in 0..3_000 {
            put(db, format!("z{i}").as_bytes(), b"out", &mut outside);
        }
        m
    }

    /// Draws `n` live keys with a fixed seed; checks each against the model and counts them
    /// in 100 buckets of consecutive keys (gaps in the key space lie between buckets).
    fn draw_buckets(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, n: u64) -> (Vec<u64>, u64) {
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        let mut s = db.sampler(&[(b"k".to_vec(), b"l".to_vec())]).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let mut buckets = vec![0u64; 100];
        let (mut got, mut draws) = (0, 0u64);
        while got < n {
            draws += 1;
            assert!(draws < 50 * n, "too many rejected draws");
            let Some((key, value)) = s.draw(&mut rng).unwrap() else {
                continue;
            };
            assert_eq!(model.get(&key), Some(&value.to_vec()), "{key:?}");
            let rank = keys.partition_point(|k| k.as_slice() < key.as_slice());
            buckets[rank * 100 / keys.len()] += 1;
            got += 1;
        }
        (buckets, draws)
    }

    /// Pearson's statistic of `buckets` against equal expectations.
    fn chi_square(buckets: &[u64]) -> f64 {
        let total: u64 = buckets.iter().sum();
        let e = total as f64 / buckets.len() as f64;
        buckets.iter().map(|&o| (o as f64 - e).powi(2) / e).sum()
    }

    fn uniform_over(triad: TriadOptions, commit_log: bool) {
        let fs = MemFs::new();
        let db = Db::open("/db", options(&fs, triad)).unwrap();
        let model = uneven(&db);
        assert!(model.len() > 45_000, "{}", model.len());
        let v = db.inner.sv.load_full();
        assert!(v.mem.len() > 10_000, "a run stays in the memtable");
        assert!(
            v.version.levels.iter().flatten().count() >= 4,
            "several tables"
        );
        let logged = v.version.levels[0].iter().any(|f| f.cl_segment.is_some());
        assert_eq!(logged, commit_log);
        let (buckets, draws) = draw_buckets(&db, &model, 200_000);
        // 99 degrees of freedom: mean 99, standard deviation 14. A draw biased by the gaps
        // (a seek to a random point of the key space) scores in the hundreds of thousands.
        let chi = chi_square(&buckets);
        assert!(chi < 180.0, "chi-square {chi}: {buckets:?}");
        for &b in &buckets {
            assert!(b.abs_diff(2_000) < 300, "{buckets:?}");
        }
        assert!(draws < 600_000, "{draws} draws for 200,000 keys");
    }

    #[test]
    fn draws_are_uniform_over_keys_spread_unevenly() {
        uniform_over(TriadOptions::off(), false);
    }

    #[test]
    fn draws_are_uniform_with_commit_log_tables() {
        // Level-0 tables whose values point into their WAL segment.
        uniform_over(
            TriadOptions {
                log: true,
                adaptive: false,
                ..TriadOptions::off()
            },
            true,
        );
    }

    #[test]
    fn every_live_key_is_drawn_and_nothing_else() {
        let fs = MemFs::new();
        let db = Db::open("/db", options(&fs, TriadOptions::off())).unwrap();
        let mut m = BTreeMap::new();
        for i in 0..40 {
            put(&db, &k(i), &v(i, 1), &mut m);
        }
        db.flush().unwrap();
        for i in (0..40).step_by(3) {
            del(&db, &k(i), &mut m);
        }
        for i in (0..40).step_by(4) {
            put(&db, &k(i), &v(i, 2), &mut m);
        }
        db.flush().unwrap();
        for i in (1..40).step_by(5) {
            put(&db, &k(i), &v(i, 3), &mut m);
        }
        // Applied but not published: never drawn.
        let mut b = WriteBatch::new();
        b.put(&k(100), b"unpublished");
        b.delete(&k(1));
        db.log_and_apply(b).unwrap();
        let mut s = db.sampler(&[(k(0), k(1000))]).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        let mut seen = BTreeMap::new();
        for _ in 0..20_000 {
            if let Some((key, value)) = s.draw(&mut rng).unwrap() {
                assert_eq!(m.get(&key), Some(&value.to_vec()), "{key:?}");
                *seen.entry(key).or_insert(0u32) += 1;
            }
        }
        assert_eq!(
            seen.keys().collect::<Vec<_>>(),
            m.keys().collect::<Vec<_>>()
        );
        assert!(s.work() > 0);
    }

    #[test]
    fn ranges_bound_the_draws() {
        let fs = MemFs::new();
        let db = Db::open("/db", options(&fs, TriadOptions::off())).unwrap();
        let mut m = BTreeMap::new();
        for i in 0..1_000 {
            put(&db, &k(i), b"x", &mut m);
        }
        db.flush().unwrap();
        for i in 1_000..2_000 {
            put(&db, &k(i), b"y", &mut m);
        }
        let ranges = [(k(10), k(20)), (k(1_500), k(1_502)), (k(5_000), k(6_000))];
        let mut s = db.sampler(&ranges).unwrap();
        let mut rng = StdRng::seed_from_u64(2);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50_000 {
            if let Some((key, _)) = s.draw(&mut rng).unwrap() {
                assert!(ranges.iter().any(|(l, h)| *l <= key && key < *h), "{key:?}");
                seen.insert(key);
            }
        }
        assert_eq!(seen.len(), 12);
        assert!(db.sampler(&[(k(0), k(10)), (k(5), k(20))]).is_err());
        let mut none = db.sampler(&[(b"q".to_vec(), b"r".to_vec())]).unwrap();
        assert_eq!(none.draw(&mut rng).unwrap(), None);
        assert!(db.sampler(&[]).unwrap().is_empty());
    }

    #[test]
    fn tables_without_block_entries_count_twice_the_mean() {
        let p = TableProperties {
            num_entries: 1_000,
            num_data_blocks: 30,
            ..TableProperties::default()
        };
        assert_eq!(per_block(&p), 68);
        assert_eq!(per_block(&TableProperties::default()), 1);
    }
}
