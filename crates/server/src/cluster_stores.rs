//! Stores and pushes in cluster mode: the same STORE and PUSH commands as on one node, over
//! the cluster's store catalog (`rialto_cluster::catalog`), version topics
//! (`rialto_cluster::versions`) and each partition's log.
//!
//! - A change (create, delete, rollback, a push's begin, commit or abort) is a request in the
//!   catalog topic; its outcome is what every node's catalog makes of it.
//! - A push's records go to its version topic, each to its key's partition, between a start
//!   and an end marker per partition; every live node loads the version and reports it
//!   ready, and only then is the commit requested.
//! - Each partition's master makes its partition follow the catalog (`reconcile`): a
//!   `PartitionStore` op in its log for each difference, so every replica changes that
//!   partition's stores at the same offset — the swap included.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use rialto_cluster::catalog::{CatalogState, Change, ClusterStore, Guard, Outcome, Refusal};
use rialto_cluster::kafka::Delivery;
use rialto_cluster::versions::{self, Tally};
use rialto_cluster::{slot, WriteError};
use rialto_keyspace::{
    DuplicatePolicy, Keyspace, Op, OpKind, PartStoreOp, PushGuard, PushLayout, PushOptions,
    PushRefusal, StoreError, StoreMeta, StoreSettings,
};
use tracing::{info, warn};

use crate::cluster::{Applied, Cluster, Payload};

/// Batches of a push on their way to Kafka before ADD waits for the oldest (each about
/// `versions::BATCH_BYTES`).
const IN_FLIGHT: usize = 64;
/// How often masters compare their partitions with the catalog.
const RECONCILE_EVERY: Duration = Duration::from_millis(50);

/// A push this node coordinates.
struct Session {
    name: String,
    id: u32,
    version: u32,
    prefix: Vec<u8>,
    topic: String,
    owner: Option<u64>,
    guard: PushGuard,
    /// What every value is: checked as records are added, and named by the start markers.
    layout: PushLayout,
    /// The records, keyed by their partition (u16 BE) then key: sorted once here, so each
    /// partition of the version topic is in key order and every node merges, not sorts.
    sorter: Option<rialto_sort::Sorter>,
    spill: std::path::PathBuf,
    fs: rialto_io::FsRef,
    key_buf: Vec<u8>,
    tallies: Vec<Tally>,
    /// Per partition: records packed for its next message.
    batches: Vec<versions::Batch>,
    in_flight: VecDeque<Delivery>,
    started: Instant,
    committing: bool,
}

impl Drop for Session {
    /// The sorter's runs go with it; its spill directory goes too (a stop leaves it to the
    /// next start, which empties `push-tmp`).
    fn drop(&mut self) {
        drop(self.sorter.take());
        if let Err(e) = self.fs.remove_dir(&self.spill) {
            if e.kind() != std::io::ErrorKind::NotFound {
                warn!(dir = %self.spill.display(), error = %e, "cannot remove a push's spill directory");
            }
        }
    }
}

/// The pushes this node coordinates, by push id (the version each loads).
#[derive(Default)]
pub struct Pushes(Mutex<HashMap<u32, Arc<Mutex<Session>>>>);

fn refusal(r: &Refusal, name: &str) -> StoreError {
    let name = name.to_string();
    match r {
        Refusal::NoSuchStore => StoreError::NoSuchStore(name),
        Refusal::Exists => StoreError::Exists(name),
        Refusal::PrefixOverlaps { store, prefix } => StoreError::PrefixOverlaps {
            store: store.clone(),
            prefix: String::from_utf8_lossy(prefix).into_owned(),
        },
        Refusal::PushInProgress { version } => StoreError::PushInProgress {
            store: name,
            version: *version,
        },
        Refusal::DeleteWhilePushing => StoreError::DeleteWhilePushing(name),
        Refusal::NoSuchPush { version } => StoreError::NoSuchPush(u64::from(*version)),
        Refusal::VersionsExhausted => StoreError::VersionsExhausted,
        Refusal::NoPrevious { current } => StoreError::NoPrevious {
            store: name,
            current: *current,
        },
        Refusal::VersionNotKept { version, kept } => StoreError::VersionNotKept {
            store: name,
            version: *version,
            kept: kept.clone(),
        },
        Refusal::RollbackForward { version, current } => StoreError::RollbackForward {
            store: name,
            version: *version,
            current: *current,
        },
        Refusal::PushFailed { reason } => StoreError::Input(reason.clone()),
    }
}

fn kafka_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Input(format!("the cluster's log: {e}"))
}

/// Asks the catalog for `change` to store `name` and waits for its outcome.
fn request(c: &Cluster, name: &str, change: Change) -> Result<(u32, u32), StoreError> {
    let req = c.node.propose(name, change).map_err(kafka_error)?;
    let deadline = Instant::now() + c.node.options().write_timeout;
    loop {
        match c.node.with_catalog(|cat| cat.outcome(req).cloned()) {
            Some(Outcome::Done { id, version }) => return Ok((id, version)),
            Some(Outcome::Refused(r)) => return Err(refusal(&r, name)),
            None if Instant::now() >= deadline => {
                return Err(StoreError::Input(
                    "no outcome from the store catalog within cluster-write-timeout; the change may still be made".into(),
                ))
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Waits until every partition on this node satisfies `done` for store `name` (each
/// partition's master makes it follow the catalog); false past `timeout`.
fn converge(
    ks: &Keyspace,
    partitions: u32,
    name: &str,
    timeout: Duration,
    done: impl Fn(Option<&StoreMeta>) -> bool,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let cat = ks.catalog();
        if (0..partitions).all(|p| done(cat.get_in(p, name).map(|s| &**s))) {
            return true;
        }
        drop(cat);
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until each partition's master has applied its log as far as this node has (by the
/// progress it reports, every 500 ms): a read on a master after the reply then sees what the
/// reply announced. False past `timeout`.
fn masters_caught_up(c: &Cluster, timeout: Duration) -> bool {
    let target = c.node.view().applied;
    let me = c.node.incarnation();
    let deadline = Instant::now() + timeout;
    for (p, &want) in target.iter().enumerate() {
        loop {
            let done = match c.node.master(p as u32) {
                None => true,
                Some(m) if m.incarnation == me => true,
                Some(m) => c
                    .node
                    .peer(m.node)
                    .and_then(|st| st.applied.get(p).copied())
                    .is_some_and(|a| a >= want),
            };
            if done {
                break;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    true
}

fn not_converged(what: &str) -> StoreError {
    StoreError::Input(format!(
        "{what} is decided and not yet applied by every partition within cluster-write-timeout; it will be"
    ))
}

/// STORE CREATE in cluster mode; `settings` as every node is to apply them (the server's
/// defaults already filled in by the caller).
pub fn create(
    c: &Cluster,
    ks: &Keyspace,
    name: &str,
    prefix: &[u8],
    settings: StoreSettings,
) -> Result<(), StoreError> {
    if !rialto_keyspace::valid_store_name(name.as_bytes()) {
        return Err(StoreError::InvalidName(name.to_string()));
    }
    if prefix.is_empty() || prefix.len() > rialto_keyspace::MAX_STORE_PREFIX_LEN {
        return Err(StoreError::InvalidPrefix);
    }
    if let Some(example) = ks.default_key_under(prefix).map_err(keyspace_error)? {
        return Err(StoreError::PrefixHoldsKeys { example });
    }
    let created_ms = ks.now_ms();
    let change = Change::Create {
        prefix: prefix.to_vec(),
        created_ms,
        settings: non_default(settings),
    };
    let (id, _) = request(c, name, change)?;
    info!(store = name, id, "store created");
    let timeout = c.node.options().write_timeout;
    if !converge(ks, c.partitions, name, timeout, |s| {
        s.is_some_and(|s| s.id == id)
    }) || !masters_caught_up(c, timeout)
    {
        return Err(not_converged("the store's creation"));
    }
    Ok(())
}

/// `settings` without the fields that hold their defaults: a record without them is laid out
/// as before settings existed, so nodes that predate them still read it.
fn non_default(settings: StoreSettings) -> StoreSettings {
    StoreSettings {
        compression: settings
            .compression
            .filter(|&c| c != rialto_keyspace::Compression::None),
        keep: settings
            .keep
            .filter(|&k| k != rialto_keyspace::DEFAULT_STORE_KEEP),
    }
}

/// The settings of catalog store `d` that partition store `l` lacks.
fn settings_diff(d: &ClusterStore, l: &StoreMeta) -> StoreSettings {
    StoreSettings {
        compression: (d.compression != l.compression).then_some(d.compression),
        keep: (d.keep != l.keep).then_some(d.keep),
    }
}

/// The versions of store `name` the catalog keeps (current and older), with its id.
fn kept_versions(c: &Cluster, name: &str) -> Option<(u32, Vec<u32>)> {
    store(c, name).map(|s| {
        let kept = std::iter::once(s.current.number)
            .chain(s.older.iter().map(|v| v.number))
            .collect();
        (s.id, kept)
    })
}

/// Deletes the topics of the versions in `before` (store `id`'s kept versions before a
/// change) that the catalog no longer keeps: a version leaves the kept ones for good.
fn trim_dropped(c: &Cluster, name: &str, id: u32, before: &[u32]) {
    let after = kept_versions(c, name)
        .filter(|(i, _)| *i == id)
        .map(|(_, kept)| kept)
        .unwrap_or_default();
    for v in before.iter().filter(|v| !after.contains(v)) {
        trim(c, id, *v);
    }
}

/// STORE CONFIG in cluster mode: the catalog changes, then each partition follows.
pub fn configure(
    c: &Cluster,
    ks: &Keyspace,
    name: &str,
    settings: StoreSettings,
) -> Result<(), StoreError> {
    let before = kept_versions(c, name);
    let (id, _) = request(c, name, Change::Configure { settings })?;
    info!(store = name, id, ?settings, "store configured");
    if let Some((_, kept)) = before.filter(|(i, _)| *i == id) {
        trim_dropped(c, name, id, &kept);
    }
    let Some(d) = store(c, name).filter(|d| d.id == id) else {
        return Ok(());
    };
    let timeout = c.node.options().write_timeout;
    if !converge(ks, c.partitions, name, timeout, |s| {
        s.is_some_and(|s| s.id == id && settings_diff(&d, s).is_empty())
    }) || !masters_caught_up(c, timeout)
    {
        return Err(not_converged("the store's settings"));
    }
    Ok(())
}

/// STORE DELETE in cluster mode.
pub fn delete(c: &Cluster, ks: &Keyspace, name: &str) -> Result<(), StoreError> {
    let (id, _) = request(c, name, Change::Delete)?;
    info!(store = name, id, "store deleted");
    let timeout = c.node.options().write_timeout;
    if !converge(ks, c.partitions, name, timeout, |s| {
        s.is_none_or(|s| s.id != id)
    }) || !masters_caught_up(c, timeout)
    {
        return Err(not_converged("the store's deletion"));
    }
    Ok(())
}

/// STORE ROLLBACK in cluster mode.
pub fn rollback(c: &Cluster, ks: &Keyspace, name: &str, to: Option<u32>) -> Result<(), StoreError> {
    let before = kept_versions(c, name);
    let change = Change::Rollback {
        to: to.unwrap_or(0),
    };
    let (id, version) = request(c, name, change)?;
    info!(store = name, current = version, "store rolled back");
    if let Some((_, kept)) = before.filter(|(i, _)| *i == id) {
        trim_dropped(c, name, id, &kept);
    }
    let timeout = c.node.options().write_timeout;
    if !converge(ks, c.partitions, name, timeout, |s| {
        s.is_some_and(|s| s.id == id && s.current.number == version)
    }) || !masters_caught_up(c, timeout)
    {
        return Err(not_converged("the rollback"));
    }
    Ok(())
}

fn keyspace_error(e: rialto_keyspace::Error) -> StoreError {
    match e {
        rialto_keyspace::Error::Store(s) => s,
        rialto_keyspace::Error::Engine(e) => StoreError::Engine(e),
        other => StoreError::Corrupt(other.to_string()),
    }
}

/// The store `name` as the cluster's catalog holds it.
pub fn store(c: &Cluster, name: &str) -> Option<ClusterStore> {
    c.node.with_catalog(|cat| cat.stores.get(name).cloned())
}

/// The pushes in progress in the whole cluster, whichever node coordinates them: id (the
/// version each loads) and store.
pub fn pushes(c: &Cluster) -> Vec<(u64, String)> {
    c.node.with_catalog(|cat| {
        let mut v: Vec<(u64, String)> = cat
            .stores
            .values()
            .filter_map(|s| Some((u64::from(s.pushing.as_ref()?.version), s.name.clone())))
            .collect();
        v.sort();
        v
    })
}

/// The names of the cluster's stores.
pub fn names(c: &Cluster) -> Vec<String> {
    c.node
        .with_catalog(|cat| cat.stores.keys().cloned().collect())
}

impl Pushes {
    fn session(
        &self,
        version: u64,
        caller: Option<u64>,
    ) -> Result<Arc<Mutex<Session>>, StoreError> {
        let v = u32::try_from(version).map_err(|_| StoreError::NoSuchPush(version))?;
        let s = self
            .0
            .lock()
            .get(&v)
            .cloned()
            .ok_or(StoreError::NoSuchPush(version))?;
        let owner = s.lock().owner;
        if let (Some(owner), Some(caller)) = (owner, caller) {
            if owner != caller {
                return Err(StoreError::NotOwner { id: version, owner });
            }
        }
        Ok(s)
    }

    /// Whether connection `client` owns a push coordinated here.
    pub fn owned_by(&self, client: u64) -> bool {
        self.0
            .lock()
            .values()
            .any(|s| s.lock().owner == Some(client))
    }
}

/// PUSH BEGIN in cluster mode: the catalog gives the version; its topic is made and each of
/// its partitions opened with a start marker, which names the push's layout for every node
/// that loads it.
pub fn push_begin(
    c: &Cluster,
    ks: &Keyspace,
    name: &str,
    opts: PushOptions,
    memory_limit: usize,
    tmp_dir: &std::path::Path,
) -> Result<u64, StoreError> {
    let last_wins = opts.duplicates == DuplicatePolicy::LastWins;
    let guard = opts.guard.unwrap_or_default();
    let (owner, layout) = (opts.owner, opts.layout);
    let change = Change::Begin {
        started_ms: ks.now_ms(),
        last_wins,
        node: c.node.options().node_id,
        guard: Guard {
            min_records: guard.min_records,
            max_shrink_percent: guard.max_shrink_percent,
        },
    };
    let (id, version) = request(c, name, change)?;
    let prefix = store(c, name)
        .filter(|s| s.id == id)
        .map(|s| s.prefix)
        .ok_or_else(|| StoreError::NoSuchStore(name.to_string()))?;
    let topic = versions::topic(&c.node.options().topic, id, version);
    let opened = c
        .node
        .create_version_topic(id, version)
        .map_err(kafka_error)
        .and_then(|()| {
            let start = versions::start(last_wins, &prefix, layout);
            let sent: Result<Vec<Delivery>, _> = (0..c.partitions)
                .map(|p| c.node.produce(&topic, p, &start))
                .collect();
            for d in sent.map_err(kafka_error)? {
                d.wait().map_err(|e| kafka_error(e.error))?;
            }
            Ok(())
        });
    // Every partition keeps the writes streamed into the store from its begin on: once the
    // reply leaves, every write acknowledged after it is replayed onto the new version.
    let begun = opened.and_then(|()| {
        let timeout = c.node.options().write_timeout;
        converge(ks, c.partitions, name, timeout, |m| {
            m.is_some_and(|m| m.id == id && m.pushing.is_some_and(|p| p.version == version))
        })
        .then_some(())
        .ok_or_else(|| not_converged("the push's begin"))
    });
    let spill = tmp_dir.join(format!("cluster-push-{version}"));
    let sorter = begun.and_then(|()| {
        rialto_sort::Sorter::new(
            std::sync::Arc::clone(ks.fs()),
            rialto_sort::SortOptions {
                memory_limit,
                tmp_dir: spill.clone(),
                duplicates: opts.duplicates,
                max_key_len: rialto_keyspace::MAX_USER_KEY_LEN.saturating_sub(prefix.len()) + 2,
                max_value_len: rialto_keyspace::MAX_USER_VALUE_LEN,
            },
        )
        .map_err(|e| StoreError::Input(e.to_string()))
    });
    let sorter = match sorter {
        Ok(s) => s,
        Err(e) => {
            abort_in_catalog(c, name, version, &e.to_string());
            return Err(e);
        }
    };
    let session = Session {
        sorter: Some(sorter),
        spill,
        fs: std::sync::Arc::clone(ks.fs()),
        key_buf: Vec::new(),
        name: name.to_string(),
        id,
        version,
        prefix,
        topic,
        owner,
        guard,
        layout,
        tallies: (0..c.partitions).map(|_| Tally::default()).collect(),
        batches: (0..c.partitions)
            .map(|_| versions::Batch::default())
            .collect(),
        in_flight: VecDeque::new(),
        started: Instant::now(),
        committing: false,
    };
    c.pushes
        .0
        .lock()
        .insert(version, Arc::new(Mutex::new(session)));
    info!(store = name, version, layout = layout.name(), "push begun");
    Ok(u64::from(version))
}

fn abort_in_catalog(c: &Cluster, name: &str, version: u32, reason: &str) {
    let change = Change::Abort {
        version,
        reason: reason.to_string(),
    };
    match request(c, name, change) {
        Ok((id, _)) => {
            info!(store = name, version, reason, "push aborted");
            trim(c, id, version);
        }
        Err(e) => warn!(store = name, version, error = %e, "cannot record a push's abort"),
    }
}

/// Deletes the topic of a version no partition serves or can go back to any more. A node
/// that meets its swap later (rebuilt from the log) finds it superseded and needs no data.
fn trim(c: &Cluster, id: u32, version: u32) {
    if version <= 1 {
        // Version 1 of a store is its empty first one, loaded by no push.
        return;
    }
    if let Err(e) = c.node.delete_version_topic(id, version) {
        warn!(store = id, version, error = %e, "cannot delete a version's topic");
    }
}

/// PUSH ADD in cluster mode: records are sorted by partition, then key (bounded memory,
/// spilled under `push-tmp`), to be sent at the commit.
pub fn push_add(
    c: &Cluster,
    version: u64,
    caller: Option<u64>,
    records: &[Bytes],
) -> Result<u64, StoreError> {
    let session = c.pushes.session(version, caller)?;
    let mut s = session.lock();
    if s.committing {
        return Err(StoreError::PushCommitting(version));
    }
    let r = add_records(c, &mut s, records);
    if let Err(e) = &r {
        let (name, v) = (s.name.clone(), s.version);
        drop(s);
        c.pushes.0.lock().remove(&v);
        abort_in_catalog(c, &name, v, &e.to_string());
    }
    r
}

fn add_records(c: &Cluster, s: &mut Session, records: &[Bytes]) -> Result<u64, StoreError> {
    let max_key = rialto_keyspace::MAX_USER_KEY_LEN.saturating_sub(s.prefix.len());
    let mut full = s.prefix.clone();
    let mut n = 0u64;
    let committing = StoreError::PushCommitting(u64::from(s.version));
    let Session {
        sorter,
        key_buf,
        layout,
        ..
    } = s;
    let sorter = sorter.as_mut().ok_or(committing)?;
    for pair in records.chunks_exact(2) {
        let (k, v) = (&pair[0][..], &pair[1][..]);
        if k.len() > max_key {
            return Err(StoreError::Input(format!(
                "a key of {} bytes is longer than the {max_key} bytes a key of this store may have",
                k.len()
            )));
        }
        // Checked here, once: the nodes load the version topic as this node wrote it.
        layout
            .check(v)
            .map_err(|why| StoreError::not_a_hash(k, why))?;
        full.truncate(s.prefix.len());
        full.extend_from_slice(k);
        let p = slot::key_partition(&full, c.partitions) as u16;
        key_buf.clear();
        key_buf.extend_from_slice(&p.to_be_bytes());
        key_buf.extend_from_slice(k);
        sorter
            .add(key_buf, v)
            .map_err(|e| StoreError::Input(e.to_string()))?;
        n += 1;
    }
    Ok(n)
}

/// Sorts the push's records and sends each partition's, in key order, packed in batches.
fn send_sorted(
    c: &Cluster,
    s: &mut Session,
    sorter: rialto_sort::Sorter,
) -> Result<(), StoreError> {
    // The sort key starts with the partition: a duplicate is reported by the user's key.
    let input = |e: rialto_sort::SortError| match e {
        rialto_sort::SortError::DuplicateKey { key } => StoreError::Input(
            rialto_sort::SortError::DuplicateKey {
                key: key.get(2..).unwrap_or_default().to_vec(),
            }
            .to_string(),
        ),
        e => StoreError::Input(e.to_string()),
    };
    let mut sorted = sorter.finish().map_err(input)?;
    while let Some((k, v)) = sorted.next().map_err(input)? {
        let (Some(p), Some(key)) = (k.get(..2), k.get(2..)) else {
            return Err(StoreError::Corrupt(
                "a sorted record without its partition".into(),
            ));
        };
        let p = u16::from_be_bytes([p[0], p[1]]);
        let pi = usize::from(p);
        s.tallies[pi].add(key, v);
        s.batches[pi].add(key, v);
        if s.batches[pi].full() {
            send_batch(c, s, u32::from(p))?;
        }
    }
    for p in 0..c.partitions {
        if !s.batches[p as usize].is_empty() {
            send_batch(c, s, p)?;
        }
    }
    Ok(())
}

/// Sends partition `p`'s packed records, waiting for the oldest sends past [`IN_FLIGHT`].
fn send_batch(c: &Cluster, s: &mut Session, p: u32) -> Result<(), StoreError> {
    let msg = s.batches[p as usize].take();
    let d = c.node.produce(&s.topic, p, &msg).map_err(kafka_error)?;
    s.in_flight.push_back(d);
    while s.in_flight.len() > IN_FLIGHT {
        if let Some(d) = s.in_flight.pop_front() {
            d.wait().map_err(|e| kafka_error(e.error))?;
        }
    }
    Ok(())
}

/// What a cluster push's commit did.
pub struct Committed {
    pub store: String,
    pub version: u32,
    pub records: u64,
    pub bytes: u64,
    pub nodes: usize,
    pub elapsed: Duration,
}

/// PUSH COMMIT in cluster mode: each partition's records are sent in key order, then its end
/// marker; once every live node has loaded the version, the catalog commits it and each
/// partition swaps it in.
pub fn push_commit(
    c: &Cluster,
    ks: &Keyspace,
    version: u64,
    caller: Option<u64>,
    timeout: Duration,
) -> Result<Committed, StoreError> {
    let session = c.pushes.session(version, caller)?;
    let mut s = session.lock();
    if s.committing {
        return Err(StoreError::PushCommitting(version));
    }
    s.committing = true;
    let r = commit_inner(c, ks, &mut s, timeout);
    let (name, v) = (s.name.clone(), s.version);
    drop(s);
    c.pushes.0.lock().remove(&v);
    match r {
        Ok(done) => Ok(done),
        Err((e, decided)) => {
            if !decided {
                abort_in_catalog(c, &name, v, &e.to_string());
            }
            Err(e)
        }
    }
}

/// The error, and whether the swap was already decided (then nothing is aborted).
type CommitError = (StoreError, bool);

fn commit_inner(
    c: &Cluster,
    ks: &Keyspace,
    s: &mut Session,
    timeout: Duration,
) -> Result<Committed, CommitError> {
    let early = |e| (e, false);
    let sorter = s
        .sorter
        .take()
        .ok_or_else(|| early(StoreError::PushCommitting(u64::from(s.version))))?;
    send_sorted(c, s, sorter).map_err(early)?;
    while let Some(d) = s.in_flight.pop_front() {
        d.wait().map_err(|e| early(kafka_error(e.error)))?;
    }
    let records: u64 = s.tallies.iter().map(|t| t.records).sum();
    let current = store(c, &s.name)
        .filter(|st| st.id == s.id)
        .map(|st| st.current.records)
        .ok_or_else(|| early(StoreError::NoSuchStore(s.name.clone())))?;
    s.guard
        .check(records, current)
        .map_err(|r: PushRefusal| early(StoreError::Refused(r)))?;
    let ends: Result<Vec<Delivery>, _> = s
        .tallies
        .iter()
        .enumerate()
        .map(|(p, t)| {
            c.node
                .produce(&s.topic, p as u32, &versions::end(t.records, t.checksum()))
        })
        .collect();
    for d in ends.map_err(|e| early(kafka_error(e)))? {
        d.wait().map_err(|e| early(kafka_error(e.error)))?;
    }
    // Every live node loads the version; one that cannot fails the push.
    let deadline = Instant::now() + timeout;
    let nodes = loop {
        let members: Vec<u32> = c.node.view().members.iter().map(|m| m.node).collect();
        let state = c.node.with_catalog(|cat| {
            cat.stores.get(&s.name).and_then(|st| {
                st.pushing
                    .as_ref()
                    .filter(|p| p.version == s.version)
                    .map(|p| (p.ready.clone(), p.failed.clone()))
            })
        });
        match state {
            None => {
                return Err(early(StoreError::Input(
                    "the push was aborted while its version was being loaded".into(),
                )))
            }
            Some((_, Some((node, reason)))) => {
                return Err(early(StoreError::Input(format!(
                    "node {node} could not load the version: {reason}"
                ))))
            }
            Some((ready, None)) => {
                if !members.is_empty() && members.iter().all(|m| ready.contains_key(m)) {
                    break members.len();
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(early(StoreError::Input(
                "not every node loaded the version within cluster-push-timeout".into(),
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let before = kept_versions(c, &s.name).filter(|(i, _)| *i == s.id);
    let change = Change::Commit {
        version: s.version,
        created_ms: ks.now_ms(),
    };
    request(c, &s.name, change).map_err(early)?;
    if let Some((_, kept)) = before {
        trim_dropped(c, &s.name, s.id, &kept);
    }
    // Decided: each partition's master swaps it in.
    let (id, v) = (s.id, s.version);
    if !converge(ks, c.partitions, &s.name, timeout, |m| {
        m.is_some_and(|m| m.id == id && m.current.number >= v)
    }) || !masters_caught_up(c, timeout)
    {
        return Err((not_converged("the swap"), true));
    }
    let cur = store(c, &s.name).map(|st| st.current).unwrap_or_default();
    info!(store = %s.name, version = v, records, nodes, "push committed");
    Ok(Committed {
        store: s.name.clone(),
        version: v,
        records: cur.records,
        bytes: cur.bytes,
        nodes,
        elapsed: s.started.elapsed(),
    })
}

/// PUSH ABORT in cluster mode.
pub fn push_abort(c: &Cluster, version: u64, caller: Option<u64>) -> Result<(), StoreError> {
    let session = c.pushes.session(version, caller)?;
    let s = session.lock();
    if s.committing {
        return Err(StoreError::PushCommitting(version));
    }
    let (name, v) = (s.name.clone(), s.version);
    drop(s);
    c.pushes.0.lock().remove(&v);
    let change = Change::Abort {
        version: v,
        reason: "aborted".into(),
    };
    let (id, _) = request(c, &name, change)?;
    trim(c, id, v);
    Ok(())
}

/// Aborts the pushes connection `client` began here (it closed without committing).
pub fn abort_owned_by(c: &Cluster, client: u64) {
    let ids: Vec<u32> = c
        .pushes
        .0
        .lock()
        .iter()
        .filter(|(_, s)| s.lock().owner == Some(client))
        .map(|(v, _)| *v)
        .collect();
    for v in ids {
        if let Err(e) = push_abort(c, u64::from(v), Some(client)) {
            warn!(push = v, error = %e, "aborting a push of a closed connection");
        }
    }
}

/// The changes partition `p`'s stores need to follow the catalog `cat`, in order.
fn differences(cat: &CatalogState, local: &rialto_keyspace::Catalog, p: u32) -> Vec<PartStoreOp> {
    let mut ops = Vec::new();
    for l in local.iter_in(p) {
        if cat.stores.get(&l.name).is_none_or(|d| d.id != l.id) {
            ops.push(PartStoreOp::Delete {
                name: l.name.clone(),
                id: l.id,
            });
        }
    }
    for d in cat.stores.values() {
        let Some(l) = local.get_in(p, &d.name).filter(|l| l.id == d.id) else {
            if local.get_in(p, &d.name).is_none() {
                ops.push(PartStoreOp::Create {
                    name: d.name.clone(),
                    id: d.id,
                    prefix: Bytes::copy_from_slice(&d.prefix),
                    created_ms: d.created_ms,
                    settings: non_default(StoreSettings {
                        compression: Some(d.compression),
                        keep: Some(d.keep),
                    }),
                });
            }
            continue;
        };
        let name = d.name.clone();
        let id = d.id;
        let settings = settings_diff(d, l);
        if !settings.is_empty() {
            ops.push(PartStoreOp::Configure {
                name: name.clone(),
                id,
                settings,
            });
        }
        let want = d.current.number;
        let pushing_here = l.pushing.map(|x| x.version);
        let push = d.pushing.as_ref().filter(|x| x.failed.is_none());
        // A push this partition began that the catalog neither runs nor committed: abort.
        if let Some(v) = pushing_here {
            if v != want && push.is_none_or(|x| x.version != v) {
                ops.push(PartStoreOp::PushEnd {
                    name,
                    id,
                    version: v,
                    swap: None,
                });
                continue;
            }
        }
        if want != l.current.number {
            if pushing_here == Some(want) {
                ops.push(PartStoreOp::PushEnd {
                    name,
                    id,
                    version: want,
                    swap: Some(d.current),
                });
            } else if want < l.current.number && l.older().any(|v| v.number == want) {
                ops.push(PartStoreOp::Rollback { name, id, to: want });
            } else if want > l.current.number && pushing_here.is_none() && l.next_version <= want {
                // The partition missed the push's begin (its master changed meanwhile).
                ops.push(PartStoreOp::PushBegin {
                    name,
                    id,
                    version: want,
                    started_ms: d.current.created_ms,
                });
            }
            continue;
        }
        if let Some(x) = push {
            if pushing_here != Some(x.version) && l.next_version <= x.version {
                ops.push(PartStoreOp::PushBegin {
                    name,
                    id,
                    version: x.version,
                    started_ms: x.started_ms,
                });
            }
        }
    }
    ops
}

/// Makes the partitions this node masters follow the catalog, until the cluster is dropped.
pub fn run_reconciler(c: Weak<Cluster>, ks: Arc<Keyspace>) {
    let started_ms = ks.now_ms();
    let mut absent: HashMap<u32, Instant> = HashMap::new();
    loop {
        std::thread::sleep(RECONCILE_EVERY);
        let Some(c) = c.upgrade() else { return };
        if !c.node.catalog_caught_up() {
            continue;
        }
        abort_orphans(&c, started_ms, &mut absent);
        for p in 0..c.partitions {
            if !c.node.serves_as_master(p) {
                continue;
            }
            let (at, ops) = {
                let local = ks.catalog();
                c.node
                    .with_catalog(|cat| (cat.next, differences(cat, &local, p)))
            };
            for op in ops {
                let op = Op::new(
                    0,
                    ks.now_ms(),
                    OpKind::PartitionStore {
                        partition: p,
                        at,
                        op,
                    },
                );
                let done = c
                    .submit(p, &Payload::One(op.clone()))
                    .and_then(|s| s.wait());
                match done {
                    Ok(((Applied::One(Ok(_)), _), _)) => {}
                    Ok(((Applied::One(Err(e)), _), _)) => {
                        warn!(partition = p, error = %e, op = ?op.kind, "a partition refused a store change");
                        break;
                    }
                    Ok(_) => break,
                    Err(WriteError::NotMaster | WriteError::Fenced) => break,
                    Err(e) => {
                        warn!(partition = p, error = %e, "cannot write a store change to the log");
                        break;
                    }
                }
            }
        }
    }
}

/// Aborts the pushes nobody can finish: those this node coordinated before it restarted (their
/// sessions went with the process), and those whose coordinator has been out of the group for
/// twice `cluster-node-timeout`. Any node may ask; the catalog takes the first abort and
/// refuses the others.
fn abort_orphans(c: &Cluster, started_ms: i64, absent: &mut HashMap<u32, Instant>) {
    let me = c.node.options().node_id;
    let grace = c.node.options().node_timeout * 2;
    let members: Vec<u32> = c.node.view().members.iter().map(|m| m.node).collect();
    let pushes: Vec<(String, u32, u32, i64)> = c.node.with_catalog(|cat| {
        cat.stores
            .values()
            .filter_map(|s| {
                let p = s.pushing.as_ref()?;
                Some((s.name.clone(), p.version, p.node, p.started_ms))
            })
            .collect()
    });
    absent.retain(|node, _| pushes.iter().any(|p| p.2 == *node));
    for (name, version, node, started) in pushes {
        let orphan = if node == me {
            started < started_ms && !c.pushes.0.lock().contains_key(&version)
        } else if members.is_empty() || members.contains(&node) {
            absent.remove(&node);
            false
        } else {
            absent.entry(node).or_insert_with(Instant::now).elapsed() >= grace
        };
        if orphan {
            let reason = format!("its coordinator, node {node}, is gone");
            warn!(store = %name, version, "aborting a push {reason}");
            abort_in_catalog(c, &name, version, &reason);
        }
    }
}

/// The version a payload swaps in, if it is a partition's swap: the applier loads it first.
pub fn needs_version(payload: &[u8]) -> Option<(u32, u32)> {
    // payload kind 1 (one op), then the op: version, db, now_ms (8), kind (30).
    if payload.get(11) != Some(&30) || payload.first() != Some(&1) {
        return None;
    }
    match Payload::decode(payload).ok()? {
        Payload::One(Op {
            kind:
                OpKind::PartitionStore {
                    op:
                        PartStoreOp::PushEnd {
                            id,
                            version,
                            swap: Some(_),
                            ..
                        },
                    ..
                },
            ..
        }) => Some((id, version)),
        _ => None,
    }
}

/// STORE DESCRIBE in cluster mode: the catalog's view, then each partition's versions on this
/// node.
pub fn describe(c: &Cluster, ks: &Keyspace, name: &str) -> Option<rialto_resp::Reply> {
    use rialto_resp::Reply;
    let d = store(c, name)?;
    let local = ks.catalog();
    let m = StoreMeta {
        name: d.name.clone(),
        id: d.id,
        prefix: d.prefix.clone(),
        current: d.current,
        kept: d.older.clone(),
        keep: d.keep,
        next_version: d.next_version,
        rewind_ms: 0,
        pushing: d.pushing.as_ref().map(|p| rialto_keyspace::Pushing {
            version: p.version,
            started_ms: p.started_ms,
        }),
        created_ms: d.created_ms,
        compression: d.compression,
    };
    let Reply::Map(mut out) = crate::commands::store::describe(&m) else {
        return None;
    };
    let parts = (0..c.partitions)
        .map(|p| match local.get_in(p, name).filter(|l| l.id == d.id) {
            None => Reply::Null,
            Some(l) => Reply::Map(vec![
                (Reply::bulk("partition"), Reply::Integer(i64::from(p))),
                (
                    Reply::bulk("current-version"),
                    Reply::Integer(i64::from(l.current.number)),
                ),
                (
                    Reply::bulk("previous-version"),
                    match l.previous() {
                        None => Reply::Null,
                        Some(v) => Reply::Integer(i64::from(v.number)),
                    },
                ),
                (
                    Reply::bulk("kept-versions"),
                    Reply::Array(
                        l.older()
                            .map(|v| Reply::Integer(i64::from(v.number)))
                            .collect(),
                    ),
                ),
                (
                    Reply::bulk("pushing-version"),
                    match l.pushing {
                        None => Reply::Null,
                        Some(x) => Reply::Integer(i64::from(x.version)),
                    },
                ),
            ]),
        })
        .collect();
    if let Some(p) = &d.pushing {
        out.push((
            Reply::bulk("pushing-ready-nodes"),
            Reply::Array(
                p.ready
                    .keys()
                    .map(|n| Reply::Integer(i64::from(*n)))
                    .collect(),
            ),
        ));
    }
    out.push((Reply::bulk("partitions"), Reply::Array(parts)));
    Some(Reply::Map(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_cluster::catalog::CatalogRecord;
    use rialto_keyspace::{Catalog, Pushing, VersionInfo};

    fn catalog(records: Vec<(&str, Change)>) -> CatalogState {
        let mut cat = CatalogState::default();
        for (i, (name, change)) in records.into_iter().enumerate() {
            let r = CatalogRecord {
                request: i as u64,
                name: name.into(),
                change,
            };
            cat.apply(i as u64, &r.encode());
        }
        cat
    }

    fn meta(current: u32, previous: u32, pushing: Option<u32>, next: u32) -> StoreMeta {
        StoreMeta {
            name: "f".into(),
            id: 1,
            prefix: b"f:".to_vec(),
            current: VersionInfo {
                number: current,
                ..VersionInfo::default()
            },
            kept: (previous != 0)
                .then_some(VersionInfo {
                    number: previous,
                    ..VersionInfo::default()
                })
                .into_iter()
                .collect(),
            keep: 2,
            next_version: next,
            rewind_ms: 0,
            pushing: pushing.map(|version| Pushing {
                version,
                started_ms: 0,
            }),
            created_ms: 0,
            compression: rialto_keyspace::Compression::None,
        }
    }

    const GUARD: Guard = Guard {
        min_records: 1,
        max_shrink_percent: 50,
    };

    fn create() -> (&'static str, Change) {
        (
            "f",
            Change::Create {
                prefix: b"f:".to_vec(),
                created_ms: 0,
                settings: StoreSettings::default(),
            },
        )
    }

    fn begin() -> (&'static str, Change) {
        (
            "f",
            Change::Begin {
                started_ms: 5,
                last_wins: false,
                node: 1,
                guard: GUARD,
            },
        )
    }

    fn kinds(ops: &[PartStoreOp]) -> Vec<&'static str> {
        ops.iter()
            .map(|o| match o {
                PartStoreOp::Create { .. } => "create",
                PartStoreOp::Delete { .. } => "delete",
                PartStoreOp::PushBegin { .. } => "begin",
                PartStoreOp::PushEnd { swap: Some(_), .. } => "swap",
                PartStoreOp::PushEnd { swap: None, .. } => "abort",
                PartStoreOp::Rollback { .. } => "rollback",
                PartStoreOp::Configure { .. } => "configure",
            })
            .collect()
    }

    #[test]
    fn a_partition_is_driven_through_create_push_swap_rollback_and_delete() {
        let empty = Catalog::partitioned(2);
        let cat = catalog(vec![create()]);
        assert_eq!(kinds(&differences(&cat, &empty, 1)), ["create"]);
        let made = empty.with_in(1, meta(1, 0, None, 2));
        assert!(differences(&cat, &made, 1).is_empty());

        let cat = catalog(vec![create(), begin()]);
        assert_eq!(kinds(&differences(&cat, &made, 1)), ["begin"]);
        let begun = made.with_in(1, meta(1, 0, Some(2), 3));
        assert!(differences(&cat, &begun, 1).is_empty());

        let ready = (
            "f",
            Change::Ready {
                version: 2,
                node: 1,
                records: 1,
                bytes: 1,
            },
        );
        let commit = (
            "f",
            Change::Commit {
                version: 2,
                created_ms: 9,
            },
        );
        let cat = catalog(vec![create(), begin(), ready.clone(), commit.clone()]);
        assert_eq!(kinds(&differences(&cat, &begun, 1)), ["swap"]);
        // A partition that missed the begin begins, then swaps.
        assert_eq!(kinds(&differences(&cat, &made, 1)), ["begin"]);
        let swapped = begun.with_in(1, meta(2, 1, None, 3));
        assert!(differences(&cat, &swapped, 1).is_empty());

        let cat = catalog(vec![
            create(),
            begin(),
            ready,
            commit,
            ("f", Change::Rollback { to: 0 }),
        ]);
        assert_eq!(kinds(&differences(&cat, &swapped, 1)), ["rollback"]);

        // An aborted push ends without a swap; a deleted store goes.
        let cat = catalog(vec![
            create(),
            begin(),
            (
                "f",
                Change::Abort {
                    version: 2,
                    reason: "x".into(),
                },
            ),
        ]);
        assert_eq!(kinds(&differences(&cat, &begun, 1)), ["abort"]);
        let cat = catalog(vec![create(), ("f", Change::Delete)]);
        assert_eq!(kinds(&differences(&cat, &made, 1)), ["delete"]);
    }

    #[test]
    fn a_partition_follows_the_store_compression_of_the_catalog() {
        use rialto_keyspace::Compression;
        let zstd = StoreSettings {
            compression: Some(Compression::Zstd),
            keep: None,
        };
        let empty = Catalog::partitioned(2);
        let cat = catalog(vec![(
            "f",
            Change::Create {
                prefix: b"f:".to_vec(),
                created_ms: 0,
                settings: zstd,
            },
        )]);
        let ops = differences(&cat, &empty, 0);
        assert!(
            matches!(&ops[..], [PartStoreOp::Create { settings, .. }] if *settings == zstd),
            "{ops:?}"
        );
        // A partition created without it (before a change) is configured.
        let made = empty.with_in(0, meta(1, 0, None, 2));
        let ops = differences(&cat, &made, 0);
        assert!(
            matches!(&ops[..], [PartStoreOp::Configure { settings, .. }] if *settings == zstd),
            "{ops:?}"
        );
        let configured = empty.with_in(
            0,
            StoreMeta {
                compression: Compression::Zstd,
                ..meta(1, 0, None, 2)
            },
        );
        assert!(differences(&cat, &configured, 0).is_empty());
        // The default compression travels as no setting at all.
        let cat = catalog(vec![create()]);
        let ops = differences(&cat, &empty, 0);
        assert!(
            matches!(&ops[..], [PartStoreOp::Create { settings, .. }] if settings.is_empty()),
            "{ops:?}"
        );
    }

    #[test]
    fn a_partition_rolls_back_to_the_kept_version_the_catalog_went_back_to() {
        let keep3 = StoreSettings {
            compression: None,
            keep: Some(3),
        };
        let mut records = vec![(
            "f",
            Change::Create {
                prefix: b"f:".to_vec(),
                created_ms: 0,
                settings: keep3,
            },
        )];
        for v in [2, 3] {
            records.push(begin());
            records.push((
                "f",
                Change::Ready {
                    version: v,
                    node: 1,
                    records: 1,
                    bytes: 1,
                },
            ));
            records.push((
                "f",
                Change::Commit {
                    version: v,
                    created_ms: 9,
                },
            ));
        }
        let cat = catalog(records.clone());
        let empty = Catalog::partitioned(2);
        let ops = differences(&cat, &empty, 0);
        assert!(
            matches!(&ops[..], [PartStoreOp::Create { settings, .. }] if *settings == keep3),
            "{ops:?}"
        );
        let local = |keep: u32| {
            empty.with_in(
                0,
                StoreMeta {
                    kept: vec![
                        VersionInfo {
                            number: 2,
                            ..VersionInfo::default()
                        },
                        VersionInfo {
                            number: 1,
                            ..VersionInfo::default()
                        },
                    ],
                    keep,
                    ..meta(3, 0, None, 4)
                },
            )
        };
        assert!(differences(&cat, &local(3), 0).is_empty());
        records.push(("f", Change::Rollback { to: 1 }));
        let cat = catalog(records);
        assert_eq!(cat.stores["f"].current.number, 1);
        let ops = differences(&cat, &local(3), 0);
        assert!(
            matches!(&ops[..], [PartStoreOp::Rollback { to: 1, .. }]),
            "{ops:?}"
        );
        // A partition whose keep differs is configured first.
        assert_eq!(
            kinds(&differences(&cat, &local(2), 0)),
            ["configure", "rollback"]
        );
    }

    #[test]
    fn only_swaps_need_a_loaded_version() {
        let op = |swap| {
            Payload::One(Op::new(
                0,
                5,
                OpKind::PartitionStore {
                    partition: 0,
                    at: 1,
                    op: PartStoreOp::PushEnd {
                        name: "f".into(),
                        id: 3,
                        version: 4,
                        swap,
                    },
                },
            ))
            .encode()
        };
        assert_eq!(
            needs_version(&op(Some(VersionInfo::default()))),
            Some((3, 4))
        );
        assert_eq!(needs_version(&op(None)), None);
        let set = Payload::One(Op::new(0, 5, OpKind::Persist { key: "k".into() })).encode();
        assert_eq!(needs_version(&set), None);
    }
}
