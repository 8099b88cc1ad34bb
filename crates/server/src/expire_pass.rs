//! The background expiry pass: `hz` times a second, per database, it reads up to
//! `active-expire-batch` due entries of the expiry index and deletes, in one op, each key
//! whose record still expires at that time, along with the index entries, stale ones
//! included (`Keyspace::expire_pass`).
//!
//! In cluster mode the deletions are writes like any other: each master produces the due
//! entries of its own partitions' slots to the log as one op per partition, and every
//! replica applies them in the log's order (a replica deleting on its own would diverge).

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
            if !shared.active_expire.load(Ordering::Relaxed) {
                // DEBUG SET-ACTIVE-EXPIRE 0: expired keys stay stored (never returned) until
                // a write replaces them.
                return;
            }
            let (dbs, batch) = {
                let c = shared.config.read();
                (c.databases, c.active_expire_batch)
            };
            let start = std::time::Instant::now();
            let _timed = Timed(&shared, start);
            if let Some(c) = &shared.cluster {
                cluster_pass(&shared, c, batch);
                return;
            }
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

/// Starts the reclaim pass on its own thread: `hz` times a second it deletes up to
/// `collection-reclaim-batch` member keys of released large collections
/// (`Keyspace::reclaim_pass`). Each node reclaims its own: the members are unreachable
/// already, so the deletions change nothing a read or a replica could see.
pub fn spawn_reclaim(shared: Arc<Shared>) -> Periodic {
    let sh = Arc::clone(&shared);
    Periodic::start(
        "rialto-reclaim",
        move || Duration::from_millis(1000 / u64::from(sh.config.read().hz.max(1))),
        move || {
            let batch = shared.config.read().collection_reclaim_batch;
            if let Err(e) = shared.keyspace.reclaim_pass(batch) {
                warn!(error = %e, "reclaim pass failed; retrying at the next pass");
            }
        },
    )
}

/// Records the pass's duration as LATENCY's `expire-cycle` when it ends, whichever way.
struct Timed<'a>(&'a Shared, std::time::Instant);

impl Drop for Timed<'_> {
    fn drop(&mut self) {
        let micros = self.1.elapsed().as_micros() as u64;
        self.0.latency.observe("expire-cycle", micros);
    }
}

/// The cluster's pass: the due entries of database 0 whose keys this node masters, one op per
/// partition through the log, each waited for (at most the write timeout).
fn cluster_pass(shared: &Shared, c: &crate::cluster::Cluster, batch: usize) {
    use rialto_keyspace::{Op, OpKind, Value};
    let now = shared.now_ms();
    let entries = match shared.keyspace.due_expiries(0, now, batch) {
        Ok(e) => e,
        Err(e) => {
            warn!(error = %e, "expiry pass failed; retrying at the next pass");
            return;
        }
    };
    let mut by_partition: std::collections::BTreeMap<u32, Vec<(u8, i64, bytes::Bytes)>> =
        Default::default();
    for e in entries {
        let p =
            rialto_cluster::slot::partition_of(rialto_cluster::slot::key_slot(&e.2), c.partitions);
        if c.node.is_master(p) {
            by_partition.entry(p).or_default().push(e);
        }
    }
    for (p, entries) in by_partition {
        let op = Op::new(0, now, OpKind::ExpireDue { entries });
        let outcome = c
            .submit(p, &crate::cluster::Payload::One(op))
            .and_then(|s| s.wait());
        match outcome {
            Ok(((crate::cluster::Applied::One(Ok(Value::Int(n))), _), _)) => {
                shared
                    .stats
                    .expired_keys
                    .fetch_add(n.max(0) as u64, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(e) => {
                warn!(partition = p, error = %e, "expiry pass not applied; retrying at the next pass")
            }
        }
    }
}
