//! Opening a database: lock, manifest, WAL replay.
//!
//! Recovery argument (see docs/design.md for the long form):
//! 1. The manifest names every table of the last installed version; an edit is installed only
//!    after its manifest record was synced, and the tables it adds were synced (file data and
//!    directory entry) before the edit was written. So every table the recovered version names
//!    is complete on disk.
//! 2. Every write acknowledged after the last installed flush is in a WAL segment numbered at
//!    or above the manifest's log number (segments below it were entirely flushed into tables
//!    the version names), and was written (and synced, if durable) before it was acknowledged.
//! 3. Replaying those segments in order rebuilds the memtable state; a bad record that nothing
//!    proves durable (no later record's durable mark covers it, no later segment holds a
//!    record) is a torn write, never acknowledged as durable, and the log is cut there;
//!    anything else bad is corruption.
//! 4. The replayed state is flushed to a table and installed together with a new log number
//!    before the old segments are deleted, so a crash during recovery recovers again the same.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};
use rialto_engine::{Error, IoRecorder, Result};
use rialto_io::{FileLock, Fs};

use super::{parse_file_name, Counters, DbInner, FileKind, State, SuperVersion};
use crate::cache::table::TableCache;
use crate::cache::BlockCache;
use crate::compaction::{self, Gc, OutputContext, OutputPolicy};
use crate::iter::InternalIterator;
use crate::key::SequenceNumber;
use crate::memtable::MemTable;
use crate::options::{Options, WalRecovery};
use crate::sstable::TableBuildOptions;
use crate::throttle::JournalFirst;
use crate::version::edit::MAX_LEVELS;
use crate::version::{current_file_name, FileMeta, VersionEdit, VersionSet};
use crate::wal::prepare::SpareSegment;
use crate::wal::{self, SegmentEnd, WalWriter};

fn validate(o: &Options) -> Result<()> {
    let bad = |m: &str| Err(Error::InvalidArgument(m.to_string()));
    if o.write_buffer_size < 4096 {
        return bad("write_buffer_size must be at least 4096 bytes");
    }
    if !(2..=MAX_LEVELS).contains(&o.num_levels) {
        return bad("num_levels must be between 2 and 16");
    }
    if o.block_size < 256 || o.block_size > (256 << 20) {
        return bad("block_size must be between 256 bytes and 256 MiB");
    }
    if o.block_restart_interval == 0 || o.ingest_block_restart_interval == 0 {
        return bad("block_restart_interval and ingest_block_restart_interval must be at least 1");
    }
    if o.level0_slowdown_trigger < o.level0_compaction_trigger
        || o.level0_stop_trigger < o.level0_slowdown_trigger
    {
        return bad("level-0 triggers must satisfy compaction <= slowdown <= stop");
    }
    if o.max_open_files < 16 {
        return bad("max_open_files must be at least 16");
    }
    if !(0..=19).contains(&o.background_nice) {
        return bad("background_nice must be between 0 and 19");
    }
    let t = &o.triad;
    let c = &t.characterizer;
    if !(0.0..=0.5).contains(&t.hot_fraction) {
        return bad("TRIAD hot_fraction must be between 0 and 0.5 of the write buffer");
    }
    let fractions = [
        t.overlap_threshold,
        c.read_heavy_enter,
        c.read_heavy_leave,
        c.write_heavy_enter,
        c.write_heavy_leave,
        c.skew_enter,
        c.skew_leave,
        c.read_heavy_overlap,
        c.balanced_overlap,
        c.write_heavy_overlap,
    ];
    if fractions.iter().any(|f| !(0.0..=1.0).contains(f)) {
        return bad("TRIAD thresholds must be fractions between 0 and 1");
    }
    if c.read_heavy_leave > c.read_heavy_enter
        || c.write_heavy_leave > c.write_heavy_enter
        || c.skew_leave > c.skew_enter
    {
        return bad("a characterizer leave threshold must not exceed its enter threshold");
    }
    if c.window_ops == 0 {
        return bad("the characterizer window must hold at least one operation");
    }
    Ok(())
}

/// Takes the directory's `LOCK`: `Error::Locked` if another process (or handle) holds it.
pub(crate) fn lock_dir(fs: &dyn Fs, path: &Path) -> Result<Box<dyn FileLock>> {
    let shown = path.display();
    fs.lock(&path.join("LOCK")).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked(shown.to_string())
        } else {
            Error::io(format!("lock {shown}/LOCK"), e)
        }
    })
}

pub(super) fn open(path: &Path, opts: Options) -> Result<DbInner> {
    validate(&opts)?;
    let fs = Arc::clone(&opts.fs);
    let shown = path.display().to_string();
    if opts.create_if_missing {
        fs.create_dir_all(path)
            .map_err(|e| Error::io(format!("create directory {shown}"), e))?;
    } else if !fs.exists(path) {
        return Err(Error::NotFound(shown));
    }
    let lock = lock_dir(fs.as_ref(), path)?;
    SpareSegment::remove_leftovers(fs.as_ref(), path);

    let mut versions = if fs.exists(&path.join(current_file_name())) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a database exists in {shown}"
            )));
        }
        VersionSet::recover(Arc::clone(&fs), path, opts.num_levels)?
    } else if opts.create_if_missing {
        VersionSet::create(Arc::clone(&fs), path, opts.num_levels)?
    } else {
        return Err(Error::NotFound(shown));
    };

    let (edit, max_seq) = replay_wal(&*fs, path, &opts, &mut versions)?;
    let mut edit = edit;
    let wal_number = versions.new_file_number();
    let mut wal = WalWriter::create(&*fs, path, wal_number)?;
    wal.preallocate(opts.wal_preallocation_bytes());
    fs.sync_dir(path)
        .map_err(|e| Error::io("sync database directory", e))?;
    edit.log_number = Some(wal_number);
    edit.last_sequence = Some(max_seq);
    versions.log_and_apply(edit)?;

    let block_cache = opts
        .block_cache
        .clone()
        .or_else(|| Some(BlockCache::global()));
    let tables = Arc::new(TableCache::new(
        Arc::clone(&fs),
        path.to_path_buf(),
        block_cache.clone(),
        opts.max_open_files,
        opts.verify_checksums,
    ));
    let mem = Arc::new(MemTable::indexed(wal_number, opts.write_buffer_size));
    let version = versions.current();
    let state = State {
        versions,
        mem: Arc::clone(&mem),
        imms: Vec::new(),
        flush_running: false,
        running_compactions: 0,
        compacting: HashSet::new(),
        pending_outputs: HashSet::new(),
        removing: HashSet::new(),
        live_versions: Vec::new(),
        warm: Default::default(),
        quiet: Default::default(),
    };
    let inner = DbInner {
        dir: path.to_path_buf(),
        fs,
        _lock: lock,
        tables,
        block_cache,
        row_cache: (opts.row_cache_size > 0)
            .then(|| crate::cache::row::RowCache::new(opts.row_cache_size)),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        done_cv: Condvar::new(),
        sv: ArcSwap::from_pointee(SuperVersion {
            mem,
            imms: Vec::new(),
            version,
        }),
        visible_seq: AtomicU64::new(max_seq),
        applied_seq: AtomicU64::new(max_seq),
        io: IoRecorder::new(opts.io_timeline_capacity),
        journal_first: Arc::new(JournalFirst::new(
            opts.throttle.clone(),
            Arc::clone(&opts.clock),
        )),
        writers: Default::default(),
        wal: Mutex::new(Some(wal)),
        spare: SpareSegment::new(
            opts.wal_preallocation_bytes(),
            opts.wal_zero_fill_bytes_per_sync,
        ),
        read_only: Mutex::new(None),
        read_only_flag: AtomicBool::new(false),
        shutting_down: AtomicBool::new(false),
        snapshots: Mutex::new(BTreeMap::new()),
        counters: Counters::default(),
        reads: AtomicU64::new(0),
        iter_entries: Arc::new(AtomicU64::new(0)),
        triad: super::triad::TriadState::new(opts.triad.clone()),
        compression: AtomicU8::new(super::compression_code(opts.compression)),
        opts,
    };
    {
        let mut st = inner.state.lock();
        inner.install_super_version(&mut st);
        inner.delete_obsolete_files(&mut st);
    }
    if inner.triad.uses_sketches() {
        load_sketches(&inner);
    }
    // Removals are durable only once the directory is synced; without this, a crash before
    // the next flush brings the deleted segments and manifests back, and a crash loop (every
    // open replaying and deleting them again) piles them up. Best effort, like the deletes.
    let _ = inner.fs.sync_dir(path);
    Ok(inner)
}

/// Replays the live WAL segments into memtables, flushing them into L0 tables as they fill
/// and at the end. Returns the edit adding those tables and the largest sequence seen.
fn replay_wal(
    fs: &dyn Fs,
    dir: &Path,
    opts: &Options,
    versions: &mut VersionSet,
) -> Result<(VersionEdit, SequenceNumber)> {
    let names = fs
        .list_dir(dir)
        .map_err(|e| Error::io("list database directory", e))?;
    let mut segments: Vec<u64> = names
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Wal(n)) if n >= versions.log_number() => Some(n),
            _ => None,
        })
        .collect();
    segments.sort_unstable();

    let mut max_seq = versions.last_sequence();
    let mut edit = VersionEdit::default();
    let versions = RefCell::new(versions);
    let mut mem = Arc::new(MemTable::new(0));
    for (i, &number) in segments.iter().enumerate() {
        let name = wal::segment_file_name(number);
        let end = wal::read_segment(fs, &dir.join(&name), number, |r| {
            let (seq, batch) = wal::decode_batch(r.payload)
                .map_err(|e| Error::corruption(&name, r.offset, format!("bad write batch: {e}")))?;
            let count = u64::from(batch.count());
            if count == 0 {
                return Ok(());
            }
            let last = seq + count - 1;
            // No skipping of sequences at or below the flushed one: TRIAD-MEM re-logs hot
            // entries, older than that, into the next segment, and they are in no table.
            mem.insert_batch(&batch, seq);
            max_seq = max_seq.max(last);
            Ok(())
        });
        let end = match (end, opts.wal_recovery) {
            (Ok(end), _) => end,
            (Err(e), WalRecovery::Salvage) if e.is_corruption() => {
                let (offset, reason) = match &e {
                    Error::Corruption { offset, reason, .. } => (*offset, reason.clone()),
                    _ => (0, String::new()),
                };
                SegmentEnd::Corrupt { offset, reason }
            }
            (Err(e), _) => return Err(e),
        };
        let end = wal::judge_against_later_segments(fs, dir, end, &segments[i + 1..])?;
        match end {
            SegmentEnd::Clean => {}
            SegmentEnd::TornTail {
                offset,
                reason,
                records_after,
            } => {
                tracing::warn!(segment = %name, offset, %reason, records_after,
                    "cutting a torn WAL tail: bytes never proven durable, so never acknowledged as durable");
                // Nothing after it was written: later segments hold no record.
                break;
            }
            SegmentEnd::Corrupt { offset, reason } => match opts.wal_recovery {
                WalRecovery::Strict => return Err(Error::corruption(&name, offset, reason)),
                WalRecovery::Salvage => {
                    tracing::warn!(segment = %name, offset, %reason,
                        "salvage: dropping the WAL from the first damaged record on");
                    break;
                }
            },
        }
        // A full memtable is flushed only between segments, never inside one: a segment's
        // records are not in sequence order when TRIAD-MEM re-logged older hot entries into
        // it, and splitting them over two tables could put an older version in the newer
        // table. Memory stays bounded by about one segment (one memtable's writes).
        if mem.approximate_memory_usage() >= opts.write_buffer_size {
            let files = flush_recovered(fs, dir, opts, &versions, &mem, max_seq)?;
            edit.added.extend(files.into_iter().map(|f| (0, f)));
            mem = Arc::new(MemTable::new(0));
        }
    }
    if !mem.is_empty() {
        let files = flush_recovered(fs, dir, opts, &versions, &mem, max_seq)?;
        edit.added.extend(files.into_iter().map(|f| (0, f)));
    }
    Ok((edit, max_seq))
}

fn flush_recovered(
    fs: &dyn Fs,
    dir: &Path,
    opts: &Options,
    versions: &RefCell<&mut VersionSet>,
    mem: &Arc<MemTable>,
    last_seq: SequenceNumber,
) -> Result<Vec<FileMeta>> {
    let never_bottom = |_: &[u8]| false;
    let mut gc = Gc::new(Vec::new(), last_seq, &never_bottom);
    let alloc = || versions.borrow_mut().new_file_number();
    let stop = AtomicBool::new(false);
    let ctx = OutputContext {
        fs,
        dir,
        table_options: TableBuildOptions::from_options(opts),
        compression_for: opts.compression_for.as_ref(),
        new_file_number: &alloc,
        target_file_size: u64::MAX,
        grandparents: &[],
        max_grandparent_overlap: u64::MAX,
        shutting_down: &stop,
        policy: OutputPolicy::default(),
        partitioner: opts.partitioner.as_ref(),
    };
    let mut it = mem.iter();
    it.seek_to_first();
    compaction::write_tables(&mut it, &mut gc, &ctx)
}

/// Loads the key sketches of the L0 and L1 tables (the inputs TRIAD-DISK estimates), which
/// the manifest does not carry. Tables written since get theirs when written, and tables
/// only move down from L1 through compactions that write new ones. A table that cannot be
/// read gets no sketch: its compaction then runs as without TRIAD, and reports the damage.
fn load_sketches(inner: &DbInner) {
    let version = inner.state.lock().versions.current();
    for f in version.levels.iter().take(2).flatten() {
        let sketch = inner
            .tables
            .reader(f)
            .ok()
            .and_then(|r| r.properties().key_sketch.clone());
        f.sketch.set(sketch.map(Arc::new));
    }
}
