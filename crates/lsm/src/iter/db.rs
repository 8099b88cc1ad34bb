//! [`DbIter`]: turns the merged stream of internal entries into the user's view.
//!
//! The inner iterator yields every version of every key, newest first within a key
//! ([`crate::key`]). The user sees, for each user key inside the bounds, only the newest
//! version visible at the snapshot sequence, and nothing at all if that version is a
//! tombstone.
//!
//! Moving forward is easy: the first visible entry of a user key is its newest visible
//! version, so the iterator can stop on it and hand out slices of the inner iterator.
//! Moving backward meets a key's versions oldest first; the newest visible one is only known
//! once the scan has passed the key, at which point the inner iterator no longer points at it.
//! So in reverse the current entry is copied into `saved_key`/`saved_value` (reused buffers,
//! so no allocation per step once they have grown).
//!
//! # Positioning invariants
//!
//! While `valid`:
//! * `Forward`: the inner iterator is at the entry returned, the newest visible version of
//!   [`DbIter::key`], which is a put.
//! * `Reverse`: `saved_key`/`saved_value` hold the entry returned; the inner iterator is
//!   before every entry of `saved_key`, at the first visible entry of a smaller user key or at
//!   the first entry below `lower`, so that only invisible entries lie between (or it is
//!   exhausted, if nothing precedes `saved_key`).
//!
//! Errors (an inner failure or a malformed internal key) are sticky: the iterator stays
//! invalid and positioning calls do nothing. Create a new iterator to retry.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rialto_engine::{EngineIterator, Error, Result};

use crate::iter::BoxedIter;
use crate::key::{
    append_internal_key, pack_trailer, parse, SequenceNumber, ValueKind, KIND_SEEK, MAX_SEQUENCE,
    TRAILER_LEN,
};

/// After this many entries skipped in a row (hidden older versions or versions newer than
/// the snapshot), reseek instead of stepping: a seek costs O(log n) in the merge, a run of
/// steps through a hot key's history costs its length.
const MAX_SEQUENTIAL_SKIP: usize = 8;

/// Which way the iterator last moved; decides where the current entry lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// The user-facing iterator of the LSM engine: a snapshot view within user-key bounds over a
/// merged internal iterator. See the module documentation for the invariants.
///
/// Field order matters: fields drop in declaration order, so `inner` (which may borrow
/// tables and memtables by reference count) is released before `keep_alive`.
pub struct DbIter {
    inner: BoxedIter,
    /// Entries with a larger sequence are invisible.
    sequence: SequenceNumber,
    /// Inclusive lower user-key bound.
    lower: Option<Vec<u8>>,
    /// Exclusive upper user-key bound.
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    /// Reverse: the current user key. Forward: the user key being skipped over.
    saved_key: Vec<u8>,
    /// Reverse: the current value.
    saved_value: Vec<u8>,
    /// Scratch for building seek targets.
    seek_buf: Vec<u8>,
    /// Set on the first error; the iterator is invalid from then on.
    failed: bool,
    /// Why a corrupt key was rejected, when that was the error (otherwise `inner` has it).
    corruption: Option<String>,
    /// Inner entries examined so far, and the engine's total they are added to on drop.
    examined: u64,
    examined_total: Option<Arc<AtomicU64>>,
    /// Whatever the inner iterator's sources need kept alive; dropped last.
    _keep_alive: Box<dyn Any + Send>,
}

impl fmt::Debug for DbIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbIter")
            .field("sequence", &self.sequence)
            .field("lower", &self.lower)
            .field("upper", &self.upper)
            .field("direction", &self.direction)
            .field("valid", &self.valid)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl DbIter {
    /// Wraps `inner` (usually a `MergingIterator` of every source, newest first) into the view
    /// as of `sequence`, restricted to `lower <= key < upper`.
    ///
    /// `sequence` above [`MAX_SEQUENCE`] (e.g. `u64::MAX` for "everything") is clamped.
    /// `keep_alive` is stored untouched and dropped after `inner`. The iterator starts
    /// unpositioned.
    pub fn new(
        inner: BoxedIter,
        sequence: u64,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        keep_alive: Box<dyn Any + Send>,
    ) -> Self {
        DbIter {
            inner,
            sequence: sequence.min(MAX_SEQUENCE),
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            seek_buf: Vec::new(),
            failed: false,
            corruption: None,
            examined: 0,
            examined_total: None,
            _keep_alive: keep_alive,
        }
    }

    /// Adds the entries this iterator examines to `total` when it is dropped.
    pub fn count_into(mut self, total: Arc<AtomicU64>) -> Self {
        self.examined_total = Some(total);
        self
    }

    /// Inner entries examined so far: every version and tombstone stepped over counts.
    pub fn examined(&self) -> u64 {
        self.examined
    }

    /// Records a malformed internal key at the inner position and invalidates for good.
    fn set_corrupt(&mut self) {
        let len = self.inner.key().len();
        self.corruption = Some(format!("malformed internal key ({len} bytes) in iterator"));
        self.failed = true;
        self.valid = false;
    }

    /// Called when the inner iterator turned invalid: tells exhaustion from failure.
    fn note_inner_end(&mut self) {
        if self.inner.status().is_err() {
            self.failed = true;
            self.valid = false;
        }
    }

    /// Scans forward from the inner position to the newest visible put of a user key within
    /// bounds. With `skipping`, every entry whose user key is `<= saved_key` is hidden (the
    /// caller has already returned, or is stepping over, that key).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        debug_assert_eq!(self.direction, Direction::Forward);
        self.valid = false;
        let mut skipped = 0usize;
        while self.inner.valid() {
            self.examined += 1;
            let Some(p) = parse(self.inner.key()) else {
                self.set_corrupt();
                return;
            };
            if let Some(upper) = &self.upper {
                if p.user_key >= upper.as_slice() {
                    // Past the bounds: stop without scanning the rest of the tree.
                    return;
                }
            }
            let hidden = skipping && p.user_key <= self.saved_key.as_slice();
            if !hidden && p.seq <= self.sequence {
                match p.kind {
                    ValueKind::Put => {
                        self.valid = true;
                        return;
                    }
                    ValueKind::Delete => {
                        // Every older version of this key is hidden by the tombstone.
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                        skipped = 0;
                    }
                }
                self.inner.next();
                continue;
            }
            skipped += 1;
            if skipped <= MAX_SEQUENTIAL_SKIP {
                self.inner.next();
                continue;
            }
            // Jump over the rest of the run. Both targets are strictly after the current
            // entry, and everything jumped over would have been skipped anyway.
            skipped = 0;
            self.seek_buf.clear();
            if hidden {
                // The smallest internal key of the user key right after `saved_key`.
                self.seek_buf.extend_from_slice(&self.saved_key);
                self.seek_buf.push(0);
                self.seek_buf
                    .extend_from_slice(&pack_trailer(MAX_SEQUENCE, KIND_SEEK).to_le_bytes());
            } else {
                // The newest version of this key visible at the snapshot.
                append_internal_key(&mut self.seek_buf, p.user_key, self.sequence, KIND_SEEK);
            }
            self.inner.seek(&self.seek_buf);
        }
        self.note_inner_end();
    }

    /// Scans backward from the inner position to the previous user key within bounds whose
    /// newest visible version is a put, collecting that version into the saved buffers.
    /// Stops on the first visible entry of a smaller user key (leaving the inner iterator
    /// there, as the reverse invariant needs), or on the first key below `lower`.
    fn find_prev_user_entry(&mut self) {
        debug_assert_eq!(self.direction, Direction::Reverse);
        // Kind of the newest visible version of `saved_key` met so far; `Delete` also stands
        // for "no candidate yet".
        let mut candidate = ValueKind::Delete;
        while self.inner.valid() {
            self.examined += 1;
            let Some(p) = parse(self.inner.key()) else {
                self.set_corrupt();
                return;
            };
            let above = matches!(&self.upper, Some(u) if p.user_key >= u.as_slice());
            if !above {
                if matches!(&self.lower, Some(l) if p.user_key < l.as_slice()) {
                    break;
                }
                if p.seq <= self.sequence {
                    if candidate == ValueKind::Put && p.user_key < self.saved_key.as_slice() {
                        // Every version of the candidate has been seen: it is final.
                        break;
                    }
                    candidate = p.kind;
                    if candidate == ValueKind::Put {
                        if self.saved_key != p.user_key {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(p.user_key);
                        }
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.inner.value());
                    }
                }
            }
            self.inner.prev();
        }
        if !self.inner.valid() {
            // A failure may have hidden newer versions (a tombstone): never return the
            // candidate then.
            self.note_inner_end();
            if self.failed {
                return;
            }
        }
        self.valid = candidate == ValueKind::Put;
    }

    /// Positions the inner iterator at the last entry of a user key `< upper`
    /// (or at the last entry overall) and scans backward from there.
    fn seek_to_last_within_upper(&mut self) {
        self.direction = Direction::Reverse;
        match &self.upper {
            Some(upper) => {
                // Smallest internal key of `upper`: entries of `upper` itself are skipped by
                // `find_prev_user_entry` in the rare case one equals it.
                self.seek_buf.clear();
                append_internal_key(&mut self.seek_buf, upper, MAX_SEQUENCE, KIND_SEEK);
                self.inner.seek_for_prev(&self.seek_buf);
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
    }
}

impl Drop for DbIter {
    fn drop(&mut self) {
        if let Some(total) = &self.examined_total {
            total.fetch_add(self.examined, Ordering::Relaxed);
        }
    }
}

impl EngineIterator for DbIter {
    fn seek_to_first(&mut self) {
        self.valid = false;
        if self.failed {
            return;
        }
        match self.lower.take() {
            Some(lower) => {
                self.seek(&lower);
                self.lower = Some(lower);
            }
            None => {
                self.direction = Direction::Forward;
                self.inner.seek_to_first();
                self.find_next_user_entry(false);
            }
        }
    }

    fn seek_to_last(&mut self) {
        self.valid = false;
        if self.failed {
            return;
        }
        self.seek_to_last_within_upper();
    }

    fn seek(&mut self, key: &[u8]) {
        self.valid = false;
        if self.failed {
            return;
        }
        self.direction = Direction::Forward;
        let target = match &self.lower {
            Some(lower) if key < lower.as_slice() => lower.as_slice(),
            _ => key,
        };
        // Start at the newest version visible at the snapshot, skipping newer ones.
        self.seek_buf.clear();
        append_internal_key(&mut self.seek_buf, target, self.sequence, KIND_SEEK);
        self.inner.seek(&self.seek_buf);
        self.find_next_user_entry(false);
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        self.valid = false;
        if self.failed {
            return;
        }
        if matches!(&self.upper, Some(u) if key >= u.as_slice()) {
            self.seek_to_last_within_upper();
            return;
        }
        self.direction = Direction::Reverse;
        // The largest internal key of `key` (its oldest possible version).
        self.seek_buf.clear();
        append_internal_key(&mut self.seek_buf, key, 0, ValueKind::Delete);
        self.inner.seek_for_prev(&self.seek_buf);
        self.find_prev_user_entry();
    }

    fn next(&mut self) {
        if !self.valid {
            return;
        }
        match self.direction {
            Direction::Forward => {
                // Skip the rest of the current key's versions.
                let ikey = self.inner.key();
                self.saved_key.clear();
                self.saved_key
                    .extend_from_slice(&ikey[..ikey.len().saturating_sub(TRAILER_LEN)]);
                self.inner.next();
            }
            Direction::Reverse => {
                // The inner iterator is before every entry of `saved_key` (the current key);
                // step into them and let the skipping scan pass them.
                self.direction = Direction::Forward;
                if self.inner.valid() {
                    self.inner.next();
                } else {
                    self.inner.seek_to_first();
                }
            }
        }
        self.find_next_user_entry(true);
    }

    fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // The inner iterator is at the current entry; back out of the current key (only
            // its invisible newer versions precede it) so the reverse scan starts before it.
            let ikey = self.inner.key();
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(&ikey[..ikey.len().saturating_sub(TRAILER_LEN)]);
            let mut steps = 0usize;
            loop {
                if steps == MAX_SEQUENTIAL_SKIP {
                    // Jump before the key's smallest internal key; an entry equal to it
                    // (sequence MAX_SEQUENCE) is stepped over by the loop.
                    self.seek_buf.clear();
                    append_internal_key(
                        &mut self.seek_buf,
                        &self.saved_key,
                        MAX_SEQUENCE,
                        KIND_SEEK,
                    );
                    self.inner.seek_for_prev(&self.seek_buf);
                } else {
                    self.inner.prev();
                }
                steps += 1;
                if !self.inner.valid() {
                    self.valid = false;
                    self.note_inner_end();
                    return;
                }
                let Some(p) = parse(self.inner.key()) else {
                    self.set_corrupt();
                    return;
                };
                if p.user_key < self.saved_key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.valid = false;
        self.find_prev_user_entry();
    }

    fn valid(&self) -> bool {
        self.valid
    }

    fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward => {
                let ikey = self.inner.key();
                &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
            }
            Direction::Reverse => &self.saved_key,
        }
    }

    fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward => self.inner.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    fn status(&self) -> Result<()> {
        if let Some(reason) = &self.corruption {
            return Err(Error::corruption("iterator", 0, reason.as_str()));
        }
        self.inner.status()?;
        if self.failed {
            return Err(Error::corruption(
                "iterator",
                0,
                "inner iterator failed but no longer reports its error",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound;
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
    use std::sync::{Arc, Mutex};

    use proptest::prelude::*;

    use super::*;
    use crate::iter::merge::{new_merging, MergingIterator};
    use crate::iter::{InternalIterator, VecIter};
    use crate::key::make_internal_key;

    type Entry = (Vec<u8>, Vec<u8>);

    /// One write: `(user key, Some(value))` is a put, `None` a delete; sequence = index + 1.
    type History = Vec<(Vec<u8>, Option<Vec<u8>>)>;

    fn entries(history: &History) -> Vec<Entry> {
        history
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                let seq = i as u64 + 1;
                match v {
                    Some(v) => (make_internal_key(k, seq, ValueKind::Put), v.clone()),
                    None => (make_internal_key(k, seq, ValueKind::Delete), Vec::new()),
                }
            })
            .collect()
    }

    fn sorted_child(mut v: Vec<Entry>) -> BoxedIter {
        v.sort_by(|a, b| crate::key::compare(&a.0, &b.0));
        Box::new(VecIter::new(v))
    }

    /// Splits the entries of `history` over children by `assign[i] % n` and merges them.
    fn merged(history: &History, assign: &[usize], n: usize) -> BoxedIter {
        let n = n.max(1);
        let mut children = vec![Vec::new(); n];
        for (i, e) in entries(history).into_iter().enumerate() {
            children[assign.get(i).copied().unwrap_or(0) % n].push(e);
        }
        new_merging(children.into_iter().map(sorted_child).collect())
    }

    fn db_iter(history: &History, seq: u64, lower: Option<&[u8]>, upper: Option<&[u8]>) -> DbIter {
        DbIter::new(
            merged(history, &[], 1),
            seq,
            lower.map(<[u8]>::to_vec),
            upper.map(<[u8]>::to_vec),
            Box::new(()),
        )
    }

    /// The visible state at `seq` within bounds.
    fn model(
        history: &History,
        seq: u64,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut state = BTreeMap::new();
        for (i, (k, v)) in history.iter().enumerate() {
            if i as u64 + 1 > seq {
                break;
            }
            match v {
                Some(v) => state.insert(k.clone(), v.clone()),
                None => state.remove(k),
            };
        }
        state.retain(|k, _| {
            let above_lower = !matches!(lower, Some(l) if k.as_slice() < l);
            let below_upper = !matches!(upper, Some(u) if k.as_slice() >= u);
            above_lower && below_upper
        });
        state
    }

    fn forward(it: &mut DbIter) -> Vec<Entry> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn backward(it: &mut DbIter) -> Vec<Entry> {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        out.reverse();
        out
    }

    fn put(k: &str, v: &str) -> (Vec<u8>, Option<Vec<u8>>) {
        (k.as_bytes().to_vec(), Some(v.as_bytes().to_vec()))
    }

    fn del(k: &str) -> (Vec<u8>, Option<Vec<u8>>) {
        (k.as_bytes().to_vec(), None)
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<Entry> {
        v.iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn db_iter_is_send() {
        // `KvEngine::Iter` must be `Send`.
        fn assert_send<T: Send>() {}
        assert_send::<DbIter>();
        assert_send::<MergingIterator>();
    }

    #[test]
    fn db_iter_versions_tombstones_and_snapshots() {
        let h = vec![
            put("a", "a1"),
            put("b", "b2"),
            put("a", "a3"),
            del("b"),
            put("c", "c5"),
            del("a"),
            put("a", "a7"),
            put("d", "d8"),
            del("d"),
        ];
        let expect = |seq: u64, want: &[(&str, &str)]| {
            let mut it = db_iter(&h, seq, None, None);
            assert_eq!(forward(&mut it), pairs(want), "forward at {seq}");
            assert_eq!(backward(&mut it), pairs(want), "backward at {seq}");
            assert!(it.status().is_ok());
        };
        expect(0, &[]);
        expect(1, &[("a", "a1")]);
        expect(2, &[("a", "a1"), ("b", "b2")]);
        expect(3, &[("a", "a3"), ("b", "b2")]);
        expect(4, &[("a", "a3")]);
        expect(6, &[("c", "c5")]);
        expect(7, &[("a", "a7"), ("c", "c5")]);
        expect(8, &[("a", "a7"), ("c", "c5"), ("d", "d8")]);
        expect(9, &[("a", "a7"), ("c", "c5")]);
        expect(u64::MAX, &[("a", "a7"), ("c", "c5")]);
    }

    #[test]
    fn db_iter_direction_switches_like_a_cursor() {
        let h = vec![put("a", "1"), put("b", "2"), put("c", "3"), del("b")];
        let mut it = db_iter(&h, 10, None, None);
        it.seek_to_first();
        assert_eq!(it.key(), b"a");
        it.next();
        assert_eq!(it.key(), b"c");
        it.prev();
        assert_eq!(it.key(), b"a");
        it.prev();
        assert!(!it.valid());
        it.seek_for_prev(b"bz");
        assert_eq!((it.key(), it.value()), (&b"a"[..], &b"1"[..]));
        it.next();
        assert_eq!((it.key(), it.value()), (&b"c"[..], &b"3"[..]));
        it.next();
        assert!(!it.valid());
        it.seek(b"b");
        assert_eq!(it.key(), b"c");
        it.seek(b"d");
        assert!(!it.valid());
        it.seek_for_prev(b"0");
        assert!(!it.valid());
    }

    #[test]
    fn db_iter_many_versions_use_reseeks_correctly() {
        // Far more versions per key than MAX_SEQUENTIAL_SKIP, interleaved with deletes, and
        // a snapshot in the middle so that many versions are invisible.
        let mut h = Vec::new();
        for i in 0..100 {
            h.push(put("k", &format!("k{i}")));
            h.push(put("j", &format!("j{i}")));
            if i % 10 == 9 {
                h.push(del("l"));
            } else {
                h.push(put("l", &format!("l{i}")));
            }
        }
        for seq in [1, 2, 3, 30, 31, 150, 299, 300, 1000] {
            let want = model(&h, seq, None, None);
            let want: Vec<Entry> = want.into_iter().collect();
            for n in [1, 3] {
                let assign: Vec<usize> = (0..h.len()).map(|i| i * 7 % 5).collect();
                let mut it = DbIter::new(merged(&h, &assign, n), seq, None, None, Box::new(()));
                assert_eq!(forward(&mut it), want, "seq {seq}");
                assert_eq!(backward(&mut it), want, "seq {seq}");
                // Zig-zag across every key.
                it.seek_to_first();
                for _ in 1..want.len() {
                    let here = it.key().to_vec();
                    it.next();
                    it.prev();
                    assert_eq!(it.key(), here.as_slice());
                    it.next();
                }
            }
        }
    }

    #[test]
    fn db_iter_bounds() {
        let h = vec![
            put("a", "1"),
            put("b", "2"),
            put("c", "3"),
            put("d", "4"),
            put("b\0", "5"),
        ];
        let mut it = db_iter(&h, 10, Some(b"b"), Some(b"d"));
        assert_eq!(
            forward(&mut it),
            pairs(&[("b", "2"), ("b\0", "5"), ("c", "3")])
        );
        assert_eq!(
            backward(&mut it),
            pairs(&[("b", "2"), ("b\0", "5"), ("c", "3")])
        );
        it.seek(b"a");
        assert_eq!(it.key(), b"b");
        it.prev();
        assert!(!it.valid(), "lower bound is a wall going backward");
        it.seek_for_prev(b"z");
        assert_eq!(it.key(), b"c");
        it.next();
        assert!(!it.valid(), "upper bound is exclusive");
        it.seek(b"d");
        assert!(!it.valid());
        it.seek_for_prev(b"a");
        assert!(!it.valid());
        it.seek_for_prev(b"b");
        assert_eq!(it.key(), b"b");

        // Empty ranges.
        for (lo, up) in [
            (&b"b"[..], &b"b"[..]),
            (b"c", b"b"),
            (b"x", b"y"),
            (b"d", b"a"),
        ] {
            let mut it = db_iter(&h, 10, Some(lo), Some(up));
            assert!(forward(&mut it).is_empty());
            assert!(backward(&mut it).is_empty());
            it.seek(b"c");
            assert!(!it.valid());
            it.seek_for_prev(b"c");
            assert!(!it.valid());
        }

        // Only one side bounded; keys exactly at the bounds.
        let mut it = db_iter(&h, 10, None, Some(b"b"));
        assert_eq!(backward(&mut it), pairs(&[("a", "1")]));
        let mut it = db_iter(&h, 10, Some(b"d"), None);
        assert_eq!(forward(&mut it), pairs(&[("d", "4")]));
        assert_eq!(backward(&mut it), pairs(&[("d", "4")]));
    }

    #[test]
    fn db_iter_upper_bound_key_with_max_sequence() {
        // An entry whose internal key equals the reverse seek target for `upper`.
        let child = vec![
            (make_internal_key(b"a", 1, ValueKind::Put), b"a".to_vec()),
            (
                make_internal_key(b"b", MAX_SEQUENCE, KIND_SEEK),
                b"b".to_vec(),
            ),
        ];
        let mut it = DbIter::new(
            sorted_child(child),
            MAX_SEQUENCE,
            None,
            Some(b"b".to_vec()),
            Box::new(()),
        );
        assert_eq!(backward(&mut it), pairs(&[("a", "a")]));
        assert_eq!(forward(&mut it), pairs(&[("a", "a")]));
    }

    #[test]
    fn db_iter_empty_user_key() {
        let h = vec![put("", "empty"), put("a", "1")];
        let mut it = db_iter(&h, 10, None, None);
        assert_eq!(forward(&mut it), pairs(&[("", "empty"), ("a", "1")]));
        assert_eq!(backward(&mut it), pairs(&[("", "empty"), ("a", "1")]));
        it.seek_for_prev(b"");
        assert_eq!(it.value(), b"empty");
    }

    #[test]
    fn db_iter_corrupt_key_is_reported() {
        let mut bad = make_internal_key(b"b", 2, ValueKind::Put);
        let n = bad.len();
        bad[n - 8] = 9; // unknown kind
        let child = vec![
            (make_internal_key(b"a", 1, ValueKind::Put), b"a".to_vec()),
            (bad, b"bad".to_vec()),
            (make_internal_key(b"c", 3, ValueKind::Put), b"c".to_vec()),
        ];
        let mut it = DbIter::new(sorted_child(child.clone()), 10, None, None, Box::new(()));
        it.seek_to_first();
        assert_eq!(it.key(), b"a");
        it.next();
        assert!(!it.valid());
        assert!(it.status().expect_err("corruption").is_corruption());
        // Sticky.
        it.seek(b"c");
        assert!(!it.valid());
        assert!(it.status().is_err());

        let mut it = DbIter::new(sorted_child(child), 10, None, None, Box::new(()));
        it.seek_to_last();
        assert!(!it.valid());
        assert!(it.status().expect_err("corruption").is_corruption());

        // A key too short to hold a trailer.
        let short = Box::new(VecIter::new(vec![(b"xy".to_vec(), Vec::new())]));
        let mut it = DbIter::new(short, 10, None, None, Box::new(()));
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().expect_err("corruption").is_corruption());
    }

    /// Fails (and turns invalid) when stepped backward off its first entry.
    struct FailAtFront(VecIter, bool);

    impl InternalIterator for FailAtFront {
        fn valid(&self) -> bool {
            !self.1 && self.0.valid()
        }
        fn seek_to_first(&mut self) {
            self.0.seek_to_first();
        }
        fn seek_to_last(&mut self) {
            self.0.seek_to_last();
        }
        fn seek(&mut self, t: &[u8]) {
            self.0.seek(t);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.0.seek_for_prev(t);
        }
        fn next(&mut self) {
            self.0.next();
        }
        fn prev(&mut self) {
            self.0.prev();
            self.1 |= !self.0.valid();
        }
        fn key(&self) -> &[u8] {
            self.0.key()
        }
        fn value(&self) -> &[u8] {
            self.0.value()
        }
        fn status(&self) -> rialto_engine::Result<()> {
            if self.1 {
                Err(Error::io("read block", std::io::Error::other("EIO")))
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn db_iter_inner_error_never_yields_a_half_seen_key() {
        // Going backward, "a"'s candidate is found but the scan for newer versions fails:
        // the candidate may be shadowed by an unread tombstone, so it must not be returned.
        let e = entries(&vec![put("a", "1")]);
        let failing = Box::new(FailAtFront(VecIter::new(e), false));
        let merge = Box::new(MergingIterator::new(vec![failing]));
        let mut it = DbIter::new(merge, 10, None, None, Box::new(()));
        it.seek_to_last();
        assert!(!it.valid());
        assert!(matches!(it.status(), Err(Error::Io { .. })));
    }

    #[test]
    fn db_iter_drops_inner_before_keep_alive() {
        struct Logged(&'static str, Arc<Mutex<Vec<&'static str>>>);
        impl Drop for Logged {
            fn drop(&mut self) {
                if let Ok(mut log) = self.1.lock() {
                    log.push(self.0);
                }
            }
        }
        struct InnerWithLog(VecIter, #[allow(dead_code)] Logged);
        impl InternalIterator for InnerWithLog {
            fn valid(&self) -> bool {
                self.0.valid()
            }
            fn seek_to_first(&mut self) {
                self.0.seek_to_first();
            }
            fn seek_to_last(&mut self) {
                self.0.seek_to_last();
            }
            fn seek(&mut self, t: &[u8]) {
                self.0.seek(t);
            }
            fn seek_for_prev(&mut self, t: &[u8]) {
                self.0.seek_for_prev(t);
            }
            fn next(&mut self) {
                self.0.next();
            }
            fn prev(&mut self) {
                self.0.prev();
            }
            fn key(&self) -> &[u8] {
                self.0.key()
            }
            fn value(&self) -> &[u8] {
                self.0.value()
            }
            fn status(&self) -> rialto_engine::Result<()> {
                Ok(())
            }
        }
        let log = Arc::new(Mutex::new(Vec::new()));
        let inner = Box::new(InnerWithLog(
            VecIter::default(),
            Logged("inner", log.clone()),
        ));
        let it = DbIter::new(
            inner,
            1,
            None,
            None,
            Box::new(Logged("keep_alive", log.clone())),
        );
        assert!(log.lock().map(|l| l.is_empty()).unwrap_or(false));
        drop(it);
        assert_eq!(*log.lock().expect("log"), vec!["inner", "keep_alive"]);
    }

    /// Counts inner steps and seeks.
    struct Counting(VecIter, Arc<AtomicUsize>);

    impl InternalIterator for Counting {
        fn valid(&self) -> bool {
            self.0.valid()
        }
        fn seek_to_first(&mut self) {
            self.1.fetch_add(1, AtomicOrdering::Relaxed);
            self.0.seek_to_first();
        }
        fn seek_to_last(&mut self) {
            self.1.fetch_add(1, AtomicOrdering::Relaxed);
            self.0.seek_to_last();
        }
        fn seek(&mut self, t: &[u8]) {
            self.1.fetch_add(1, AtomicOrdering::Relaxed);
            self.0.seek(t);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.1.fetch_add(1, AtomicOrdering::Relaxed);
            self.0.seek_for_prev(t);
        }
        fn next(&mut self) {
            self.1.fetch_add(1, AtomicOrdering::Relaxed);
            self.0.next();
        }
        fn prev(&mut self) {
            self.1.fetch_add(1, AtomicOrdering::Relaxed);
            self.0.prev();
        }
        fn key(&self) -> &[u8] {
            self.0.key()
        }
        fn value(&self) -> &[u8] {
            self.0.value()
        }
        fn status(&self) -> rialto_engine::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn db_iter_skips_long_histories_with_few_inner_moves() {
        // 1000 versions of "a" then "b"; a snapshot in the middle hides 500 newer ones.
        let mut h: History = (0..1000).map(|i| put("a", &i.to_string())).collect();
        h.push(put("b", "b"));
        let mut e = entries(&h);
        e.sort_by(|a, b| crate::key::compare(&a.0, &b.0));
        let moves = Arc::new(AtomicUsize::new(0));
        let inner = Box::new(Counting(VecIter::new(e), moves.clone()));
        let mut it = DbIter::new(inner, 500, None, None, Box::new(()));
        it.seek_to_first();
        assert_eq!((it.key(), it.value()), (&b"a"[..], &b"499"[..]));
        it.next();
        assert!(!it.valid(), "b is newer than the snapshot");
        let forward_moves = moves.swap(0, AtomicOrdering::Relaxed);
        assert!(
            forward_moves <= 4 * MAX_SEQUENTIAL_SKIP,
            "{forward_moves} inner moves"
        );

        let mut it = DbIter::new(merged(&h, &[], 1), u64::MAX, None, None, Box::new(()));
        it.seek_to_last();
        assert_eq!(it.key(), b"b");
        it.prev();
        assert_eq!((it.key(), it.value()), (&b"a"[..], &b"999"[..]));

        // Switching to reverse from a key with 500 invisible newer versions.
        let mut h: History = vec![put("a", "a")];
        h.extend((0..1000).map(|i| put("b", &i.to_string())));
        let mut e = entries(&h);
        e.sort_by(|a, b| crate::key::compare(&a.0, &b.0));
        let moves = Arc::new(AtomicUsize::new(0));
        let inner = Box::new(Counting(VecIter::new(e), moves.clone()));
        let mut it = DbIter::new(inner, 501, None, None, Box::new(()));
        it.seek(b"b");
        assert_eq!((it.key(), it.value()), (&b"b"[..], &b"499"[..]));
        moves.store(0, AtomicOrdering::Relaxed);
        it.prev();
        assert_eq!(it.key(), b"a");
        let reverse_moves = moves.load(AtomicOrdering::Relaxed);
        assert!(
            reverse_moves <= 4 * MAX_SEQUENTIAL_SKIP,
            "{reverse_moves} inner moves"
        );
    }

    // ---- Model-based property test --------------------------------------------------------

    /// User keys: prefixes of each other, a NUL successor, 0xff bytes and the empty key.
    const KEYS: &[&[u8]] = &[b"", b"a", b"a\0", b"ab", b"b", b"b\xff", b"c"];
    /// Seek targets and bounds: the keys plus keys between and beyond them.
    const PROBES: &[&[u8]] = &[
        b"", b"a", b"a\0", b"aa", b"ab", b"b", b"b\xff", b"ba", b"c", b"d", b"\xff",
    ];

    #[derive(Debug, Clone)]
    enum Op {
        First,
        Last,
        Seek(usize),
        SeekForPrev(usize),
        Next,
        Prev,
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => Just(Op::First),
            1 => Just(Op::Last),
            2 => (0..PROBES.len()).prop_map(Op::Seek),
            2 => (0..PROBES.len()).prop_map(Op::SeekForPrev),
            5 => Just(Op::Next),
            5 => Just(Op::Prev),
        ]
    }

    /// `(key index, is put)` writes over a random number of distinct keys, so that some
    /// keys get long histories.
    fn arb_history() -> impl Strategy<Value = History> {
        (1..=KEYS.len()).prop_flat_map(|nkeys| {
            proptest::collection::vec((0..nkeys, proptest::bool::weighted(0.7)), 0..120).prop_map(
                |writes| {
                    writes
                        .into_iter()
                        .enumerate()
                        .map(|(i, (k, is_put))| {
                            let v = is_put.then(|| format!("v{}", i + 1).into_bytes());
                            (KEYS[k].to_vec(), v)
                        })
                        .collect()
                },
            )
        })
    }

    fn step_model(
        m: &BTreeMap<Vec<u8>, Vec<u8>>,
        pos: &Option<Vec<u8>>,
        op: &Op,
    ) -> Option<Vec<u8>> {
        let first = |r: Option<(&Vec<u8>, &Vec<u8>)>| r.map(|(k, _)| k.clone());
        match op {
            Op::First => first(m.iter().next()),
            Op::Last => first(m.iter().next_back()),
            Op::Seek(p) => first(
                m.range::<[u8], _>((Bound::Included(PROBES[*p]), Bound::Unbounded))
                    .next(),
            ),
            Op::SeekForPrev(p) => first(
                m.range::<[u8], _>((Bound::Unbounded, Bound::Included(PROBES[*p])))
                    .next_back(),
            ),
            Op::Next => pos.as_ref().and_then(|k| {
                first(
                    m.range::<[u8], _>((Bound::Excluded(k.as_slice()), Bound::Unbounded))
                        .next(),
                )
            }),
            Op::Prev => pos.as_ref().and_then(|k| {
                first(
                    m.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(k.as_slice())))
                        .next_back(),
                )
            }),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn db_iter_matches_btreemap_model(
            history in arb_history(),
            assign in proptest::collection::vec(0usize..8, 120),
            nchildren in 1usize..5,
            snapshot_pick in 0u64..130,
            latest in proptest::bool::weighted(0.2),
            lower in proptest::option::of(0..PROBES.len()),
            upper in proptest::option::of(0..PROBES.len()),
            ops in proptest::collection::vec(arb_op(), 1..80),
        ) {
            let seq = if latest { u64::MAX } else { snapshot_pick };
            let lower = lower.map(|i| PROBES[i]);
            let upper = upper.map(|i| PROBES[i]);
            let m = model(&history, seq, lower, upper);
            let mut it = DbIter::new(
                merged(&history, &assign, nchildren),
                seq,
                lower.map(<[u8]>::to_vec),
                upper.map(<[u8]>::to_vec),
                Box::new(()),
            );
            let mut pos: Option<Vec<u8>> = None;
            for op in &ops {
                if matches!(op, Op::Next | Op::Prev) && pos.is_none() {
                    continue; // REQUIRES valid()
                }
                match op {
                    Op::First => it.seek_to_first(),
                    Op::Last => it.seek_to_last(),
                    Op::Seek(p) => it.seek(PROBES[*p]),
                    Op::SeekForPrev(p) => it.seek_for_prev(PROBES[*p]),
                    Op::Next => it.next(),
                    Op::Prev => it.prev(),
                }
                pos = step_model(&m, &pos, op);
                prop_assert_eq!(it.valid(), pos.is_some(), "after {:?}", op);
                if let Some(k) = &pos {
                    prop_assert_eq!(it.key(), k.as_slice(), "after {:?}", op);
                    prop_assert_eq!(Some(it.value()), m.get(k).map(Vec::as_slice));
                }
            }
            prop_assert!(it.status().is_ok());
        }
    }
}
