//! The background expiry pass: `hz` times a second, per database, it reads up to
//! `active-expire-batch` due entries of the expiry index and deletes, in one merger
//! transaction, each key whose record still expires at that time (the record is the truth;
//! see `keyspace`), along with the index entries, stale ones included.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rialto_engine::{EngineIterator, IterOptions, KvEngine};
use tracing::warn;

use crate::keyspace;
use crate::periodic::Periodic;
use crate::server::Shared;
use crate::store::{Keys, Txn};

/// Starts the pass on its own thread.
pub fn spawn(shared: Arc<Shared>) -> Periodic {
    let sh = Arc::clone(&shared);
    Periodic::start(
        "rialto-expire",
        move || Duration::from_millis(1000 / u64::from(sh.config.read().hz.max(1))),
        move || {
            let (dbs, batch) = {
                let c = shared.config.read();
                (c.databases, c.active_expire_batch)
            };
            for db in 0..dbs.min(256) {
                match run_once(&shared, db as u8, batch) {
                    Ok(n) => {
                        shared.stats.expired_keys.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(e) => {
                        warn!(error = %e, "expiry pass failed; retrying at the next pass");
                        break;
                    }
                }
            }
        },
    )
}

/// One pass over database `db`: returns how many keys it deleted.
pub fn run_once(shared: &Shared, db: u8, batch: usize) -> rialto_engine::Result<u64> {
    let now = shared.now_ms();
    // Due means expired: `at < now` (a key lives through its own millisecond).
    let (lo, hi) = keyspace::expiry_due_range(db, now - 1);
    let mut it = shared.db.iter(IterOptions {
        lower: Some(lo),
        upper: Some(hi),
        snapshot: None,
    })?;
    it.seek_to_first();
    let mut due: Vec<Vec<u8>> = Vec::new();
    while it.valid() && due.len() < batch {
        due.push(it.key().to_vec());
        it.next();
    }
    it.status()?;
    if due.is_empty() {
        return Ok(0);
    }
    let stores = Arc::clone(&shared.stores);
    let handle = shared.merger.submit(move |tx| {
        let mut deleted = 0u64;
        let catalog = stores.exec_catalog();
        for ek in &due {
            let Some((d, at, key)) = keyspace::parse_expiry_key(ek) else {
                continue;
            };
            let mut keys = Keys {
                io: &mut Txn(&mut *tx),
                db: d,
                now_ms: now,
                stores: &catalog,
                rt: Some(&stores.rt),
            };
            // A record that does not decode is left alone (reading it reports the damage).
            let live = keys.get_including_expired(key).ok().flatten();
            // Only a record that still carries this exact time is due; a newer SET, PERSIST
            // or EXPIRE made the index entry stale.
            if live.is_some_and(|r| r.expire_at_ms == Some(at) && r.expired(now)) {
                keys.delete(key);
                deleted += 1;
            }
            tx.delete(ek);
        }
        Ok(deleted)
    });
    handle.wait()
}
