//! RocksDB's two ways of loading a whole dataset, for `rialto bench-push`: random puts (WAL
//! off, as RocksDB recommends for bulk loads, then a flush and the compactions it starts), and
//! SstFileWriter tables from sorted input, ingested with `ingest_external_file` (files moved).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rocksdb::{properties, IngestExternalFileOptions, SstFileWriter, WriteOptions, DB};

use super::rocksdb::options;
use crate::engine::EngineConfig;
use crate::error::{BenchError, Result};

fn err(op: &str, e: rocksdb::Error) -> BenchError {
    BenchError::Engine {
        engine: "rocksdb",
        op: op.to_string(),
        message: e.into_string(),
    }
}

/// Loads by `put`s in input order.
pub struct PutLoader {
    db: DB,
    wo: WriteOptions,
}

impl PutLoader {
    /// Opens a fresh database at `path`.
    pub fn open(path: &Path, cfg: &EngineConfig) -> Result<PutLoader> {
        let (o, _cache) = options(cfg);
        let db = DB::open(&o, path).map_err(|e| err("open", e))?;
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        Ok(PutLoader { db, wo })
    }

    /// Puts one record.
    pub fn put(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        self.db.put_opt(k, v, &self.wo).map_err(|e| err("put", e))
    }

    /// Flushes the memtable and waits until no compaction is pending or running, so the load
    /// ends with the tree in the shape it keeps.
    pub fn finish(self) -> Result<()> {
        self.db.flush().map_err(|e| err("flush", e))?;
        loop {
            let pending = self
                .db
                .property_int_value(properties::COMPACTION_PENDING)
                .ok()
                .flatten()
                .unwrap_or(0);
            let running = self
                .db
                .property_int_value(properties::NUM_RUNNING_COMPACTIONS)
                .ok()
                .flatten()
                .unwrap_or(0);
            if pending == 0 && running == 0 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Loads sorted records through SstFileWriter files of `target_file_size`, then ingests them.
pub struct SstLoader {
    db: DB,
    opts: rocksdb::Options,
    dir: PathBuf,
    writer: Option<SstFileWriter<'static>>,
    files: Vec<PathBuf>,
    target_file_size: u64,
}

impl SstLoader {
    /// Opens a fresh database at `path`; table files are built in `path/../sst-staging`.
    pub fn open(path: &Path, cfg: &EngineConfig, target_file_size: u64) -> Result<SstLoader> {
        let (o, _cache) = options(cfg);
        let db = DB::open(&o, path).map_err(|e| err("open", e))?;
        let dir = path.with_extension("staging");
        std::fs::create_dir_all(&dir).map_err(|e| BenchError::Io {
            context: format!("create {}", dir.display()),
            source: e,
        })?;
        Ok(SstLoader {
            db,
            opts: o,
            dir,
            writer: None,
            files: Vec::new(),
            target_file_size,
        })
    }

    /// Appends a record; keys must be strictly increasing.
    pub fn add(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        if self
            .writer
            .as_ref()
            .is_some_and(|w| w.file_size() >= self.target_file_size)
        {
            self.cut()?;
        }
        if self.writer.is_none() {
            // SstFileWriter borrows its options; they live as long as the loader.
            let opts: &'static rocksdb::Options = Box::leak(Box::new(self.opts.clone()));
            let w = SstFileWriter::create(opts);
            let path = self.dir.join(format!("{:06}.sst", self.files.len()));
            w.open(&path).map_err(|e| err("sst open", e))?;
            self.files.push(path);
            self.writer = Some(w);
        }
        match self.writer.as_mut() {
            Some(w) => w.put(k, v).map_err(|e| err("sst put", e)),
            None => Ok(()),
        }
    }

    fn cut(&mut self) -> Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.finish().map_err(|e| err("sst finish", e))?;
        }
        Ok(())
    }

    /// Finishes the last file and ingests every file (moved, not copied).
    pub fn finish(mut self) -> Result<()> {
        self.cut()?;
        if self.files.is_empty() {
            return Ok(());
        }
        let mut io = IngestExternalFileOptions::default();
        io.set_move_files(true);
        self.db
            .ingest_external_file_opts(&io, self.files.clone())
            .map_err(|e| err("ingest", e))?;
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(())
    }
}

/// Compiled only with the `rocksdb` feature (see the adapter's tests).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BenchFlags, Config};
    use crate::engine::{EngineFactory, ScanFrom};
    use crate::engines::rocksdb::RocksDbFactory;

    fn records() -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..3000u32)
            .map(|i| {
                let k = format!("user{i:08}").into_bytes();
                (k, vec![b'a' + (i % 26) as u8; 100])
            })
            .collect()
    }

    fn read_back(path: &Path, cfg: &EngineConfig) -> Vec<(Vec<u8>, Vec<u8>)> {
        let e = RocksDbFactory.open(path, cfg).expect("open");
        let mut out = Vec::new();
        e.scan(ScanFrom::End, false, u64::MAX, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()))
        })
        .expect("scan");
        e.close().expect("close");
        out
    }

    /// Both load paths of `rialto bench-push` leave exactly the records given, readable by
    /// the bench adapter; the table loader cuts files at its target size and ingests them all.
    #[test]
    fn put_and_table_loads_leave_the_same_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = EngineConfig::from_config(
            &Config::from_flags(&BenchFlags::default()).expect("default flags"),
        );
        let data = records();

        let puts = dir.path().join("puts");
        let mut l = PutLoader::open(&puts, &cfg).expect("open");
        for (k, v) in &data {
            l.put(k, v).expect("put");
        }
        l.finish().expect("finish");
        assert_eq!(read_back(&puts, &cfg), data);

        let tables = dir.path().join("tables");
        // Small files: the load spans several tables.
        let mut l = SstLoader::open(&tables, &cfg, 64 << 10).expect("open");
        for (k, v) in &data {
            l.add(k, v).expect("add");
        }
        assert!(l.files.len() > 1, "cut into {} files", l.files.len());
        l.finish().expect("finish");
        assert_eq!(read_back(&tables, &cfg), data);
    }

    /// SstFileWriter refuses keys out of order; the loader reports it as an error.
    #[test]
    fn an_unsorted_table_load_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = EngineConfig::from_config(
            &Config::from_flags(&BenchFlags::default()).expect("default flags"),
        );
        let mut l = SstLoader::open(&dir.path().join("db"), &cfg, 64 << 20).expect("open");
        l.add(b"b", b"1").expect("add");
        assert!(l.add(b"a", b"2").is_err());
    }
}
