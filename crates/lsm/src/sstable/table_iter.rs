//! A two-level iterator over a table: the in-memory index picks the data block, a
//! [`BlockIter`] walks it, and moves that run off either end of a block continue in the
//! neighbouring block.

use std::sync::Arc;

use bytes::Bytes;
use rialto_engine::{Error, Result};

use super::block::BlockIter;
use super::reader::{BlockReads, Readahead, TableReader};
use crate::iter::InternalIterator;

/// Iterator over every entry of a table, in internal-key order. Owns an `Arc` of its table.
///
/// Errors (I/O or corruption) make it invalid for good; `status()` reports the first one.
pub struct TableIter {
    table: Arc<TableReader>,
    /// Index of the block `data` iterates over.
    block_idx: usize,
    data: Option<BlockIter>,
    err: Option<Error>,
    /// `Some` for [`BlockReads::Streaming`]: the window blocks are read from.
    ahead: Option<Readahead>,
}

impl TableIter {
    pub(crate) fn new(table: Arc<TableReader>, reads: BlockReads) -> Self {
        TableIter {
            table,
            block_idx: 0,
            data: None,
            err: None,
            ahead: (reads == BlockReads::Streaming).then(Readahead::default),
        }
    }

    /// The table iterated over.
    pub fn table(&self) -> &Arc<TableReader> {
        &self.table
    }

    /// The current value as a zero-copy slice of its block. REQUIRES: `valid()`.
    pub fn value_bytes(&self) -> Bytes {
        self.data
            .as_ref()
            .map_or_else(Bytes::new, |d| d.value_bytes())
    }

    /// Positions `data` on block `i` (unpositioned within it). False on error.
    fn load_block(&mut self, i: usize) -> bool {
        if self.err.is_some() {
            return false;
        }
        if self.block_idx == i && self.data.is_some() {
            return true;
        }
        let offset = self.table.index.handle(i).offset;
        let block = match &mut self.ahead {
            Some(ahead) => self.table.data_block_streaming(i, ahead),
            None => self.table.data_block(i),
        };
        match block {
            Ok(block) => {
                match &mut self.data {
                    Some(it) => it.reset(block, offset),
                    None => {
                        let mut it = BlockIter::new(block);
                        it.set_context(Arc::clone(&self.table.file_name), offset);
                        self.data = Some(it);
                    }
                }
                self.block_idx = i;
                true
            }
            Err(e) => {
                self.err = Some(e);
                self.data = None;
                false
            }
        }
    }

    /// Moves any corruption met by the block iterator into `err`. False if there was one.
    fn check_block(&mut self) -> bool {
        if let Some(it) = &self.data {
            if let Err(e) = it.status() {
                self.err = Some(e);
                self.data = None;
                return false;
            }
        }
        true
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    /// While the block iterator is exhausted, moves to the first entry of the next block.
    fn skip_forward(&mut self) {
        while self.check_block() && self.data.is_some() && !self.data_valid() {
            let next = self.block_idx + 1;
            if next >= self.table.index.len() || !self.load_block(next) {
                self.data = None;
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    /// While the block iterator is exhausted, moves to the last entry of the previous block.
    fn skip_backward(&mut self) {
        while self.check_block() && self.data.is_some() && !self.data_valid() {
            if self.block_idx == 0 || !self.load_block(self.block_idx - 1) {
                self.data = None;
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data_valid()
    }

    fn seek_to_first(&mut self) {
        if self.table.index.len() == 0 || !self.load_block(0) {
            self.data = None;
            return;
        }
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        let n = self.table.index.len();
        if n == 0 || !self.load_block(n - 1) {
            self.data = None;
            return;
        }
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let i = self.table.index.find(target);
        if i >= self.table.index.len() || !self.load_block(i) {
            self.data = None;
            return;
        }
        if let Some(d) = &mut self.data {
            d.seek(target);
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self.table.index.find(target);
        if i >= self.table.index.len() {
            // Every entry is <= the last separator < target.
            self.seek_to_last();
            return;
        }
        if !self.load_block(i) {
            self.data = None;
            return;
        }
        if let Some(d) = &mut self.data {
            d.seek_for_prev(target);
        }
        self.skip_backward();
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            None => Ok(()),
            Some(e) => Err(copy_error(e)),
        }
    }
}

/// A copy of `e` for repeated `status()` calls (`Error` is not `Clone`).
fn copy_error(e: &Error) -> Error {
    match e {
        Error::Corruption {
            file,
            offset,
            reason,
        } => Error::corruption(file.clone(), *offset, reason.clone()),
        Error::Io { context, source } => {
            let source = match source.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(source.kind(), source.to_string()),
            };
            Error::io(context.clone(), source)
        }
        Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
        other => Error::io("table iterator", std::io::Error::other(other.to_string())),
    }
}
