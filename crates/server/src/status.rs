//! `GET /api/status`: the dashboard's JSON, built from the same cheap snapshots as `/metrics`
//! — the published store catalog, the pushes' atomic progress, the newest events of the
//! engine's I/O ring, the merger's counters and the cluster view — so a poll takes no lock
//! that serving holds for long. The field list is in docs/design.md (§11.6).

use std::sync::Arc;

use rialto_engine::{IoEvent, IoEventKind, IoStats, IoTotals};
use rialto_keyspace::{PushCounts, PushStatus, StoreMeta, VersionInfo};
use rialto_txn::{MergerStats, GROUP_SIZE_BOUNDS};
use serde::Serialize;

use crate::server::Shared;

/// Journal events of the I/O ring a status carries at most (the newest ones; flushes,
/// compactions and ingestions come from the engine's own ring of them): a copy short enough
/// that the recorder's lock, which journal writes take, is held only for microseconds.
pub const MAX_EVENTS: usize = 1024;

/// Flushes listed one by one (Voron's per-flush report), newest first.
const MAX_FLUSHES: usize = 20;

/// The whole status document.
#[derive(Debug, Serialize)]
pub struct Status {
    pub server: ServerInfo,
    pub stores: Vec<StoreStatus>,
    pub pushes: PushTotals,
    pub io: IoSection,
    pub merger: MergerSection,
    /// `null` when cluster mode is off.
    pub cluster: Option<ClusterSection>,
}

#[derive(Debug, Serialize)]
pub struct ServerInfo {
    pub version: &'static str,
    /// `standalone` or `cluster`.
    pub mode: &'static str,
    pub uptime_seconds: u64,
    /// Unix milliseconds when the status was taken.
    pub now_ms: i64,
    pub connected_clients: usize,
    /// Why the engine refuses writes, if it does.
    pub read_only: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct StoreStatus {
    pub name: String,
    /// The key prefix, as UTF-8 with invalid bytes replaced (a prefix is arbitrary bytes).
    pub prefix: String,
    pub current: VersionStatus,
    /// `null` when the store keeps no previous version.
    pub previous: Option<VersionStatus>,
    /// `null` when no push runs into the store.
    pub pushing: Option<PushingStatus>,
}

#[derive(Debug, Serialize)]
pub struct VersionStatus {
    pub version: u32,
    /// Records and key/value bytes the version's push loaded; `null` for the initial,
    /// streamed-only version 1.
    pub records: Option<u64>,
    pub bytes: Option<u64>,
    pub created_ms: i64,
}

#[derive(Debug, Serialize)]
pub struct PushingStatus {
    pub version: u32,
    pub started_ms: i64,
    /// `adding`, `sorting`, `writing`, `linking`, `replaying`, `cleaning_up`; `pending` while
    /// the catalog names the push before its session is registered (or after it ended).
    pub phase: &'static str,
    pub records: u64,
    pub bytes: u64,
    pub written_records: u64,
    pub progress_ratio: f64,
    /// The sort's last step (`sorting`): its records, those done, the merge passes left, and
    /// the time left at the speed of the push's spills (`null` without a spill).
    pub sort_records: u64,
    pub sort_done_records: u64,
    pub sort_merge_passes: u64,
    pub sort_eta_seconds: Option<f64>,
    /// Real-time log entries the replay goes through (`replaying`), and those done.
    pub replay_entries: u64,
    pub replay_done_entries: u64,
    pub elapsed_seconds: f64,
    /// The client id of the connection that owns it; `null` for an in-process push.
    pub owner: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct PushTotals {
    pub begun: u64,
    pub committed: u64,
    pub aborted: u64,
    pub refused: u64,
}

#[derive(Debug, Serialize)]
pub struct IoSection {
    /// The engine clock's microseconds now: event starts are on the same clock.
    pub now_micros: u64,
    pub totals: IoKinds,
    pub journal_sync_p50_micros: u64,
    pub journal_sync_p99_micros: u64,
    /// Bytes per second allowed to flushes and compactions; `null` when unpaced.
    pub background_rate_limit: Option<u64>,
    pub background_throttled_micros: u64,
    /// The newest journal events (at most [`MAX_EVENTS`]) and the newest flushes, compactions
    /// and ingestions (kept apart by the engine, at most 256), by start time.
    pub events: Vec<EventStatus>,
    /// The newest flushes, newest first (at most 20): tables, entries, bytes and time each.
    pub flushes: Vec<EventStatus>,
}

#[derive(Debug, Serialize)]
pub struct IoKinds {
    pub journal_write: KindTotals,
    pub journal_sync: KindTotals,
    pub flush: KindTotals,
    pub compaction: KindTotals,
    pub ingest: KindTotals,
}

#[derive(Debug, Serialize)]
pub struct KindTotals {
    pub count: u64,
    pub bytes: u64,
    pub micros: u64,
    pub max_micros: u64,
    pub files: u64,
    pub entries: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventStatus {
    /// `journal_write`, `journal_sync`, `flush`, `compaction` or `ingest`.
    pub kind: &'static str,
    pub start_micros: u64,
    pub duration_micros: u64,
    pub bytes: u64,
    pub files: u32,
    pub entries: u64,
    pub level: u8,
}

#[derive(Debug, Serialize)]
pub struct MergerSection {
    pub durability: &'static str,
    pub transactions: u64,
    pub groups: u64,
    pub syncs: u64,
    pub queued: usize,
    pub unsynced_bytes: usize,
    pub commit_p50_micros: u64,
    pub commit_p99_micros: u64,
    /// Groups by size: `le` is the bucket's largest size in transactions (`null`: larger than
    /// every bound), `groups` how many groups fell in it (not cumulative).
    pub group_sizes: Vec<GroupBucket>,
}

#[derive(Debug, Serialize)]
pub struct GroupBucket {
    pub le: Option<u64>,
    pub groups: u64,
}

#[derive(Debug, Serialize)]
pub struct ClusterSection {
    pub node_id: u32,
    pub partitions: Vec<PartitionStatus>,
    /// Why this node stopped applying the log, if it did.
    pub apply_failed: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PartitionStatus {
    pub partition: u32,
    /// This node's role in the partition: `master` or `replica`.
    pub role: &'static str,
    /// The master's node id; `null` when none is known.
    pub master_node: Option<u32>,
    pub applied_offset: u64,
    pub log_end: u64,
    /// Records in the log this node has not applied yet.
    pub lag_records: u64,
    /// Every member serving the partition, master first, with its progress.
    pub members: Vec<MemberStatus>,
}

#[derive(Debug, Serialize)]
pub struct MemberStatus {
    pub node: u32,
    pub host: String,
    pub port: u16,
    pub master: bool,
    pub local: bool,
    pub offset: u64,
    pub lagging: bool,
}

/// The status now, as JSON text.
pub fn render(sh: &Shared) -> String {
    let status = collect(sh);
    serde_json::to_string(&status).unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot serialize the status");
        String::from("{}")
    })
}

fn collect(sh: &Shared) -> Status {
    let ks = &sh.keyspace;
    let catalog = ks.catalog();
    let io = ks.io_stats_recent(MAX_EVENTS);
    let cluster = sh.cluster.as_ref().map(|c| {
        let max_lag = sh.config.read().cluster.replica_max_lag;
        cluster_section(c, max_lag)
    });
    Status {
        server: ServerInfo {
            version: env!("CARGO_PKG_VERSION"),
            mode: if sh.cluster.is_some() {
                "cluster"
            } else {
                "standalone"
            },
            uptime_seconds: sh.started.elapsed().as_secs(),
            now_ms: sh.now_ms(),
            connected_clients: sh.clients.len(),
            read_only: ks.read_only_reason(),
        },
        stores: stores(catalog.iter().map(Arc::as_ref), &ks.push_statuses()),
        pushes: push_totals(ks.push_counts()),
        io: io_section(io, ks.clock().now_micros()),
        merger: merger_section(&ks.merger_stats()),
        cluster,
    }
}

fn version(v: &VersionInfo) -> VersionStatus {
    // Version 1 is the store's initial version: streamed writes only, nothing loaded.
    let pushed = v.number > 1;
    VersionStatus {
        version: v.number,
        records: pushed.then_some(v.records),
        bytes: pushed.then_some(v.bytes),
        created_ms: v.created_ms,
    }
}

/// The stores by name, each with its push's progress (matched by version number: a push's
/// id is the version it loads).
fn stores<'a>(
    metas: impl Iterator<Item = &'a StoreMeta>,
    pushes: &[PushStatus],
) -> Vec<StoreStatus> {
    let mut out: Vec<StoreStatus> = metas
        .map(|m| StoreStatus {
            name: m.name.clone(),
            prefix: String::from_utf8_lossy(&m.prefix).into_owned(),
            current: version(&m.current),
            previous: m.previous().map(version),
            pushing: m.pushing.map(|p| {
                let live = pushes
                    .iter()
                    .find(|s| s.id == u64::from(p.version) && s.store == m.name);
                PushingStatus {
                    version: p.version,
                    started_ms: p.started_ms,
                    phase: live.map_or("pending", |s| s.phase.name()),
                    records: live.map_or(0, |s| s.records),
                    bytes: live.map_or(0, |s| s.bytes),
                    written_records: live.map_or(0, |s| s.written),
                    progress_ratio: live.map_or(0.0, PushStatus::progress_ratio),
                    sort_records: live.map_or(0, |s| s.sort.records),
                    sort_done_records: live.map_or(0, |s| s.sort.done),
                    sort_merge_passes: live.map_or(0, |s| s.sort.merge_passes),
                    sort_eta_seconds: live.and_then(|s| s.sort.eta()).map(|d| d.as_secs_f64()),
                    replay_entries: live.map_or(0, |s| s.replay_total),
                    replay_done_entries: live.map_or(0, |s| s.replay_done),
                    elapsed_seconds: live.map_or(0.0, |s| s.elapsed.as_secs_f64()),
                    owner: live.and_then(|s| s.owner),
                }
            }),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn push_totals(c: PushCounts) -> PushTotals {
    PushTotals {
        begun: c.begun,
        committed: c.committed,
        aborted: c.aborted,
        refused: c.refused,
    }
}

fn kind_totals(t: &IoTotals) -> KindTotals {
    KindTotals {
        count: t.count,
        bytes: t.bytes,
        micros: t.micros,
        max_micros: t.max_micros,
        files: t.files,
        entries: t.entries,
    }
}

fn event(e: &IoEvent) -> EventStatus {
    EventStatus {
        kind: e.kind.name(),
        start_micros: e.start_micros,
        duration_micros: e.duration_micros,
        bytes: e.bytes,
        files: e.files,
        entries: e.entries,
        level: e.level,
    }
}

fn io_section(io: IoStats, now_micros: u64) -> IoSection {
    let mut events: Vec<EventStatus> = io
        .timeline
        .iter()
        .filter(|e| !e.kind.writes_tables())
        .chain(&io.background)
        .map(event)
        .collect();
    events.sort_by_key(|e| e.start_micros);
    let flushes = io
        .background
        .iter()
        .rev()
        .filter(|e| e.kind == IoEventKind::Flush)
        .take(MAX_FLUSHES)
        .map(event)
        .collect();
    IoSection {
        now_micros,
        totals: IoKinds {
            journal_write: kind_totals(&io.journal_writes),
            journal_sync: kind_totals(&io.journal_syncs),
            flush: kind_totals(&io.flushes),
            compaction: kind_totals(&io.compactions),
            ingest: kind_totals(&io.ingests),
        },
        journal_sync_p50_micros: io.journal_sync_p50_micros,
        journal_sync_p99_micros: io.journal_sync_p99_micros,
        background_rate_limit: io.background_rate_limit,
        background_throttled_micros: io.background_throttled_micros,
        events,
        flushes,
    }
}

fn merger_section(m: &MergerStats) -> MergerSection {
    let bounds = GROUP_SIZE_BOUNDS.iter().copied().map(Some).chain([None]);
    MergerSection {
        durability: m.durability.name(),
        transactions: m.txns,
        groups: m.groups,
        syncs: m.syncs,
        queued: m.queued,
        unsynced_bytes: m.unsynced_bytes,
        commit_p50_micros: m.commit_p50_micros,
        commit_p99_micros: m.commit_p99_micros,
        group_sizes: bounds
            .zip(m.group_sizes)
            .map(|(le, groups)| GroupBucket { le, groups })
            .collect(),
    }
}

/// The partitions as INFO's cluster section and the replication layout see them.
fn cluster_section(c: &crate::cluster::Cluster, max_lag: std::time::Duration) -> ClusterSection {
    let v = c.node.view();
    let layout = c.layout(max_lag);
    let partitions = (0..c.partitions)
        .map(|p| {
            let i = p as usize;
            let applied = v.applied.get(i).copied().unwrap_or(0);
            let log_end = v.high.get(i).copied().unwrap_or(0);
            PartitionStatus {
                partition: p,
                role: if c.node.is_master(p) {
                    "master"
                } else {
                    "replica"
                },
                master_node: v.masters.get(i).and_then(|m| m.as_ref()).map(|m| m.node),
                applied_offset: applied,
                log_end,
                lag_records: log_end.saturating_sub(applied),
                members: layout
                    .get(i)
                    .map(|addrs| {
                        addrs
                            .iter()
                            .map(|a| MemberStatus {
                                node: a.node,
                                host: a.host.clone(),
                                port: a.port,
                                master: a.master,
                                local: a.local,
                                offset: a.offset,
                                lagging: a.lagging,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    ClusterSection {
        node_id: c.node.options().node_id,
        partitions,
        apply_failed: v.failed.as_ref().map(|f| f.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_engine::IoRecorder;
    use rialto_keyspace::{PushPhase, Pushing};
    use std::time::Duration;

    fn meta(
        name: &str,
        prefix: &[u8],
        current: u32,
        previous: u32,
        pushing: Option<u32>,
    ) -> StoreMeta {
        let v = |number| VersionInfo {
            number,
            records: 10 * u64::from(number),
            bytes: 100 * u64::from(number),
            created_ms: 5,
        };
        StoreMeta {
            name: name.into(),
            id: 1,
            prefix: prefix.to_vec(),
            current: v(current),
            kept: (previous != 0).then(|| v(previous)).into_iter().collect(),
            keep: 2,
            next_version: current + 1,
            rewind_ms: 0,
            pushing: pushing.map(|version| Pushing {
                version,
                started_ms: 7,
            }),
            created_ms: 1,
            compression: rialto_keyspace::Compression::None,
        }
    }

    #[test]
    fn stores_show_versions_and_the_push_in_progress() {
        let metas = [
            meta("zeta", b"z:", 3, 2, Some(4)),
            meta("alpha", b"a:", 1, 0, None),
        ];
        let pushes = [PushStatus {
            id: 4,
            store: "zeta".into(),
            owner: Some(9),
            phase: PushPhase::Writing,
            records: 200,
            bytes: 2000,
            written: 50,
            sort: rialto_keyspace::FinishProgress {
                records: 300,
                done: 150,
                in_memory: 100,
                merge_passes: 0,
                spill_records_per_s: Some(50),
            },
            replay_done: 0,
            replay_total: 0,
            elapsed: Duration::from_millis(1500),
        }];
        let s = stores(metas.iter(), &pushes);
        assert_eq!(s[0].name, "alpha");
        assert_eq!(s[0].current.records, None, "version 1 loaded nothing");
        assert!(s[0].previous.is_none() && s[0].pushing.is_none());
        let z = &s[1];
        assert_eq!((z.current.version, z.current.records), (3, Some(30)));
        assert_eq!(z.previous.as_ref().map(|p| p.version), Some(2));
        let p = z.pushing.as_ref().expect("pushing");
        assert_eq!((p.version, p.phase, p.records), (4, "writing", 200));
        assert_eq!((p.progress_ratio, p.owner), (0.25, Some(9)));
        assert_eq!((p.sort_records, p.sort_done_records), (300, 150));
        assert_eq!(p.sort_eta_seconds, Some(3.0));

        // A push the catalog names but the registry does not hold (yet, or any more).
        let s = stores([meta("zeta", b"z:", 3, 2, Some(5))].iter(), &pushes);
        let p = s[0].pushing.as_ref().expect("pushing");
        assert_eq!((p.phase, p.records), ("pending", 0));
    }

    #[test]
    fn json_escapes_what_users_chose() {
        // Store names are restricted, prefixes are any bytes: both must come out as JSON
        // strings that a page can only ever treat as text.
        let metas = [meta("s", b"\"</script><b>\\\n\x01\xff", 2, 0, None)];
        let json = serde_json::to_string(&stores(metas.iter(), &[])).expect("json");
        assert!(
            json.contains(r#""prefix":"\"</script><b>\\\n\u0001"#),
            "{json}"
        );
        let back: serde_json::Value = serde_json::from_str(&json).expect("parses");
        assert_eq!(back[0]["prefix"], "\"</script><b>\\\n\u{1}\u{fffd}");
    }

    #[test]
    fn io_section_keeps_events_and_lists_flushes_newest_first() {
        let r = IoRecorder::new(64);
        r.record(IoEvent::new(IoEventKind::JournalWrite, 10, 2, 300));
        r.record(IoEvent::new(IoEventKind::Flush, 20, 40, 4096).with_tables(1, 100, 0));
        r.record(IoEvent::new(IoEventKind::JournalSync, 30, 5, 0));
        r.record(IoEvent::new(IoEventKind::Flush, 50, 60, 8192).with_tables(2, 250, 0));
        r.record(IoEvent::new(IoEventKind::Compaction, 70, 90, 9000).with_tables(1, 300, 1));
        let s = io_section(r.snapshot(), 1000);
        assert_eq!(s.now_micros, 1000);
        assert_eq!(s.events.len(), 5, "each event once");
        assert_eq!(s.events[0].kind, "journal_write");
        assert!(s
            .events
            .windows(2)
            .all(|w| w[0].start_micros <= w[1].start_micros));
        let flushes: Vec<(u64, u64)> = s
            .flushes
            .iter()
            .map(|f| (f.start_micros, f.entries))
            .collect();
        assert_eq!(flushes, [(50, 250), (20, 100)]);
        assert_eq!((s.totals.flush.count, s.totals.flush.entries), (2, 350));
        assert_eq!(s.totals.compaction.files, 1);
        let v: serde_json::Value = serde_json::to_value(&s).expect("json");
        assert_eq!(v["events"][4]["level"], 1);
        assert!(v["background_rate_limit"].is_null());
    }

    #[test]
    fn flushes_stay_on_the_timeline_under_a_flood_of_journal_writes() {
        let r = IoRecorder::new(64);
        r.record(IoEvent::new(IoEventKind::Flush, 5, 40, 4096).with_tables(1, 100, 0));
        for t in 0..1000 {
            r.record(IoEvent::new(IoEventKind::JournalWrite, 100 + t, 1, 10));
        }
        let s = io_section(r.recent(8), 2000);
        assert_eq!(s.events.len(), 9);
        assert_eq!((s.events[0].kind, s.events[0].start_micros), ("flush", 5));
        assert_eq!(s.flushes.len(), 1);
    }

    #[test]
    fn merger_buckets_pair_bounds_with_counts() {
        let mut m = MergerStats {
            durability: rialto_txn::Durability::Always,
            txns: 10,
            groups: 4,
            syncs: 3,
            queued: 0,
            unsynced_bytes: 0,
            commit_p50_micros: 1,
            commit_p99_micros: 2,
            commit_max_micros: 3,
            poll_suspensions: 0,
            failed: None,
            group_sizes: Default::default(),
        };
        m.group_sizes[0] = 2;
        m.group_sizes[rialto_txn::GROUP_SIZE_BUCKETS - 1] = 1;
        let s = merger_section(&m);
        assert_eq!(s.group_sizes.len(), GROUP_SIZE_BOUNDS.len() + 1);
        assert_eq!((s.group_sizes[0].le, s.group_sizes[0].groups), (Some(1), 2));
        let last = s.group_sizes.last().expect("overflow bucket");
        assert_eq!((last.le, last.groups), (None, 1));
        assert_eq!(s.durability, "always");
    }
}
