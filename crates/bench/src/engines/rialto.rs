//! Adapter for Rialto's LSM engine (`rialto_lsm::Db`).

use std::path::Path;
use std::sync::Arc;

use rialto_engine::{
    BatchOp, EngineIterator, EngineStats, IterOptions, KvEngine, WriteBatch, WriteOptions,
};
use rialto_lsm::triad::TriadStats;
use rialto_lsm::{BlockCache, Compression, Db, Options, ThrottleOptions};
use rialto_txn::{Merger, MergerOptions};

use crate::config::{CommitPath, CompressionKind, TriadMode};
use crate::engine::{
    Adaptation, BenchEngine, ClassChange, EngineConfig, EngineFactory, ScanFrom, Visitor,
};
use crate::error::{BenchError, Result};

const NAME: &str = "rialto";

fn err(op: &str, e: rialto_engine::Error) -> BenchError {
    BenchError::engine(NAME, op, e)
}

/// Opens `rialto_lsm::Db`s.
#[derive(Debug, Clone, Copy, Default)]
pub struct RialtoFactory;

/// Rialto's options for the bench settings; everything not set here keeps Rialto's default.
pub fn options(cfg: &EngineConfig) -> Result<Options> {
    Ok(Options {
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
        triad: cfg.triad.options(),
        throttle: ThrottleOptions {
            enabled: cfg.journal_first,
            ..ThrottleOptions::default()
        },
        wal_zero_fill_bytes_per_sync: cfg.wal_zero_fill,
        background_nice: cfg.background_nice,
        ..Options::default()
    })
}

/// TRIAD's state as the `stats` benchmark prints it, one line each.
pub fn format_triad(t: &TriadStats) -> Vec<String> {
    let on = |b: bool| if b { "on" } else { "off" };
    let mut lines = vec![
        format!(
            "triad : mem {} disk {} log {} adaptive {} overlap threshold {:.2} last overlap {} deferred flushes {}",
            on(t.mem),
            on(t.disk),
            on(t.log),
            on(t.adaptive),
            t.overlap_threshold,
            t.last_overlap
                .map_or_else(|| "-".to_string(), |x| format!("{x:.2}")),
            t.deferred_flushes
        ),
        format!(
            "triad mem : hot/cold {} hot flushes {} hot entries kept {} re-logged bytes {}",
            on(t.hot_cold_active),
            t.hot_flushes,
            t.hot_entries_kept,
            t.hot_bytes_relogged
        ),
        format!(
            "triad log : {} commit-log flushes {} fallbacks {}",
            if t.log_active { "active" } else { "inactive" },
            t.log_flushes,
            t.log_fallbacks
        ),
    ];
    if t.adaptive {
        let w = &t.last_window;
        lines.push(format!(
            "triad workload : {} after {} windows; last window {} reads {} writes \
             (read fraction {:.2}, skew {:.2}: {} of {} sampled writes distinct)",
            t.workload.name(),
            t.windows,
            w.reads,
            w.writes,
            w.read_fraction(),
            w.skew(),
            w.distinct,
            w.sampled
        ));
        for d in &t.decisions {
            lines.push(format!(
                "triad decision : window {}: {} -> {} (read fraction {:.2}, skew {:.2}; \
                 overlap threshold {:.2}, hot/cold {})",
                d.window,
                d.from.name(),
                d.to.name(),
                d.read_fraction,
                d.skew,
                d.tuning.overlap_threshold,
                on(d.tuning.hot_cold)
            ));
        }
    }
    lines
}

/// Rialto with a fixed TRIAD mode, whatever `--triad` says: `bench-compare
/// --engines=rialto:off,rialto:on,rocksdb` compares the modes side by side.
#[derive(Debug, Clone, Copy)]
pub struct RialtoTriadFactory(pub TriadMode);

impl RialtoTriadFactory {
    /// The factory of an engine name `rialto:MODE`, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        name.strip_prefix("rialto:")
            .and_then(TriadMode::parse)
            .map(RialtoTriadFactory)
    }
}

impl EngineFactory for RialtoTriadFactory {
    fn name(&self) -> &'static str {
        match self.0 {
            TriadMode::Off => "rialto:off",
            TriadMode::Mem => "rialto:mem",
            TriadMode::Disk => "rialto:disk",
            TriadMode::Log => "rialto:log",
            TriadMode::On => "rialto:on",
            TriadMode::Adaptive => "rialto:adaptive",
        }
    }

    fn open(&self, path: &Path, cfg: &EngineConfig) -> Result<Box<dyn BenchEngine>> {
        RialtoFactory.open(path, cfg)
    }

    fn describe(&self) -> String {
        RialtoFactory.describe()
    }

    fn triad_override(&self) -> Option<TriadMode> {
        Some(self.0)
    }

    fn has_triad(&self) -> bool {
        true
    }
}

impl EngineFactory for RialtoFactory {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self, path: &Path, cfg: &EngineConfig) -> Result<Box<dyn BenchEngine>> {
        let db = Arc::new(
            Db::open(path, options(cfg)?)
                .map_err(|e| err(&format!("open {}", path.display()), e))?,
        );
        let merger = match cfg.commit {
            CommitPath::Merger | CommitPath::Inline => Some(
                Merger::start(
                    Arc::clone(&db),
                    MergerOptions {
                        inline_execution: cfg.commit == CommitPath::Inline,
                        wait_spin: std::time::Duration::from_micros(cfg.wait_spin_us),
                        poll_preempted_after: std::time::Duration::from_micros(
                            cfg.poll_preempted_us,
                        ),
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

    fn has_triad(&self) -> bool {
        true
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
            (Some(m), true) => m.write_and_wait(b),
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

    fn extra_stats(&self) -> Vec<String> {
        let mut lines = format_triad(&self.db.triad_stats());
        if let Some(m) = &self.merger {
            let s = m.stats();
            lines.push(format!(
                "merger : {} transactions in {} groups, {} syncs, commit p50 {} us p99 {} us, \
                 polling suspended {} times (CPU contended)",
                s.txns,
                s.groups,
                s.syncs,
                s.commit_p50_micros,
                s.commit_p99_micros,
                s.poll_suspensions
            ));
        }
        lines
    }

    fn adaptation(&self) -> Option<Adaptation> {
        let t = self.db.triad_stats();
        t.adaptive.then(|| Adaptation {
            windows: t.windows,
            changes: t
                .decisions
                .iter()
                .map(|d| ClassChange {
                    window: d.window,
                    from: d.from.name().to_string(),
                    to: d.to.name().to_string(),
                })
                .collect(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_triad_mode_and_pacing_reach_the_engine_options() {
        let cfg = EngineConfig {
            write_buffer_size: 1 << 20,
            cache_size: 0,
            bloom_bits: 10,
            compression: CompressionKind::None,
            block_size: 4096,
            background_jobs: 2,
            commit: CommitPath::Merger,
            triad: TriadMode::Disk,
            journal_first: false,
            wal_zero_fill: 0,
            background_nice: 0,
            wait_spin_us: 0,
            poll_preempted_us: 0,
        };
        let o = options(&cfg).unwrap();
        assert_eq!(o.triad, TriadMode::Disk.options());
        assert!(!o.throttle.enabled);
        assert!(RialtoFactory.has_triad());
    }
}
