//! Cluster mode: the server's side of `rialto-cluster` — the state machine the log's writes
//! run through (an encoded [`Op`] per record), where a command may run (MOVED, CROSSSLOT,
//! read-only replicas), and the replies for writes the log did not apply.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rialto_cluster::kafka::{Error as KafkaError, Written};
use rialto_cluster::{slot, Node, NodeOptions, StateMachine, WriteError};
use rialto_keyspace::{Keyspace, Op, Transaction, Value};
use rialto_resp::Reply;

use crate::client::Client;
use crate::command_table::CommandSpec;
use crate::commands::{Admitted, Handler};
use crate::config::Config;

/// Applies a write record: the payload is one encoded [`Op`].
pub struct Machine;

impl StateMachine for Machine {
    type Output = (rialto_keyspace::Result<Value>, Duration);

    fn apply(&self, t: &mut Transaction<'_, '_>, payload: &[u8]) -> Self::Output {
        let start = Instant::now();
        let r = Op::decode(payload).and_then(|op| t.apply(&op));
        (r, start.elapsed())
    }
}

/// A running cluster node and what the server needs to route commands.
pub struct Cluster {
    pub node: Node<Machine>,
    /// Partition `p` is served at `base_port + p`.
    pub base_port: u16,
    pub partitions: u32,
    pub replica_max_lag: Duration,
}

/// Why the node could not join the cluster.
pub type StartError = rialto_cluster::node::Error;

impl Cluster {
    /// Joins the cluster the configuration names (blocking: it talks to Kafka).
    pub fn start(cfg: &Config, keyspace: Arc<Keyspace>) -> Result<Cluster, StartError> {
        let c = &cfg.cluster;
        let host = if c.announce_ip.is_empty() {
            cfg.bind
                .first()
                .map(|ip| ip.to_string())
                .unwrap_or_else(|| "127.0.0.1".into())
        } else {
            c.announce_ip.clone()
        };
        let opts = NodeOptions {
            bootstrap_servers: c.kafka.clone(),
            node_id: c.node_id,
            host,
            base_port: cfg.port,
            topic: c.topic.clone(),
            partitions: c.partitions,
            replication_factor: c.replication_factor,
            node_timeout: c.node_timeout,
            write_timeout: c.write_timeout,
        };
        Ok(Cluster {
            node: Node::start(keyspace, Machine, opts)?,
            base_port: cfg.port,
            partitions: c.partitions,
            replica_max_lag: c.replica_max_lag,
        })
    }

    /// The partition a connection accepted on `port` serves.
    pub fn partition_of_port(&self, port: u16) -> u32 {
        u32::from(port.saturating_sub(self.base_port)).min(self.partitions - 1)
    }

    /// `host:port` of partition `p`'s master, if the log names one.
    pub fn master_addr(&self, p: u32) -> Option<String> {
        let v = self.node.view();
        v.masters
            .get(p as usize)
            .and_then(|m| m.as_ref())
            .map(|m| format!("{}:{}", m.host, m.port))
    }

    /// The redirection to partition `p`'s master for `slot`: MOVED when another node is
    /// master, TRYAGAIN while this one is taking over or handing over, CLUSTERDOWN when no
    /// master is known.
    pub fn redirect(&self, slot: u16, p: u32) -> Reply {
        let v = self.node.view();
        match v.masters.get(p as usize).and_then(|m| m.as_ref()) {
            Some(m) if m.incarnation != self.node.incarnation() || !self.node.is_master(p) => {
                if m.incarnation == self.node.incarnation() {
                    tryagain()
                } else {
                    crate::reply::err_string(format!("MOVED {slot} {}:{}", m.host, m.port))
                }
            }
            Some(_) => tryagain(),
            None => Reply::error("CLUSTERDOWN Hash slot not served"),
        }
    }

    /// Whether this node's copy of partition `p` is recent enough to serve replica reads.
    pub fn fresh(&self, p: u32) -> bool {
        let v = self.node.view();
        v.failed.is_none()
            && v.caught_up_at
                .get(p as usize)
                .copied()
                .flatten()
                .is_some_and(|t| t.elapsed() <= self.replica_max_lag)
    }
}

fn tryagain() -> Reply {
    Reply::error("TRYAGAIN The slot's master is changing; try again")
}

/// Where a command runs in cluster mode.
pub enum Route {
    /// Here (keyless, or its keys are served by this address in its role).
    Here(Option<(u16, u32)>),
    /// Answered with this instead (a redirection or a refusal).
    Refused(Reply),
}

/// Decides where `args` runs for `client` connected to partition `mine`.
pub fn route(c: &Cluster, client: &Client, mine: u32, a: &Admitted, args: &[Bytes]) -> Route {
    let spec = a.spec;
    if let Some(r) = unavailable(spec, a.handler, args) {
        return Route::Refused(r);
    }
    let keys = crate::command_table::keys_with_flags(spec, args);
    let mut slot = None;
    for k in &keys {
        let Some(key) = args.get(k.pos) else { continue };
        let s = slot::key_slot(key);
        match slot {
            None => slot = Some(s),
            Some(first) if first != s => {
                return Route::Refused(Reply::error(
                    "CROSSSLOT Keys in request don't hash to the same slot",
                ))
            }
            Some(_) => {}
        }
    }
    let Some(slot) = slot else {
        return Route::Here(None);
    };
    let p = slot::partition_of(slot, c.partitions);
    if p != mine {
        return Route::Refused(c.redirect(slot, p));
    }
    if c.node.is_master(p) {
        return Route::Here(Some((slot, p)));
    }
    let write = spec.has_flag("write");
    if !write && client.readonly && c.fresh(p) {
        return Route::Here(Some((slot, p)));
    }
    Route::Refused(c.redirect(slot, p))
}

/// Commands cluster mode refuses: writes that do not go through the log as one op each
/// (transactions, scripts that may write, function changes, flushes, stores and pushes),
/// and databases other than 0, as Redis Cluster refuses them.
fn unavailable(spec: &CommandSpec, handler: Handler, args: &[Bytes]) -> Option<Reply> {
    let name = spec.name;
    let refused = match name {
        "multi" | "exec" | "watch" | "eval" | "evalsha" | "fcall" | "flushdb" | "flushall"
        | "swapdb" | "move" | "function|load" | "function|delete" | "function|flush"
        | "function|restore" | "push" | "store" => true,
        "select" => args.get(1).is_some_and(|db| &db[..] != b"0"),
        _ => spec.has_flag("write") && !matches!(handler, Handler::Write(_)),
    };
    if !refused {
        return None;
    }
    if name == "select" {
        return Some(Reply::error("ERR SELECT is not allowed in cluster mode"));
    }
    Some(crate::reply::err_string(format!(
        "ERR '{}' is not available in cluster mode",
        name.replace('|', " ")
    )))
}

/// The reply for a write the log did not apply.
pub fn write_error(c: &Cluster, e: &WriteError, at: Option<(u16, u32)>) -> Reply {
    match e {
        WriteError::NotMaster | WriteError::Fenced => match at {
            Some((slot, p)) => c.redirect(slot, p),
            None => tryagain(),
        },
        WriteError::Kafka { error, written } => {
            let maybe = *written == Written::Maybe;
            match (error, maybe) {
                (KafkaError::NotEnoughReplicas, false) => {
                    Reply::error("NOREPLICAS Not enough good replicas to write.")
                }
                (KafkaError::NotEnoughReplicas, true) => Reply::error(
                    "NOREPLICAS Not enough good replicas to write; the write may still be applied",
                ),
                (e, false) => crate::reply::err_string(format!(
                    "TRYAGAIN The log did not take the write: {e}"
                )),
                (e, true) => crate::reply::err_string(format!(
                    "ERR The log did not confirm the write ({e}); it may still be applied"
                )),
            }
        }
        WriteError::TimedOut => Reply::error(
            "ERR No outcome from the log within cluster-write-timeout; the write may still be applied",
        ),
        WriteError::Stopped(why) => crate::reply::err_string(format!(
            "CLUSTERDOWN This node stopped applying the log: {why}"
        )),
    }
}

/// One address of the cluster: a node serving one partition, as master or replica.
#[derive(Clone, Debug)]
pub struct Address {
    pub node: u32,
    pub partition: u32,
    pub host: String,
    pub port: u16,
    pub master: bool,
    /// This node (any of its addresses).
    pub local: bool,
}

impl Address {
    /// Its Redis Cluster node id: 40 hex digits, the node id then the partition, stable
    /// across restarts.
    pub fn id(&self) -> String {
        node_id(self.node, self.partition)
    }
}

/// The Redis Cluster id of `node`'s address for `partition`.
pub fn node_id(node: u32, partition: u32) -> String {
    format!("{node:020x}{partition:020x}")
}

impl Cluster {
    /// Every partition's addresses, master first (if known), then the replicas: the live
    /// members of the group, in node order.
    pub fn layout(&self) -> Vec<Vec<Address>> {
        let v = self.node.view();
        let me = self.node.options().node_id;
        (0..self.partitions)
            .map(|p| {
                let master = v.masters.get(p as usize).cloned().flatten();
                let mut out = Vec::new();
                if let Some(m) = &master {
                    out.push(Address {
                        node: m.node,
                        partition: p,
                        host: m.host.clone(),
                        port: m.port,
                        master: true,
                        local: m.node == me,
                    });
                }
                for mem in &v.members {
                    if master.as_ref().is_some_and(|m| m.node == mem.node) {
                        continue;
                    }
                    out.push(Address {
                        node: mem.node,
                        partition: p,
                        host: mem.host.clone(),
                        port: mem.base_port.saturating_add(p as u16),
                        master: false,
                        local: mem.node == me,
                    });
                }
                out
            })
            .collect()
    }
}

/// The keys a whole-keyspace command (DBSIZE, KEYS, SCAN, RANDOMKEY) covers: all of them on a
/// standalone server; in cluster mode, those of the slots the connection's address serves,
/// as each Redis Cluster node answers for its own slots.
#[derive(Clone)]
pub struct KeyScope(Option<(u32, u32)>);

impl KeyScope {
    pub fn of(shared: &crate::server::Shared, client: &Client) -> KeyScope {
        KeyScope(shared.cluster.as_ref().map(|c| {
            (
                c.partition_of_port(client.handle.laddr.port()),
                c.partitions,
            )
        }))
    }

    pub fn covers(&self, key: &[u8]) -> bool {
        match self.0 {
            None => true,
            Some((p, n)) => slot::partition_of(slot::key_slot(key), n) == p,
        }
    }
}
