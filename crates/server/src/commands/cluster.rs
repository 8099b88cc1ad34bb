//! CLUSTER ..., READONLY, READWRITE, ASKING — a single `rialto serve` is a standalone server,
//! and refuses them as Redis without cluster-enabled does; cluster mode (on Kafka) answers
//! them from the node's view: masters as the applied log names them, replicas as Kafka's
//! group lists the live nodes. Every partition is a shard; a node serves one address per
//! partition (`port + p`), as master or replica.

use std::time::Duration;

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::cluster::{Address, Cluster};
use crate::command_table::ArgType::{Integer, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};

const CLUSTER_INFO: CommandSpec = cmd("cluster|info", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Reports the state and counters of the cluster as this node sees them.",
        "O(1)",
    ))
    .handler(Handler::Conn(info));

const CLUSTER_SLOTS: CommandSpec = cmd("cluster|slots", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(
        doc(
            "cluster",
            "3.0.0",
            "Returns the nodes that serve each range of hash slots.",
            "O(N), N being the number of nodes in the cluster.",
        )
        .deprecated("7.0.0", "`CLUSTER SHARDS`")
        .history(&[
            ("4.0.0", "Node IDs in the reply."),
            ("7.0.0", "More networking metadata per node."),
        ]),
    )
    .handler(Handler::Conn(slots));

const CLUSTER_SHARDS: CommandSpec = cmd("cluster|shards", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "cluster",
        "7.0.0",
        "Returns the shards of the cluster with their slot ranges and nodes.",
        "O(N), N being the number of nodes in the cluster.",
    ))
    .handler(Handler::Conn(shards));

const CLUSTER_NODES: CommandSpec = cmd("cluster|nodes", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Returns the cluster configuration as this node sees it, one node per line.",
        "O(N), N being the number of nodes in the cluster.",
    ))
    .handler(Handler::Conn(nodes));

const CLUSTER_MYID: CommandSpec = cmd("cluster|myid", 2, &["stale"], &["@slow"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Returns the ID of this node.",
        "O(1)",
    ))
    .handler(Handler::Conn(myid));

const CLUSTER_KEYSLOT: CommandSpec = cmd("cluster|keyslot", 3, &["stale"], &["@slow"])
    .docs(
        doc(
            "cluster",
            "3.0.0",
            "Returns the hash slot that a key maps to.",
            "O(N), N being the length of the key in bytes.",
        )
        .args(&[arg("key", Str)]),
    )
    .handler(Handler::Conn(keyslot));

const CLUSTER_COUNTKEYSINSLOT: CommandSpec =
    cmd("cluster|countkeysinslot", 3, &["stale"], &["@slow"])
        .docs(
            doc(
                "cluster",
                "3.0.0",
                "Returns the number of keys in a hash slot.",
                "O(N), N being the number of keys of this node's partition of the slot.",
            )
            .args(&[arg("slot", Integer)]),
        )
        .handler(Handler::Conn(countkeysinslot));

const CLUSTER_GETKEYSINSLOT: CommandSpec = cmd("cluster|getkeysinslot", 4, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(
        doc(
            "cluster",
            "3.0.0",
            "Returns key names in a hash slot.",
            "O(N), N being the number of keys of this node's partition of the slot.",
        )
        .args(&[arg("slot", Integer), arg("count", Integer)]),
    )
    .handler(Handler::Conn(getkeysinslot));

const CLUSTER_HELP: CommandSpec = cmd("cluster|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "cluster",
        "5.0.0",
        "Lists the CLUSTER subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(disabled));

pub const CLUSTER: CommandSpec = cmd("cluster", -2, &[], &["@slow"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Groups the subcommands that describe the cluster.",
        "Varies by subcommand.",
    ))
    .subs(&[
        CLUSTER_INFO,
        CLUSTER_SLOTS,
        CLUSTER_SHARDS,
        CLUSTER_NODES,
        CLUSTER_MYID,
        CLUSTER_KEYSLOT,
        CLUSTER_COUNTKEYSINSLOT,
        CLUSTER_GETKEYSINSLOT,
        CLUSTER_HELP,
    ]);

pub const READONLY: CommandSpec = cmd(
    "readonly",
    1,
    &["loading", "stale", "fast"],
    &["@fast", "@connection"],
)
.docs(doc(
    "cluster",
    "3.0.0",
    "Allows this connection to read from a replica node of a cluster.",
    "O(1)",
))
.handler(Handler::Conn(readonly));

pub const READWRITE: CommandSpec = cmd(
    "readwrite",
    1,
    &["loading", "stale", "fast"],
    &["@fast", "@connection"],
)
.docs(doc(
    "cluster",
    "3.0.0",
    "Ends the read-only mode of this connection to a cluster replica.",
    "O(1)",
))
.handler(Handler::Conn(readwrite));

pub const ASKING: CommandSpec = cmd("asking", 1, &["fast"], &["@fast", "@connection"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Marks the next command as allowed on a slot being imported (an -ASK redirection).",
        "O(1)",
    ))
    .handler(Handler::Conn(asking));

/// Every CLUSTER subcommand (HELP too, as in Redis), READONLY and READWRITE.
pub(super) fn disabled(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::error(
        "ERR This instance has cluster support disabled",
    ))
}

/// Runs `f` with the cluster and `replica-max-lag-ms` (past it a replica leaves the slot map).
fn with_cluster(ctx: &mut Ctx<'_>, f: impl FnOnce(&Cluster, Duration) -> Reply) -> Outcome {
    match &ctx.shared.cluster {
        Some(c) => Outcome::Reply(f(c, ctx.shared.config.read().cluster.replica_max_lag)),
        None => disabled(ctx, &[]),
    }
}

fn bulk(s: impl Into<String>) -> Reply {
    Reply::Bulk(Bytes::from(s.into()))
}

fn info(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    with_cluster(ctx, |c, lag| {
        let layout = c.layout(lag);
        let served = layout
            .iter()
            .filter(|a| a.first().is_some_and(|m| m.master))
            .count();
        let slots_ok: u32 = (0..c.partitions)
            .filter(|&p| layout[p as usize].first().is_some_and(|m| m.master))
            .map(|p| {
                let (lo, hi) = rialto_cluster::slot::slot_range(p, c.partitions);
                u32::from(hi) - u32::from(lo) + 1
            })
            .sum();
        let known: usize = layout.iter().map(Vec::len).sum();
        let state = if served == layout.len() { "ok" } else { "fail" };
        let text = format!(
            "cluster_state:{state}\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:{slots_ok}\r\n\
             cluster_slots_pfail:0\r\ncluster_slots_fail:{}\r\ncluster_known_nodes:{known}\r\n\
             cluster_size:{}\r\ncluster_current_epoch:0\r\ncluster_my_epoch:0\r\n\
             cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
             total_cluster_links_buffer_limit_exceeded:0\r\n",
            16384 - slots_ok,
            c.partitions,
        );
        Reply::Verbatim {
            format: *b"txt",
            text: Bytes::from(text),
        }
    })
}

fn endpoint(a: &Address) -> Reply {
    Reply::Array(vec![
        bulk(a.host.clone()),
        Reply::Integer(i64::from(a.port)),
        bulk(a.id()),
        Reply::Array(Vec::new()),
    ])
}

fn slots(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    with_cluster(ctx, |c, lag| {
        let mut out = Vec::new();
        for (p, addrs) in c.layout(lag).iter().enumerate() {
            // A partition without a master is not served: Redis leaves such slots out.
            if !addrs.first().is_some_and(|a| a.master) {
                continue;
            }
            let (lo, hi) = rialto_cluster::slot::slot_range(p as u32, c.partitions);
            let mut range = vec![Reply::Integer(i64::from(lo)), Reply::Integer(i64::from(hi))];
            // A replica that lags is left out until it catches up: clients read elsewhere.
            range.extend(
                addrs
                    .iter()
                    .filter(|a| a.master || !a.lagging)
                    .map(endpoint),
            );
            out.push(Reply::Array(range));
        }
        Reply::Array(out)
    })
}

fn shards(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    with_cluster(ctx, |c, lag| {
        let mut out = Vec::new();
        for (p, addrs) in c.layout(lag).iter().enumerate() {
            let (lo, hi) = rialto_cluster::slot::slot_range(p as u32, c.partitions);
            let nodes = addrs
                .iter()
                .map(|a| {
                    let health = if a.master || !a.lagging {
                        "online"
                    } else {
                        "loading"
                    };
                    Reply::Map(vec![
                        (bulk("id"), bulk(a.id())),
                        (bulk("port"), Reply::Integer(i64::from(a.port))),
                        (bulk("ip"), bulk(a.host.clone())),
                        (bulk("endpoint"), bulk(a.host.clone())),
                        (
                            bulk("role"),
                            bulk(if a.master { "master" } else { "replica" }),
                        ),
                        (bulk("replication-offset"), Reply::Integer(a.offset as i64)),
                        (bulk("health"), bulk(health)),
                    ])
                })
                .collect();
            out.push(Reply::Map(vec![
                (
                    bulk("slots"),
                    Reply::Array(vec![
                        Reply::Integer(i64::from(lo)),
                        Reply::Integer(i64::from(hi)),
                    ]),
                ),
                (bulk("nodes"), Reply::Array(nodes)),
            ]));
        }
        Reply::Array(out)
    })
}

fn nodes(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let port = ctx.client.handle.laddr.port();
    with_cluster(ctx, |c, lag| {
        let mine = c.partition_of_port(port);
        let me = c.node.options().node_id;
        let mut text = String::new();
        for (p, addrs) in c.layout(lag).iter().enumerate() {
            let master_id = addrs.first().filter(|a| a.master).map(Address::id);
            let (lo, hi) = rialto_cluster::slot::slot_range(p as u32, c.partitions);
            for a in addrs.iter().filter(|a| a.master || !a.lagging) {
                let myself = a.node == me && p as u32 == mine;
                let flags = match (myself, a.master) {
                    (true, true) => "myself,master",
                    (true, false) => "myself,slave",
                    (false, true) => "master",
                    (false, false) => "slave",
                };
                let of = if a.master {
                    "-".to_string()
                } else {
                    master_id.clone().unwrap_or_else(|| "-".into())
                };
                let _ = std::fmt::Write::write_fmt(
                    &mut text,
                    format_args!(
                        "{} {}:{}@{} {flags} {of} 0 0 0 connected",
                        a.id(),
                        a.host,
                        a.port,
                        u32::from(a.port) + 10000,
                    ),
                );
                if a.master {
                    let _ = std::fmt::Write::write_fmt(&mut text, format_args!(" {lo}-{hi}"));
                }
                text.push('\n');
            }
        }
        Reply::Verbatim {
            format: *b"txt",
            text: Bytes::from(text),
        }
    })
}

fn myid(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let port = ctx.client.handle.laddr.port();
    with_cluster(ctx, |c, _| {
        bulk(crate::cluster::node_id(
            c.node.options().node_id,
            c.partition_of_port(port),
        ))
    })
}

fn keyslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let slot = rialto_cluster::slot::key_slot(&args[2]);
    with_cluster(ctx, |_, _| Reply::Integer(i64::from(slot)))
}

/// The slot argument, as Redis checks it.
fn slot_arg(arg: &[u8]) -> Result<u16, Reply> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|s| (0..16384).contains(s))
        .map(|s| s as u16)
        .ok_or(Reply::error("ERR Invalid slot"))
}

/// Up to `limit` keys of database 0 in `slot`, walking this node's keys (every key is
/// visited: there is no per-slot index).
fn keys_in_slot(ctx: &Ctx<'_>, slot: u16, limit: usize) -> Result<Vec<Bytes>, Reply> {
    let mut out = Vec::new();
    let now = ctx.shared.now_ms();
    let part = ctx.shared.cluster.as_ref().map_or(0, |c| {
        rialto_cluster::slot::partition_of(slot, c.partitions)
    });
    ctx.shared
        .keyspace
        .walk_keys_in(part, 0, None, now, |k, _| {
            if rialto_cluster::slot::key_slot(k) == slot {
                out.push(Bytes::copy_from_slice(k));
            }
            out.len() < limit
        })
        .map_err(|e| crate::reply::keyspace_error(&e))?;
    Ok(out)
}

fn countkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.shared.cluster.is_none() {
        return disabled(ctx, args);
    }
    let r = slot_arg(&args[2])
        .and_then(|s| keys_in_slot(ctx, s, usize::MAX))
        .map(|k| Reply::Integer(k.len() as i64));
    Outcome::Reply(r.unwrap_or_else(|e| e))
}

fn getkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.shared.cluster.is_none() {
        return disabled(ctx, args);
    }
    let count = std::str::from_utf8(&args[3])
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|&n| n >= 0)
        .ok_or(Reply::error("ERR Invalid number of keys"));
    let r = slot_arg(&args[2]).and_then(|s| {
        let n = count?;
        keys_in_slot(ctx, s, usize::try_from(n).unwrap_or(usize::MAX))
            .map(|k| Reply::Array(k.into_iter().map(Reply::Bulk).collect()))
    });
    Outcome::Reply(r.unwrap_or_else(|e| e))
}

fn readonly(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.shared.cluster.is_none() {
        return disabled(ctx, args);
    }
    ctx.client.readonly = true;
    Outcome::Reply(crate::reply::ok())
}

fn readwrite(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.shared.cluster.is_none() {
        return disabled(ctx, args);
    }
    ctx.client.readonly = false;
    Outcome::Reply(crate::reply::ok())
}

/// Slots never migrate here (a partition's range is fixed), so nothing is ever imported and
/// ASKING only acknowledges, as Redis does.
fn asking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.shared.cluster.is_none() {
        return disabled(ctx, args);
    }
    Outcome::Reply(crate::reply::ok())
}
