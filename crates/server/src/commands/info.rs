//! INFO [section ...] — Redis's sections, plus Rialto's engine, merger and I/O sections.
//! `keyspace` walks every database (O(n) in keys), so it is computed off the connection
//! threads.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use rialto_resp::Reply;

use super::hello::REDIS_COMPAT_VERSION;
use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::String as Str;
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::server::Shared;

pub const INFO: CommandSpec = cmd("info", -1, &["loading", "stale"], &["@slow", "@dangerous"])
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ])
    .docs(
        doc(
            "server",
            "1.0.0",
            "Reports information and statistics about the server, by section.",
            "O(1)",
        )
        .history(&[("7.0.0", "Takes several sections.")])
        .args(&[arg("section", Str).opt().multi()]),
    )
    .handler(Handler::Conn(run));

/// Every section, in `INFO all` order (Redis's, then Rialto's own).
const ALL: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
    "rialto_engine",
    "rialto_triad",
    "rialto_merger",
    "rialto_io",
    "rialto_stores",
];
/// Sections only `INFO all` / `INFO everything` (or their own name) shows.
const EXTRA: &[&str] = &["commandstats", "latencystats"];

/// `INFO` / `INFO default`: every section but the extra ones.
fn default_sections() -> impl Iterator<Item = &'static str> {
    ALL.iter().copied().filter(|s| !EXTRA.contains(s))
}

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut wanted: Vec<&str> = Vec::new();
    if args.len() == 1 {
        wanted.extend(default_sections());
    }
    for a in &args[1..] {
        let a = String::from_utf8_lossy(a).to_ascii_lowercase();
        match a.as_str() {
            "default" => wanted.extend(default_sections()),
            "all" | "everything" => wanted.extend(ALL),
            s => {
                if let Some(known) = ALL.iter().find(|k| **k == s) {
                    wanted.push(known);
                }
            }
        }
    }
    let mut seen = Vec::new();
    wanted.retain(|s| {
        let fresh = !seen.contains(s);
        seen.push(*s);
        fresh
    });
    let shared = Arc::clone(ctx.shared);
    let port = ctx.client.handle.laddr.port();
    Outcome::Later(Box::pin(async move {
        let text = tokio::task::spawn_blocking(move || render(&shared, port, &wanted))
            .await
            .unwrap_or_default();
        Reply::Verbatim {
            format: *b"txt",
            text: Bytes::from(text),
        }
    }))
}

fn render(shared: &Shared, port: u16, sections: &[&str]) -> String {
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        section(shared, port, s, &mut out);
    }
    out
}

/// Appends section `name` as the address reached on `port` reports it.
fn section(sh: &Shared, port: u16, name: &str, o: &mut String) {
    let cfg = sh.config.read().clone();
    let uptime = sh.started.elapsed().as_secs();
    match name {
        "server" => {
            let _ = write!(
                o,
                "# Server\r\nredis_version:{REDIS_COMPAT_VERSION}\r\nrialto_version:{}\r\nredis_mode:{}\r\nos:{} {}\r\narch_bits:64\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:{}\r\nexecutable:{}\r\n",
                env!("CARGO_PKG_VERSION"),
                if sh.cluster.is_some() { "cluster" } else { "standalone" },
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                sh.run_id,
                sh.port.load(std::sync::atomic::Ordering::Relaxed),
                uptime / 86_400,
                cfg.hz,
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            );
        }
        "clients" => {
            let _ = write!(
                o,
                "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\n",
                sh.clients.len(),
                cfg.maxclients,
                sh.keyspace.blocked().0,
                sh.tracking.clients(),
            );
        }
        "memory" => {
            use crate::process::human;
            let m = crate::process::memory();
            let libraries = sh.scripts.libraries();
            let _ = write!(
                o,
                "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\ntotal_system_memory:{}\r\ntotal_system_memory_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:noeviction\r\nmem_fragmentation_ratio:{:.2}\r\nmem_allocator:libc\r\nmem_clients_normal:{}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\n",
                m.used,
                human(m.used),
                m.rss,
                human(m.rss),
                m.peak,
                human(m.peak),
                if m.peak == 0 { 0.0 } else { m.used as f64 * 100.0 / m.peak as f64 },
                m.total_system,
                human(m.total_system),
                cfg.maxmemory,
                human(cfg.maxmemory),
                if m.used == 0 { 0.0 } else { m.rss as f64 / m.used as f64 },
                sh.clients.memory.total(),
                sh.scripts.cached_scripts(),
                libraries.iter().map(|l| l.functions.len()).sum::<usize>(),
                libraries.len(),
            );
        }
        "cpu" => {
            let c = crate::process::cpu();
            let _ = write!(
                o,
                "# CPU\r\nused_cpu_sys:{:.6}\r\nused_cpu_user:{:.6}\r\nused_cpu_sys_children:{:.6}\r\nused_cpu_user_children:{:.6}\r\n",
                c.sys, c.user, c.children_sys, c.children_user,
            );
        }
        "persistence" => {
            let m = sh.keyspace.merger_stats();
            let _ = write!(
                o,
                "# Persistence\r\nloading:0\r\naof_enabled:1\r\nappendfsync:{}\r\naof_last_write_status:{}\r\nrdb_bgsave_in_progress:0\r\n",
                m.durability.name(),
                if m.failed.is_some() { "err" } else { "ok" },
            );
        }
        "stats" => {
            let s = &sh.stats;
            let (channels, shard_channels) = sh.hub.numchannels();
            let (tkeys, titems, tprefixes) = sh.tracking.totals();
            // `migrate_cached_sockets` is always 0: MIGRATE opens a connection per call.
            let _ = write!(
                o,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nprotocol_errors:{}\r\nauth_failures:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nmigrate_cached_sockets:0\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\nevicted_clients:{}\r\n",
                sh.clients.accepted.load(Ordering::Relaxed),
                s.commands.load(Ordering::Relaxed),
                s.net_input_bytes.load(Ordering::Relaxed),
                s.net_output_bytes.load(Ordering::Relaxed),
                sh.clients.rejected.load(Ordering::Relaxed),
                s.expired_keys.load(Ordering::Relaxed),
                s.rejected_protocol.load(Ordering::Relaxed),
                s.auth_failures.load(Ordering::Relaxed),
                channels,
                sh.hub.numpat(),
                shard_channels,
                tkeys,
                titems,
                tprefixes,
                sh.errors.total(),
                sh.clients.memory.evicted.load(Ordering::Relaxed),
            );
        }
        "errorstats" => sh.errors.render(o),
        "replication" => match &sh.cluster {
            Some(c) => o.push_str(&c.replication_info(port, cfg.cluster.replica_max_lag)),
            None => {
                // A master without replicas, in Redis 7.0's fields.
                let _ = write!(
                    o,
                    "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
                    sh.repl_id.lock()
                );
            }
        },
        "cluster" => {
            o.push_str("# Cluster\r\n");
            match &sh.cluster {
                None => o.push_str("cluster_enabled:0\r\n"),
                Some(c) => {
                    let v = c.node.view();
                    let _ = write!(
                        o,
                        "cluster_enabled:1\r\ncluster_node_id:{}\r\ncluster_partitions:{}\r\n",
                        c.node.options().node_id,
                        c.partitions
                    );
                    for p in 0..c.partitions as usize {
                        let master = v.masters[p].as_ref().map_or(0, |m| m.node);
                        let role = if c.node.is_master(p as u32) {
                            "master"
                        } else {
                            "replica"
                        };
                        let lag = v.high[p].saturating_sub(v.applied[p]);
                        let since =
                            v.caught_up_at[p].map_or(-1, |t| t.elapsed().as_millis() as i64);
                        let _ = write!(
                            o,
                            "partition{p}:role={role},master_node={master},applied_offset={},log_end={},lag_records={lag},caught_up_ms_ago={since}\r\n",
                            v.applied[p], v.high[p]
                        );
                    }
                    if let Some(f) = &v.failed {
                        let _ = write!(o, "cluster_apply_failed:{f}\r\n");
                    }
                }
            }
        }
        "keyspace" => {
            o.push_str("# Keyspace\r\n");
            for db in 0..cfg.databases.min(256) as u16 {
                let c = sh.keyspace.key_count(db as u8, None);
                if c.keys > 0 {
                    let _ = write!(
                        o,
                        "db{db}:keys={},expires={},avg_ttl=0\r\n",
                        c.keys, c.expires
                    );
                }
            }
        }
        "commandstats" => {
            o.push_str("# Commandstats\r\n");
            for e in sh.registry.entries() {
                let calls = e.calls.load(Ordering::Relaxed);
                let rejected = e.rejected.load(Ordering::Relaxed);
                let failed = e.failed.load(Ordering::Relaxed);
                // A command only ever refused is listed too, with no calls, as in Redis.
                if calls == 0 && rejected == 0 && failed == 0 {
                    continue;
                }
                let usec = e.micros.load(Ordering::Relaxed);
                let per_call = if calls == 0 {
                    0.0
                } else {
                    usec as f64 / calls as f64
                };
                let _ = write!(
                    o,
                    "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={failed}\r\n",
                    e.spec.name,
                );
            }
        }
        "rialto_stores" => render_stores(sh, o),
        "latencystats" => {
            o.push_str("# Latencystats\r\n");
            if sh.command_latencies.enabled() {
                let merged = sh.command_latencies.merged();
                for (slot, spec) in crate::command_table::slots() {
                    if let Some(Some(h)) = merged.get(slot) {
                        let line = crate::latency_histograms::percentiles_line(
                            h,
                            &cfg.latency_tracking_info_percentiles,
                        );
                        let _ = write!(o, "latency_percentiles_usec_{}:{line}\r\n", spec.name);
                    }
                }
            }
        }
        "rialto_engine" => {
            let s = sh.keyspace.engine_stats();
            let _ = write!(
                o,
                "# Rialto_engine\r\ndir:{}\r\ndisk_bytes:{}\r\nlive_data_bytes_estimate:{}\r\nuser_bytes_written:{}\r\nwal_bytes_written:{}\r\nwal_prepare_bytes_written:{}\r\nflush_bytes_written:{}\r\ncompaction_bytes_written:{}\r\nflushes:{}\r\ncompactions:{}\r\nidle_compactions:{}\r\nstall_micros:{}\r\nblock_cache_hits:{}\r\nblock_cache_misses:{}\r\nrow_cache_hits:{}\r\nrow_cache_misses:{}\r\nrow_cache_bytes:{}\r\nrow_cache_warmed_rows:{}\r\nread_only:{}\r\n",
                cfg.dir.display(),
                s.disk_bytes,
                s.live_data_bytes,
                s.user_bytes_written,
                s.wal_bytes_written,
                s.wal_prepare_bytes_written,
                s.flush_bytes_written,
                s.compaction_bytes_written,
                s.flushes,
                s.compactions,
                s.idle_compactions,
                s.stall_micros,
                s.block_cache_hits,
                s.block_cache_misses,
                s.row_cache_hits,
                s.row_cache_misses,
                s.row_cache_bytes,
                s.row_cache_warmed_rows,
                s.read_only_reason.as_deref().unwrap_or("no").replace(['\r', '\n'], " "),
            );
            for (i, l) in s.levels.iter().enumerate() {
                let _ = write!(o, "level{i}:files={},bytes={}\r\n", l.files, l.bytes);
            }
        }
        "rialto_triad" => {
            let t = sh.keyspace.triad_stats();
            let on_off = |b: bool| if b { "on" } else { "off" };
            let w = &t.last_window;
            let _ = write!(
                o,
                "# Rialto_triad\r\nmem:{}\r\ndisk:{}\r\nlog:{}\r\nadaptive:{}\r\nworkload:{}\r\nwindows:{}\r\nlast_window:reads={},writes={},read_fraction={:.3},skew={:.3}\r\nhot_cold_active:{}\r\nhot_flushes:{}\r\nhot_entries_kept:{}\r\nhot_bytes_relogged:{}\r\noverlap_threshold:{:.3}\r\nlast_overlap:{}\r\ndeferred_flushes:{}\r\nlog_active:{}\r\nlog_flushes:{}\r\nlog_fallbacks:{}\r\n",
                on_off(t.mem),
                on_off(t.disk),
                on_off(t.log),
                on_off(t.adaptive),
                t.workload.name(),
                t.windows,
                w.reads,
                w.writes,
                w.read_fraction(),
                w.skew(),
                u8::from(t.hot_cold_active),
                t.hot_flushes,
                t.hot_entries_kept,
                t.hot_bytes_relogged,
                t.overlap_threshold,
                t.last_overlap.map_or("none".to_string(), |x| format!("{x:.3}")),
                t.deferred_flushes,
                u8::from(t.log_active),
                t.log_flushes,
                t.log_fallbacks,
            );
            for (i, d) in t.decisions.iter().enumerate() {
                let _ = write!(
                    o,
                    "decision{i}:window={},from={},to={},read_fraction={:.3},skew={:.3},overlap_threshold={:.3},hot_cold={},commit_log={}\r\n",
                    d.window,
                    d.from.name(),
                    d.to.name(),
                    d.read_fraction,
                    d.skew,
                    d.tuning.overlap_threshold,
                    u8::from(d.tuning.hot_cold),
                    u8::from(d.tuning.commit_log),
                );
            }
        }
        "rialto_merger" => {
            let m = sh.keyspace.merger_stats();
            let _ = write!(
                o,
                "# Rialto_merger\r\ndurability:{}\r\ntransactions:{}\r\ngroups:{}\r\nsyncs:{}\r\nqueued:{}\r\nunsynced_bytes:{}\r\ncommit_p50_micros:{}\r\ncommit_p99_micros:{}\r\ncommit_max_micros:{}\r\npoll_suspensions:{}\r\nrelayed_wakeups:{}\r\nrelay_batches:{}\r\nfailed:{}\r\n",
                m.durability.name(),
                m.txns,
                m.groups,
                m.syncs,
                m.queued,
                m.unsynced_bytes,
                m.commit_p50_micros,
                m.commit_p99_micros,
                m.commit_max_micros,
                m.poll_suspensions,
                sh.relay_stats.relayed(),
                sh.relay_stats.batches(),
                m.failed.as_deref().unwrap_or("no").replace(['\r', '\n'], " "),
            );
        }
        "rialto_io" => {
            let s = sh.keyspace.io_stats();
            let _ = write!(o, "# Rialto_io\r\n");
            for (n, t) in [
                ("journal_writes", &s.journal_writes),
                ("journal_syncs", &s.journal_syncs),
                ("flushes", &s.flushes),
                ("compactions", &s.compactions),
            ] {
                let _ = write!(
                    o,
                    "{n}:count={},bytes={},micros={},max_micros={}\r\n",
                    t.count, t.bytes, t.micros, t.max_micros
                );
            }
            let _ = write!(
                o,
                "journal_sync_p50_micros:{}\r\njournal_sync_p99_micros:{}\r\nbackground_rate_limit:{}\r\nbackground_throttled_micros:{}\r\n",
                s.journal_sync_p50_micros,
                s.journal_sync_p99_micros,
                s.background_rate_limit.map_or("none".to_string(), |r| r.to_string()),
                s.background_throttled_micros,
            );
        }
        _ => {}
    }
}

/// `# Rialto_stores`: push totals, each store's versions (as partition 0 serves them in cluster
/// mode) and each push in progress with its phase and figures.
fn render_stores(sh: &crate::server::Shared, o: &mut String) {
    let counts = sh.keyspace.push_counts();
    let catalog = sh.keyspace.catalog();
    let pushes = sh.keyspace.push_statuses();
    let _ = write!(
        o,
        "# Rialto_stores\r\nstores:{}\r\npushes_begun:{}\r\npushes_committed:{}\r\npushes_aborted:{}\r\npushes_refused:{}\r\npushes_in_progress:{}\r\n",
        catalog.iter().count(),
        counts.begun,
        counts.committed,
        counts.aborted,
        counts.refused,
        pushes.len(),
    );
    for m in catalog.iter() {
        let _ = write!(
            o,
            "store_{}:id={},prefix={},current_version={},current_records={},current_bytes={},previous_version={},kept_versions={},keep={},compression={},pushing_version={}\r\n",
            info_safe(m.name.as_bytes()),
            m.id,
            info_safe(&m.prefix),
            m.current.number,
            m.current.records,
            m.current.bytes,
            m.previous().map_or(0, |v| v.number),
            m.kept.len(),
            m.keep,
            m.compression.name(),
            m.pushing.map_or(0, |p| p.version),
        );
    }
    for p in &pushes {
        let _ = write!(
            o,
            "push_{}:store={},phase={},records={},bytes={},written_records={},progress={:.4},elapsed_ms={}\r\n",
            p.id,
            info_safe(p.store.as_bytes()),
            p.phase.name(),
            p.records,
            p.bytes,
            p.written,
            p.progress_ratio(),
            p.elapsed.as_millis(),
        );
    }
}

/// Bytes shown in an INFO line: printable ASCII but the separators `,`, `:` and `=` as is,
/// anything else as `\xNN`.
fn info_safe(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        if c.is_ascii_graphic() && !matches!(c, b',' | b':' | b'=' | b'\\') {
            out.push(c as char);
        } else {
            let _ = write!(out, "\\x{c:02x}");
        }
    }
    out
}
