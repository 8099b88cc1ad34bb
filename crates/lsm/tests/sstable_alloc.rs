//! Checks that a table point lookup served from the block cache allocates nothing.
//!
//! A separate test binary because it installs a counting global allocator; it holds a
//! single test so that no other test allocates concurrently.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rialto_io::{Fs, MemFs};
use rialto_lsm::key::{make_internal_key, ValueKind, KIND_SEEK, MAX_SEQUENCE};
use rialto_lsm::sstable::{TableBuildOptions, TableBuilder, TableReader};
use rialto_lsm::{BlockCache, Compression};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn cached_point_lookups_do_not_allocate() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/t")).expect("mkdir");
    let path = Path::new("/t/000001.sst");
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let opts = TableBuildOptions {
            compression,
            ..TableBuildOptions::default()
        };
        let mut b = TableBuilder::new(fs.create(path).expect("create"), "000001.sst".into(), opts);
        let keys: Vec<Vec<u8>> = (0..20_000u32)
            .map(|i| format!("key{i:08}").into_bytes())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            let v = format!("value-{i}-value-value");
            b.add(&make_internal_key(k, 100, ValueKind::Put), v.as_bytes())
                .expect("add");
        }
        b.finish().expect("finish");
        let file = fs.open_read(path).expect("open");
        let cache = BlockCache::new(64 << 20);
        let t = Arc::new(
            TableReader::open(file, 1, "000001.sst".into(), Some(cache.clone()), true)
                .expect("open table"),
        );
        let lookups: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| make_internal_key(k, MAX_SEQUENCE, KIND_SEEK))
            .collect();
        let absent: Vec<Vec<u8>> = (0..2000u32)
            .map(|i| make_internal_key(format!("nokey{i}").as_bytes(), MAX_SEQUENCE, KIND_SEEK))
            .collect();
        // Warm the cache (and the lookup's thread-local key buffer).
        for l in &lookups {
            assert!(t.get(l).expect("get").is_some());
        }
        let before = ALLOCS.load(Ordering::Relaxed);
        let mut found = 0;
        for l in lookups.iter().chain(&absent) {
            if let Some((_, v)) = t.get(l).expect("get") {
                found += v.len();
            }
        }
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        assert!(found > 0);
        assert_eq!(
            allocs, 0,
            "{compression:?}: cached gets allocated {allocs} times"
        );
        assert!(cache.hits() >= lookups.len() as u64);
    }
}
