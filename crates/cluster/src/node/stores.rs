//! The node's side of stores in the cluster:
//!
//! - **Catalog reader**: reads the catalog topic (`<topic>.stores`) from its start and applies
//!   every record to this node's [`CatalogState`] (see [`crate::catalog`]).
//! - **Loader**: loads each version a push sends (and each version a partition's swap record
//!   needs, for a node that missed the push) from its version topic into tables of its own
//!   (`Keyspace::stage_sorted_as`, as records of the layout its start markers name),
//!   checking every partition's count and checksum against its end marker, then reports the
//!   version ready (or failed) in the catalog topic.
//! - **Swap barrier**: the applier does not apply a swap record before its version is loaded
//!   here (see `wait_for_versions`): every replica switches at the record's offset with the
//!   version's data in place.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rialto_keyspace::{SortedRecords, Staged};
use tracing::{info, warn};

use super::{client_options, Inner, StateMachine};
use crate::catalog::{CatalogRecord, Change};
use crate::kafka::{self, PartitionConsumer, SplitConsumer, StartOffset};
use crate::versions::{self, Tally, VersionRecord};

/// How often the loader looks for versions to load.
const LOADER_EVERY: Duration = Duration::from_millis(100);

pub(super) fn run_catalog<M: StateMachine>(inner: Arc<Inner<M>>) {
    let topic = inner.opts.stores_topic();
    let consumer = loop {
        match PartitionConsumer::new(
            &client_options(&inner.opts, "/stores"),
            &topic,
            &[(0, StartOffset::Earliest)],
        ) {
            Ok(c) => break c,
            Err(e) => {
                warn!(error = %e, "cannot read the store catalog; retrying");
                if sleep_unless_stopped(&inner, Duration::from_secs(1)) {
                    return;
                }
            }
        }
    };
    let mut end_at = Instant::now() - Duration::from_secs(1);
    while !inner.stop.load(Ordering::Acquire) {
        match consumer.poll(Duration::from_millis(50)) {
            Ok(Some(r)) => {
                inner.catalog.write().apply(r.offset, &r.payload);
            }
            Ok(None) => {}
            Err(e) => {
                warn!(error = %e, "reading the store catalog");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // Caught up once everything the topic held when asked is applied.
        if !inner.catalog_caught_up.load(Ordering::Acquire)
            && end_at.elapsed() >= Duration::from_millis(200)
        {
            end_at = Instant::now();
            if let Ok((_, high)) = consumer.watermarks(&topic, 0, Duration::from_secs(5)) {
                if inner.catalog.read().next >= high {
                    inner.catalog_caught_up.store(true, Ordering::Release);
                }
            }
        }
    }
}

/// A version to load: store id and version number.
type Wanted = (u32, u32);

pub(super) fn run_loader<M: StateMachine>(inner: Arc<Inner<M>>) {
    // Loading a version sorts and writes it: that takes the CPU serving leaves, as a push does.
    inner.keyspace.lower_to_push_priority();
    let me = inner.opts.node_id;
    let mut reported: HashSet<Wanted> = HashSet::new();
    let mut failed: HashSet<Wanted> = HashSet::new();
    while !sleep_unless_stopped(&inner, LOADER_EVERY) {
        // The pushes in progress this node has not reported on, then the versions the applier
        // waits for.
        let mut todo: Vec<(Wanted, Option<String>)> = Vec::new();
        {
            let cat = inner.catalog.read();
            for s in cat.stores.values() {
                if let Some(p) = &s.pushing {
                    let w = (s.id, p.version);
                    if p.failed.is_none() && !p.ready.contains_key(&me) && !reported.contains(&w) {
                        todo.push((w, Some(s.name.clone())));
                    }
                }
            }
        }
        for &w in inner.wanted.lock().iter() {
            if !todo.iter().any(|(t, _)| *t == w) {
                todo.push((w, None));
            }
        }
        for ((id, version), report) in todo {
            let applier_waits = inner.wanted.lock().contains(&(id, version));
            if failed.contains(&(id, version)) && !applier_waits {
                continue;
            }
            let loaded = match inner.keyspace.staged_version(id, version) {
                Ok(Some(s)) => Ok(s),
                Ok(None) => load(&inner, id, version),
                Err(e) => Err(LoadError::Local(e.to_string())),
            };
            match (loaded, report) {
                (Ok(s), Some(name)) => {
                    let change = Change::Ready {
                        version,
                        node: me,
                        records: s.records,
                        bytes: s.bytes,
                    };
                    if propose(&inner, &name, change).is_ok() {
                        reported.insert((id, version));
                    }
                }
                (Ok(_), None) => {}
                (Err(LoadError::Abandoned), _) => {}
                (Err(e), report) => {
                    warn!(store = id, version, error = %e, "cannot load a pushed version");
                    failed.insert((id, version));
                    if let Some(name) = report {
                        let change = Change::Failed {
                            version,
                            node: me,
                            reason: e.to_string(),
                        };
                        let _ = propose(&inner, &name, change);
                    }
                    if applier_waits {
                        // Retried: the applier cannot go on without it.
                        sleep_unless_stopped(&inner, Duration::from_secs(1));
                    }
                }
            }
        }
    }
}

/// Why a version was not loaded.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    /// Nobody needs it any more (the push ended).
    #[error("abandoned")]
    Abandoned,
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Local(String),
}

/// Whether version `version` of store `id` is still to be loaded: its push runs, or the
/// applier waits for it.
fn still_wanted<M: StateMachine>(inner: &Inner<M>, id: u32, version: u32) -> bool {
    if inner.wanted.lock().contains(&(id, version)) {
        return true;
    }
    inner.catalog.read().stores.values().any(|s| {
        s.id == id
            && s.pushing
                .as_ref()
                .is_some_and(|p| p.version == version && p.failed.is_none())
    })
}

fn load<M: StateMachine>(inner: &Inner<M>, id: u32, version: u32) -> Result<Staged, LoadError> {
    let ks = &inner.keyspace;
    // Tables an interrupted load linked without its marker go first.
    ks.clear_unstaged_version(id, version)
        .map_err(|e| LoadError::Local(e.to_string()))?;
    let n = inner.opts.partitions;
    let topic = versions::topic(&inner.opts.topic, id, version);
    let started = Instant::now();
    let consumer = SplitConsumer::new(
        &client_options(&inner.opts, "/loader"),
        &topic,
        n,
        PREFETCH_KIB,
    )
    .map_err(|e| LoadError::Local(e.to_string()))?;
    let mut merge = Merge {
        inner,
        id,
        version,
        consumer,
        topic,
        parts: (0..n).map(|_| Cursor::default()).collect(),
        prefix: Vec::new(),
        layout: rialto_keyspace::PushLayout::String,
        returned: None,
        failed: None,
        checked_at: Instant::now(),
        warned_at: Instant::now() - Duration::from_secs(10),
    };
    // Every partition opens with its start marker, which names the store's prefix and the
    // push's layout.
    for p in 0..n {
        merge.fetch_start(p)?;
    }
    for p in 0..n {
        merge.advance(p)?;
    }
    let prefix = merge.prefix.clone();
    let compression = version_compression(inner, id, version);
    let layout = merge.layout;
    let staged = ks.stage_sorted_as(id, version, &prefix, compression, layout, &mut merge);
    let staged = match (staged, merge.failed.take()) {
        (_, Some(e)) => return Err(e),
        (Ok(s), None) => s,
        (Err(e), None) => return Err(LoadError::Local(e.to_string())),
    };
    info!(
        store = id,
        version,
        records = staged.records,
        seconds = started.elapsed().as_secs_f64(),
        "loaded a pushed version"
    );
    Ok(staged)
}

/// The codec a node writes version `version` of store `id` with: the store's as its push
/// began, so every node writes it alike; the store's own for a version loaded after its push
/// ended (a node that missed it).
fn version_compression<M: StateMachine>(
    inner: &Inner<M>,
    id: u32,
    version: u32,
) -> rialto_keyspace::Compression {
    let cat = inner.catalog.read();
    cat.stores
        .values()
        .find(|s| s.id == id)
        .map(|s| match &s.pushing {
            Some(p) if p.version == version => p.compression,
            _ => s.compression,
        })
        .unwrap_or_default()
}

/// Kilobytes each partition of a version topic may have prefetched while the merge reads
/// another.
const PREFETCH_KIB: u32 = 8192;

/// One partition of a version topic, as the merge reads it.
#[derive(Default)]
struct Cursor {
    /// The batch message being read and where its next record starts.
    msg: Vec<u8>,
    pos: usize,
    /// The partition's current record: key and value ranges in `msg`.
    head: Option<(usize, usize, usize, usize)>,
    ended: bool,
    tally: Tally,
    last_key: Option<Vec<u8>>,
}

/// The partitions' sorted streams merged into one, in key order, checked as they go: each
/// record in its key's partition, keys rising within a partition, each partition's count and
/// checksum equal to its end marker's.
struct Merge<'a, M: StateMachine> {
    inner: &'a Inner<M>,
    id: u32,
    version: u32,
    consumer: SplitConsumer,
    topic: String,
    parts: Vec<Cursor>,
    prefix: Vec<u8>,
    /// What the records are, as the start markers say (they must agree).
    layout: rialto_keyspace::PushLayout,
    /// The partition whose head the last call returned: advanced at the next.
    returned: Option<u32>,
    /// Why the merge stopped (the load's error, more precise than the staging's).
    failed: Option<LoadError>,
    checked_at: Instant,
    warned_at: Instant,
}

impl<M: StateMachine> Merge<'_, M> {
    fn bad(&self, p: u32, what: &str) -> LoadError {
        LoadError::Input(format!("{} partition {p}: {what}", self.topic))
    }

    /// The next message of partition `p`, waiting while the version is still wanted.
    fn next_message(&mut self, p: u32) -> Result<Vec<u8>, LoadError> {
        loop {
            if self.inner.stop.load(Ordering::Acquire) {
                return Err(LoadError::Abandoned);
            }
            if self.checked_at.elapsed() >= Duration::from_millis(200) {
                self.checked_at = Instant::now();
                if !still_wanted(self.inner, self.id, self.version) {
                    return Err(LoadError::Abandoned);
                }
            }
            match self.consumer.poll(p, Duration::from_millis(100)) {
                Ok(Some(r)) => return Ok(r.payload),
                Ok(None) => {}
                // The topic is made right after the push begins, and a broker may be
                // restarting: librdkafka reconnects and fetches on.
                Err(e) => {
                    if !matches!(e, kafka::Error::UnknownTopicOrPartition)
                        && self.warned_at.elapsed() >= Duration::from_secs(10)
                    {
                        self.warned_at = Instant::now();
                        warn!(topic = %self.topic, error = %e, "reading a pushed version; retrying");
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    fn fetch_start(&mut self, p: u32) -> Result<(), LoadError> {
        let msg = self.next_message(p)?;
        match versions::decode(&msg) {
            Ok(VersionRecord::Start { prefix, layout, .. }) => {
                if p == 0 {
                    self.prefix = prefix.to_vec();
                    self.layout = layout;
                } else if prefix != self.prefix.as_slice() || layout != self.layout {
                    return Err(self.bad(p, "start markers disagree"));
                }
                Ok(())
            }
            Ok(_) => Err(self.bad(p, "a record before the start marker")),
            Err(e) => Err(self.bad(p, &e.to_string())),
        }
    }

    /// Moves partition `p` to its next record (fetching messages as needed), or to its end.
    fn advance(&mut self, p: u32) -> Result<(), LoadError> {
        let pi = p as usize;
        let partitions = self.parts.len() as u32;
        loop {
            let c = &mut self.parts[pi];
            if c.ended {
                c.head = None;
                return Ok(());
            }
            if c.pos < c.msg.len() {
                let Some((ks, ke, vs, ve)) = batch_entry(&c.msg, c.pos) else {
                    return Err(self.bad(p, "a truncated batch"));
                };
                c.pos = ve;
                let key = &c.msg[ks..ke];
                if c.last_key.as_deref().is_some_and(|last| key <= last) {
                    return Err(self.bad(p, "records out of key order"));
                }
                let mut full = self.prefix.clone();
                full.extend_from_slice(key);
                if crate::slot::key_partition(&full, partitions) != p {
                    return Err(self.bad(p, "a key of another partition"));
                }
                let c = &mut self.parts[pi];
                let (key, value) = (&c.msg[ks..ke], &c.msg[vs..ve]);
                c.tally.add(key, value);
                c.last_key = Some(key.to_vec());
                c.head = Some((ks, ke, vs, ve));
                return Ok(());
            }
            let msg = self.next_message(p)?;
            match versions::decode(&msg) {
                Ok(VersionRecord::Batch(_)) => {
                    let c = &mut self.parts[pi];
                    c.msg = msg;
                    c.pos = 2;
                }
                Ok(VersionRecord::End { records, checksum }) => {
                    let t = &self.parts[pi].tally;
                    if t.records != records || t.checksum() != checksum {
                        let what = format!(
                            "{} records with checksum {:016x}, the end marker says {records} with {checksum:016x}",
                            t.records,
                            t.checksum()
                        );
                        return Err(self.bad(p, &what));
                    }
                    self.parts[pi].ended = true;
                }
                Ok(_) => return Err(self.bad(p, "an unexpected record")),
                Err(e) => return Err(self.bad(p, &e.to_string())),
            }
        }
    }
}

/// The key and value ranges of the batch entry at `pos` of `msg`.
fn batch_entry(msg: &[u8], pos: usize) -> Option<(usize, usize, usize, usize)> {
    let len = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(msg.get(at..at.checked_add(4)?)?.try_into().ok()?) as usize)
    };
    let kl = len(pos)?;
    let ks = pos + 4;
    let ke = ks.checked_add(kl)?;
    let vl = len(ke)?;
    let vs = ke + 4;
    let ve = vs.checked_add(vl)?;
    (ve <= msg.len()).then_some((ks, ke, vs, ve))
}

impl<M: StateMachine> SortedRecords for Merge<'_, M> {
    fn next_record(&mut self) -> rialto_keyspace::StoreResult<Option<(&[u8], &[u8])>> {
        if let Some(p) = self.returned.take() {
            if let Err(e) = self.advance(p) {
                let text = e.to_string();
                self.failed = Some(e);
                return Err(rialto_keyspace::StoreError::Input(text));
            }
        }
        fn key(c: &Cursor) -> Option<&[u8]> {
            c.head.map(|(ks, ke, _, _)| &c.msg[ks..ke])
        }
        let mut best: Option<usize> = None;
        for (i, c) in self.parts.iter().enumerate() {
            let Some(k) = key(c) else { continue };
            if best.is_none_or(|b| key(&self.parts[b]).is_some_and(|bk| k < bk)) {
                best = Some(i);
            }
        }
        let Some(b) = best else { return Ok(None) };
        self.returned = Some(b as u32);
        let c = &self.parts[b];
        let (ks, ke, vs, ve) = c.head.unwrap_or_default();
        Ok(Some((&c.msg[ks..ke], &c.msg[vs..ve])))
    }
}

/// Appends a change request for store `name` to the catalog topic; returns its request
/// number once Kafka holds it.
pub(super) fn propose<M: StateMachine>(
    inner: &Inner<M>,
    name: &str,
    change: Change,
) -> Result<u64, kafka::Error> {
    let request = rand::random::<u64>();
    let rec = CatalogRecord {
        request,
        name: name.to_string(),
        change,
    };
    inner
        .producer
        .send(&inner.opts.stores_topic(), 0, None, &rec.encode())?
        .wait()
        .map_err(|e| e.error)?;
    Ok(request)
}

/// Before a batch is applied: every swap in it whose version this node has not loaded is
/// loaded first (by the loader, which the applier waits for). Returns false if the node
/// stopped meanwhile.
pub(super) fn wait_for_versions<'a, M: StateMachine>(
    inner: &Inner<M>,
    payloads: impl Iterator<Item = &'a [u8]>,
) -> bool {
    let mut needed: Vec<Wanted> = payloads
        .filter_map(|p| inner.machine.needs_version(p))
        .collect();
    needed.dedup();
    for w in needed {
        let mut since = Instant::now();
        loop {
            match inner.keyspace.staged_version(w.0, w.1) {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(e) => warn!(error = %e, "reading a staged version's marker"),
            }
            if superseded(inner, w.0, w.1) {
                match inner.keyspace.stage_superseded_version(w.0, w.1) {
                    Ok(()) => break,
                    Err(e) => warn!(error = %e, "recording a superseded version"),
                }
            }
            inner.wanted.lock().insert(w);
            if since.elapsed() >= Duration::from_secs(10) {
                since = Instant::now();
                warn!(
                    store = w.0,
                    version = w.1,
                    "the log swaps in a version this node has not loaded yet; waiting for it"
                );
            }
            if sleep_unless_stopped(inner, Duration::from_millis(20)) {
                return false;
            }
        }
        inner.wanted.lock().remove(&w);
    }
    true
}

/// Whether version `version` of store `id` is one nobody can read or roll back to any more
/// (its topic may be gone): the store was deleted, or the version is neither its current nor
/// a kept older one nor being pushed. A version leaves those for good: a rollback goes only
/// to a kept older version and retires the ones newer than it.
fn superseded<M: StateMachine>(inner: &Inner<M>, id: u32, version: u32) -> bool {
    if !inner.catalog_caught_up.load(Ordering::Acquire) {
        return false;
    }
    let cat = inner.catalog.read();
    match cat.stores.values().find(|s| s.id == id) {
        None => id < cat.next_id,
        Some(s) => {
            s.current.number != version
                && s.older.iter().all(|v| v.number != version)
                && s.pushing.as_ref().is_none_or(|p| p.version != version)
        }
    }
}

/// Sleeps `d` in short steps; true if the node is stopping.
fn sleep_unless_stopped<M: StateMachine>(inner: &Inner<M>, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if inner.stop.load(Ordering::Acquire) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10).min(d));
    }
    inner.stop.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_entry_is_read_in_place_and_a_truncated_one_is_refused() {
        let mut b = versions::Batch::default();
        b.add(b"key", b"value");
        b.add(b"k2", b"");
        let msg = b.take();
        let first = batch_entry(&msg, 2).unwrap();
        assert_eq!(&msg[first.0..first.1], b"key");
        assert_eq!(&msg[first.2..first.3], b"value");
        let second = batch_entry(&msg, first.3).unwrap();
        assert_eq!(&msg[second.0..second.1], b"k2");
        assert_eq!(second.3, msg.len());
        for cut in 3..msg.len() {
            let short = &msg[..cut];
            let whole = batch_entry(short, 2).is_some_and(|e| batch_entry(short, e.3).is_some());
            assert!(!whole, "cut {cut}");
        }
        assert_eq!(batch_entry(&msg, msg.len()), None);
    }
}
