//! Shared helpers: an LSM database on `MemFs`, and a file system whose WAL syncs can be held.

#![allow(dead_code)]

use std::io;
use std::path::Path;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use rialto_io::{FileLock, FileSyncer, Fs, MemFs, RandomAccessFile, SystemClock, WritableFile};
use rialto_lsm::{Db, Options};
use rialto_txn::{Merger, MergerOptions};

pub const DIR: &str = "/db";

pub fn lsm_options(fs: Arc<dyn Fs>) -> Options {
    Options {
        fs,
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_open_files: 64,
        ..Options::default()
    }
}

pub fn open(fs: Arc<dyn Fs>) -> Arc<Db> {
    Arc::new(Db::open(DIR, lsm_options(fs)).expect("open"))
}

pub fn merger(db: &Arc<Db>, opts: MergerOptions) -> Merger<Db> {
    Merger::start(Arc::clone(db), opts, Arc::new(SystemClock::new())).expect("start merger")
}

pub fn mem() -> (MemFs, Arc<dyn Fs>) {
    let fs = MemFs::new();
    let dynfs: Arc<dyn Fs> = Arc::new(fs.clone());
    (fs, dynfs)
}

/// A gate that WAL syncs wait at while it is closed.
#[derive(Default)]
pub struct Gate {
    closed: Mutex<bool>,
    cv: Condvar,
    /// Syncs currently waiting.
    waiting: Mutex<usize>,
    waiting_cv: Condvar,
}

impl Gate {
    pub fn close(&self) {
        *self.closed.lock() = true;
    }
    pub fn open(&self) {
        *self.closed.lock() = false;
        self.cv.notify_all();
    }
    /// Blocks until a sync is held at the gate.
    pub fn wait_for_held_sync(&self) {
        let mut w = self.waiting.lock();
        while *w == 0 {
            self.waiting_cv.wait(&mut w);
        }
    }
    fn pass(&self) {
        let mut c = self.closed.lock();
        if *c {
            *self.waiting.lock() += 1;
            self.waiting_cv.notify_all();
            while *c {
                self.cv.wait(&mut c);
            }
            *self.waiting.lock() -= 1;
        }
    }
}

/// `MemFs` whose WAL syncs (through sync handles) pass a [`Gate`].
pub struct GateFs {
    pub inner: MemFs,
    pub gate: Arc<Gate>,
}

struct GateFile {
    inner: Box<dyn WritableFile>,
    gate: Option<Arc<Gate>>,
}

struct GateSyncer {
    inner: Arc<dyn FileSyncer>,
    gate: Arc<Gate>,
}

impl FileSyncer for GateSyncer {
    fn sync_data(&self) -> io::Result<()> {
        self.gate.pass();
        self.inner.sync_data()
    }
}

impl WritableFile for GateFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn sync_all(&mut self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        let inner = self.inner.syncer()?;
        Ok(match &self.gate {
            Some(g) => Arc::new(GateSyncer {
                inner,
                gate: Arc::clone(g),
            }),
            None => inner,
        })
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Fs for GateFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let wal = path.extension().is_some_and(|e| e == "log");
        Ok(Box::new(GateFile {
            inner: self.inner.create(path)?,
            gate: wal.then(|| Arc::clone(&self.gate)),
        }))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.open_append(path)
    }
    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let wal = path.extension().is_some_and(|e| e == "log");
        Ok(Box::new(GateFile {
            inner: self.inner.open_overwrite(path)?,
            gate: wal.then(|| Arc::clone(&self.gate)),
        }))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        self.inner.truncate(path, len)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

/// A database on a `MemFs` whose WAL syncs wait at the returned gate while it is closed.
pub fn gated() -> (Arc<Gate>, Arc<Db>) {
    let gate = Arc::new(Gate::default());
    let fs = Arc::new(GateFs {
        inner: MemFs::new(),
        gate: Arc::clone(&gate),
    });
    (gate, open(fs))
}

/// A batch of one put.
pub fn one_put(k: &[u8], v: &[u8]) -> rialto_engine::WriteBatch {
    let mut b = rialto_engine::WriteBatch::new();
    b.put(k, v);
    b
}

pub fn key(i: usize) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}
