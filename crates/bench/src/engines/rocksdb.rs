//! Adapter for RocksDB (the `rocksdb` crate), compiled only with the `rocksdb` feature.
//!
//! RocksDB is configured from the same flags as Rialto and otherwise left at its defaults,
//! which match Rialto's where both have the knob (2 memtables, L0 triggers 4/20/36, 256 MiB
//! L1, 64 MiB files, 4 KiB blocks, 2 background jobs, WAL on): the point is to compare
//! engines, not tuning.

use std::fs;
use std::path::{Path, PathBuf};

use rialto_engine::{BatchOp, EngineStats, LevelStats};
use rocksdb::statistics::{Histogram, Ticker};
use rocksdb::{
    properties, BlockBasedOptions, Cache, DBCompressionType, Options, ReadOptions, WriteBatch,
    WriteOptions, DB,
};

use crate::config::CompressionKind;
use crate::engine::{BenchEngine, EngineConfig, EngineFactory, ScanFrom, Visitor};
use crate::error::{BenchError, Result};

const NAME: &str = "rocksdb";

fn err(op: &str, e: rocksdb::Error) -> BenchError {
    BenchError::engine(NAME, op, e)
}

/// Opens RocksDB databases.
#[derive(Debug, Clone, Copy, Default)]
pub struct RocksDbFactory;

/// RocksDB's options for the bench settings, and the block cache they point to.
pub fn options(cfg: &EngineConfig) -> (Options, Option<Cache>) {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(usize::try_from(cfg.write_buffer_size).unwrap_or(usize::MAX));
    o.set_max_background_jobs(i32::try_from(cfg.background_jobs).unwrap_or(2));
    o.set_compression_type(match cfg.compression {
        CompressionKind::None => DBCompressionType::None,
        CompressionKind::Lz4 => DBCompressionType::Lz4,
        CompressionKind::Zstd => DBCompressionType::Zstd,
    });
    // Tickers give the bytes written by the WAL, flushes and compactions.
    o.enable_statistics();
    let mut t = BlockBasedOptions::default();
    t.set_block_size(cfg.block_size);
    let cache = if cfg.cache_size > 0 {
        let c = Cache::new_lru_cache(usize::try_from(cfg.cache_size).unwrap_or(usize::MAX));
        t.set_block_cache(&c);
        Some(c)
    } else {
        t.disable_cache();
        None
    };
    if cfg.bloom_bits > 0 {
        // A full filter per table (not the legacy block-based one), like Rialto's.
        t.set_bloom_filter(f64::from(cfg.bloom_bits), false);
    }
    o.set_block_based_table_factory(&t);
    (o, cache)
}

impl EngineFactory for RocksDbFactory {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self, path: &Path, cfg: &EngineConfig) -> Result<Box<dyn BenchEngine>> {
        let (opts, cache) = options(cfg);
        let db = DB::open(&opts, path).map_err(|e| err(&format!("open {}", path.display()), e))?;
        let mut sync = WriteOptions::default();
        sync.set_sync(true);
        Ok(Box::new(RocksDbEngine {
            db,
            opts,
            path: path.to_path_buf(),
            write: WriteOptions::default(),
            write_sync: sync,
            read: ReadOptions::default(),
            _cache: cache,
        }))
    }

    fn describe(&self) -> String {
        "rocksdb (rust-rocksdb 0.25)".to_string()
    }
}

/// An open RocksDB database. Fields drop in order: the database closes before the options
/// and the cache it uses.
pub struct RocksDbEngine {
    db: DB,
    /// Kept for its statistics object, which the tickers are read from.
    opts: Options,
    path: PathBuf,
    write: WriteOptions,
    write_sync: WriteOptions,
    read: ReadOptions,
    _cache: Option<Cache>,
}

impl RocksDbEngine {
    fn wopts(&self, sync: bool) -> &WriteOptions {
        if sync {
            &self.write_sync
        } else {
            &self.write
        }
    }

    fn int_property(&self, name: &properties::PropName) -> u64 {
        self.db.property_int_value(name).ok().flatten().unwrap_or(0)
    }

    /// Bytes of the files in the database directory whose names `matches`.
    fn dir_bytes(&self, matches: impl Fn(&str) -> bool) -> u64 {
        let Ok(entries) = fs::read_dir(&self.path) else {
            return 0;
        };
        entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_str().is_some_and(&matches))
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    }
}

impl BenchEngine for RocksDbEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.db
            .put_opt(key, value, self.wopts(sync))
            .map_err(|e| err("put", e))
    }

    fn write_batch(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()> {
        let mut b = WriteBatch::default();
        for op in ops {
            match *op {
                BatchOp::Put(k, v) => b.put(k, v),
                BatchOp::Delete(k) => b.delete(k),
            }
        }
        self.db
            .write_opt(b, self.wopts(sync))
            .map_err(|e| err("write batch", e))
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.db
            .delete_opt(key, self.wopts(sync))
            .map_err(|e| err("delete", e))
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        self.db
            .get_pinned_opt(key, &self.read)
            .map(|v| v.map(|s| s.len()))
            .map_err(|e| err("get", e))
    }

    fn scan(
        &self,
        from: ScanFrom<'_>,
        reverse: bool,
        limit: u64,
        visit: Visitor<'_>,
    ) -> Result<u64> {
        let mut it = self.db.raw_iterator();
        match (from, reverse) {
            (ScanFrom::End, false) => it.seek_to_first(),
            (ScanFrom::End, true) => it.seek_to_last(),
            (ScanFrom::Key(k), false) => it.seek(k),
            (ScanFrom::Key(k), true) => it.seek_for_prev(k),
        }
        let mut n = 0u64;
        while n < limit && it.valid() {
            if let (Some(k), Some(v)) = (it.key(), it.value()) {
                visit(k, v);
            }
            n += 1;
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().map_err(|e| err("iterate", e))?;
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        self.db.flush().map_err(|e| err("flush", e))
    }

    fn compact_all(&self) -> Result<()> {
        // Blocking, like Rialto's `compact_range`.
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn stats(&self) -> Result<EngineStats> {
        let t = |ticker| self.opts.get_ticker_count(ticker);
        let mut levels: Vec<LevelStats> = vec![LevelStats::default(); 7];
        for f in self.db.live_files().map_err(|e| err("live files", e))? {
            let l = usize::try_from(f.level).unwrap_or(0);
            if levels.len() <= l {
                levels.resize(l + 1, LevelStats::default());
            }
            levels[l].files += 1;
            levels[l].bytes += f.size as u64;
        }
        let wal_on_disk = self.dir_bytes(|n| n.ends_with(".log") && n != "LOG");
        let manifest = self.dir_bytes(|n| n.starts_with("MANIFEST-"));
        Ok(EngineStats {
            levels,
            user_bytes_written: t(Ticker::BytesWritten),
            wal_bytes_written: t(Ticker::WalFileBytes),
            flush_bytes_written: t(Ticker::FlushWriteBytes),
            compaction_bytes_written: t(Ticker::CompactWriteBytes),
            compaction_bytes_read: t(Ticker::CompactReadBytes),
            ingest_bytes_written: 0,
            wal_prepare_bytes_written: 0,
            live_data_bytes: self.int_property(properties::ESTIMATE_LIVE_DATA_SIZE),
            disk_bytes: self.int_property(properties::TOTAL_SST_FILES_SIZE)
                + wal_on_disk
                + manifest,
            block_cache_hits: t(Ticker::BlockCacheHit),
            block_cache_misses: t(Ticker::BlockCacheMiss),
            flushes: self.opts.get_histogram_data(Histogram::FlushTime).count(),
            compactions: self
                .opts
                .get_histogram_data(Histogram::CompactionTime)
                .count(),
            stall_micros: t(Ticker::StallMicros),
            wal_syncs: t(Ticker::WalFileSynced),
            // The peer runs without a row cache (block cache only), so these stay zero.
            row_cache_hits: 0,
            row_cache_misses: 0,
            row_cache_bytes: 0,
            row_cache_warmed_rows: 0,
            idle_compactions: 0,
            // Steps its iterators took, and the internal entries (older versions, tombstones)
            // they skipped on the way.
            iter_entries_examined: t(Ticker::NumberDbNext)
                + t(Ticker::NumberDbPrev)
                + t(Ticker::NumberIterSkip),
            read_only_reason: None,
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        // Dropping the handle closes RocksDB (waiting for its background jobs); the
        // binding reports no close error.
        drop(self);
        Ok(())
    }
}

/// Compiled only with the `rocksdb` feature, which the ordinary test command does not build
/// (it compiles RocksDB's C++ sources): `scripts/bench-compare.sh --check` runs them, so the
/// adapter cannot rot unnoticed behind its feature gate.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BenchFlags, Config};
    use crate::engines::rialto::RialtoFactory;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn config() -> EngineConfig {
        let mut c = EngineConfig::from_config(
            &Config::from_flags(&BenchFlags::default()).expect("default flags"),
        );
        // Small memtables: a few thousand writes go through flushes and compactions.
        c.write_buffer_size = 64 << 10;
        c
    }

    fn scan(e: &dyn BenchEngine, from: ScanFrom<'_>, reverse: bool, limit: u64) -> Entries {
        let mut out = Vec::new();
        let n = e
            .scan(from, reverse, limit, &mut |k, v| {
                out.push((k.to_vec(), v.to_vec()))
            })
            .expect("scan");
        assert_eq!(n as usize, out.len(), "scan's count matches its visits");
        out
    }

    fn seek(e: &dyn BenchEngine, key: &[u8], nexts: usize) -> (bool, Entries) {
        let mut out = Vec::new();
        let found = e
            .seek(key, nexts, &mut |k, v| out.push((k.to_vec(), v.to_vec())))
            .expect("seek");
        (found, out)
    }

    fn key(rng: &mut StdRng) -> Vec<u8> {
        format!("key{:05}", rng.gen_range(0..400)).into_bytes()
    }

    fn value(rng: &mut StdRng) -> Vec<u8> {
        let len = rng.gen_range(0..300);
        (0..len).map(|_| rng.gen_range(b'a'..=b'z')).collect()
    }

    /// Every reading call of the two adapters agrees after the same random writes: puts
    /// (some synced), deletes, mixed batches, flushes, a full compaction and a reopen. A
    /// RocksDB API change that compiles but behaves differently shows up here.
    #[test]
    fn the_rocksdb_adapter_reads_what_the_rialto_adapter_reads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config();
        let open = |name: &str| -> Box<dyn BenchEngine> {
            let path = dir.path().join(name);
            if name == "rocksdb" {
                RocksDbFactory.open(&path, &cfg).expect("open rocksdb")
            } else {
                RialtoFactory.open(&path, &cfg).expect("open rialto")
            }
        };
        let mut engines = [open("rocksdb"), open("rialto")];
        let mut rng = StdRng::seed_from_u64(21);
        let agree = |engines: &[Box<dyn BenchEngine>; 2], rng: &mut StdRng| {
            let k = key(rng);
            let [a, b] = engines;
            assert_eq!(
                a.get(&k).expect("get"),
                b.get(&k).expect("get"),
                "get {k:?}"
            );
            let limit = rng.gen_range(0..40);
            for reverse in [false, true] {
                assert_eq!(
                    scan(&**a, ScanFrom::Key(&k), reverse, limit),
                    scan(&**b, ScanFrom::Key(&k), reverse, limit),
                    "scan from {k:?}, reverse {reverse}"
                );
            }
            let nexts = rng.gen_range(0..10);
            assert_eq!(seek(&**a, &k, nexts), seek(&**b, &k, nexts), "seek {k:?}");
        };
        for i in 0..6000 {
            match rng.gen_range(0..10) {
                0..=4 => {
                    let (k, v, sync) = (key(&mut rng), value(&mut rng), i % 97 == 0);
                    for e in &engines {
                        e.put(&k, &v, sync).expect("put");
                    }
                }
                5 => {
                    let k = key(&mut rng);
                    for e in &engines {
                        e.delete(&k, false).expect("delete");
                    }
                }
                6 => {
                    let ops: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..rng.gen_range(1..6))
                        .map(|_| {
                            let k = key(&mut rng);
                            (k, rng.gen_bool(0.7).then(|| value(&mut rng)))
                        })
                        .collect();
                    let batch: Vec<BatchOp<'_>> = ops
                        .iter()
                        .map(|(k, v)| match v {
                            Some(v) => BatchOp::Put(k, v),
                            None => BatchOp::Delete(k),
                        })
                        .collect();
                    for e in &engines {
                        e.write_batch(&batch, i % 7 == 0).expect("write batch");
                    }
                }
                _ => agree(&engines, &mut rng),
            }
            if i % 1500 == 1499 {
                for e in &engines {
                    e.flush().expect("flush");
                }
            }
        }
        let everything = |engines: &[Box<dyn BenchEngine>; 2]| {
            for reverse in [false, true] {
                let [a, b] = engines;
                let got = scan(&**a, ScanFrom::End, reverse, u64::MAX);
                assert!(!got.is_empty());
                assert_eq!(got, scan(&**b, ScanFrom::End, reverse, u64::MAX));
            }
        };
        everything(&engines);
        for e in &engines {
            e.compact_all().expect("compact");
        }
        everything(&engines);
        let stats = engines[0].stats().expect("stats");
        assert!(stats.wal_bytes_written > 0, "RocksDB's tickers are read");
        assert!(stats.flush_bytes_written > 0);
        for e in engines {
            e.close().expect("close");
        }
        engines = [open("rocksdb"), open("rialto")];
        everything(&engines);
        for _ in 0..200 {
            agree(&engines, &mut rng);
        }
    }
}
