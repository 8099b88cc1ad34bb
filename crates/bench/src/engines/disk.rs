//! The disk as a pseudo-engine: the physical limit of durable writes on this disk.
//!
//! Each write appends its key and value (plus a 12-byte header, about what a WAL record
//! costs) to a file already written full of zeros and synced — the cheapest durable append
//! there is (an `fdatasync` over written blocks commits data alone; design §3.1), as Rialto's
//! prepared WAL segments are — and with `--sync` runs `fdatasync`, one writer at a time. One
//! writer's fillsync ops/sec is therefore 1 / fdatasync latency, and N writers whose commits
//! are grouped perfectly could reach at most N times that: the figure a group-commit path is
//! measured against. Past the zeros (the size of a Rialto WAL segment for the run's
//! `--write_buffer_size`) the file grows, as a segment does. Reads are not supported.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rialto_engine::{BatchOp, EngineStats};
use rialto_io::{Fs, PosixFs, WritableFile};

use crate::engine::{BenchEngine, EngineConfig, EngineFactory, ScanFrom, Visitor};
use crate::error::{BenchError, Result};

const NAME: &str = "disk";

fn unsupported(op: &str) -> BenchError {
    BenchError::engine(
        NAME,
        op,
        "the disk pseudo-engine only writes (use it for fillseq/fillrandom/fillsync)",
    )
}

/// Opens [`DiskEngine`]s.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskFactory;

impl EngineFactory for DiskFactory {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self, path: &Path, cfg: &EngineConfig) -> Result<Box<dyn BenchEngine>> {
        let fs = PosixFs::new();
        let io = |op: &str, e: std::io::Error| BenchError::engine(NAME, op, e);
        fs.create_dir_all(path)
            .map_err(|e| io("create directory", e))?;
        let log = path.join("append.log");
        let size = cfg.write_buffer_size + cfg.write_buffer_size / 10;
        fs.create_zeroed(&log, size, &mut |_| Ok(()))
            .map_err(|e| io("write zeros to append.log", e))?;
        fs.sync_dir(path).map_err(|e| io("sync directory", e))?;
        let file = fs
            .open_overwrite(&log)
            .map_err(|e| io("open append.log", e))?;
        Ok(Box::new(DiskEngine {
            file: Mutex::new(file),
            syncs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }))
    }

    fn describe(&self) -> String {
        "disk (append over synced zeros + fdatasync, one writer at a time)".to_string()
    }
}

/// See the module docs.
pub struct DiskEngine {
    file: Mutex<Box<dyn WritableFile>>,
    syncs: AtomicU64,
    bytes: AtomicU64,
}

impl DiskEngine {
    fn append(&self, parts: &[&[u8]], sync: bool) -> Result<()> {
        let io = |op: &str, e: std::io::Error| BenchError::engine(NAME, op, e);
        let mut f = self.file.lock();
        let header = [0u8; 12];
        f.append(&header).map_err(|e| io("append", e))?;
        let mut n = header.len() as u64;
        for p in parts {
            f.append(p).map_err(|e| io("append", e))?;
            n += p.len() as u64;
        }
        if sync {
            f.sync_data().map_err(|e| io("fdatasync", e))?;
            self.syncs.fetch_add(1, Ordering::Relaxed);
        } else {
            f.flush().map_err(|e| io("write", e))?;
        }
        self.bytes.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }
}

impl BenchEngine for DiskEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.append(&[key, value], sync)
    }

    fn write_batch(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()> {
        let mut parts: Vec<&[u8]> = Vec::with_capacity(ops.len() * 2);
        for op in ops {
            match *op {
                BatchOp::Put(k, v) => {
                    parts.push(k);
                    parts.push(v);
                }
                BatchOp::Delete(k) => parts.push(k),
            }
        }
        self.append(&parts, sync)
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.append(&[key], sync)
    }

    fn get(&self, _key: &[u8]) -> Result<Option<usize>> {
        Err(unsupported("get"))
    }

    fn scan(
        &self,
        _from: ScanFrom<'_>,
        _reverse: bool,
        _limit: u64,
        _visit: Visitor<'_>,
    ) -> Result<u64> {
        Err(unsupported("scan"))
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact_all(&self) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> Result<EngineStats> {
        let bytes = self.bytes.load(Ordering::Relaxed);
        Ok(EngineStats {
            wal_bytes_written: bytes,
            disk_bytes: bytes,
            wal_syncs: self.syncs.load(Ordering::Relaxed),
            ..EngineStats::default()
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
