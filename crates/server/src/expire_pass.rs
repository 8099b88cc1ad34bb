//! The background expiry pass: `hz` times a second, per database, it reads up to
//! `active-expire-batch` due entries of the expiry index and deletes, in one op, each key
//! whose record still expires at that time, along with the index entries, stale ones
//! included (`Keyspace::expire_pass`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use crate::periodic::Periodic;
use crate::server::Shared;

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
                match shared.keyspace.expire_pass(db as u8, batch) {
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
