//! `sstable`: opening and reading tables (`rialto_lsm::sstable`).
//!
//! Input layout: a mode byte (taken modulo 3), then
//! - 0, raw table: a flags byte (bit 0 verify checksums, bit 1 use a block cache), then the
//!   table file's bytes;
//! - 1, raw structures: bytes read as block contents (with its iterator and the properties
//!   decoder), as a bloom filter, as a footer, as a varint block handle and as LZ4 and zstd
//!   block payloads;
//! - 2, structured: an options byte (bits 0-3 restart interval - 1, bit 1 also turns the
//!   block cache on, bit 4 bloom filter, bits 5-6 compression, bit 7 verify checksums after
//!   the damage), a block-size byte (block size 32 + 8 × byte), the
//!   damage (1 byte kind: 0 none, 1 flip a byte, 2 truncate; 2 bytes position; 1 byte XOR),
//!   then up to 64 entries (length-prefixed user key, 2-byte sequence, 1 byte
//!   kind and value shape, value).
//!
//! Raw modes check that nothing panics, every error is `Corruption`, iteration terminates,
//! and structures that decode re-encode to themselves (footer, block handle).
//!
//! Structured mode builds a table with `TableBuilder` from the sorted entries and checks the
//! reader against them: properties, iteration both ways over every entry, and for up to 8
//! evenly spaced entries `get` of the entry and of its user key's newest version, and
//! `seek`/`seek_for_prev` to the entry, to that newest version and to the first key after
//! its user key. Then it damages the
//! file: with checksums verified, one flipped byte makes the open or the read of the damaged
//! block fail with `Corruption`, and everything read before that (or by `get`) is the
//! original data; without verification, or after a truncation, reads may return anything
//! but must not panic and may fail only with `Corruption`.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rialto_engine::{Error, Result};
use rialto_io::{Fs, MemFs};
use rialto_lsm::key::{self, make_internal_key, ValueKind, KIND_SEEK, MAX_SEQUENCE};
use rialto_lsm::sstable::bloom::BloomFilter;
use rialto_lsm::sstable::compression::decompress;
use rialto_lsm::sstable::{
    Block, BlockHandle, CompressionType, Footer, TableBuildOptions, TableBuilder, TableProperties,
    TableReader,
};
use rialto_lsm::{BlockCache, Compression, InternalIterator};

use crate::input::Input;

const PATH: &str = "/t/000001.sst";

/// An internal key and its value.
type Entry = (Vec<u8>, Vec<u8>);

/// The fuzz target. See the [module docs](self).
pub fn sstable(data: &[u8]) {
    let mut input = Input::new(data);
    match input.u8() % 3 {
        0 => {
            let flags = input.u8();
            let bytes = input.rest();
            if let Some(table) = open(bytes, flags & 1 == 1, flags & 2 == 2) {
                walk(&table, bytes.len());
            }
        }
        1 => raw_structures(input.rest()),
        _ => structured(input),
    }
}

fn assert_corruption(e: &Error, what: &str) {
    assert!(
        e.is_corruption(),
        "{what} failed with a non-corruption error: {e}"
    );
}

fn check_status(r: Result<()>, what: &str) -> bool {
    match r {
        Ok(()) => true,
        Err(e) => {
            assert_corruption(&e, what);
            false
        }
    }
}

/// Opens `bytes` as a table; `None` when the open fails (with `Corruption`, checked).
fn open(bytes: &[u8], verify: bool, cache: bool) -> Option<Arc<TableReader>> {
    let fs = MemFs::new();
    let path = Path::new(PATH);
    let file = fs
        .create_dir_all(Path::new("/t"))
        .and_then(|()| {
            let mut f = fs.create(path)?;
            f.append(bytes)?;
            f.flush()?;
            fs.open_read(path)
        })
        .expect("writing to a fresh MemFs cannot fail");
    let cache = cache.then(|| BlockCache::new(64 << 10));
    match TableReader::open(file, 1, "000001.sst".into(), cache, verify) {
        Ok(t) => Some(Arc::new(t)),
        Err(e) => {
            assert_corruption(&e, "open");
            None
        }
    }
}

/// Every entry in order (forward or backward) until the end or an error; the flag tells
/// whether the iteration ended cleanly. Panics if it does not end within `max_steps`.
fn scan(table: &Arc<TableReader>, forward: bool, max_steps: usize) -> (Vec<Entry>, bool) {
    let mut it = table.iter();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    let mut out = Vec::new();
    while it.valid() {
        assert!(out.len() <= max_steps, "iteration does not terminate");
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    let clean = check_status(it.status(), "iteration");
    (out, clean)
}

/// Reads an arbitrary table every way there is; only panics and error types are checked,
/// since a table whose checksums were forged may hold anything.
fn walk(table: &Arc<TableReader>, file_len: usize) {
    let (forward, _) = scan(table, true, file_len);
    let _ = scan(table, false, file_len);
    let _ = table.properties();
    let _ = table.memory_usage();
    for (k, _) in forward.iter().take(8) {
        if let Err(e) = table.get(k) {
            assert_corruption(&e, "get");
        }
        let _ = table.approximate_offset_of(k);
        let _ = table.may_contain(key::user_key(k));
        let mut it = table.iter();
        it.seek(k);
        check_status(it.status(), "seek");
        it.seek_for_prev(k);
        check_status(it.status(), "seek_for_prev");
    }
}

fn raw_structures(bytes: &[u8]) {
    if let Ok(block) = Block::new(Bytes::copy_from_slice(bytes)) {
        let _ = TableProperties::decode(&block);
        let mut keys = Vec::new();
        let _ = block.for_each_entry(|k, _| {
            assert!(
                keys.len() <= bytes.len(),
                "for_each_entry does not terminate"
            );
            keys.push(k.to_vec());
            Ok(())
        });
        let mut it = block.iter();
        for forward in [true, false] {
            let mut steps = 0;
            if forward {
                it.seek_to_first();
            } else {
                it.seek_to_last();
            }
            while it.valid() {
                steps += 1;
                assert!(steps <= bytes.len(), "block iteration does not terminate");
                if forward {
                    it.next();
                } else {
                    it.prev();
                }
            }
            check_status(it.status(), "block iteration");
        }
        for k in keys.iter().filter(|k| k.len() >= key::TRAILER_LEN).take(16) {
            let mut it = block.iter();
            it.seek(k);
            it.seek_for_prev(k);
            check_status(it.status(), "block seek");
        }
    }
    if let Ok(filter) = BloomFilter::from_contents(bytes) {
        let _ = filter.may_contain(bytes);
    }
    if let Some(raw) = bytes.get(..64) {
        if let Ok(footer) = Footer::decode(raw) {
            assert_eq!(footer.encode()[..], raw[..], "footer round trip");
        }
    }
    if let Some(h) = BlockHandle::decode_varint(bytes) {
        let mut again = Vec::new();
        h.encode_varint(&mut again);
        assert_eq!(
            BlockHandle::decode_varint(&again),
            Some(h),
            "handle round trip"
        );
    }
    for ty in [CompressionType::Lz4, CompressionType::Zstd] {
        let _ = decompress(ty, bytes);
    }
}

/// Builds a table of `entries` (sorted, unique) and returns its bytes.
fn build(entries: &[Entry], opts: TableBuildOptions) -> Vec<u8> {
    let fs = MemFs::new();
    let path = Path::new(PATH);
    let file = fs
        .create_dir_all(Path::new("/t"))
        .and_then(|()| fs.create(path))
        .expect("creating a file in a fresh MemFs cannot fail");
    let mut b = TableBuilder::new(file, "000001.sst".into(), opts);
    for (k, v) in entries {
        b.add(k, v)
            .expect("sorted entries of valid sizes are accepted");
    }
    b.finish().expect("finishing a table in MemFs cannot fail");
    fs.read_all(path).expect("the table was just written")
}

fn structured(mut input: Input) {
    let o = input.u8();
    let opts = TableBuildOptions {
        block_restart_interval: 1 + usize::from(o & 15),
        bloom_bits_per_key: if o & 16 != 0 { 10 } else { 0 },
        compression: [
            Compression::None,
            Compression::Lz4,
            Compression::Zstd,
            Compression::None,
        ][usize::from((o >> 5) & 3)],
        block_size: 32 + usize::from(input.u8()) * 8,
        cl_segment: None,
    };
    let verify = o & 0x80 != 0;
    let damage = input.u8() % 3;
    let position = usize::from(input.u16());
    let xor = input.u8().max(1);
    let mut entries: Vec<Entry> = Vec::new();
    while !input.is_empty() && entries.len() < 64 {
        let user_key = input.len_prefixed(12);
        let seq = u64::from(input.u16());
        let shape = input.u8();
        let kind = if shape & 1 == 0 {
            ValueKind::Put
        } else {
            ValueKind::Delete
        };
        // Long runs of one byte make blocks compressible; other values are input bytes.
        let value = if shape & 2 != 0 {
            vec![shape; usize::from(shape >> 2) * 4]
        } else {
            input.len_prefixed(64).to_vec()
        };
        entries.push((make_internal_key(user_key, seq, kind), value));
    }
    entries.sort_by(|a, b| key::compare(&a.0, &b.0));
    entries.dedup_by(|a, b| a.0 == b.0);

    let bytes = build(&entries, opts);
    let table = open(&bytes, true, o & 2 != 0).expect("a freshly built table opens");
    check_against_model(&table, &entries);

    let mut damaged = bytes.clone();
    match damage {
        1 => damaged[position % bytes.len()] ^= xor,
        2 => damaged.truncate(position % bytes.len()),
        _ => return,
    }
    let Some(table) = open(&damaged, verify, o & 2 != 0) else {
        return;
    };
    if damage == 2 || !verify {
        walk(&table, damaged.len());
        return;
    }
    // One flipped byte under verified checksums: every block read is either the original or
    // fails, and the damaged block is read by a full scan.
    let (forward, clean) = scan(&table, true, entries.len());
    assert!(
        !clean,
        "a full scan read past the flipped byte without noticing"
    );
    assert!(
        entries.starts_with(&forward),
        "forward scan returned altered data"
    );
    let (backward, _) = scan(&table, false, entries.len());
    assert!(
        entries
            .iter()
            .rev()
            .collect::<Vec<_>>()
            .starts_with(&backward.iter().collect::<Vec<_>>()),
        "backward scan returned altered data"
    );
    for (k, v) in &entries {
        match table.get(k) {
            Ok(got) => assert_eq!(
                got,
                Some((key::trailer(k), Bytes::copy_from_slice(v))),
                "get returned altered data"
            ),
            Err(e) => assert_corruption(&e, "get"),
        }
    }
}

/// The first entry at or after `target`, as its index (the model of `seek`).
fn lower_bound(entries: &[Entry], target: &[u8]) -> usize {
    entries.partition_point(|(k, _)| key::compare(k, target) == Ordering::Less)
}

/// Checks a table built from `entries` (sorted, unique) against them.
fn check_against_model(table: &Arc<TableReader>, entries: &[Entry]) {
    let props = table.properties();
    assert_eq!(props.num_entries, entries.len() as u64);
    let deletions = entries
        .iter()
        .filter(|(k, _)| key::kind_byte(k) == ValueKind::Delete as u8)
        .count();
    assert_eq!(props.num_deletions, deletions as u64);

    let (forward, clean) = scan(table, true, entries.len());
    assert!(
        clean && forward == entries,
        "forward scan differs from the entries"
    );
    let (mut backward, clean) = scan(table, false, entries.len());
    backward.reverse();
    assert!(
        clean && backward == entries,
        "backward scan differs from the entries"
    );

    // Point reads and seeks around at most 8 entries, evenly spaced (the fuzzer varies which):
    // with blocks of a few entries that meets several blocks and restart points per table, at
    // a fraction of the cost of checking all of them.
    let stride = entries.len().div_ceil(8).max(1);
    let mut it = table.iter();
    for (i, (k, v)) in entries.iter().enumerate().step_by(stride) {
        let uk = key::user_key(k);
        assert!(table.may_contain(uk), "bloom filter false negative");
        let want = Some((key::trailer(k), Bytes::copy_from_slice(v)));
        assert_eq!(table.get(k).expect("get of an intact table"), want, "get");
        // The newest version of the user key: the first entry with it.
        let newest = make_internal_key(uk, MAX_SEQUENCE, KIND_SEEK);
        let first = lower_bound(entries, &newest);
        let got = table.get(&newest).expect("get of an intact table");
        assert_eq!(
            got.map(|(t, _)| t),
            Some(key::trailer(&entries[first].0)),
            "get of the newest version"
        );
        // Seeks to the entry itself, to its user key's first version, and between keys.
        let mut past = uk.to_vec();
        past.push(0);
        let past = make_internal_key(&past, MAX_SEQUENCE, KIND_SEEK);
        for (target, want) in [
            (&k[..], i),
            (&newest[..], first),
            (&past[..], lower_bound(entries, &past)),
        ] {
            it.seek(target);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                entries.get(want).map(|e| e.0.clone()),
                "seek"
            );
            it.seek_for_prev(target);
            let at_or_before =
                entries.partition_point(|(k, _)| key::compare(k, target) != Ordering::Greater);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                at_or_before.checked_sub(1).map(|j| entries[j].0.clone()),
                "seek_for_prev"
            );
        }
        check_status(it.status(), "seek");
    }
}
