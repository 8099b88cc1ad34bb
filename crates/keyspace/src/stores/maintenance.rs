//! Background upkeep of stores: removes retired versions (and deleted stores) and prunes
//! real-time logs to their rewind window.
//!
//! A retired range is first cut down by dropping its whole table files (cheap: no reading,
//! no tombstones), then whatever remains — streamed writes in memtables and in files that
//! also hold other keys — is deleted in transactions, and only then is the retired marker
//! removed. Nobody reads a retired range, so the order of these steps cannot be observed,
//! and a crash at any point leaves the marker, so the next pass finishes the job.

use rialto_engine::{EngineIterator, IterOptions, KvEngine, WriteBatch};
use rialto_lsm::Db;
use rialto_txn::Merger;

use super::catalog::{self, parse_retired, rt_range, RtEntry, RETIRED, WHOLE_STORE};
use super::{StoreResult, Stores};

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassReport {
    /// Retired ranges finished.
    pub ranges_removed: u64,
    /// Table files dropped whole.
    pub files_dropped: u64,
    /// Keys deleted one by one.
    pub keys_deleted: u64,
    /// Real-time log entries pruned.
    pub rt_pruned: u64,
}

/// Runs one pass.
pub fn run_once(
    stores: &Stores,
    db: &Db,
    merger: &Merger<Db>,
    now_ms: i64,
) -> StoreResult<PassReport> {
    let mut report = PassReport::default();
    for (id, version) in retired(db)? {
        let ranges = if version == WHOLE_STORE {
            vec![catalog::store_data_range(id), rt_range(id)]
        } else {
            vec![catalog::version_range(id, version)]
        };
        for (lo, hi) in ranges {
            let (files, _) = db.drop_files_in_range(&lo, &hi)?;
            report.files_dropped += files;
            report.keys_deleted += crate::chunked::delete_range(db, merger, &lo, &hi, |_| true)?;
        }
        merger
            .write(one_delete(&catalog::retired_key(id, version)))
            .wait()?;
        report.ranges_removed += 1;
    }
    for s in stores.exec_catalog().iter() {
        let horizon = now_ms.saturating_sub(s.rewind_ms as i64);
        let cutoff = match s.pushing {
            Some(p) => horizon.min(p.started_ms.saturating_sub(s.rewind_ms as i64)),
            None => horizon,
        };
        let (lo, hi) = rt_range(s.id);
        // Entries are in number order, which is time order up to clock steps: stop at the
        // first one inside the window.
        report.rt_pruned += crate::chunked::delete_range(db, merger, &lo, &hi, |v| {
            RtEntry::decode(v).is_ok_and(|e| e.at_ms < cutoff)
        })?;
    }
    Ok(report)
}

fn one_delete(k: &[u8]) -> WriteBatch {
    let mut b = WriteBatch::new();
    b.delete(k);
    b
}

fn retired(db: &Db) -> StoreResult<Vec<(u32, u32)>> {
    let mut it = db.iter(IterOptions {
        lower: Some(vec![RETIRED]),
        upper: Some(vec![RETIRED + 1]),
        snapshot: None,
    })?;
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        if let Some(r) = parse_retired(it.key()) {
            out.push(r);
        }
        it.next();
    }
    it.status()?;
    Ok(out)
}
