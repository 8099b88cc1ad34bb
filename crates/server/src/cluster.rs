//! Cluster mode: the server's side of `rialto-cluster` — the state machine the log's writes
//! run through (an encoded [`Op`] per record), where a command may run (MOVED, CROSSSLOT,
//! read-only replicas), and the replies for writes the log did not apply.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rialto_cluster::kafka::{Error as KafkaError, Written};
use rialto_cluster::{
    key_hash, slot, Node, NodeOptions, StateMachine, Submitted, Touches, Unsent, WriteError,
};
use rialto_keyspace::{Keyspace, Op, OpKind, Transaction, Value};
use rialto_resp::Reply;

use std::collections::HashMap;

use parking_lot::Mutex;
use rialto_scripting::Scripts;

use crate::acl::User;
use crate::client::Client;
use crate::command_table::CommandSpec;
use crate::commands::{Admitted, Handler};
use crate::config::Config;
use crate::conn::script::{run_replicated, run_replicated_function, Replicated, ScriptCtx};

/// Applies a write record's payload (`Payload`).
pub struct Machine {
    /// The interpreter the log's scripts run in, on every replica alike.
    scripts: Arc<Scripts>,
    /// Per partition: the interpreter holding its function libraries, as its log (and the
    /// keyspace, at a restart) gives them; made when the partition first needs one.
    libraries: Vec<Mutex<Option<Arc<Scripts>>>>,
    /// `lua-memory-limit` of each interpreter.
    memory_limit: usize,
    /// Users rebuilt from the permissions a script record carries, by those rules.
    users: Mutex<HashMap<Bytes, Arc<User>>>,
    partitions: u32,
}

/// Users [`Machine`] keeps rebuilt; past it the cache starts again.
const USERS_CACHED: usize = 1024;

impl Machine {
    pub fn new(cfg: &Config, keyspace: &Keyspace) -> Result<Machine, StartError> {
        let interpreter = || {
            Scripts::new_replicated(cfg.lua_memory_limit).map_err(|_| {
                rialto_cluster::node::Error::Config("cannot start the scripts' interpreter")
            })
        };
        let scripts = interpreter()?;
        let mut libraries = Vec::new();
        for p in 0..cfg.cluster.partitions {
            let stored = keyspace.partition_libraries(p)?;
            if stored.is_empty() {
                libraries.push(Mutex::new(None));
                continue;
            }
            let s = interpreter()?;
            for lib in stored {
                let loaded = s
                    .check_library(&lib.code)
                    .and_then(|info| s.install_library(info));
                if loaded.is_err() {
                    return Err(rialto_cluster::node::Error::Config(
                        "a stored function library of a partition does not load",
                    ));
                }
            }
            libraries.push(Mutex::new(Some(Arc::new(s))));
        }
        Ok(Machine {
            scripts: Arc::new(scripts),
            libraries,
            memory_limit: cfg.lua_memory_limit,
            users: Mutex::new(HashMap::new()),
            partitions: cfg.cluster.partitions,
        })
    }

    /// Partition `p`'s function libraries (`None`: no such partition, or no memory for an
    /// interpreter).
    pub fn libraries(&self, p: u32) -> Option<Arc<Scripts>> {
        let mut slot = self.libraries.get(p as usize)?.lock();
        if slot.is_none() {
            *slot = Some(Arc::new(Scripts::new_replicated(self.memory_limit).ok()?));
        }
        slot.clone()
    }

    /// Mirrors a partition's library change, applied by the keyspace, in its interpreter.
    fn install(&self, p: u32, op: &rialto_keyspace::LibraryOp) {
        use rialto_keyspace::{LibraryOp, RestorePolicy};
        let Some(s) = self.libraries(p) else { return };
        // The master checked the code and the keyspace applied the change: it loads.
        let put = |code: &Bytes| {
            if let Ok(info) = s.check_library(code) {
                let _ = s.install_library(info);
            }
        };
        match op {
            LibraryOp::Put { lib, .. } => put(&lib.code),
            LibraryOp::Delete { name } => s.remove_library(name),
            LibraryOp::Flush => s.flush_libraries(),
            LibraryOp::Restore { libs, policy } => {
                if *policy == RestorePolicy::Flush {
                    s.flush_libraries();
                }
                libs.iter().for_each(|l| put(&l.code));
            }
        }
    }

    /// The user whose permissions are `rules` (`name rule...`), or why not.
    fn user(&self, rules: &Bytes) -> Result<Arc<User>, Reply> {
        if let Some(u) = self.users.lock().get(rules) {
            return Ok(Arc::clone(u));
        }
        let bad = || Reply::error("ERR the script record's user does not parse");
        let line = std::str::from_utf8(rules).map_err(|_| bad())?;
        let (name, rules_list) = crate::acl::parse_user_spec(line).map_err(|_| bad())?;
        let mut acl = crate::acl::Acl::new(crate::command_table::all(), None);
        let refs: Vec<&[u8]> = rules_list.iter().map(|r| r.as_bytes()).collect();
        acl.set_user(name.as_bytes(), &refs).map_err(|_| bad())?;
        let user = acl.user(name.as_bytes()).ok_or_else(bad)?;
        let mut users = self.users.lock();
        if users.len() >= USERS_CACHED {
            users.clear();
        }
        users.insert(rules.clone(), Arc::clone(&user));
        Ok(user)
    }

    fn script(&self, t: &mut Transaction<'_, '_>, s: &ScriptRecord) -> Reply {
        let user = match &s.user {
            None => None,
            Some(rules) => match self.user(rules) {
                Ok(u) => Some(u),
                Err(r) => return r,
            },
        };
        let before = t.now_ms();
        t.set_now_ms(s.now_ms);
        let ctx = ScriptCtx::replicated(
            Arc::clone(&self.scripts),
            user,
            Replicated {
                first_slot: s.first_slot,
                last_slot: s.last_slot,
                partitions: self.partitions,
                now_ms: s.now_ms,
            },
        );
        let reply = match &s.function {
            None => run_replicated(t, &ctx, &s.body, &s.keys, &s.argv, s.max_instructions),
            Some(name) => {
                let p = slot::partition_of(s.first_slot, self.partitions);
                match self.libraries(p) {
                    Some(libs) => run_replicated_function(
                        t,
                        &ctx,
                        &libs,
                        name,
                        (&s.keys, &s.argv),
                        s.max_instructions,
                        false,
                    ),
                    None => Reply::error("ERR Function not found"),
                }
            }
        };
        t.set_now_ms(before);
        reply
    }
}

/// What applying a payload gives its writer.
pub enum Applied {
    /// A command's result.
    One(rialto_keyspace::Result<Value>),
    /// A transaction's replies, one per step (`None` where the writer fills them in).
    Many(Vec<Option<Reply>>),
    /// A script's reply.
    Reply(Reply),
}

impl StateMachine for Machine {
    type Output = (Applied, Duration);

    fn apply(&self, t: &mut Transaction<'_, '_>, payload: &[u8], mine: bool) -> Self::Output {
        let start = Instant::now();
        let out = match Payload::decode(payload) {
            Ok(Payload::One(op)) => {
                let r = t.apply(&op);
                if let (Ok(_), OpKind::PartitionLibrary { partition, op }) = (&r, &op.kind) {
                    self.install(*partition, op);
                }
                Applied::One(r)
            }
            Ok(Payload::Script(s)) => Applied::Reply(self.script(t, &s)),
            Ok(Payload::Exec(steps)) => Applied::Many(
                steps
                    .into_iter()
                    .map(|step| match step {
                        ExecStep::Op(op) => Some(match t.apply(&op) {
                            // A flush in a transaction runs whole and answers OK, as on one node.
                            Ok(_) if matches!(op.kind, OpKind::FlushSlots { .. }) => {
                                crate::reply::ok()
                            }
                            Ok(v) => crate::reply::value(v),
                            Err(e) => crate::reply::keyspace_error(&e),
                        }),
                        ExecStep::Read(db, args) if mine => Some(read_step(t, db, &args)),
                        ExecStep::Read(..) | ExecStep::Elsewhere => None,
                    })
                    .collect(),
            ),
            Err(e) => Applied::One(Err(e)),
        };
        (out, start.elapsed())
    }

    fn needs_version(&self, payload: &[u8]) -> Option<(u32, u32)> {
        crate::cluster_stores::needs_version(payload)
    }
}

/// A read queued in a transaction, run at its place on the node that answers it.
fn read_step(t: &mut Transaction<'_, '_>, db: u8, args: &[Bytes]) -> Reply {
    let f = match crate::command_table::resolve(args).map(|(_, spec)| spec.handler_for(args)) {
        Ok(Some(Handler::Read(f))) => f,
        Ok(_) => return Reply::error("ERR not a read command"),
        Err(r) => return r,
    };
    t.read(db, |k| f(&mut crate::commands::R::new(k), args))
        .unwrap_or_else(|e| e)
}

/// A write record's payload, the state machine's part of the record (after its epoch and
/// sequence number):
///
/// ```text
/// payload := kind: u8 | body
///   1 one    op (the §11.7 byte format, the rest)
///   2 exec   n: varint | step*n
///     step := 1 | len: varint | op          a write, applied by every replica
///           | 2 | db: u8 | argc: varint | (len: varint | arg)*argc
///                                           a read, run by the writer only, for its reply
///           | 3                             answered by the writer outside the transaction
///   3 script now_ms: i64 LE | max_instructions: varint | first_slot: u16 LE
///            | last_slot: u16 LE | user: (0 | 1 | len: varint | rules)
///            | (0 | len: varint | body  — EVAL   | 1 | len: varint | name  — FCALL)
///            | nkeys: varint | (len: varint | key)*nkeys | nargs: varint | (len: varint | arg)*nargs
/// ```
pub enum Payload {
    One(Op),
    Exec(Vec<ExecStep>),
    Script(ScriptRecord),
}

/// EVAL as the log carries it: everything a replica needs to run the script as the master
/// would — the body (EVALSHA's resolved by the master), the record's time, the slots its keys
/// may be in, the permissions of the user who ran it (`None`: unrestricted) and its
/// instruction budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptRecord {
    pub now_ms: i64,
    pub max_instructions: u64,
    pub first_slot: u16,
    pub last_slot: u16,
    pub user: Option<Bytes>,
    /// FCALL: the function's name (`body` is then empty).
    pub function: Option<Bytes>,
    pub body: Bytes,
    pub keys: Vec<Bytes>,
    pub argv: Vec<Bytes>,
}

/// One queued command of a transaction in the log.
pub enum ExecStep {
    Op(Op),
    Read(u8, Vec<Bytes>),
    Elsewhere,
}

fn put_varint(v: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        v.push((n as u8) | 0x80);
        n >>= 7;
    }
    v.push(n as u8);
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn bad() -> rialto_keyspace::Error {
        rialto_keyspace::Error::BadOp("a transaction record is damaged")
    }
    fn u8(&mut self) -> rialto_keyspace::Result<u8> {
        let (&b, rest) = self.0.split_first().ok_or_else(Self::bad)?;
        self.0 = rest;
        Ok(b)
    }
    fn varint(&mut self) -> rialto_keyspace::Result<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(Self::bad())
    }
    fn bytes(&mut self) -> rialto_keyspace::Result<&'a [u8]> {
        let len = usize::try_from(self.varint()?).map_err(|_| Self::bad())?;
        if len > self.0.len() {
            return Err(Self::bad());
        }
        let (a, b) = self.0.split_at(len);
        self.0 = b;
        Ok(a)
    }
}

fn put_bytes(v: &mut Vec<u8>, b: &[u8]) {
    put_varint(v, b.len() as u64);
    v.extend_from_slice(b);
}

impl Payload {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Payload::Script(s) => {
                let mut v = vec![3];
                v.extend_from_slice(&s.now_ms.to_le_bytes());
                put_varint(&mut v, s.max_instructions);
                v.extend_from_slice(&s.first_slot.to_le_bytes());
                v.extend_from_slice(&s.last_slot.to_le_bytes());
                match &s.user {
                    None => v.push(0),
                    Some(u) => {
                        v.push(1);
                        put_bytes(&mut v, u);
                    }
                }
                match &s.function {
                    None => {
                        v.push(0);
                        put_bytes(&mut v, &s.body);
                    }
                    Some(name) => {
                        v.push(1);
                        put_bytes(&mut v, name);
                    }
                }
                for list in [&s.keys, &s.argv] {
                    put_varint(&mut v, list.len() as u64);
                    for a in list {
                        put_bytes(&mut v, a);
                    }
                }
                v
            }
            Payload::One(op) => {
                let mut v = vec![1];
                v.extend_from_slice(&op.encode());
                v
            }
            Payload::Exec(steps) => {
                let mut v = vec![2];
                put_varint(&mut v, steps.len() as u64);
                for s in steps {
                    match s {
                        ExecStep::Op(op) => {
                            let b = op.encode();
                            v.push(1);
                            put_varint(&mut v, b.len() as u64);
                            v.extend_from_slice(&b);
                        }
                        ExecStep::Read(db, args) => {
                            v.push(2);
                            v.push(*db);
                            put_varint(&mut v, args.len() as u64);
                            for a in args {
                                put_varint(&mut v, a.len() as u64);
                                v.extend_from_slice(a);
                            }
                        }
                        ExecStep::Elsewhere => v.push(3),
                    }
                }
                v
            }
        }
    }

    /// Decodes strictly: anything damaged or left over is refused.
    pub fn decode(b: &[u8]) -> rialto_keyspace::Result<Payload> {
        let mut c = Cursor(b);
        match c.u8()? {
            1 => Ok(Payload::One(Op::decode(c.0)?)),
            2 => {
                let n = c.varint()?;
                // Every step takes at least one byte.
                if n > c.0.len() as u64 {
                    return Err(Cursor::bad());
                }
                let mut steps = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    steps.push(match c.u8()? {
                        1 => ExecStep::Op(Op::decode(c.bytes()?)?),
                        2 => {
                            let db = c.u8()?;
                            let argc = c.varint()?;
                            if argc > c.0.len() as u64 {
                                return Err(Cursor::bad());
                            }
                            let mut args = Vec::with_capacity(argc as usize);
                            for _ in 0..argc {
                                args.push(Bytes::copy_from_slice(c.bytes()?));
                            }
                            ExecStep::Read(db, args)
                        }
                        3 => ExecStep::Elsewhere,
                        _ => return Err(Cursor::bad()),
                    });
                }
                if !c.0.is_empty() {
                    return Err(Cursor::bad());
                }
                Ok(Payload::Exec(steps))
            }
            3 => {
                let mut fixed = |n: usize| -> rialto_keyspace::Result<&[u8]> {
                    if c.0.len() < n {
                        return Err(Cursor::bad());
                    }
                    let (a, b) = c.0.split_at(n);
                    c.0 = b;
                    Ok(a)
                };
                let now_ms = i64::from_le_bytes(fixed(8)?.try_into().map_err(|_| Cursor::bad())?);
                let max_instructions = c.varint()?;
                let slot = |c: &mut Cursor<'_>| -> rialto_keyspace::Result<u16> {
                    let lo = c.u8()?;
                    let hi = c.u8()?;
                    Ok(u16::from_le_bytes([lo, hi]))
                };
                let first_slot = slot(&mut c)?;
                let last_slot = slot(&mut c)?;
                let user = match c.u8()? {
                    0 => None,
                    1 => Some(Bytes::copy_from_slice(c.bytes()?)),
                    _ => return Err(Cursor::bad()),
                };
                let (function, body) = match c.u8()? {
                    0 => (None, Bytes::copy_from_slice(c.bytes()?)),
                    1 => (Some(Bytes::copy_from_slice(c.bytes()?)), Bytes::new()),
                    _ => return Err(Cursor::bad()),
                };
                let mut lists = [Vec::new(), Vec::new()];
                for list in &mut lists {
                    let n = c.varint()?;
                    if n > c.0.len() as u64 {
                        return Err(Cursor::bad());
                    }
                    for _ in 0..n {
                        list.push(Bytes::copy_from_slice(c.bytes()?));
                    }
                }
                if !c.0.is_empty() {
                    return Err(Cursor::bad());
                }
                let [keys, argv] = lists;
                Ok(Payload::Script(ScriptRecord {
                    now_ms,
                    max_instructions,
                    first_slot,
                    last_slot,
                    user,
                    function,
                    body,
                    keys,
                    argv,
                }))
            }
            _ => Err(Cursor::bad()),
        }
    }
}

impl Payload {
    /// The keys the payload may change, for a guarded write's check.
    pub fn touches(&self) -> Touches {
        let mut keys = Vec::new();
        let ops: Vec<&Op> = match self {
            // A script may change any key of its slots.
            Payload::Script(_) => return Touches::All,
            Payload::One(op) => vec![op],
            Payload::Exec(steps) => steps
                .iter()
                .filter_map(|s| match s {
                    ExecStep::Op(op) => Some(op),
                    _ => None,
                })
                .collect(),
        };
        for op in ops {
            let db = op.db;
            let mut key = |k: &[u8]| keys.push(key_hash(db, k));
            match &op.kind {
                OpKind::Set(set) => key(&set.key),
                OpKind::SetNx { key: k, .. }
                | OpKind::GetDel { key: k }
                | OpKind::GetEx { key: k, .. }
                | OpKind::Append { key: k, .. }
                | OpKind::SetRange { key: k, .. }
                | OpKind::IncrBy { key: k, .. }
                | OpKind::IncrByFloat { key: k, .. }
                | OpKind::Expire { key: k, .. }
                | OpKind::Persist { key: k } => key(k),
                OpKind::Hash(h) => key(h.key()),
                OpKind::Sets(o) => o.keys().into_iter().for_each(|k| key(k)),
                OpKind::ZSet(z) => z.keys().into_iter().for_each(|k| key(k)),
                OpKind::List(l) => l.keys().into_iter().for_each(|k| key(k)),
                OpKind::Hll(h) => h.keys().into_iter().for_each(|k| key(k)),
                OpKind::Stream(x) => x.keys().into_iter().for_each(|k| key(k)),
                OpKind::SwapDb { .. } => {}
                OpKind::Sort(st) => key(&st.dst),
                OpKind::Restore(r) => key(&r.key),
                OpKind::MSet { pairs } | OpKind::MSetNx { pairs } => {
                    pairs.iter().for_each(|(k, _)| key(k))
                }
                OpKind::Del { keys: ks } => ks.iter().for_each(|k| key(k)),
                OpKind::Rename { src, dst, .. } | OpKind::Copy { src, dst, .. } => {
                    key(src);
                    key(dst);
                }
                OpKind::Move { key: k, .. }
                | OpKind::SetBit { key: k, .. }
                | OpKind::BitField { key: k, .. } => key(k),
                OpKind::BitOp { dst, keys: ks, .. } => {
                    key(dst);
                    ks.iter().for_each(|k| key(k));
                }
                OpKind::ExpireDue { entries } => {
                    for (db, _, k) in entries {
                        keys.push(key_hash(*db, k));
                    }
                }
                // Functions change no key.
                OpKind::Library(_) | OpKind::PartitionLibrary { .. } => {}
                // A swap or a rollback replaces what every key under the prefix reads.
                OpKind::FlushStep { .. }
                | OpKind::FlushSlots { .. }
                | OpKind::Store(_)
                | OpKind::PartitionStore { .. } => return Touches::All,
            }
        }
        Touches::Keys(keys)
    }
}

/// A running cluster node and what the server needs to route commands.
pub struct Cluster {
    pub node: Node<Machine>,
    /// The pushes this node coordinates.
    pub pushes: crate::cluster_stores::Pushes,
    /// Partition `p` is served at `base_port + p`.
    pub base_port: u16,
    pub partitions: u32,
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
            linger: c.linger,
        };
        Ok(Cluster {
            node: Node::start(Arc::clone(&keyspace), Machine::new(cfg, &keyspace)?, opts)?,
            pushes: Default::default(),
            base_port: cfg.port,
            partitions: c.partitions,
        })
    }

    /// Produces `payload` to partition `p` (see [`Node::submit`]).
    pub fn submit(&self, p: u32, payload: &Payload) -> Result<Submitted<Machine>, WriteError> {
        self.node.submit(p, &payload.encode(), payload.touches())
    }

    /// What a write sent to the log came to, waiting at most `cluster-write-timeout`.
    pub async fn outcome(
        &self,
        s: Submitted<Machine>,
    ) -> Result<(<Machine as StateMachine>::Output, u64), WriteError> {
        let timeout = self.node.options().write_timeout;
        tokio::time::timeout(timeout, s)
            .await
            .unwrap_or(Err(WriteError::TimedOut))
    }

    /// Produces `payload` to partition `p` unless a key `watch` names may have changed since
    /// it was watched: the EXEC of a transaction that WATCHed (see [`Node::submit_guarded`]).
    pub fn submit_watched(
        &self,
        p: u32,
        payload: &Payload,
        keyspace: &Keyspace,
        watch: &rialto_keyspace::Watch,
        now_ms: i64,
    ) -> Result<Result<Submitted<Machine>, Unsent>, WriteError> {
        let watched: Vec<u64> = watch
            .keys()
            .iter()
            .map(|(db, k)| key_hash(*db, k))
            .collect();
        self.node
            .submit_guarded(p, &payload.encode(), payload.touches(), &watched, || {
                keyspace.watch_intact(watch, now_ms)
            })
    }

    /// The partition a connection accepted on `port` serves.
    pub fn partition_of_port(&self, port: u16) -> u32 {
        u32::from(port.saturating_sub(self.base_port)).min(self.partitions - 1)
    }

    /// The redirection to partition `p`'s master for `slot`: MOVED when another node is
    /// master, TRYAGAIN while this one is taking over or handing over, CLUSTERDOWN when no
    /// master is known.
    pub fn redirect(&self, slot: u16, p: u32) -> Reply {
        match self.route_away(slot, p) {
            Route::Refused(r) => r,
            _ => tryagain(),
        }
    }

    /// [`Cluster::redirect`] as a route: [`Route::Changing`] while this node hands the
    /// partition over (the log still names it, and it no longer writes under that claim).
    fn route_away(&self, slot: u16, p: u32) -> Route {
        match self.node.master(p) {
            Some(m) if m.incarnation == self.node.incarnation() && !self.node.is_master(p) => {
                Route::Changing
            }
            Some(m) => Route::Refused(crate::reply::err_string(format!(
                "MOVED {slot} {}:{}",
                m.host, m.port
            ))),
            None => Route::Refused(Reply::error("CLUSTERDOWN Hash slot not served")),
        }
    }
}

/// The reply to a command whose slot's master is changing (for one held while it changes,
/// once `cluster-handover-wait-ms` has passed).
pub(crate) fn tryagain() -> Reply {
    Reply::error("TRYAGAIN The slot's master is changing; try again")
}

/// Where a command runs in cluster mode.
pub enum Route {
    /// Here (keyless, or its keys are served by this address in its role).
    Here(Option<(u16, u32)>),
    /// Answered with this instead (a redirection or a refusal).
    Refused(Reply),
    /// The slot's master is changing at this node (it is handing the partition over or has
    /// not applied its own claim yet): asked again shortly, it redirects or serves.
    Changing,
}

/// Decides where `args` runs for `client` connected to partition `mine`; `max_lag` is
/// `replica-max-lag-ms`, asked for a replica read only.
pub fn route(
    c: &Cluster,
    client: &Client,
    mine: u32,
    a: &Admitted,
    args: &[Bytes],
    max_lag: impl FnOnce() -> Duration,
) -> Route {
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
        return c.route_away(slot, p);
    }
    // A command run as an op (a one-key PFCOUNT, flagged `readonly` as in Redis) goes through
    // the partition's log, which only its master writes.
    let write = spec.has_flag("write") || matches!(a.handler, Handler::Write(_));
    if c.node.is_master(p) {
        // A read waits until the new master has applied its claim, past every write its
        // predecessors acknowledged (a write's reply comes from the applier in order anyway).
        if !write && !c.node.serves_as_master(p) {
            return Route::Changing;
        }
        return Route::Here(Some((slot, p)));
    }
    if !write && client.readonly && c.node.caught_up_within(p, max_lag()) {
        return Route::Here(Some((slot, p)));
    }
    c.route_away(slot, p)
}

/// Commands cluster mode refuses: writes that do not go through the log (stores and
/// pushes), and databases other than 0, as Redis Cluster refuses them.
fn unavailable(spec: &CommandSpec, handler: Handler, args: &[Bytes]) -> Option<Reply> {
    let name = spec.name;
    let refused = match name {
        // Through the cluster's store catalog (`cluster_stores`).
        "store|create" | "store|config" | "store|delete" | "store|rollback" | "push|begin"
        | "push|add" | "push|commit" | "push|abort" => false,
        "select" => args.get(1).is_some_and(|db| &db[..] != b"0"),
        "move" | "swapdb" => true,
        // COPY ... DB n names another database.
        "copy" => args
            .windows(2)
            .skip(3)
            .any(|w| w[0].eq_ignore_ascii_case(b"db") && &w[1][..] != b"0"),
        // Through the log, a partition's slots at a time (`flush_partition`).
        "flushdb" | "flushall" => false,
        // Records of the address's partition (`commands::function`).
        "function|load" | "function|delete" | "function|flush" | "function|restore" => false,
        // BY and GET patterns may name keys of other slots, as Redis Cluster refuses them.
        "sort" | "sort_ro" => {
            let refuse = crate::commands::sort::Refuse {
                cluster: true,
                key_access: false,
            };
            return crate::commands::sort::refusal(args, name == "sort_ro", refuse);
        }
        _ => spec.has_flag("write") && !matches!(handler, Handler::Write(_) | Handler::Block(_)),
    };
    if !refused {
        return None;
    }
    if name == "select" {
        return Some(Reply::error("ERR SELECT is not allowed in cluster mode"));
    }
    if name == "move" {
        return Some(Reply::error("ERR MOVE is not allowed in cluster mode"));
    }
    if name == "swapdb" {
        return Some(Reply::error("ERR SWAPDB is not allowed in cluster mode"));
    }
    if name == "copy" {
        return Some(Reply::error(
            "ERR Copying to another database is not allowed in cluster mode",
        ));
    }
    Some(crate::reply::err_string(format!(
        "ERR '{}' is not available in cluster mode",
        name.replace('|', " ")
    )))
}

/// FLUSHDB and FLUSHALL on partition `p`'s address: the partition's slots are flushed in
/// steps, each a record of the log (every replica deletes the same keys at the same offset);
/// as on one node, each step is atomic and the whole is not.
pub async fn flush_partition(c: Arc<Cluster>, p: u32, now_ms: i64) -> Reply {
    if !c.node.is_master(p) {
        return Reply::error("READONLY You can't write against a read only replica.");
    }
    let (first, last) = slot::slot_range(p, c.partitions);
    let mut from = Bytes::new();
    loop {
        let op = Op::new(
            0,
            now_ms,
            OpKind::FlushSlots {
                first,
                last,
                from,
                limit: rialto_keyspace::FLUSH_STEP_KEYS,
            },
        );
        let submitted = match c.submit(p, &Payload::One(op)) {
            Ok(s) => s,
            Err(e) => return write_error(&c, &e, None),
        };
        match c.outcome(submitted).await {
            Ok(((Applied::One(Ok(Value::Bulk(next))), _), _)) => from = next,
            Ok(((Applied::One(Ok(_)), _), _)) => return crate::reply::ok(),
            Ok(((Applied::One(Err(e)), _), _)) => return crate::reply::keyspace_error(&e),
            Ok(((Applied::Many(_) | Applied::Reply(_), _), _)) => {
                return Reply::error("ERR unexpected reply to a flush step")
            }
            Err(e) => return write_error(&c, &e, None),
        }
    }
}

/// A transaction's FLUSHDB or FLUSHALL, run as the flush of partition `p`'s slots in one step.
pub fn partition_flush_op(op: Op, p: u32, partitions: u32) -> Op {
    match op.kind {
        OpKind::FlushStep { .. } => {
            let (first, last) = slot::slot_range(p, partitions);
            Op::new(
                0,
                op.now_ms,
                OpKind::FlushSlots {
                    first,
                    last,
                    from: Bytes::new(),
                    limit: u64::MAX,
                },
            )
        }
        _ => op,
    }
}

/// Whether a cluster log's script may call `spec` (`Some`: the refusal): what the cluster
/// does not run through the log is refused there too; a flush covers the partition.
pub(crate) fn unavailable_in_script(spec: &CommandSpec, args: &[Bytes]) -> Option<Reply> {
    if matches!(spec.name, "select" | "flushdb" | "flushall") {
        return None;
    }
    unavailable(spec, spec.handler?, args)
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

impl Cluster {
    /// Whether the address reached on `port` is its partition's master now.
    pub fn serves_as_master(&self, port: u16) -> bool {
        self.node.is_master(self.partition_of_port(port))
    }

    /// INFO's replication section for the address reached on `port`, as Redis writes it for
    /// a master or a replica.
    pub fn replication_info(&self, port: u16, max_lag: Duration) -> String {
        let p = self.partition_of_port(port);
        let addrs = self.layout(max_lag).swap_remove(p as usize);
        let applied = addrs.iter().find(|a| a.local).map_or(0, |a| a.offset);
        let mut o = String::from("# Replication\r\n");
        if self.node.is_master(p) {
            let replicas: Vec<&Address> = addrs.iter().filter(|a| !a.master).collect();
            o.push_str(&format!(
                "role:master\r\nconnected_slaves:{}\r\n",
                replicas.len()
            ));
            for (i, r) in replicas.iter().enumerate() {
                let state = if r.lagging { "wait_bgsave" } else { "online" };
                o.push_str(&format!(
                    "slave{i}:ip={},port={},state={state},offset={},lag={}\r\n",
                    r.host,
                    r.port,
                    r.offset,
                    u8::from(r.lagging)
                ));
            }
        } else {
            let (host, mport) = addrs
                .iter()
                .find(|a| a.master)
                .map_or((String::from("?"), 0), |m| (m.host.clone(), m.port));
            let link = if self.node.caught_up_within(p, max_lag) {
                "up"
            } else {
                "down"
            };
            o.push_str(&format!(
                "role:slave\r\nmaster_host:{host}\r\nmaster_port:{mport}\r\nmaster_link_status:{link}\r\n\
                 master_last_io_seconds_ago:0\r\nmaster_sync_in_progress:0\r\n\
                 slave_read_repl_offset:{applied}\r\nslave_repl_offset:{applied}\r\n\
                 slave_priority:100\r\nslave_read_only:1\r\nreplica_announced:1\r\nconnected_slaves:0\r\n"
            ));
        }
        o.push_str(&format!("master_repl_offset:{applied}\r\n"));
        o
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
    /// The offset of the next record it applies in its partition, as it last reported.
    pub offset: u64,
    /// A replica that has not caught up within `replica-max-lag-ms` (or whose reports
    /// stopped): left out of the slot map until it catches up.
    pub lagging: bool,
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
    /// members of the group, in node order, each with its progress as this node knows it (its
    /// own, or the last a peer reported) and whether it lags past `max_lag`.
    pub fn layout(&self, max_lag: Duration) -> Vec<Vec<Address>> {
        let v = self.node.view();
        let me = self.node.options().node_id;
        let now = rialto_cluster::node::status::now_ms();
        let progress = |node: u32, p: u32| -> (u64, bool) {
            if node == me {
                let applied = v.applied.get(p as usize).copied().unwrap_or(0);
                return (applied, !self.node.caught_up_within(p, max_lag));
            }
            match v.peers.get(&node) {
                Some(st) => (
                    st.applied.get(p as usize).copied().unwrap_or(0),
                    !st.caught_up_within(p, max_lag, now),
                ),
                // Not reported yet (it joined a moment ago): listed until its first report.
                None => (0, false),
            }
        };
        (0..self.partitions)
            .map(|p| {
                let master = v.masters.get(p as usize).cloned().flatten();
                let mut out = Vec::new();
                if let Some(m) = &master {
                    let (offset, lagging) = progress(m.node, p);
                    out.push(Address {
                        node: m.node,
                        partition: p,
                        host: m.host.clone(),
                        port: m.port,
                        master: true,
                        local: m.node == me,
                        offset,
                        lagging,
                    });
                }
                for mem in &v.members {
                    if master.as_ref().is_some_and(|m| m.node == mem.node) {
                        continue;
                    }
                    let (offset, lagging) = progress(mem.node, p);
                    out.push(Address {
                        node: mem.node,
                        partition: p,
                        host: mem.host.clone(),
                        port: mem.base_port.saturating_add(p as u16),
                        master: false,
                        local: mem.node == me,
                        offset,
                        lagging,
                    });
                }
                out
            })
            .collect()
    }

    /// ROLE for the address reached on `port`: a master with its replicas' offsets, or a
    /// replica with its master and its own offset.
    pub fn role(&self, port: u16, max_lag: Duration) -> Reply {
        let p = self.partition_of_port(port);
        let addrs = self.layout(max_lag).swap_remove(p as usize);
        let applied = addrs.iter().find(|a| a.local).map_or(0, |a| a.offset);
        if self.node.is_master(p) {
            let replicas = addrs
                .iter()
                .filter(|a| !a.master)
                .map(|a| {
                    Reply::Array(vec![
                        Reply::bulk(&a.host),
                        Reply::bulk(a.port.to_string()),
                        Reply::bulk(a.offset.to_string()),
                    ])
                })
                .collect();
            return Reply::Array(vec![
                Reply::bulk("master"),
                Reply::Integer(applied as i64),
                Reply::Array(replicas),
            ]);
        }
        let (host, mport) = addrs
            .iter()
            .find(|a| a.master)
            .map_or((String::from("?"), 0), |m| (m.host.clone(), m.port));
        let state = if self.node.caught_up_within(p, max_lag) {
            "connected"
        } else {
            "sync"
        };
        Reply::Array(vec![
            Reply::bulk("slave"),
            Reply::bulk(host),
            Reply::Integer(i64::from(mport)),
            Reply::bulk(state),
            Reply::Integer(applied as i64),
        ])
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

    /// The partition whose store versions a walk reads keys from (0 on a single node).
    pub fn partition(&self) -> u32 {
        self.0.map_or(0, |(p, _)| p)
    }

    pub fn covers(&self, key: &[u8]) -> bool {
        match self.0 {
            None => true,
            Some((p, n)) => slot::partition_of(slot::key_slot(key), n) == p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rialto_keyspace::OpKind;

    #[test]
    fn a_payload_touches_the_keys_its_ops_may_change_and_a_flush_touches_all() {
        let k = |s: &'static str| Bytes::from_static(s.as_bytes());
        let rename = Op::new(
            0,
            0,
            OpKind::Rename {
                src: k("a"),
                dst: k("b"),
                nx: false,
            },
        );
        let flush = Op::new(
            0,
            0,
            OpKind::FlushSlots {
                first: 0,
                last: 1,
                from: Bytes::new(),
                limit: 1,
            },
        );
        assert_eq!(
            Payload::One(rename.clone()).touches(),
            Touches::Keys(vec![key_hash(0, b"a"), key_hash(0, b"b")])
        );
        let exec = Payload::Exec(vec![
            ExecStep::Read(0, vec![k("GET"), k("c")]),
            ExecStep::Op(rename),
        ]);
        assert_eq!(
            exec.touches(),
            Touches::Keys(vec![key_hash(0, b"a"), key_hash(0, b"b")]),
            "reads change nothing"
        );
        assert_eq!(Payload::One(flush).touches(), Touches::All);
        assert_ne!(key_hash(0, b"a"), key_hash(1, b"a"));
    }

    #[test]
    fn sort_runs_in_cluster_mode_without_patterns_that_name_keys() {
        let args = |line: &str| -> Vec<Bytes> {
            line.split(' ')
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect()
        };
        let check = |line: &str| {
            let a = args(line);
            let (_, spec) = crate::command_table::resolve(&a).expect("resolves");
            let handler = spec.handler_for(&a).expect("handler");
            unavailable(spec, handler, &a).map(|r| {
                let mut buf = bytes::BytesMut::new();
                r.encode(rialto_resp::Protocol::Resp2, &mut buf);
                String::from_utf8_lossy(&buf).into_owned()
            })
        };
        // The read form of a command flagged write is not refused for it.
        assert_eq!(check("SORT k LIMIT 0 1 DESC ALPHA"), None);
        assert_eq!(check("SORT k BY nosort STORE d"), None);
        assert_eq!(check("SORT_RO k BY nosort"), None);
        let by = "-ERR BY option of SORT denied in Cluster mode.\r\n";
        let get = "-ERR GET option of SORT denied in Cluster mode.\r\n";
        assert_eq!(check("SORT k BY w_*").as_deref(), Some(by));
        assert_eq!(check("SORT_RO k BY {k}w_*").as_deref(), Some(by));
        assert_eq!(check("SORT k GET #").as_deref(), Some(get));
        assert_eq!(
            check("SORT k BY nosort GET # STORE d").as_deref(),
            Some(get)
        );
        // An earlier syntax error is the command's own reply.
        assert_eq!(check("SORT k NOSUCH GET #"), None);
    }

    #[test]
    fn a_script_record_carries_permissions_a_replica_rebuilds_exactly() {
        let mut acl = crate::acl::Acl::new(crate::command_table::all(), None);
        let rules: Vec<&[u8]> = vec![
            b"on",
            b">secret",
            b"~app:*",
            b"+get",
            b"+set",
            b"-@dangerous",
            b"(~other:* +incr)",
        ];
        acl.set_user(b"bob", &rules).unwrap();
        let bob = acl.user(b"bob").unwrap();
        let mut line = b"bob ".to_vec();
        line.extend_from_slice(&bob.describe_permissions());
        assert!(
            !String::from_utf8_lossy(&line).contains('#'),
            "no password hash"
        );
        let m = Machine {
            scripts: Arc::new(Scripts::new_replicated(0).unwrap()),
            libraries: Vec::new(),
            memory_limit: 0,
            users: Mutex::new(HashMap::new()),
            partitions: 3,
        };
        let rebuilt = m.user(&Bytes::from(line)).unwrap();
        assert_eq!(rebuilt.describe_permissions(), bob.describe_permissions());
        let k = |s: &'static str| Bytes::from_static(s.as_bytes());
        assert!(rebuilt.check("get", &[k("GET"), k("app:1")]).is_ok());
        assert!(rebuilt.check("get", &[k("GET"), k("secret:1")]).is_err());
        assert!(rebuilt.check("incr", &[k("INCR"), k("other:1")]).is_ok());
        assert!(m.user(&k("bob (unclosed")).is_err());
    }

    #[test]
    fn payloads_round_trip_and_damage_is_refused() {
        let op = Op::new(
            0,
            1_700_000_000_000,
            OpKind::IncrBy {
                key: Bytes::from_static(b"k"),
                delta: 2,
            },
        );
        let exec = Payload::Exec(vec![
            ExecStep::Op(op.clone()),
            ExecStep::Read(
                0,
                vec![Bytes::from_static(b"GET"), Bytes::from_static(b"k")],
            ),
            ExecStep::Elsewhere,
        ]);
        let script = Payload::Script(ScriptRecord {
            now_ms: -5,
            max_instructions: 1 << 40,
            first_slot: 5461,
            last_slot: 10921,
            user: Some(Bytes::from_static(b"bob on ~* +@all")),
            function: None,
            body: Bytes::from_static(b"return redis.call('INCR', KEYS[1])"),
            keys: vec![Bytes::from_static(b"k")],
            argv: vec![Bytes::new(), Bytes::from_static(b"x")],
        });
        for p in [Payload::One(op), exec, script] {
            let b = p.encode();
            assert_eq!(
                Payload::decode(&b).map(|d| d.encode()).ok(),
                Some(b.clone())
            );
            for n in 0..b.len() {
                assert!(Payload::decode(&b[..n]).is_err(), "prefix of {n}");
            }
            let mut long = b.clone();
            long.push(0);
            assert!(Payload::decode(&long).is_err());
        }
    }
}
