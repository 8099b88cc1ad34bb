//! The cluster's store catalog: which stores exist, their ids, prefixes and versions, and the
//! push in progress of each — the *desired* state every partition of the log is driven
//! towards.
//!
//! Any node may ask for a change by appending a record to the single-partition topic
//! `<topic>.stores`; every node reads that topic from its start and applies the records in
//! offset order to a [`CatalogState`] with the same deterministic rules, so every node holds
//! the same catalog at the same offset and a request's outcome (a store id, a version number,
//! a refusal) is the same wherever it is read. Kafka orders the requests; nothing here
//! elects or votes. Each partition's master then makes its partition's records
//! (`PartStoreOp`) follow the catalog: a partition changes its stores only through its own
//! log, at its own offsets.
//!
//! ```text
//! record := version: u8 (1) | kind: u8 | request: u64 LE | name: str | body
//!   1 create    prefix: bytes | created_ms: i64 LE | [settings, when any is set]
//!   2 delete
//!   3 begin     started_ms: i64 LE | duplicates: u8 (0 refuse, 1 last wins) | node: u32 LE
//!               | min_records: u64 LE | max_shrink_percent: u32 LE
//!   4 ready     version: u32 LE | node: u32 LE | records: u64 LE | bytes: u64 LE
//!   5 failed    version: u32 LE | node: u32 LE | reason: str
//!   6 commit    version: u32 LE | created_ms: i64 LE
//!   7 abort     version: u32 LE | reason: str
//!   8 rollback  to: u32 LE
//!   9 configure settings
//! str, bytes := len: u32 LE | bytes
//! settings := n: u8 | (tag: u8 | value) * n   (`rialto_keyspace::StoreSettings`:
//!             1 compression: u8 (0 none, 1 lz4, 2 zstd), 2 keep: u32 LE)
//! ```
//! A create without settings is laid out as before settings existed, so nodes that predate
//! them still read it; a record with settings, or a configure, is skipped by such a node
//! (malformed to it): upgrade every node before setting a store's compression or keep. A
//! rollback's `to` may name any kept older version; a node that predates `keep` reads the same
//! record (it only ever had one such version).
//! `request` is a number the asking node draws at random, to find its record's outcome.

use std::collections::{BTreeMap, HashMap, VecDeque};

use rialto_keyspace::{
    Compression, StoreSettings, VersionInfo, DEFAULT_STORE_KEEP as DEFAULT_KEEP,
};

const FORMAT: u8 = 1;
/// Outcomes kept for requesters to find, the oldest dropped first.
const OUTCOMES_KEPT: usize = 4096;

/// A request to change the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Creates a store owning the keys that start with `prefix`; a setting left out takes its
    /// default (the requesting node resolves the server's own defaults into the record, so
    /// every node applies the same).
    Create {
        prefix: Vec<u8>,
        created_ms: i64,
        settings: StoreSettings,
    },
    /// Changes the settings `settings` sets.
    Configure { settings: StoreSettings },
    /// Deletes a store.
    Delete,
    /// Begins a push into a store, coordinated by `node`.
    Begin {
        started_ms: i64,
        last_wins: bool,
        node: u32,
        guard: Guard,
    },
    /// Node `node` loaded version `version` (`records`, `bytes`) and can serve it.
    Ready {
        version: u32,
        node: u32,
        records: u64,
        bytes: u64,
    },
    /// Node `node` could not load version `version`.
    Failed {
        version: u32,
        node: u32,
        reason: String,
    },
    /// Version `version` replaces the current one in every partition.
    Commit { version: u32, created_ms: i64 },
    /// The push of version `version` ends without a swap.
    Abort { version: u32, reason: String },
    /// The kept older version `to` (0: the newest one) becomes current again; the versions
    /// newer than it are no longer kept.
    Rollback { to: u32 },
}

/// What a push must load to be swapped in (as on one node, `PushGuard`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guard {
    pub min_records: u64,
    pub max_shrink_percent: u32,
}

/// One record of the catalog topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogRecord {
    pub request: u64,
    pub name: String,
    pub change: Change,
}

/// A catalog record that does not decode (skipped by every node alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed store catalog record: {0}")]
pub struct Malformed(&'static str);

impl CatalogRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64 + self.name.len());
        v.push(FORMAT);
        let kind = match &self.change {
            Change::Create { .. } => 1,
            Change::Delete => 2,
            Change::Begin { .. } => 3,
            Change::Ready { .. } => 4,
            Change::Failed { .. } => 5,
            Change::Commit { .. } => 6,
            Change::Abort { .. } => 7,
            Change::Rollback { .. } => 8,
            Change::Configure { .. } => 9,
        };
        v.push(kind);
        v.extend_from_slice(&self.request.to_le_bytes());
        put_bytes(&mut v, self.name.as_bytes());
        match &self.change {
            Change::Create {
                prefix,
                created_ms,
                settings,
            } => {
                put_bytes(&mut v, prefix);
                v.extend_from_slice(&created_ms.to_le_bytes());
                if !settings.is_empty() {
                    settings.encode_into(&mut v);
                }
            }
            Change::Configure { settings } => settings.encode_into(&mut v),
            Change::Delete => {}
            Change::Begin {
                started_ms,
                last_wins,
                node,
                guard,
            } => {
                v.extend_from_slice(&started_ms.to_le_bytes());
                v.push(u8::from(*last_wins));
                v.extend_from_slice(&node.to_le_bytes());
                v.extend_from_slice(&guard.min_records.to_le_bytes());
                v.extend_from_slice(&guard.max_shrink_percent.to_le_bytes());
            }
            Change::Ready {
                version,
                node,
                records,
                bytes,
            } => {
                v.extend_from_slice(&version.to_le_bytes());
                v.extend_from_slice(&node.to_le_bytes());
                v.extend_from_slice(&records.to_le_bytes());
                v.extend_from_slice(&bytes.to_le_bytes());
            }
            Change::Failed {
                version,
                node,
                reason,
            } => {
                v.extend_from_slice(&version.to_le_bytes());
                v.extend_from_slice(&node.to_le_bytes());
                put_bytes(&mut v, reason.as_bytes());
            }
            Change::Commit {
                version,
                created_ms,
            } => {
                v.extend_from_slice(&version.to_le_bytes());
                v.extend_from_slice(&created_ms.to_le_bytes());
            }
            Change::Abort { version, reason } => {
                v.extend_from_slice(&version.to_le_bytes());
                put_bytes(&mut v, reason.as_bytes());
            }
            Change::Rollback { to } => v.extend_from_slice(&to.to_le_bytes()),
        }
        v
    }

    /// Decodes strictly: an unknown version or kind, a short field or bytes left over fail.
    pub fn decode(b: &[u8]) -> Result<CatalogRecord, Malformed> {
        let mut r = Reader(b);
        if r.u8()? != FORMAT {
            return Err(Malformed("unknown format version"));
        }
        let kind = r.u8()?;
        let request = r.u64()?;
        let name = String::from_utf8(r.bytes()?.to_vec()).map_err(|_| Malformed("name"))?;
        let change = match kind {
            1 => Change::Create {
                prefix: r.bytes()?.to_vec(),
                created_ms: r.u64()? as i64,
                // Present only when some setting is (one layout per record).
                settings: if r.0.is_empty() {
                    StoreSettings::default()
                } else {
                    Some(r.settings()?)
                        .filter(|s| !s.is_empty())
                        .ok_or(Malformed("empty settings"))?
                },
            },
            2 => Change::Delete,
            3 => Change::Begin {
                started_ms: r.u64()? as i64,
                last_wins: match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(Malformed("duplicates")),
                },
                node: r.u32()?,
                guard: Guard {
                    min_records: r.u64()?,
                    max_shrink_percent: r.u32()?,
                },
            },
            4 => Change::Ready {
                version: r.u32()?,
                node: r.u32()?,
                records: r.u64()?,
                bytes: r.u64()?,
            },
            5 => Change::Failed {
                version: r.u32()?,
                node: r.u32()?,
                reason: r.string()?,
            },
            6 => Change::Commit {
                version: r.u32()?,
                created_ms: r.u64()? as i64,
            },
            7 => Change::Abort {
                version: r.u32()?,
                reason: r.string()?,
            },
            8 => Change::Rollback { to: r.u32()? },
            9 => Change::Configure {
                settings: r.settings()?,
            },
            _ => return Err(Malformed("unknown kind")),
        };
        if !r.0.is_empty() {
            return Err(Malformed("bytes left over"));
        }
        Ok(CatalogRecord {
            request,
            name,
            change,
        })
    }
}

fn put_bytes(v: &mut Vec<u8>, b: &[u8]) {
    v.extend_from_slice(&(b.len() as u32).to_le_bytes());
    v.extend_from_slice(b);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> Result<String, Malformed> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| Malformed("text"))
    }
    fn settings(&mut self) -> Result<StoreSettings, Malformed> {
        StoreSettings::decode_from(&mut self.0).map_err(|e| Malformed(e.0))
    }
}

/// A push in progress, as the catalog holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterPush {
    pub version: u32,
    pub started_ms: i64,
    pub last_wins: bool,
    /// The node coordinating it.
    pub node: u32,
    pub guard: Guard,
    /// Nodes that loaded the version: records and bytes each loaded.
    pub ready: BTreeMap<u32, (u64, u64)>,
    /// The first node that could not load it, and why.
    pub failed: Option<(u32, String)>,
    /// The store's compression when the push began: every node writes the version with it.
    pub compression: Compression,
}

/// A store as the cluster's catalog holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterStore {
    pub name: String,
    /// The same in every partition; never reused.
    pub id: u32,
    pub prefix: Vec<u8>,
    pub created_ms: i64,
    /// The version every partition is to serve.
    pub current: VersionInfo,
    /// The older versions a rollback can go back to, newest first (at most `keep - 1`).
    pub older: Vec<VersionInfo>,
    /// Versions kept: the current one and up to `keep - 1` older ones.
    pub keep: u32,
    pub next_version: u32,
    pub pushing: Option<ClusterPush>,
    /// Block compression of the tables written for its versions.
    pub compression: Compression,
}

/// Why the catalog refused a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    NoSuchStore,
    Exists,
    PrefixOverlaps {
        store: String,
        prefix: Vec<u8>,
    },
    PushInProgress {
        version: u32,
    },
    DeleteWhilePushing,
    NoSuchPush {
        version: u32,
    },
    VersionsExhausted,
    NoPrevious {
        current: u32,
    },
    VersionNotKept {
        version: u32,
        kept: Vec<u32>,
    },
    RollbackForward {
        version: u32,
        current: u32,
    },
    /// The push failed on a node (or was aborted) before its commit.
    PushFailed {
        reason: String,
    },
}

/// What a request came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done: the store (create, delete, rollback, commit, abort) or the version begun.
    Done {
        id: u32,
        version: u32,
    },
    Refused(Refusal),
}

/// The catalog at one offset of its topic: the same on every node at the same offset.
#[derive(Clone, Debug, Default)]
pub struct CatalogState {
    /// The offset of the next record to apply.
    pub next: u64,
    pub next_id: u32,
    pub stores: BTreeMap<String, ClusterStore>,
    outcomes: HashMap<u64, Outcome>,
    order: VecDeque<u64>,
}

impl CatalogState {
    /// The outcome of request `request`, once its record is applied.
    pub fn outcome(&self, request: u64) -> Option<&Outcome> {
        self.outcomes.get(&request)
    }

    /// The store whose prefix starts `key`, if any.
    pub fn route(&self, key: &[u8]) -> Option<&ClusterStore> {
        self.stores.values().find(|s| key.starts_with(&s.prefix))
    }

    /// Applies the record at `offset` (a damaged one is skipped alike everywhere).
    pub fn apply(&mut self, offset: u64, payload: &[u8]) {
        if offset < self.next {
            return;
        }
        self.next = offset + 1;
        let Ok(rec) = CatalogRecord::decode(payload) else {
            return;
        };
        let outcome = self.change(&rec.name, rec.change);
        if let Some(o) = outcome {
            if self.outcomes.insert(rec.request, o).is_none() {
                self.order.push_back(rec.request);
            }
            while self.order.len() > OUTCOMES_KEPT {
                if let Some(old) = self.order.pop_front() {
                    self.outcomes.remove(&old);
                }
            }
        }
    }

    fn change(&mut self, name: &str, change: Change) -> Option<Outcome> {
        use Refusal::*;
        let refused = |r| Some(Outcome::Refused(r));
        match change {
            Change::Create {
                prefix,
                created_ms,
                settings,
            } => {
                if self.stores.contains_key(name) {
                    return refused(Exists);
                }
                if let Some(o) = self
                    .stores
                    .values()
                    .find(|s| s.prefix.starts_with(&prefix) || prefix.starts_with(&s.prefix))
                {
                    return refused(PrefixOverlaps {
                        store: o.name.clone(),
                        prefix: o.prefix.clone(),
                    });
                }
                self.next_id = self.next_id.max(1);
                let id = self.next_id;
                self.next_id += 1;
                self.stores.insert(
                    name.to_string(),
                    ClusterStore {
                        name: name.to_string(),
                        id,
                        prefix,
                        created_ms,
                        current: VersionInfo {
                            number: 1,
                            created_ms,
                            ..VersionInfo::default()
                        },
                        older: Vec::new(),
                        keep: settings.keep.unwrap_or(DEFAULT_KEEP),
                        next_version: 2,
                        pushing: None,
                        compression: settings.compression.unwrap_or_default(),
                    },
                );
                Some(Outcome::Done { id, version: 1 })
            }
            Change::Configure { settings } => {
                let Some(s) = self.stores.get_mut(name) else {
                    return refused(NoSuchStore);
                };
                if let Some(c) = settings.compression {
                    s.compression = c;
                }
                if let Some(k) = settings.keep.filter(|&k| k > 0) {
                    s.keep = k;
                    s.older.truncate(k as usize - 1);
                }
                Some(Outcome::Done {
                    id: s.id,
                    version: s.current.number,
                })
            }
            Change::Delete => {
                let Some(s) = self.stores.get(name) else {
                    return refused(NoSuchStore);
                };
                if s.pushing.is_some() {
                    return refused(DeleteWhilePushing);
                }
                let id = s.id;
                self.stores.remove(name);
                Some(Outcome::Done { id, version: 0 })
            }
            Change::Begin {
                started_ms,
                last_wins,
                node,
                guard,
            } => {
                // A push is named by its version number alone (PUSH ADD, COMMIT, ABORT): a
                // number another store's push in progress holds is skipped.
                let held: std::collections::HashSet<u32> = self
                    .stores
                    .values()
                    .filter_map(|s| s.pushing.as_ref().map(|p| p.version))
                    .collect();
                let Some(s) = self.stores.get_mut(name) else {
                    return refused(NoSuchStore);
                };
                if let Some(p) = &s.pushing {
                    return refused(PushInProgress { version: p.version });
                }
                let mut version = s.next_version;
                while held.contains(&version) {
                    version = version.saturating_add(1);
                }
                if version >= u32::MAX - 1 {
                    return refused(VersionsExhausted);
                }
                s.next_version = version + 1;
                s.pushing = Some(ClusterPush {
                    version,
                    started_ms,
                    last_wins,
                    node,
                    guard,
                    ready: BTreeMap::new(),
                    failed: None,
                    compression: s.compression,
                });
                Some(Outcome::Done { id: s.id, version })
            }
            Change::Ready {
                version,
                node,
                records,
                bytes,
            } => {
                if let Some(p) = self.pushing_mut(name, version) {
                    p.ready.insert(node, (records, bytes));
                }
                None
            }
            Change::Failed {
                version,
                node,
                reason,
            } => {
                if let Some(p) = self.pushing_mut(name, version) {
                    if p.failed.is_none() {
                        p.failed = Some((node, reason));
                    }
                }
                None
            }
            Change::Commit {
                version,
                created_ms,
            } => {
                let Some(s) = self.stores.get_mut(name) else {
                    return refused(NoSuchStore);
                };
                let Some(p) = s.pushing.as_ref().filter(|p| p.version == version) else {
                    return refused(NoSuchPush { version });
                };
                if let Some((_, reason)) = &p.failed {
                    return refused(PushFailed {
                        reason: reason.clone(),
                    });
                }
                // Every node that loaded it loaded the same records (checked against the
                // version topic's end markers); the first report stands for all.
                let (records, bytes) = p.ready.values().next().copied().unwrap_or((0, 0));
                let old = s.current;
                s.current = VersionInfo {
                    number: version,
                    records,
                    bytes,
                    created_ms,
                };
                s.older.insert(0, old);
                s.older.truncate(s.keep.saturating_sub(1) as usize);
                s.pushing = None;
                Some(Outcome::Done { id: s.id, version })
            }
            Change::Abort { version, .. } => {
                let Some(s) = self.stores.get_mut(name) else {
                    return refused(NoSuchStore);
                };
                if s.pushing.as_ref().is_none_or(|p| p.version != version) {
                    return refused(NoSuchPush { version });
                }
                s.pushing = None;
                Some(Outcome::Done { id: s.id, version })
            }
            Change::Rollback { to } => {
                let Some(s) = self.stores.get_mut(name) else {
                    return refused(NoSuchStore);
                };
                let current = s.current.number;
                if to == current {
                    return Some(Outcome::Done {
                        id: s.id,
                        version: current,
                    });
                }
                if to == 0 && s.older.is_empty() {
                    return refused(NoPrevious { current });
                }
                if to > current {
                    return refused(RollbackForward {
                        version: to,
                        current,
                    });
                }
                // 0: the newest older version.
                let at = if to == 0 {
                    Some(0)
                } else {
                    s.older.iter().position(|v| v.number == to)
                };
                let Some(at) = at else {
                    return refused(VersionNotKept {
                        version: to,
                        kept: s.older.iter().map(|v| v.number).collect(),
                    });
                };
                // The versions left (the current one and the older ones newer than the
                // target) are no longer kept.
                s.current = s.older[at];
                s.older.drain(..=at);
                Some(Outcome::Done {
                    id: s.id,
                    version: s.current.number,
                })
            }
        }
    }

    fn pushing_mut(&mut self, name: &str, version: u32) -> Option<&mut ClusterPush> {
        self.stores
            .get_mut(name)?
            .pushing
            .as_mut()
            .filter(|p| p.version == version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(request: u64, name: &str, change: Change) -> Vec<u8> {
        CatalogRecord {
            request,
            name: name.into(),
            change,
        }
        .encode()
    }

    const GUARD: Guard = Guard {
        min_records: 1,
        max_shrink_percent: 50,
    };

    #[test]
    fn records_round_trip_and_damage_is_refused() {
        let all = [
            Change::Create {
                prefix: b"f:".to_vec(),
                created_ms: 5,
                settings: StoreSettings::default(),
            },
            Change::Delete,
            Change::Begin {
                started_ms: 7,
                last_wins: true,
                node: 3,
                guard: GUARD,
            },
            Change::Ready {
                version: 2,
                node: 1,
                records: 10,
                bytes: 100,
            },
            Change::Failed {
                version: 2,
                node: 1,
                reason: "disk full".into(),
            },
            Change::Commit {
                version: 2,
                created_ms: 9,
            },
            Change::Abort {
                version: 2,
                reason: "client gone".into(),
            },
            Change::Rollback { to: 1 },
            Change::Create {
                prefix: b"g:".to_vec(),
                created_ms: 6,
                settings: StoreSettings {
                    compression: Some(Compression::Zstd),
                    keep: Some(3),
                },
            },
            Change::Configure {
                settings: StoreSettings {
                    compression: Some(Compression::Lz4),
                    keep: None,
                },
            },
            Change::Configure {
                settings: StoreSettings {
                    compression: None,
                    keep: Some(4),
                },
            },
            Change::Configure {
                settings: StoreSettings::default(),
            },
        ];
        for change in all {
            let r = CatalogRecord {
                request: 42,
                name: "features".into(),
                change,
            };
            let b = r.encode();
            assert_eq!(CatalogRecord::decode(&b), Ok(r.clone()));
            for n in 0..b.len() {
                match (&r.change, CatalogRecord::decode(&b[..n])) {
                    (_, Err(_)) => {}
                    // A create cut right before its settings is one without (the old layout).
                    (
                        Change::Create { .. },
                        Ok(CatalogRecord {
                            change: Change::Create { settings, .. },
                            ..
                        }),
                    ) if settings.is_empty() => {}
                    (_, Ok(other)) => panic!("prefix {n} decodes: {other:?}"),
                }
            }
            let mut long = b.clone();
            long.push(0);
            assert!(CatalogRecord::decode(&long).is_err());
        }
    }

    /// A create as nodes wrote it before stores had settings: still read, compression none;
    /// and a create without settings is still written that way.
    #[test]
    fn a_create_record_without_settings_keeps_its_old_layout() {
        let mut old = vec![1u8, 1];
        old.extend_from_slice(&42u64.to_le_bytes());
        old.extend_from_slice(&1u32.to_le_bytes());
        old.push(b'f');
        old.extend_from_slice(&2u32.to_le_bytes());
        old.extend_from_slice(b"f:");
        old.extend_from_slice(&5i64.to_le_bytes());
        let r = CatalogRecord {
            request: 42,
            name: "f".into(),
            change: Change::Create {
                prefix: b"f:".to_vec(),
                created_ms: 5,
                settings: StoreSettings::default(),
            },
        };
        assert_eq!(CatalogRecord::decode(&old), Ok(r.clone()));
        assert_eq!(r.encode(), old);
        let mut s = CatalogState::default();
        s.apply(0, &old);
        assert_eq!(s.stores["f"].compression, Compression::None);
    }

    #[test]
    fn a_store_compression_is_set_at_create_changed_and_fixed_for_a_push_at_its_begin() {
        let mut s = CatalogState::default();
        let create = Change::Create {
            prefix: b"f:".to_vec(),
            created_ms: 1,
            settings: StoreSettings {
                compression: Some(Compression::Zstd),
                keep: None,
            },
        };
        s.apply(0, &rec(1, "f", create));
        assert_eq!(s.stores["f"].compression, Compression::Zstd);
        let begin = Change::Begin {
            started_ms: 2,
            last_wins: false,
            node: 1,
            guard: GUARD,
        };
        s.apply(1, &rec(2, "f", begin));
        let lz4 = Change::Configure {
            settings: StoreSettings {
                compression: Some(Compression::Lz4),
                keep: None,
            },
        };
        s.apply(2, &rec(3, "f", lz4));
        assert_eq!(s.outcome(3), Some(&Outcome::Done { id: 1, version: 1 }));
        let f = &s.stores["f"];
        assert_eq!(f.compression, Compression::Lz4);
        assert_eq!(
            f.pushing.as_ref().map(|p| p.compression),
            Some(Compression::Zstd)
        );
        // An empty change changes nothing; an unknown store is refused.
        let none = Change::Configure {
            settings: StoreSettings::default(),
        };
        s.apply(3, &rec(4, "f", none.clone()));
        assert_eq!(s.stores["f"].compression, Compression::Lz4);
        s.apply(4, &rec(5, "g", none));
        assert_eq!(s.outcome(5), Some(&Outcome::Refused(Refusal::NoSuchStore)));
    }

    /// Pushes `version` into "f" (begin, one node ready, commit) from offset `*at` on.
    fn push_version(s: &mut CatalogState, at: &mut u64, version: u32) {
        let begin = Change::Begin {
            started_ms: 2,
            last_wins: false,
            node: 1,
            guard: GUARD,
        };
        let ready = Change::Ready {
            version,
            node: 1,
            records: u64::from(version),
            bytes: 1,
        };
        let commit = Change::Commit {
            version,
            created_ms: 9,
        };
        for change in [begin, ready, commit] {
            s.apply(*at, &rec(1000 + *at, "f", change));
            *at += 1;
        }
        assert_eq!(s.stores["f"].current.number, version);
    }

    fn older(s: &CatalogState) -> Vec<u32> {
        s.stores["f"].older.iter().map(|v| v.number).collect()
    }

    #[test]
    fn a_store_keeps_its_keep_versions_and_rolls_back_to_any_older_one() {
        let mut s = CatalogState::default();
        let create = Change::Create {
            prefix: b"f:".to_vec(),
            created_ms: 1,
            settings: StoreSettings {
                compression: None,
                keep: Some(4),
            },
        };
        s.apply(0, &rec(1, "f", create));
        let mut at = 1;
        for v in 2..=6 {
            push_version(&mut s, &mut at, v);
        }
        // Current 6 and three older ones; 2 and 1 pushed out.
        assert_eq!(older(&s), [5, 4, 3]);
        // Not kept, or forward: refused, nothing changes.
        s.apply(at, &rec(2, "f", Change::Rollback { to: 2 }));
        at += 1;
        assert_eq!(
            s.outcome(2),
            Some(&Outcome::Refused(Refusal::VersionNotKept {
                version: 2,
                kept: vec![5, 4, 3],
            }))
        );
        s.apply(at, &rec(3, "f", Change::Rollback { to: 7 }));
        at += 1;
        assert!(matches!(
            s.outcome(3),
            Some(Outcome::Refused(Refusal::RollbackForward { .. }))
        ));
        // Two steps back at once: the versions newer than 4 are no longer kept.
        s.apply(at, &rec(4, "f", Change::Rollback { to: 4 }));
        at += 1;
        assert_eq!(s.outcome(4), Some(&Outcome::Done { id: 1, version: 4 }));
        assert_eq!(older(&s), [3]);
        assert_eq!(s.stores["f"].current.records, 4);
        // A smaller keep drops the oldest; without a version, the newest older one.
        let keep1 = Change::Configure {
            settings: StoreSettings {
                compression: None,
                keep: Some(1),
            },
        };
        s.apply(at, &rec(5, "f", keep1));
        at += 1;
        assert_eq!(older(&s), Vec::<u32>::new());
        s.apply(at, &rec(6, "f", Change::Rollback { to: 0 }));
        at += 1;
        assert_eq!(
            s.outcome(6),
            Some(&Outcome::Refused(Refusal::NoPrevious { current: 4 }))
        );
        push_version(&mut s, &mut at, 7);
        assert_eq!(older(&s), Vec::<u32>::new(), "keep 1 keeps none older");
    }

    #[test]
    fn a_push_begins_loads_commits_and_rolls_back_alike_on_every_node() {
        let mut s = CatalogState::default();
        let mut at = 0;
        let mut step = |s: &mut CatalogState, b: Vec<u8>| {
            s.apply(at, &b);
            at += 1;
        };
        let create = Change::Create {
            prefix: b"f:".to_vec(),
            created_ms: 1,
            settings: StoreSettings::default(),
        };
        step(&mut s, rec(1, "f", create.clone()));
        assert_eq!(s.outcome(1), Some(&Outcome::Done { id: 1, version: 1 }));
        step(&mut s, rec(2, "f", create));
        assert_eq!(s.outcome(2), Some(&Outcome::Refused(Refusal::Exists)));
        step(
            &mut s,
            rec(
                3,
                "g",
                Change::Create {
                    prefix: b"f:x".to_vec(),
                    created_ms: 1,
                    settings: StoreSettings::default(),
                },
            ),
        );
        assert!(matches!(
            s.outcome(3),
            Some(Outcome::Refused(Refusal::PrefixOverlaps { .. }))
        ));
        let begin = Change::Begin {
            started_ms: 2,
            last_wins: false,
            node: 1,
            guard: GUARD,
        };
        step(&mut s, rec(4, "f", begin.clone()));
        assert_eq!(s.outcome(4), Some(&Outcome::Done { id: 1, version: 2 }));
        step(&mut s, rec(5, "f", begin));
        assert_eq!(
            s.outcome(5),
            Some(&Outcome::Refused(Refusal::PushInProgress { version: 2 }))
        );
        step(&mut s, rec(6, "f", Change::Delete));
        assert_eq!(
            s.outcome(6),
            Some(&Outcome::Refused(Refusal::DeleteWhilePushing))
        );
        step(
            &mut s,
            rec(
                7,
                "f",
                Change::Ready {
                    version: 2,
                    node: 1,
                    records: 3,
                    bytes: 30,
                },
            ),
        );
        step(
            &mut s,
            rec(
                8,
                "f",
                Change::Commit {
                    version: 2,
                    created_ms: 9,
                },
            ),
        );
        let f = &s.stores["f"];
        assert_eq!((f.current.number, f.current.records), (2, 3));
        assert_eq!(f.older.iter().map(|v| v.number).collect::<Vec<_>>(), [1]);
        assert!(f.pushing.is_none());
        // A record applied twice (offset already passed) changes nothing.
        s.apply(0, &rec(9, "x", Change::Delete));
        assert_eq!(s.outcome(9), None);
        step(&mut s, rec(10, "f", Change::Rollback { to: 0 }));
        assert_eq!(s.outcome(10), Some(&Outcome::Done { id: 1, version: 1 }));
        step(&mut s, rec(11, "f", Change::Rollback { to: 0 }));
        assert_eq!(
            s.outcome(11),
            Some(&Outcome::Refused(Refusal::NoPrevious { current: 1 }))
        );
        // A failed load refuses the commit; the abort ends the push.
        step(
            &mut s,
            rec(
                12,
                "f",
                Change::Begin {
                    started_ms: 3,
                    last_wins: false,
                    node: 2,
                    guard: GUARD,
                },
            ),
        );
        assert_eq!(s.outcome(12), Some(&Outcome::Done { id: 1, version: 3 }));
        step(
            &mut s,
            rec(
                13,
                "f",
                Change::Failed {
                    version: 3,
                    node: 2,
                    reason: "bad checksum".into(),
                },
            ),
        );
        step(
            &mut s,
            rec(
                14,
                "f",
                Change::Commit {
                    version: 3,
                    created_ms: 9,
                },
            ),
        );
        assert!(matches!(
            s.outcome(14),
            Some(Outcome::Refused(Refusal::PushFailed { .. }))
        ));
        step(
            &mut s,
            rec(
                15,
                "f",
                Change::Abort {
                    version: 3,
                    reason: "failed".into(),
                },
            ),
        );
        assert!(s.stores["f"].pushing.is_none());
        assert_eq!(s.stores["f"].current.number, 1);
        // A damaged record is skipped.
        step(&mut s, vec![1, 99]);
        step(&mut s, rec(16, "f", Change::Delete));
        assert!(s.stores.is_empty());
        step(
            &mut s,
            rec(
                17,
                "f",
                Change::Create {
                    prefix: b"f:".to_vec(),
                    created_ms: 1,
                    settings: StoreSettings::default(),
                },
            ),
        );
        // Ids are never reused.
        assert_eq!(s.outcome(17), Some(&Outcome::Done { id: 2, version: 1 }));
    }
}
