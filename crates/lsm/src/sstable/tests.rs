//! Table round trips, lookups, iteration and corruption handling.

use std::io;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rialto_engine::Error;
use rialto_io::{RandomAccessFile, WritableFile};

use super::format::FOOTER_LEN;
use super::*;
use crate::cache::BlockCache;
use crate::iter::{InternalIterator, VecIter};
use crate::key::{self, make_internal_key, ValueKind, KIND_SEEK, MAX_SEQUENCE};
use crate::Compression;

/// An append-only in-memory file.
#[derive(Clone, Default)]
struct VecFile(Arc<Mutex<Vec<u8>>>);

impl WritableFile for VecFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync_all(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

/// A read-only in-memory file.
struct VecReader(Vec<u8>);

impl RandomAccessFile for VecReader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.0.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

const NAME: &str = "000042.sst";

fn build(entries: &Entries, opts: TableBuildOptions) -> (Vec<u8>, TableMeta) {
    let file = VecFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), NAME.to_string(), opts);
    for (k, v) in entries {
        b.add(k, v).expect("add");
    }
    assert_eq!(b.num_entries(), entries.len() as u64);
    let meta = b.finish().expect("finish");
    let bytes = file.0.lock().clone();
    assert_eq!(meta.file_size, bytes.len() as u64);
    (bytes, meta)
}

fn open(
    bytes: Vec<u8>,
    cache: Option<Arc<BlockCache>>,
    verify: bool,
) -> rialto_engine::Result<Arc<TableReader>> {
    TableReader::open(
        Arc::new(VecReader(bytes)),
        42,
        NAME.to_string(),
        cache,
        verify,
    )
    .map(Arc::new)
}

fn opts(block_size: usize, compression: Compression) -> TableBuildOptions {
    TableBuildOptions {
        block_size,
        block_restart_interval: 16,
        bloom_bits_per_key: 10,
        compression,
        cl_segment: None,
    }
}

/// `n` entries over user keys `key{i}`, some with several versions and deletions.
fn entries(n: usize, seed: u64) -> Entries {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    let mut i = 0u64;
    while out.len() < n {
        let uk = format!("key{:08}", i * 3);
        let versions = if rng.gen_ratio(1, 10) {
            rng.gen_range(2..5)
        } else {
            1
        };
        let mut seq = rng.gen_range(1000..1_000_000u64);
        for _ in 0..versions {
            let kind = if rng.gen_ratio(1, 20) {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            let vlen = if kind == ValueKind::Delete {
                0
            } else {
                rng.gen_range(0..100)
            };
            // Compressible values: a repeated pattern.
            let value: Vec<u8> = (0..vlen).map(|j| b"value-"[(j + i as usize) % 6]).collect();
            out.push((make_internal_key(uk.as_bytes(), seq, kind), value));
            seq -= rng.gen_range(1..100);
        }
        i += 1;
    }
    out.truncate(n);
    out
}

fn scan_forward(it: &mut TableIter) -> Entries {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

fn scan_backward(it: &mut TableIter) -> Entries {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    out.reverse();
    out
}

/// The newest entry of `uk` with sequence <= `seq`, by brute force.
fn model_get(es: &Entries, uk: &[u8], seq: u64) -> Option<(u64, Vec<u8>)> {
    es.iter()
        .find(|(k, _)| key::user_key(k) == uk && key::sequence(k) <= seq)
        .map(|(k, v)| (key::trailer(k), v.clone()))
}

#[test]
fn round_trip_100k_all_compressions() {
    let es = entries(100_000, 1);
    let mut sizes = Vec::new();
    for comp in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let (bytes, meta) = build(&es, opts(4096, comp));
        sizes.push(bytes.len());
        assert_eq!(meta.smallest, es[0].0);
        assert_eq!(meta.largest, es[es.len() - 1].0);
        let p = &meta.props;
        assert_eq!(p.num_entries, es.len() as u64);
        assert_eq!(
            p.num_deletions,
            es.iter().filter(|(k, _)| key::kind_byte(k) == 0).count() as u64
        );
        assert_eq!(
            p.raw_key_bytes,
            es.iter().map(|(k, _)| k.len() as u64).sum::<u64>()
        );
        assert_eq!(
            p.raw_value_bytes,
            es.iter().map(|(_, v)| v.len() as u64).sum::<u64>()
        );
        assert_eq!(
            p.smallest_seq,
            es.iter().map(|(k, _)| key::sequence(k)).min().unwrap_or(0)
        );
        assert_eq!(
            p.largest_seq,
            es.iter().map(|(k, _)| key::sequence(k)).max().unwrap_or(0)
        );

        let cache = BlockCache::new(4 << 20);
        let t = open(bytes, Some(cache.clone()), true).expect("open");
        assert_eq!(t.properties(), p);
        assert_eq!(t.num_data_blocks() as u64, p.num_data_blocks);
        let mut it = t.iter();
        assert_eq!(scan_forward(&mut it), es, "{comp:?} forward");
        assert_eq!(scan_backward(&mut it), es, "{comp:?} backward");
        it.status().expect("clean scan");

        let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
        for _ in 0..20_000 {
            let (k, v) = &es[rng.gen_range(0..es.len())];
            let lookup = make_internal_key(key::user_key(k), key::sequence(k), KIND_SEEK);
            let got = t.get(&lookup).expect("get");
            assert_eq!(
                got.map(|(tr, b)| (tr, b.to_vec())),
                Some((key::trailer(k), v.clone()))
            );
            // Absent user keys between the present ones (`key{3i+1}`).
            let n: u64 = std::str::from_utf8(&key::user_key(k)[3..])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let absent = format!("key{:08}", n + 1);
            let lookup = make_internal_key(absent.as_bytes(), MAX_SEQUENCE, KIND_SEEK);
            assert_eq!(t.get(&lookup).expect("get"), None);
        }
        assert!(cache.hits() > 0);
        // Past either end.
        assert_eq!(
            t.get(&make_internal_key(b"a", MAX_SEQUENCE, KIND_SEEK))
                .expect("get"),
            None
        );
        assert_eq!(
            t.get(&make_internal_key(b"zzz", MAX_SEQUENCE, KIND_SEEK))
                .expect("get"),
            None
        );
    }
    assert!(
        sizes[1] < sizes[0] && sizes[2] < sizes[0],
        "compression saves space: {sizes:?}"
    );
}

#[test]
fn get_returns_newest_version_at_or_below_lookup_sequence() {
    // One key with many versions spread over several tiny blocks.
    let mut es: Entries = Vec::new();
    es.push((make_internal_key(b"a", 5, ValueKind::Put), b"a5".to_vec()));
    for seq in (10..=200u64).rev().step_by(10) {
        let kind = if seq % 30 == 0 {
            ValueKind::Delete
        } else {
            ValueKind::Put
        };
        es.push((
            make_internal_key(b"k", seq, kind),
            format!("v{seq}").into_bytes(),
        ));
    }
    es.push((make_internal_key(b"z", 1, ValueKind::Put), b"z1".to_vec()));
    for block_size in [1, 64, 4096] {
        let (bytes, _) = build(&es, opts(block_size, Compression::None));
        let t = open(bytes, None, true).expect("open");
        for seq in 0..=250u64 {
            let lookup = make_internal_key(b"k", seq, KIND_SEEK);
            let got = t.get(&lookup).expect("get").map(|(tr, v)| (tr, v.to_vec()));
            assert_eq!(
                got,
                model_get(&es, b"k", seq),
                "seq {seq} block_size {block_size}"
            );
        }
        let got = t.get(&make_internal_key(b"a", 4, KIND_SEEK)).expect("get");
        assert_eq!(got, None);
        let got = t.get(&make_internal_key(b"z", 9, KIND_SEEK)).expect("get");
        assert_eq!(
            got.map(|(tr, v)| (tr >> 8, v.to_vec())),
            Some((1, b"z1".to_vec()))
        );
        // A deletion is returned as such: the caller interprets the trailer.
        let (tr, v) = t
            .get(&make_internal_key(b"k", 95, KIND_SEEK))
            .expect("get")
            .expect("found");
        assert_eq!(
            (tr >> 8, tr & 0xff, v.len()),
            (90, ValueKind::Delete as u64, 3)
        );
    }
}

#[test]
fn iterator_matches_model_under_random_moves() {
    let es = entries(3000, 7);
    let (bytes, _) = build(&es, opts(256, Compression::Lz4));
    let t = open(bytes, Some(BlockCache::new(1 << 20)), true).expect("open");
    let mut it = t.iter();
    let mut model = VecIter::new(es.clone());
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    for step in 0..20_000 {
        let target = {
            let (k, _) = &es[rng.gen_range(0..es.len())];
            let seq = key::sequence(k) as i64 + rng.gen_range(-2i64..=2);
            make_internal_key(
                key::user_key(k),
                seq.clamp(0, MAX_SEQUENCE as i64) as u64,
                ValueKind::Put,
            )
        };
        match rng.gen_range(0..8) {
            0 => {
                it.seek_to_first();
                model.seek_to_first();
            }
            1 => {
                it.seek_to_last();
                model.seek_to_last();
            }
            2 => {
                it.seek(&target);
                model.seek(&target);
            }
            3 => {
                it.seek_for_prev(&target);
                model.seek_for_prev(&target);
            }
            4 | 5 if model.valid() => {
                it.next();
                model.next();
            }
            6 | 7 if model.valid() => {
                it.prev();
                model.prev();
            }
            _ => {}
        }
        assert_eq!(it.valid(), model.valid(), "step {step}");
        if model.valid() {
            assert_eq!(it.key(), model.key(), "step {step}");
            assert_eq!(it.value(), model.value(), "step {step}");
            assert_eq!(&it.value_bytes()[..], model.value());
        }
    }
    it.status().expect("clean");
}

#[test]
fn iterator_edges() {
    let es = entries(500, 5);
    let (bytes, _) = build(&es, opts(200, Compression::None));
    let t = open(bytes, None, true).expect("open");
    let mut it = t.iter();
    assert!(!it.valid());
    let before = make_internal_key(b"a", 1, ValueKind::Put);
    let after = make_internal_key(b"zzz", 1, ValueKind::Put);
    it.seek(&before);
    assert_eq!(it.key(), &es[0].0[..]);
    it.prev();
    assert!(!it.valid());
    it.seek_for_prev(&before);
    assert!(!it.valid());
    it.seek(&after);
    assert!(!it.valid());
    it.seek_for_prev(&after);
    assert_eq!(it.key(), &es[es.len() - 1].0[..]);
    it.next();
    assert!(!it.valid());
    // Every separator boundary: seek to each block's first key and step back.
    for w in es.windows(2) {
        it.seek(&w[1].0);
        assert_eq!(it.key(), &w[1].0[..]);
        it.prev();
        assert_eq!(it.key(), &w[0].0[..]);
        it.seek_for_prev(&w[0].0);
        it.next();
        assert_eq!(it.key(), &w[1].0[..]);
    }
    // Approximate offsets grow with the key and stay inside the file.
    let offs: Vec<u64> = es.iter().map(|(k, _)| t.approximate_offset_of(k)).collect();
    assert!(offs.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(offs[0], 0);
    let end = t.approximate_offset_of(&after);
    assert!(end > offs[offs.len() - 1] && end < t.file_size());
}

#[test]
fn empty_table_and_single_entry() {
    let (bytes, meta) = build(&Vec::new(), opts(4096, Compression::Zstd));
    assert!(meta.smallest.is_empty() && meta.largest.is_empty());
    let t = open(bytes, None, true).expect("open");
    assert_eq!(t.properties().num_entries, 0);
    let mut it = t.iter();
    for f in [
        |it: &mut TableIter| it.seek_to_first(),
        |it: &mut TableIter| it.seek_to_last(),
        |it: &mut TableIter| it.seek(&make_internal_key(b"x", 1, ValueKind::Put)),
        |it: &mut TableIter| it.seek_for_prev(&make_internal_key(b"x", 1, ValueKind::Put)),
    ] {
        f(&mut it);
        assert!(!it.valid());
    }
    assert_eq!(
        t.get(&make_internal_key(b"x", 1, KIND_SEEK)).expect("get"),
        None
    );

    let es = vec![(make_internal_key(b"only", 3, ValueKind::Put), vec![7u8; 10])];
    let (bytes, _) = build(&es, opts(4096, Compression::None));
    let t = open(bytes, None, true).expect("open");
    assert_eq!(scan_forward(&mut t.iter()), es);
    assert_eq!(scan_backward(&mut t.iter()), es);
}

#[test]
fn no_filter_when_bits_per_key_is_zero() {
    let es = entries(1000, 9);
    let mut o = opts(1024, Compression::None);
    o.bloom_bits_per_key = 0;
    let (bytes, _) = build(&es, o);
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..]).expect("footer");
    assert_eq!(footer.filter.size, 0);
    let t = open(bytes, None, true).expect("open");
    assert!(t.may_contain(b"anything"));
    for (k, v) in es.iter().step_by(17) {
        let lookup = make_internal_key(key::user_key(k), key::sequence(k), KIND_SEEK);
        assert_eq!(
            t.get(&lookup).expect("get").map(|(_, b)| b.to_vec()),
            Some(v.clone())
        );
    }
    // With a filter, absent keys are mostly filtered out.
    let (bytes, _) = build(&es, opts(1024, Compression::None));
    let t = open(bytes, None, true).expect("open");
    let passed = (0..1000)
        .filter(|i| t.may_contain(format!("nokey{i}").as_bytes()))
        .count();
    assert!(passed < 50, "{passed} false positives of 1000");
}

#[test]
fn large_values_round_trip() {
    let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
    let es = vec![
        (
            make_internal_key(b"a", 1, ValueKind::Put),
            b"small".to_vec(),
        ),
        (make_internal_key(b"b", 1, ValueKind::Put), big.clone()),
        (
            make_internal_key(b"c", 1, ValueKind::Put),
            vec![0u8; 1 << 20],
        ),
    ];
    for comp in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let (bytes, _) = build(&es, opts(4096, comp));
        let t = open(bytes, Some(BlockCache::new(64 << 20)), true).expect("open");
        assert_eq!(scan_forward(&mut t.iter()), es);
        let v = t
            .get(&make_internal_key(b"b", 5, KIND_SEEK))
            .expect("get")
            .expect("found");
        assert_eq!(&v.1[..], &big[..]);
    }
}

#[test]
fn cache_serves_repeated_reads_and_ids_differ() {
    let es = entries(2000, 11);
    let (bytes, _) = build(&es, opts(1024, Compression::None));
    let cache = BlockCache::new(16 << 20);
    let t1 = open(bytes.clone(), Some(cache.clone()), true).expect("open");
    let t2 = open(bytes, Some(cache.clone()), true).expect("open");
    assert_ne!(t1.cache_id(), t2.cache_id());
    let lookup = make_internal_key(key::user_key(&es[100].0), MAX_SEQUENCE, KIND_SEEK);
    t1.get(&lookup).expect("get");
    let (h, m) = (cache.hits(), cache.misses());
    assert_eq!((h, m), (0, 1));
    t1.get(&lookup).expect("get");
    assert_eq!(cache.hits(), 1);
    t2.get(&lookup).expect("get");
    assert_eq!(cache.misses(), 2);
    assert!(cache.usage() > 0);
    cache.erase_file(t1.cache_id());
    t1.get(&lookup).expect("get");
    assert_eq!(cache.misses(), 3);
}

#[test]
#[cfg_attr(debug_assertions, should_panic(expected = "increasing order"))]
fn out_of_order_keys_are_rejected() {
    let mut b = TableBuilder::new(
        Box::new(VecFile::default()),
        NAME.into(),
        TableBuildOptions::default(),
    );
    b.add(&make_internal_key(b"b", 1, ValueKind::Put), b"")
        .expect("first");
    let r = b.add(&make_internal_key(b"a", 1, ValueKind::Put), b"");
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    // The same key twice is out of order too.
    let r = b.add(&make_internal_key(b"b", 1, ValueKind::Put), b"");
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
}

#[test]
fn bad_arguments_are_rejected() {
    let mut b = TableBuilder::new(
        Box::new(VecFile::default()),
        NAME.into(),
        TableBuildOptions::default(),
    );
    assert!(matches!(
        b.add(b"short", b""),
        Err(Error::InvalidArgument(_))
    ));
    let (bytes, _) = build(&entries(10, 1), TableBuildOptions::default());
    let t = open(bytes, None, true).expect("open");
    assert!(matches!(t.get(b"short"), Err(Error::InvalidArgument(_))));
}

#[test]
fn from_options_copies_table_settings() {
    let o = crate::Options {
        block_size: 8192,
        block_restart_interval: 4,
        bloom_bits_per_key: 12,
        compression: Compression::Lz4,
        ..crate::Options::default()
    };
    let t = TableBuildOptions::from_options(&o);
    assert_eq!(
        t,
        TableBuildOptions {
            block_size: 8192,
            block_restart_interval: 4,
            bloom_bits_per_key: 12,
            compression: Compression::Lz4,
            cl_segment: None,
        }
    );
}

/// Opens `bytes`, scans forward and backward and looks up every key. Returns the error met,
/// checking that data read without error is exactly `es`.
fn check_table(bytes: Vec<u8>, es: &Entries, verify: bool) -> Result<(), Error> {
    let t = open(bytes, Some(BlockCache::new(1 << 20)), verify)?;
    let mut it = t.iter();
    let fwd = scan_forward(&mut it);
    it.status()?;
    if verify {
        assert_eq!(
            &fwd, es,
            "forward scan returned wrong data without an error"
        );
    }
    let bwd = scan_backward(&mut it);
    it.status()?;
    if verify {
        assert_eq!(
            &bwd, es,
            "backward scan returned wrong data without an error"
        );
    }
    for (k, v) in es {
        let lookup = make_internal_key(key::user_key(k), key::sequence(k), KIND_SEEK);
        let got = t.get(&lookup)?;
        if verify {
            let got = got.map(|(tr, b)| (tr, b.to_vec()));
            assert_eq!(
                got,
                Some((key::trailer(k), v.clone())),
                "get returned wrong data"
            );
        }
    }
    Ok(())
}

#[test]
fn every_byte_flip_is_detected_or_harmless() {
    let es = entries(60, 13);
    for comp in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let (good, _) = build(&es, opts(300, comp));
        check_table(good.clone(), &es, true).expect("intact table reads cleanly");
        let footer_off = (good.len() - FOOTER_LEN) as u64;
        // Offsets of every block, to check the error names the right one.
        let mut block_offsets = vec![footer_off];
        {
            let t = open(good.clone(), None, true).expect("open");
            block_offsets.extend((0..t.num_data_blocks()).map(|i| t.index.handle(i).offset));
            let f = Footer::decode(&good[good.len() - FOOTER_LEN..]).expect("footer");
            block_offsets.extend([f.index.offset, f.filter.offset, f.properties.offset]);
        }
        let mut detected = 0;
        for i in 0..good.len() {
            for mask in [0x01u8, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= mask;
                match check_table(bad.clone(), &es, true) {
                    Ok(()) => {}
                    Err(Error::Corruption { file, offset, .. }) => {
                        assert_eq!(file, NAME);
                        assert!(
                            block_offsets.contains(&offset),
                            "offset {offset} is no block"
                        );
                        assert!(
                            offset <= i as u64,
                            "flip at {i} blamed on later block {offset}"
                        );
                        detected += 1;
                    }
                    Err(e) => panic!("flip at {i}: expected corruption, got {e}"),
                }
                // Without checksums: anything but a panic.
                let _ = check_table(bad, &es, false);
            }
        }
        // Every byte is covered by a checksum.
        assert_eq!(detected, 2 * good.len(), "{comp:?}");
    }
}

#[test]
fn truncated_and_garbage_files_are_corruption() {
    let es = entries(50, 17);
    let (good, _) = build(&es, opts(256, Compression::Lz4));
    for len in 0..good.len() {
        match open(good[..len].to_vec(), None, true) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, NAME),
            Err(e) => panic!("len {len}: {e}"),
            Ok(_) => panic!("len {len}: truncated table opened"),
        }
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    for _ in 0..200 {
        let n = rng.gen_range(0..500);
        let junk: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        assert!(open(junk, None, false).is_err());
    }
}

/// Writes a table whose footer is valid but whose handles point anywhere: opening must fail
/// cleanly whatever the handles say, even with checksums off.
#[test]
fn hostile_footers_are_rejected() {
    let es = entries(20, 19);
    let (good, _) = build(&es, opts(256, Compression::None));
    let body = &good[..good.len() - FOOTER_LEN];
    let f = Footer::decode(&good[good.len() - FOOTER_LEN..]).expect("footer");
    let wild = [
        0,
        1,
        7,
        f.index.offset,
        u64::MAX / 2,
        u64::MAX - 3,
        u64::MAX,
    ];
    for &off in &wild {
        for &size in &wild {
            for which in 0..3 {
                let mut g = f;
                let h = BlockHandle::new(off, size);
                match which {
                    0 => g.index = h,
                    1 => g.filter = h,
                    _ => g.properties = h,
                }
                let mut bytes = body.to_vec();
                bytes.extend_from_slice(&g.encode());
                let _ = check_table(bytes, &es, false);
            }
        }
    }
}

/// The same through the engine's in-memory file system: a synced table survives a crash,
/// and bit rot on its disk is reported as corruption of that file.
#[test]
fn works_over_memfs_and_survives_crash() {
    use rialto_io::{CrashMode, Fs, MemFs};
    use std::path::Path;

    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).expect("mkdir");
    let path = Path::new("/db/000007.sst");
    let es = entries(5000, 23);
    let file = fs.create(path).expect("create");
    let mut b = TableBuilder::new(file, "000007.sst".into(), opts(4096, Compression::Lz4));
    for (k, v) in &es {
        b.add(k, v).expect("add");
    }
    let meta = b.finish().expect("finish");
    fs.sync_dir(Path::new("/db")).expect("sync dir");
    fs.crash(CrashMode::DropUnsynced);

    let open_fs = |verify| {
        let f = fs.open_read(path).expect("open");
        assert_eq!(f.len(), meta.file_size);
        TableReader::open(f, 7, "000007.sst".into(), None, verify).map(Arc::new)
    };
    let t = open_fs(true).expect("open");
    assert_eq!(scan_forward(&mut t.iter()), es);

    // Rot one byte of the third data block.
    let off = t.index.handle(2).offset;
    fs.corrupt(path, off + 10, 0x40).expect("corrupt");
    let t = open_fs(true).expect("metadata intact");
    let mut it = t.iter();
    scan_forward(&mut it);
    match it.status() {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!((file.as_str(), offset), ("000007.sst", off));
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert!(!it.valid());
}

#[test]
fn readers_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    assert_send_sync::<TableReader>();
    assert_send_sync::<BlockCache>();
    assert_send_sync::<Block>();
    assert_send::<TableIter>();
    assert_send::<TableBuilder>();

    let es = entries(5000, 29);
    let (bytes, _) = build(&es, opts(512, Compression::Lz4));
    let t = open(bytes, Some(BlockCache::new(64 << 10)), true).expect("open");
    let es = Arc::new(es);
    let threads: Vec<_> = (0..4u64)
        .map(|s| {
            let (t, es) = (Arc::clone(&t), Arc::clone(&es));
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(s);
                for _ in 0..5000 {
                    let (k, v) = &es[rng.gen_range(0..es.len())];
                    let lookup = make_internal_key(key::user_key(k), key::sequence(k), KIND_SEEK);
                    let got = t.get(&lookup).expect("get").map(|(_, b)| b.to_vec());
                    assert_eq!(got.as_ref(), Some(v));
                }
            })
        })
        .collect();
    for th in threads {
        th.join().expect("reader thread panicked");
    }
}
