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
    for (id, version, markers) in removable(retired(db)?, stores.partitions()) {
        // Its keys' deletions below are not counted: nothing reads its count any more.
        if version == WHOLE_STORE {
            stores.counts.forget_store(id);
        } else {
            stores.counts.forget_version(id, version);
        }
        let ranges = if version == WHOLE_STORE {
            vec![
                catalog::store_data_range(id),
                rt_range(id),
                catalog::staged_range(id),
            ]
        } else {
            let staged = catalog::staged_key(id, version);
            let after = crate::layout::next_prefix(&staged);
            vec![catalog::version_range(id, version), (staged, after)]
        };
        for (lo, hi) in ranges {
            let (files, _) = db.drop_files_in_range(&lo, &hi)?;
            report.files_dropped += files;
            report.keys_deleted += crate::chunked::delete_range(db, merger, &lo, &hi, |_| true)?;
        }
        let mut b = WriteBatch::new();
        for k in markers {
            b.delete(&k);
        }
        merger.write(b).wait()?;
        report.ranges_removed += 1;
    }
    // In cluster mode a partition's push clears its own real-time entries at its begin and end
    // (records of the log): a prune here, by this node's clock, would make replicas differ.
    if stores.partitions() > 1 {
        return Ok(report);
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

/// The retired ranges whose data can go, each with the markers to delete once it has: on a
/// single node every marked range; in cluster mode a range every partition has retired (a
/// store deleted by every partition takes its versions' markers with it). The versions'
/// data is shared by the partitions, each serving its own keys of it until it retires it.
fn removable(
    markers: Vec<(u32, u32, Option<u32>)>,
    partitions: u32,
) -> Vec<(u32, u32, Vec<Vec<u8>>)> {
    use std::collections::BTreeMap;
    if partitions <= 1 {
        return markers
            .into_iter()
            .filter(|m| m.2.is_none())
            .map(|(id, v, _)| (id, v, vec![catalog::retired_key(id, v)]))
            .collect();
    }
    let mut by_range: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
    for (id, v, p) in markers {
        if let Some(p) = p {
            by_range.entry((id, v)).or_default().push(p);
        }
    }
    let whole: std::collections::BTreeSet<u32> = by_range
        .iter()
        .filter(|((_, v), ps)| *v == WHOLE_STORE && ps.len() as u32 == partitions)
        .map(|((id, _), _)| *id)
        .collect();
    let mut out: Vec<(u32, u32, Vec<Vec<u8>>)> = Vec::new();
    for ((id, v), ps) in by_range {
        let keys = ps
            .iter()
            .map(|&p| catalog::retired_key_in(id, v, p, partitions));
        if whole.contains(&id) {
            // One removal of the whole store takes every marker of it.
            match out
                .iter_mut()
                .find(|(i, w, _)| *i == id && *w == WHOLE_STORE)
            {
                Some(e) => e.2.extend(keys),
                None => out.push((id, WHOLE_STORE, keys.collect())),
            }
        } else if ps.len() as u32 == partitions {
            out.push((id, v, keys.collect()));
        }
    }
    out
}

fn retired(db: &Db) -> StoreResult<Vec<(u32, u32, Option<u32>)>> {
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
