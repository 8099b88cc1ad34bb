//! Writes a table from entries added in increasing internal-key order.

use std::cmp::Ordering;

use rialto_engine::{Error, Result, MAX_KEY_LEN, MAX_VALUE_LEN};
use rialto_io::WritableFile;

use super::block::BlockBuilder;
use super::bloom::{bloom_hash, BloomBuilder};
use super::compression::Compressor;
use super::format::{encode_block_trailer, BlockHandle, CompressionType, Footer, FORMAT_VERSION};
use super::properties::TableProperties;
use super::MAX_BLOCK_SIZE;
use crate::key::{self, ValueKind, TRAILER_LEN};
use crate::triad::KeySketch;
use crate::{Compression, Options};

/// How a table is laid out; taken from the database [`Options`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableBuildOptions {
    /// Target uncompressed size of a data block. Clamped to `1..=`[`MAX_BLOCK_SIZE`].
    pub block_size: usize,
    /// Entries between restart points in data blocks (at least 1).
    pub block_restart_interval: usize,
    /// Bloom filter bits per user key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Compression of data blocks.
    pub compression: Compression,
    /// A commit-log table's segment (TRIAD-LOG, `triad::cl_table`): values are pointers
    /// into it, recorded as the `cl_segment` property; raw value bytes count the values
    /// pointed to.
    pub cl_segment: Option<u64>,
}

impl Default for TableBuildOptions {
    fn default() -> Self {
        TableBuildOptions {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            cl_segment: None,
        }
    }
}

impl TableBuildOptions {
    /// The table-format options of a database.
    pub fn from_options(o: &Options) -> Self {
        TableBuildOptions {
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            bloom_bits_per_key: o.bloom_bits_per_key,
            compression: o.compression,
            cl_segment: None,
        }
    }
}

/// What a finished table holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMeta {
    /// Bytes of the file.
    pub file_size: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    /// The recorded properties.
    pub props: TableProperties,
}

/// Appends blocks to the file and remembers the first failure: after an I/O error the
/// file's contents are unknown, so every later call fails too.
struct BlockWriter {
    file: Box<dyn WritableFile>,
    file_name: String,
    offset: u64,
    compressor: Compressor,
    compressed: Vec<u8>,
    failed: bool,
}

impl BlockWriter {
    fn check(&self) -> Result<()> {
        if self.failed {
            return Err(Error::io(
                format!("write table {}", self.file_name),
                std::io::Error::other("an earlier write to this table failed"),
            ));
        }
        Ok(())
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.check()?;
        if let Err(e) = self.file.append(data) {
            self.failed = true;
            return Err(Error::io(format!("write table {}", self.file_name), e));
        }
        self.offset += data.len() as u64;
        Ok(())
    }

    /// Writes `raw` (compressed with `compression` if that saves at least 12.5%) and its
    /// trailer; returns its handle.
    fn write_block(&mut self, raw: &[u8], compression: Compression) -> Result<BlockHandle> {
        let ty = self
            .compressor
            .compress(raw, compression, &mut self.compressed);
        let compressed = std::mem::take(&mut self.compressed);
        let (contents, ty) = match ty {
            Some(ty) => (&compressed[..], ty),
            None => (raw, CompressionType::None),
        };
        let handle = BlockHandle::new(self.offset, contents.len() as u64);
        let trailer = encode_block_trailer(contents, ty);
        let r = self.append(contents).and_then(|()| self.append(&trailer));
        self.compressed = compressed;
        r.map(|()| handle)
    }

    fn sync(&mut self) -> Result<()> {
        self.check()?;
        let r = self.file.flush().and_then(|()| self.file.sync_data());
        if let Err(e) = r {
            self.failed = true;
            return Err(Error::io(format!("sync table {}", self.file_name), e));
        }
        Ok(())
    }
}

/// Builds a table file. Entries must arrive in strictly increasing internal-key order.
///
/// Data blocks are cut when their uncompressed size reaches `block_size`. The index entry of
/// a block is written only when the next block's first key is known, so that the separator
/// can be short ([`crate::key::separator`]).
pub struct TableBuilder {
    opts: TableBuildOptions,
    writer: BlockWriter,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// Handle of the last flushed data block, awaiting its index entry.
    pending_handle: Option<BlockHandle>,
    last_key: Vec<u8>,
    bloom: Option<BloomBuilder>,
    /// Distinct user keys, for the `key_sketch` property.
    sketch: KeySketch,
    props: TableProperties,
    handle_buf: Vec<u8>,
}

impl TableBuilder {
    /// A builder writing to `file` (named `file_name` in errors).
    pub fn new(file: Box<dyn WritableFile>, file_name: String, opts: TableBuildOptions) -> Self {
        let opts = TableBuildOptions {
            block_size: opts.block_size.clamp(1, MAX_BLOCK_SIZE),
            block_restart_interval: opts.block_restart_interval.max(1),
            ..opts
        };
        let offset = file.len();
        TableBuilder {
            writer: BlockWriter {
                file,
                file_name,
                offset,
                compressor: Compressor::new(),
                compressed: Vec::new(),
                failed: false,
            },
            data_block: BlockBuilder::new(opts.block_restart_interval),
            index_block: BlockBuilder::new(1),
            pending_handle: None,
            last_key: Vec::new(),
            sketch: KeySketch::new(),
            bloom: (opts.bloom_bits_per_key > 0)
                .then(|| BloomBuilder::new(opts.bloom_bits_per_key)),
            props: TableProperties::new(),
            handle_buf: Vec::new(),
            opts,
        }
    }

    /// Adds an entry. `ikey` must be a valid internal key greater than every key added
    /// before (a debug assertion; `InvalidArgument` in release builds).
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.writer.check()?;
        if ikey.len() < TRAILER_LEN || ikey.len() > MAX_KEY_LEN + TRAILER_LEN {
            return Err(Error::InvalidArgument(format!(
                "internal key of {} bytes (must be 8..={})",
                ikey.len(),
                MAX_KEY_LEN + TRAILER_LEN
            )));
        }
        if value.len() > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds {MAX_VALUE_LEN}",
                value.len()
            )));
        }
        if self.props.num_entries > 0 {
            let ordered = key::compare(&self.last_key, ikey) == Ordering::Less;
            debug_assert!(ordered, "table keys must be added in increasing order");
            if !ordered {
                return Err(Error::InvalidArgument(format!(
                    "table {}: keys added out of order",
                    self.writer.file_name
                )));
            }
        }
        if let Some(handle) = self.pending_handle.take() {
            let sep = key::separator(&self.last_key, ikey);
            self.add_index_entry(&sep, handle);
        }
        // One hash per key feeds both the filter and the sketch (the same function).
        let h = bloom_hash(key::user_key(ikey));
        if let Some(bloom) = &mut self.bloom {
            bloom.add_hash(h);
        }
        self.sketch.add_hash(h);
        self.record_props(ikey, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.data_block.add(ikey, value);
        if self.data_block.estimated_size() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    fn record_props(&mut self, ikey: &[u8], value: &[u8]) {
        let p = &mut self.props;
        let seq = key::sequence(ikey);
        if p.num_entries == 0 {
            p.smallest_key = ikey.to_vec();
            p.smallest_seq = seq;
            p.largest_seq = seq;
        } else {
            p.smallest_seq = p.smallest_seq.min(seq);
            p.largest_seq = p.largest_seq.max(seq);
        }
        p.num_entries += 1;
        if key::kind_byte(ikey) == ValueKind::Delete as u8 {
            p.num_deletions += 1;
        }
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += match self.opts.cl_segment {
            // A put's pointer: count the value it designates (tombstones have none).
            Some(_) => {
                crate::triad::cl_table::ValuePointer::decode(value).map_or(0, |v| u64::from(v.len))
            }
            None => value.len() as u64,
        };
    }

    fn add_index_entry(&mut self, sep: &[u8], handle: BlockHandle) {
        self.handle_buf.clear();
        handle.encode_varint(&mut self.handle_buf);
        self.index_block.add(sep, &self.handle_buf);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        debug_assert!(self.pending_handle.is_none());
        let entries = self.data_block.num_entries() as u64;
        let handle = self
            .writer
            .write_block(self.data_block.finish(), self.opts.compression)?;
        self.data_block.reset();
        let starts = self.props.block_starts.get_or_insert_with(|| vec![0]);
        let end = starts.last().copied().unwrap_or(0) + entries;
        starts.push(end);
        self.pending_handle = Some(handle);
        self.props.num_data_blocks += 1;
        Ok(())
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// True if nothing was added.
    pub fn is_empty(&self) -> bool {
        self.props.num_entries == 0
    }

    /// Bytes written so far plus the current data block: what the file would be, metadata
    /// aside, if finished now. Compaction uses it to cut output files.
    pub fn estimated_file_size(&self) -> u64 {
        self.writer.offset + self.data_block.estimated_size() as u64
    }

    /// Writes the last data block, filter, properties, index and footer, then flushes and
    /// syncs the file (`sync_data`). On error the file is garbage and should be deleted.
    pub fn finish(mut self) -> Result<TableMeta> {
        self.writer.check()?;
        self.flush_data_block()?;
        if let Some(handle) = self.pending_handle.take() {
            let succ = key::successor(&self.last_key);
            self.add_index_entry(&succ, handle);
        }
        let filter = match &self.bloom {
            Some(bloom) => self
                .writer
                .write_block(&bloom.finish(), Compression::None)?,
            None => BlockHandle::new(0, 0),
        };
        if self.props.num_entries > 0 {
            self.props.largest_key = self.last_key.clone();
        }
        if self.props.block_starts.is_none() {
            self.props.block_starts = Some(vec![0]);
        }
        self.props.key_sketch = Some(std::mem::take(&mut self.sketch));
        self.props.cl_segment = self.opts.cl_segment;
        let properties = self
            .writer
            .write_block(&self.props.encode(), Compression::None)?;
        let index = self
            .writer
            .write_block(self.index_block.finish(), Compression::None)?;
        let footer = Footer {
            index,
            filter,
            properties,
            format_version: FORMAT_VERSION,
        };
        self.writer.append(&footer.encode())?;
        // Complete in the page cache, not synced.
        rialto_killpoint::kill_point("sstable.finish");
        self.writer.sync()?;
        Ok(TableMeta {
            file_size: self.writer.offset,
            smallest: self.props.smallest_key.clone(),
            largest: self.props.largest_key.clone(),
            props: self.props,
        })
    }
}
