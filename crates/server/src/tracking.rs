//! Client-side caching (CLIENT TRACKING), Redis 7.0's semantics.
//!
//! The table: in default mode, the keys a tracking client read (key name → client ids, across
//! databases as in Redis); in BCAST mode, prefixes → clients. Changes come from the keyspace's
//! key-change sink ([`rialto_keyspace::KeyEvents`]), called where every change is applied,
//! in the merger's order: writes of any command, expiry, flushes, and a store's prefix
//! replaced by a push's swap, a rollback, a store created or deleted.
//!
//! When invalidations are sent: the sink only queues what changed, on the merger's thread.
//! The sender thread takes the queue, enqueues an empty merger job behind it and waits for
//! that job to resolve: every change queued is then durable and published, so a client that
//! re-reads a key on its invalidation sees the new value, never the old one again.
//!
//! Registration is ordered the same way: a tracking client's key reads run through the
//! merger, which records the keys before reading them, so every change ordered after the read
//! invalidates it and every change ordered before is seen by it.
//!
//! A store's prefix replaced: every key tracked under the prefix is invalidated, and BCAST
//! clients whose prefix overlaps the store's get a null invalidation (drop everything), since
//! the keys a push replaced are not listed anywhere and may be millions.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use rialto_keyspace::KeyEvents;

use crate::client::{ClientHandle, FLAG_REDIR_BROKEN};
use crate::pubsub::{Hub, Item, ObufLimit};
use crate::server::Shared;

/// Changes queued before the sender takes them anyway (bounds the queue between sends):
/// beyond it, further key changes collapse into one flush-style invalidation.
const MAX_QUEUED_CHANGES: usize = 1 << 20;

/// A connection's CLIENT TRACKING options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTracking {
    /// Client id invalidations are redirected to; 0 none.
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// BCAST prefixes (`""` when none was given).
    pub prefixes: Vec<Bytes>,
    /// CLIENT CACHING was given for the next command.
    pub caching: bool,
}

impl ClientTracking {
    /// Whether the keys of the command now running are remembered (OPTIN/OPTOUT and
    /// CLIENT CACHING; BCAST remembers nothing).
    pub fn remembers(&self) -> bool {
        let opted_in = !self.optin || self.caching;
        let opted_out = self.optout && self.caching;
        !self.bcast && opted_in && !opted_out
    }
}

/// What a tracked client is, as the sender needs it.
#[derive(Clone, Copy)]
struct Tracked {
    redirect: u64,
    noloop: bool,
}

#[derive(Default)]
struct Table {
    keys: HashMap<Bytes, HashSet<u64>>,
    /// Entries (key, client) in `keys`.
    items: usize,
    /// BCAST prefixes → client → NOLOOP.
    prefixes: BTreeMap<Bytes, HashMap<u64, bool>>,
    clients: HashMap<u64, Tracked>,
}

enum Change {
    Key { key: Bytes, origin: Option<u64> },
    Flush,
    Prefix(Bytes),
}

#[derive(Default)]
struct Queue {
    /// Changes in the merger's order, numbered.
    changes: std::collections::VecDeque<(u64, Change)>,
    /// The number of the last change queued.
    last: u64,
    /// The queue overflowed up to this change: everything is invalidated instead.
    overflow: Option<u64>,
}

/// The tracking table and the invalidations waiting to be sent.
pub struct Tracking {
    hub: Arc<Hub>,
    table: Mutex<Table>,
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Held while changes are taken and sent, so that they leave in order whoever sends them
    /// (the sender thread, or a tracking client's connection after its own write).
    sending: Mutex<()>,
    /// `tracking-table-max-keys` (0: unlimited).
    max_keys: AtomicUsize,
    /// Clients with tracking on.
    clients: AtomicUsize,
    /// Turns the keyspace's key-change sink on and off (on while a client tracks).
    listener: std::sync::OnceLock<Box<dyn Fn(bool) + Send + Sync>>,
    /// Whether a client id is connected (a redirect's target).
    is_connected: std::sync::OnceLock<Box<dyn Fn(u64) -> bool + Send + Sync>>,
}

/// `tracking-table-max-keys`'s default, Redis's.
pub const DEFAULT_MAX_KEYS: usize = 1_000_000;

fn overlaps(a: &[u8], b: &[u8]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl Tracking {
    pub fn new(hub: Arc<Hub>, max_keys: usize) -> Tracking {
        Tracking {
            hub,
            table: Mutex::default(),
            queue: Mutex::default(),
            wake: Condvar::new(),
            sending: Mutex::new(()),
            max_keys: AtomicUsize::new(max_keys),
            clients: AtomicUsize::new(0),
            listener: std::sync::OnceLock::new(),
            is_connected: std::sync::OnceLock::new(),
        }
    }

    /// Hooks the table to the server's keyspace (as its key-change sink, heard while a
    /// client tracks) and starts the sender thread, which stops once `shared` is gone.
    pub fn install(shared: &Arc<Shared>) -> std::io::Result<()> {
        let tr = Arc::clone(&shared.tracking);
        shared
            .keyspace
            .set_key_events(Arc::clone(&tr) as Arc<dyn KeyEvents>);
        let weak = Arc::downgrade(shared);
        let _ = tr.listener.set(Box::new(move |on| {
            if let Some(sh) = weak.upgrade() {
                sh.keyspace.listen_key_events(on);
            }
        }));
        let weak = Arc::downgrade(shared);
        let _ = tr.is_connected.set(Box::new(move |id| {
            weak.upgrade().is_some_and(|sh| sh.clients.contains(id))
        }));
        let weak: Weak<Shared> = Arc::downgrade(shared);
        std::thread::Builder::new()
            .name("rialto-tracking".into())
            .spawn(move || sender(weak))
            .map(|_| ())
    }

    /// Whether client `id` is connected.
    fn connected(&self, id: u64) -> bool {
        self.is_connected.get().is_some_and(|f| f(id))
    }

    /// Called with the table locked, so that switches of concurrent callers apply in order.
    fn listen(&self, on: bool) {
        if let Some(f) = self.listener.get() {
            f(on);
        }
    }

    /// Clients with tracking on (INFO `tracking_clients`).
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Acquire)
    }

    /// Keys tracked, (key, client) entries, BCAST prefixes (INFO's `tracking_total_*`).
    pub fn totals(&self) -> (usize, usize, usize) {
        let t = self.table.lock();
        (t.keys.len(), t.items, t.prefixes.len())
    }

    /// Sets `tracking-table-max-keys`; keys beyond it are evicted (invalidated) at once.
    pub fn set_max_keys(&self, max: usize, limit: ObufLimit) {
        self.max_keys.store(max, Ordering::Release);
        let evicted = self.evict_over_limit(&mut self.table.lock());
        self.send_evicted(evicted, limit);
    }

    /// Turns tracking on for client `id` (CLIENT TRACKING ON); `Ok` also when it was on.
    pub fn enable(&self, id: u64, t: &ClientTracking) {
        let mut table = self.table.lock();
        let tracked = Tracked {
            redirect: t.redirect,
            noloop: t.noloop,
        };
        if table.clients.insert(id, tracked).is_none()
            && self.clients.fetch_add(1, Ordering::AcqRel) == 0
        {
            self.listen(true);
        }
        if t.bcast {
            for p in &t.prefixes {
                table
                    .prefixes
                    .entry(p.clone())
                    .or_default()
                    .insert(id, t.noloop);
            }
        }
    }

    /// Turns tracking off for client `id` (CLIENT TRACKING OFF, RESET, close). Its keys stay
    /// in the table until invalidated, as in Redis; invalidations for it then go nowhere.
    pub fn disable(&self, id: u64) {
        let mut table = self.table.lock();
        if table.clients.remove(&id).is_some() && self.clients.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Nobody tracks: nothing is heard, so nothing remembered may stay.
            self.listen(false);
            table.keys.clear();
            table.items = 0;
        }
        table.prefixes.retain(|_, who| {
            who.remove(&id);
            !who.is_empty()
        });
    }

    /// Records that client `id` read `keys` (on the merger's thread, before the read).
    pub fn remember(&self, id: u64, keys: &[Bytes], limit: ObufLimit) {
        let mut t = self.table.lock();
        for k in keys {
            if t.keys.entry(k.clone()).or_default().insert(id) {
                t.items += 1;
            }
        }
        let evicted = self.evict_over_limit(&mut t);
        drop(t);
        self.send_evicted(evicted, limit);
    }

    /// Removes keys while more than `tracking-table-max-keys` are tracked (any keys: Redis
    /// picks them at random); they are invalidated for their clients.
    fn evict_over_limit(&self, t: &mut Table) -> Vec<(Bytes, HashSet<u64>)> {
        let max = self.max_keys.load(Ordering::Acquire);
        let mut out = Vec::new();
        if max == 0 || t.keys.len() <= max {
            return out;
        }
        let over = t.keys.len() - max;
        let victims: Vec<Bytes> = t.keys.keys().take(over).cloned().collect();
        for k in victims {
            if let Some(ids) = t.keys.remove(&k) {
                t.items -= ids.len();
                out.push((k, ids));
            }
        }
        out
    }

    fn send_evicted(&self, evicted: Vec<(Bytes, HashSet<u64>)>, limit: ObufLimit) {
        if evicted.is_empty() {
            return;
        }
        let clients = self.table.lock().clients.clone();
        for (key, ids) in evicted {
            for id in ids {
                if let Some(c) = clients.get(&id) {
                    self.send(id, *c, Item::Invalidate(Some(vec![key.clone()])), limit);
                }
            }
        }
    }

    /// Sends `item` to tracking client `id` or where it redirects; a redirect to a client
    /// that is gone is reported to `id` (`tracking-redir-broken`, RESP3).
    fn send(&self, id: u64, c: Tracked, item: Item, limit: ObufLimit) {
        let target = if c.redirect != 0 { c.redirect } else { id };
        match self.hub.mailbox_of(target) {
            Some(mb) if can_receive(mb.handle(), c.redirect != 0, mb.subscribed()) => {
                mb.deliver(item, limit);
            }
            Some(_) => {}
            // Connected but without a mailbox (never subscribed nor tracking): RESP2 could
            // not receive it; a RESP3 target of a redirect must subscribe to receive it.
            None if c.redirect != 0 && self.connected(target) => {}
            None if c.redirect != 0 => {
                if let Some(own) = self.hub.mailbox_of(id) {
                    own.handle()
                        .tracking_flags
                        .fetch_or(FLAG_REDIR_BROKEN, Ordering::Relaxed);
                    own.deliver(Item::RedirBroken(c.redirect), limit);
                }
            }
            None => {}
        }
    }

    fn push(&self, change: Change) {
        let mut q = self.queue.lock();
        q.last += 1;
        let n = q.last;
        if q.overflow.is_some() || q.changes.len() >= MAX_QUEUED_CHANGES {
            // Collapsed into one flush-style invalidation.
            q.changes.clear();
            q.overflow = Some(n);
        } else {
            q.changes.push_back((n, change));
        }
        drop(q);
        self.wake.notify_one();
    }

    /// The number of the last change queued: once the write that made it is published,
    /// [`Tracking::send_published`] may send everything up to it.
    pub fn last_change(&self) -> u64 {
        self.queue.lock().last
    }

    /// Sends the invalidations of changes up to number `upto`, which the caller knows to be
    /// published (groups are published in the merger's order).
    pub fn send_published(&self, upto: u64, limit: ObufLimit) {
        let _order = self.sending.lock();
        let (changes, overflow) = {
            let mut q = self.queue.lock();
            let mut taken = Vec::new();
            while q.changes.front().is_some_and(|(n, _)| *n <= upto) {
                if let Some((_, c)) = q.changes.pop_front() {
                    taken.push(c);
                }
            }
            let overflow = q.overflow.is_some_and(|n| n <= upto);
            if overflow {
                q.overflow = None;
            }
            (taken, overflow)
        };
        if !changes.is_empty() || overflow {
            self.deliver(changes, overflow, limit);
        }
    }

    /// Sends what changed: run by the sender once every change taken is published.
    fn deliver(&self, changes: Vec<Change>, overflow: bool, limit: ObufLimit) {
        let mut t = self.table.lock();
        let clients = t.clients.clone();
        if overflow {
            t.keys.clear();
            t.items = 0;
            drop(t);
            for (&id, &c) in &clients {
                self.send(id, c, Item::Invalidate(None), limit);
            }
            return;
        }
        // Per key, per client, in order; BCAST keys gathered per client and prefix.
        let mut out: Vec<(u64, Tracked, Item)> = Vec::new();
        let mut bcast: BTreeMap<(Bytes, u64), Vec<Bytes>> = BTreeMap::new();
        for change in changes {
            match change {
                Change::Key { key, origin } => {
                    if let Some(ids) = t.keys.remove(&key) {
                        t.items -= ids.len();
                        for id in ids {
                            let Some(&c) = clients.get(&id) else { continue };
                            if c.noloop && origin == Some(id) {
                                continue;
                            }
                            out.push((id, c, Item::Invalidate(Some(vec![key.clone()]))));
                        }
                    }
                    for (p, who) in t.prefixes.iter() {
                        if !key.starts_with(p) {
                            continue;
                        }
                        for (&id, &noloop) in who {
                            if noloop && origin == Some(id) {
                                continue;
                            }
                            bcast.entry((p.clone(), id)).or_default().push(key.clone());
                        }
                    }
                }
                Change::Flush => {
                    t.keys.clear();
                    t.items = 0;
                    for (&id, &c) in &clients {
                        out.push((id, c, Item::Invalidate(None)));
                    }
                }
                Change::Prefix(prefix) => {
                    let under: Vec<Bytes> = t
                        .keys
                        .keys()
                        .filter(|k| k.starts_with(&prefix))
                        .cloned()
                        .collect();
                    for key in under {
                        if let Some(ids) = t.keys.remove(&key) {
                            t.items -= ids.len();
                            for id in ids {
                                if let Some(&c) = clients.get(&id) {
                                    out.push((id, c, Item::Invalidate(Some(vec![key.clone()]))));
                                }
                            }
                        }
                    }
                    let mut told = HashSet::new();
                    for (p, who) in t.prefixes.iter() {
                        if overlaps(p, &prefix) {
                            for &id in who.keys() {
                                if let (Some(&c), true) = (clients.get(&id), told.insert(id)) {
                                    out.push((id, c, Item::Invalidate(None)));
                                }
                            }
                        }
                    }
                }
            }
        }
        drop(t);
        for (id, c, item) in out {
            self.send(id, c, item, limit);
        }
        for ((_, id), keys) in bcast {
            if let Some(&c) = clients.get(&id) {
                self.send(id, c, Item::Invalidate(Some(keys)), limit);
            }
        }
    }
}

/// Whether a connection may receive an invalidation: RESP3, or RESP2 through a redirect to a
/// connection in subscribed mode (RESP2 has no pushes outside it), as Redis decides.
fn can_receive(h: &ClientHandle, redirected: bool, subscribed: bool) -> bool {
    h.resp.load(Ordering::Relaxed) == 3 || (redirected && subscribed)
}

fn sender(weak: Weak<Shared>) {
    loop {
        let Some(shared) = weak.upgrade() else { return };
        let tr = Arc::clone(&shared.tracking);
        let upto = {
            let mut q = tr.queue.lock();
            if q.changes.is_empty() && q.overflow.is_none() {
                drop(shared);
                // Wakes on a change; the timeout notices the server gone.
                tr.wake.wait_for(&mut q, Duration::from_millis(200));
                continue;
            }
            q.last
        };
        // Behind every change queued so far: once this resolves they are durable and
        // published.
        let h = shared.keyspace.read_in_order(0, |_| ());
        shared.keyspace.run_queued();
        if h.wait().is_err() {
            // The engine failed: those writes are not published and never will be; nothing
            // a client cached went stale through them. Retry after a pause.
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let limit = shared.config.read().pubsub_limit;
        tr.send_published(upto, limit);
    }
}

impl KeyEvents for Tracking {
    fn changed(&self, _db: u8, key: &[u8], origin: Option<u64>) {
        self.push(Change::Key {
            key: Bytes::copy_from_slice(key),
            origin,
        });
    }

    fn flushed(&self, _db: u8, _all: bool) {
        self.push(Change::Flush);
    }

    fn prefix_replaced(&self, _db: u8, prefix: &[u8]) {
        self.push(Change::Prefix(Bytes::copy_from_slice(prefix)));
    }
}

/// CLIENT TRACKING's checks, Redis's texts: whether `new` may replace `old`.
pub fn check_options(
    old: Option<&ClientTracking>,
    new: &ClientTracking,
    prefixes_given: bool,
) -> Result<(), String> {
    if !new.bcast && prefixes_given {
        return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
    }
    if let Some(old) = old {
        if old.bcast != new.bcast {
            return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
        }
    }
    if new.bcast && (new.optin || new.optout) {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
    }
    if new.optin && new.optout {
        return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
    }
    if let Some(old) = old {
        if (new.optin && old.optout) || (new.optout && old.optin) {
            return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
        }
    }
    if new.bcast {
        let existing = old.map(|o| &o.prefixes[..]).unwrap_or_default();
        let given = &new.prefixes[..];
        for (i, p) in given.iter().enumerate() {
            if let Some(c) = existing.iter().find(|e| overlaps(e, p)) {
                return Err(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(c)
                ));
            }
            if let Some(q) = given[i + 1..].iter().find(|q| overlaps(p, q)) {
                return Err(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(q)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Clients;
    use rialto_resp::Protocol;

    fn addr() -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], 1))
    }

    fn resp3(clients: &Clients) -> Arc<ClientHandle> {
        let h = clients.register(addr(), addr(), -1, "default");
        h.resp.store(3, Ordering::Relaxed);
        h
    }

    fn drained(hub: &Hub, id: u64) -> Vec<Option<Vec<Bytes>>> {
        hub.mailbox_of(id)
            .map(|m| m.take())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|i| match i {
                Item::Invalidate(k) => Some(k),
                _ => None,
            })
            .collect()
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    const L: ObufLimit = ObufLimit::PUBSUB_DEFAULT;

    #[test]
    fn a_change_invalidates_the_readers_of_the_key_once() {
        let clients = Clients::default();
        let hub = Arc::new(Hub::default());
        let tr = Tracking::new(Arc::clone(&hub), 0);
        let (a, c) = (resp3(&clients), resp3(&clients));
        for h in [&a, &c] {
            hub.mailbox(h);
            tr.enable(h.id, &ClientTracking::default());
        }
        tr.remember(a.id, &[b("k"), b("j")], L);
        tr.remember(c.id, &[b("k")], L);
        assert_eq!(tr.totals(), (2, 3, 0));
        tr.changed(0, b"k", None);
        tr.changed(0, b"k", None);
        tr.send_published(tr.last_change(), L);
        assert_eq!(drained(&hub, a.id), vec![Some(vec![b("k")])]);
        assert_eq!(drained(&hub, c.id), vec![Some(vec![b("k")])]);
        assert_eq!(tr.totals(), (1, 1, 0));
    }

    #[test]
    fn noloop_skips_the_writers_own_changes_and_bcast_gets_prefixed_keys() {
        let clients = Clients::default();
        let hub = Arc::new(Hub::default());
        let tr = Tracking::new(Arc::clone(&hub), 0);
        let (a, bc) = (resp3(&clients), resp3(&clients));
        hub.mailbox(&a);
        hub.mailbox(&bc);
        tr.enable(
            a.id,
            &ClientTracking {
                noloop: true,
                ..Default::default()
            },
        );
        tr.enable(
            bc.id,
            &ClientTracking {
                bcast: true,
                prefixes: vec![b("user:")],
                ..Default::default()
            },
        );
        tr.remember(a.id, &[b("user:1")], L);
        tr.changed(0, b"user:1", Some(a.id));
        tr.changed(0, b"user:2", None);
        tr.changed(0, b"other", None);
        tr.send_published(tr.last_change(), L);
        assert!(drained(&hub, a.id).is_empty());
        assert_eq!(
            drained(&hub, bc.id),
            vec![Some(vec![b("user:1"), b("user:2")])]
        );
    }

    #[test]
    fn a_prefix_replaced_invalidates_the_keys_under_it_and_overlapping_bcast_clients() {
        let clients = Clients::default();
        let hub = Arc::new(Hub::default());
        let tr = Tracking::new(Arc::clone(&hub), 0);
        let (a, bc, far) = (resp3(&clients), resp3(&clients), resp3(&clients));
        for h in [&a, &bc, &far] {
            hub.mailbox(h);
        }
        tr.enable(a.id, &ClientTracking::default());
        let bcast = |p: &str| ClientTracking {
            bcast: true,
            prefixes: vec![b(p)],
            ..Default::default()
        };
        tr.enable(bc.id, &bcast("feat"));
        tr.enable(far.id, &bcast("zzz"));
        tr.remember(a.id, &[b("feat:1"), b("feat:2"), b("other")], L);
        tr.prefix_replaced(0, b"feat:");
        tr.send_published(tr.last_change(), L);
        let mut got = drained(&hub, a.id);
        got.sort();
        assert_eq!(got, vec![Some(vec![b("feat:1")]), Some(vec![b("feat:2")])]);
        assert_eq!(drained(&hub, bc.id), vec![None]);
        assert!(drained(&hub, far.id).is_empty());
        assert_eq!(tr.totals().0, 1);
    }

    #[test]
    fn the_table_is_bounded_by_max_keys_evicting_with_invalidations() {
        let clients = Clients::default();
        let hub = Arc::new(Hub::default());
        let tr = Tracking::new(Arc::clone(&hub), 3);
        let a = resp3(&clients);
        hub.mailbox(&a);
        tr.enable(a.id, &ClientTracking::default());
        let keys: Vec<Bytes> = (0..10).map(|i| b(&format!("k{i}"))).collect();
        tr.remember(a.id, &keys, L);
        assert_eq!(tr.totals().0, 3);
        assert_eq!(drained(&hub, a.id).len(), 7);
        tr.set_max_keys(1, L);
        assert_eq!(tr.totals().0, 1);
        assert_eq!(drained(&hub, a.id).len(), 2);
    }

    #[test]
    fn a_broken_redirect_is_reported_and_resp2_gets_nothing_without_one() {
        let clients = Clients::default();
        let hub = Arc::new(Hub::default());
        let tr = Tracking::new(Arc::clone(&hub), 0);
        let a = resp3(&clients);
        hub.mailbox(&a);
        tr.enable(
            a.id,
            &ClientTracking {
                redirect: 999,
                ..Default::default()
            },
        );
        tr.remember(a.id, &[b("k")], L);
        tr.changed(0, b"k", None);
        tr.send_published(tr.last_change(), L);
        let items = hub.mailbox_of(a.id).map(|m| m.take()).unwrap_or_default();
        assert_eq!(
            items.into_iter().collect::<Vec<_>>(),
            vec![Item::RedirBroken(999)]
        );
        assert_ne!(
            a.tracking_flags.load(Ordering::Relaxed) & FLAG_REDIR_BROKEN,
            0
        );
        let r2 = clients.register(addr(), addr(), -1, "default");
        let _ = Protocol::Resp2;
        hub.mailbox(&r2);
        tr.enable(r2.id, &ClientTracking::default());
        tr.remember(r2.id, &[b("k")], L);
        tr.changed(0, b"k", None);
        tr.send_published(tr.last_change(), L);
        assert!(drained(&hub, r2.id).is_empty());
    }

    #[test]
    fn tracking_options_are_checked_with_redis_texts() {
        let on = |f: fn(&mut ClientTracking)| {
            let mut t = ClientTracking::default();
            f(&mut t);
            t
        };
        assert!(check_options(None, &on(|_| {}), true)
            .unwrap_err()
            .contains("PREFIX option requires BCAST"));
        assert!(check_options(
            None,
            &on(|t| {
                t.bcast = true;
                t.optin = true
            }),
            false
        )
        .unwrap_err()
        .contains("OPTIN and OPTOUT are not compatible with BCAST"));
        assert!(check_options(
            None,
            &on(|t| {
                t.optin = true;
                t.optout = true
            }),
            false
        )
        .unwrap_err()
        .contains("both OPTIN mode and OPTOUT"));
        let e = check_options(
            None,
            &on(|t| {
                t.bcast = true;
                t.prefixes = vec![b("a"), b("ab")];
            }),
            true,
        )
        .unwrap_err();
        assert_eq!(e, "ERR Prefix 'a' overlaps with another provided prefix 'ab'. Prefixes for a single client must not overlap.");
        let old = on(|t| t.optin = true);
        assert!(check_options(Some(&old), &on(|t| t.optout = true), false).is_err());
    }
}
