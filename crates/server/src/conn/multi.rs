//! A connection's transactions (Redis 7.0's semantics): MULTI queues the commands that follow,
//! EXEC runs them as one merger transaction — unless a command was refused while queueing
//! (EXECABORT) or a watched key changed (a null reply) — and DISCARD drops them.
//!
//! At EXEC the queue is run in two parts:
//! - key commands (reads and writes, scripts, FLUSHDB and FLUSHALL) run inside one merger
//!   transaction, at one instant, each in the database the SELECTs queued before it choose:
//!   atomic for every reader, durable together or not at all;
//! - connection and server commands (PING, SELECT, CLIENT, CONFIG..., and the whole-keyspace
//!   reads KEYS, SCAN, DBSIZE, RANDOMKEY) run on the connection after it, in queue order, and
//!   only if it ran (not when a watched key changed).
//!
//! SCRIPT and FUNCTION subcommands that read or change the interpreter (the script cache, the
//! libraries) are steps of the transaction, so the scripts queued around them see that state
//! in queue order.

use bytes::Bytes;
use rialto_keyspace::Op;
use rialto_resp::Reply;
use rialto_txn::CommitHandle;

use super::{Connection, Executed, Pending};
use crate::acl::log::{Context, Event};
use crate::command_table::{self, CommandSpec};
use crate::commands::{self, Admitted, At, Ctx, Handler, Outcome, ReadFn, StatsAt, TxnCmd, R};
use crate::reply;

/// The transaction being queued.
#[derive(Default)]
pub(super) struct Multi {
    queued: Vec<QueuedCmd>,
    /// Bytes of the queued arguments, bounded by `client-query-buffer-limit`.
    bytes: usize,
    /// A command was refused while queueing: EXEC aborts.
    failed: bool,
    /// A queued command may grow the data, or write: EXEC is refused as they would be
    /// (over `maxmemory`, without the good replicas `min-replicas-to-write` asks for).
    pub(super) may_grow: bool,
    pub(super) may_write: bool,
    /// Cluster mode: the slot of the keys queued so far.
    pub(super) slot: Option<(u16, u32)>,
}

struct QueuedCmd {
    index: usize,
    spec: &'static CommandSpec,
    handler: Handler,
    args: Vec<Bytes>,
}

/// One queued command, as EXEC runs it.
enum Step {
    /// Answered before the transaction (a connection command, a refused one).
    Done(Reply),
    /// A write, applied in the transaction.
    Op(Op),
    /// A read, in the transaction, of the database given; with the keys a tracking client
    /// remembers for it (none otherwise).
    Read(ReadFn, u8, Vec<Bytes>, Vec<Bytes>),
    /// A script, in the transaction, in the database given.
    Script(super::script::ScriptRun, u8),
    /// A SCRIPT or FUNCTION subcommand that reads or changes the interpreter, at its place.
    Scripts(
        fn(&rialto_scripting::Scripts, &[Bytes]) -> Reply,
        Vec<Bytes>,
    ),
    /// A FUNCTION change (LOAD, DELETE, FLUSH, RESTORE), at its place.
    Library(commands::function::Change),
    /// Answered after the transaction.
    After,
}

impl Connection {
    /// In MULTI, queues the admitted request (`Ok(+QUEUED)`) or refuses it (`Ok(error)`, and
    /// the transaction fails); `Err` hands the request back when it runs at once: MULTI,
    /// EXEC, DISCARD, WATCH, QUIT, RESET.
    pub(super) fn queue_in_multi(
        &mut self,
        a: Admitted,
        args: Vec<Bytes>,
    ) -> Result<Reply, Vec<Bytes>> {
        let Some(top) = command_table::all().get(a.index) else {
            return Err(args);
        };
        let runs_now = matches!(a.handler, Handler::Txn(c) if c != TxnCmd::Unwatch)
            || top.name == "quit"
            || top.name == "reset";
        let limit = self.shared.config.read().client_query_buffer_limit;
        let (grows, writes) = (self.may_grow(a.spec, &args), self.may_write(a.spec, &args));
        let Some(m) = self.multi.as_mut().filter(|_| !runs_now) else {
            return Err(args);
        };
        if top.has_flag("no_multi") {
            m.failed = true;
            return Ok(Reply::error("ERR Command not allowed inside a transaction"));
        }
        let size: usize = args.iter().map(|a| a.len()).sum();
        if m.bytes + size > limit {
            m.failed = true;
            return Ok(Reply::error(
                "ERR the queued commands of the transaction exceed client-query-buffer-limit",
            ));
        }
        if !m.failed {
            // A failed transaction keeps nothing: EXEC will only abort it.
            m.bytes += size;
            m.may_grow |= grows;
            m.may_write |= writes;
            m.queued.push(QueuedCmd {
                index: a.index,
                spec: a.spec,
                handler: a.handler,
                args,
            });
        }
        Ok(Reply::simple("QUEUED"))
    }

    /// What a request admission refused becomes: in MULTI it fails the transaction; an EXEC
    /// refused, in a transaction or not, answers EXECABORT with the reason (and ends the
    /// transaction), as Redis does.
    pub(super) fn refused_in_multi(&mut self, args: &[Bytes], refusal: Reply) -> Reply {
        let is_exec = args
            .first()
            .is_some_and(|c| c.eq_ignore_ascii_case(b"exec"));
        if !is_exec {
            if let Some(m) = self.multi.as_mut() {
                m.failed = true;
            }
            return refusal;
        }
        self.discard();
        let why = match &refusal {
            Reply::Error(e) => String::from_utf8_lossy(e).into_owned(),
            _ => String::new(),
        };
        // Redis builds the unknown-command and arity texts without their `ERR ` code and
        // keeps the code of the others (NOAUTH, NOPERM).
        reply::err_string(format!(
            "EXECABORT Transaction discarded because of: {}",
            why.strip_prefix("ERR ").unwrap_or(&why)
        ))
    }

    /// Runs MULTI, EXEC, DISCARD, WATCH or UNWATCH.
    pub(super) async fn transaction_command(
        &mut self,
        cmd: TxnCmd,
        id: StatsAt,
        args: Vec<Bytes>,
    ) -> Pending {
        Pending::Ready(match cmd {
            TxnCmd::Exec => return self.exec(id, &args).await,
            TxnCmd::Multi if self.multi.is_some() => {
                Reply::error("ERR MULTI calls can not be nested")
            }
            TxnCmd::Multi => {
                self.multi = Some(Multi::default());
                reply::ok()
            }
            TxnCmd::Discard if self.multi.is_none() => Reply::error("ERR DISCARD without MULTI"),
            TxnCmd::Discard => {
                self.discard();
                reply::ok()
            }
            TxnCmd::Watch if self.multi.is_some() => {
                Reply::error("ERR WATCH inside MULTI is not allowed")
            }
            TxnCmd::Watch => self.watch_keys(args).await,
            TxnCmd::Unwatch => {
                self.unwatch();
                reply::ok()
            }
        })
    }

    /// Commands queued and their bytes: `(-1, 0)` outside MULTI, as CLIENT LIST shows it.
    pub(super) fn queued(&self) -> (i64, u64) {
        self.multi
            .as_ref()
            .map_or((-1, 0), |m| (m.queued.len() as i64, m.bytes as u64))
    }

    /// Leaves the transaction (DISCARD, RESET) and forgets the watched keys.
    pub(super) fn discard(&mut self) {
        self.multi = None;
        self.unwatch();
    }

    fn unwatch(&mut self) {
        if let Some(w) = &mut self.watch {
            w.clear();
        }
    }

    async fn watch_keys(&mut self, mut args: Vec<Bytes>) -> Reply {
        let keys = args.split_off(1);
        let watch = match &mut self.watch {
            Some(w) => w,
            none => none.insert(self.shared.keyspace.new_watch()),
        };
        if watch.is_dirty() {
            // EXEC will fail whatever is added.
            return reply::ok();
        }
        // Registered in the merger's order, behind this connection's pending writes; once it
        // is durable, reads of the published state see every change it is ordered after.
        let h = self.shared.keyspace.watch(watch, self.client.db, keys);
        match self.commit(h).await {
            Ok(()) => reply::ok(),
            Err(e) => reply::engine_error(&e),
        }
    }

    async fn exec(&mut self, id: StatsAt, exec_args: &[Bytes]) -> Pending {
        // Monitors see EXEC after the commands it ran, or alone when it runs none.
        let monitored = self.shared.monitors.active();
        let Some(m) = self.multi.take() else {
            if monitored {
                self.monitor_feed(exec_args);
            }
            return Pending::Ready(Reply::error("ERR EXEC without MULTI"));
        };
        if monitored && (m.failed || self.watch.as_ref().is_some_and(|w| w.is_dirty())) {
            self.monitor_feed(exec_args);
        }
        if m.failed {
            self.unwatch();
            return Pending::Ready(Reply::error(
                "EXECABORT Transaction discarded because of previous errors.",
            ));
        }
        // This connection's own earlier writes are applied first: a change they make to a
        // watched key is seen.
        self.drain().await;
        if self.watch.as_ref().is_some_and(|w| w.is_dirty()) {
            self.unwatch();
            return Pending::Ready(Reply::NullArray);
        }
        let now_ms = self.shared.now_ms();
        let (databases, hll_sparse_max, stream_node) = {
            let c = self.shared.config.read();
            (c.databases, c.hll_sparse_max_bytes as u64, c.stream_node())
        };
        let slot = m.slot;
        // The database each command runs in: SELECTs queued before it decide (their effect on
        // the connection waits for the transaction, with the other connection commands).
        let mut db = self.client.db;
        let mut steps = Vec::with_capacity(m.queued.len());
        let source = crate::monitor::Source::Client(self.client.handle.addr);
        let mut after = Vec::new();
        // Whose reply each element of EXEC's is, for the error counters.
        let indexes: Vec<usize> = m
            .queued
            .iter()
            .map(|q| crate::command_table::slot_of(q.index, q.spec))
            .collect();
        for q in m.queued {
            if let Some(denied) = self.denied_now(q.spec, &q.args) {
                steps.push(Step::Done(denied));
                continue;
            }
            self.record(StatsAt::of(q.index, q.spec), 0, None);
            // Shown once the step is known, in the database it leaves (a SELECT's own line
            // names the database it chose, as Redis shows it after the call).
            let feed = (monitored && super::monitored(q.spec)).then(|| q.args.clone());
            if q.spec.name == "monitor" {
                // A transaction expects a reply per command; Redis refuses it the same way.
                steps.push(Step::Done(Reply::error(
                    "ERR MONITOR isn't allowed for DENY BLOCKING client",
                )));
                continue;
            }
            let at = At {
                db,
                now_ms,
                databases,
                hll_sparse_max,
                stream_node,
            };
            let step = match q.handler {
                Handler::Write(f) => match f(at, &q.args) {
                    Ok(op) => Step::Op(op),
                    Err(r) => Step::Done(r),
                },
                // Inside a transaction a blocking pop never waits: it is its pop.
                Handler::Block(f) => match f(at, &q.args) {
                    Ok(b) => Step::Op(b.op),
                    Err(r) => Step::Done(r),
                },
                Handler::Read(f) => {
                    // CLIENT CACHING holds for the whole transaction, as in Redis.
                    let keys = if self.client.tracking.as_ref().is_some_and(|t| t.remembers()) {
                        command_table::keys_with_flags(q.spec, &q.args)
                            .iter()
                            .filter_map(|k| q.args.get(k.pos).cloned())
                            .collect()
                    } else {
                        Vec::new()
                    };
                    Step::Read(f, db, q.args, keys)
                }
                // UNWATCH: EXEC forgets the watched keys anyway.
                Handler::Txn(_) => Step::Done(reply::ok()),
                Handler::Script(cmd) => match super::script::ScriptRun::parse(cmd, &q.args) {
                    Ok(run) => Step::Script(run, db),
                    Err(r) => Step::Done(r),
                },
                handler => match commands::flushdb::in_transaction(q.spec, at, &q.args) {
                    Some(Ok(op)) => Step::Op(op),
                    Some(Err(r)) => Step::Done(r),
                    None => match self.scripting_step(q.spec, q.args) {
                        Ok(step) => step,
                        Err(args) => {
                            if q.spec.name == "select" {
                                if let Some(n) = commands::select::target(&args, databases) {
                                    db = n;
                                }
                            }
                            after.push((steps.len(), handler, args));
                            Step::After
                        }
                    },
                },
            };
            steps.push(step);
            if let Some(args) = feed {
                self.shared.monitors.feed(source, db, &args);
            }
        }
        if monitored {
            self.shared.monitors.feed(source, db, exec_args);
        }
        if let Some(c) = self.shared.cluster.clone() {
            if steps.iter().any(|s| matches!(s, Step::Op(_))) {
                let r = self.exec_in_cluster(c, slot, steps, after).await;
                crate::errorstats::ran_in_exec(&self.shared, &indexes, &r, &[]);
                return Pending::Ready(r);
            }
        }
        // The transaction takes the watch: it unwatches the keys once it has checked them, in
        // the merger's order, so no change ordered before it is missed.
        let watch = self.watch.take().filter(|w| !w.is_empty());
        let script_ctx = self.script_ctx();
        // A script may loop: it runs where no connection waits behind it.
        let long = steps.iter().any(|s| matches!(s, Step::Script(..)));
        let remember = self.client.tracking.is_some().then(|| {
            (
                std::sync::Arc::clone(&self.shared.tracking),
                self.client.handle.id,
                self.shared.config.read().pubsub_limit,
            )
        });
        // The positions of scripts whose error replies their calls counted already.
        let counted = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let counted_in_run = std::sync::Arc::clone(&counted);
        let run = move |tx: Option<&mut rialto_keyspace::Transaction<'_, '_>>| {
            let Some(tx) = tx else {
                return Reply::NullArray;
            };
            Reply::Array(
                steps
                    .into_iter()
                    .enumerate()
                    .map(|(pos, step)| match step {
                        Step::Done(r) => r,
                        Step::Op(op) => match tx.apply(&op) {
                            Ok(v) => reply::value(v),
                            Err(e) => reply::keyspace_error(&e),
                        },
                        Step::Read(f, db, args, keys) => {
                            // Remembered in the transaction, before the read (see
                            // `tracking.rs`).
                            if let Some((tr, who, limit)) = &remember {
                                if !keys.is_empty() {
                                    tr.remember(*who, &keys, *limit);
                                }
                            }
                            tx.read(db, |k| f(&mut R::new(k), &args))
                                .unwrap_or_else(|e| e)
                        }
                        Step::Script(run, db) => {
                            let (r, error_counted) = run.run(tx, &script_ctx, db);
                            if error_counted {
                                counted_in_run.lock().push(pos);
                            }
                            r
                        }
                        Step::Scripts(f, args) => f(&script_ctx.scripts, &args),
                        Step::Library(change) => change.apply(tx, &script_ctx.scripts),
                        Step::After => Reply::Null,
                    })
                    .collect(),
            )
        };
        let tracking = self
            .client
            .tracking
            .is_some()
            .then(|| std::sync::Arc::clone(&self.shared.tracking));
        if after.is_empty() {
            // Queued like any write: it joins the group of the other connections' writes and
            // its reply is released with the group's sync.
            let shared = std::sync::Arc::clone(&self.shared);
            let h = transaction_of(
                &self.shared.keyspace,
                long,
                self.noloop_origin(),
                watch,
                now_ms,
                move |tx| {
                    let reply = run(tx);
                    crate::errorstats::ran_in_exec(&shared, &indexes, &reply, &counted.lock());
                    Executed {
                        reply,
                        micros: 0,
                        slow_args: None,
                        track_seq: tracking.map_or(0, |t| t.last_change()),
                        log_pos: None,
                        error_counted: false,
                    }
                },
            );
            return Pending::Commit(h, id);
        }
        let h = transaction_of(
            &self.shared.keyspace,
            long,
            self.noloop_origin(),
            watch,
            now_ms,
            run,
        );
        Pending::Ready(match self.commit(h).await {
            Err(e) => reply::engine_error(&e),
            Ok(Reply::Array(mut replies)) => {
                for (pos, handler, args) in after {
                    replies[pos] = self.run_here(handler, &args).await;
                }
                let r = Reply::Array(replies);
                crate::errorstats::ran_in_exec(&self.shared, &indexes, &r, &counted.lock());
                r
            }
            Ok(aborted) => aborted,
        })
    }

    /// EXEC in cluster mode: the transaction's writes and reads as one record of its slot's
    /// partition, applied by every replica at the same offset; the reply is what this node's
    /// applier returned, with the connection commands run here after it.
    async fn exec_in_cluster(
        &mut self,
        c: std::sync::Arc<crate::cluster::Cluster>,
        at: Option<(u16, u32)>,
        steps: Vec<Step>,
        after: Vec<(usize, Handler, Vec<Bytes>)>,
    ) -> Reply {
        use crate::cluster::{Applied, ExecStep, Payload};
        let p = at.map_or(self.partition, |(_, p)| p);
        let mut replies: Vec<Option<Reply>> = Vec::with_capacity(steps.len());
        let mut logged = Vec::with_capacity(steps.len());
        for step in steps {
            let (reply, logged_step) = match step {
                Step::Done(r) => (Some(r), ExecStep::Elsewhere),
                Step::Op(op) => (
                    None,
                    ExecStep::Op(crate::cluster::partition_flush_op(op, p, c.partitions)),
                ),
                Step::Read(_, db, args, _) => (None, ExecStep::Read(db, args)),
                Step::After => (Some(Reply::Null), ExecStep::Elsewhere),
                Step::Script(..) | Step::Scripts(..) | Step::Library(..) => (
                    Some(Reply::error(
                        "ERR scripts and functions are not available in cluster transactions",
                    )),
                    ExecStep::Elsewhere,
                ),
            };
            replies.push(reply);
            logged.push(logged_step);
        }
        let payload = Payload::Exec(logged);
        let submitted = match self.watch.take().filter(|w| !w.is_empty()) {
            None => c.submit(p, &payload).map(Some),
            Some(watch) => submit_watched(&self.shared, &c, p, &payload, &watch).await,
        };
        let outcome = match submitted {
            Err(e) => Err(e),
            // A watched key changed (or may have): the transaction does not run.
            Ok(None) => return Reply::NullArray,
            Ok(Some(s)) => c.outcome(s).await,
        };
        match outcome {
            Ok(((Applied::Many(applied), _), offset)) => {
                self.client.last_write = Some((p, offset));
                for (here, there) in replies.iter_mut().zip(applied) {
                    if here.is_none() {
                        *here = there;
                    }
                }
            }
            Ok(((Applied::One(Err(e)), _), _)) => return reply::keyspace_error(&e),
            Ok(((Applied::One(Ok(_)) | Applied::Reply(_), _), _)) => {
                return Reply::error("ERR unexpected reply to a transaction")
            }
            Err(e) => return crate::cluster::write_error(&c, &e, at),
        }
        for (pos, handler, args) in after {
            replies[pos] = Some(self.run_here(handler, &args).await);
        }
        Reply::Array(
            replies
                .into_iter()
                .map(|r| r.unwrap_or(Reply::Null))
                .collect(),
        )
    }

    /// A SCRIPT or FUNCTION subcommand that reads or changes the interpreter, as a step at its
    /// place in the transaction (so the scripts around it see the cache and libraries in
    /// order); `Err` hands back the arguments of any other command.
    fn scripting_step(&self, spec: &CommandSpec, args: Vec<Bytes>) -> Result<Step, Vec<Bytes>> {
        if let Some(f) = commands::script::on_scripts(spec.name) {
            return Ok(Step::Scripts(f, args));
        }
        if let Some(f) = commands::function::reader(spec.name) {
            return Ok(Step::Scripts(f, args));
        }
        match commands::function::prepare(spec.name, &self.shared.scripts, &args) {
            Some(Ok(change)) => Ok(Step::Library(change)),
            Some(Err(r)) => Ok(Step::Done(r)),
            None => Err(args),
        }
    }

    /// Permissions are checked again at EXEC: the user's rules may have changed since the
    /// command was queued.
    fn denied_now(&self, spec: &CommandSpec, args: &[Bytes]) -> Option<Reply> {
        let user = self.client.user.as_ref()?;
        if self.client.unrestricted {
            return None;
        }
        let denied = user.check(spec.name, args).err()?;
        let event = Event::denied(&denied, Context::Multi, user.name());
        crate::auth::log_refusal(&self.shared, &self.client.handle, event);
        Some(reply::err_string(format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and \
             the EXEC call. This command is no longer allowed for the following reason: {}",
            denied.reason()
        )))
    }

    /// Runs a connection command of the transaction on the connection.
    async fn run_here(&mut self, handler: Handler, args: &[Bytes]) -> Reply {
        let start = std::time::Instant::now();
        let reply = self.run_here_untimed(handler, args).await;
        // The slow log holds the commands inside EXEC, not EXEC itself, as in Redis.
        let micros = start.elapsed().as_micros() as u64;
        if super::slow(self.shared.slowlog.threshold_micros(), micros) {
            self.log_slow(micros, args);
        }
        self.shared.latency.observe_with(micros, || {
            let fast = command_table::lookup(&args[0]).is_some_and(|c| c.has_flag("fast"));
            crate::latency::LatencyMonitor::command_event(fast)
        });
        reply
    }

    async fn run_here_untimed(&mut self, handler: Handler, args: &[Bytes]) -> Reply {
        let outcome = commands::run_on_connection(
            handler,
            &mut Ctx {
                shared: &self.shared,
                client: &mut self.client,
            },
            args,
        );
        self.decoder.set_pre_auth(self.client.user.is_none());
        match outcome {
            Outcome::Reply(r) => r,
            // The subscribe family in a transaction: one element, its confirmation, or the
            // array of them for several channels (Redis writes each as an element of its
            // own, which leaves more elements than the transaction's count), as arrays even
            // in RESP3, where a push inside EXEC's array would be read as out of band.
            Outcome::Many(v) => {
                let mut v: Vec<Reply> = v
                    .into_iter()
                    .map(|r| match r {
                        Reply::Push(items) => Reply::Array(items),
                        other => other,
                    })
                    .collect();
                if v.len() == 1 {
                    v.pop().unwrap_or(Reply::NullArray)
                } else {
                    Reply::Array(v)
                }
            }
            Outcome::Later(fut) => fut.await,
            // A command that answers nothing (CLIENT REPLY) still has its element.
            Outcome::Silent => Reply::Null,
            Outcome::Close(r) => {
                self.client.close_after_reply = true;
                r.unwrap_or_else(reply::ok)
            }
        }
    }

    /// Waits for a merger job this connection enqueued (executing the queue first when the
    /// merger runs inline).
    async fn commit<T>(&mut self, h: CommitHandle<T>) -> rialto_engine::Result<T> {
        super::settle(&self.shared.keyspace, h).await
    }
}

/// Sends a watched transaction's record unless a watched key changed (`None`). A write of
/// this node's to the partition whose fate is unknown blocks the check; an empty record
/// behind it settles that (it is applied after it, or the other never is), then the check
/// runs once more.
pub(crate) async fn submit_watched(
    shared: &crate::server::Shared,
    c: &crate::cluster::Cluster,
    p: u32,
    payload: &crate::cluster::Payload,
    watch: &rialto_keyspace::Watch,
) -> Result<Option<rialto_cluster::Submitted<crate::cluster::Machine>>, rialto_cluster::WriteError>
{
    use rialto_cluster::Unsent;
    for attempt in 0..2 {
        let now_ms = shared.now_ms();
        match c.submit_watched(p, payload, &shared.keyspace, watch, now_ms)? {
            Ok(s) => return Ok(Some(s)),
            Err(Unsent::Unsettled) if attempt == 0 => {
                let barrier = c.submit(p, &crate::cluster::Payload::Exec(Vec::new()))?;
                if c.outcome(barrier).await.is_err() {
                    return Ok(None);
                }
            }
            Err(_) => return Ok(None),
        }
    }
    Ok(None)
}

/// EXEC's transaction: a long one (see `Keyspace::long_transaction_as`) if it holds a script.
fn transaction_of<T, F>(
    keyspace: &rialto_keyspace::Keyspace,
    long: bool,
    origin: Option<u64>,
    watch: Option<rialto_keyspace::Watch>,
    now_ms: i64,
    run: F,
) -> rialto_txn::CommitHandle<T>
where
    T: Send + 'static,
    F: FnOnce(Option<&mut rialto_keyspace::Transaction<'_, '_>>) -> T + Send + 'static,
{
    if long {
        keyspace.long_transaction_as(origin, watch, now_ms, run)
    } else {
        keyspace.transaction_as(origin, watch, now_ms, run)
    }
}
