//! The commit path: a queue of writers whose front member leads a group commit.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};
use rialto_engine::{BatchOp, Error, IoEvent, IoEventKind, Result, WriteBatch, WriteOptions};

use super::{DbInner, State};
use crate::key::SequenceNumber;
use crate::memtable::MemTable;
use crate::wal::{batch_prefix, WalWriter, KIND_BATCH};

/// Largest group a leader builds, in batch bytes. Bounds the latency a small write pays for
/// riding along with large ones.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// When the leader's own batch is small, the group stays small too (so one small write is not
/// delayed behind a megabyte of others).
const SMALL_BATCH_BYTES: usize = 128 << 10;
/// Delay applied once per write when L0 reaches the slowdown trigger.
const SLOWDOWN_DELAY: Duration = Duration::from_millis(1);

/// One queued writer.
pub(crate) struct Writer {
    /// The batch, taken by the leader. `None` for a writer that only wants exclusivity.
    batch: Mutex<Option<WriteBatch>>,
    sync: bool,
    /// Set by the leader that committed this writer's batch: the group's last sequence.
    result: Mutex<Option<Result<SequenceNumber>>>,
    cv: Condvar,
}

/// The queue of writers. The front member is the leader.
#[derive(Default)]
pub(crate) struct WriteQueue {
    queue: Mutex<VecDeque<Arc<Writer>>>,
}

/// Being at the front of the queue: exclusive use of the WAL and of memtable switching.
/// Dropping it hands leadership to the next writer.
pub(crate) struct Leadership<'a> {
    queue: &'a WriteQueue,
    me: Arc<Writer>,
}

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        let mut q = self.queue.queue.lock();
        if q.front().is_some_and(|f| Arc::ptr_eq(f, &self.me)) {
            q.pop_front();
        }
        if let Some(next) = q.front() {
            next.cv.notify_one();
        }
    }
}

impl WriteQueue {
    /// Waits until this caller is the leader (no batch of its own).
    pub(crate) fn exclusive(&self) -> Leadership<'_> {
        let me = Arc::new(Writer {
            batch: Mutex::new(None),
            sync: false,
            result: Mutex::new(None),
            cv: Condvar::new(),
        });
        let mut q = self.queue.lock();
        q.push_back(Arc::clone(&me));
        while !q.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
            me.cv.wait(&mut q);
        }
        Leadership { queue: self, me }
    }

    /// Enqueues `w` and waits until a leader committed it (returns its result) or it became the
    /// leader (returns `None` with the queue locked).
    fn enqueue<'a>(
        &'a self,
        w: &Arc<Writer>,
    ) -> std::result::Result<MutexGuard<'a, VecDeque<Arc<Writer>>>, Result<SequenceNumber>> {
        let mut q = self.queue.lock();
        q.push_back(Arc::clone(w));
        loop {
            if let Some(r) = w.result.lock().take() {
                return Err(r);
            }
            if q.front().is_some_and(|f| Arc::ptr_eq(f, w)) {
                return Ok(q);
            }
            w.cv.wait(&mut q);
        }
    }
}

/// When a committed group's journal record reaches the operating system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandOff {
    /// With the commit (a `write(2)` per group).
    Now,
    /// At the next sync at the latest: for writes nobody is told about before that sync, so
    /// a process crash can only lose what was never acknowledged (see
    /// `WalWriter::add_record_parts_buffered`).
    AtNextSync,
}

/// How a group is committed (`commit_group`).
#[derive(Debug, Clone, Copy)]
struct Commit {
    /// Sync the journal before returning.
    sync: bool,
    /// Make the group visible to readers once applied; otherwise the caller publishes later.
    publish: bool,
    hand_off: HandOff,
}

impl DbInner {
    /// Commits `batch` through the writer queue: the front writer leads a group commit of the
    /// batches queued behind it (see the module docs of `db`).
    pub(crate) fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        batch.validate()?;
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(());
        }
        let me = Arc::new(Writer {
            batch: Mutex::new(Some(batch)),
            sync: opts.sync,
            result: Mutex::new(None),
            cv: Condvar::new(),
        });
        let q = match self.writers.enqueue(&me) {
            Ok(q) => q,
            Err(result) => return result.map(|_| ()),
        };
        drop(q);
        let leadership = Leadership {
            queue: &self.writers,
            me: Arc::clone(&me),
        };
        self.make_room_for_write(false)?;

        // Build the group: the leader and the writers queued behind it, up to a size bound.
        let mut group: Vec<Arc<Writer>> = Vec::new();
        let mut merged: Option<WriteBatch> = None;
        let mut sync = false;
        {
            let q = self.writers.queue.lock();
            let mut limit = MAX_GROUP_BYTES;
            for w in q.iter() {
                let mut b = w.batch.lock();
                let Some(batch) = b.as_ref() else {
                    break; // an exclusivity request: it waits for its own turn
                };
                match merged.as_mut() {
                    None => {
                        if batch.data().len() <= SMALL_BATCH_BYTES {
                            limit = batch.data().len() + SMALL_BATCH_BYTES;
                        }
                        merged = b.take();
                    }
                    Some(m) => {
                        if m.data().len() + batch.data().len() > limit {
                            break;
                        }
                        m.append(batch);
                        b.take();
                    }
                }
                sync |= w.sync;
                group.push(Arc::clone(w));
            }
        }
        let Some(mut merged) = merged else {
            return Err(Error::Closed);
        };

        let r = self.commit_group(
            &mut merged,
            Commit {
                sync,
                publish: true,
                hand_off: HandOff::Now,
            },
        );

        // Hand out results; the leader's own is returned directly.
        {
            let mut q = self.writers.queue.lock();
            for w in &group {
                if q.front().is_some_and(|f| Arc::ptr_eq(f, w)) {
                    q.pop_front();
                }
                if !Arc::ptr_eq(w, &me) {
                    *w.result.lock() = Some(match &r {
                        Ok(seq) => Ok(*seq),
                        Err(e) => Err(e.duplicate()),
                    });
                    w.cv.notify_one();
                }
            }
        }
        drop(leadership);
        r.map(|_| ())
    }

    /// The pipelined commit's step: logs and applies a group its caller already built (the
    /// transaction merger), alone, neither synced nor visible until [`DbInner::sync_log`] and
    /// [`DbInner::publish`]; returns the sequence number of its last operation. It takes the
    /// WAL's leadership directly, without queueing to be merged with other batches.
    pub(crate) fn log_and_apply(
        &self,
        mut batch: WriteBatch,
        hand_off: HandOff,
    ) -> Result<SequenceNumber> {
        batch.validate()?;
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(self.applied_seq.load(Ordering::Acquire));
        }
        let _leader = self.writers.exclusive();
        self.make_room_for_write(false)?;
        self.commit_group(
            &mut batch,
            Commit {
                sync: false,
                publish: false,
                hand_off,
            },
        )
    }

    /// Logs, syncs if asked, inserts and (if asked) publishes one merged batch; returns its
    /// last sequence number. Leader only.
    fn commit_group(&self, merged: &mut WriteBatch, how: Commit) -> Result<SequenceNumber> {
        let Commit {
            sync,
            publish,
            hand_off,
        } = how;
        let buffered = hand_off == HandOff::AtNextSync;
        let first_seq = self.applied_seq.load(Ordering::Acquire) + 1;
        let count = u64::from(merged.count());
        let (prefix, prefix_len) = batch_prefix(first_seq, merged.count());
        let prefix = &prefix[..prefix_len];
        // The WAL lock is held until `applied_seq` covers the record: `sync_log` reads
        // `applied_seq` under it, so a sync never covers bytes beyond the point it reports (a
        // write whose bytes a sync made durable is always acknowledged by that sync, never
        // failed by a later one).
        let mut wal = self.wal.lock();
        // Checked under the WAL lock, not before it: a flush re-logging hot keys may fail an
        // append (leaving a torn record) and turn the engine read-only while this leader waits
        // for the lock, and nothing may be appended behind the torn bytes.
        self.check_writable()?;
        let logged = match wal.as_mut() {
            Some(w) => {
                let start = self.opts.clock.now_micros();
                let (before, buffered_before) = (w.len(), w.buffered_bytes());
                let parts = [prefix, merged.ops_data()];
                if buffered {
                    w.add_record_parts_buffered(KIND_BATCH, &parts)
                } else {
                    w.add_record_parts(KIND_BATCH, &parts)
                }
                .and_then(|_| {
                    // A buffered record is recorded when `sync_log` hands it over; an
                    // unbuffered add hands over the records buffered before it as well.
                    if !buffered {
                        self.record_journal_write(start, buffered_before + w.len() - before);
                    }
                    if sync {
                        self.timed_sync(|| w.sync())?;
                    }
                    Ok(w.len() - before)
                })
            }
            None => Err(Error::Closed),
        };
        let record_bytes = match logged {
            Ok(bytes) => bytes,
            Err(e) => {
                // Nothing of the group is acknowledged: the record may or may not be on disk,
                // and a retried sync could not be trusted (fsyncgate). Marked before the WAL
                // lock is released, so nothing is appended after a torn record; the state lock
                // (which the waiters' notification needs) is only taken after, as the lock
                // order is state before WAL.
                self.mark_read_only(&e);
                drop(wal);
                self.set_read_only(&e);
                return Err(e);
            }
        };
        self.counters
            .wal_bytes
            .fetch_add(record_bytes, Ordering::Relaxed);
        self.counters
            .user_bytes
            .fetch_add(merged.payload_bytes(), Ordering::Relaxed);
        // Only the leader switches memtables, so the current one is stable here.
        let mem = Arc::clone(&self.sv.load().mem);
        mem.insert_batch(merged, first_seq);
        let retuned = self.triad.record_batch(merged);
        let last = first_seq + count - 1;
        if let Some(rc) = &self.row_cache {
            // Before the batch can be published (see cache/row.rs).
            for op in merged.iter() {
                let (BatchOp::Put(k, _) | BatchOp::Delete(k)) = op;
                rc.invalidate(k, last);
            }
        }
        self.applied_seq.store(last, Ordering::Release);
        let want_spare = wal
            .as_ref()
            .is_some_and(|w| self.spare.judge(w.len(), w.syncs()));
        drop(wal);
        if want_spare {
            // After the WAL lock (state before WAL).
            self.wake_background();
        }
        if publish {
            self.visible_seq.fetch_max(last, Ordering::AcqRel);
        }
        if retuned {
            // After the WAL lock: `retuned` takes the state lock (state before WAL).
            self.retuned();
        }
        Ok(last)
    }

    /// Records a hand-off of `bytes` of journal records to the OS that began at `start`.
    fn record_journal_write(&self, start: u64, bytes: u64) {
        self.io.record(IoEvent::new(
            IoEventKind::JournalWrite,
            start,
            self.opts.clock.now_micros().saturating_sub(start),
            bytes,
        ));
    }

    /// Runs one journal sync, recording it in the I/O stats and reporting its latency to the
    /// background pacer. Does not handle the error (callers turn the engine read-only).
    pub(crate) fn timed_sync(&self, sync: impl FnOnce() -> Result<()>) -> Result<()> {
        let start = self.opts.clock.now_micros();
        sync()?;
        let d = self.opts.clock.now_micros().saturating_sub(start);
        self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
        self.io
            .record(IoEvent::new(IoEventKind::JournalSync, start, d, 0));
        self.journal_first.observe_sync(d);
        self.spare.observe_sync(d);
        Ok(())
    }

    /// The pipelined commit's sync: makes every applied write durable without holding the
    /// commit path, so the leader keeps logging meanwhile. Returns the sequence now durable.
    pub(crate) fn sync_log(&self) -> Result<SequenceNumber> {
        self.check_writable()?;
        // Records up to `applied_seq` are in the segment's buffer or the OS before
        // `applied_seq` is raised, and the flush below hands the buffered ones to the OS; older
        // segments were synced before the log moved on. Doing both under the WAL lock ties the
        // number to the segment the syncer belongs to.
        let (syncer, upto) = {
            let mut wal = self.wal.lock();
            let Some(w) = wal.as_mut() else {
                return Err(Error::Closed);
            };
            let start = self.opts.clock.now_micros();
            match w.flush() {
                Ok(0) => {}
                Ok(bytes) => self.record_journal_write(start, bytes),
                Err(e) => {
                    // As a failed append: nothing more goes in behind a partial write.
                    self.mark_read_only(&e);
                    drop(wal);
                    self.set_read_only(&e);
                    return Err(e);
                }
            }
            (w.syncer(), self.applied_seq.load(Ordering::Acquire))
        };
        match self.timed_sync(|| syncer.sync()) {
            Ok(()) => Ok(upto),
            Err(e) => {
                self.set_read_only(&e);
                Err(e)
            }
        }
    }

    /// Makes every write up to `seq` visible. REQUIRES: `seq <= applied_seq`.
    pub(crate) fn publish(&self, seq: SequenceNumber) {
        debug_assert!(seq <= self.applied_seq.load(Ordering::Acquire));
        self.visible_seq.fetch_max(seq, Ordering::AcqRel);
    }

    /// Ensures the memtable has room, switching it or stalling as the thresholds say.
    /// With `force`, switches a non-empty memtable regardless of its size and returns it.
    /// In inline mode, a switch runs the flush (and any compaction then due) before
    /// returning. Leader only.
    pub(crate) fn make_room_for_write(&self, force: bool) -> Result<Option<Arc<MemTable>>> {
        let switched = self.make_room(force)?;
        if switched.is_some() && self.inline_background() {
            self.run_background_inline();
        }
        Ok(switched)
    }

    fn make_room(&self, mut force: bool) -> Result<Option<Arc<MemTable>>> {
        let mut allow_delay = !force;
        let mut switched = None;
        let mut st = self.state.lock();
        loop {
            self.check_writable()?;
            let l0 = st.versions.current().levels[0].len();
            if allow_delay && l0 >= self.opts.level0_slowdown_trigger {
                // Delay each write a little instead of stopping all of them later; the delay
                // hands CPU and disk to compaction.
                drop(st);
                let t = self.opts.clock.now_micros();
                self.opts.clock.sleep(SLOWDOWN_DELAY);
                self.counters.stall_micros.fetch_add(
                    self.opts.clock.now_micros().saturating_sub(t),
                    Ordering::Relaxed,
                );
                allow_delay = false;
                st = self.state.lock();
                continue;
            }
            // The next segment syncs faster than the active one (`early_switch_due`): switch
            // early (a small flush) unless that would have to wait for one.
            let upgrade = st.imms.is_empty()
                && !st.mem.is_empty()
                && l0 < self.opts.level0_slowdown_trigger
                && self.spare.early_switch_due();
            let full = upgrade || st.mem.approximate_memory_usage() >= self.opts.write_buffer_size;
            if !force && !full {
                return Ok(switched);
            }
            if force && st.mem.is_empty() {
                return Ok(switched);
            }
            if st.imms.len() + 1 >= self.opts.max_write_buffer_number.max(2) {
                self.stall(&mut st);
                continue;
            }
            if l0 >= self.opts.level0_stop_trigger {
                self.stall(&mut st);
                continue;
            }
            switched = Some(self.switch_memtable(&mut st)?);
            force = false;
        }
    }

    fn stall(&self, st: &mut MutexGuard<'_, State>) {
        let t = self.opts.clock.now_micros();
        self.wait_for_progress(st);
        self.counters.stall_micros.fetch_add(
            self.opts.clock.now_micros().saturating_sub(t),
            Ordering::Relaxed,
        );
    }

    /// Freezes the memtable and starts a new WAL segment for its successor.
    fn switch_memtable(&self, st: &mut State) -> Result<Arc<MemTable>> {
        let r = (|| {
            let number = st.versions.new_file_number();
            let mut wal = self.wal.lock();
            // The old segment is made durable before the log moves on, so at recovery only the
            // newest segment can end in a torn record, and a later sync never makes durable a
            // write that follows unsynced ones.
            if let Some(w) = wal.as_mut() {
                self.timed_sync(|| w.sync())?;
            }
            let w = match self.spare.take(&*self.fs, &self.dir, number) {
                Some(w) => w,
                None => {
                    let mut w = WalWriter::create(&*self.fs, &self.dir, number)?;
                    w.preallocate(self.opts.wal_preallocation_bytes());
                    w
                }
            };
            // Also makes the spare's new name durable before a record goes in.
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io("sync database directory", e))?;
            *wal = Some(w);
            Ok(number)
        })();
        let number = match r {
            Ok(n) => n,
            Err(e) => {
                self.set_read_only_locked(&e, st);
                return Err(e);
            }
        };
        // The old segment is durable, so everything applied (all of it in the old memtable:
        // only the leader applies, and it is here) may be seen. Flushed tables therefore hold
        // published writes only.
        self.visible_seq
            .fetch_max(self.applied_seq.load(Ordering::Acquire), Ordering::AcqRel);
        let old = std::mem::replace(
            &mut st.mem,
            Arc::new(MemTable::indexed(number, self.opts.write_buffer_size)),
        );
        st.imms.push(Arc::clone(&old));
        self.install_super_version(st);
        self.notify_background();
        Ok(old)
    }

    /// Switches a non-empty memtable now; returns it (None if it was empty).
    pub(crate) fn force_memtable_switch(&self) -> Result<Option<Arc<MemTable>>> {
        let _leader = self.writers.exclusive();
        self.make_room_for_write(true)
    }
}
