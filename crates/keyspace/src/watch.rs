//! Optimistic locks (Redis's WATCH): which connections watch which keys, and the flag a
//! change to one of them sets; and the [`KeyEvents`] sink, which hears of the same changes
//! (client-side caching's invalidations).
//!
//! Every change is seen here in the merger's execution order, where it is applied: a write to
//! a key ([`Watches::touch`], from the one function every key write goes through), a flush
//! (each deleted key, touched as a deletion), a catalog change that replaces what a store's
//! prefix reads ([`Watches::touch_prefix`]: a push's swap, a rollback, a store created or
//! deleted). A connection registers its keys in the same order ([`crate::Keyspace::watch`])
//! and its EXEC checks the flag there too, so no change ordered between the two is missed.
//!
//! A watched key that had already expired when it was watched (stale) is not changed by its
//! deletion — the expiry pass or a flush removing it — as in Redis; any other change marks it.
//! A change that is staged and then dropped (the command failed after writing) still marks:
//! a watch may fail an EXEC it need not have, never the other way round.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

/// Hears of every key change where WATCH does, in the merger's execution order, inside the
/// transaction applying it: before that transaction is durable or visible to readers. An
/// implementation records what it needs and acts only once the change is published (see the
/// server's tracking); it must not block.
pub trait KeyEvents: Send + Sync {
    /// `key` of database `db` was written or deleted; `origin` is the client the write was
    /// enqueued for ([`crate::Keyspace::enqueue_as`]), if it said.
    fn changed(&self, db: u8, key: &[u8], origin: Option<u64>);
    /// A flush step ran: keys of database `db` (every database when `all`) were deleted.
    fn flushed(&self, db: u8, all: bool);
    /// What every key of database `db` under `prefix` reads was replaced (a push's swap, a
    /// rollback, a store created or deleted).
    fn prefix_replaced(&self, db: u8, prefix: &[u8]);
}

thread_local! {
    /// The client whose op this thread is applying, if the op was enqueued with one.
    static ORIGIN: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` (an op's apply) telling the sink its changes come from client `origin`.
pub(crate) fn with_origin<T>(origin: u64, f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            ORIGIN.with(|o| o.set(None));
        }
    }
    ORIGIN.with(|o| o.set(Some(origin)));
    let _reset = Reset;
    f()
}

/// The bit of [`Watches::state`] set while the sink listens; the bits below count entries.
const LISTENING: usize = 1 << (usize::BITS - 1);

/// The table of watched keys: (database, user key) → the connections watching it; and the
/// key-change sink.
#[derive(Default)]
pub struct Watches {
    /// Entries in `table`, and [`LISTENING`]: zero lets a write skip both with one load.
    state: AtomicUsize,
    table: Mutex<HashMap<Vec<u8>, Vec<Entry>>>,
    events: std::sync::OnceLock<Arc<dyn KeyEvents>>,
    /// Clients blocked on keys: a write readies the keys they wait on.
    pub(crate) blocked: crate::blocking::Blocked,
    /// Writes name physical databases; the table and the blocked clients' queues hold the
    /// logical ones clients named (so SWAPDB leaves them with the clients' databases).
    dbs: Arc<crate::dbmap::DbMap>,
}

struct Entry {
    who: Arc<Flag>,
    /// The key had expired, not yet removed, when it was watched.
    stale: bool,
}

/// One connection's watch state. Its keys change only under the table's lock.
#[derive(Default)]
struct Flag {
    /// A watched key changed.
    dirty: AtomicBool,
    /// The keys registered, each once.
    keys: Mutex<Vec<(u8, Bytes)>>,
    /// The connection is gone: a registration still in flight adds nothing.
    closed: AtomicBool,
}

/// The table's key: the database byte, then the user key.
fn slot(db: u8, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + key.len());
    k.push(db);
    k.extend_from_slice(key);
    k
}

impl Watches {
    /// Whether any key is watched or the sink listens (one load: what every write pays when
    /// neither).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.state.load(Ordering::Acquire) != 0
    }

    fn watched(&self) -> bool {
        self.state.load(Ordering::Acquire) & !LISTENING != 0
    }

    fn sink(&self) -> Option<&Arc<dyn KeyEvents>> {
        if self.state.load(Ordering::Acquire) & LISTENING == 0 {
            return None;
        }
        self.events.get()
    }

    /// Installs the key-change sink (once; later calls are ignored). It hears nothing until
    /// [`Watches::listen`] turns it on.
    pub(crate) fn set_events(&self, events: Arc<dyn KeyEvents>) {
        let _ = self.events.set(events);
    }

    /// Turns the sink on or off.
    pub(crate) fn listen(&self, on: bool) {
        if on {
            self.state.fetch_or(LISTENING, Ordering::AcqRel);
        } else {
            self.state.fetch_and(!LISTENING, Ordering::AcqRel);
        }
    }

    /// The table over the database map `dbs`.
    pub(crate) fn with_dbs(dbs: Arc<crate::dbmap::DbMap>) -> Watches {
        Watches {
            dbs,
            ..Watches::default()
        }
    }

    /// `key` of physical database `db` changed; `deleted` when the change removed it.
    #[inline]
    pub(crate) fn touch(&self, db: u8, key: &[u8], deleted: bool) {
        if self.any() {
            self.touch_slow(db, key, deleted);
        }
        // A deletion readies the key too: a blocked XREADGROUP is then told its stream is
        // gone (a pop finds nothing and keeps waiting).
        if self.blocked.any() {
            self.blocked.signal(self.dbs.logical(db), key);
        }
    }

    /// A flush step of database `db` (every database when `all`) runs: the sink hears it
    /// once; WATCH hears each key deleted ([`Watches::touch_watched`]).
    pub(crate) fn flushed(&self, db: u8, all: bool) {
        if let Some(e) = self.sink() {
            e.flushed(self.dbs.logical(db), all);
        }
        if self.blocked.any() {
            self.blocked
                .signal_flushed((!all).then(|| self.dbs.logical(db)));
        }
    }

    /// Like [`Watches::touch`], for WATCH alone (a flush tells the sink once, not per key).
    pub(crate) fn touch_watched(&self, db: u8, key: &[u8], deleted: bool) {
        if self.watched() {
            self.touch_table(self.dbs.logical(db), key, deleted);
        }
    }

    /// The keys watched in logical database `db` (SWAPDB decides which it touches).
    pub(crate) fn watched_in(&self, db: u8) -> Vec<Bytes> {
        if !self.watched() {
            return Vec::new();
        }
        let table = self.table.lock();
        table
            .keys()
            .filter(|k| k[0] == db)
            .map(|k| Bytes::copy_from_slice(&k[1..]))
            .collect()
    }

    /// SWAPDB brought another database's contents under logical database `db`, where `key`
    /// is watched: `here` whether the key existed in the contents it had (even expired),
    /// `there` whether the contents it now has hold the key and whether that record has
    /// expired. Redis 7.0's rules (`touchAllWatchedKeysInDb`): a watch of a key that had
    /// expired when watched is untouched when the key is gone (it becomes a plain missing key)
    /// or expired there too; a watch of a missing key that an expired one replaces becomes
    /// such a watch; any other watch of a key present on either side is touched.
    pub(crate) fn touch_swapped(&self, db: u8, key: &[u8], here: bool, there: Option<bool>) {
        if !here && there.is_none() {
            return;
        }
        let mut table = self.table.lock();
        let Some(list) = table.get_mut(&slot(db, key)) else {
            return;
        };
        for e in list {
            let touch = match (e.stale, there) {
                (true, None) => {
                    e.stale = false;
                    false
                }
                (true, Some(expired)) => !expired,
                (false, Some(true)) if !here => {
                    e.stale = true;
                    false
                }
                (false, _) => true,
            };
            if touch {
                e.who.dirty.store(true, Ordering::Release);
            }
        }
    }

    #[cold]
    fn touch_slow(&self, db: u8, key: &[u8], deleted: bool) {
        let db = self.dbs.logical(db);
        if let Some(e) = self.sink() {
            e.changed(db, key, ORIGIN.with(|o| o.get()));
        }
        if self.watched() {
            self.touch_table(db, key, deleted);
        }
    }

    fn touch_table(&self, db: u8, key: &[u8], deleted: bool) {
        let mut table = self.table.lock();
        if let Some(list) = table.get_mut(&slot(db, key)) {
            for e in list {
                if e.stale && deleted {
                    // An expired key removed: logically no change; it is a plain missing key
                    // from now on.
                    e.stale = false;
                } else {
                    e.who.dirty.store(true, Ordering::Release);
                }
            }
        }
    }

    /// Every key of database `db` that starts with `prefix` changed (a store's data replaced).
    pub(crate) fn touch_prefix(&self, db: u8, prefix: &[u8]) {
        if let Some(e) = self.sink() {
            e.prefix_replaced(db, prefix);
        }
        if !self.watched() {
            return;
        }
        let table = self.table.lock();
        for (k, list) in table.iter() {
            if k[0] == db && k[1..].starts_with(prefix) {
                for e in list {
                    e.who.dirty.store(true, Ordering::Release);
                }
            }
        }
    }

    fn register(&self, who: &Arc<Flag>, db: u8, key: &[u8], stale: bool) {
        let mut table = self.table.lock();
        if who.closed.load(Ordering::Acquire) {
            return;
        }
        let list = table.entry(slot(db, key)).or_default();
        if list.iter().any(|e| Arc::ptr_eq(&e.who, who)) {
            return;
        }
        list.push(Entry {
            who: Arc::clone(who),
            stale,
        });
        who.keys.lock().push((db, Bytes::copy_from_slice(key)));
        self.state.fetch_add(1, Ordering::AcqRel);
    }

    /// Removes every key of `who`; with `close`, later registrations of it add nothing.
    fn unregister_all(&self, who: &Arc<Flag>, close: bool) {
        let mut table = self.table.lock();
        if close {
            who.closed.store(true, Ordering::Release);
        }
        let keys = std::mem::take(&mut *who.keys.lock());
        for (db, key) in &keys {
            let k = slot(*db, key);
            if let Some(list) = table.get_mut(&k) {
                let before = list.len();
                list.retain(|e| !Arc::ptr_eq(&e.who, who));
                self.state.fetch_sub(before - list.len(), Ordering::AcqRel);
                if list.is_empty() {
                    table.remove(&k);
                }
            }
        }
    }

    /// The keys `who` watches that were live when watched, as the table holds them now.
    fn live_when_watched(&self, who: &Arc<Flag>) -> Vec<(u8, Bytes)> {
        let table = self.table.lock();
        let keys = who.keys.lock();
        keys.iter()
            .filter(|(db, key)| {
                table
                    .get(&slot(*db, key))
                    .is_some_and(|list| list.iter().any(|e| Arc::ptr_eq(&e.who, who) && !e.stale))
            })
            .cloned()
            .collect()
    }
}

/// One connection's watched keys (WATCH ... UNWATCH, EXEC or DISCARD). Dropping it unwatches.
pub struct Watch {
    table: Arc<Watches>,
    flag: Arc<Flag>,
}

impl Watch {
    pub(crate) fn new(table: Arc<Watches>) -> Watch {
        Watch {
            table,
            flag: Arc::default(),
        }
    }

    /// Whether it watches any key.
    pub fn is_empty(&self) -> bool {
        self.flag.keys.lock().is_empty()
    }

    /// The keys it watches, each once, with their databases.
    pub fn keys(&self) -> Vec<(u8, Bytes)> {
        self.flag.keys.lock().clone()
    }

    /// Whether a watched key changed since it was watched (expiry by time alone is judged at
    /// EXEC, see [`crate::Keyspace::transaction`]).
    pub fn is_dirty(&self) -> bool {
        self.flag.dirty.load(Ordering::Acquire)
    }

    /// Forgets every key and the flag.
    pub fn clear(&mut self) {
        self.table.unregister_all(&self.flag, false);
        self.flag.dirty.store(false, Ordering::Release);
    }

    /// What the merger needs to register keys for this watch or check it.
    pub(crate) fn share(&self) -> WatchRef {
        WatchRef {
            table: Arc::clone(&self.table),
            flag: Arc::clone(&self.flag),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.table.unregister_all(&self.flag, true);
    }
}

/// A watch as the merger's closures hold it.
pub(crate) struct WatchRef {
    table: Arc<Watches>,
    flag: Arc<Flag>,
}

impl WatchRef {
    /// Registers `key` of database `db` (once), `stale` if it had expired.
    pub(crate) fn register(&self, db: u8, key: &[u8], stale: bool) {
        self.table.register(&self.flag, db, key, stale)
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.flag.dirty.load(Ordering::Acquire)
    }

    /// The keys that were live when watched.
    pub(crate) fn live_when_watched(&self) -> Vec<(u8, Bytes)> {
        self.table.live_when_watched(&self.flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(table: &Arc<Watches>, keys: &[(u8, &str, bool)]) -> Watch {
        let w = Watch::new(Arc::clone(table));
        let r = w.share();
        for &(db, k, stale) in keys {
            r.register(db, k.as_bytes(), stale);
        }
        w
    }

    #[test]
    fn a_write_marks_only_the_watchers_of_that_key_in_that_database() {
        let t = Arc::new(Watches::default());
        let a = watch(&t, &[(0, "x", false)]);
        let b = watch(&t, &[(1, "x", false), (0, "y", false)]);
        t.touch(0, b"x", false);
        assert!(a.is_dirty());
        assert!(!b.is_dirty());
        t.touch(0, b"y", true);
        assert!(b.is_dirty());
    }

    #[test]
    fn removing_a_stale_key_is_no_change_but_writing_it_is() {
        let t = Arc::new(Watches::default());
        let a = watch(&t, &[(0, "gone", true)]);
        t.touch(0, b"gone", true);
        assert!(!a.is_dirty());
        // From then on it is a missing key: creating it is a change.
        t.touch(0, b"gone", false);
        assert!(a.is_dirty());
        let b = watch(&t, &[(0, "stale", true)]);
        t.touch(0, b"stale", false);
        assert!(b.is_dirty());
    }

    #[test]
    fn a_prefix_change_marks_the_keys_under_it_in_its_database() {
        let t = Arc::new(Watches::default());
        let a = watch(&t, &[(0, "feat:1", false)]);
        let b = watch(&t, &[(0, "other", false), (3, "feat:2", false)]);
        t.touch_prefix(0, b"feat:");
        assert!(a.is_dirty());
        assert!(!b.is_dirty());
    }

    #[test]
    fn clearing_and_dropping_unregister_every_key() {
        let t = Arc::new(Watches::default());
        let mut a = watch(&t, &[(0, "x", false), (0, "x", false), (0, "y", false)]);
        assert_eq!(
            a.flag.keys.lock().len(),
            2,
            "a key is watched once per connection"
        );
        assert!(t.any());
        t.touch(0, b"x", false);
        a.clear();
        assert!(!a.is_dirty() && a.is_empty() && !t.any());
        let b = watch(&t, &[(0, "z", false)]);
        drop(b);
        assert!(!t.any());
        assert!(t.table.lock().is_empty());
    }

    #[derive(Default)]
    struct Heard(Mutex<Vec<String>>);

    impl KeyEvents for Heard {
        fn changed(&self, db: u8, key: &[u8], origin: Option<u64>) {
            self.0.lock().push(format!(
                "{db}:{}{}",
                String::from_utf8_lossy(key),
                origin.map(|o| format!(" by {o}")).unwrap_or_default()
            ));
        }
        fn flushed(&self, db: u8, all: bool) {
            self.0.lock().push(format!("flush {db} {all}"));
        }
        fn prefix_replaced(&self, db: u8, prefix: &[u8]) {
            self.0
                .lock()
                .push(format!("prefix {db}:{}", String::from_utf8_lossy(prefix)));
        }
    }

    #[test]
    fn the_sink_hears_changes_only_while_it_listens_and_watches_still_work() {
        let t = Arc::new(Watches::default());
        let heard = Arc::new(Heard::default());
        t.set_events(Arc::clone(&heard) as Arc<dyn KeyEvents>);
        t.touch(0, b"before", false);
        assert!(
            !t.any(),
            "an installed sink that does not listen costs nothing"
        );
        t.listen(true);
        assert!(t.any());
        let w = watch(&t, &[(0, "x", false)]);
        t.touch(0, b"x", false);
        t.flushed(2, false);
        t.touch_watched(0, b"flushed-key", true);
        t.touch_prefix(0, b"feat:");
        with_origin(7, || t.touch(1, b"mine", false));
        t.touch(1, b"nobody's", false);
        assert!(w.is_dirty());
        assert_eq!(
            *heard.0.lock(),
            vec![
                "0:x",
                "flush 2 false",
                "prefix 0:feat:",
                "1:mine by 7",
                "1:nobody's"
            ]
        );
        t.listen(false);
        drop(w);
        assert!(!t.any());
        t.touch(0, b"after", false);
        assert_eq!(heard.0.lock().len(), 5);
    }

    #[test]
    fn a_registration_after_the_connection_is_gone_adds_nothing() {
        let t = Arc::new(Watches::default());
        let w = Watch::new(Arc::clone(&t));
        let in_flight = w.share();
        drop(w);
        in_flight.register(0, b"late", false);
        assert!(!t.any());
    }
}
