//! [`MergingIterator`]: one sorted view over many sorted internal iterators.
//!
//! Every read path that spans more than one source (memtables, level-0 tables, deeper levels)
//! goes through a merge, so it has to cost O(log n) comparisons per step and allocate nothing
//! once positioned. The children are kept in a binary heap of child indices; the heap is a
//! min-heap while moving forward and a max-heap while moving backward.
//!
//! # Order and ties
//!
//! Entries are ordered by the pair `(internal key, child index)`: by [`crate::key::compare`],
//! and, for the (normally impossible) case of one internal key held by two children, the lower
//! child index first. Callers list children newest source first, so a tie yields the newer
//! source first when moving forward. Moving backward visits exactly the mirror image of that
//! sequence (higher child index first on a tie). This is what keeps a direction switch exact,
//! and it is also what a reader of versions wants: whoever treats "the entry met first going
//! forward" or "the entry met last going backward" as the newest sees the same entry.
//!
//! # Errors
//!
//! A child that fails becomes invalid (the [`InternalIterator`] contract) and keeps its error.
//! Dropping its entries silently would be wrong: a missing tombstone resurrects an old value.
//! So the first failure makes the whole merge invalid, for good; [`MergingIterator::status`]
//! reports the error of the lowest-indexed failing child. Create a new iterator to retry.

use std::cmp::Ordering;
use std::fmt;

use rialto_engine::{Error, Result};

use crate::iter::{BoxedIter, InternalIterator};
use crate::key::{trailer, user_key, TRAILER_LEN};

/// Which way the heap is ordered, and which way every valid child is positioned relative to
/// the current entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Min-heap; every valid child is at its first entry `>=` the current one (in the
    /// `(key, child)` order).
    Forward,
    /// Max-heap; every valid child is at its last entry `<=` the current one.
    Reverse,
}

/// A sorted merge of child iterators. See the module documentation for ordering and errors.
///
/// Invariants while no child has failed:
/// * `heap` holds exactly the indices of the valid children, heap-ordered for `direction`;
///   `heap[0]` is the current entry.
/// * In `Forward`, each valid child is at its smallest entry not before the current entry;
///   in `Reverse`, at its largest entry not after it.
pub struct MergingIterator {
    children: Vec<BoxedIter>,
    heap: Vec<usize>,
    direction: Direction,
    /// Copy of the current key, reused across direction switches (which reposition every
    /// child relative to it while the current child's key slice cannot be borrowed).
    scratch: Vec<u8>,
    /// Set once any child reported an error; the merge is invalid from then on.
    failed: bool,
}

impl fmt::Debug for MergingIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergingIterator")
            .field("children", &self.children.len())
            .field("heap", &self.heap)
            .field("direction", &self.direction)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl MergingIterator {
    /// Merges `children`, which are listed newest source first (the order decides ties).
    /// The result is unpositioned, like its children are expected to be.
    pub fn new(children: Vec<BoxedIter>) -> Self {
        let heap = Vec::with_capacity(children.len());
        MergingIterator {
            children,
            heap,
            direction: Direction::Forward,
            scratch: Vec::new(),
            failed: false,
        }
    }

    /// Rebuilds the heap from scratch for `direction` after every child was repositioned.
    /// Notes the failure of any child that is invalid because of an error.
    fn rebuild(&mut self, direction: Direction) {
        self.direction = direction;
        self.heap.clear();
        for (i, child) in self.children.iter().enumerate() {
            if child.valid() {
                self.heap.push(i);
            } else if child.status().is_err() {
                self.failed = true;
            }
        }
        if self.failed {
            self.heap.clear();
            return;
        }
        for pos in (0..self.heap.len() / 2).rev() {
            sift_down(&self.children, &mut self.heap, direction, pos);
        }
    }

    /// Restores the heap after the top child moved one step; drops it if it ran out.
    fn fix_top(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        if self.children[top].valid() {
            sift_down(&self.children, &mut self.heap, self.direction, 0);
        } else if self.children[top].status().is_err() {
            self.failed = true;
            self.heap.clear();
        } else {
            self.heap.swap_remove(0);
            if !self.heap.is_empty() {
                sift_down(&self.children, &mut self.heap, self.direction, 0);
            }
        }
    }

    /// Moves every child but the current one to its first entry after the current entry,
    /// then orders the heap forward. The current child stays; it is then the heap's top.
    fn switch_to_forward(&mut self, cur: usize) {
        self.scratch.clear();
        self.scratch.extend_from_slice(self.children[cur].key());
        for (j, child) in self.children.iter_mut().enumerate() {
            if j == cur {
                continue;
            }
            child.seek(&self.scratch);
            // An equal key is after the current entry only if its child index is higher.
            if j < cur && child.valid() && cmp_keys(child.key(), &self.scratch) == Ordering::Equal {
                child.next();
            }
        }
        self.rebuild(Direction::Forward);
        debug_assert!(self.failed || self.heap.first() == Some(&cur));
    }

    /// Mirror of [`Self::switch_to_forward`]: every other child goes to its last entry before
    /// the current entry.
    fn switch_to_reverse(&mut self, cur: usize) {
        self.scratch.clear();
        self.scratch.extend_from_slice(self.children[cur].key());
        for (j, child) in self.children.iter_mut().enumerate() {
            if j == cur {
                continue;
            }
            child.seek_for_prev(&self.scratch);
            // An equal key is before the current entry only if its child index is lower.
            if j > cur && child.valid() && cmp_keys(child.key(), &self.scratch) == Ordering::Equal {
                child.prev();
            }
        }
        self.rebuild(Direction::Reverse);
        debug_assert!(self.failed || self.heap.first() == Some(&cur));
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.failed && !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) {
        if self.failed {
            return;
        }
        for child in &mut self.children {
            child.seek_to_first();
        }
        self.rebuild(Direction::Forward);
    }

    fn seek_to_last(&mut self) {
        if self.failed {
            return;
        }
        for child in &mut self.children {
            child.seek_to_last();
        }
        self.rebuild(Direction::Reverse);
    }

    fn seek(&mut self, target: &[u8]) {
        if self.failed {
            return;
        }
        for child in &mut self.children {
            child.seek(target);
        }
        self.rebuild(Direction::Forward);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.failed {
            return;
        }
        for child in &mut self.children {
            child.seek_for_prev(target);
        }
        self.rebuild(Direction::Reverse);
    }

    fn next(&mut self) {
        if !self.valid() {
            return;
        }
        let cur = self.heap[0];
        if self.direction == Direction::Reverse {
            self.switch_to_forward(cur);
            if self.failed {
                return;
            }
        }
        self.children[cur].next();
        self.fix_top();
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let cur = self.heap[0];
        if self.direction == Direction::Forward {
            self.switch_to_reverse(cur);
            if self.failed {
                return;
            }
        }
        self.children[cur].prev();
        self.fix_top();
    }

    fn key(&self) -> &[u8] {
        match self.heap.first() {
            Some(&i) if !self.failed => self.children[i].key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.heap.first() {
            Some(&i) if !self.failed => self.children[i].value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        for child in &self.children {
            child.status()?;
        }
        if self.failed {
            // A child broke the contract by forgetting its error; still never look healthy.
            return Err(Error::corruption(
                "merging iterator",
                0,
                "a child iterator failed but no longer reports its error",
            ));
        }
        Ok(())
    }
}

/// Merges `children` (newest source first); a single child is returned as is, saving a
/// layer of dynamic dispatch and heap maintenance on every step.
#[cfg(test)]
pub fn new_merging(mut children: Vec<BoxedIter>) -> BoxedIter {
    if children.len() == 1 {
        if let Some(only) = children.pop() {
            return only;
        }
    }
    Box::new(MergingIterator::new(children))
}

/// Splits a key for ordering. Keys too short to hold a trailer (corrupt) must not panic the
/// merge: they order as the oldest version of a user key equal to all their bytes. That keeps
/// the order total, so the heap stays consistent until a reader notices the corruption.
#[inline]
fn split(k: &[u8]) -> (&[u8], u64) {
    if k.len() >= TRAILER_LEN {
        (user_key(k), trailer(k))
    } else {
        (k, 0)
    }
}

/// [`crate::key::compare`], total over malformed keys as well (see [`split`]).
#[inline]
fn cmp_keys(a: &[u8], b: &[u8]) -> Ordering {
    let (ua, ta) = split(a);
    let (ub, tb) = split(b);
    match ua.cmp(ub) {
        Ordering::Equal => tb.cmp(&ta),
        o => o,
    }
}

/// True when child `a`'s entry comes out of the heap before child `b`'s.
#[inline]
fn precedes(children: &[BoxedIter], direction: Direction, a: usize, b: usize) -> bool {
    let ord = match cmp_keys(children[a].key(), children[b].key()) {
        Ordering::Equal => a.cmp(&b),
        o => o,
    };
    match direction {
        Direction::Forward => ord == Ordering::Less,
        Direction::Reverse => ord == Ordering::Greater,
    }
}

/// Moves `heap[pos]` down until neither child precedes it. Two comparisons per level.
#[inline]
fn sift_down(children: &[BoxedIter], heap: &mut [usize], direction: Direction, mut pos: usize) {
    let n = heap.len();
    let item = heap[pos];
    loop {
        let left = 2 * pos + 1;
        if left >= n {
            break;
        }
        let right = left + 1;
        let best = if right < n && precedes(children, direction, heap[right], heap[left]) {
            right
        } else {
            left
        };
        if !precedes(children, direction, heap[best], item) {
            break;
        }
        heap[pos] = heap[best];
        pos = best;
    }
    heap[pos] = item;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::iter::VecIter;
    use crate::key::{make_internal_key, ValueKind};

    type Entry = (Vec<u8>, Vec<u8>);

    fn ik(k: &[u8], seq: u64) -> Vec<u8> {
        make_internal_key(k, seq, ValueKind::Put)
    }

    fn sorted(mut v: Vec<Entry>) -> Vec<Entry> {
        v.sort_by(|a, b| crate::key::compare(&a.0, &b.0));
        v
    }

    fn boxed(v: Vec<Entry>) -> BoxedIter {
        Box::new(VecIter::new(sorted(v)))
    }

    fn collect_forward(it: &mut dyn InternalIterator) -> Vec<Entry> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn collect_reverse(it: &mut dyn InternalIterator) -> Vec<Entry> {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        out
    }

    #[test]
    fn merge_empty_and_single() {
        let mut m = MergingIterator::new(Vec::new());
        m.seek_to_first();
        assert!(!m.valid());
        m.seek_to_last();
        assert!(!m.valid());
        assert!(m.status().is_ok());

        let mut one = new_merging(vec![boxed(vec![(ik(b"a", 1), b"x".to_vec())])]);
        assert_eq!(collect_forward(one.as_mut()).len(), 1);

        let mut empties = MergingIterator::new(vec![boxed(vec![]), boxed(vec![])]);
        assert!(collect_forward(&mut empties).is_empty());
        assert!(collect_reverse(&mut empties).is_empty());
    }

    #[test]
    fn merge_interleaves_in_key_order() {
        let a = vec![(ik(b"a", 5), b"a5".to_vec()), (ik(b"c", 1), b"c1".to_vec())];
        let b = vec![(ik(b"a", 7), b"a7".to_vec()), (ik(b"b", 2), b"b2".to_vec())];
        let mut m = MergingIterator::new(vec![boxed(a), boxed(b)]);
        let fwd: Vec<Vec<u8>> = collect_forward(&mut m).into_iter().map(|e| e.1).collect();
        assert_eq!(
            fwd,
            vec![
                b"a7".to_vec(),
                b"a5".to_vec(),
                b"b2".to_vec(),
                b"c1".to_vec()
            ]
        );
        let mut rev: Vec<Vec<u8>> = collect_reverse(&mut m).into_iter().map(|e| e.1).collect();
        rev.reverse();
        assert_eq!(fwd, rev);
    }

    #[test]
    fn merge_ties_prefer_lower_child_forward_and_mirror_backward() {
        let k = ik(b"k", 3);
        let children = (0..3)
            .map(|i| boxed(vec![(k.clone(), vec![b'0' + i])]))
            .collect::<Vec<_>>();
        let mut m = MergingIterator::new(children);
        let fwd: Vec<Vec<u8>> = collect_forward(&mut m).into_iter().map(|e| e.1).collect();
        assert_eq!(fwd, vec![b"0".to_vec(), b"1".to_vec(), b"2".to_vec()]);
        let rev: Vec<Vec<u8>> = collect_reverse(&mut m).into_iter().map(|e| e.1).collect();
        assert_eq!(rev, vec![b"2".to_vec(), b"1".to_vec(), b"0".to_vec()]);

        // Direction switches in the middle of a run of equal keys.
        m.seek_to_first();
        m.next();
        assert_eq!(m.value(), b"1");
        m.prev();
        assert_eq!(m.value(), b"0");
        m.next();
        m.next();
        assert_eq!(m.value(), b"2");
        m.prev();
        assert_eq!(m.value(), b"1");
        m.next();
        assert_eq!(m.value(), b"2");
        m.next();
        assert!(!m.valid());
    }

    /// A child that fails when it reaches its end: used to check error propagation.
    struct FailingIter {
        inner: VecIter,
        failed: bool,
    }

    impl InternalIterator for FailingIter {
        fn valid(&self) -> bool {
            !self.failed && self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.inner.seek_to_first();
        }
        fn seek_to_last(&mut self) {
            self.inner.seek_to_last();
        }
        fn seek(&mut self, t: &[u8]) {
            self.inner.seek(t);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.inner.seek_for_prev(t);
        }
        fn next(&mut self) {
            self.inner.next();
            self.failed |= !self.inner.valid();
        }
        fn prev(&mut self) {
            self.inner.prev();
            self.failed |= !self.inner.valid();
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            if self.failed {
                Err(Error::corruption("child", 7, "bad block"))
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn merge_child_error_invalidates_and_is_reported() {
        let ok = boxed(vec![(ik(b"a", 1), vec![]), (ik(b"z", 1), vec![])]);
        let bad = Box::new(FailingIter {
            inner: VecIter::new(vec![(ik(b"b", 1), vec![])]),
            failed: false,
        });
        let mut m = MergingIterator::new(vec![ok, bad]);
        m.seek_to_first();
        assert!(m.valid());
        m.next();
        assert_eq!(user_key(m.key()), b"b");
        // The failing child runs off its end with an error: "z" must not be returned.
        m.next();
        assert!(!m.valid());
        let err = m.status().expect_err("child error must surface");
        assert!(err.is_corruption());
        // Sticky: further seeks do not revive it.
        m.seek_to_first();
        assert!(!m.valid());
        assert!(m.status().is_err());
    }

    #[test]
    fn merge_tolerates_malformed_keys_without_panicking() {
        let short = Box::new(VecIter::new(vec![(b"ab".to_vec(), b"bad".to_vec())]));
        let good = boxed(vec![(ik(b"a", 1), vec![]), (ik(b"b", 1), vec![])]);
        let mut m = MergingIterator::new(vec![good, short]);
        assert_eq!(collect_forward(&mut m).len(), 3);
        assert_eq!(collect_reverse(&mut m).len(), 3);
    }

    /// Counts `key()` calls, i.e. comparisons, to check the per-step cost.
    struct CountingIter {
        inner: VecIter,
        calls: Arc<AtomicUsize>,
    }

    impl InternalIterator for CountingIter {
        fn valid(&self) -> bool {
            self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.inner.seek_to_first();
        }
        fn seek_to_last(&mut self) {
            self.inner.seek_to_last();
        }
        fn seek(&mut self, t: &[u8]) {
            self.inner.seek(t);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.inner.seek_for_prev(t);
        }
        fn next(&mut self) {
            self.inner.next();
        }
        fn prev(&mut self) {
            self.inner.prev();
        }
        fn key(&self) -> &[u8] {
            self.calls.fetch_add(1, AtomicOrdering::Relaxed);
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn merge_step_cost_is_logarithmic() {
        const CHILDREN: usize = 64;
        const PER_CHILD: usize = 50;
        let calls = Arc::new(AtomicUsize::new(0));
        let children: Vec<BoxedIter> = (0..CHILDREN)
            .map(|c| {
                let entries = (0..PER_CHILD)
                    .map(|i| {
                        let k = format!("{:06}", i * CHILDREN + c);
                        (ik(k.as_bytes(), 1), Vec::new())
                    })
                    .collect();
                Box::new(CountingIter {
                    inner: VecIter::new(entries),
                    calls: calls.clone(),
                }) as BoxedIter
            })
            .collect();
        let mut m = MergingIterator::new(children);
        m.seek_to_first();
        calls.store(0, AtomicOrdering::Relaxed);
        let mut steps = 0;
        while m.valid() {
            m.next();
            steps += 1;
        }
        assert_eq!(steps, CHILDREN * PER_CHILD);
        // A sift-down costs at most 2 comparisons (4 key reads) per level; log2(64) = 6.
        let per_step = calls.load(AtomicOrdering::Relaxed) as f64 / steps as f64;
        assert!(per_step <= 24.0, "{per_step} key reads per step");
    }

    /// An operation on an internal iterator, for the model test.
    #[derive(Debug, Clone)]
    enum Op {
        First,
        Last,
        Seek(Vec<u8>),
        SeekForPrev(Vec<u8>),
        Next,
        Prev,
    }

    fn arb_target() -> impl Strategy<Value = Vec<u8>> {
        (0u8..6, 0u64..12, any::<bool>()).prop_map(|(k, seq, put)| {
            let kind = if put {
                ValueKind::Put
            } else {
                ValueKind::Delete
            };
            make_internal_key(&[b'a' + k], seq, kind)
        })
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => Just(Op::First),
            1 => Just(Op::Last),
            2 => arb_target().prop_map(Op::Seek),
            2 => arb_target().prop_map(Op::SeekForPrev),
            4 => Just(Op::Next),
            4 => Just(Op::Prev),
        ]
    }

    proptest! {
        /// The merge behaves exactly like one iterator over all entries sorted by
        /// `(internal key, child index)`, including across direction switches.
        #[test]
        fn merge_matches_sorted_model(
            // (user key, seq, kind, child)
            raw in proptest::collection::vec((0u8..6, 1u64..10, any::<bool>(), 0usize..4), 0..40),
            ops in proptest::collection::vec(arb_op(), 1..60),
        ) {
            let mut per_child: Vec<Vec<Entry>> = vec![Vec::new(); 4];
            let mut model: Vec<(Vec<u8>, usize, Vec<u8>)> = Vec::new();
            for (n, &(k, seq, put, child)) in raw.iter().enumerate() {
                let kind = if put { ValueKind::Put } else { ValueKind::Delete };
                let key = make_internal_key(&[b'a' + k], seq, kind);
                // One child never holds a key twice; across children duplicates are allowed.
                if per_child[child].iter().any(|e| e.0 == key) {
                    continue;
                }
                let value = n.to_le_bytes().to_vec();
                per_child[child].push((key.clone(), value.clone()));
                model.push((key, child, value));
            }
            model.sort_by(|a, b| crate::key::compare(&a.0, &b.0).then(a.1.cmp(&b.1)));
            let children = per_child.into_iter().map(boxed).collect();
            let mut m = MergingIterator::new(children);

            let mut pos: Option<usize> = None;
            for op in ops {
                match op {
                    Op::First => {
                        m.seek_to_first();
                        pos = (!model.is_empty()).then_some(0);
                    }
                    Op::Last => {
                        m.seek_to_last();
                        pos = model.len().checked_sub(1);
                    }
                    Op::Seek(t) => {
                        m.seek(&t);
                        let i = model.partition_point(|e| crate::key::compare(&e.0, &t) == Ordering::Less);
                        pos = (i < model.len()).then_some(i);
                    }
                    Op::SeekForPrev(t) => {
                        m.seek_for_prev(&t);
                        let i = model.partition_point(|e| crate::key::compare(&e.0, &t) != Ordering::Greater);
                        pos = i.checked_sub(1);
                    }
                    Op::Next => {
                        let Some(p) = pos else { continue };
                        m.next();
                        pos = (p + 1 < model.len()).then_some(p + 1);
                    }
                    Op::Prev => {
                        let Some(p) = pos else { continue };
                        m.prev();
                        pos = p.checked_sub(1);
                    }
                }
                prop_assert_eq!(m.valid(), pos.is_some());
                if let Some(p) = pos {
                    prop_assert_eq!(m.key(), model[p].0.as_slice());
                    prop_assert_eq!(m.value(), model[p].2.as_slice());
                }
            }
            prop_assert!(m.status().is_ok());
        }
    }
}
