//! Adapter for Rialto's LSM engine (`rialto_lsm::Db`).

use std::path::Path;
use std::sync::Arc;

use rialto_engine::{
    BatchOp, EngineIterator, EngineStats, IterOptions, KvEngine, WriteBatch, WriteOptions,
};
use rialto_lsm::cache::BlockCache;
use rialto_lsm::{Compression, Db, Options};
use rialto_txn::{Merger, MergerOptions};

use crate::config::{CommitPath, CompressionKind};
use crate::engine::{BenchEngine, EngineConfig, EngineFactory, ScanFrom, Visitor};
use crate::error::{BenchError, Result};

const NAME: &str = "rialto";

fn err(op: &str, e: rialto_engine::Error) -> BenchError {
    BenchError::engine(NAME, op, e)
}

/// Opens `rialto_lsm::Db`s.
#[derive(Debug, Clone, Copy, Default)]
pub struct RialtoFactory;

/// Rialto's options for the bench settings; everything not set here keeps Rialto's default.
pub fn options(cfg: &EngineConfig) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: usize::try_from(cfg.write_buffer_size).unwrap_or(usize::MAX),
        bloom_bits_per_key: cfg.bloom_bits,
        compression: match cfg.compression {
            CompressionKind::None => Compression::None,
            CompressionKind::Lz4 => Compression::Lz4,
            CompressionKind::Zstd => Compression::Zstd,
        },
        // A cache of its own, sized by --cache_size, rather than the process-wide one, so
        // that a comparison gives each engine the same budget.
        block_cache: Some(BlockCache::new(
            usize::try_from(cfg.cache_size).unwrap_or(usize::MAX),
        )),
        block_size: cfg.block_size,
        max_background_jobs: cfg.background_jobs,
        ..Options::default()
    }
}

impl EngineFactory for RialtoFactory {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self, path: &Path, cfg: &EngineConfig) -> Result<Box<dyn BenchEngine>> {
        let db = Arc::new(
            Db::open(path, options(cfg))
                .map_err(|e| err(&format!("open {}", path.display()), e))?,
        );
        let merger = match cfg.commit {
            CommitPath::Merger | CommitPath::Inline => Some(
                Merger::start(
                    Arc::clone(&db),
                    MergerOptions {
                        inline_execution: cfg.commit == CommitPath::Inline,
                        ..MergerOptions::default()
                    },
                    Arc::new(rialto_io::SystemClock::new()),
                )
                .map_err(|e| err("start the transaction merger", e))?,
            ),
            CommitPath::Direct => None,
        };
        Ok(Box::new(RialtoEngine { db, merger }))
    }

    fn describe(&self) -> String {
        format!("rialto {}", env!("CARGO_PKG_VERSION"))
    }
}

/// An open Rialto database. Durable writes go through the transaction merger (unless
/// `--commit=direct`), as they do in `rialto serve`; non-durable ones straight to the engine.
pub struct RialtoEngine {
    db: Arc<Db>,
    merger: Option<Merger<Db>>,
}

impl RialtoEngine {
    fn commit(&self, b: WriteBatch, sync: bool, op: &str) -> Result<()> {
        match (&self.merger, sync) {
            (Some(m), true) => m.write(b).wait(),
            _ => KvEngine::write(&*self.db, b, wopts(sync)),
        }
        .map_err(|e| err(op, e))
    }
}

fn wopts(sync: bool) -> WriteOptions {
    WriteOptions { sync }
}

impl BenchEngine for RialtoEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + 10);
        b.put(key, value);
        self.commit(b, sync, "put")
    }

    fn write_batch(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()> {
        let bytes: usize = ops
            .iter()
            .map(|op| match op {
                BatchOp::Put(k, v) => k.len() + v.len() + 10,
                BatchOp::Delete(k) => k.len() + 5,
            })
            .sum();
        let mut b = WriteBatch::with_capacity(bytes);
        for op in ops {
            match *op {
                BatchOp::Put(k, v) => b.put(k, v),
                BatchOp::Delete(k) => b.delete(k),
            }
        }
        self.commit(b, sync, "write batch")
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.commit(b, sync, "delete")
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        KvEngine::get(&*self.db, key)
            .map(|v| v.map(|b| b.len()))
            .map_err(|e| err("get", e))
    }

    fn scan(
        &self,
        from: ScanFrom<'_>,
        reverse: bool,
        limit: u64,
        visit: Visitor<'_>,
    ) -> Result<u64> {
        let mut it = KvEngine::iter(&*self.db, IterOptions::default())
            .map_err(|e| err("new iterator", e))?;
        match (from, reverse) {
            (ScanFrom::End, false) => it.seek_to_first(),
            (ScanFrom::End, true) => it.seek_to_last(),
            (ScanFrom::Key(k), false) => it.seek(k),
            (ScanFrom::Key(k), true) => it.seek_for_prev(k),
        }
        let mut n = 0u64;
        while n < limit && it.valid() {
            visit(it.key(), it.value());
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
        KvEngine::flush(&*self.db).map_err(|e| err("flush", e))
    }

    fn compact_all(&self) -> Result<()> {
        KvEngine::compact_range(&*self.db, None, None).map_err(|e| err("compact", e))
    }

    fn stats(&self) -> Result<EngineStats> {
        Ok(KvEngine::stats(&*self.db))
    }

    fn close(self: Box<Self>) -> Result<()> {
        let RialtoEngine { db, merger } = *self;
        if let Some(m) = merger {
            m.close().map_err(|e| err("close the merger", e))?;
        }
        match Arc::try_unwrap(db) {
            Ok(db) => db.close().map_err(|e| err("close", e)),
            Err(_) => Err(err("close", rialto_engine::Error::Closed)),
        }
    }
}
