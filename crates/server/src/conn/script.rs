//! A connection's scripts: EVAL and its forms run the script inside one merger transaction
//! (atomic, durable as one group, queued like a write so it shares groups and syncs), and the
//! script's `redis.call`s run there through [`TxHost`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use rialto_keyspace::Transaction;
use rialto_resp::Reply;
use rialto_scripting::{Host, Scripts, Source};

use super::{executed, Connection, Pending};
use crate::acl::log::{Context, Event};
use crate::acl::User;
use crate::command_table::{self, CommandSpec};
use crate::commands::{self, At, Handler, ScriptCmd, StatsAt, R};
use crate::reply;

/// What a script command names.
enum Named {
    /// EVAL: the body.
    Body,
    /// EVALSHA: a cached script's SHA1.
    Sha,
    /// FCALL: a library's function.
    Function,
}

/// A script to run: its source, keys and arguments, and what it may do.
pub(super) struct ScriptRun {
    /// The body, the SHA1 or the function's name, as `named` says.
    code: Bytes,
    named: Named,
    keys: Vec<Bytes>,
    argv: Vec<Bytes>,
    /// EVAL_RO, EVALSHA_RO: writes are refused.
    read_only: bool,
    /// The whole command (FUNCTION STATS shows it while the script runs).
    command: Vec<Bytes>,
}

impl ScriptRun {
    /// Parses `EVAL script numkeys key... arg...` (and its forms), as Redis checks it.
    pub(super) fn parse(cmd: ScriptCmd, args: &[Bytes]) -> Result<ScriptRun, Reply> {
        // Redis answers an EVALSHA whose SHA1 cannot be one before it reads anything else.
        if matches!(cmd, ScriptCmd::EvalSha | ScriptCmd::EvalShaRo) && args[1].len() != 40 {
            return Err(Reply::error(
                "NOSCRIPT No matching script. Please use EVAL.",
            ));
        }
        let function = matches!(cmd, ScriptCmd::FCall | ScriptCmd::FCallRo);
        let n = reply::parse_i64(&args[2]).ok_or_else(|| {
            // Redis words FCALL's numkeys error its own way.
            Reply::error(if function {
                "ERR Bad number of keys provided"
            } else {
                "ERR value is not an integer or out of range"
            })
        })?;
        if n < 0 {
            return Err(Reply::error("ERR Number of keys can't be negative"));
        }
        let rest = &args[3..];
        if n as u64 > rest.len() as u64 {
            return Err(Reply::error(
                "ERR Number of keys can't be greater than number of args",
            ));
        }
        let (keys, argv) = rest.split_at(n as usize);
        Ok(ScriptRun {
            code: args[1].clone(),
            named: match cmd {
                ScriptCmd::Eval | ScriptCmd::EvalRo => Named::Body,
                ScriptCmd::EvalSha | ScriptCmd::EvalShaRo => Named::Sha,
                ScriptCmd::FCall | ScriptCmd::FCallRo => Named::Function,
            },
            keys: keys.to_vec(),
            argv: argv.to_vec(),
            read_only: matches!(
                cmd,
                ScriptCmd::EvalRo | ScriptCmd::EvalShaRo | ScriptCmd::FCallRo
            ),
            command: args.to_vec(),
        })
    }

    /// Runs the script in `tx`, its commands in database `db` (a SELECT inside moves that).
    /// Returns its reply, and whether that is an error reply one of its calls answered,
    /// which the call's statistics counted already (see [`Host::error_already_counted`]).
    pub(super) fn run(
        self,
        tx: &mut Transaction<'_, '_>,
        ctx: &ScriptCtx,
        db: u8,
    ) -> (Reply, bool) {
        let mut host = TxHost::new(tx, ctx, db, self.read_only);
        host.command = &self.command;
        let reply = match self.named {
            Named::Body => {
                ctx.scripts
                    .run(Source::Body(&self.code), &self.keys, &self.argv, &mut host)
            }
            Named::Sha => {
                ctx.scripts
                    .run(Source::Sha(&self.code), &self.keys, &self.argv, &mut host)
            }
            Named::Function => ctx.scripts.fcall(
                &self.code,
                &self.keys,
                &self.argv,
                self.read_only,
                &mut host,
            ),
        };
        (reply, host.error_counted)
    }
}

/// What a script's commands need from the connection that runs it.
pub(crate) struct ScriptCtx {
    pub(super) scripts: Arc<Scripts>,
    user: Option<Arc<User>>,
    unrestricted: bool,
    db: u8,
    databases: usize,
    /// `hll-sparse-max-bytes` when the script started (the default for a cluster log's
    /// scripts: replicas must run them alike).
    hll_sparse_max: u64,
    stream_node: rialto_keyspace::NodeLimits,
    /// A script of a cluster's log: where its keys may be and the record's time.
    replicated: Option<Replicated>,
    /// Where its commands are shown (MONITOR); none for a cluster log's scripts.
    monitors: Option<Arc<crate::monitor::Monitors>>,
    /// The server and client of the connection that runs the script: where a call the ACL
    /// refuses is logged (ACL LOG) and every call is counted (INFO commandstats); none for a
    /// cluster log's scripts, which every replica runs.
    refusals: Option<(Arc<crate::server::Shared>, Arc<crate::client::ClientHandle>)>,
    /// Used memory exceeded `maxmemory` when the script started (never for a cluster log's
    /// scripts: replicas must run them alike).
    oom: bool,
    /// `min-replicas-to-write` asked for replicas this node lacks when the script started
    /// (never in cluster mode, which refuses that setting).
    no_replicas: bool,
    /// Commands flagged `noscript` may be called (DEBUG SET-DISABLE-DENY-SCRIPTS; never for
    /// a cluster log's scripts).
    allow_noscript: bool,
}

/// A cluster log's script: it may touch the keys of its partition's slots only, and sees the
/// record's time, so that every replica runs it alike.
#[derive(Clone, Copy)]
pub(crate) struct Replicated {
    pub(crate) first_slot: u16,
    pub(crate) last_slot: u16,
    pub(crate) partitions: u32,
    pub(crate) now_ms: i64,
}

impl ScriptCtx {
    /// The context of a script a cluster's log applies, run as `user` (`None`: unrestricted).
    pub(crate) fn replicated(
        scripts: Arc<Scripts>,
        user: Option<Arc<User>>,
        at: Replicated,
    ) -> ScriptCtx {
        ScriptCtx {
            scripts,
            unrestricted: user.is_none(),
            user,
            db: 0,
            databases: 1,
            hll_sparse_max: rialto_keyspace::hll::DEFAULT_SPARSE_MAX_BYTES as u64,
            stream_node: rialto_keyspace::NodeLimits::default(),
            replicated: Some(at),
            monitors: None,
            refusals: None,
            oom: false,
            no_replicas: false,
            allow_noscript: false,
        }
    }
}

/// Runs function `name` of a cluster partition's libraries `libs` in `tx` (see
/// [`ScriptCtx::replicated`]); `read_only`: FCALL_RO, run where it is received.
pub(crate) fn run_replicated_function(
    tx: &mut Transaction<'_, '_>,
    ctx: &ScriptCtx,
    libs: &Scripts,
    name: &[u8],
    (keys, argv): (&[Bytes], &[Bytes]),
    max_instructions: u64,
    read_only: bool,
) -> Reply {
    let mut host = TxHost::new(tx, ctx, 0, read_only);
    libs.fcall_replicated(name, keys, argv, read_only, &mut host, max_instructions)
}

/// Runs a cluster log's script `body` in `tx` (see [`ScriptCtx::replicated`]).
pub(crate) fn run_replicated(
    tx: &mut Transaction<'_, '_>,
    ctx: &ScriptCtx,
    body: &[u8],
    keys: &[Bytes],
    argv: &[Bytes],
    max_instructions: u64,
) -> Reply {
    let mut host = TxHost::new(tx, ctx, 0, false);
    ctx.scripts
        .run_replicated(body, keys, argv, &mut host, max_instructions)
}

/// A script's view of the server: its commands, executed inside its transaction.
struct TxHost<'t, 'a, 'c> {
    tx: &'t mut Transaction<'a, 'c>,
    ctx: &'t ScriptCtx,
    db: u8,
    read_only: bool,
    /// The script declared `allow-oom` (or `no-writes`).
    allow_oom: bool,
    /// The script called a write command.
    wrote: bool,
    /// Seeded writes (SPOP) the script made so far.
    seeded: u64,
    /// The command that runs the script.
    command: &'t [Bytes],
    /// Where the transaction stood before the script.
    start: rialto_txn::Savepoint,
    /// The script's reply is an error one of its calls answered and counted.
    error_counted: bool,
}

impl<'t, 'a, 'c> TxHost<'t, 'a, 'c> {
    fn new(tx: &'t mut Transaction<'a, 'c>, ctx: &'t ScriptCtx, db: u8, read_only: bool) -> Self {
        let start = tx.savepoint();
        TxHost {
            tx,
            ctx,
            db,
            read_only,
            allow_oom: false,
            wrote: false,
            seeded: 0,
            command: &[],
            start,
            error_counted: false,
        }
    }
}

fn err(text: &'static str) -> (Reply, bool) {
    (Reply::error(text), false)
}

impl TxHost<'_, '_, '_> {
    /// The command `args` names, checked as Redis checks a script's call.
    fn resolve(&self, args: &[Bytes]) -> Result<&'static CommandSpec, (Reply, bool)> {
        let unknown = || err("ERR Unknown Redis command called from script");
        let base = command_table::lookup(&args[0]).ok_or_else(unknown)?;
        let spec = match args.get(1) {
            Some(sub) if !base.subcommands.is_empty() => {
                command_table::lookup_sub(base, sub).ok_or_else(unknown)?
            }
            _ => base,
        };
        if !command_table::check_arity(spec, args.len()) {
            return Err(err(
                "ERR Wrong number of args calling Redis command from script",
            ));
        }
        if (spec.has_flag("noscript") || base.has_flag("noscript")) && !self.ctx.allow_noscript {
            return Err(err("ERR This Redis command is not allowed from script"));
        }
        // Redis counts its hidden `may_replicate` commands (PFCOUNT) as writes here.
        if self.read_only && (spec.has_flag("write") || spec.may_replicate) {
            return Err(err(
                "ERR Write commands are not allowed from read-only scripts.",
            ));
        }
        if let Some(user) = self.ctx.user.as_ref().filter(|_| !self.ctx.unrestricted) {
            if let Err(denied) = user.check(spec.name, args) {
                if let Some((shared, client)) = &self.ctx.refusals {
                    let event = Event::denied(&denied, Context::Lua, user.name());
                    crate::auth::log_refusal(shared, client, event);
                }
                return Err(err(
                    "ERR The user executing the script can't run this command or subcommand",
                ));
            }
            if let Some(r) = commands::sort::acl_refusal(user, spec, args) {
                return Err((r, false));
            }
        }
        // Redis's rule for a script without declared flags (one that declares writes was
        // refused before it ran): until it wrote, a write command it calls is refused.
        if self.ctx.no_replicas && !self.wrote && spec.has_flag("write") {
            return Err(err("NOREPLICAS Not enough good replicas to write."));
        }
        // Redis's rule: over maxmemory when the script started, a script that has not written
        // yet may not call a command that may grow the data (once it wrote, it must finish).
        if self.ctx.oom && !self.allow_oom && !self.wrote && spec.has_flag("denyoom") {
            return Err(err(
                "OOM command not allowed when used memory > 'maxmemory'.",
            ));
        }
        Ok(spec)
    }

    /// The few connection commands a script may call: they change nothing but the script's
    /// own database, or answer from nothing.
    fn connection_command(&mut self, spec: &CommandSpec, args: &[Bytes]) -> (Reply, bool) {
        match spec.name {
            "select" if self.ctx.replicated.is_some() && &args[1][..] != b"0" => {
                err("ERR SELECT is not allowed in cluster mode")
            }
            "select" => match commands::select::target(args, self.ctx.databases) {
                Some(db) => {
                    self.db = db;
                    (reply::ok(), false)
                }
                None if reply::parse_i64(&args[1]).is_some() => err("ERR DB index is out of range"),
                None => err("ERR value is not an integer or out of range"),
            },
            "ping" => match args.get(1) {
                Some(m) => (Reply::Bulk(m.clone()), false),
                None => (Reply::simple("PONG"), false),
            },
            "echo" => (Reply::Bulk(args[1].clone()), false),
            "pfselftest" => (
                commands::pfdebug::self_test_reply(
                    usize::try_from(self.ctx.hll_sparse_max).unwrap_or(usize::MAX),
                ),
                false,
            ),
            // Reachable once DEBUG SET-DISABLE-DENY-SCRIPTS allows it: the values a script's
            // reply conversions are tested with (RESP3 types, converted as the script's
            // `redis.setresp` asks).
            // The script (and the server's writes behind it) waits, as Redis does; its time
            // stands still meanwhile.
            "debug" if args.len() == 3 && args[1].eq_ignore_ascii_case(b"sleep") => {
                std::thread::sleep(commands::debug::sleep_time(&args[2]));
                (reply::ok(), false)
            }
            "debug" if args.len() == 3 && args[1].eq_ignore_ascii_case(b"protocol") => {
                match commands::debug::protocol(rialto_resp::Protocol::Resp3, &args[2]) {
                    commands::Outcome::Reply(r) => (r, false),
                    // A push goes out of band: the script gets the reply after it.
                    commands::Outcome::Many(mut rs) => (rs.pop().unwrap_or(Reply::Null), false),
                    _ => err("ERR This command cannot be called from a script on Rialto"),
                }
            }
            "time" => {
                let now = match self.ctx.replicated {
                    // The record's time: every replica answers alike.
                    Some(r) => std::time::Duration::from_millis(r.now_ms.max(0) as u64),
                    None => std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default(),
                };
                (
                    Reply::Array(vec![
                        Reply::bulk(now.as_secs().to_string()),
                        Reply::bulk(now.subsec_micros().to_string()),
                    ]),
                    false,
                )
            }
            _ => err("ERR This command cannot be called from a script on Rialto"),
        }
    }
}

impl TxHost<'_, '_, '_> {
    /// A cluster log's script: the call's keys must share a slot of its partition, as Redis
    /// Cluster requires of a script's keys, and what the cluster cannot run is refused.
    fn check_replicated(&self, spec: &CommandSpec, args: &[Bytes]) -> Result<(), (Reply, bool)> {
        let Some(r) = self.ctx.replicated else {
            return Ok(());
        };
        if let Some(refused) = crate::cluster::unavailable_in_script(spec, args) {
            return Err((refused, false));
        }
        let mut slot = None;
        for k in command_table::keys_with_flags(spec, args) {
            let Some(key) = args.get(k.pos) else { continue };
            let s = rialto_cluster::slot::key_slot(key);
            if slot.is_some_and(|first| first != s) {
                return Err(err(
                    "ERR Script attempted to access keys that do not hash to the same slot",
                ));
            }
            slot = Some(s);
            if !(r.first_slot..=r.last_slot).contains(&s) {
                return Err(err(
                    "ERR Script attempted to access a non local key in a cluster node script",
                ));
            }
        }
        Ok(())
    }

    /// A cluster log's script runs again on every replica: a write that carries a seed (SPOP)
    /// takes one derived from what they all share (the record's time, the key, how many such
    /// writes came before), so that each pops the same members. FNV-1a: fixed across builds.
    fn replayable_seed(&mut self, mut op: rialto_keyspace::Op) -> rialto_keyspace::Op {
        use rialto_keyspace::{OpKind, SetOp};
        if self.ctx.replicated.is_none() {
            return op;
        }
        if let OpKind::Sets(SetOp::Pop { key, seed, .. }) = &mut op.kind {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            let parts = [
                &op.now_ms.to_le_bytes()[..],
                &self.seeded.to_le_bytes(),
                key,
            ];
            for b in parts.iter().flat_map(|p| p.iter()) {
                h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
            }
            *seed = h;
            self.seeded += 1;
        }
        op
    }

    /// An op the script's call made, as the cluster runs it (a flush covers the partition).
    fn cluster_op(&self, op: rialto_keyspace::Op) -> rialto_keyspace::Op {
        match self.ctx.replicated {
            Some(r) => crate::cluster::partition_flush_op(
                op,
                rialto_cluster::slot::partition_of(r.first_slot, r.partitions),
                r.partitions,
            ),
            None => op,
        }
    }
}

impl TxHost<'_, '_, '_> {
    /// Where the script's calls are counted: the server of the connection that runs it
    /// (none for a cluster log's script, which every replica runs).
    fn stats(&self) -> Option<&crate::server::Shared> {
        self.ctx.refusals.as_ref().map(|(shared, _)| &**shared)
    }

    /// A call refused before it ran: a rejected call of command `index`, if known.
    fn count_rejected(&self, slot: Option<usize>, reply: &Reply) {
        if let Some(shared) = self.stats() {
            crate::errorstats::rejected(shared, slot, reply);
        }
    }

    /// Runs a call the script may make.
    fn execute(&mut self, spec: &'static CommandSpec, args: &[Bytes]) -> (Reply, bool) {
        let at = At {
            db: self.db,
            now_ms: self.tx.now_ms(),
            databases: self.ctx.databases,
            hll_sparse_max: self.ctx.hll_sparse_max,
            stream_node: self.ctx.stream_node,
        };
        match spec.handler_for(args) {
            Some(Handler::Write(f)) => match f(at, args).map(|op| self.replayable_seed(op)) {
                Ok(op) => match self.tx.apply(&op) {
                    Ok(v) => (reply::value(v), true),
                    Err(e) => (reply::keyspace_error(&e), false),
                },
                Err(r) => (r, false),
            },
            // A script never waits: a blocking pop allowed in scripts is its pop.
            Some(Handler::Block(f)) => match f(at, args) {
                Ok(commands::BlockingPop {
                    in_script: Some(r), ..
                }) => (r, false),
                Ok(b) => match self.tx.apply(&b.op) {
                    Ok(v) => (reply::value(v), true),
                    Err(e) => (reply::keyspace_error(&e), false),
                },
                Err(r) => (r, false),
            },
            Some(Handler::Read(f)) => (
                self.tx
                    .read(self.db, |k| f(&mut R::in_script(k), args))
                    .unwrap_or_else(|e| e),
                false,
            ),
            Some(_) => match commands::flushdb::in_transaction(spec, at, args) {
                Some(Ok(op)) => match self.tx.apply(&self.cluster_op(op)) {
                    Ok(_) => (reply::ok(), true),
                    Err(e) => (reply::keyspace_error(&e), false),
                },
                Some(Err(r)) => (r, false),
                None => self.connection_command(spec, args),
            },
            None => err("ERR Unknown Redis command called from script"),
        }
    }
}

impl Host for TxHost<'_, '_, '_> {
    fn call(&mut self, args: Vec<Bytes>) -> (Reply, bool) {
        // Counted as Redis counts a script's calls: in INFO commandstats (calls, time, failed
        // and rejected calls) and errorstats, apart from the script's own call.
        let index = command_table::index_of(&args[0]);
        let spec = match self.resolve(&args) {
            Ok(spec) => spec,
            Err(refused) => {
                self.count_rejected(index.map(command_table::top_slot), &refused.0);
                return refused;
            }
        };
        let slot = index.map(|i| command_table::slot_of(i, spec));
        self.wrote |= spec.has_flag("write");
        if let Err(refused) = self.check_replicated(spec, &args) {
            self.count_rejected(slot, &refused.0);
            return refused;
        }
        if let Some(m) = self.ctx.monitors.as_deref().filter(|m| m.active()) {
            if super::monitored(spec) {
                m.feed(crate::monitor::Source::Lua, self.db, &args);
            }
        }
        let start = Instant::now();
        let (reply, wrote) = self.execute(spec, &args);
        if let (Some(shared), Some(slot)) = (self.stats(), slot) {
            if let Some(e) = shared.registry.entry(slot) {
                e.calls.fetch_add(1, Ordering::Relaxed);
                e.micros
                    .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
            }
            crate::errorstats::ran(shared, slot, &reply);
        }
        (reply, wrote)
    }

    fn error_already_counted(&mut self) {
        if self.stats().is_some() {
            self.error_counted = true;
        }
    }

    fn refuse_writes(&mut self) {
        self.read_only = true;
    }

    fn allow_oom(&mut self) {
        self.allow_oom = true;
    }

    fn command(&self) -> &[Bytes] {
        self.command
    }

    fn acl_check(&mut self, args: &[Bytes]) -> Option<bool> {
        let spec = command_table::lookup_command(args)?;
        Some(
            match self.ctx.user.as_ref().filter(|_| !self.ctx.unrestricted) {
                Some(user) => user.check(spec.name, args).is_ok(),
                None => true,
            },
        )
    }

    fn abandon(&mut self) {
        self.tx.rollback_to(self.start);
    }

    fn log(&mut self, level: u8, message: &str) {
        match level {
            0 => tracing::debug!(target: "script", "{message}"),
            1 | 2 => tracing::info!(target: "script", "{message}"),
            _ => tracing::warn!(target: "script", "{message}"),
        }
    }
}

impl Connection {
    /// A script that may write, in cluster mode: one record of its keys' partition, which
    /// every replica runs alike (see `cluster::ScriptRecord`); the reply is what this node's
    /// applier returned.
    fn script_in_cluster(
        &mut self,
        c: Arc<crate::cluster::Cluster>,
        at: Option<(u16, u32)>,
        run: ScriptRun,
        id: StatsAt,
        args: Vec<Bytes>,
    ) -> Pending {
        let body = match run.named {
            Named::Body => run.code.clone(),
            Named::Sha => match self.shared.scripts.source(&run.code) {
                Ok(Some(body)) => body,
                Ok(None) => {
                    return Pending::Ready(Reply::error(
                        "NOSCRIPT No matching script. Please use EVAL.",
                    ))
                }
                Err(busy) => return Pending::Ready(busy),
            },
            Named::Function => Bytes::new(),
        };
        let function = matches!(run.named, Named::Function).then(|| run.code.clone());
        // Compiled here first: a script that does not compile never reaches the log, and
        // EVAL caches it for EVALSHA as in Redis.
        if function.is_none() {
            if let Err(r) = self.shared.scripts.load(&body) {
                return Pending::Ready(r);
            }
        }
        let p = at.map_or(self.partition, |(_, p)| p);
        if !c.node.is_master(p) {
            return Pending::Ready(match at {
                Some((slot, p)) => c.redirect(slot, p),
                None => Reply::error("READONLY You can't write against a read only replica."),
            });
        }
        let (first_slot, last_slot) = rialto_cluster::slot::slot_range(p, c.partitions);
        let user = match &self.client.user {
            Some(u) if !self.client.unrestricted => {
                let mut rules = u.name().to_vec();
                rules.push(b' ');
                rules.extend_from_slice(&u.describe_permissions());
                Some(Bytes::from(rules))
            }
            _ => None,
        };
        let record = crate::cluster::ScriptRecord {
            now_ms: self.shared.now_ms(),
            max_instructions: self.shared.config.read().cluster.script_max_instructions,
            first_slot,
            last_slot,
            user,
            function,
            body,
            keys: run.keys,
            argv: run.argv,
        };
        let threshold = self.shared.slowlog.threshold_micros();
        let pending = super::remote_write(
            c,
            at,
            self.partition,
            crate::cluster::Payload::Script(record),
            move |reply, took, pos| {
                let mut ex = executed(reply, took, threshold, args);
                ex.log_pos = pos;
                ex
            },
        );
        match pending {
            Ok(fut) => Pending::Remote(fut, id),
            Err(r) => Pending::Ready(r),
        }
    }

    /// FCALL_RO in cluster mode: run here, as a read, with the functions of the partition
    /// the address serves.
    fn function_read_in_cluster(
        &mut self,
        c: &crate::cluster::Cluster,
        at: Option<(u16, u32)>,
        run: ScriptRun,
        id: StatsAt,
        args: Vec<Bytes>,
    ) -> Pending {
        let p = at.map_or(self.partition, |(_, p)| p);
        let Some(libs) = c.node.machine().libraries(p) else {
            return Pending::Ready(Reply::error("ERR Function not found"));
        };
        let (first_slot, last_slot) = rialto_cluster::slot::slot_range(p, c.partitions);
        let now_ms = self.shared.now_ms();
        let user = self
            .client
            .user
            .clone()
            .filter(|_| !self.client.unrestricted);
        let ctx = ScriptCtx::replicated(
            Arc::clone(&self.shared.scripts),
            user,
            Replicated {
                first_slot,
                last_slot,
                partitions: c.partitions,
                now_ms,
            },
        );
        let budget = self.shared.config.read().cluster.script_max_instructions;
        let threshold = self.shared.slowlog.threshold_micros();
        let h = self.shared.keyspace.transaction(None, now_ms, move |tx| {
            let start = Instant::now();
            let reply = match tx {
                Some(tx) => run_replicated_function(
                    tx,
                    &ctx,
                    &libs,
                    &run.code,
                    (&run.keys, &run.argv),
                    budget,
                    true,
                ),
                None => Reply::NullArray,
            };
            executed(reply, start.elapsed(), threshold, args)
        });
        Pending::Commit(h, id)
    }

    /// What a script run by this connection needs.
    pub(super) fn script_ctx(&self) -> ScriptCtx {
        let (limit, databases, no_replicas, hll_sparse_max, stream_node) = {
            let c = self.shared.config.read();
            (
                c.lua_time_limit_ms,
                c.databases,
                c.lacks_good_replicas(),
                c.hll_sparse_max_bytes as u64,
                c.stream_node(),
            )
        };
        self.shared.scripts.set_time_limit_ms(limit);
        ScriptCtx {
            scripts: Arc::clone(&self.shared.scripts),
            user: self.client.user.clone(),
            unrestricted: self.client.unrestricted,
            db: self.client.db,
            databases,
            hll_sparse_max,
            stream_node,
            replicated: None,
            monitors: Some(Arc::clone(&self.shared.monitors)),
            refusals: Some((Arc::clone(&self.shared), Arc::clone(&self.client.handle))),
            oom: self.shared.memory_limit.exceeded(),
            no_replicas,
            allow_noscript: self
                .shared
                .deny_scripts_disabled
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// EVAL and its forms: queued like a write, so it joins the group of the other
    /// connections' writes and its reply is released with the group's sync.
    pub(super) fn script_command(
        &mut self,
        cmd: ScriptCmd,
        id: StatsAt,
        args: Vec<Bytes>,
        at: Option<(u16, u32)>,
    ) -> Pending {
        let run = match ScriptRun::parse(cmd, &args) {
            Ok(run) => run,
            Err(r) => return Pending::Ready(r),
        };
        if let Some(c) = self.shared.cluster.clone() {
            if !run.read_only {
                return self.script_in_cluster(c, at, run, id, args);
            }
            if matches!(run.named, Named::Function) {
                return self.function_read_in_cluster(&c, at, run, id, args);
            }
        }
        let ctx = self.script_ctx();
        let threshold = self.shared.slowlog.threshold_micros();
        let now_ms = self.shared.now_ms();
        let origin = self.noloop_origin();
        let h = self
            .shared
            .keyspace
            .long_transaction_as(origin, None, now_ms, move |tx| {
                let start = Instant::now();
                let (reply, error_counted) = match tx {
                    Some(tx) => {
                        let db = ctx.db;
                        run.run(tx, &ctx, db)
                    }
                    None => (Reply::NullArray, false),
                };
                let mut ex = executed(reply, start.elapsed(), threshold, args);
                ex.error_counted = error_counted;
                ex
            });
        Pending::Commit(h, id)
    }
}
