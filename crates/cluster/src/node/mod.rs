//! A Rialto node in a cluster: a deterministic state machine over the partitions of one
//! Kafka topic.
//!
//! - **Applier** (`applier.rs`): reads every partition from the offset after the last one it
//!   applied and applies the records in offset order, a batch per merger transaction that also
//!   stores each partition's [`PartitionState`], so the data and the position agree after any
//!   crash and no record is applied twice.
//! - **Mastership** (`group.rs`): the node is a member of a Kafka consumer group whose topic
//!   has one partition per log partition; Kafka's group coordinator gives each partition to
//!   exactly one live member, and that member is its master. It then writes a claim into the
//!   log partition; the claim's offset is its epoch. Nothing here elects anyone: Kafka's group
//!   membership decides who claims, the log's order decides which claim is in force.
//! - **Writes** ([`Node::submit`]): the master wraps a payload with its epoch and a sequence
//!   number and produces it (idempotent, `acks=all`). The write's result is what the node's
//!   own applier returns when it applies the record at its offset; a record whose epoch is no
//!   longer in force where it lands is skipped by every replica, and its writer answers that
//!   it was not applied. A guarded write ([`Node::submit_guarded`]) is sent only if no write
//!   of this node's still on its way may change the keys it watches (Redis's WATCH).
//! - **Progress** (`status.rs`): every node reports how far it applied each partition to a
//!   compacted topic and reads the others' reports (replica lag in the slot map, ROLE, INFO).
//! - **Stores** (`stores.rs`): the cluster's store catalog, read from its topic; pushed
//!   versions loaded from their topics; a swap applied only once its version is loaded.

mod applier;
mod group;
pub mod status;
mod stores;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use parking_lot::{Mutex, RwLock};
use rialto_keyspace::{Keyspace, Transaction};

use crate::catalog::{CatalogState, Change};
use crate::kafka::{self, Admin, ClientOptions, Delivery, Producer, ProducerOptions, Written};
use crate::record::{self, DecodeError, Master, PartitionState};

/// What the log's records mean: the node hands each write's payload to it, inside the
/// transaction that applies the record.
pub trait StateMachine: Send + Sync + 'static {
    type Output: Send + 'static;
    /// Applies one write. Its effect on the database must be a function of the database's
    /// state and `payload` alone, so that every replica reaches the same state; a failed write
    /// must leave nothing behind. `mine`: this node wrote the record (and answers its client),
    /// so reads that only shape the reply need to run here alone.
    fn apply(&self, t: &mut Transaction<'_, '_>, payload: &[u8], mine: bool) -> Self::Output;

    /// The pushed version (store id, version) a write swaps in, if it swaps one in: the
    /// applier applies it only once this node has loaded that version.
    fn needs_version(&self, _payload: &[u8]) -> Option<(u32, u32)> {
        None
    }
}

/// How a node joins the cluster.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// The Kafka brokers (`host:port,...`).
    pub bootstrap_servers: String,
    /// Unique in the cluster, stable across restarts.
    pub node_id: u32,
    /// The host clients reach this node at.
    pub host: String,
    /// Partition `p` is served at `base_port + p`.
    pub base_port: u16,
    /// The log's topic; mastership uses `<topic>.masters`.
    pub topic: String,
    /// Log partitions: slot ranges (fixed when the topic is created).
    pub partitions: u32,
    /// Replicas of each topic partition when the node creates the topics.
    pub replication_factor: u32,
    /// How long a silent node keeps its partitions before the group gives them away
    /// (`session.timeout.ms`).
    pub node_timeout: Duration,
    /// The longest a write waits for Kafka before it fails.
    pub write_timeout: Duration,
    /// How long a write waits for others to share its produce request (`linger.ms`).
    pub linger: Duration,
}

impl NodeOptions {
    /// The topic whose group assignment names each partition's master.
    pub fn masters_topic(&self) -> String {
        format!("{}.masters", self.topic)
    }

    /// The compacted topic where nodes report their progress (see [`status`]).
    pub fn status_topic(&self) -> String {
        format!("{}.status", self.topic)
    }

    /// The topic of the cluster's store catalog (see [`crate::catalog`]).
    pub fn stores_topic(&self) -> String {
        format!("{}.stores", self.topic)
    }

    fn check(&self) -> Result<(), Error> {
        if self.partitions == 0 || self.partitions > u32::from(crate::slot::SLOTS) {
            return Err(Error::Config("cluster partitions must be 1 to 16384"));
        }
        if u32::from(self.base_port) + self.partitions > 65_536 {
            return Err(Error::Config("port + partitions must stay below 65536"));
        }
        if self.host.is_empty() || self.host.len() > 255 || self.host.contains('/') {
            return Err(Error::Config(
                "the announced host must be 1 to 255 bytes without '/'",
            ));
        }
        if self.topic.is_empty() {
            return Err(Error::Config("the cluster topic must not be empty"));
        }
        Ok(())
    }
}

/// Why a node could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(&'static str),
    #[error("Kafka: {0}")]
    Kafka(#[from] kafka::Error),
    #[error("topic {topic} has {found} partitions, the node is configured for {configured}")]
    PartitionCount {
        topic: String,
        found: u32,
        configured: u32,
    },
    #[error("the database holds the state of partition {0}, beyond the configured partitions")]
    ForeignState(u32),
    #[error("the database's stored log position does not decode: {0}")]
    State(DecodeError),
    #[error("the database: {0}")]
    Keyspace(#[from] rialto_keyspace::Error),
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
}

/// Why a write was not applied.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// This node is not the partition's master (or is handing it over).
    #[error("not the partition's master")]
    NotMaster,
    /// The record reached the log after another node's claim: no replica applied it.
    #[error("the partition's master changed before the write was applied")]
    Fenced,
    /// Kafka did not take the record; `written` says whether it may be in the log all the same.
    #[error("Kafka did not take the write: {error}")]
    Kafka {
        error: kafka::Error,
        written: Written,
    },
    /// No outcome within the write timeout (it may still be applied).
    #[error("no outcome within the write timeout")]
    TimedOut,
    /// The node stopped applying the log.
    #[error("the node is not applying the log: {0}")]
    Stopped(String),
}

/// A live member of the cluster, as the group coordinator lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub node: u32,
    pub host: String,
    pub base_port: u16,
}

/// What this node knows of the cluster.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Per partition: its master as the applied log says.
    pub masters: Vec<Option<Master>>,
    /// Per partition: the offset of the next record to apply.
    pub applied: Vec<u64>,
    /// Per partition: the log's end (high watermark) when last asked.
    pub high: Vec<u64>,
    /// Per partition: when the applier last had nothing left to apply.
    pub caught_up_at: Vec<Option<Instant>>,
    /// Live members, by node id.
    pub members: Vec<Member>,
    /// Every node's last reported progress, this one's included, by node id.
    pub peers: HashMap<u32, status::PeerStatus>,
    /// Why the applier stopped, if it did.
    pub failed: Option<String>,
}

type Reply<O> = oneshot::Sender<Result<(O, u64), WriteError>>;
/// Writes waiting for their outcome, by sequence number.
type PendingWrites<O> = Mutex<HashMap<u64, PendingWrite<O>>>;

/// A write sent and not yet applied, fenced or failed.
struct PendingWrite<O> {
    partition: u32,
    /// Its writer; `None` once the writer stopped waiting (the write may still apply).
    reply: Option<Reply<O>>,
    touches: Touches,
    sent: Instant,
}

/// The keys a write may change, as [`key_hash`]es (for a guarded write's check, see
/// [`Node::submit_guarded`]), or anything in its partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Touches {
    Keys(Vec<u64>),
    All,
}

impl Touches {
    fn meets(&self, keys: &[u64]) -> bool {
        match self {
            Touches::All => true,
            Touches::Keys(mine) => mine.iter().any(|k| keys.contains(k)),
        }
    }
}

/// A key's hash for [`Touches`]: equal keys, equal hashes, within this process.
pub fn key_hash(db: u8, key: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    db.hash(&mut h);
    key.hash(&mut h);
    h.finish()
}

/// Why a guarded write was not sent (see [`Node::submit_guarded`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Unsent {
    /// A write that may change a watched key is ahead of it, or the guard said no.
    Changed,
    /// A write of this node's to the partition failed without saying whether the log took it:
    /// until a later write of this node's is applied there, nothing is known of it.
    Unsettled,
}

struct Inner<M: StateMachine> {
    opts: NodeOptions,
    incarnation: u64,
    machine: M,
    keyspace: Arc<Keyspace>,
    producer: Producer,
    /// Next sequence number; held while a record is handed to the producer, so sequence
    /// numbers leave in send order.
    seq: Mutex<u64>,
    pending: PendingWrites<M::Output>,
    /// Per partition: the highest sequence number of a write of this node's whose fate is
    /// unknown (0: none), until a later one is applied.
    unsettled: Vec<AtomicU64>,
    /// Per partition: the epoch this node writes under, `u64::MAX` when it is not master.
    claimed: Vec<AtomicU64>,
    /// Per partition: whether the group gave it to this node.
    assigned: Vec<AtomicBool>,
    view: RwLock<View>,
    stop: AtomicBool,
    /// The cluster's store catalog as far as this node has read its topic.
    catalog: RwLock<CatalogState>,
    /// Whether the catalog has caught up with its topic since the node started.
    catalog_caught_up: AtomicBool,
    /// Pushed versions the applier waits for (store id, version).
    wanted: Mutex<std::collections::BTreeSet<(u32, u32)>>,
}

/// A running node. Dropping it stops it (see [`Node::stop`]).
pub struct Node<M: StateMachine> {
    inner: Arc<Inner<M>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl<M: StateMachine> Node<M> {
    /// Joins the cluster: creates the topics if they are missing, resumes every partition
    /// after its stored position, and starts competing for mastership.
    pub fn start(keyspace: Arc<Keyspace>, machine: M, opts: NodeOptions) -> Result<Self, Error> {
        opts.check()?;
        let client = client_options(&opts, "");
        let admin = Admin::new(&client)?;
        for topic in [opts.topic.clone(), opts.masters_topic()] {
            ensure_topic(&admin, &topic, &opts)?;
        }
        ensure_status_topic(&admin, &opts)?;
        ensure_stores_topic(&admin, &opts)?;
        let mut states = vec![PartitionState::default(); opts.partitions as usize];
        for (p, bytes) in keyspace.log_states()? {
            let s = states.get_mut(p as usize).ok_or(Error::ForeignState(p))?;
            *s = PartitionState::decode(&bytes).map_err(Error::State)?;
        }
        let mut popts = ProducerOptions::new(client_options(&opts, "/producer"));
        popts.delivery_timeout = opts.write_timeout;
        popts.linger = opts.linger;
        let producer = Producer::new(&popts)?;
        let consumer = kafka::PartitionConsumer::new(
            &client_options(&opts, "/applier"),
            &opts.topic,
            &states
                .iter()
                .enumerate()
                .map(|(p, s)| (p as u32, kafka::StartOffset::At(s.next)))
                .collect::<Vec<_>>(),
        )?;
        let n = opts.partitions as usize;
        let view = View {
            masters: states.iter().map(|s| s.master.clone()).collect(),
            applied: states.iter().map(|s| s.next).collect(),
            high: vec![0; n],
            caught_up_at: vec![None; n],
            members: Vec::new(),
            peers: HashMap::new(),
            failed: None,
        };
        let inner = Arc::new(Inner {
            incarnation: incarnation(),
            machine,
            keyspace,
            producer,
            seq: Mutex::new(0),
            pending: Mutex::new(HashMap::new()),
            unsettled: (0..n).map(|_| AtomicU64::new(0)).collect(),
            claimed: (0..n).map(|_| AtomicU64::new(u64::MAX)).collect(),
            assigned: (0..n).map(|_| AtomicBool::new(false)).collect(),
            view: RwLock::new(view),
            stop: AtomicBool::new(false),
            catalog: RwLock::new(CatalogState::default()),
            catalog_caught_up: AtomicBool::new(false),
            wanted: Mutex::new(Default::default()),
            opts,
        });
        let mut threads = Vec::new();
        let a = Arc::clone(&inner);
        threads.push(
            std::thread::Builder::new()
                .name("cluster-apply".into())
                .spawn(move || applier::run(a, consumer, states))
                .map_err(Error::Thread)?,
        );
        let st = Arc::clone(&inner);
        threads.push(
            std::thread::Builder::new()
                .name("cluster-status".into())
                .spawn(move || status::run(st))
                .map_err(Error::Thread)?,
        );
        let c = Arc::clone(&inner);
        threads.push(
            std::thread::Builder::new()
                .name("cluster-stores".into())
                .spawn(move || stores::run_catalog(c))
                .map_err(Error::Thread)?,
        );
        let l = Arc::clone(&inner);
        threads.push(
            std::thread::Builder::new()
                .name("cluster-load".into())
                .spawn(move || stores::run_loader(l))
                .map_err(Error::Thread)?,
        );
        let g = Arc::clone(&inner);
        let group = group::Group::new(&g.opts)?;
        threads.push(
            std::thread::Builder::new()
                .name("cluster-group".into())
                .spawn(move || group.run(g))
                .map_err(Error::Thread)?,
        );
        Ok(Node {
            inner,
            threads: Mutex::new(threads),
        })
    }

    /// The state machine the log's records run through.
    pub fn machine(&self) -> &M {
        &self.inner.machine
    }

    /// The options the node runs with.
    pub fn options(&self) -> &NodeOptions {
        &self.inner.opts
    }

    /// This run's incarnation: the masters the view names with it are this node.
    pub fn incarnation(&self) -> u64 {
        self.inner.incarnation
    }

    /// What the node knows of the cluster now.
    pub fn view(&self) -> View {
        self.inner.view.read().clone()
    }

    /// Partition `p`'s master as the applied log names it (without copying the whole view:
    /// routing asks on every redirection).
    pub fn master(&self, p: u32) -> Option<Master> {
        self.inner
            .view
            .read()
            .masters
            .get(p as usize)
            .cloned()
            .flatten()
    }

    /// Whether this node applies the log and was caught up with partition `p` within
    /// `max_lag` (asked on every replica read).
    pub fn caught_up_within(&self, p: u32, max_lag: Duration) -> bool {
        let v = self.inner.view.read();
        v.failed.is_none()
            && v.caught_up_at
                .get(p as usize)
                .copied()
                .flatten()
                .is_some_and(|t| t.elapsed() <= max_lag)
    }

    /// Whether this node writes partition `p` and has applied its own claim: everything
    /// the previous masters wrote is in its state, so its reads see every acknowledged write.
    pub fn serves_as_master(&self, p: u32) -> bool {
        let epoch = self
            .inner
            .claimed
            .get(p as usize)
            .map_or(u64::MAX, |c| c.load(Ordering::Acquire));
        epoch != u64::MAX && self.applied_past(p, epoch)
    }

    /// Runs `f` on the cluster's store catalog as this node has read it.
    pub fn with_catalog<T>(&self, f: impl FnOnce(&CatalogState) -> T) -> T {
        f(&self.inner.catalog.read())
    }

    /// Whether this node's catalog has caught up with its topic since the node started: before
    /// that it may lag far behind, and no partition is made to follow it.
    pub fn catalog_caught_up(&self) -> bool {
        self.inner.catalog_caught_up.load(Ordering::Acquire)
    }

    /// Appends a change request for store `name` to the catalog topic (blocking until Kafka
    /// holds it); its outcome appears in the catalog under the returned request number.
    pub fn propose(&self, name: &str, change: Change) -> Result<u64, kafka::Error> {
        stores::propose(&self.inner, name, change)
    }

    /// Creates the topic of version `version` of store `id`, with one partition per log
    /// partition.
    pub fn create_version_topic(&self, id: u32, version: u32) -> Result<(), Error> {
        let admin = Admin::new(&client_options(&self.inner.opts, "/admin"))?;
        let topic = crate::versions::topic(&self.inner.opts.topic, id, version);
        ensure_topic(&admin, &topic, &self.inner.opts)
    }

    /// Deletes the topic of version `version` of store `id` (a version no partition serves
    /// or can roll back to any more).
    pub fn delete_version_topic(&self, id: u32, version: u32) -> Result<(), Error> {
        let admin = Admin::new(&client_options(&self.inner.opts, "/admin"))?;
        let topic = crate::versions::topic(&self.inner.opts.topic, id, version);
        Ok(admin.delete_topic(&topic, Duration::from_secs(10))?)
    }

    /// Produces `payload` to partition `p` of `topic` (a version topic's records).
    pub fn produce(&self, topic: &str, p: u32, payload: &[u8]) -> Result<Delivery, kafka::Error> {
        self.inner.producer.send(topic, p, None, payload)
    }

    /// Node `node`'s last reported progress.
    pub fn peer(&self, node: u32) -> Option<status::PeerStatus> {
        self.inner.view.read().peers.get(&node).cloned()
    }

    /// Whether this node writes partition `p` now.
    pub fn is_master(&self, p: u32) -> bool {
        self.inner
            .claimed
            .get(p as usize)
            .is_some_and(|c| c.load(Ordering::Acquire) != u64::MAX)
    }

    /// Produces a write to partition `p`, which may change the keys `touches` names; the
    /// future resolves to the state machine's output and the record's offset once this node
    /// has applied it there, or to why it was not applied.
    pub fn submit(
        &self,
        p: u32,
        payload: &[u8],
        touches: Touches,
    ) -> Result<Submitted<M>, WriteError> {
        self.send(p, payload, touches, |_| {
            Ok::<(), std::convert::Infallible>(())
        })
        .map(|r| match r {
            Ok(s) => s,
            Err(never) => match never {},
        })
    }

    /// Produces a write to partition `p` only if no write this node sent there before it may
    /// have changed one of the keys `watched` (hashes, see [`key_hash`]) since the node applied
    /// its claim, and `guard` (asked last, in the order writes are sent) agrees. Every change
    /// ordered before the write is then either applied here, where `guard` sees it, or still
    /// on its way and named by its [`Touches`]: Redis's WATCH over the log.
    pub fn submit_guarded(
        &self,
        p: u32,
        payload: &[u8],
        touches: Touches,
        watched: &[u64],
        guard: impl FnOnce() -> bool,
    ) -> Result<Result<Submitted<M>, Unsent>, WriteError> {
        self.send(p, payload, touches, |claim_applied| {
            // The previous master's records up to the claim may not be applied yet.
            if !claim_applied {
                return Err(Unsent::Changed);
            }
            // The writes ahead are looked at before the guard: one applied in between
            // leaves the pending set only after its changes are visible to the guard.
            if let Some(why) = self.inner.ahead_of(p, watched) {
                return Err(why);
            }
            if !guard() {
                return Err(Unsent::Changed);
            }
            Ok(())
        })
    }

    /// Sends a write to `p` if `check` (told whether this node applied its claim, and asked
    /// in the order writes are sent) agrees.
    fn send<E>(
        &self,
        p: u32,
        payload: &[u8],
        touches: Touches,
        check: impl FnOnce(bool) -> Result<(), E>,
    ) -> Result<Result<Submitted<M>, E>, WriteError> {
        let inner = &self.inner;
        let epoch = inner
            .claimed
            .get(p as usize)
            .map(|c| c.load(Ordering::Acquire))
            .unwrap_or(u64::MAX);
        if epoch == u64::MAX {
            return Err(WriteError::NotMaster);
        }
        let claim_applied = {
            let v = inner.view.read();
            if let Some(f) = &v.failed {
                return Err(WriteError::Stopped(f.clone()));
            }
            v.applied.get(p as usize).is_some_and(|&next| next > epoch)
        };
        let (tx, rx) = oneshot::channel();
        let mut next = inner.seq.lock();
        if let Err(e) = check(claim_applied) {
            return Ok(Err(e));
        }
        *next += 1;
        let seq = *next;
        inner.pending.lock().insert(
            seq,
            PendingWrite {
                partition: p,
                reply: Some(tx),
                touches,
                sent: Instant::now(),
            },
        );
        let rec = record::write(epoch, inner.incarnation, seq, payload);
        match inner.producer.send(&inner.opts.topic, p, None, &rec) {
            Ok(delivery) => {
                drop(next);
                Ok(Ok(Submitted {
                    inner: Arc::clone(inner),
                    seq,
                    rx,
                    delivery: Some(delivery),
                }))
            }
            Err(error) => {
                inner.pending.lock().remove(&seq);
                Err(WriteError::Kafka {
                    error,
                    written: Written::No,
                })
            }
        }
    }

    /// Whether this node has applied partition `p` past `offset` (a replica's read-your-writes:
    /// the offset a master returned for a write).
    pub fn applied_past(&self, p: u32, offset: u64) -> bool {
        self.inner
            .view
            .read()
            .applied
            .get(p as usize)
            .is_some_and(|&next| next > offset)
    }

    /// Stops the node: leaves the group (so its partitions move at once), stops applying and
    /// fails the writes still waiting.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Release);
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        let _ = self.inner.producer.flush(Duration::from_secs(1));
        for (_, w) in self.inner.pending.lock().drain() {
            if let Some(reply) = w.reply {
                let _ = reply.send(Err(WriteError::Stopped("the node stopped".into())));
            }
        }
    }
}

impl<M: StateMachine> Drop for Node<M> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<M: StateMachine> Inner<M> {
    /// Fails every write of partition `p` still waiting: another claim is in force, so none
    /// of them can be applied any more.
    fn fail_pending(&self, p: u32) {
        let mut pending = self.pending.lock();
        let seqs: Vec<u64> = pending
            .iter()
            .filter(|(_, w)| w.partition == p)
            .map(|(s, _)| *s)
            .collect();
        for s in seqs {
            if let Some(reply) = pending.remove(&s).and_then(|w| w.reply) {
                let _ = reply.send(Err(WriteError::Fenced));
            }
        }
        self.unsettled[p as usize].store(0, Ordering::Release);
    }

    /// Why a guarded write to `p` watching `watched` must not go: a write of this node's ahead
    /// of it may change a watched key, or one's fate is unknown.
    fn ahead_of(&self, p: u32, watched: &[u64]) -> Option<Unsent> {
        self.give_up_stale();
        let changed = self
            .pending
            .lock()
            .values()
            .any(|w| w.partition == p && w.touches.meets(watched));
        if self.unsettled[p as usize].load(Ordering::Acquire) != 0 {
            Some(Unsent::Unsettled)
        } else if changed {
            Some(Unsent::Changed)
        } else {
            None
        }
    }

    /// Forgets the writes whose writer stopped waiting and that stayed unresolved past twice
    /// the write timeout (their delivery reports went with their writers); each leaves its
    /// partition unsettled.
    fn give_up_stale(&self) {
        let stale = self.opts.write_timeout * 2;
        self.pending.lock().retain(|&seq, w| {
            let gone = w.reply.is_none() && w.sent.elapsed() > stale;
            if gone {
                self.unsettled[w.partition as usize].fetch_max(seq, Ordering::AcqRel);
            }
            !gone
        });
    }

    /// A write of this node's to `p` applied with sequence number `seq`: the writes before it
    /// whose fate was unknown are settled (a producer's records reach a partition in order).
    fn settled(&self, p: u32, seq: u64) {
        let u = &self.unsettled[p as usize];
        let was = u.load(Ordering::Acquire);
        if was != 0 && seq > was {
            let _ = u.compare_exchange(was, 0, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

/// A write on its way (see [`Node::submit`]). Every write resolves: applied, fenced, refused by
/// Kafka (at the latest after the write timeout), or failed when the node stops — unless the
/// applier stalls, so waiters bound their wait (the write timeout).
pub struct Submitted<M: StateMachine> {
    inner: Arc<Inner<M>>,
    seq: u64,
    rx: oneshot::Receiver<Result<(M::Output, u64), WriteError>>,
    delivery: Option<Delivery>,
}

impl<M: StateMachine> Submitted<M> {
    /// Blocks until the outcome is known, at most the node's write timeout.
    pub fn wait(self) -> Result<(M::Output, u64), WriteError> {
        let deadline = Instant::now() + self.inner.opts.write_timeout;
        crate::kafka::block_on::block_on_until(self, deadline).unwrap_or(Err(WriteError::TimedOut))
    }
}

impl<M: StateMachine> Future for Submitted<M> {
    type Output = Result<(M::Output, u64), WriteError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(r) = Pin::new(&mut self.rx).poll(cx) {
            return Poll::Ready(
                r.unwrap_or_else(|_| Err(WriteError::Stopped("the node stopped".into()))),
            );
        }
        if let Some(d) = self.delivery.as_mut() {
            if let Poll::Ready(r) = Pin::new(d).poll(cx) {
                self.delivery = None;
                if let Err(e) = r {
                    if let Some(w) = self.inner.pending.lock().remove(&self.seq) {
                        if e.written != Written::No || !matches!(e.error, kafka::Error::QueueFull) {
                            self.inner.unsettled[w.partition as usize]
                                .fetch_max(self.seq, Ordering::AcqRel);
                        }
                    }
                    // librdkafka judges "not written" by the last attempt alone; an earlier
                    // attempt may sit in the leader's log uncommitted and be committed later
                    // (a follower's death under an in-flight write). Once the record left
                    // for Kafka, only "maybe" is honest.
                    let written = if matches!(e.error, kafka::Error::QueueFull) {
                        e.written
                    } else {
                        Written::Maybe
                    };
                    return Poll::Ready(Err(WriteError::Kafka {
                        error: e.error,
                        written,
                    }));
                }
            }
        }
        Poll::Pending
    }
}

impl<M: StateMachine> Drop for Submitted<M> {
    /// The write stays known as pending (it may still apply and change its keys); only its
    /// writer is gone.
    fn drop(&mut self) {
        if let Some(w) = self.inner.pending.lock().get_mut(&self.seq) {
            w.reply = None;
        }
    }
}

fn client_options(opts: &NodeOptions, role: &str) -> ClientOptions {
    let mut c = ClientOptions::new(opts.bootstrap_servers.clone());
    c.client_id = format!(
        "rialto-node/{}/{}/{}{role}",
        opts.node_id, opts.host, opts.base_port
    );
    c
}

fn ensure_topic(admin: &Admin, topic: &str, opts: &NodeOptions) -> Result<(), Error> {
    let timeout = Duration::from_secs(10);
    match admin.create_topic(topic, opts.partitions, opts.replication_factor, timeout) {
        Ok(()) | Err(kafka::Error::TopicAlreadyExists) => {}
        Err(e) => return Err(e.into()),
    }
    // A topic just created reaches the brokers' metadata a moment later.
    let deadline = Instant::now() + timeout;
    let found = loop {
        match admin.partition_count(topic, timeout) {
            Err(kafka::Error::UnknownTopicOrPartition) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
            }
            r => break r?,
        }
    };
    if found != opts.partitions {
        return Err(Error::PartitionCount {
            topic: topic.to_owned(),
            found,
            configured: opts.partitions,
        });
    }
    Ok(())
}

/// Creates the status topic if missing: one partition, compacted (a node's last report is
/// all that matters).
fn ensure_status_topic(admin: &Admin, opts: &NodeOptions) -> Result<(), Error> {
    let topic = opts.status_topic();
    let configs = [
        ("cleanup.policy", "compact"),
        ("min.compaction.lag.ms", "60000"),
    ];
    match admin.create_topic_with(
        &topic,
        1,
        opts.replication_factor,
        &configs,
        Duration::from_secs(10),
    ) {
        Ok(()) | Err(kafka::Error::TopicAlreadyExists) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Creates the store catalog's topic if missing: one partition, kept forever (a node reads
/// it from its start to rebuild the catalog; it holds a few records per store change).
fn ensure_stores_topic(admin: &Admin, opts: &NodeOptions) -> Result<(), Error> {
    let configs = [("retention.ms", "-1"), ("retention.bytes", "-1")];
    match admin.create_topic_with(
        &opts.stores_topic(),
        1,
        opts.replication_factor,
        &configs,
        Duration::from_secs(10),
    ) {
        Ok(()) | Err(kafka::Error::TopicAlreadyExists) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A number no earlier run of this node used: the clock's nanoseconds mixed with the
/// process id.
fn incarnation() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 48)
}
