//! The version set: the current version, the counters, and the manifest that records them.
//!
//! ```text
//! CURRENT            := "MANIFEST-NNNNNN\n"   (replaced atomically: write temp, sync, rename, sync dir)
//! MANIFEST-NNNNNN    := record*   (WAL framing, kind 2; the record's segment number is NNNNNN)
//! record payload     := VersionEdit (see edit.rs); the first edit of a manifest is a full
//!                       snapshot of the version and counters
//! ```
//!
//! Installing an edit = appending it to the manifest and syncing the manifest. An edit is in
//! effect only once that sync returned; files an edit deletes are removed from disk only after.
//! A new manifest is started at every open and when the current one grows past
//! [`MAX_MANIFEST_BYTES`]; CURRENT switches to it only after its snapshot record is synced.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rialto_engine::{Error, Result};
use rialto_io::Fs;

use super::{Version, VersionBuilder, VersionEdit};
use crate::key::SequenceNumber;
use crate::wal::{self, SegmentEnd, WalWriter, KIND_EDIT};

/// Manifest size that triggers writing a fresh one with a snapshot.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// File numbers (tables, WAL segments, manifests) stay below this; a manifest recording a
/// larger one is corrupt.
pub const MAX_FILE_NUMBER: u64 = 1 << 56;

/// Name of manifest `number`.
pub fn manifest_file_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// Name of the file that names the current manifest.
pub fn current_file_name() -> &'static str {
    "CURRENT"
}

/// The current version and the persistent counters.
pub struct VersionSet {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    current: Arc<Version>,
    manifest: Option<WalWriter>,
    /// Next file number to hand out (tables, WAL segments, manifests share one space).
    next_file_number: u64,
    /// WAL segments below this number are obsolete.
    log_number: u64,
    /// Largest sequence number recorded in the manifest.
    last_sequence: SequenceNumber,
    /// Per level, the user key after which the next compaction starts.
    compact_pointers: Vec<Vec<u8>>,
}

impl VersionSet {
    /// Creates the manifest of a new, empty database.
    pub fn create(fs: Arc<dyn Fs>, dir: &Path, num_levels: usize) -> Result<VersionSet> {
        let mut vs = VersionSet {
            fs,
            dir: dir.to_path_buf(),
            current: Arc::new(Version::new(num_levels)),
            manifest: None,
            next_file_number: 1,
            log_number: 0,
            last_sequence: 0,
            compact_pointers: vec![Vec::new(); num_levels],
        };
        vs.write_new_manifest()?;
        Ok(vs)
    }

    /// Reads CURRENT and the manifest it names, rebuilding the last installed version, then
    /// starts a fresh manifest.
    pub fn recover(fs: Arc<dyn Fs>, dir: &Path, num_levels: usize) -> Result<VersionSet> {
        let current_path = dir.join(current_file_name());
        let raw = fs
            .read_all(&current_path)
            .map_err(|e| Error::io("read CURRENT", e))?;
        let name = std::str::from_utf8(&raw)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .filter(|s| s.starts_with("MANIFEST-"))
            .ok_or_else(|| Error::corruption("CURRENT", 0, "does not name a manifest"))?;
        let number: u64 = name["MANIFEST-".len()..]
            .parse()
            .map_err(|_| Error::corruption("CURRENT", 0, format!("bad manifest name {name:?}")))?;

        let mut builder = VersionBuilder::new(&Version::new(num_levels));
        let mut next_file = None;
        let mut log_number = 0;
        let mut last_seq = 0;
        let mut pointers = vec![Vec::new(); num_levels];
        let end = wal::read_segment(&*fs, &dir.join(name), number, |r| {
            let offset = r.offset;
            let edit = VersionEdit::decode(r.payload)
                .map_err(|e| Error::corruption(name, offset, format!("bad version edit: {e}")))?;
            builder
                .apply(&edit)
                .map_err(|e| Error::corruption(name, offset, e))?;
            next_file = edit.next_file_number.or(next_file);
            log_number = edit.log_number.unwrap_or(log_number);
            last_seq = edit.last_sequence.unwrap_or(last_seq);
            for (level, k) in edit.compact_pointers {
                if let Some(p) = pointers.get_mut(level) {
                    *p = k;
                }
            }
            Ok(())
        })?;
        match end {
            // A torn last edit was never synced, so nothing acted on it: drop it.
            SegmentEnd::Clean | SegmentEnd::TornTail { .. } => {}
            SegmentEnd::Corrupt { offset, reason } => {
                return Err(Error::corruption(name, offset, reason));
            }
        }
        let next_file_number = next_file
            .ok_or_else(|| Error::corruption(name, 0, "manifest records no next file number"))?;
        // Numbers are handed out by `+= 1`, so one this large can only come from damage (and
        // would overflow; found by the `manifest` fuzz target). The check covers the number
        // the fresh manifest below takes, so an open never writes one the next open refuses.
        let first_free = next_file_number.max(number.saturating_add(1));
        if first_free >= MAX_FILE_NUMBER {
            return Err(Error::corruption(
                name,
                0,
                format!(
                    "file number {first_free} is beyond the largest possible ({MAX_FILE_NUMBER})"
                ),
            ));
        }
        let version = builder.build();
        version
            .check_invariants()
            .map_err(|r| Error::corruption(name, 0, r))?;
        if let Some(f) = version.live_files().find(|&n| n >= next_file_number) {
            return Err(Error::corruption(
                name,
                0,
                format!("file {f} is not below the next file number {next_file_number}"),
            ));
        }
        let mut vs = VersionSet {
            fs,
            dir: dir.to_path_buf(),
            current: Arc::new(version),
            manifest: None,
            next_file_number: first_free,
            log_number,
            last_sequence: last_seq,
            compact_pointers: pointers,
        };
        vs.write_new_manifest()?;
        Ok(vs)
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// Hands out a new file number (below [`MAX_FILE_NUMBER`]: recovery refuses larger, and
    /// 2^56 files at a million a second would take two thousand years).
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// The next file number that will be handed out; every file of this database has a
    /// smaller number.
    pub fn next_file_number(&self) -> u64 {
        self.next_file_number
    }

    /// WAL segments below this number are obsolete.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Largest sequence number recorded.
    pub fn last_sequence(&self) -> SequenceNumber {
        self.last_sequence
    }

    /// Where the next compaction of `level` starts.
    pub fn compact_pointer(&self, level: usize) -> &[u8] {
        self.compact_pointers.get(level).map_or(&[], |v| v)
    }

    /// Number of the current manifest file.
    pub fn manifest_number(&self) -> u64 {
        self.manifest.as_ref().map_or(0, |m| m.number())
    }

    /// Installs `edit`: fills in the counters, makes it durable in the manifest and makes the
    /// resulting version current. On error nothing is installed, and the manifest's state is
    /// unknown: the caller must stop writing (the engine turns read-only).
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let mut builder = VersionBuilder::new(&self.current);
        builder
            .apply(&edit)
            .map_err(|r| Error::corruption("version edit", 0, r))?;
        let version = builder.build();
        debug_assert_eq!(version.check_invariants(), Ok(()));
        if let Some(n) = edit.log_number {
            debug_assert!(n >= self.log_number, "log number moves forward");
        }
        edit.next_file_number = Some(self.next_file_number);
        let last_seq = edit
            .last_sequence
            .unwrap_or(self.last_sequence)
            .max(self.last_sequence);
        edit.last_sequence = Some(last_seq);

        let rollover = self
            .manifest
            .as_ref()
            .is_none_or(|m| m.len() >= MAX_MANIFEST_BYTES);
        if !rollover {
            let m = self.manifest.as_mut().ok_or(Error::Closed)?;
            m.add_record(KIND_EDIT, &edit.encode())?;
            rialto_killpoint::kill_point("manifest.write");
            m.sync()?;
            // Durable, not yet visible in memory.
            rialto_killpoint::kill_point("manifest.installed");
        }
        self.current = Arc::new(version);
        self.log_number = edit.log_number.unwrap_or(self.log_number);
        self.last_sequence = last_seq;
        for (level, k) in edit.compact_pointers {
            if let Some(p) = self.compact_pointers.get_mut(level) {
                *p = k;
            }
        }
        if rollover {
            self.write_new_manifest()?;
        }
        Ok(self.current())
    }

    /// Writes a manifest holding a snapshot of the current state, then points CURRENT at it
    /// and removes the previous manifest.
    fn write_new_manifest(&mut self) -> Result<()> {
        let number = self.new_file_number();
        let mut m =
            WalWriter::create_named(&*self.fs, &self.dir, manifest_file_name(number), number)?;
        let snapshot = VersionEdit {
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            deleted: Vec::new(),
            added: self
                .current
                .levels
                .iter()
                .enumerate()
                .flat_map(|(l, fs)| fs.iter().map(move |f| (l, (**f).clone())))
                .collect(),
            compact_pointers: self
                .compact_pointers
                .iter()
                .enumerate()
                .filter(|(_, k)| !k.is_empty())
                .map(|(l, k)| (l, k.clone()))
                .collect(),
        };
        m.add_record(KIND_EDIT, &snapshot.encode())?;
        m.sync()?;
        // A complete new manifest that CURRENT does not name yet.
        rialto_killpoint::kill_point("manifest.write");
        set_current(&*self.fs, &self.dir, number)?;
        if let Some(old) = self.manifest.replace(m) {
            let old_path = self.dir.join(manifest_file_name(old.number()));
            // Best effort: a leftover old manifest is ignored and removed at the next open.
            let _ = self.fs.remove_file(&old_path);
        }
        Ok(())
    }
}

/// Atomically points CURRENT at manifest `number` (write temp, sync, rename, sync dir).
fn set_current(fs: &dyn Fs, dir: &Path, number: u64) -> Result<()> {
    let tmp = dir.join("CURRENT.tmp");
    let io = |what: &str, e| Error::io(format!("{what} CURRENT"), e);
    let mut f = fs.create(&tmp).map_err(|e| io("create", e))?;
    f.append(format!("{}\n", manifest_file_name(number)).as_bytes())
        .map_err(|e| io("write", e))?;
    f.sync_all().map_err(|e| io("sync", e))?;
    drop(f);
    fs.rename(&tmp, &dir.join(current_file_name()))
        .map_err(|e| io("rename", e))?;
    fs.sync_dir(dir).map_err(|e| io("sync directory for", e))
}
