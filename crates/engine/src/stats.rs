//! Engine statistics, shared by every engine so that servers and benchmarks print them alike.

use std::fmt;

/// Files and bytes of one level of a tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Number of table files.
    pub files: u64,
    /// Total bytes of those files.
    pub bytes: u64,
}

/// A point-in-time copy of an engine's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineStats {
    /// Per level, from level 0 down.
    pub levels: Vec<LevelStats>,
    /// Key and value bytes that users wrote (the denominator of write amplification).
    pub user_bytes_written: u64,
    /// Bytes appended to the write-ahead log.
    pub wal_bytes_written: u64,
    /// Zeros written ahead into WAL segments before their records (so that syncs of the
    /// records commit data alone); counted in write amplification.
    pub wal_prepare_bytes_written: u64,
    /// Bytes of tables written by memtable flushes.
    pub flush_bytes_written: u64,
    /// Bytes of tables written by compactions.
    pub compaction_bytes_written: u64,
    /// Bytes of tables read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes of tables written by ingestion (batch pushes; no WAL, no flush).
    pub ingest_bytes_written: u64,
    /// Key and value bytes of the live data, estimated (the denominator of space amplification).
    pub live_data_bytes: u64,
    /// Bytes of every file the engine keeps on disk (tables, logs, manifest).
    pub disk_bytes: u64,
    /// Block cache lookups that found the block.
    pub block_cache_hits: u64,
    /// Block cache lookups that read the block from disk.
    pub block_cache_misses: u64,
    /// Row cache lookups that found the key (0 without a row cache).
    pub row_cache_hits: u64,
    /// Row cache lookups that did not.
    pub row_cache_misses: u64,
    /// Bytes the row cache holds now (keys, values and per-entry overhead).
    pub row_cache_bytes: u64,
    /// Rows the row cache's warm-up put there since open.
    pub row_cache_warmed_rows: u64,
    /// Number of flushes completed.
    pub flushes: u64,
    /// Number of compactions completed.
    pub compactions: u64,
    /// Compactions started only because writes paused (deferred work done while idle).
    pub idle_compactions: u64,
    /// Microseconds writers spent delayed or stopped by write stalls.
    pub stall_micros: u64,
    /// WAL syncs performed.
    pub wal_syncs: u64,
    /// Entries iterators examined, every version and tombstone stepped over included: the
    /// work behind scans, as entries (0 for engines that do not count it).
    pub iter_entries_examined: u64,
    /// Set when the engine refuses writes after a failure; the reason.
    pub read_only_reason: Option<String>,
}

impl EngineStats {
    /// Bytes written to storage (WAL and its prepared zeros, flushes, compactions and
    /// ingestions) per user byte written.
    pub fn write_amplification(&self) -> f64 {
        ratio(
            self.wal_bytes_written
                + self.wal_prepare_bytes_written
                + self.flush_bytes_written
                + self.compaction_bytes_written
                + self.ingest_bytes_written,
            self.user_bytes_written,
        )
    }
    /// Bytes on disk per byte of live data.
    pub fn space_amplification(&self) -> f64 {
        ratio(self.disk_bytes, self.live_data_bytes)
    }
    /// Fraction of block-cache lookups that hit.
    pub fn block_cache_hit_rate(&self) -> f64 {
        let total = self.block_cache_hits + self.block_cache_misses;
        if total == 0 {
            0.0
        } else {
            self.block_cache_hits as f64 / total as f64
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl fmt::Display for EngineStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Level  Files     Size(MB)")?;
        for (i, l) in self.levels.iter().enumerate() {
            writeln!(
                f,
                "L{:<5} {:>5} {:>12.2}",
                i,
                l.files,
                l.bytes as f64 / 1048576.0
            )?;
        }
        writeln!(
            f,
            "written : user {:.2} MB, wal {:.2} MB (+{:.2} MB prepared), flush {:.2} MB, compaction {:.2} MB (read {:.2} MB), ingest {:.2} MB",
            mb(self.user_bytes_written),
            mb(self.wal_bytes_written),
            mb(self.wal_prepare_bytes_written),
            mb(self.flush_bytes_written),
            mb(self.compaction_bytes_written),
            mb(self.compaction_bytes_read),
            mb(self.ingest_bytes_written)
        )?;
        writeln!(
            f,
            "events : {} flushes, {} compactions ({} while writes paused), {} WAL syncs, {:.3} s stalled",
            self.flushes,
            self.compactions,
            self.idle_compactions,
            self.wal_syncs,
            self.stall_micros as f64 / 1e6
        )?;
        writeln!(
            f,
            "block cache : {} hits, {} misses, hit rate {:.3}",
            self.block_cache_hits,
            self.block_cache_misses,
            self.block_cache_hit_rate()
        )?;
        if self.row_cache_hits + self.row_cache_misses + self.row_cache_bytes > 0 {
            writeln!(
                f,
                "row cache : {} hits, {} misses, {:.2} MB held, {} rows warmed",
                self.row_cache_hits,
                self.row_cache_misses,
                mb(self.row_cache_bytes),
                self.row_cache_warmed_rows
            )?;
        }
        if let Some(r) = &self.read_only_reason {
            writeln!(f, "read-only : {r}")?;
        }
        write!(
            f,
            "amplification : write {:.2} space {:.2}",
            self.write_amplification(),
            self.space_amplification()
        )
    }
}

fn mb(b: u64) -> f64 {
    b as f64 / 1048576.0
}
