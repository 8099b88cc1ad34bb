//! The node's side of stores in the cluster:
//!
//! - **Catalog reader**: reads the catalog topic (`<topic>.stores`) from its start and applies
//!   every record to this node's [`CatalogState`] (see [`crate::catalog`]).
//! - **Loader**: loads each version a push sends (and each version a partition's swap record
//!   needs, for a node that missed the push) from its version topic into tables of its own
//!   ([`Keyspace::stage_version`]), checking every partition's count and checksum against
//!   its end marker, then reports the version ready (or failed) in the catalog topic.
//! - **Swap barrier**: the applier does not apply a swap record before its version is loaded
//!   here (see `wait_for_versions`): every replica switches at the record's offset with the
//!   version's data in place.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rialto_keyspace::{DuplicatePolicy, Staged, Staging};
use tracing::{info, warn};

use super::{client_options, Inner, StateMachine};
use crate::catalog::{CatalogRecord, Change};
use crate::kafka::{self, PartitionConsumer, StartOffset};
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
    let consumer = PartitionConsumer::new(
        &client_options(&inner.opts, "/loader"),
        &topic,
        &(0..n)
            .map(|p| (p, StartOffset::Earliest))
            .collect::<Vec<_>>(),
    )
    .map_err(|e| LoadError::Local(e.to_string()))?;
    let mut staging: Option<(Staging, bool, Vec<u8>)> = None;
    let mut tallies: Vec<Tally> = (0..n).map(|_| Tally::default()).collect();
    let mut ended = vec![false; n as usize];
    let mut left = n;
    let mut checked_at = Instant::now();
    let mut warned_at = Instant::now() - Duration::from_secs(10);
    while left > 0 {
        if inner.stop.load(Ordering::Acquire) {
            return Err(LoadError::Abandoned);
        }
        if checked_at.elapsed() >= Duration::from_millis(200) {
            checked_at = Instant::now();
            if !still_wanted(inner, id, version) {
                return Err(LoadError::Abandoned);
            }
        }
        let r = match consumer.poll(Duration::from_millis(100)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            // The topic is made right after the push begins; until then it is unknown.
            Err(kafka::Error::UnknownTopicOrPartition) => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            // A broker gone or restarting: librdkafka reconnects and fetches on; the load
            // ends only when nobody needs the version any more.
            Err(e) => {
                if warned_at.elapsed() >= Duration::from_secs(10) {
                    warned_at = Instant::now();
                    warn!(topic = %topic, error = %e, "reading a pushed version; retrying");
                }
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let p = r.partition as usize;
        if p >= ended.len() || ended[p] {
            return Err(LoadError::Input(format!(
                "{topic}: a record after partition {p}'s end"
            )));
        }
        let bad = |what: &str| LoadError::Input(format!("{topic} partition {p}: {what}"));
        match versions::decode(&r.payload).map_err(|e| bad(&e.to_string()))? {
            VersionRecord::Start { last_wins, prefix } => match &staging {
                None => {
                    let policy = if last_wins {
                        DuplicatePolicy::LastWins
                    } else {
                        DuplicatePolicy::Error
                    };
                    let s = ks
                        .stage_version(id, version, prefix, policy)
                        .map_err(|e| LoadError::Local(e.to_string()))?;
                    staging = Some((s, last_wins, prefix.to_vec()));
                }
                Some((_, lw, pre)) if *lw == last_wins && pre == prefix => {}
                Some(_) => return Err(bad("start markers disagree")),
            },
            VersionRecord::Data { key, value } => {
                let Some((s, _, prefix)) = staging.as_mut() else {
                    return Err(bad("a record before the start marker"));
                };
                add_record(s, prefix, &mut tallies[p], n, p, key, value)
                    .map_err(|e| bad_or(e, &bad))?;
            }
            VersionRecord::Batch(records) => {
                let Some((s, _, prefix)) = staging.as_mut() else {
                    return Err(bad("a record before the start marker"));
                };
                for r in records {
                    let (key, value) = r.map_err(|e| bad(&e.to_string()))?;
                    add_record(s, prefix, &mut tallies[p], n, p, key, value)
                        .map_err(|e| bad_or(e, &bad))?;
                }
            }
            VersionRecord::End { records, checksum } => {
                let t = &tallies[p];
                if t.records != records || t.checksum() != checksum {
                    return Err(bad(&format!(
                        "{} records with checksum {:016x}, the end marker says {records} with {checksum:016x}",
                        t.records,
                        t.checksum()
                    )));
                }
                ended[p] = true;
                left -= 1;
            }
        }
    }
    let Some((s, _, _)) = staging else {
        return Err(LoadError::Input(format!("{topic}: no start marker")));
    };
    let staged = ks.finish_staged(s).map_err(|e| match e {
        rialto_keyspace::Error::Store(rialto_keyspace::StoreError::Input(m)) => LoadError::Input(m),
        e => LoadError::Local(e.to_string()),
    })?;
    info!(
        store = id,
        version,
        records = staged.records,
        seconds = started.elapsed().as_secs_f64(),
        "loaded a pushed version"
    );
    Ok(staged)
}

/// Why one record was not taken: it belongs to another partition, or the staging refused it.
enum AddError {
    OtherPartition,
    Staging(LoadError),
}

fn bad_or(e: AddError, bad: &impl Fn(&str) -> LoadError) -> LoadError {
    match e {
        AddError::OtherPartition => bad("a key of another partition"),
        AddError::Staging(e) => e,
    }
}

/// Checks a record's partition, counts it and hands it to the staging.
fn add_record(
    s: &mut Staging,
    prefix: &mut Vec<u8>,
    tally: &mut Tally,
    partitions: u32,
    p: usize,
    key: &[u8],
    value: &[u8],
) -> Result<(), AddError> {
    let plen = prefix.len();
    prefix.extend_from_slice(key);
    let part = crate::slot::key_partition(prefix, partitions) as usize;
    prefix.truncate(plen);
    if part != p {
        return Err(AddError::OtherPartition);
    }
    tally.add(key, value);
    s.add(key, value).map_err(|e| {
        AddError::Staging(match e {
            rialto_keyspace::StoreError::Input(m) => LoadError::Input(m),
            e => LoadError::Local(e.to_string()),
        })
    })
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
/// its previous one nor being pushed. A version leaves those three for good: a rollback goes
/// only to the previous version and retires the one it leaves.
fn superseded<M: StateMachine>(inner: &Inner<M>, id: u32, version: u32) -> bool {
    if !inner.catalog_caught_up.load(Ordering::Acquire) {
        return false;
    }
    let cat = inner.catalog.read();
    match cat.stores.values().find(|s| s.id == id) {
        None => id < cat.next_id,
        Some(s) => {
            s.current.number != version
                && s.previous.number != version
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
