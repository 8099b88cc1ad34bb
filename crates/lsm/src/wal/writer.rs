//! Appending records to a segment and syncing them (format and durable marks: [`crate::wal`]).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rialto_engine::{Error, Result};
use rialto_io::{FileSyncer, Fs, WritableFile};

use super::{
    batch_prefix, record_crc, segment_file_name, HEADER_LEN, KIND_BATCH, KIND_MARKED_BATCH,
    MAX_MARK_LEN, MAX_RECORD_LEN,
};
use crate::sstable::coding::encode_varint64;

/// Syncs one segment, from any thread, one sync at a time.
///
/// Syncs are serialized and a failure poisons the segment: after a write-back error Linux
/// reports it to one sync only, so a second, concurrent or later, sync could return `Ok` for
/// data that never reached the disk. Every later sync therefore fails too (fsyncgate).
pub struct SegmentSyncer {
    file: Arc<dyn FileSyncer>,
    name: String,
    /// The first failure, if any; held while syncing.
    failed: Mutex<Option<String>>,
    /// Successful syncs (they decide whether the next segment is prepared ahead).
    syncs: AtomicU64,
    /// Bytes of whole records handed to the operating system (set by the writer after each
    /// hand-off completes, so a sync that reads it covers at least that much).
    handed_off: AtomicU64,
    /// Bytes a successful sync covered: the durable mark the next records carry. Never more
    /// than what was really synced, so a mark never claims an unsynced byte.
    durable: AtomicU64,
}

impl SegmentSyncer {
    /// `fdatasync`s every record handed to the operating system before the call.
    pub fn sync(&self) -> Result<()> {
        let mut failed = self.failed.lock();
        if let Some(reason) = failed.as_ref() {
            return Err(Error::ReadOnly(format!(
                "an earlier sync of WAL {} failed: {reason}",
                self.name
            )));
        }
        // Read before the sync: only bytes handed over before it began are sure to be covered.
        let covered = self.handed_off.load(Ordering::Acquire);
        self.file.sync_data().map_err(|e| {
            *failed = Some(e.to_string());
            Error::io(format!("sync WAL {}", self.name), e)
        })?;
        self.durable.fetch_max(covered, Ordering::AcqRel);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        // Durable, not yet acknowledged.
        rialto_killpoint::kill_point("wal.sync");
        Ok(())
    }
}

/// Appends records to one segment.
pub struct WalWriter {
    file: Box<dyn WritableFile>,
    syncer: Arc<SegmentSyncer>,
    number: u64,
    name: String,
    offset: u64,
    /// The first failed append: the file may end in part of a record, and anything appended
    /// behind it would turn that torn tail into corruption in the middle of the segment, so
    /// every later append fails.
    failed: Option<String>,
    /// Bytes of records added buffered since the last hand-off to the OS.
    buffered: u64,
}

impl WalWriter {
    /// Creates segment `number` in `dir`. The caller syncs the directory before relying on it.
    pub fn create(fs: &dyn Fs, dir: &Path, number: u64) -> Result<WalWriter> {
        Self::create_named(fs, dir, segment_file_name(number), number)
    }

    /// Creates a file of this framing under another name (the manifest); `number` is the
    /// number the checksums bind the records to.
    pub fn create_named(fs: &dyn Fs, dir: &Path, name: String, number: u64) -> Result<WalWriter> {
        let file = fs
            .create(&dir.join(&name))
            .map_err(|e| Error::io(format!("create WAL {name}"), e))?;
        Self::with_file(file, name, number)
    }

    /// Opens segment `number`, an existing file of zeros (a prepared segment, see
    /// `wal::prepare`), to write records over it from its first byte.
    pub fn overwrite(fs: &dyn Fs, dir: &Path, number: u64) -> Result<WalWriter> {
        let name = segment_file_name(number);
        let file = fs
            .open_overwrite(&dir.join(&name))
            .map_err(|e| Error::io(format!("open prepared WAL {name}"), e))?;
        Self::with_file(file, name, number)
    }

    fn with_file(file: Box<dyn WritableFile>, name: String, number: u64) -> Result<WalWriter> {
        let syncer = Arc::new(SegmentSyncer {
            file: file
                .syncer()
                .map_err(|e| Error::io(format!("open a sync handle on WAL {name}"), e))?,
            name: name.clone(),
            failed: Mutex::new(None),
            syncs: AtomicU64::new(0),
            handed_off: AtomicU64::new(0),
            durable: AtomicU64::new(0),
        });
        Ok(WalWriter {
            file,
            syncer,
            number,
            name,
            offset: 0,
            failed: None,
            buffered: 0,
        })
    }

    /// Segment number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far (the offset of the next record).
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// True when no record was written.
    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }

    /// Successful syncs of this segment so far.
    pub fn syncs(&self) -> u64 {
        self.syncer.syncs.load(Ordering::Relaxed)
    }

    /// Appends a record and hands it to the operating system; returns its offset.
    /// Not durable until [`WalWriter::sync`].
    pub fn add_record(&mut self, kind: u8, payload: &[u8]) -> Result<u64> {
        self.add_record_parts(kind, &[payload])
    }

    /// [`WalWriter::add_record`] with the payload given in pieces (written back to back), so
    /// callers need not copy them into one buffer.
    pub fn add_record_parts(&mut self, kind: u8, parts: &[&[u8]]) -> Result<u64> {
        self.add(kind, parts, true)
    }

    /// [`WalWriter::add_record_parts`], but the record may stay in the process's buffer until
    /// the next [`WalWriter::flush`], [`WalWriter::sync`] or unbuffered add: for writes that
    /// nobody is told about before the next sync, so a process crash can only lose what was
    /// never acknowledged. Saves a `write(2)` per record where many records share one sync.
    pub fn add_record_parts_buffered(&mut self, kind: u8, parts: &[&[u8]]) -> Result<u64> {
        self.add(kind, parts, false)
    }

    fn add(&mut self, kind: u8, parts: &[&[u8]], hand_off: bool) -> Result<u64> {
        self.check_not_failed()?;
        let at = self.offset;
        // The header, then a batch's durable mark (see the module docs; an edit needs none),
        // appended as one piece.
        let mut head = [0u8; HEADER_LEN + MAX_MARK_LEN];
        let (kind, mark_len) = if kind == KIND_BATCH {
            let durable = self.syncer.durable.load(Ordering::Acquire);
            debug_assert!(durable <= at, "a sync covered bytes not yet written");
            let back = at.saturating_sub(durable);
            (
                KIND_MARKED_BATCH,
                encode_varint64(&mut head[HEADER_LEN..], back),
            )
        } else {
            (kind, 0)
        };
        let head_len = HEADER_LEN + mark_len;
        let total = mark_len + parts.iter().map(|p| p.len()).sum::<usize>();
        let len = u32::try_from(total).map_err(|_| {
            Error::InvalidArgument(format!(
                "WAL record of {total} bytes exceeds {MAX_RECORD_LEN} bytes"
            ))
        })?;
        let mark = &head[HEADER_LEN..head_len];
        let crc = record_crc(self.number, len, kind, mark, parts);
        head[..4].copy_from_slice(&crc.to_le_bytes());
        head[4..8].copy_from_slice(&len.to_le_bytes());
        head[8] = kind;
        let written = self.append_all(&head[..head_len], parts, hand_off);
        if let Err(e) = written {
            self.failed = Some(e.to_string());
            return Err(Error::io(format!("append to WAL {}", self.name), e));
        }
        self.offset += (HEADER_LEN + total) as u64;
        if hand_off {
            self.buffered = 0;
            self.syncer.handed_off.store(self.offset, Ordering::Release);
        } else {
            self.buffered += (HEADER_LEN + total) as u64;
        }
        // Handed to the OS (or buffered), not synced.
        rialto_killpoint::kill_point("wal.append");
        Ok(at)
    }

    /// Refuses to add or hand over anything after a failed append or hand-off.
    fn check_not_failed(&self) -> Result<()> {
        match &self.failed {
            Some(reason) => Err(Error::ReadOnly(format!(
                "an earlier append to WAL {} failed: {reason}",
                self.name
            ))),
            None => Ok(()),
        }
    }

    fn append_all(
        &mut self,
        header: &[u8],
        parts: &[&[u8]],
        hand_off: bool,
    ) -> std::io::Result<()> {
        self.file.append(header)?;
        for p in parts {
            self.file.append(p)?;
        }
        if hand_off {
            self.file.flush()?;
        }
        Ok(())
    }

    /// Hands every buffered record to the operating system; returns the bytes of the records
    /// added buffered since the last hand-off. A failure fails the segment: no later add or
    /// flush is trusted, since part of the buffer may have been written.
    pub fn flush(&mut self) -> Result<u64> {
        self.check_not_failed()?;
        self.file.flush().map_err(|e| {
            self.failed = Some(e.to_string());
            Error::io(format!("write WAL {}", self.name), e)
        })?;
        self.syncer.handed_off.store(self.offset, Ordering::Release);
        Ok(std::mem::take(&mut self.buffered))
    }

    /// Bytes of records added buffered and not yet handed to the OS: an unbuffered add or
    /// [`WalWriter::flush`] hands them over.
    pub fn buffered_bytes(&self) -> u64 {
        self.buffered
    }

    /// Reserves `bytes` for the segment (see `WritableFile::preallocate`): appends within
    /// them make `fdatasync` cheaper. The reserved space reads as zeros, which readers take as
    /// the end of the segment. Best effort.
    pub fn preallocate(&mut self, bytes: u64) {
        if let Err(e) = self.file.preallocate(bytes) {
            tracing::warn!(file = %self.name, error = %e, "WAL preallocation failed; continuing without");
        }
    }

    /// Makes every record added so far durable: hands buffered ones to the operating system,
    /// then the segment's [`SegmentSyncer::sync`] (fdatasync). After a failed append nothing
    /// more is handed over, but what reached the operating system can still be synced.
    pub fn sync(&mut self) -> Result<()> {
        if self.failed.is_none() {
            self.flush()?;
        }
        self.syncer.sync()
    }

    /// Syncs, then appends and syncs an empty batch whose durable mark covers every record
    /// before it: a segment closed this way proves all its bytes durable, so damage found in
    /// it later is corruption, never a torn tail. For a clean close; nothing may follow it but
    /// records of a later open (there are none: recovery starts a new segment).
    pub fn seal(&mut self) -> Result<()> {
        self.sync()?;
        let (prefix, n) = batch_prefix(0, 0);
        self.add(KIND_BATCH, &[&prefix[..n]], true)?;
        self.sync()
    }

    /// The segment's syncer, for syncing while another thread appends.
    pub fn syncer(&self) -> Arc<SegmentSyncer> {
        Arc::clone(&self.syncer)
    }
}
