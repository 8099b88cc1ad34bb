//! Iterates a sorted, disjoint level (L1 and deeper) as one sequence, opening each table only
//! when the iteration reaches it.

use std::sync::Arc;

use rialto_engine::Result;

use crate::cache::table::TableCache;
use crate::cache::table::TableCursor;
use crate::iter::InternalIterator;
use crate::key;
use crate::sstable::BlockReads;
use crate::version::FileMeta;

/// Concatenation of a level's tables.
pub struct LevelIter {
    files: Vec<Arc<FileMeta>>,
    tables: Arc<TableCache>,
    index: usize,
    current: Option<TableCursor>,
    error: Option<rialto_engine::Error>,
    reads: BlockReads,
}

impl LevelIter {
    /// REQUIRES: `files` sorted by key and disjoint.
    pub fn new(files: Vec<Arc<FileMeta>>, tables: Arc<TableCache>, reads: BlockReads) -> Self {
        LevelIter {
            index: files.len(),
            files,
            tables,
            current: None,
            error: None,
            reads,
        }
    }

    fn open(&mut self, index: usize) -> bool {
        self.index = index;
        self.current = None;
        if index >= self.files.len() {
            return false;
        }
        match self.tables.iter(&self.files[index], self.reads) {
            Ok(it) => {
                self.current = Some(it);
                true
            }
            Err(e) => {
                self.error.get_or_insert(e);
                false
            }
        }
    }

    fn cur_valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    /// Moves forward over exhausted tables.
    fn skip_empty_forward(&mut self) {
        while !self.cur_valid() {
            if let Some(Err(e)) = self.current.as_ref().map(|c| c.status()) {
                self.error.get_or_insert(e);
                self.current = None;
                return;
            }
            if self.index + 1 >= self.files.len() || !self.open(self.index + 1) {
                self.current = None;
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    /// Moves backward over exhausted tables.
    fn skip_empty_backward(&mut self) {
        while !self.cur_valid() {
            if let Some(Err(e)) = self.current.as_ref().map(|c| c.status()) {
                self.error.get_or_insert(e);
                self.current = None;
                return;
            }
            if self.index == 0 || self.index > self.files.len() || !self.open(self.index - 1) {
                self.current = None;
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.error.is_none() && self.cur_valid()
    }
    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
        self.skip_empty_forward();
    }
    fn seek_to_last(&mut self) {
        if let Some(last) = self.files.len().checked_sub(1) {
            if self.open(last) {
                if let Some(c) = self.current.as_mut() {
                    c.seek_to_last();
                }
            }
        }
        self.skip_empty_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| key::compare(&f.largest, target) == std::cmp::Ordering::Less);
        if self.open(i) {
            if let Some(c) = self.current.as_mut() {
                c.seek(target);
            }
        }
        self.skip_empty_forward();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        // Last file whose smallest key is <= target.
        let i = self
            .files
            .partition_point(|f| key::compare(&f.smallest, target) != std::cmp::Ordering::Greater);
        match i.checked_sub(1) {
            Some(i) if self.open(i) => {
                if let Some(c) = self.current.as_mut() {
                    c.seek_for_prev(target);
                }
                self.skip_empty_backward();
            }
            _ => self.current = None,
        }
    }
    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_empty_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_empty_backward();
    }
    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.key())
    }
    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.value())
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}
