//! Blocked pops (BLPOP, BRPOP, BLMOVE, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP): which clients wait
//! on which keys, and serving them in the merger's order, as Redis serves them.
//!
//! A blocking command first runs its pop as an op; if nothing was there, the same transaction
//! registers the client as a waiter on its keys ([`crate::Keyspace::block`]), so no write can
//! come between the empty pop and the registration. A write to a key someone waits on marks it
//! ready ([`Blocked::signal`], from the one function every key write goes through). At the end
//! of the transaction that made it ready — after a whole EXEC or script, as Redis serves after
//! the call — [`serve`] pops for the waiters of each ready key, oldest first, each pop an op in
//! that same transaction, until one finds nothing; a pop that pushes (BLMOVE) may ready another
//! key, served in turn. A waiter served is gone from every key it waited on, and its result is
//! handed over only once the group is durable ([`rialto_txn::TxnContext::after_commit`]), so a
//! served client never sees what a crash could take back, and the writer's next command
//! already sees the element gone.
//!
//! Invariants: a waiter is in the queue of each of its keys exactly while it is registered; it
//! leaves all of them at once, served (under the lock, in the merger's order) or cancelled
//! ([`Blocked::cancel`]) — so a cancel that finds it registered means it was not served (a pop
//! already running for it is undone), and one that does not means its result is on its way.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use rialto_lsm::Db;
use rialto_txn::TxnContext;

use crate::error::Error;
use crate::keys::{Keys, Txn};
use crate::layout::Kind;
use crate::op::{ListOp, Op, OpKind, StreamOp, ZSetOp};
use crate::stores::Stores;
use crate::value::Value;

/// What a waiter is handed: the value its pop returned, or why the group failed.
pub type Served = Box<dyn FnOnce(Result<Value, Error>) + Send>;

/// A client waiting on keys.
struct Waiter {
    db: u8,
    keys: Vec<Bytes>,
    /// The pop, as registered; run with the ready key as its only key. `None`: the waiter
    /// is only told that a key it waits on was written (a cluster node, where a pop is a
    /// record of the partition's log, not something a node may apply on its own).
    op: Option<OpKind>,
    deliver: Served,
}

#[derive(Default)]
struct Inner {
    next: u64,
    /// (database, key) → waiters' ids, oldest first.
    queues: HashMap<(u8, Bytes), VecDeque<u64>>,
    waiters: HashMap<u64, Waiter>,
    /// Keys written since the last serve that someone waits on, in the order written.
    ready: VecDeque<(u8, Bytes)>,
    ready_set: HashSet<(u8, Bytes)>,
}

/// The waiters and the keys ready for them.
#[derive(Default)]
pub struct Blocked {
    /// Some key is waited on: a write to any key pays this one load otherwise.
    any: AtomicBool,
    /// Some key is ready: a transaction's end pays this one load otherwise.
    has_ready: AtomicBool,
    inner: Mutex<Inner>,
}

/// A registered waiter's handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WaiterId(u64);

impl Blocked {
    /// Whether anyone waits on any key.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Every key waited on in logical database `db` may have changed (SWAPDB): ready.
    pub(crate) fn signal_db(&self, db: u8) {
        if !self.any() {
            return;
        }
        let mut inner = self.inner.lock();
        let keys: Vec<(u8, Bytes)> = inner.queues.keys().filter(|s| s.0 == db).cloned().collect();
        for slot in keys {
            if inner.ready_set.insert(slot.clone()) {
                inner.ready.push_back(slot);
                self.has_ready.store(true, Ordering::Release);
            }
        }
    }

    /// A flush of logical database `db` (every one: `None`) ran: every key waited on there is
    /// ready (a blocked XREADGROUP learns its stream is gone).
    pub(crate) fn signal_flushed(&self, db: Option<u8>) {
        match db {
            Some(db) => self.signal_db(db),
            None => {
                let dbs: HashSet<u8> = self.inner.lock().queues.keys().map(|s| s.0).collect();
                for db in dbs {
                    self.signal_db(db);
                }
            }
        }
    }

    /// `key` of logical database `db` was written: ready if someone waits on it.
    pub(crate) fn signal(&self, db: u8, key: &[u8]) {
        if !self.any() {
            return;
        }
        let mut inner = self.inner.lock();
        let slot = (db, Bytes::copy_from_slice(key));
        if inner.queues.contains_key(&slot) && inner.ready_set.insert(slot.clone()) {
            inner.ready.push_back(slot);
            self.has_ready.store(true, Ordering::Release);
        }
    }

    /// Registers a waiter for `keys` of database `db` that will run `op` (retargeted to the
    /// key that became ready) and hand its value to `deliver`. In the merger's order.
    fn register(&self, db: u8, keys: Vec<Bytes>, op: Option<OpKind>, deliver: Served) -> WaiterId {
        let mut inner = self.inner.lock();
        inner.next += 1;
        let id = inner.next;
        let mut seen = HashSet::new();
        for k in &keys {
            if seen.insert(k.clone()) {
                inner
                    .queues
                    .entry((db, k.clone()))
                    .or_default()
                    .push_back(id);
            }
        }
        inner.waiters.insert(
            id,
            Waiter {
                db,
                keys,
                op,
                deliver,
            },
        );
        self.any.store(true, Ordering::Release);
        WaiterId(id)
    }

    /// Removes a waiter that gave up (timeout, disconnection, CLIENT UNBLOCK): `true` if it
    /// was still waiting, `false` if it was served already (its value is on its way).
    pub fn cancel(&self, id: WaiterId) -> bool {
        let mut inner = self.inner.lock();
        match Self::remove(&mut inner, id.0) {
            Some(_) => {
                self.any.store(!inner.waiters.is_empty(), Ordering::Release);
                true
            }
            None => false,
        }
    }

    /// How many clients wait now (INFO's `blocked_clients`).
    pub fn waiting(&self) -> usize {
        self.inner.lock().waiters.len()
    }

    /// How many distinct keys are waited on (INFO's `total_blocking_keys`).
    pub fn keys(&self) -> usize {
        self.inner.lock().queues.len()
    }

    fn remove(inner: &mut Inner, id: u64) -> Option<Waiter> {
        let w = inner.waiters.remove(&id)?;
        for k in &w.keys {
            let slot = (w.db, k.clone());
            if let Some(q) = inner.queues.get_mut(&slot) {
                q.retain(|&x| x != id);
                if q.is_empty() {
                    inner.queues.remove(&slot);
                }
            }
        }
        Some(w)
    }

    /// The next ready key, if any.
    fn next_ready(&self) -> Option<(u8, Bytes)> {
        if !self.has_ready.load(Ordering::Acquire) {
            return None;
        }
        let mut inner = self.inner.lock();
        let r = inner.ready.pop_front();
        if let Some(slot) = &r {
            inner.ready_set.remove(slot);
        }
        if inner.ready.is_empty() {
            self.has_ready.store(false, Ordering::Release);
        }
        r
    }

    /// The oldest waiter on `slot`, with its op for that key (`None`: to be told only).
    fn first_waiter(&self, slot: &(u8, Bytes)) -> Option<(u64, Option<OpKind>)> {
        let inner = self.inner.lock();
        // Stream readers are served apart (`serve_stream_readers`): they pop nothing.
        inner.queues.get(slot)?.iter().find_map(|id| {
            let w = inner.waiters.get(id)?;
            match &w.op {
                Some(op) if reads_new_entries(op) => None,
                op => Some((*id, op.as_ref().map(|op| retarget(op, &slot.1)))),
            }
        })
    }

    /// Moves a waiter served by its pop to the ones being delivered: off every queue.
    fn take_served(&self, id: u64) -> Option<Served> {
        let mut inner = self.inner.lock();
        let w = Self::remove(&mut inner, id)?;
        self.any.store(!inner.waiters.is_empty(), Ordering::Release);
        Some(w.deliver)
    }
}

/// `op` (a blocking command's pop) with `key` as its only source.
fn retarget(op: &OpKind, key: &Bytes) -> OpKind {
    match op {
        OpKind::List(ListOp::MPop { left, count, .. }) => OpKind::List(ListOp::MPop {
            keys: vec![key.clone()],
            left: *left,
            count: *count,
        }),
        OpKind::ZSet(ZSetOp::MPop { max, count, .. }) => OpKind::ZSet(ZSetOp::MPop {
            keys: vec![key.clone()],
            max: *max,
            count: *count,
        }),
        OpKind::Stream(StreamOp::Read { streams, count, .. }) => OpKind::Stream(StreamOp::Read {
            streams: streams
                .iter()
                .filter(|(k, _)| k == key)
                .take(1)
                .cloned()
                .collect(),
            count: *count,
            bad: None,
        }),
        OpKind::Stream(StreamOp::ReadGroup {
            group,
            consumer,
            streams,
            count,
            noack,
            served,
            ..
        }) => OpKind::Stream(StreamOp::ReadGroup {
            group: group.clone(),
            consumer: consumer.clone(),
            streams: streams
                .iter()
                .filter(|(k, _)| k == key)
                .take(1)
                .cloned()
                .collect(),
            count: *count,
            noack: *noack,
            served: *served,
            bad: None,
        }),
        other => other.clone(),
    }
}

/// The op a waiter registers (see [`crate::apply::streams::waiting_form`]): a stream read's
/// `$` resolved in the transaction that found nothing, so no entry added after it is missed.
pub(crate) fn waiting_form(tx: &mut TxnContext<'_, Db>, stores: &Stores, op: &Op) -> OpKind {
    let OpKind::Stream(s) = &op.kind else {
        return op.kind.clone();
    };
    let catalog = stores.exec_catalog();
    let mut io = Txn(tx);
    let mut k = Keys {
        io: &mut io,
        db: stores.dbs.physical(op.db),
        now_ms: op.now_ms,
        stores: &catalog,
        rt: None,
        watches: None,
    };
    match crate::apply::streams::waiting_form(&mut k, s) {
        Ok(s) => OpKind::Stream(s),
        Err(_) => op.kind.clone(),
    }
}

/// Whether a waiter's op only reads what a write added (XREAD, XREADGROUP): every waiter
/// of the key is tried, not only until one finds nothing, since each reads from its own id.
fn reads_new_entries(op: &OpKind) -> bool {
    matches!(
        op,
        OpKind::Stream(StreamOp::Read { .. } | StreamOp::ReadGroup { .. })
    )
}

/// Whether `key` of logical database `db` holds the kind `op` pops from (a list, or a sorted set for the ZSet pops).
/// A read that fails counts as a fit: the pop then reports the failure to its waiter.
fn source_fits(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    db: u8,
    now_ms: i64,
    key: &[u8],
    op: &OpKind,
) -> bool {
    let want = match op {
        OpKind::ZSet(_) => Kind::ZSet,
        OpKind::Stream(_) => Kind::Stream,
        _ => Kind::List,
    };
    let catalog = stores.exec_catalog();
    let mut io = Txn(tx);
    let mut k = Keys {
        io: &mut io,
        db: stores.dbs.physical(db),
        now_ms,
        stores: &catalog,
        rt: None,
        watches: None,
    };
    match k.get(key) {
        Ok(Some(rec)) => rec.kind == want,
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Whether a pop's value took something (a pop that found nothing replies null).
pub(crate) fn took(v: &Value) -> bool {
    !matches!(v, Value::Null | Value::NullArray)
}

/// Registers a waiter (see [`Blocked`]): called in the transaction whose pop found nothing.
pub(crate) fn register(
    stores: &Stores,
    db: u8,
    keys: Vec<Bytes>,
    op: Option<OpKind>,
    deliver: Served,
) -> WaiterId {
    stores.watches.blocked.register(db, keys, op, deliver)
}

/// Serves the waiters of every key made ready so far, in transaction `tx`, at `now_ms`.
pub(crate) fn serve(tx: &mut TxnContext<'_, Db>, stores: &Stores, now_ms: i64) {
    let blocked = &stores.watches.blocked;
    while let Some(slot) = blocked.next_ready() {
        serve_stream_readers(tx, stores, now_ms, &slot);
        while let Some((id, kind)) = blocked.first_waiter(&slot) {
            let Some(kind) = kind else {
                // Told at once: it pops through the log itself and waits again if it lost.
                if let Some(deliver) = blocked.take_served(id) {
                    deliver(Ok(Value::Null));
                }
                continue;
            };
            // A key that now holds another kind serves nobody (they keep waiting), as in Redis.
            if !source_fits(tx, stores, slot.0, now_ms, &slot.1, &kind) {
                break;
            }
            let op = Op::new(slot.0, now_ms, kind);
            let before = tx.savepoint();
            let result = match crate::apply::apply(tx, stores, &op) {
                Ok(v) if took(&v) => Ok(v),
                // Nothing left: the rest keep waiting.
                Ok(_) => break,
                // The pop could not finish (BLMOVE's destination holds another kind): this
                // waiter gets the error and the element stays, for the next one.
                Err(e) => Err(e),
            };
            match blocked.take_served(id) {
                Some(deliver) => tx.after_commit(Box::new(move |failure| match failure {
                    None => deliver(result),
                    Some(e) => deliver(Err(Error::Engine(e.duplicate()))),
                })),
                // It gave up (timeout, disconnection) while its pop ran: the pop is undone,
                // so no element goes to a client that is no longer waiting.
                None => tx.rollback_to(before),
            }
        }
    }
}

/// Serves the stream readers waiting on `slot`, oldest first: each that its read finds
/// something for (or, for XREADGROUP, an error: its key or group is gone) is served; the
/// others keep waiting. XREAD waits on through a key that holds another kind; XREADGROUP
/// runs its read regardless, which reports the key gone.
fn serve_stream_readers(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    now_ms: i64,
    slot: &(u8, Bytes),
) {
    let blocked = &stores.watches.blocked;
    let ids: Vec<(u64, OpKind)> = {
        let inner = blocked.inner.lock();
        let Some(q) = inner.queues.get(slot) else {
            return;
        };
        q.iter()
            .filter_map(|id| {
                let w = inner.waiters.get(id)?;
                let op = w.op.as_ref().filter(|op| reads_new_entries(op))?;
                Some((*id, retarget(op, &slot.1)))
            })
            .collect()
    };
    for (id, kind) in ids {
        let group_read = matches!(kind, OpKind::Stream(StreamOp::ReadGroup { .. }));
        if !group_read && !source_fits(tx, stores, slot.0, now_ms, &slot.1, &kind) {
            continue;
        }
        let op = Op::new(slot.0, now_ms, kind);
        let before = tx.savepoint();
        let result = match crate::apply::apply(tx, stores, &op) {
            Ok(v) if took(&v) => Ok(v),
            Ok(_) => continue,
            Err(e) => Err(e),
        };
        match blocked.take_served(id) {
            Some(deliver) => tx.after_commit(Box::new(move |failure| match failure {
                None => deliver(result),
                Some(e) => deliver(Err(Error::Engine(e.duplicate()))),
            })),
            None => tx.rollback_to(before),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop() -> Served {
        Box::new(|_| {})
    }

    fn pop(keys: &[&str]) -> OpKind {
        OpKind::List(ListOp::MPop {
            keys: keys.iter().map(|k| Bytes::from(k.to_string())).collect(),
            left: true,
            count: None,
        })
    }

    #[test]
    fn a_key_is_ready_only_while_someone_waits_and_once_per_serve() {
        let b = Blocked::default();
        b.signal(0, b"k");
        assert!(b.next_ready().is_none());
        let id = b.register(
            0,
            vec![Bytes::from("k"), Bytes::from("k")],
            Some(pop(&["k"])),
            noop(),
        );
        b.signal(1, b"k");
        b.signal(0, b"k");
        b.signal(0, b"k");
        assert_eq!(b.next_ready(), Some((0, Bytes::from("k"))));
        assert!(b.next_ready().is_none());
        assert!(b.cancel(id));
        assert!(!b.cancel(id));
        assert!(!b.any());
        assert_eq!(b.keys(), 0);
    }

    #[test]
    fn waiters_are_served_oldest_first_and_leave_every_queue() {
        let b = Blocked::default();
        let first = b.register(
            0,
            vec![Bytes::from("a"), Bytes::from("b")],
            Some(pop(&["a", "b"])),
            noop(),
        );
        let second = b.register(0, vec![Bytes::from("b")], Some(pop(&["b"])), noop());
        let slot = (0, Bytes::from("b"));
        let (id, op) = b.first_waiter(&slot).unwrap();
        assert_eq!(id, first.0);
        assert_eq!(op, Some(pop(&["b"])));
        assert!(b.take_served(id).is_some());
        assert!(b.first_waiter(&(0, Bytes::from("a"))).is_none());
        assert_eq!(b.first_waiter(&slot).unwrap().0, second.0);
        assert!(!b.cancel(first));
        assert_eq!(b.waiting(), 1);
    }
}
