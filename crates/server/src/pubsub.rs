//! Pub/sub: the hub every connection thread shares (channels and patterns → subscribers) and
//! each subscriber's mailbox, a bounded queue its connection drains.
//!
//! A publisher walks the subscribers under the hub's read lock and appends the message to
//! each mailbox, then wakes its connection; the connection writes what its mailbox holds
//! between replies, or at once when idle (its loop waits on the mailbox as well as the
//! socket). One publisher's messages reach every subscriber in publish order: its PUBLISHes
//! run one after the other and each mailbox is FIFO. Messages of concurrent publishers may
//! interleave differently at different subscribers.
//!
//! Bounds: a mailbox counts the bytes it holds; over `client-output-buffer-limit pubsub`'s
//! hard limit, or over its soft limit for its soft seconds, the subscriber is disconnected
//! and its queue dropped, as Redis closes a pub/sub client over the same limit. Memory is
//! never unbounded whatever a subscriber's reading speed.
//!
//! Client-side caching's invalidations ([`crate::tracking`]) use the same mailboxes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use parking_lot::{Mutex, RwLock};
use rialto_resp::{Protocol, Reply};
use tokio::sync::Notify;
use tracing::warn;

use crate::client::ClientHandle;
use crate::glob::GlobPattern;

/// The channel RESP2 clients subscribe to for the invalidations they are redirected.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// Bytes a queued item is counted for beyond its payload (framing, bookkeeping).
const ITEM_OVERHEAD: usize = 64;

/// `client-output-buffer-limit` for one class of clients: 0 disables a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObufLimit {
    pub hard: usize,
    pub soft: usize,
    pub soft_secs: u64,
}

impl ObufLimit {
    /// Redis's default for pub/sub clients: `32mb 8mb 60`.
    pub const PUBSUB_DEFAULT: ObufLimit = ObufLimit {
        hard: 32 << 20,
        soft: 8 << 20,
        soft_secs: 60,
    };
}

/// One out-of-band item for a connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `message` (or `smessage` for a shard channel).
    Message {
        shard: bool,
        channel: Bytes,
        payload: Bytes,
    },
    /// `pmessage`.
    PMessage {
        pattern: Bytes,
        channel: Bytes,
        payload: Bytes,
    },
    /// Client-side caching: these keys (`None`: every key, after a flush) may have changed.
    Invalidate(Option<Vec<Bytes>>),
    /// Client-side caching: the client invalidations were redirected to (this id) is gone.
    RedirBroken(u64),
    /// MONITOR: one executed command, as the line Redis sends (without `+` and CRLF).
    Monitor(Bytes),
}

impl Item {
    fn size(&self) -> usize {
        ITEM_OVERHEAD
            + match self {
                Item::Message {
                    channel, payload, ..
                } => channel.len() + payload.len(),
                Item::PMessage {
                    pattern,
                    channel,
                    payload,
                } => pattern.len() + channel.len() + payload.len(),
                Item::Invalidate(keys) => keys
                    .as_ref()
                    .map_or(0, |k| k.iter().map(|k| k.len() + 16).sum()),
                Item::RedirBroken(_) => 0,
                Item::Monitor(line) => line.len(),
            }
    }

    /// The item as a connection speaking `proto` receives it: a push in RESP3; in RESP2 an
    /// array, invalidations as a `message` of [`INVALIDATE_CHANNEL`] (RESP2 clients only get
    /// them redirected, subscribed to that channel). `None`: nothing to send in `proto`.
    pub fn to_reply(&self, proto: Protocol) -> Option<Reply> {
        Some(match self {
            Item::Message {
                shard,
                channel,
                payload,
            } => Reply::Push(vec![
                Reply::Bulk(Bytes::from_static(if *shard {
                    b"smessage"
                } else {
                    b"message"
                })),
                Reply::Bulk(channel.clone()),
                Reply::Bulk(payload.clone()),
            ]),
            Item::PMessage {
                pattern,
                channel,
                payload,
            } => Reply::Push(vec![
                Reply::Bulk(Bytes::from_static(b"pmessage")),
                Reply::Bulk(pattern.clone()),
                Reply::Bulk(channel.clone()),
                Reply::Bulk(payload.clone()),
            ]),
            Item::Invalidate(keys) => {
                let keys = match keys {
                    Some(k) => Reply::Array(k.iter().cloned().map(Reply::Bulk).collect()),
                    None => Reply::Null,
                };
                match proto {
                    Protocol::Resp3 => {
                        Reply::Push(vec![Reply::Bulk(Bytes::from_static(b"invalidate")), keys])
                    }
                    Protocol::Resp2 => Reply::Push(vec![
                        Reply::Bulk(Bytes::from_static(b"message")),
                        Reply::Bulk(Bytes::from_static(INVALIDATE_CHANNEL)),
                        keys,
                    ]),
                }
            }
            Item::RedirBroken(id) => match proto {
                Protocol::Resp3 => Reply::Push(vec![
                    Reply::Bulk(Bytes::from_static(b"tracking-redir-broken")),
                    Reply::Integer(*id as i64),
                ]),
                Protocol::Resp2 => return None,
            },
            // A status line in both protocols, as Redis sends it.
            Item::Monitor(line) => Reply::Simple(line.clone()),
        })
    }
}

/// Which limit class an item counts for, in the log line of a client cut off.
enum ItemKind {
    Monitor,
    Other,
}

/// What one connection is subscribed to.
#[derive(Default)]
struct Subs {
    channels: HashSet<Bytes>,
    /// In subscription order, as Redis keeps them.
    patterns: Vec<Bytes>,
    shard: HashSet<Bytes>,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    bytes: usize,
    /// Of `bytes`, what every client's memory total holds (see [`MAIL_REPORT_STEP`]).
    reported: usize,
    /// Since when the queue has been over the soft limit.
    over_soft_since: Option<Instant>,
    /// Over a limit: the connection is being closed, nothing more is queued.
    closed: bool,
}

/// The mailbox reports its bytes to every client's memory total (`maxmemory-clients`) once
/// they moved this far from what it last reported: a message that is delivered and taken at
/// once touches only the subscriber's own counter, not the total every publisher shares.
pub const MAIL_REPORT_STEP: usize = 64 * 1024;

impl Queue {
    /// Mirrors `bytes` into the client's counters after a change.
    fn account(&mut self, handle: &ClientHandle) {
        handle.set_mail(self.bytes as u64);
        let moved = self.bytes.abs_diff(self.reported);
        if moved >= MAIL_REPORT_STEP || (self.bytes == 0 && moved > 0) {
            handle.add_to_total(self.bytes as i64 - self.reported as i64);
            self.reported = self.bytes;
        }
    }
}

/// A connection's mailbox: its subscriptions and the items waiting for it.
pub struct Mailbox {
    handle: Arc<ClientHandle>,
    queue: Mutex<Queue>,
    subs: Mutex<Subs>,
    notify: Notify,
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        // What never reached the client no longer counts as its memory.
        let q = self.queue.get_mut();
        q.bytes = 0;
        q.account(&self.handle);
    }
}

impl Mailbox {
    /// The client's id.
    pub fn id(&self) -> u64 {
        self.handle.id
    }

    /// The client's shared state.
    pub fn handle(&self) -> &Arc<ClientHandle> {
        &self.handle
    }

    /// Resolves once an item may be waiting (a permit is kept if none waits).
    pub async fn ready(&self) {
        self.notify.notified().await;
    }

    /// Appends `item`; over `limit` the client is disconnected instead. `false` when the item
    /// was dropped (the client is over its limit and closing).
    pub fn deliver(&self, item: Item, limit: ObufLimit) -> bool {
        let mut q = self.queue.lock();
        if q.closed {
            return false;
        }
        let item_kind = match item {
            Item::Monitor(_) => ItemKind::Monitor,
            _ => ItemKind::Other,
        };
        let size = item.size();
        q.bytes += size;
        q.account(&self.handle);
        q.items.push_back(item);
        let over_hard = limit.hard != 0 && q.bytes > limit.hard;
        let over_soft = limit.soft != 0 && q.bytes > limit.soft;
        let soft_expired = if over_soft {
            let since = *q.over_soft_since.get_or_insert_with(Instant::now);
            since.elapsed() >= Duration::from_secs(limit.soft_secs)
        } else {
            q.over_soft_since = None;
            false
        };
        if over_hard || soft_expired {
            let class = if matches!(item_kind, ItemKind::Monitor) {
                "normal (monitor)"
            } else {
                "pubsub"
            };
            warn!(
                client = self.handle.id,
                bytes = q.bytes,
                class,
                "closing client that reached client-output-buffer-limit"
            );
            q.closed = true;
            q.items.clear();
            q.bytes = 0;
            q.account(&self.handle);
            drop(q);
            self.handle.kill();
            return false;
        }
        drop(q);
        self.notify.notify_one();
        true
    }

    /// Takes every waiting item, oldest first.
    pub fn take(&self) -> VecDeque<Item> {
        let mut q = self.queue.lock();
        q.bytes = 0;
        q.account(&self.handle);
        q.over_soft_since = None;
        std::mem::take(&mut q.items)
    }

    /// Bytes waiting.
    pub fn queued_bytes(&self) -> usize {
        self.queue.lock().bytes
    }

    /// Channels and patterns subscribed (the count subscribe replies report), and shard
    /// channels.
    pub fn counts(&self) -> (usize, usize) {
        let s = self.subs.lock();
        (s.channels.len() + s.patterns.len(), s.shard.len())
    }

    /// Whether the connection is subscribed to anything.
    pub fn subscribed(&self) -> bool {
        let (n, s) = self.counts();
        n + s > 0
    }

    fn publish_counts(&self) {
        let s = self.subs.lock();
        let h = &self.handle;
        h.sub.store(s.channels.len(), Ordering::Relaxed);
        h.psub.store(s.patterns.len(), Ordering::Relaxed);
        h.ssub.store(s.shard.len(), Ordering::Relaxed);
    }
}

/// Which subscription table a command works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn confirm(self, subscribe: bool) -> &'static [u8] {
        match (self, subscribe) {
            (Kind::Channel, true) => b"subscribe",
            (Kind::Channel, false) => b"unsubscribe",
            (Kind::Pattern, true) => b"psubscribe",
            (Kind::Pattern, false) => b"punsubscribe",
            (Kind::Shard, true) => b"ssubscribe",
            (Kind::Shard, false) => b"sunsubscribe",
        }
    }
}

struct PatternSubs {
    glob: GlobPattern,
    who: Vec<Arc<Mailbox>>,
}

#[derive(Default)]
struct Tables {
    channels: HashMap<Bytes, Vec<Arc<Mailbox>>>,
    patterns: HashMap<Bytes, PatternSubs>,
    shard: HashMap<Bytes, Vec<Arc<Mailbox>>>,
}

/// The hub: every subscription of every connection, and every mailbox by client id.
#[derive(Default)]
pub struct Hub {
    tables: RwLock<Tables>,
    mailboxes: Mutex<HashMap<u64, Arc<Mailbox>>>,
    /// Patterns in `tables.patterns`: zero lets PUBLISH skip the pattern walk.
    npatterns: AtomicUsize,
}

/// A subscribe-family confirmation: `[kind, channel or nil, count]`.
fn confirmation(kind: &'static [u8], channel: Option<Bytes>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::Bulk(Bytes::from_static(kind)),
        channel.map_or(Reply::Null, Reply::Bulk),
        Reply::Integer(count as i64),
    ])
}

fn remove_from(list: &mut Vec<Arc<Mailbox>>, id: u64) {
    list.retain(|m| m.id() != id);
}

impl Hub {
    /// The mailbox of client `handle`, made and registered on first use.
    pub fn mailbox(&self, handle: &Arc<ClientHandle>) -> Arc<Mailbox> {
        let mut all = self.mailboxes.lock();
        Arc::clone(all.entry(handle.id).or_insert_with(|| {
            Arc::new(Mailbox {
                handle: Arc::clone(handle),
                queue: Mutex::default(),
                subs: Mutex::default(),
                notify: Notify::new(),
            })
        }))
    }

    /// The mailbox of client `id`, if it has one.
    pub fn mailbox_of(&self, id: u64) -> Option<Arc<Mailbox>> {
        self.mailboxes.lock().get(&id).cloned()
    }

    /// Subscribes `mb` to each of `names`; the confirmations, in order.
    pub fn subscribe(&self, mb: &Arc<Mailbox>, kind: Kind, names: &[Bytes]) -> Vec<Reply> {
        let mut out = Vec::with_capacity(names.len());
        let mut t = self.tables.write();
        for name in names {
            let mut s = mb.subs.lock();
            let added = match kind {
                Kind::Channel => s.channels.insert(name.clone()),
                Kind::Shard => s.shard.insert(name.clone()),
                Kind::Pattern if s.patterns.contains(name) => false,
                Kind::Pattern => {
                    s.patterns.push(name.clone());
                    true
                }
            };
            if added {
                let list = match kind {
                    Kind::Channel => t.channels.entry(name.clone()).or_default(),
                    Kind::Shard => t.shard.entry(name.clone()).or_default(),
                    Kind::Pattern => {
                        let p = t.patterns.entry(name.clone()).or_insert_with(|| {
                            self.npatterns.fetch_add(1, Ordering::Release);
                            PatternSubs {
                                glob: GlobPattern::new(name, false),
                                who: Vec::new(),
                            }
                        });
                        &mut p.who
                    }
                };
                list.push(Arc::clone(mb));
            }
            out.push(confirmation(
                kind.confirm(true),
                Some(name.clone()),
                count(&s, kind),
            ));
        }
        drop(t);
        mb.publish_counts();
        out
    }

    /// Unsubscribes `mb` from each of `names` (every subscription of `kind` when empty); the
    /// confirmations, in order. With nothing to unsubscribe from, Redis's one confirmation
    /// with a nil channel.
    pub fn unsubscribe(&self, mb: &Mailbox, kind: Kind, names: &[Bytes]) -> Vec<Reply> {
        let names: Vec<Bytes> = if names.is_empty() {
            let s = mb.subs.lock();
            match kind {
                Kind::Channel => s.channels.iter().cloned().collect(),
                Kind::Pattern => s.patterns.clone(),
                Kind::Shard => s.shard.iter().cloned().collect(),
            }
        } else {
            names.to_vec()
        };
        let mut out = Vec::with_capacity(names.len().max(1));
        let mut t = self.tables.write();
        for name in &names {
            let mut s = mb.subs.lock();
            let removed = match kind {
                Kind::Channel => s.channels.remove(name),
                Kind::Shard => s.shard.remove(name),
                Kind::Pattern => match s.patterns.iter().position(|p| p == name) {
                    Some(i) => {
                        s.patterns.remove(i);
                        true
                    }
                    None => false,
                },
            };
            if removed {
                self.drop_entry(&mut t, kind, name, mb.id());
            }
            out.push(confirmation(
                kind.confirm(false),
                Some(name.clone()),
                count(&s, kind),
            ));
        }
        drop(t);
        if out.is_empty() {
            let s = mb.subs.lock();
            out.push(confirmation(kind.confirm(false), None, count(&s, kind)));
        }
        mb.publish_counts();
        out
    }

    fn drop_entry(&self, t: &mut Tables, kind: Kind, name: &Bytes, id: u64) {
        match kind {
            Kind::Channel | Kind::Shard => {
                let map = if kind == Kind::Channel {
                    &mut t.channels
                } else {
                    &mut t.shard
                };
                if let Some(list) = map.get_mut(name) {
                    remove_from(list, id);
                    if list.is_empty() {
                        map.remove(name);
                    }
                }
            }
            Kind::Pattern => {
                if let Some(p) = t.patterns.get_mut(name) {
                    remove_from(&mut p.who, id);
                    if p.who.is_empty() {
                        t.patterns.remove(name);
                        self.npatterns.fetch_sub(1, Ordering::Release);
                    }
                }
            }
        }
    }

    /// Forgets client `id`: every subscription and its mailbox (the connection closed or
    /// was reset).
    pub fn remove_client(&self, id: u64) {
        let Some(mb) = self.mailboxes.lock().remove(&id) else {
            return;
        };
        self.unsubscribe_all(&mb);
    }

    /// Unsubscribes `mb` from everything, without confirmations (RESET, close).
    pub fn unsubscribe_all(&self, mb: &Mailbox) {
        let subs = std::mem::take(&mut *mb.subs.lock());
        let mut t = self.tables.write();
        for c in &subs.channels {
            self.drop_entry(&mut t, Kind::Channel, c, mb.id());
        }
        for p in &subs.patterns {
            self.drop_entry(&mut t, Kind::Pattern, p, mb.id());
        }
        for c in &subs.shard {
            self.drop_entry(&mut t, Kind::Shard, c, mb.id());
        }
        drop(t);
        mb.publish_counts();
    }

    /// Sends `payload` to every subscriber of `channel` and of every pattern matching it;
    /// how many subscriptions received it (Redis's PUBLISH reply).
    pub fn publish(&self, channel: &Bytes, payload: &Bytes, limit: ObufLimit) -> usize {
        let t = self.tables.read();
        let mut n = 0;
        if let Some(list) = t.channels.get(channel) {
            for mb in list {
                mb.deliver(
                    Item::Message {
                        shard: false,
                        channel: channel.clone(),
                        payload: payload.clone(),
                    },
                    limit,
                );
                n += 1;
            }
        }
        if self.npatterns.load(Ordering::Acquire) != 0 {
            for (pattern, p) in &t.patterns {
                if !p.glob.matches(channel) {
                    continue;
                }
                for mb in &p.who {
                    mb.deliver(
                        Item::PMessage {
                            pattern: pattern.clone(),
                            channel: channel.clone(),
                            payload: payload.clone(),
                        },
                        limit,
                    );
                    n += 1;
                }
            }
        }
        n
    }

    /// SPUBLISH: the subscribers of shard channel `channel` only.
    pub fn publish_shard(&self, channel: &Bytes, payload: &Bytes, limit: ObufLimit) -> usize {
        let t = self.tables.read();
        let Some(list) = t.shard.get(channel) else {
            return 0;
        };
        for mb in list {
            mb.deliver(
                Item::Message {
                    shard: true,
                    channel: channel.clone(),
                    payload: payload.clone(),
                },
                limit,
            );
        }
        list.len()
    }

    /// Whether anyone is subscribed to `channel` itself (not through a pattern).
    pub fn has_subscribers(&self, channel: &[u8]) -> bool {
        self.tables.read().channels.contains_key(channel)
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS: active channels, matching `pattern` if given.
    pub fn channels(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let t = self.tables.read();
        let glob = pattern.map(|p| GlobPattern::new(p, false));
        let map = if shard { &t.shard } else { &t.channels };
        map.keys()
            .filter(|c| glob.as_ref().is_none_or(|g| g.matches(c)))
            .cloned()
            .collect()
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: subscribers of `channel`.
    pub fn numsub(&self, shard: bool, channel: &[u8]) -> usize {
        let t = self.tables.read();
        let map = if shard { &t.shard } else { &t.channels };
        map.get(channel).map_or(0, Vec::len)
    }

    /// Distinct patterns subscribed (PUBSUB NUMPAT, INFO's `pubsub_patterns`).
    pub fn numpat(&self) -> usize {
        self.npatterns.load(Ordering::Acquire)
    }

    /// Active channels (INFO's `pubsub_channels`) and shard channels.
    pub fn numchannels(&self) -> (usize, usize) {
        let t = self.tables.read();
        (t.channels.len(), t.shard.len())
    }
}

impl Hub {
    /// After an ACL change: kills every subscribed client whose user is gone or may no longer
    /// subscribe to one of its channels or patterns, as Redis 7.0 does (a subscriber that
    /// sends nothing would otherwise keep receiving what it is no longer allowed to).
    pub fn enforce_acl(&self, acl: &crate::acl::Acl) {
        let all: Vec<Arc<Mailbox>> = self.mailboxes.lock().values().cloned().collect();
        for mb in all {
            let user = mb.handle.info.lock().user.clone();
            let s = mb.subs.lock();
            if s.channels.is_empty() && s.patterns.is_empty() && s.shard.is_empty() {
                continue;
            }
            let allowed = acl.user(user.as_bytes()).is_some_and(|u| {
                s.channels
                    .iter()
                    .chain(&s.shard)
                    .all(|c| u.channel_allowed(c, false))
                    && s.patterns.iter().all(|p| u.channel_allowed(p, true))
            });
            drop(s);
            if !allowed {
                mb.handle.kill();
            }
        }
    }
}

fn count(s: &Subs, kind: Kind) -> usize {
    match kind {
        Kind::Shard => s.shard.len(),
        _ => s.channels.len() + s.patterns.len(),
    }
}

/// Appends what `mb` holds to `out`, as `proto` sends it.
pub fn drain_into(mb: &Mailbox, proto: Protocol, out: &mut BytesMut) {
    for item in mb.take() {
        if let Some(r) = item.to_reply(proto) {
            r.encode(proto, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Clients;
    use std::sync::atomic::Ordering;

    fn addr() -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], 1))
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn count_of(r: &Reply) -> i64 {
        match r {
            Reply::Push(v) => match v.last() {
                Some(Reply::Integer(n)) => *n,
                _ => -1,
            },
            _ => -1,
        }
    }

    const UNLIMITED: ObufLimit = ObufLimit {
        hard: 0,
        soft: 0,
        soft_secs: 0,
    };

    #[test]
    fn subscribe_counts_channels_and_patterns_together_and_shards_apart() {
        let clients = Clients::default();
        let hub = Hub::default();
        let h = clients.register(addr(), addr(), -1, "default");
        let mb = hub.mailbox(&h);
        let r = hub.subscribe(&mb, Kind::Channel, &[b("a"), b("b"), b("a")]);
        assert_eq!(r.iter().map(count_of).collect::<Vec<_>>(), vec![1, 2, 2]);
        let r = hub.subscribe(&mb, Kind::Pattern, &[b("x*")]);
        assert_eq!(count_of(&r[0]), 3);
        let r = hub.subscribe(&mb, Kind::Shard, &[b("s")]);
        assert_eq!(count_of(&r[0]), 1);
        assert_eq!(
            (
                h.sub.load(Ordering::Relaxed),
                h.psub.load(Ordering::Relaxed)
            ),
            (2, 1)
        );
        let r = hub.unsubscribe(&mb, Kind::Channel, &[]);
        assert_eq!(r.len(), 2);
        assert_eq!(count_of(&r[1]), 1, "the pattern is still counted");
        let r = hub.unsubscribe(&mb, Kind::Channel, &[]);
        assert_eq!(
            r,
            vec![Reply::Push(vec![
                Reply::Bulk(b("unsubscribe")),
                Reply::Null,
                Reply::Integer(1)
            ])]
        );
        assert_eq!(hub.numchannels(), (0, 1));
    }

    #[test]
    fn publish_reaches_channel_and_pattern_subscribers_in_order() {
        let clients = Clients::default();
        let hub = Hub::default();
        let (h1, h2) = (
            clients.register(addr(), addr(), -1, "default"),
            clients.register(addr(), addr(), -1, "default"),
        );
        let (m1, m2) = (hub.mailbox(&h1), hub.mailbox(&h2));
        hub.subscribe(&m1, Kind::Channel, &[b("news")]);
        hub.subscribe(&m2, Kind::Pattern, &[b("n*"), b("*s")]);
        assert_eq!(hub.numpat(), 2);
        for i in 0..3 {
            assert_eq!(hub.publish(&b("news"), &b(&i.to_string()), UNLIMITED), 3);
        }
        assert_eq!(hub.publish(&b("other"), &b("x"), UNLIMITED), 0);
        assert_eq!(hub.publish_shard(&b("news"), &b("x"), UNLIMITED), 0);
        let got: Vec<Bytes> = m1
            .take()
            .into_iter()
            .map(|i| match i {
                Item::Message { payload, .. } => payload,
                _ => Bytes::new(),
            })
            .collect();
        assert_eq!(got, vec![b("0"), b("1"), b("2")]);
        assert_eq!(m2.take().len(), 6);
        let mut out = BytesMut::new();
        hub.publish(&b("news"), &b("z"), UNLIMITED);
        drain_into(&m1, Protocol::Resp2, &mut out);
        assert_eq!(
            &out[..],
            b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$1\r\nz\r\n"
        );
        out.clear();
        drain_into(&m2, Protocol::Resp3, &mut out);
        assert!(out.starts_with(b">4\r\n$8\r\npmessage\r\n"));
        assert_eq!(hub.channels(false, Some(b"n*")), vec![b("news")]);
        assert_eq!(hub.numsub(false, b"news"), 1);
    }

    #[test]
    fn a_mailbox_over_its_hard_limit_drops_everything_and_kills_its_client() {
        let clients = Clients::default();
        let hub = Hub::default();
        let h = clients.register(addr(), addr(), -1, "default");
        let mb = hub.mailbox(&h);
        hub.subscribe(&mb, Kind::Channel, &[b("c")]);
        let limit = ObufLimit {
            hard: 10_000,
            soft: 0,
            soft_secs: 0,
        };
        let payload = Bytes::from(vec![b'x'; 1000]);
        let mut accepted = 0;
        for _ in 0..100 {
            hub.publish(&b("c"), &payload, limit);
            accepted += 1;
            if h.killed.load(Ordering::Acquire) {
                break;
            }
        }
        assert!(accepted < 12, "{accepted}");
        assert_eq!(mb.queued_bytes(), 0);
        assert!(!mb.deliver(Item::Invalidate(None), limit));
        assert!(mb.take().is_empty());
    }

    #[test]
    fn a_mailbox_over_its_soft_limit_for_its_seconds_is_killed() {
        let clients = Clients::default();
        let hub = Hub::default();
        let h = clients.register(addr(), addr(), -1, "default");
        let mb = hub.mailbox(&h);
        let soft_now = ObufLimit {
            hard: 0,
            soft: 500,
            soft_secs: 0,
        };
        let lenient = ObufLimit {
            soft_secs: 3600,
            ..soft_now
        };
        let big = || Item::Invalidate(Some(vec![Bytes::from(vec![b'k'; 600])]));
        assert!(mb.deliver(big(), lenient), "over soft, but not for long");
        assert!(!h.killed.load(Ordering::Acquire));
        mb.take();
        assert!(
            mb.deliver(Item::Invalidate(None), soft_now),
            "under soft again"
        );
        assert!(!mb.deliver(big(), soft_now));
        assert!(h.killed.load(Ordering::Acquire));
    }

    #[test]
    fn removing_a_client_empties_its_subscriptions() {
        let clients = Clients::default();
        let hub = Hub::default();
        let h = clients.register(addr(), addr(), -1, "default");
        let mb = hub.mailbox(&h);
        hub.subscribe(&mb, Kind::Channel, &[b("a")]);
        hub.subscribe(&mb, Kind::Pattern, &[b("p*")]);
        hub.subscribe(&mb, Kind::Shard, &[b("s")]);
        drop(mb);
        hub.remove_client(h.id);
        assert_eq!((hub.numchannels(), hub.numpat()), ((0, 0), 0));
        assert!(hub.mailbox_of(h.id).is_none());
        assert_eq!(hub.publish(&b("a"), &b("x"), UNLIMITED), 0);
    }
}
