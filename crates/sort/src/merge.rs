//! K-way merge of sorted sources with a loser tree, resolving duplicate keys.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;

use crate::buffer::{key_in, touch_records, value_in, Frozen, TOUCH_BATCH};
use crate::run::RunReader;
use crate::{Counters, DuplicatePolicy, SortError};

/// A record out of a merge: key, value, sequence number.
pub(crate) type Record<'a> = (&'a [u8], &'a [u8], u64);

/// One sorted input of a merge, in (key ascending, sequence descending) order.
pub(crate) enum Source {
    /// A sorted range of an in-memory buffer (the last one, or a spill called off).
    Mem {
        data: Arc<Frozen>,
        pos: usize,
        end: usize,
        /// Records up to here were touched by [`touch_records`].
        touched: usize,
    },
    /// A run file.
    Run(Box<RunReader>),
}

/// The current record of a source, as compared by the merge.
struct Head<'a> {
    prefix: u64,
    key: &'a [u8],
    seq: u64,
}

impl Source {
    /// The sorted entries `start..end` of `data`.
    pub fn mem(data: Arc<Frozen>, start: usize, end: usize) -> Self {
        let touched = (start + TOUCH_BATCH).min(end);
        touch_records(&data.chunks, &data.entries[start..touched]);
        Source::Mem {
            data,
            pos: start,
            end,
            touched,
        }
    }

    #[inline]
    fn head(&self) -> Option<Head<'_>> {
        match self {
            Source::Mem { data, pos, end, .. } => {
                if pos < end {
                    let e = &data.entries[*pos];
                    Some(Head {
                        prefix: e.prefix,
                        key: key_in(&data.chunks, e),
                        seq: e.seq,
                    })
                } else {
                    None
                }
            }
            Source::Run(r) => (!r.is_done()).then(|| Head {
                prefix: r.prefix(),
                key: r.key(),
                seq: r.seq(),
            }),
        }
    }

    /// The current record's value; only called when [`Source::head`] is `Some`.
    #[inline]
    fn value(&self) -> &[u8] {
        match self {
            Source::Mem { data, pos, .. } => value_in(&data.chunks, &data.entries[*pos]),
            Source::Run(r) => r.value(),
        }
    }

    #[inline]
    fn advance(&mut self) -> Result<(), SortError> {
        match self {
            Source::Mem {
                data,
                pos,
                end,
                touched,
            } => {
                *pos += 1;
                if *pos == *touched && *pos < *end {
                    *touched = (*pos + TOUCH_BATCH).min(*end);
                    touch_records(&data.chunks, &data.entries[*pos..*touched]);
                }
                Ok(())
            }
            Source::Run(r) => r.advance(),
        }
    }
}

/// The comparison key a merge caches per source: the current record's key prefix, or
/// [`DONE`] (greater than every prefix) once the source is exhausted. Most comparisons are
/// decided by it without touching the sources.
fn cached_key(source: &Source) -> u128 {
    source.head().map_or(DONE, |h| u128::from(h.prefix))
}

const DONE: u128 = u128::MAX;

/// Whether source `a`'s current record comes before source `b`'s. An exhausted source comes
/// after everything; ties (impossible between live records: sequence numbers are unique) go
/// to the lower index.
#[inline]
fn less(sources: &[Source], cache: &[u128], a: usize, b: usize) -> bool {
    let (x, y) = (cache[a], cache[b]);
    if x != y {
        return x < y;
    }
    if x == DONE {
        return a < b;
    }
    match (sources[a].head(), sources[b].head()) {
        (Some(x), Some(y)) => {
            x.key
                .cmp(y.key)
                .then_with(|| y.seq.cmp(&x.seq))
                .then_with(|| a.cmp(&b))
                == Ordering::Less
        }
        // Not reached: the cache says both are live.
        (x, _) => x.is_some(),
    }
}

/// Merges sources into one stream in key order, each key once.
///
/// The loser tree has the sources as leaves `k..2k` of an implicit binary tree (node `n` has
/// children `2n` and `2n + 1`); internal node `n` (`1..k`) holds the source that lost the match
/// played there, and `tree[0]` the overall winner. After the winner advances, only the matches
/// on its path to the root are replayed: `log2(k)` comparisons per record.
pub(crate) struct Merger {
    sources: Vec<Source>,
    /// [`cached_key`] of each source.
    cache: Vec<u128>,
    tree: Vec<usize>,
    policy: DuplicatePolicy,
    /// Copy of the key last returned, to recognise its duplicates.
    last_key: Vec<u8>,
    last_prefix: u64,
    has_last: bool,
    /// The winner was returned and must be advanced before the next record.
    pending: bool,
    failed: bool,
    counters: Arc<Counters>,
    /// Named in the error returned after a failure.
    tmp_dir: PathBuf,
}

impl Merger {
    pub fn new(
        sources: Vec<Source>,
        policy: DuplicatePolicy,
        counters: Arc<Counters>,
        tmp_dir: PathBuf,
    ) -> Self {
        let k = sources.len();
        let cache: Vec<u128> = sources.iter().map(cached_key).collect();
        let mut tree = vec![0; k.max(1)];
        if k > 0 {
            tree[0] = build(&sources, &cache, &mut tree, 1);
        }
        Merger {
            sources,
            cache,
            tree,
            policy,
            last_key: Vec::new(),
            last_prefix: 0,
            has_last: false,
            pending: false,
            failed: false,
            counters,
            tmp_dir,
        }
    }

    fn advance_winner(&mut self) -> Result<(), SortError> {
        let w = self.tree[0];
        if let Err(e) = self.sources[w].advance() {
            self.failed = true;
            return Err(e);
        }
        self.cache[w] = cached_key(&self.sources[w]);
        let k = self.sources.len();
        let mut cur = w;
        let mut n = (w + k) / 2;
        while n >= 1 {
            if less(&self.sources, &self.cache, self.tree[n], cur) {
                std::mem::swap(&mut self.tree[n], &mut cur);
            }
            n /= 2;
        }
        self.tree[0] = cur;
        Ok(())
    }

    /// The next record (key, value, sequence number), or `None` at the end.
    pub fn next(&mut self) -> Result<Option<Record<'_>>, SortError> {
        if self.failed {
            return Err(SortError::failed_earlier(&self.tmp_dir));
        }
        if self.sources.is_empty() {
            return Ok(None);
        }
        if self.pending {
            self.pending = false;
            self.advance_winner()?;
        }
        loop {
            let Some(head) = self.sources[self.tree[0]].head() else {
                return Ok(None);
            };
            if self.has_last && head.prefix == self.last_prefix && head.key == self.last_key {
                match self.policy {
                    DuplicatePolicy::Error => {
                        let key = head.key.to_vec();
                        self.failed = true;
                        return Err(SortError::DuplicateKey { key });
                    }
                    DuplicatePolicy::LastWins => {
                        // Sequence descending: the one returned before was added later.
                        self.counters
                            .duplicates_dropped
                            .fetch_add(1, AtomicOrdering::Relaxed);
                        self.advance_winner()?;
                        continue;
                    }
                }
            }
            self.last_prefix = head.prefix;
            self.last_key.clear();
            self.last_key.extend_from_slice(head.key);
            self.has_last = true;
            self.pending = true;
            break;
        }
        let s = &self.sources[self.tree[0]];
        Ok(s.head().map(|h| (h.key, s.value(), h.seq)))
    }
}

/// Plays the matches of the subtree under node `n`, storing losers, and returns its winner.
fn build(sources: &[Source], cache: &[u128], tree: &mut [usize], n: usize) -> usize {
    let k = sources.len();
    if n >= k {
        return n - k;
    }
    let a = build(sources, cache, tree, 2 * n);
    let b = build(sources, cache, tree, 2 * n + 1);
    if less(sources, cache, a, b) {
        tree[n] = b;
        a
    } else {
        tree[n] = a;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{sort_entries, Buffer};

    fn mem_source(records: &[(&[u8], u64)]) -> Source {
        let mut b = Buffer::new(4096);
        for (k, seq) in records {
            b.push(k, &seq.to_le_bytes(), *seq, usize::MAX);
        }
        let (chunks, mut entries) = b.into_parts();
        sort_entries(&chunks, &mut entries);
        let end = entries.len();
        Source::mem(Arc::new(Frozen { chunks, entries }), 0, end)
    }

    fn drain(m: &mut Merger) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        while let Some((k, _, s)) = m.next().unwrap() {
            out.push((k.to_vec(), s));
        }
        out
    }

    #[test]
    fn merges_any_number_of_sources() {
        for k in 0..12usize {
            let mut sources = Vec::new();
            let mut expect = Vec::new();
            let mut seq = 0;
            for s in 0..k {
                let mut recs = Vec::new();
                for i in 0..(s * 7 % 5 + 1) {
                    let key = vec![(i * k + s) as u8, 1];
                    recs.push((key, seq));
                    seq += 1;
                }
                let borrowed: Vec<(&[u8], u64)> = recs.iter().map(|(k, s)| (&k[..], *s)).collect();
                sources.push(mem_source(&borrowed));
                expect.extend(recs);
            }
            expect.sort();
            let mut m = Merger::new(
                sources,
                DuplicatePolicy::Error,
                Arc::default(),
                PathBuf::new(),
            );
            assert_eq!(drain(&mut m), expect, "k = {k}");
            assert!(m.next().unwrap().is_none());
        }
    }

    #[test]
    fn last_wins_keeps_highest_sequence_and_error_reports() {
        let make = || {
            vec![
                mem_source(&[(b"a", 0), (b"b", 3), (b"c", 4)]),
                mem_source(&[(b"b", 1), (b"a", 5)]),
                mem_source(&[(b"b", 2)]),
            ]
        };
        let counters = Arc::new(Counters::default());
        let mut m = Merger::new(
            make(),
            DuplicatePolicy::LastWins,
            counters.clone(),
            PathBuf::new(),
        );
        assert_eq!(
            drain(&mut m),
            vec![(b"a".to_vec(), 5), (b"b".to_vec(), 3), (b"c".to_vec(), 4)]
        );
        assert_eq!(counters.duplicates_dropped.load(AtomicOrdering::Relaxed), 3);
        let mut m = Merger::new(
            make(),
            DuplicatePolicy::Error,
            Arc::default(),
            PathBuf::new(),
        );
        assert_eq!(m.next().unwrap().map(|r| r.2), Some(5));
        match m.next() {
            Err(SortError::DuplicateKey { key }) => assert_eq!(key, b"a"),
            other => panic!("{:?}", other.map(|o| o.map(|r| r.2))),
        }
        assert!(m.next().is_err());
    }
}
