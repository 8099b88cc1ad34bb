//! The internal iterator protocol shared by memtables, blocks, tables, levels and merges.
//!
//! Keys are internal keys ([`crate::key`]), ordered by [`crate::key::compare`].
//! An iterator starts unpositioned. Errors make it invalid and are kept in `status()`.
//!
//! The iterators that combine sources implement it here too: [`merge`] (one sorted view over
//! many), [`level`] (a sorted level, opening each table when reached) and [`db`] (the user's
//! view of the merged stream).

pub mod db;
pub mod level;
pub mod merge;

use rialto_engine::Result;

/// A cursor over internal key/value entries.
pub trait InternalIterator: Send {
    /// True when positioned at an entry.
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry `>= target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last entry `<= target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves forward. REQUIRES: `valid()`.
    fn next(&mut self);
    /// Moves backward. REQUIRES: `valid()`.
    fn prev(&mut self);
    /// Current internal key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// Current value. REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// First error met, if any.
    fn status(&self) -> Result<()>;
}

/// Boxed iterator, as merges hold them.
pub type BoxedIter = Box<dyn InternalIterator>;

/// An iterator over a sorted in-memory vector, for tests.
#[cfg(test)]
#[derive(Debug, Clone, Default)]
pub struct VecIter {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

#[cfg(test)]
impl VecIter {
    /// REQUIRES: `entries` sorted by internal key order, no duplicates.
    pub fn new(entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        debug_assert!(entries
            .windows(2)
            .all(|w| crate::key::compare(&w[0].0, &w[1].0) == std::cmp::Ordering::Less));
        VecIter { entries, pos: None }
    }
}

#[cfg(test)]
impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = if self.entries.is_empty() {
            None
        } else {
            Some(0)
        };
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .entries
            .partition_point(|(k, _)| crate::key::compare(k, target) == std::cmp::Ordering::Less);
        self.pos = (i < self.entries.len()).then_some(i);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self.entries.partition_point(|(k, _)| {
            crate::key::compare(k, target) != std::cmp::Ordering::Greater
        });
        self.pos = i.checked_sub(1);
    }
    fn next(&mut self) {
        self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.entries.len());
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        &self.entries[self.pos.unwrap_or(0)].0
    }
    fn value(&self) -> &[u8] {
        &self.entries[self.pos.unwrap_or(0)].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
