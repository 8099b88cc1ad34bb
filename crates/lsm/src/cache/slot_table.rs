//! The open-addressing hash table under the row cache and the block cache: entries sit in
//! the slot array itself, so a lookup costs one cache miss (the home slot) when the table is
//! not crowded, where a chained map costs a bucket, then a node, then the entry.
//!
//! Linear probing, at most 3/4 full. Invariant: every entry sits at or after its home slot
//! (`hash & mask`) with no empty slot in between, so a probe stops at the first empty slot;
//! removal shifts later entries back to keep it true (no tombstones). The table grows by
//! doubling and never shrinks: its slots are small next to what the caches hold.

/// An entry that knows its key's hash (stored or recomputed; it must never change).
pub(crate) trait Hashed {
    fn hash(&self) -> u64;
}

pub(crate) struct SlotTable<T> {
    slots: Box<[Option<T>]>,
    mask: usize,
    len: usize,
}

impl<T: Hashed> SlotTable<T> {
    /// An empty table of `cap` slots, a power of two.
    pub(crate) fn with_capacity(cap: usize) -> SlotTable<T> {
        debug_assert!(cap.is_power_of_two());
        SlotTable {
            slots: (0..cap).map(|_| None).collect(),
            mask: cap - 1,
            len: 0,
        }
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slots, full or empty.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn home(&self, hash: u64) -> usize {
        hash as usize & self.mask
    }

    /// Where a lookup of `hash` starts reading, for a prefetch.
    pub(crate) fn home_slot(&self, hash: u64) -> *const Option<T> {
        &self.slots[self.home(hash)]
    }

    /// The slot of the first entry with this hash that `eq` accepts.
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<usize> {
        let mut i = self.home(hash);
        loop {
            match &self.slots[i] {
                None => return None,
                Some(e) if eq(e) => return Some(i),
                Some(_) => i = (i + 1) & self.mask,
            }
        }
    }

    /// The entry in slot `i`, if any.
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.slots.get(i)?.as_ref()
    }

    /// The entry in slot `i`, if any, to update in place (never its hash).
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.slots.get_mut(i)?.as_mut()
    }

    /// Adds an entry whose key is not in the table. Slot numbers taken before are stale
    /// afterwards (the table may have grown).
    pub(crate) fn insert_new(&mut self, e: T) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mut i = self.home(e.hash());
        while self.slots[i].is_some() {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = Some(e);
        self.len += 1;
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, SlotTable::with_capacity(self.slots.len() * 2));
        for e in old.slots.into_vec().into_iter().flatten() {
            self.insert_new(e);
        }
    }

    /// Takes the entry out of slot `hole` and shifts the entries after it back (see the
    /// module docs). Entries move only into `hole` or a slot emptied by this call.
    pub(crate) fn remove_at(&mut self, mut hole: usize) -> T {
        let e = self.slots[hole].take().expect("remove_at an occupied slot");
        self.len -= 1;
        let mut k = hole;
        loop {
            k = (k + 1) & self.mask;
            let Some(next) = &self.slots[k] else {
                break;
            };
            let home = self.home(next.hash());
            // The entry at k may fill the hole only if its home is not in (hole, k].
            if (k.wrapping_sub(home) & self.mask) >= (k.wrapping_sub(hole) & self.mask) {
                self.slots.swap(hole, k);
                hole = k;
            }
        }
        e
    }

    /// Every entry, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    /// Removes every entry in slots `slots` that `keep` refuses, handing each to `removed`.
    /// A removal shifts later entries back into the slot just read, so that slot is read
    /// again; an entry only ever moves into an emptied slot at or after the one being read,
    /// or into one read already (when its cluster wraps past the end). So over consecutive
    /// ranges covering `0..capacity()`, with no other change in between, every entry is
    /// judged at least once and a kept one stays kept; changes between two calls (which may
    /// move entries back across the boundary, or grow the table) can only leave some entries
    /// unjudged.
    pub(crate) fn retain_slots(
        &mut self,
        slots: std::ops::Range<usize>,
        mut keep: impl FnMut(&T) -> bool,
        mut removed: impl FnMut(T),
    ) {
        for i in slots.start..slots.end.min(self.slots.len()) {
            while self.slots[i].as_ref().is_some_and(|e| !keep(e)) {
                removed(self.remove_at(i));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct E {
        hash: u64,
        key: u8,
    }

    impl Hashed for E {
        fn hash(&self) -> u64 {
            self.hash
        }
    }

    proptest::proptest! {
        /// The table against a map, with hashes drawn from a few values so that probes run
        /// long, wrap around the end, and removals shift entries back.
        #[test]
        fn the_table_matches_a_map(ops in proptest::collection::vec(
            (proptest::bool::ANY, 0u8..40, 0u64..6), 1..400)
        ) {
            let mut t = SlotTable::with_capacity(4);
            let mut model = std::collections::HashMap::new();
            // Hashes near the top of the table, so probes wrap.
            let hash_of = |h: u64| h.wrapping_sub(3);
            for (insert, k, h) in ops {
                // A key always has the same hash.
                let hash = hash_of(*model.get(&k).unwrap_or(&h));
                let found = t.find(hash, |e: &E| e.key == k);
                proptest::prop_assert_eq!(found.is_some(), model.contains_key(&k));
                match (insert, found) {
                    (true, None) => {
                        t.insert_new(E { hash, key: k });
                        model.insert(k, h);
                    }
                    (false, Some(i)) => {
                        let removed = t.remove_at(i);
                        proptest::prop_assert_eq!(removed.key, k);
                        model.remove(&k);
                    }
                    _ => {}
                }
                proptest::prop_assert_eq!(t.len(), model.len());
                proptest::prop_assert_eq!(t.iter().count(), model.len());
                for (&k, &h) in &model {
                    let i = t.find(hash_of(h), |e| e.key == k);
                    proptest::prop_assert_eq!(i.and_then(|i| t.get(i)).map(|e| e.key), Some(k));
                }
            }
        }
    }

    proptest::proptest! {
        /// `retain_slots` leaves exactly the entries it keeps, each still found from its home slot,
        /// with hashes crowded near the end of the table so that clusters wrap.
        #[test]
        fn retain_keeps_exactly_what_it_keeps(
            keys in proptest::collection::btree_map(0u8..200, 0u64..8, 0..120),
            cut in 0u8..200,
        ) {
            let hash_of = |h: u64| h.wrapping_sub(4);
            let mut t = SlotTable::with_capacity(4);
            for (&k, &h) in &keys {
                t.insert_new(E { hash: hash_of(h), key: k });
            }
            let mut gone = Vec::new();
            // In chunks, as the row cache does.
            let cap = t.capacity();
            for at in (0..cap).step_by(3) {
                t.retain_slots(at..at + 3, |e| e.key < cut, |e| gone.push(e.key));
            }
            gone.sort_unstable();
            let want_gone: Vec<u8> = keys.keys().copied().filter(|&k| k >= cut).collect();
            proptest::prop_assert_eq!(gone, want_gone);
            proptest::prop_assert_eq!(t.len(), keys.keys().filter(|&&k| k < cut).count());
            for (&k, &h) in &keys {
                let found = t.find(hash_of(h), |e| e.key == k).is_some();
                proptest::prop_assert_eq!(found, k < cut);
            }
        }
    }

    #[test]
    fn growth_keeps_every_entry() {
        let mut t = SlotTable::with_capacity(2);
        for k in 0..=255u8 {
            t.insert_new(E {
                hash: u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                key: k,
            });
        }
        assert_eq!(t.len(), 256);
        assert!(t.capacity() >= 256 * 4 / 3);
        for k in 0..=255u8 {
            assert!(t
                .find(u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15), |e| e.key
                    == k)
                .is_some());
        }
        assert!(t.get(t.capacity()).is_none());
    }
}
