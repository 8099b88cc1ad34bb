//! [`MemFs`]: an in-memory file system that models what a power loss keeps, with fault
//! injection.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::device::{Device, DeviceModel, DeviceStats};
use crate::{FileLock, FileSyncer, Fs, RandomAccessFile, WritableFile};

/// What a simulated power loss ([`MemFs::crash`]) keeps of data that was never synced.
///
/// Whatever the mode, the namespace rolls back to what the last directory syncs made durable,
/// and synced bytes always survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every file is cut to its synced length and gets back the durable bytes it overwrote
    /// since its last sync: the harshest legal outcome for data.
    DropUnsynced,
    /// Each file keeps a random prefix of its unsynced tail (which starts at the first durable
    /// byte overwritten since the last sync, if any; past the cut, overwritten bytes get their
    /// durable contents back), cut at a sector boundary, with a
    /// 512- or 4096-byte sector chosen per file. The cut is uniform over: nothing of the tail,
    /// every sector boundary inside the tail, the whole tail. When something is kept, half the
    /// time the last kept sector is torn: its unsynced bytes from a random point to the end are
    /// garbled (each XORed with a non-zero byte). Synced bytes are never touched.
    ///
    /// The outcome is a function of `seed`, each file's path and the state before the crash,
    /// computed with a generator private to this module: replaying a failing seed gives the
    /// same disk, also after dependency upgrades.
    RandomTail {
        /// Seed of the per-file random choices.
        seed: u64,
    },
    /// Each file's unsynced bytes persist as an arbitrary subset of their sectors, as a disk
    /// that writes back pages in any order and tears below a page leaves them: a hole may
    /// sit in the middle of one write with its later parts on disk. Per file: a sector of 512
    /// or 4096 bytes, then nothing kept, everything kept, or each sector kept with a
    /// probability from 0.1 to 0.9. When something is kept, half the time one kept sector is
    /// torn (its unsynced bytes from a random point to the sector's end garbled). A sector not
    /// kept reads as the durable bytes it overwrote, or as zeros past the synced length; the
    /// file ends at its synced length or its last kept sector, whichever is further. Synced
    /// bytes are never touched. Replays from `seed` as [`CrashMode::RandomTail`] does.
    Scattered {
        /// Seed of the per-file random choices.
        seed: u64,
    },
    /// Every byte written survives; only the namespace rolls back.
    KeepAll,
}

/// Kinds of operation that [`FaultPlan`]s match and [`MemFs::op_count`] counts.
///
/// See [`MemFs`] for which calls count as which kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// `append` and `flush` (and the cut of `Fs::truncate`).
    Write,
    /// `sync_data`, `sync_all`, `Fs::sync_dir` (and the sync of `Fs::truncate`).
    Sync,
    /// `Fs::rename`.
    Rename,
    /// `Fs::create`.
    Create,
    /// `Fs::remove_file`.
    Remove,
    /// Every kind above.
    Any,
}

/// The error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `EIO`: an I/O error.
    Eio,
    /// `ENOSPC`: no space left on device.
    NoSpace,
}

impl Fault {
    /// The `errno` value this fault reports.
    pub fn errno(self) -> i32 {
        match self {
            Fault::Eio => libc::EIO,
            Fault::NoSpace => libc::ENOSPC,
        }
    }

    /// The error an operation failed by this fault returns (`raw_os_error() == Some(errno)`).
    pub fn to_io_error(self) -> io::Error {
        io::Error::from_raw_os_error(self.errno())
    }
}

/// Fails chosen operations of a [`MemFs`]: the `nth` operation of kind `op` (on a path that
/// contains `path_contains`, if set), counted from when the plan was added, and every later one
/// too if `persistent`.
///
/// Several plans may match one operation; each counts it, and the first added that fires
/// decides the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPlan {
    /// Kind of operation to fail.
    pub op: FaultOp,
    /// 1-based index, among the matching operations since the plan was added, of the first one
    /// to fail. 0 is treated as 1.
    pub nth: u64,
    /// Error returned.
    pub fault: Fault,
    /// Keep failing every matching operation after the `nth`.
    pub persistent: bool,
    /// Match only operations on a path whose string form contains this (for a rename, either
    /// path; for a file handle, the path it was opened with).
    pub path_contains: Option<String>,
}

impl FaultPlan {
    /// A one-shot plan failing the `nth` operation of kind `op`, on any path.
    pub fn new(op: FaultOp, nth: u64, fault: Fault) -> Self {
        FaultPlan {
            op,
            nth,
            fault,
            persistent: false,
            path_contains: None,
        }
    }

    /// Makes the plan fail every matching operation from the `nth` on.
    pub fn persistent(mut self) -> Self {
        self.persistent = true;
        self
    }

    /// Restricts the plan to operations on paths containing `fragment`.
    pub fn only_paths_containing(mut self, fragment: impl Into<String>) -> Self {
        self.path_contains = Some(fragment.into());
        self
    }
}

/// An in-memory file system that models what a power loss keeps, with fault injection.
///
/// Cloning is cheap and shares the state, so a test keeps a clone to crash or inspect the file
/// system it handed to the engine as an `Arc<dyn Fs>`. Every operation is thread-safe; handles
/// on different files do not contend (each inode has its own lock).
///
/// # Model
///
/// - A file is an *inode*: `data` (what the running process sees) and `synced_len`, the prefix
///   of `data` made durable by a `sync_data`/`sync_all` on any handle of that inode. A sync makes
///   durable everything written so far. Invariant: `synced_len <= data.len()`.
/// - A handle from [`Fs::open_overwrite`] writes from offset 0 over the existing bytes. The
///   durable bytes it overwrites are kept aside until the next sync (one contiguous range per
///   inode, widened to cover every overwrite), because a crash may bring them back.
/// - Each directory has a *live* namespace (name → inode), changed at once by `create`,
///   `rename`, `remove_file` and `lock`, and a *durable* namespace, which [`Fs::sync_dir`]
///   overwrites with a copy of the live one (additions, replacements and removals alike).
/// - Directories themselves are durable as soon as [`Fs::create_dir_all`] returns, and are never
///   removed. The roots `""` (relative paths) and `"/"` always exist.
/// - `create` on an existing path makes a new, empty inode: until the directory is synced, a
///   crash brings back the old file.
/// - A writable handle buffers nothing: `append` writes into the inode at once and `flush` does
///   nothing but count as a write for fault injection. `sync_data` and `sync_all` are the same
///   (the file size is part of `synced_len`).
/// - A readable handle reads the inode's *current* data, so a reader of a growing WAL sees bytes
///   appended after it was opened; its `len()` is the length at open time. Reading past the
///   current end fails with `UnexpectedEof`. An open handle keeps its inode alive after the name
///   is removed or replaced, as on POSIX.
/// - [`MemFs::crash`] simulates a power loss; see [`CrashMode`]. Handles and locks from before
///   the crash belong to a dead process: every later operation on them fails (only `len()`,
///   which cannot fail, still answers), and dropping an old lock guard releases nothing.
///
/// # Fault injection
///
/// Every operation of a [`FaultOp`] kind is counted ([`MemFs::op_count`]) and checked against
/// the [`FaultPlan`]s, *after* its own validation (a rename of a missing file fails with
/// `NotFound` and is not counted) and *before* it changes anything: a failed operation has no
/// effect. In particular a write failing with ENOSPC or EIO appends nothing (deterministic, no
/// partial write), and a failed sync leaves `synced_len` where it was (the data is not durable;
/// see fsyncgate). Which calls count as what:
///
/// | call                        | counted as            |
/// |-----------------------------|-----------------------|
/// | `append`, `flush`           | `Write`               |
/// | `sync_data`, `sync_all`     | `Sync`                |
/// | `Fs::sync_dir`              | `Sync`                |
/// | `Fs::truncate`              | `Write`, then `Sync`  |
/// | `Fs::create`                | `Create`              |
/// | `Fs::rename`                | `Rename`              |
/// | `Fs::remove_file`           | `Remove`              |
///
/// `create_dir_all`, `open_append`, `open_overwrite`, `open_read`, reads, `list_dir`, `lock` and the test
/// helpers are never counted nor failed. [`MemFs::crash`] keeps the plans and the counters: they
/// belong to the test, not to the simulated disk.
///
/// # Simulated device
///
/// [`MemFs::set_device`] puts a [`DeviceModel`] under the file system: `append`s queue their
/// bytes and may wait past its dirty limit, every sync (`sync_data`, `sync_all`, a syncer,
/// `sync_dir`, `truncate`) waits for the queue ahead of it. The waits are real time and happen
/// before any lock is taken. Without a device (the default) nothing waits.
///
/// # Paths
///
/// Paths are keys after normalization (`a/./b//c/` is `a/b/c`); `..` is rejected. A file's
/// parent directory must exist, or the operation fails with `NotFound`. Names must be UTF-8.
#[derive(Clone, Default)]
pub struct MemFs {
    shared: Arc<Shared>,
}

impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.shared.ns.lock();
        f.debug_struct("MemFs")
            .field("dirs", &ns.dirs.len())
            .field("generation", &self.shared.generation())
            .finish_non_exhaustive()
    }
}

impl MemFs {
    /// An empty file system holding only the roots `""` and `"/"`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Arms a fault plan; it counts matching operations from now on.
    pub fn add_fault(&self, plan: FaultPlan) {
        self.shared
            .faults
            .lock()
            .plans
            .push(ArmedPlan { plan, seen: 0 });
    }

    /// Disarms every fault plan. Operation counters keep counting.
    pub fn clear_faults(&self) {
        self.shared.faults.lock().plans.clear();
    }

    /// Operations of kind `op` performed since the file system was made, failed ones included;
    /// `FaultOp::Any` sums every kind. Run a workload once to learn N, then fail the 1st..Nth.
    pub fn op_count(&self, op: FaultOp) -> u64 {
        let faults = self.shared.faults.lock();
        match op.kind() {
            Some(kind) => faults.counts[kind as usize],
            None => faults.counts.iter().sum(),
        }
    }

    /// Installs a simulated device (see [`DeviceModel`]), replacing any earlier one, or removes
    /// it with `None`. With a device, writes queue up and syncs wait for the queue to drain:
    /// a journal sync issued during a bulk write is slow, as on a real disk. Without one (the
    /// default) nothing waits.
    pub fn set_device(&self, model: Option<DeviceModel>) {
        self.shared.device.set(model);
    }

    /// The installed device's counters, or `None` without a device.
    pub fn device_stats(&self) -> Option<DeviceStats> {
        self.shared.device.stats()
    }

    /// Operations failed by a fault plan so far: lets a test check its fault actually fired.
    pub fn faults_fired(&self) -> u64 {
        self.shared.faults.lock().fired
    }

    /// Simulates a power loss and the reboot after it.
    ///
    /// Afterwards every directory's live namespace is its durable namespace (entries never made
    /// durable by a directory sync vanish; unsynced removals and renames are undone), each file
    /// reachable from it is cut according to `mode` and is then fully synced, every lock is
    /// released, and every handle and lock guard from before fails or does nothing.
    pub fn crash(&self, mode: CrashMode) {
        let mut ns = self.shared.ns.lock();
        // Bumped before any inode is touched: a handle operation holding an inode lock either
        // completed before the cut below, or will see the new generation and fail.
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        ns.locks.clear();
        let mut done = HashSet::new();
        for (dir_path, dir) in &mut ns.dirs {
            dir.live = dir.durable.clone();
            for (name, inode) in &dir.live {
                if done.insert(inode.id) {
                    inode.content.write().crash(mode, &dir_path.join(name));
                }
            }
        }
    }

    /// Sorted names of the files (not directories) in `dir`; empty if `dir` does not exist.
    pub fn file_names(&self, dir: impl AsRef<Path>) -> Vec<String> {
        let Ok(dir) = normalize(dir.as_ref()) else {
            return Vec::new();
        };
        let ns = self.shared.ns.lock();
        ns.dirs
            .get(&dir)
            .map(|d| d.live.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// XORs the byte at `offset` of the file with `xor`, as bit rot on the disk would: both the
    /// file a reader sees and the one a crash would bring back (if the name's durable entry is
    /// another inode) change. Not counted as an operation.
    pub fn corrupt(&self, path: impl AsRef<Path>, offset: u64, xor: u8) -> io::Result<()> {
        let path = FilePath::parse(path.as_ref())?;
        let ns = self.shared.ns.lock();
        let dir = ns.dir(&path.dir)?;
        let inodes = [dir.live.get(&path.name), dir.durable.get(&path.name)];
        let mut found = false;
        let mut done = HashSet::new();
        for inode in inodes.into_iter().flatten() {
            found = true;
            if done.insert(inode.id) {
                inode.content.write().xor_byte(offset, xor, &path.full)?;
            }
        }
        if found {
            Ok(())
        } else {
            Err(not_found("file", &path.full))
        }
    }

    /// Sets the length of a live file without fault accounting, as if the disk had kept only
    /// `len` bytes (extending pads with zeros). The synced length is clamped to `len`.
    pub fn truncate_raw(&self, path: impl AsRef<Path>, len: u64) -> io::Result<()> {
        let path = FilePath::parse(path.as_ref())?;
        let len = to_usize(len)?;
        let ns = self.shared.ns.lock();
        ns.live_file(&path)?.content.write().set_len(len);
        Ok(())
    }

    /// Bytes of a live file that a crash would keep whatever the mode.
    pub fn synced_len(&self, path: impl AsRef<Path>) -> io::Result<u64> {
        let path = FilePath::parse(path.as_ref())?;
        let ns = self.shared.ns.lock();
        let synced = ns.live_file(&path)?.content.read().synced_len;
        Ok(synced as u64)
    }

    /// Total bytes of the files in the live namespace (each inode counted once).
    pub fn total_bytes(&self) -> u64 {
        let ns = self.shared.ns.lock();
        let mut done = HashSet::new();
        ns.dirs
            .values()
            .flat_map(|dir| dir.live.values())
            .filter(|inode| done.insert(inode.id))
            .map(|inode| inode.content.read().data.len() as u64)
            .sum()
    }
}

impl MemFs {
    /// A writable handle on an existing file: appending (`position` None) or writing from
    /// `position` on.
    fn open_writable(
        &self,
        path: &Path,
        position: Option<usize>,
    ) -> io::Result<Box<dyn WritableFile>> {
        let path = FilePath::parse(path)?;
        let ns = self.shared.ns.lock();
        let inode = Arc::clone(ns.live_file(&path)?);
        Ok(Box::new(MemWritableFile {
            handle: Handle::new(&self.shared, &ns, inode, path.full),
            position,
        }))
    }
}

impl Fs for MemFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let path = normalize(path)?;
        let mut ns = self.shared.ns.lock();
        let mut missing: Vec<&Path> = path
            .ancestors()
            .take_while(|dir| !ns.dirs.contains_key(*dir))
            .collect();
        // Create from the outermost missing directory inwards.
        while let Some(dir) = missing.pop() {
            ns.add_dir(dir)?;
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let path = FilePath::parse(path)?;
        let mut ns = self.shared.ns.lock();
        ns.check_can_link(&path)?;
        self.shared.check_fault(OpKind::Create, &[&path.full])?;
        let inode = ns.new_inode();
        ns.dir_mut(&path.dir)?
            .live
            .insert(path.name, Arc::clone(&inode));
        Ok(Box::new(MemWritableFile {
            handle: Handle::new(&self.shared, &ns, inode, path.full),
            position: None,
        }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.open_writable(path, None)
    }

    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.open_writable(path, Some(0))
    }

    /// Zeros the range (within the file), as a write would: a reader that punched a range
    /// before reading it finds zeros, as on a real file system.
    fn punch_hole(&self, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        let path = FilePath::parse(path)?;
        let ns = self.shared.ns.lock();
        let mut content = ns.live_file(&path)?.content.write();
        self.shared.check_fault(OpKind::Write, &[&path.full])?;
        let size = content.data.len();
        let start = to_usize(offset)?.min(size);
        let end = start.saturating_add(to_usize(len)?).min(size);
        content.write_at(start, &vec![0; end - start]);
        Ok(())
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let path = FilePath::parse(path)?;
        let ns = self.shared.ns.lock();
        let inode = Arc::clone(ns.live_file(&path)?);
        let len = inode.content.read().data.len() as u64;
        Ok(Arc::new(MemRandomAccessFile {
            handle: Handle::new(&self.shared, &ns, inode, path.full),
            len,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let from = FilePath::parse(from)?;
        let to = FilePath::parse(to)?;
        let mut ns = self.shared.ns.lock();
        let inode = Arc::clone(ns.live_file(&from)?);
        ns.check_can_link(&to)?;
        self.shared
            .check_fault(OpKind::Rename, &[&from.full, &to.full])?;
        if from.full != to.full {
            ns.dir_mut(&from.dir)?.live.remove(&from.name);
            ns.dir_mut(&to.dir)?.live.insert(to.name, inode);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let path = FilePath::parse(path)?;
        let mut ns = self.shared.ns.lock();
        ns.live_file(&path)?;
        self.shared.check_fault(OpKind::Remove, &[&path.full])?;
        ns.dir_mut(&path.dir)?.live.remove(&path.name);
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let path = FilePath::parse(path)?;
        let mut ns = self.shared.ns.lock();
        let dir = ns.dir(&path.full)?;
        if !dir.live.is_empty() || !dir.subdirs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("MemFs: directory {} is not empty", path.full.display()),
            ));
        }
        self.shared.check_fault(OpKind::Remove, &[&path.full])?;
        ns.dirs.remove(&path.full);
        ns.dir_mut(&path.dir)?.subdirs.remove(&path.name);
        Ok(())
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let path = FilePath::parse(path)?;
        let len = to_usize(len)?;
        self.shared.device.sync();
        let ns = self.shared.ns.lock();
        let mut content = ns.live_file(&path)?.content.write();
        self.shared.check_fault(OpKind::Write, &[&path.full])?;
        content.set_len(len);
        self.shared.check_fault(OpKind::Sync, &[&path.full])?;
        content.sync();
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let path = normalize(path)?;
        let ns = self.shared.ns.lock();
        let dir = ns.dir(&path)?;
        Ok(dir.live.keys().chain(&dir.subdirs).cloned().collect())
    }

    fn exists(&self, path: &Path) -> bool {
        let Ok(path) = normalize(path) else {
            return false;
        };
        let ns = self.shared.ns.lock();
        ns.dirs.contains_key(&path)
            || FilePath::parse(&path).is_ok_and(|file| ns.live_file(&file).is_ok())
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let path = FilePath::parse(path)?;
        let ns = self.shared.ns.lock();
        let len = ns.live_file(&path)?.content.read().data.len();
        Ok(len as u64)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let path = normalize(path)?;
        self.shared.device.sync();
        let mut ns = self.shared.ns.lock();
        ns.dir(&path)?;
        self.shared.check_fault(OpKind::Sync, &[&path])?;
        let dir = ns.dir_mut(&path)?;
        dir.durable = dir.live.clone();
        Ok(())
    }

    /// Creates the file (live entry only, like any create) if it is missing. Never counted nor
    /// failed by fault plans.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let path = FilePath::parse(path)?;
        let mut ns = self.shared.ns.lock();
        if ns.locks.contains(&path.full) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("MemFs: {} is already locked", path.full.display()),
            ));
        }
        if ns.live_file(&path).is_err() {
            ns.check_can_link(&path)?;
            let inode = ns.new_inode();
            ns.dir_mut(&path.dir)?.live.insert(path.name, inode);
        }
        ns.locks.insert(path.full.clone());
        Ok(Box::new(MemFileLock {
            shared: Arc::clone(&self.shared),
            path: path.full,
            generation: self.shared.generation(),
        }))
    }
}

/// State shared by every clone of a [`MemFs`] and every handle it gave out.
///
/// Lock order: `ns` before an inode's `content` before `faults`; `faults` is always taken last.
#[derive(Default)]
struct Shared {
    ns: Mutex<Namespace>,
    faults: Mutex<FaultTable>,
    /// The simulated device's queue, if one is installed; taken without any other lock held.
    device: Device,
    /// Number of crashes so far. A handle remembers the generation it was opened in and fails
    /// once it differs. Changed only under the `ns` lock.
    generation: AtomicU64,
}

impl Shared {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Counts one operation and returns the error of the fault plan that fires on it, if any.
    fn check_fault(&self, op: OpKind, paths: &[&Path]) -> io::Result<()> {
        match self.faults.lock().record(op, paths) {
            Some(fault) => Err(fault.to_io_error()),
            None => Ok(()),
        }
    }
}

/// Concrete operation kinds (a [`FaultOp`] without `Any`); the discriminant indexes counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Write,
    Sync,
    Rename,
    Create,
    Remove,
}

const OP_KINDS: usize = 5;

impl FaultOp {
    /// The concrete kind, or `None` for `Any`.
    fn kind(self) -> Option<OpKind> {
        match self {
            FaultOp::Write => Some(OpKind::Write),
            FaultOp::Sync => Some(OpKind::Sync),
            FaultOp::Rename => Some(OpKind::Rename),
            FaultOp::Create => Some(OpKind::Create),
            FaultOp::Remove => Some(OpKind::Remove),
            FaultOp::Any => None,
        }
    }

    fn matches(self, op: OpKind) -> bool {
        self == FaultOp::Any || self.kind() == Some(op)
    }
}

/// Armed plans and operation counters, under one lock so counting and firing are atomic.
#[derive(Default)]
struct FaultTable {
    plans: Vec<ArmedPlan>,
    counts: [u64; OP_KINDS],
    fired: u64,
}

struct ArmedPlan {
    plan: FaultPlan,
    /// Matching operations seen since the plan was added.
    seen: u64,
}

impl ArmedPlan {
    fn matches(&self, op: OpKind, paths: &[&Path]) -> bool {
        let path_matches = match self.plan.path_contains.as_deref() {
            None => true,
            Some(fragment) => paths.iter().any(|p| p.to_string_lossy().contains(fragment)),
        };
        self.plan.op.matches(op) && path_matches
    }

    /// Counts a matching operation; true if the plan fails it.
    fn count_and_fire(&mut self) -> bool {
        self.seen += 1;
        let nth = self.plan.nth.max(1);
        self.seen == nth || (self.plan.persistent && self.seen > nth)
    }
}

impl FaultTable {
    /// Counts `op` on `paths` and returns the fault to inject: that of the first plan firing.
    /// Every matching plan counts the operation, whether or not an earlier one fired.
    fn record(&mut self, op: OpKind, paths: &[&Path]) -> Option<Fault> {
        self.counts[op as usize] += 1;
        let mut fault = None;
        for armed in &mut self.plans {
            if armed.matches(op, paths) && armed.count_and_fire() {
                fault = fault.or(Some(armed.plan.fault));
            }
        }
        if fault.is_some() {
            self.fired += 1;
        }
        fault
    }
}

/// Directories and locks.
struct Namespace {
    /// Every directory by normalized path; ordered so that crashes visit files deterministically.
    dirs: BTreeMap<PathBuf, Dir>,
    /// Paths locked by live [`MemFileLock`]s.
    locks: HashSet<PathBuf>,
    next_inode: u64,
}

impl Default for Namespace {
    fn default() -> Self {
        let dirs = [PathBuf::new(), PathBuf::from("/")]
            .into_iter()
            .map(|root| (root, Dir::default()))
            .collect();
        Namespace {
            dirs,
            locks: HashSet::new(),
            next_inode: 0,
        }
    }
}

/// One directory. Subdirectories are always durable, so they have a single set.
#[derive(Default)]
struct Dir {
    live: BTreeMap<String, Arc<Inode>>,
    durable: BTreeMap<String, Arc<Inode>>,
    subdirs: BTreeSet<String>,
}

impl Namespace {
    fn dir(&self, path: &Path) -> io::Result<&Dir> {
        self.dirs
            .get(path)
            .ok_or_else(|| not_found("directory", path))
    }

    fn dir_mut(&mut self, path: &Path) -> io::Result<&mut Dir> {
        self.dirs
            .get_mut(path)
            .ok_or_else(|| not_found("directory", path))
    }

    /// The inode a live file name points to.
    fn live_file(&self, path: &FilePath) -> io::Result<&Arc<Inode>> {
        let dir = self.dir(&path.dir)?;
        if dir.subdirs.contains(&path.name) {
            return Err(is_a_directory(&path.full));
        }
        dir.live
            .get(&path.name)
            .ok_or_else(|| not_found("file", &path.full))
    }

    /// Checks that a file may be created at (or renamed to) `path`: its directory exists and
    /// the name is not a directory.
    fn check_can_link(&self, path: &FilePath) -> io::Result<()> {
        if self.dir(&path.dir)?.subdirs.contains(&path.name) {
            return Err(is_a_directory(&path.full));
        }
        Ok(())
    }

    /// Adds directory `path`, whose parent must exist.
    fn add_dir(&mut self, path: &Path) -> io::Result<()> {
        let file = FilePath::parse(path)?;
        let parent = self.dir_mut(&file.dir)?;
        if parent.live.contains_key(&file.name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("MemFs: {} exists and is a file", path.display()),
            ));
        }
        parent.subdirs.insert(file.name);
        self.dirs.insert(file.full, Dir::default());
        Ok(())
    }

    fn new_inode(&mut self) -> Arc<Inode> {
        self.next_inode += 1;
        Arc::new(Inode {
            id: self.next_inode,
            content: RwLock::new(Content::default()),
        })
    }
}

/// A file's identity and contents, shared by the names and handles that refer to it.
struct Inode {
    /// Unique within a [`MemFs`]; used to visit an inode once when several names point to it.
    id: u64,
    content: RwLock<Content>,
}

/// Invariants: `synced_len <= data.len()`; an `overwritten` range lies within `synced_len`.
#[derive(Default)]
struct Content {
    data: Vec<u8>,
    synced_len: usize,
    /// Durable bytes overwritten since the last sync: `(start, bytes)` held
    /// `data[start..start + bytes.len()]` when it was last made durable. Bytes in the range
    /// that no write changed are kept too (the range is widened to stay contiguous).
    overwritten: Option<(usize, Vec<u8>)>,
}

impl Content {
    fn sync(&mut self) {
        self.synced_len = self.data.len();
        self.overwritten = None;
    }

    /// Writes `bytes` at `at` (zero-filling any gap past the end), first setting aside the
    /// durable bytes it replaces.
    fn write_at(&mut self, at: usize, bytes: &[u8]) {
        let end = at + bytes.len();
        let durable_end = end.min(self.synced_len);
        if at < durable_end {
            let (start, old) = self.overwritten.get_or_insert_with(|| (at, Vec::new()));
            if old.is_empty() {
                *start = at;
            }
            if at < *start {
                let mut widened = self.data[at..*start].to_vec();
                widened.append(old);
                *old = widened;
                *start = at;
            }
            let old_end = *start + old.len();
            if durable_end > old_end {
                old.extend_from_slice(&self.data[old_end..durable_end]);
            }
        }
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[at..end].copy_from_slice(bytes);
    }

    /// Cuts or zero-extends `data`, keeping the invariants.
    fn set_len(&mut self, len: usize) {
        self.data.resize(len, 0);
        self.synced_len = self.synced_len.min(len);
        if let Some((start, old)) = &mut self.overwritten {
            if *start >= len {
                self.overwritten = None;
            } else {
                old.truncate(len - *start);
            }
        }
    }

    /// Puts back the durable bytes overwritten from `from` on.
    fn restore_overwritten(&mut self, from: usize) {
        if let Some((start, old)) = self.overwritten.take() {
            let skip = from.saturating_sub(start).min(old.len());
            let at = start + skip;
            self.data[at..start + old.len()].copy_from_slice(&old[skip..]);
        }
    }

    fn xor_byte(&mut self, offset: u64, xor: u8, path: &Path) -> io::Result<()> {
        let byte = usize::try_from(offset)
            .ok()
            .and_then(|i| self.data.get_mut(i))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "MemFs: offset {offset} is past the end of {}",
                        path.display()
                    ),
                )
            })?;
        *byte ^= xor;
        if let Some((start, old)) = &mut self.overwritten {
            if let Some(b) = usize::try_from(offset)
                .ok()
                .and_then(|i| i.checked_sub(*start))
                .and_then(|i| old.get_mut(i))
            {
                *b ^= xor;
            }
        }
        Ok(())
    }

    /// Turns the contents into what a power loss leaves on disk, then marks them all synced.
    ///
    /// Unsynced bytes are `lo..hi`: from the first overwritten durable byte (else
    /// `synced_len`) to the end of the data past `synced_len` (else of the overwritten
    /// range). A crash keeps new bytes up to a cut in that range and durable ones from there
    /// on, so overwrites reach the disk in order, like appends.
    fn crash(&mut self, mode: CrashMode, path: &Path) {
        let (lo, hi) = match &self.overwritten {
            Some((start, old)) if self.data.len() == self.synced_len => {
                (*start, *start + old.len())
            }
            Some((start, _)) => (*start, self.data.len()),
            None => (self.synced_len, self.data.len()),
        };
        let kept = match mode {
            CrashMode::KeepAll => self.data.len(),
            CrashMode::DropUnsynced => lo,
            CrashMode::RandomTail { seed } => {
                let mut rng = SplitMix64::for_file(seed, path);
                random_tail(&mut self.data[..hi], lo, &mut rng)
            }
            CrashMode::Scattered { seed } => {
                let mut rng = SplitMix64::for_file(seed, path);
                self.scatter(lo, hi, &mut rng);
                self.sync();
                return;
            }
        };
        self.restore_overwritten(kept);
        self.data.truncate(kept.max(self.synced_len));
        self.sync();
    }
}

impl Content {
    /// [`CrashMode::Scattered`] over the unsynced bytes `lo..hi`: keeps a random subset of
    /// their sectors, puts back what the others overwrote (or zeros), and sets the length.
    fn scatter(&mut self, lo: usize, hi: usize, rng: &mut SplitMix64) {
        if lo >= hi {
            return;
        }
        let sector = if rng.coin() { 512 } else { 4096 };
        // In tenths: 0 keeps nothing, 10 everything.
        let keep_tenths = match rng.below(8) {
            0 => 0,
            1 => 10,
            _ => 1 + rng.below(9),
        };
        let mut kept: Vec<(usize, usize)> = Vec::new();
        let mut dropped: Vec<(usize, usize)> = Vec::new();
        let mut at = lo;
        while at < hi {
            let end = ((at / sector + 1) * sector).min(hi);
            let keep = match keep_tenths {
                0 => false,
                10 => true,
                t => rng.below(10) < t,
            };
            if keep { &mut kept } else { &mut dropped }.push((at, end));
            at = end;
        }
        let old = self.overwritten.take();
        for &(a, b) in &dropped {
            for i in a..b {
                self.data[i] = match &old {
                    Some((start, bytes)) if i >= *start && i < start + bytes.len() => {
                        bytes[i - start]
                    }
                    _ => 0,
                };
            }
        }
        if !kept.is_empty() && rng.coin() {
            let (a, b) = kept[rng.below(kept.len())];
            let from = a + rng.below(b - a);
            for byte in &mut self.data[from..b] {
                *byte ^= 1 + rng.below(255) as u8;
            }
        }
        let last_kept = kept.last().map_or(0, |&(_, b)| b);
        let len = self.synced_len.max(last_kept).min(self.data.len());
        self.data.truncate(len);
    }
}

/// Chooses how much of the unsynced tail `data[synced..]` survives a crash (see
/// [`CrashMode::RandomTail`]), garbles the torn sector if any, and returns the kept length.
/// `synced` is where unsynced bytes start (overwritten durable bytes included).
fn random_tail(data: &mut [u8], synced: usize, rng: &mut SplitMix64) -> usize {
    let len = data.len();
    if len <= synced {
        return len;
    }
    let sector = if rng.coin() { 512 } else { 4096 };
    let kept = pick_cut(synced, len, sector, rng);
    if kept > synced && rng.coin() {
        let torn_from = ((kept - 1) / sector * sector).max(synced);
        let start = torn_from + rng.below(kept - torn_from);
        for byte in &mut data[start..kept] {
            // 1..=255: the byte always changes.
            *byte ^= 1 + rng.below(255) as u8;
        }
    }
    kept
}

/// Uniform choice among `synced`, the multiples of `sector` strictly between `synced` and
/// `len`, and `len`. Requires `synced < len`.
fn pick_cut(synced: usize, len: usize, sector: usize, rng: &mut SplitMix64) -> usize {
    let first = (synced / sector + 1) * sector;
    let inner = if first < len {
        (len - 1 - first) / sector + 1
    } else {
        0
    };
    match rng.below(inner + 2) {
        0 => synced,
        i if i == inner + 1 => len,
        i => first + (i - 1) * sector,
    }
}

/// SplitMix64 (Steele, Lea and Flood): tiny, and fixed here forever so crash seeds replay.
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator for one file: mixes the crash seed with an FNV-1a hash of the path, so each
    /// file's outcome does not depend on which other files exist.
    fn for_file(seed: u64, path: &Path) -> Self {
        let hash = path
            .as_os_str()
            .as_bytes()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        SplitMix64 { state: seed ^ hash }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`); the modulo bias is irrelevant for test choices.
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

/// What every open file handle holds: its inode, and the generation it belongs to.
#[derive(Clone)]
struct Handle {
    shared: Arc<Shared>,
    inode: Arc<Inode>,
    /// Normalized path the handle was opened with, for fault matching and error messages.
    path: PathBuf,
    generation: u64,
}

impl Handle {
    /// A handle valid until the next crash. Takes the namespace to prove the caller holds its
    /// lock, so that no crash races with reading the generation.
    fn new(shared: &Arc<Shared>, _ns: &Namespace, inode: Arc<Inode>, path: PathBuf) -> Self {
        Handle {
            shared: Arc::clone(shared),
            inode,
            path,
            generation: shared.generation(),
        }
    }

    /// Fails if a crash happened since the handle was opened. Call with the inode's lock held
    /// (see [`MemFs::crash`]).
    fn check_alive(&self) -> io::Result<()> {
        if self.shared.generation() == self.generation {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "MemFs: handle on {} was opened before a simulated crash",
                self.path.display()
            )))
        }
    }

    /// Waits for the simulated device, if any, as a sync does; before any lock, so appends to
    /// the same file proceed meanwhile (a real `fdatasync` does not block `write`).
    fn device_sync(&self) {
        self.shared.device.sync();
    }

    /// Checks liveness, then counts `op` and fails it if a plan says so, then runs `apply`;
    /// all under the inode's write lock.
    fn mutate(&self, op: OpKind, apply: impl FnOnce(&mut Content)) -> io::Result<()> {
        let mut content = self.inode.content.write();
        self.check_alive()?;
        self.shared.check_fault(op, &[&self.path])?;
        apply(&mut content);
        Ok(())
    }
}

/// A writable [`MemFs`] file: appends go straight into the inode.
struct MemWritableFile {
    handle: Handle,
    /// Where the next write goes for an `open_overwrite` handle; `None` appends.
    position: Option<usize>,
}

impl WritableFile for MemWritableFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.handle.shared.device.write(data.len());
        match &mut self.position {
            None => self
                .handle
                .mutate(OpKind::Write, |c| c.data.extend_from_slice(data)),
            Some(at) => {
                let start = *at;
                self.handle
                    .mutate(OpKind::Write, |c| c.write_at(start, data))?;
                *at += data.len();
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.handle.mutate(OpKind::Write, |_| {})
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.handle.device_sync();
        self.handle.mutate(OpKind::Sync, Content::sync)
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.handle.device_sync();
        self.handle.mutate(OpKind::Sync, Content::sync)
    }

    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        Ok(Arc::new(MemFileSyncer {
            handle: self.handle.clone(),
        }))
    }

    /// The inode's current length (which includes appends through other handles).
    fn len(&self) -> u64 {
        match self.position {
            Some(at) => at as u64,
            None => self.handle.inode.content.read().data.len() as u64,
        }
    }
}

/// Syncs a [`MemFs`] file from another thread: counted and failed like any sync.
struct MemFileSyncer {
    handle: Handle,
}

impl FileSyncer for MemFileSyncer {
    fn sync_data(&self) -> io::Result<()> {
        self.handle.device_sync();
        self.handle.mutate(OpKind::Sync, Content::sync)
    }
}

/// A readable [`MemFs`] file: reads the inode's current data.
struct MemRandomAccessFile {
    handle: Handle,
    len: u64,
}

impl RandomAccessFile for MemRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let content = self.handle.inode.content.read();
        self.handle.check_alive()?;
        let range = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(buf.len())?))
            .filter(|range| range.end <= content.data.len())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "MemFs: read of {} bytes at {offset} past the end of {} ({} bytes)",
                        buf.len(),
                        self.handle.path.display(),
                        content.data.len()
                    ),
                )
            })?;
        buf.copy_from_slice(&content.data[range]);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// Guard of a [`MemFs`] lock. Dropping it releases the lock, unless a crash already did (the
/// path may by then be locked by a new, post-crash owner).
struct MemFileLock {
    shared: Arc<Shared>,
    path: PathBuf,
    generation: u64,
}

impl FileLock for MemFileLock {}

impl Drop for MemFileLock {
    fn drop(&mut self) {
        let mut ns = self.shared.ns.lock();
        if self.shared.generation() == self.generation {
            ns.locks.remove(&self.path);
        }
    }
}

/// A normalized file path split into its directory and its (UTF-8) name.
struct FilePath {
    full: PathBuf,
    dir: PathBuf,
    name: String,
}

impl FilePath {
    fn parse(path: &Path) -> io::Result<Self> {
        let full = normalize(path)?;
        let name = full
            .file_name()
            .ok_or_else(|| invalid_path(path, "names no file"))?
            .to_str()
            .ok_or_else(|| invalid_path(path, "is not UTF-8"))?
            .to_owned();
        let dir = full.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(FilePath { full, dir, name })
    }
}

/// `path` without `.` components, repeated or trailing separators. Rejects `..`, which would
/// need the real directory tree to resolve.
fn normalize(path: &Path) -> io::Result<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::Normal(name) => out.push(name),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(invalid_path(
                    path,
                    "uses `..` or a prefix, unsupported by MemFs",
                ))
            }
        }
    }
    Ok(out)
}

fn to_usize(len: u64) -> io::Result<usize> {
    usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "MemFs: length too large"))
}

fn not_found(what: &str, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("MemFs: {what} {} not found", path.display()),
    )
}

fn is_a_directory(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("MemFs: {} is a directory", path.display()),
    )
}

fn invalid_path(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("MemFs: path {} {why}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pick_cut_covers_every_candidate() {
        let mut rng = SplitMix64 { state: 7 };
        let mut seen = BTreeSet::new();
        for _ in 0..2000 {
            seen.insert(pick_cut(100, 1500, 512, &mut rng));
        }
        assert_eq!(seen, BTreeSet::from([100, 512, 1024, 1500]));
    }

    #[test]
    fn pick_cut_without_inner_boundary() {
        let mut rng = SplitMix64 { state: 1 };
        for _ in 0..100 {
            let cut = pick_cut(10, 20, 512, &mut rng);
            assert!(cut == 10 || cut == 20);
        }
    }

    #[test]
    fn normalize_drops_dots_and_separators() {
        assert_eq!(
            normalize(Path::new("./a//b/./c/")).unwrap(),
            Path::new("a/b/c")
        );
        assert_eq!(normalize(Path::new("/a/b")).unwrap(), Path::new("/a/b"));
        assert!(normalize(Path::new("a/../b")).is_err());
    }
}
