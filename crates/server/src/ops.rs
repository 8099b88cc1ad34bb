//! What the operations endpoint serves: Prometheus metrics, liveness and readiness.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rialto_keyspace::PushPhase;
use rialto_lsm::triad::Workload;
use rialto_txn::GROUP_SIZE_BOUNDS;

use crate::http::OpsState;
use crate::prom::PromWriter;
use crate::server::Shared;

/// The server's state, as the HTTP endpoint sees it.
pub struct Ops(pub Arc<Shared>);

impl OpsState for Ops {
    fn metrics(&self) -> String {
        render(&self.0)
    }

    /// The process answers: it is alive (a wedged runtime would not answer at all).
    fn live(&self) -> bool {
        true
    }

    fn status(&self) -> String {
        crate::status::render(&self.0)
    }

    /// Ready to take writes: not shutting down and the engine accepts writes.
    fn ready(&self) -> Result<(), String> {
        if *self.0.shutdown.borrow() {
            return Err("shutting down".into());
        }
        if let Some(r) = self.0.keyspace.read_only_reason() {
            return Err(format!("engine is read-only: {r}"));
        }
        if let Some(f) = self.0.keyspace.merger_stats().failed {
            return Err(format!("writes are failing: {f}"));
        }
        Ok(())
    }
}

/// The metrics text.
pub fn render(sh: &Shared) -> String {
    let mut w = PromWriter::new();
    let s = &sh.stats;
    w.gauge(
        "rialto_connected_clients",
        "Clients connected now.",
        &[],
        sh.clients.len(),
    );
    let (channels, shard_channels) = sh.hub.numchannels();
    w.gauge(
        "rialto_pubsub_channels",
        "Channels with at least one subscriber (shard channels included).",
        &[],
        channels + shard_channels,
    );
    w.gauge(
        "rialto_pubsub_patterns",
        "Distinct patterns subscribed.",
        &[],
        sh.hub.numpat(),
    );
    if let Some(c) = &sh.cluster {
        let v = c.node.view();
        for p in 0..c.partitions as usize {
            let part = p.to_string();
            let labels = [("partition", part.as_str())];
            w.gauge(
                "rialto_cluster_master",
                "1 where this node writes the partition now, 0 where it is a replica.",
                &labels,
                u64::from(c.node.is_master(p as u32)),
            );
            w.gauge(
                "rialto_cluster_applied_offset",
                "The offset of the next record of the partition this node will apply.",
                &labels,
                v.applied[p],
            );
            w.gauge(
                "rialto_cluster_lag_records",
                "Records of the partition in the log that this node has not applied yet.",
                &labels,
                v.high[p].saturating_sub(v.applied[p]),
            );
            w.gauge(
                "rialto_cluster_caught_up_age_seconds",
                "Seconds since this node last had applied all of the partition (-1: never).",
                &labels,
                v.caught_up_at[p].map_or(-1.0, |t| t.elapsed().as_secs_f64()),
            );
        }
    }
    w.gauge(
        "rialto_tracking_clients",
        "Clients with CLIENT TRACKING on.",
        &[],
        sh.tracking.clients(),
    );
    w.gauge(
        "rialto_tracking_keys",
        "Keys in the client-side caching table.",
        &[],
        sh.tracking.totals().0,
    );
    w.counter(
        "rialto_connections_received_total",
        "Connections accepted since start.",
        &[],
        sh.clients.accepted.load(Ordering::Relaxed),
    );
    w.counter(
        "rialto_connections_rejected_total",
        "Connections refused because maxclients was reached.",
        &[],
        sh.clients.rejected.load(Ordering::Relaxed),
    );
    w.counter(
        "rialto_commands_processed_total",
        "Commands received, valid or not.",
        &[],
        s.commands.load(Ordering::Relaxed),
    );
    for e in sh.registry.entries() {
        let calls = e.calls.load(Ordering::Relaxed);
        if calls > 0 {
            w.counter(
                "rialto_command_calls_total",
                "Executions per command.",
                &[("cmd", e.spec.name)],
                calls,
            );
            w.counter(
                "rialto_command_seconds_total",
                "Execution time per command, excluding waits for durability.",
                &[("cmd", e.spec.name)],
                e.micros.load(Ordering::Relaxed) as f64 / 1e6,
            );
        }
        let (rejected, failed) = (
            e.rejected.load(Ordering::Relaxed),
            e.failed.load(Ordering::Relaxed),
        );
        if rejected > 0 {
            w.counter(
                "rialto_command_rejected_calls_total",
                "Requests of a command refused before it ran (arity, NOAUTH, NOPERM, BUSY...).",
                &[("cmd", e.spec.name)],
                rejected,
            );
        }
        if failed > 0 {
            w.counter(
                "rialto_command_failed_calls_total",
                "Executions of a command that answered an error.",
                &[("cmd", e.spec.name)],
                failed,
            );
        }
    }
    w.counter(
        "rialto_error_replies_total",
        "Error replies sent to clients (INFO stats total_error_replies).",
        &[],
        sh.errors.total(),
    );
    for (prefix, n) in sh.errors.by_prefix() {
        w.counter(
            "rialto_errors_total",
            "Error replies by their prefix (INFO errorstats).",
            &[("prefix", &prefix)],
            n,
        );
    }
    w.counter(
        "rialto_net_input_bytes_total",
        "Bytes read from clients.",
        &[],
        s.net_input_bytes.load(Ordering::Relaxed),
    );
    w.counter(
        "rialto_net_output_bytes_total",
        "Bytes written to clients.",
        &[],
        s.net_output_bytes.load(Ordering::Relaxed),
    );
    w.counter(
        "rialto_expired_keys_total",
        "Keys removed by the expiry pass.",
        &[],
        s.expired_keys.load(Ordering::Relaxed),
    );
    w.counter(
        "rialto_protocol_errors_total",
        "Connections closed for malformed requests.",
        &[],
        s.rejected_protocol.load(Ordering::Relaxed),
    );
    w.counter(
        "rialto_auth_failures_total",
        "Failed AUTH and HELLO AUTH attempts.",
        &[],
        s.auth_failures.load(Ordering::Relaxed),
    );

    let m = sh.keyspace.merger_stats();
    w.counter(
        "rialto_merger_transactions_total",
        "Transactions the merger executed.",
        &[],
        m.txns,
    );
    w.counter(
        "rialto_merger_groups_total",
        "Merged groups written to the journal (one write each).",
        &[],
        m.groups,
    );
    w.counter(
        "rialto_merger_syncs_total",
        "Journal syncs issued by the merger.",
        &[],
        m.syncs,
    );
    w.counter(
        "rialto_merger_poll_suspensions_total",
        "Times threads waiting for commits stopped polling because another thread held the CPU.",
        &[],
        m.poll_suspensions,
    );
    w.counter(
        "rialto_merger_relayed_wakeups_total",
        "Durable replies whose release by the syncer thread went through a connection thread's relay.",
        &[],
        sh.relay_stats.relayed(),
    );
    w.counter(
        "rialto_merger_relay_batches_total",
        "Times the syncer woke a connection thread for a batch of relayed replies.",
        &[],
        sh.relay_stats.batches(),
    );
    let mut cumulative = 0u64;
    let buckets: Vec<(f64, u64)> = GROUP_SIZE_BOUNDS
        .iter()
        .zip(m.group_sizes)
        .map(|(&le, n)| {
            cumulative += n;
            (le as f64, cumulative)
        })
        .collect();
    w.histogram(
        "rialto_merger_group_transactions",
        "Transactions per merged group (one journal write each).",
        &[],
        &buckets,
        m.txns,
        m.groups,
    );
    w.gauge(
        "rialto_merger_queued",
        "Transactions waiting to execute.",
        &[],
        m.queued,
    );
    w.gauge(
        "rialto_merger_unsynced_bytes",
        "Journal bytes written but not yet durable.",
        &[],
        m.unsynced_bytes,
    );
    w.gauge(
        "rialto_merger_commit_latency_seconds",
        "Submit-to-acknowledge latency of writes since start, by quantile.",
        &[("quantile", "0.5")],
        m.commit_p50_micros as f64 / 1e6,
    );
    w.gauge(
        "rialto_merger_commit_latency_seconds",
        "Submit-to-acknowledge latency of writes since start, by quantile.",
        &[("quantile", "0.99")],
        m.commit_p99_micros as f64 / 1e6,
    );

    let e = sh.keyspace.engine_stats();
    w.gauge(
        "rialto_engine_disk_bytes",
        "Bytes of every file of the database.",
        &[],
        e.disk_bytes,
    );
    for (what, v) in [
        ("user", e.user_bytes_written),
        ("wal", e.wal_bytes_written),
        ("wal_prepare", e.wal_prepare_bytes_written),
        ("flush", e.flush_bytes_written),
        ("compaction", e.compaction_bytes_written),
    ] {
        w.counter(
            "rialto_engine_written_bytes_total",
            "Bytes written, by source (user = key and value bytes of writes).",
            &[("source", what)],
            v,
        );
    }
    w.counter(
        "rialto_engine_flushes_total",
        "Memtable flushes.",
        &[],
        e.flushes,
    );
    let t = sh.keyspace.triad_stats();
    w.counter(
        "rialto_triad_hot_entries_kept_total",
        "Hot entries TRIAD-MEM kept in memory at flushes (re-logged instead of flushed).",
        &[],
        t.hot_entries_kept,
    );
    w.counter(
        "rialto_triad_deferred_flushes_total",
        "Flushes after which TRIAD-DISK deferred L0 compaction (low key overlap).",
        &[],
        t.deferred_flushes,
    );
    w.counter(
        "rialto_triad_log_flushes_total",
        "Flushes that wrote a commit-log table (an index over the WAL segment, TRIAD-LOG).",
        &[],
        t.log_flushes,
    );
    w.counter(
        "rialto_triad_windows_total",
        "Operation windows the workload characterizer classified.",
        &[],
        t.windows,
    );
    for workload in Workload::ALL {
        w.gauge(
            "rialto_triad_workload",
            "1 for the workload class the characterizer has in force, 0 for the others.",
            &[("class", workload.name())],
            u64::from(t.workload == workload),
        );
    }
    w.counter(
        "rialto_engine_compactions_total",
        "Compactions.",
        &[],
        e.compactions,
    );
    w.counter(
        "rialto_engine_idle_compactions_total",
        "Compactions started only because writes paused (deferred work done while idle).",
        &[],
        e.idle_compactions,
    );
    w.counter(
        "rialto_engine_stall_seconds_total",
        "Time writes were slowed or stopped by write stalls.",
        &[],
        e.stall_micros as f64 / 1e6,
    );
    w.counter(
        "rialto_engine_block_cache_hits_total",
        "Block cache hits.",
        &[],
        e.block_cache_hits,
    );
    w.counter(
        "rialto_engine_block_cache_misses_total",
        "Block cache misses.",
        &[],
        e.block_cache_misses,
    );
    w.counter(
        "rialto_engine_row_cache_hits_total",
        "Row cache hits.",
        &[],
        e.row_cache_hits,
    );
    w.counter(
        "rialto_engine_row_cache_misses_total",
        "Row cache misses.",
        &[],
        e.row_cache_misses,
    );
    w.gauge(
        "rialto_engine_row_cache_bytes",
        "Bytes the row cache holds.",
        &[],
        e.row_cache_bytes,
    );
    w.counter(
        "rialto_engine_row_cache_warmed_rows_total",
        "Rows the row cache's warm-up inserted.",
        &[],
        e.row_cache_warmed_rows,
    );
    for (i, l) in e.levels.iter().enumerate() {
        let level = i.to_string();
        w.gauge(
            "rialto_engine_level_files",
            "Table files per level.",
            &[("level", &level)],
            l.files,
        );
        w.gauge(
            "rialto_engine_level_bytes",
            "Table bytes per level.",
            &[("level", &level)],
            l.bytes,
        );
    }
    w.gauge(
        "rialto_engine_read_only",
        "1 if the engine refuses writes after a failure.",
        &[],
        u8::from(e.read_only_reason.is_some()),
    );

    let io = sh.keyspace.io_stats();
    for (what, t) in [
        ("journal_write", &io.journal_writes),
        ("journal_sync", &io.journal_syncs),
        ("flush", &io.flushes),
        ("compaction", &io.compactions),
        ("ingest", &io.ingests),
    ] {
        w.counter(
            "rialto_io_operations_total",
            "I/O operations by kind.",
            &[("kind", what)],
            t.count,
        );
        w.counter(
            "rialto_io_bytes_total",
            "I/O bytes by kind.",
            &[("kind", what)],
            t.bytes,
        );
        w.counter(
            "rialto_io_seconds_total",
            "Time spent in I/O by kind.",
            &[("kind", what)],
            t.micros as f64 / 1e6,
        );
        if t.files > 0 || t.entries > 0 {
            w.counter(
                "rialto_io_tables_total",
                "Table files written, by kind (flushes, compactions, ingestions).",
                &[("kind", what)],
                t.files,
            );
            w.counter(
                "rialto_io_table_entries_total",
                "Entries in the table files written, by kind.",
                &[("kind", what)],
                t.entries,
            );
        }
        w.gauge(
            "rialto_io_max_seconds",
            "Longest single I/O operation since start, by kind.",
            &[("kind", what)],
            t.max_micros as f64 / 1e6,
        );
    }
    w.counter(
        "rialto_io_background_throttled_seconds_total",
        "Time flushes and compactions waited so that journal writes keep the disk.",
        &[],
        io.background_throttled_micros as f64 / 1e6,
    );
    for (q, v) in [
        ("0.5", io.journal_sync_p50_micros),
        ("0.99", io.journal_sync_p99_micros),
    ] {
        w.gauge(
            "rialto_io_journal_sync_latency_seconds",
            "Recent journal sync latency, by quantile.",
            &[("quantile", q)],
            v as f64 / 1e6,
        );
    }
    w.gauge(
        "rialto_io_background_rate_limit_bytes",
        "Current pacing of flush and compaction writes (0: unpaced).",
        &[],
        io.background_rate_limit.unwrap_or(0),
    );
    stores(&mut w, sh);
    w.finish()
}

/// Stores, their versions and the pushes into them.
fn stores(w: &mut PromWriter, sh: &Shared) {
    let catalog = sh.keyspace.catalog();
    let pushes = sh.keyspace.push_statuses();
    for m in catalog.iter() {
        let labels = [("store", m.name.as_str())];
        w.gauge(
            "rialto_store_current_version",
            "The version of the store that reads use.",
            &labels,
            m.current.number,
        );
        w.gauge(
            "rialto_store_previous_version",
            "The version a rollback of the store without a version returns to (0: none).",
            &labels,
            m.previous().map_or(0, |v| v.number),
        );
        w.gauge(
            "rialto_store_kept_versions",
            "Versions older than the current one the store keeps for rollback.",
            &labels,
            m.older().count() as u32,
        );
        w.gauge(
            "rialto_store_pushing_version",
            "The version being pushed into the store (0: no push).",
            &labels,
            m.pushing.map_or(0, |p| p.version),
        );
        // Version 1 is the initial one, streamed writes only: its push figures are unknown.
        if m.current.number > 1 {
            w.gauge(
                "rialto_store_current_version_records",
                "Records the push of the current version loaded.",
                &labels,
                m.current.records,
            );
            w.gauge(
                "rialto_store_current_version_bytes",
                "Key and value bytes the push of the current version loaded.",
                &labels,
                m.current.bytes,
            );
        }
    }
    for p in &pushes {
        let labels = [("store", p.store.as_str())];
        w.gauge(
            "rialto_push_records",
            "Records added to the push in progress so far.",
            &labels,
            p.records,
        );
        w.gauge(
            "rialto_push_bytes",
            "Key and value bytes added to the push in progress so far.",
            &labels,
            p.bytes,
        );
        w.gauge(
            "rialto_push_written_records",
            "Records of the push in progress written into the new version's tables so far.",
            &labels,
            p.written,
        );
        w.gauge(
            "rialto_push_sort_records",
            "Records the push's sort processes as it ends: the last buffer sorted in memory, the spill waited for, the merge passes'.",
            &labels,
            p.sort.records,
        );
        w.gauge(
            "rialto_push_sort_done_records",
            "Of rialto_push_sort_records, those processed so far.",
            &labels,
            p.sort.done,
        );
        w.gauge(
            "rialto_push_replay_entries",
            "Streamed-write log entries the push's replay goes through (an upper bound).",
            &labels,
            p.replay_total,
        );
        w.gauge(
            "rialto_push_replay_done_entries",
            "Of rialto_push_replay_entries, those gone through so far.",
            &labels,
            p.replay_done,
        );
        w.gauge(
            "rialto_push_progress_ratio",
            "Share of the push's added records written into tables (0 while adding, 1 once linked).",
            &labels,
            p.progress_ratio(),
        );
        w.gauge(
            "rialto_push_elapsed_seconds",
            "Time since the push in progress began.",
            &labels,
            p.elapsed.as_secs_f64(),
        );
        for phase in PushPhase::ALL {
            w.gauge(
                "rialto_push_phase",
                "1 for the phase the push in progress is in, 0 for the others.",
                &[("store", p.store.as_str()), ("phase", phase.name())],
                u8::from(p.phase == phase),
            );
        }
    }
    let c = sh.keyspace.push_counts();
    for (name, help, v) in [
        ("rialto_pushes_begun_total", "Pushes begun since start.", c.begun),
        (
            "rialto_pushes_committed_total",
            "Pushes swapped in as their store's current version since start.",
            c.committed,
        ),
        (
            "rialto_pushes_aborted_total",
            "Pushes aborted since start (PUSH ABORT, a bad record, their connection closing, a failed commit).",
            c.aborted,
        ),
        (
            "rialto_pushes_refused_total",
            "Pushes the push guard refused since start (too few records, or shrunk too much).",
            c.refused,
        ),
    ] {
        w.counter(name, help, &[], v);
    }
}
