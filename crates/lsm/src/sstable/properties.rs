//! Table properties: counts and key range recorded when a table is written.
//!
//! Stored as a block (restart interval 1) of `name → value` entries sorted by name. Numbers
//! are varint64; keys are raw internal keys. Readers ignore names they do not know, so later
//! versions can add properties without breaking older readers.

use super::block::{Block, BlockBuilder};
use super::coding::{get_varint64, put_varint64};
use super::format::FORMAT_VERSION;
use crate::key::TRAILER_LEN;
use crate::triad::KeySketch;

/// What a table holds, as recorded by its builder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableProperties {
    /// Entries (puts and deletes).
    pub num_entries: u64,
    /// Entries that are tombstones.
    pub num_deletions: u64,
    /// Data blocks.
    pub num_data_blocks: u64,
    /// Sum of internal-key lengths (trailers included), before prefix compression.
    pub raw_key_bytes: u64,
    /// Sum of value lengths, before compression.
    pub raw_value_bytes: u64,
    /// Smallest sequence number of any entry (0 for an empty table).
    pub smallest_seq: u64,
    /// Largest sequence number of any entry.
    pub largest_seq: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest_key: Vec<u8>,
    /// Format version of the table.
    pub format_version: u32,
    /// HyperLogLog sketch of the table's user keys (TRIAD-DISK); `None` in tables written
    /// before sketches existed.
    pub key_sketch: Option<KeySketch>,
    /// For a commit-log table (TRIAD-LOG): the WAL segment its values point into.
    pub cl_segment: Option<u64>,
    /// Where each data block's entries start in the table's entry order, then the entry
    /// count (`blocks + 1` numbers, ascending): how random draws find an entry by position
    /// (`db::sample`). Stored as each block's entry count; `None` in tables written before
    /// it was recorded.
    pub block_starts: Option<Vec<u64>>,
}

const NUM_ENTRIES: &str = "num_entries";
const NUM_DELETIONS: &str = "num_deletions";
const NUM_DATA_BLOCKS: &str = "num_data_blocks";
const RAW_KEY_BYTES: &str = "raw_key_bytes";
const RAW_VALUE_BYTES: &str = "raw_value_bytes";
const SMALLEST_SEQ: &str = "smallest_seq";
const LARGEST_SEQ: &str = "largest_seq";
const SMALLEST_KEY: &str = "smallest_key";
const LARGEST_KEY: &str = "largest_key";
const FORMAT_VERSION_NAME: &str = "format_version";
const KEY_SKETCH: &str = "key_sketch";
const CL_SEGMENT: &str = "cl_segment";
const BLOCK_ENTRIES: &str = "block_entries";

impl TableProperties {
    /// Empty properties of the current format version.
    pub fn new() -> Self {
        TableProperties {
            format_version: FORMAT_VERSION,
            ..TableProperties::default()
        }
    }

    /// The properties block contents.
    pub fn encode(&self) -> Vec<u8> {
        let num = |v: u64| {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            b
        };
        let mut entries: Vec<(&str, Vec<u8>)> = vec![
            (NUM_ENTRIES, num(self.num_entries)),
            (NUM_DELETIONS, num(self.num_deletions)),
            (NUM_DATA_BLOCKS, num(self.num_data_blocks)),
            (RAW_KEY_BYTES, num(self.raw_key_bytes)),
            (RAW_VALUE_BYTES, num(self.raw_value_bytes)),
            (SMALLEST_SEQ, num(self.smallest_seq)),
            (LARGEST_SEQ, num(self.largest_seq)),
            (SMALLEST_KEY, self.smallest_key.clone()),
            (LARGEST_KEY, self.largest_key.clone()),
            (FORMAT_VERSION_NAME, num(u64::from(self.format_version))),
        ];
        if let Some(sketch) = &self.key_sketch {
            entries.push((KEY_SKETCH, sketch.encode()));
        }
        if let Some(n) = self.cl_segment {
            entries.push((CL_SEGMENT, num(n)));
        }
        if let Some(starts) = &self.block_starts {
            let mut b = Vec::with_capacity(starts.len());
            for w in starts.windows(2) {
                put_varint64(&mut b, w[1] - w[0]);
            }
            entries.push((BLOCK_ENTRIES, b));
        }
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut b = BlockBuilder::new(1);
        for (name, value) in &entries {
            b.add(name.as_bytes(), value);
        }
        b.finish().to_vec()
    }

    /// Decodes a properties block; the error names the failed check.
    pub fn decode(block: &Block) -> Result<TableProperties, &'static str> {
        let mut p = TableProperties::default();
        block.for_each_entry(|name, value| {
            let num = || match get_varint64(value) {
                Some((v, n)) if n == value.len() => Ok(v),
                _ => Err("malformed numeric property"),
            };
            match name {
                b"num_entries" => p.num_entries = num()?,
                b"num_deletions" => p.num_deletions = num()?,
                b"num_data_blocks" => p.num_data_blocks = num()?,
                b"raw_key_bytes" => p.raw_key_bytes = num()?,
                b"raw_value_bytes" => p.raw_value_bytes = num()?,
                b"smallest_seq" => p.smallest_seq = num()?,
                b"largest_seq" => p.largest_seq = num()?,
                b"smallest_key" => p.smallest_key = value.to_vec(),
                b"largest_key" => p.largest_key = value.to_vec(),
                b"key_sketch" => p.key_sketch = Some(KeySketch::decode(value)?),
                b"cl_segment" => p.cl_segment = Some(num()?),
                b"block_entries" => p.block_starts = Some(decode_block_entries(value)?),
                b"format_version" => {
                    p.format_version =
                        u32::try_from(num()?).map_err(|_| "format version out of range")?
                }
                _ => {} // A property of a later version: ignored.
            }
            Ok(())
        })?;
        if p.num_entries > 0
            && (p.smallest_key.len() < TRAILER_LEN || p.largest_key.len() < TRAILER_LEN)
        {
            return Err("key range property is not a pair of internal keys");
        }
        if let Some(starts) = &p.block_starts {
            if starts.len() as u64 != p.num_data_blocks + 1 || starts.last() != Some(&p.num_entries)
            {
                return Err("block entry counts disagree with the table's counts");
            }
        }
        Ok(p)
    }
}

/// Block entry counts (varint64 each) as the running starts, from 0 to the total.
fn decode_block_entries(mut value: &[u8]) -> Result<Vec<u64>, &'static str> {
    let mut starts = vec![0u64];
    let mut total = 0u64;
    while !value.is_empty() {
        let (n, used) = get_varint64(value).ok_or("malformed block entry counts")?;
        total = total.checked_add(n).ok_or("malformed block entry counts")?;
        starts.push(total);
        value = &value[used..];
    }
    Ok(starts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn sample() -> TableProperties {
        TableProperties {
            num_entries: 1000,
            num_deletions: 7,
            num_data_blocks: 12,
            raw_key_bytes: 24_000,
            raw_value_bytes: 1 << 40,
            smallest_seq: 3,
            largest_seq: (1 << 56) - 1,
            smallest_key: b"aaaa\x01\x00\x00\x00\x00\x00\x00\x00".to_vec(),
            largest_key: b"zzzz\x01\x00\x00\x00\x00\x00\x00\x00".to_vec(),
            format_version: FORMAT_VERSION,
            key_sketch: Some({
                let mut s = KeySketch::new();
                s.add(b"aaaa");
                s.add(b"zzzz");
                s
            }),
            cl_segment: Some(42),
            block_starts: Some(
                [
                    0, 100, 180, 181, 181, 300, 400, 401, 600, 700, 800, 900, 1000,
                ]
                .to_vec(),
            ),
        }
    }

    #[test]
    fn round_trip() {
        let p = sample();
        let block = Block::new(Bytes::from(p.encode())).expect("block");
        assert_eq!(TableProperties::decode(&block), Ok(p));
        let empty = TableProperties::new();
        let block = Block::new(Bytes::from(empty.encode())).expect("block");
        assert_eq!(TableProperties::decode(&block), Ok(empty));
    }

    #[test]
    fn unknown_names_are_ignored() {
        let p = sample();
        let mut b = BlockBuilder::new(1);
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        Block::new(Bytes::from(p.encode()))
            .expect("block")
            .for_each_entry(|k, v| {
                entries.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .expect("entries");
        entries.push((b"a_future_property".to_vec(), b"whatever".to_vec()));
        entries.push((b"zz_future".to_vec(), vec![0xff; 3]));
        entries.sort();
        for (k, v) in &entries {
            b.add(k, v);
        }
        let block = Block::new(Bytes::from(b.finish().to_vec())).expect("block");
        assert_eq!(TableProperties::decode(&block), Ok(p));
    }

    #[test]
    fn block_entry_counts_must_add_up_to_the_table() {
        for starts in [vec![0, 100, 999], vec![0; 14]] {
            let p = TableProperties {
                block_starts: Some(starts),
                ..sample()
            };
            let block = Block::new(Bytes::from(p.encode())).expect("block");
            assert!(TableProperties::decode(&block).is_err());
        }
    }

    #[test]
    fn malformed_number_is_rejected() {
        let mut b = BlockBuilder::new(1);
        b.add(b"num_entries", &[0x80]);
        let block = Block::new(Bytes::from(b.finish().to_vec())).expect("block");
        assert!(TableProperties::decode(&block).is_err());
    }
}
