//! What the keyspace's integration tests share: a keyspace on an in-memory file system.

use std::sync::Arc;

use rialto_io::{Clock, Fs, MemFs, SystemClock};
use rialto_keyspace::{KeyspaceOptions, StoreOptions};

/// Options for a keyspace in `/ks/db` on `fs`: small memtables (so that data is flushed and
/// compacted as tests write), the merger executing inline, one push thread.
pub fn options(fs: &MemFs) -> KeyspaceOptions {
    fs.create_dir_all(std::path::Path::new("/ks")).unwrap();
    let fsref: rialto_io::FsRef = Arc::new(fs.clone());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    KeyspaceOptions {
        engine: rialto_lsm::Options {
            fs: fsref,
            clock,
            write_buffer_size: 16 << 10,
            ..rialto_lsm::Options::default()
        },
        merger: rialto_txn::MergerOptions {
            inline_execution: true,
            ..rialto_txn::MergerOptions::default()
        },
        stores: StoreOptions {
            push_memory_limit: 1 << 20,
            push_tmp_dir: "/ks/push-tmp".into(),
            push_threads: 1,
            push_nice: rialto_io::ThreadPriority::Nice(0),
            push_page_cache: rialto_keyspace::PushPageCache::All,
            push_guard: rialto_keyspace::PushGuard::default(),
            partitions: 1,
        },
    }
}

/// Engine keys under `prefix` in the closed keyspace of `/ks/db` on `fs` (members or
/// bookkeeping records a test expects gone).
#[allow(dead_code)] // Not every test crate that shares this module calls it.
pub fn keys_under(fs: &MemFs, prefix: &[u8]) -> usize {
    use rialto_engine::{EngineIterator, IterOptions, KvEngine};
    let db = rialto_lsm::Db::open(std::path::Path::new("/ks/db"), options(fs).engine).unwrap();
    let mut upper = prefix.to_vec();
    *upper.last_mut().unwrap() += 1;
    let mut it = db
        .iter(IterOptions {
            lower: Some(prefix.to_vec()),
            upper: Some(upper),
            snapshot: None,
        })
        .unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    n
}
