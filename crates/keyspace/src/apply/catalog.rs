//! Catalog changes: create, delete and roll back stores, begin and end pushes. Each one reads
//! the catalog in execution order, stages its records and installs the new catalog as the
//! execution-order one (reads see it once the transaction is durable, see `stores`).

use std::sync::Arc;

use rialto_lsm::Db;
use rialto_txn::TxnContext;

use crate::error::Result;
use crate::op::{PartStoreOp, StoreOp};
use crate::stores::catalog::{
    catalog_at_key, meta_key, next_id_key, record_key, retired_key, retired_key_in, rt_range,
    version_key, RtEntry, WHOLE_STORE,
};
use crate::stores::settings::DEFAULT_KEEP;
use crate::stores::{
    push, Catalog, Pushing, StoreError, StoreMeta, StoreSettings, Stores, VersionInfo,
};
use crate::value::Value;

pub(super) fn apply(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    now_ms: i64,
    op: &StoreOp,
) -> Result<Value> {
    let cat = stores.exec_catalog_full();
    let (new, meta) = match op {
        StoreOp::Create {
            name,
            prefix,
            rewind_ms,
            settings,
        } => create(tx, stores, &cat, now_ms, name, prefix, *rewind_ms, settings)?,
        StoreOp::Configure { name, settings } => configure(tx, &cat, name, settings)?,
        StoreOp::Delete { name } => delete(tx, &cat, name)?,
        StoreOp::Rollback { name, to } => rollback(tx, &cat, name, *to)?,
        StoreOp::RetireLeft { name, version } => retire_left(tx, &cat, name, *version)?,
        StoreOp::PushBegin { store } => push_begin(tx, &cat, now_ms, store)?,
        StoreOp::PushEnd { store, swap } => push_end(tx, stores, &cat, store, *swap)?,
    };
    // What the prefix reads is replaced: a store created or deleted, a rollback that moved,
    // a swap. A push begun or aborted, or a left version retired, changes nothing a read sees.
    let replaced = match op {
        StoreOp::Create { .. } | StoreOp::Delete { .. } => true,
        StoreOp::Rollback { name, .. } => cat
            .get(name)
            .is_some_and(|old| old.current.number != meta.current.number),
        StoreOp::PushEnd { swap, .. } => swap.is_some(),
        StoreOp::PushBegin { .. } | StoreOp::RetireLeft { .. } | StoreOp::Configure { .. } => false,
    };
    if replaced {
        stores.watches.touch_prefix(0, &meta.prefix);
    }
    count_versions(stores, &meta);
    stores.install_exec(Arc::new(new));
    Ok(Value::Store(Box::new(meta)))
}

/// Deletes the keys of the default store (database 0) under `prefix` (in cluster mode, those of
/// partition `part` of `n`): a store created there hides them, and its deletion leaves the
/// prefix empty. A store is created only where no key is (checked before the change is
/// asked for); this removes what a write racing that check left.
fn drop_default_keys_under(
    tx: &mut TxnContext<'_, Db>,
    prefix: &[u8],
    part: Option<(u32, u32)>,
) -> Result<()> {
    let mut lo = crate::layout::data_key(0, prefix);
    let hi = crate::layout::next_prefix(&lo);
    loop {
        let keys = tx.first_keys(&lo, &hi, 1024)?;
        let Some(last) = keys.last() else {
            return Ok(());
        };
        lo = [last.as_slice(), &[0]].concat();
        let more = keys.len() == 1024;
        for k in keys {
            let user = &k[crate::layout::DATA_KEY_OVERHEAD..];
            if part.is_none_or(|(p, n)| crate::slot::key_partition(user, n) == p) {
                tx.delete(&k);
            }
        }
        if !more {
            return Ok(());
        }
    }
}

/// Counts the keys of every version of `m` that writes can reach (live or being pushed) from
/// now on; a version not counted yet starts empty (a pushed version's load sets its count).
fn count_versions(stores: &Stores, m: &crate::stores::StoreMeta) {
    for v in m.live_versions().chain(m.pushing.map(|p| p.version)) {
        stores.counts.track(m.id, v);
    }
}

/// Applies a change of partition `part`'s stores (cluster mode). Each change is idempotent:
/// one the partition already made, or moved past, answers the store as it is and writes
/// nothing; one that contradicts the partition's catalog (a name held by another store, an
/// overlapping prefix) is refused and writes nothing.
pub(super) fn apply_part(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    part: u32,
    at: u64,
    op: &PartStoreOp,
) -> Result<Value> {
    let n = stores.partitions();
    if part >= n {
        return Err(StoreError::Corrupt(format!("partition {part} of {n}")).into());
    }
    let cat = stores.exec_catalog_full();
    if at < cat.at_in(part) {
        // Derived from an older catalog than a change this partition already made.
        return Ok(Value::Ok);
    }
    let same = |name: &str, id: u32| cat.get_in(part, name).filter(|s| s.id == id);
    let (new, meta): (Option<Catalog>, Option<StoreMeta>) = match op {
        PartStoreOp::Create {
            name,
            id,
            prefix,
            created_ms,
            settings,
        } => {
            if let Some(s) = same(name, *id) {
                (None, Some((**s).clone()))
            } else {
                if cat.get_in(part, name).is_some() {
                    return Err(StoreError::Exists(name.clone()).into());
                }
                if let Some(other) = cat.prefix_conflict_in(part, prefix) {
                    return Err(StoreError::PrefixOverlaps {
                        store: other.name.clone(),
                        prefix: String::from_utf8_lossy(&other.prefix).into_owned(),
                    }
                    .into());
                }
                drop_default_keys_under(tx, prefix, Some((part, n)))?;
                let meta = StoreMeta {
                    name: name.clone(),
                    id: *id,
                    prefix: prefix.to_vec(),
                    current: VersionInfo {
                        number: 1,
                        created_ms: *created_ms,
                        ..VersionInfo::default()
                    },
                    kept: Vec::new(),
                    keep: settings.keep.unwrap_or(DEFAULT_KEEP),
                    next_version: 2,
                    rewind_ms: 0,
                    pushing: None,
                    created_ms: *created_ms,
                    compression: settings.compression.unwrap_or_default(),
                };
                tx.put(&record_key(name, part, n), &meta.encode());
                stores.rt.reserve(*id);
                (Some(cat.with_in(part, meta.clone())), Some(meta))
            }
        }
        PartStoreOp::Configure { name, id, settings } => {
            let s = same(name, *id).ok_or_else(|| StoreError::NoSuchStore(name.clone()))?;
            let mut m = (**s).clone();
            settings.apply_to(&mut m);
            for v in m.drop_beyond_keep() {
                tx.put(&retired_key_in(m.id, v, part, n), b"");
            }
            if m == **s {
                (None, Some(m))
            } else {
                tx.put(&record_key(name, part, n), &m.encode());
                (Some(cat.with_in(part, m.clone())), Some(m))
            }
        }
        PartStoreOp::Delete { name, id } => match same(name, *id) {
            None => (None, None),
            Some(s) => {
                let m = (**s).clone();
                clear_rt(tx, &m, part, n)?;
                tx.delete(&record_key(name, part, n));
                tx.put(&retired_key_in(m.id, WHOLE_STORE, part, n), b"");
                (Some(cat.without_in(part, name)), Some(m))
            }
        },
        PartStoreOp::PushBegin {
            name,
            id,
            version,
            started_ms,
        } => {
            let s = same(name, *id).ok_or_else(|| StoreError::NoSuchStore(name.clone()))?;
            let mut m = (**s).clone();
            if m.pushing.is_some_and(|p| p.version == *version) || *version < m.next_version {
                // Begun already, or a version this partition is past.
                (None, Some(m))
            } else {
                if let Some(old) = m.pushing {
                    // A push the cluster gave up on without this partition hearing of it.
                    tx.put(&retired_key_in(m.id, old.version, part, n), b"");
                }
                // What is kept from here on is this push's to replay.
                clear_rt(tx, &m, part, n)?;
                m.pushing = Some(Pushing {
                    version: *version,
                    started_ms: *started_ms,
                });
                m.next_version = version.saturating_add(1);
                tx.put(&record_key(name, part, n), &m.encode());
                (Some(cat.with_in(part, m.clone())), Some(m))
            }
        }
        PartStoreOp::PushEnd {
            name,
            id,
            version,
            swap,
        } => match same(name, *id) {
            Some(s) if s.pushing.is_some_and(|p| p.version == *version) => {
                let mut m = (**s).clone();
                m.pushing = None;
                match swap {
                    Some(info) => {
                        replay_part(tx, &m, *version, part, n)?;
                        let old = m.current;
                        m.current = VersionInfo {
                            number: *version,
                            ..*info
                        };
                        m.keep_version(old);
                        for v in m.drop_beyond_keep() {
                            tx.put(&retired_key_in(m.id, v, part, n), b"");
                        }
                    }
                    None => {
                        clear_rt(tx, &m, part, n)?;
                        tx.put(&retired_key_in(m.id, *version, part, n), b"");
                    }
                }
                tx.put(&record_key(name, part, n), &m.encode());
                (Some(cat.with_in(part, m.clone())), Some(m))
            }
            // Ended already, or never begun here.
            other => (None, other.map(|s| (**s).clone())),
        },
        PartStoreOp::Rollback { name, id, to } => {
            let s = same(name, *id).ok_or_else(|| StoreError::NoSuchStore(name.clone()))?;
            let mut m = (**s).clone();
            let target = m.older().find(|v| v.number == *to).copied();
            if m.current.number == *to {
                (None, Some(m))
            } else if let Some(target) = target {
                // Every replica of the partition applies the change at once, in order, so
                // the versions left (the current one and the kept ones newer than `to`) are
                // retired in the same change.
                tx.put(&retired_key_in(m.id, m.current.number, part, n), b"");
                for v in m.kept.iter().filter(|v| v.number > *to) {
                    tx.put(&retired_key_in(m.id, v.number, part, n), b"");
                }
                m.kept.retain(|v| v.number < *to);
                m.current = target;
                tx.put(&record_key(name, part, n), &m.encode());
                (Some(cat.with_in(part, m.clone())), Some(m))
            } else {
                return Err(StoreError::VersionNotKept {
                    store: name.clone(),
                    version: *to,
                    kept: m.older().map(|v| v.number).collect(),
                }
                .into());
            }
        }
    };
    let new = match new {
        Some(c) => Some(c),
        None if at > cat.at_in(part) => Some((*cat).clone()),
        None => None,
    };
    if let Some(mut new) = new {
        new.set_at(part, at);
        tx.put(&catalog_at_key(part), &at.to_le_bytes());
        let replaced = match op {
            PartStoreOp::PushBegin { .. } | PartStoreOp::Configure { .. } => false,
            PartStoreOp::PushEnd { swap, .. } => swap.is_some(),
            _ => true,
        };
        if let (true, Some(m)) = (replaced, &meta) {
            stores.watches.touch_prefix(0, &m.prefix);
        }
        if let Some(m) = &meta {
            count_versions(stores, m);
        }
        stores.install_exec(Arc::new(new));
    }
    Ok(match meta {
        Some(m) => Value::Store(Box::new(m)),
        None => Value::Ok,
    })
}

/// The real-time log entries of store `m` whose keys are partition `part`'s, as the
/// transaction sees them, in entry order (which is the partition's log order).
fn part_entries(
    tx: &mut TxnContext<'_, Db>,
    m: &StoreMeta,
    part: u32,
    partitions: u32,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let (lo, hi) = rt_range(m.id);
    let mut out = Vec::new();
    for k in tx.first_keys(&lo, &hi, usize::MAX)? {
        let Some(raw) = tx.get(&k)? else { continue };
        let e = RtEntry::decode(&raw).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        if crate::slot::key_partition(e.key, partitions) == part {
            out.push((k, raw.to_vec()));
        }
    }
    Ok(out)
}

/// Deletes partition `part`'s real-time log entries of store `m`.
fn clear_rt(tx: &mut TxnContext<'_, Db>, m: &StoreMeta, part: u32, partitions: u32) -> Result<()> {
    for (k, _) in part_entries(tx, m, part, partitions)? {
        tx.delete(&k);
    }
    Ok(())
}

/// Replays partition `part`'s streamed writes kept since its push began onto `version`, then
/// deletes them.
fn replay_part(
    tx: &mut TxnContext<'_, Db>,
    m: &StoreMeta,
    version: u32,
    part: u32,
    partitions: u32,
) -> Result<()> {
    for (k, raw) in part_entries(tx, m, part, partitions)? {
        let e = RtEntry::decode(&raw).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let vk = version_key(m.id, version, e.key);
        match e.record {
            Some(r) => tx.put(&vk, r),
            None => tx.delete(&vk),
        }
        tx.delete(&k);
    }
    Ok(())
}

fn find<'c>(cat: &'c Catalog, name: &str) -> Result<&'c Arc<StoreMeta>, StoreError> {
    cat.get(name)
        .ok_or_else(|| StoreError::NoSuchStore(name.to_string()))
}

#[allow(clippy::too_many_arguments)]
fn create(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    cat: &Catalog,
    now_ms: i64,
    name: &str,
    prefix: &[u8],
    rewind_ms: u64,
    settings: &StoreSettings,
) -> Result<(Catalog, StoreMeta)> {
    if cat.get(name).is_some() {
        return Err(StoreError::Exists(name.to_string()).into());
    }
    // Stores live in database 0 as stored (see `dbmap`).
    if stores.dbs.physical(0) != 0 {
        return Err(crate::error::Error::StoresPinDatabaseZero);
    }
    if let Some(other) = cat.prefix_conflict(prefix) {
        return Err(StoreError::PrefixOverlaps {
            store: other.name.clone(),
            prefix: String::from_utf8_lossy(&other.prefix).into_owned(),
        }
        .into());
    }
    drop_default_keys_under(tx, prefix, None)?;
    let id = stores.take_store_id();
    tx.put(&next_id_key(), &(id + 1).to_le_bytes());
    let meta = StoreMeta {
        name: name.to_string(),
        id,
        prefix: prefix.to_vec(),
        current: VersionInfo {
            number: 1,
            created_ms: now_ms,
            ..VersionInfo::default()
        },
        kept: Vec::new(),
        keep: settings.keep.unwrap_or(DEFAULT_KEEP),
        next_version: 2,
        rewind_ms,
        pushing: None,
        created_ms: now_ms,
        compression: settings.compression.unwrap_or_default(),
    };
    tx.put(&meta_key(name), &meta.encode());
    stores.rt.set(id, 0);
    Ok((cat.with(meta.clone()), meta))
}

/// Changes the settings `settings` sets. A push in progress keeps the compression it began
/// with (its session holds the store as it was then). A smaller `keep` retires the oldest
/// versions beyond it at once: no reader routes to an older version, whichever catalog it
/// holds.
fn configure(
    tx: &mut TxnContext<'_, Db>,
    cat: &Catalog,
    name: &str,
    settings: &StoreSettings,
) -> Result<(Catalog, StoreMeta)> {
    let s = find(cat, name)?;
    let mut m = (**s).clone();
    settings.apply_to(&mut m);
    for v in m.drop_beyond_keep() {
        tx.put(&retired_key(m.id, v), b"");
    }
    tx.put(&meta_key(name), &m.encode());
    Ok((cat.with(m.clone()), m))
}

fn delete(tx: &mut TxnContext<'_, Db>, cat: &Catalog, name: &str) -> Result<(Catalog, StoreMeta)> {
    let s = find(cat, name)?;
    if s.pushing.is_some() {
        return Err(StoreError::DeleteWhilePushing(name.to_string()).into());
    }
    tx.delete(&meta_key(name));
    tx.put(&retired_key(s.id, WHOLE_STORE), b"");
    Ok((cat.without(name), (**s).clone()))
}

/// Goes back to kept version `to` (default: the newest older one). The versions left — the
/// current one and the kept ones newer than `to` — stay kept, still written to, until
/// `retire_left` retires them: readers on the catalog before this change still read the
/// version that was current.
fn rollback(
    tx: &mut TxnContext<'_, Db>,
    cat: &Catalog,
    name: &str,
    to: Option<u32>,
) -> Result<(Catalog, StoreMeta)> {
    let s = find(cat, name)?;
    let current = s.current.number;
    // Kept versions newer than the current one were left by a rollback: not targets.
    let older: Vec<u32> = s.older().map(|v| v.number).collect();
    match to {
        // Already there: a retried rollback succeeds without changing anything.
        Some(v) if v == current => return Ok((cat.clone(), (**s).clone())),
        Some(v) if v > current => {
            return Err(StoreError::RollbackForward {
                store: name.to_string(),
                version: v,
                current,
            }
            .into())
        }
        Some(v) if !older.contains(&v) => {
            return Err(StoreError::VersionNotKept {
                store: name.to_string(),
                version: v,
                kept: older,
            }
            .into())
        }
        _ if older.is_empty() => {
            return Err(StoreError::NoPrevious {
                store: name.to_string(),
                current,
            }
            .into())
        }
        _ => {}
    }
    let target = to.unwrap_or(older[0]);
    let mut m = (**s).clone();
    let Some(i) = m.kept.iter().position(|v| v.number == target) else {
        return Err(
            StoreError::Corrupt(format!("store '{name}': version {target} vanished")).into(),
        );
    };
    let back = m.kept.remove(i);
    let left = std::mem::replace(&mut m.current, back);
    m.keep_version(left);
    tx.put(&meta_key(name), &m.encode());
    Ok((cat.with(m.clone()), m))
}

/// Retires the versions a rollback left, newer than the current one, up to `version` (the
/// version that was current before it).
fn retire_left(
    tx: &mut TxnContext<'_, Db>,
    cat: &Catalog,
    name: &str,
    version: u32,
) -> Result<(Catalog, StoreMeta)> {
    let s = find(cat, name)?;
    let current = s.current.number;
    let gone = |v: &VersionInfo| v.number > current && v.number <= version;
    if !s.kept.iter().any(gone) {
        return Ok((cat.clone(), (**s).clone()));
    }
    let mut m = (**s).clone();
    for v in m.kept.iter().filter(|v| gone(v)) {
        tx.put(&retired_key(m.id, v.number), b"");
    }
    m.kept.retain(|v| !gone(v));
    tx.put(&meta_key(name), &m.encode());
    Ok((cat.with(m.clone()), m))
}

fn push_begin(
    tx: &mut TxnContext<'_, Db>,
    cat: &Catalog,
    now_ms: i64,
    name: &str,
) -> Result<(Catalog, StoreMeta)> {
    let s = find(cat, name)?;
    if let Some(p) = s.pushing {
        return Err(StoreError::PushInProgress {
            store: name.to_string(),
            version: p.version,
        }
        .into());
    }
    let mut m = (**s).clone();
    let version = push_version(cat, m.next_version).ok_or(StoreError::VersionsExhausted)?;
    m.pushing = Some(Pushing {
        version,
        started_ms: now_ms,
    });
    m.next_version = version
        .checked_add(1)
        .filter(|&v| v != WHOLE_STORE)
        .ok_or(StoreError::VersionsExhausted)?;
    tx.put(&meta_key(name), &m.encode());
    Ok((cat.with(m.clone()), m))
}

/// The version a push begun now loads: the store's next number, past the numbers other
/// stores' pushes in progress hold, so that the number alone names the push (its id in
/// PUSH ADD, COMMIT and ABORT). Within the store, numbers still only grow and are never
/// reused; `None` when they run out.
fn push_version(cat: &Catalog, next: u32) -> Option<u32> {
    let taken: std::collections::HashSet<u32> = cat
        .iter()
        .filter_map(|s| s.pushing.map(|p| p.version))
        .collect();
    let mut v = next;
    while taken.contains(&v) {
        v = v.checked_add(1)?;
    }
    (v != 0 && v != WHOLE_STORE).then_some(v)
}

fn push_end(
    tx: &mut TxnContext<'_, Db>,
    stores: &Stores,
    cat: &Catalog,
    name: &str,
    swap: Option<(VersionInfo, u64)>,
) -> Result<(Catalog, StoreMeta)> {
    let s = find(cat, name)?;
    let p = s
        .pushing
        .ok_or_else(|| StoreError::NoPush(name.to_string()))?;
    let mut m = (**s).clone();
    m.pushing = None;
    match swap {
        Some((info, from)) => {
            let until = stores.rt.peek(m.id);
            push::replay(tx, &m, p, from, until)?;
            // Versions a rollback left and a stop kept from being retired go now.
            let current = m.current.number;
            for v in m.kept.iter().filter(|v| v.number > current) {
                tx.put(&retired_key(m.id, v.number), b"");
            }
            m.kept.retain(|v| v.number < current);
            let old = m.current;
            m.current = VersionInfo {
                number: p.version,
                ..info
            };
            m.keep_version(old);
            for v in m.drop_beyond_keep() {
                tx.put(&retired_key(m.id, v), b"");
            }
        }
        None => tx.put(&retired_key(m.id, p.version), b""),
    }
    tx.put(&meta_key(name), &m.encode());
    Ok((cat.with(m.clone()), m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(name: &str, id: u32, next: u32, pushing: Option<u32>) -> StoreMeta {
        StoreMeta {
            name: name.into(),
            id,
            prefix: format!("{name}:").into_bytes(),
            current: VersionInfo {
                number: 1,
                ..VersionInfo::default()
            },
            kept: Vec::new(),
            keep: DEFAULT_KEEP,
            next_version: next,
            rewind_ms: 0,
            pushing: pushing.map(|version| Pushing {
                version,
                started_ms: 0,
            }),
            created_ms: 0,
            compression: rialto_lsm::Compression::None,
        }
    }

    #[test]
    fn a_push_number_is_unique_among_the_pushes_in_progress() {
        let cat = Catalog::new([
            store("a", 1, 27, Some(26)),
            store("b", 2, 28, Some(27)),
            store("c", 3, 9, None),
        ]);
        // Free: the store's next number.
        assert_eq!(push_version(&cat, 9), Some(9));
        // Held by pushes in progress elsewhere: skipped.
        assert_eq!(push_version(&cat, 26), Some(28));
        assert_eq!(push_version(&Catalog::default(), 26), Some(26));
        // Numbers run out before WHOLE_STORE.
        let full = Catalog::new([store("a", 1, 2, Some(WHOLE_STORE - 1))]);
        assert_eq!(push_version(&full, WHOLE_STORE - 1), None);
    }
}
