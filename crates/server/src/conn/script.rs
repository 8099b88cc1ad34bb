//! A connection's scripts: EVAL and its forms run the script inside one merger transaction
//! (atomic, durable as one group, queued like a write so it shares groups and syncs), and the
//! script's `redis.call`s run there through [`TxHost`].

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use rialto_keyspace::Transaction;
use rialto_resp::Reply;
use rialto_scripting::{Host, Scripts, Source};

use super::{executed, Connection, Pending};
use crate::acl::User;
use crate::command_table::{self, CommandSpec};
use crate::commands::{self, At, Handler, ScriptCmd, R};
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
        let n = reply::parse_i64(&args[2])
            .ok_or_else(|| Reply::error("ERR value is not an integer or out of range"))?;
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
        })
    }

    /// Runs the script in `tx`, its commands in database `db` (a SELECT inside moves that).
    pub(super) fn run(self, tx: &mut Transaction<'_, '_>, ctx: &ScriptCtx, db: u8) -> Reply {
        let mut host = TxHost {
            tx,
            ctx,
            db,
            read_only: self.read_only,
        };
        let source = match self.named {
            Named::Body => Source::Body(&self.code),
            Named::Sha => Source::Sha(&self.code),
            Named::Function => {
                return ctx.scripts.fcall(
                    &self.code,
                    &self.keys,
                    &self.argv,
                    self.read_only,
                    &mut host,
                )
            }
        };
        ctx.scripts.run(source, &self.keys, &self.argv, &mut host)
    }
}

/// What a script's commands need from the connection that runs it.
pub(super) struct ScriptCtx {
    pub(super) scripts: Arc<Scripts>,
    user: Option<Arc<User>>,
    unrestricted: bool,
    db: u8,
    databases: usize,
}

/// A script's view of the server: its commands, executed inside its transaction.
struct TxHost<'t, 'a, 'c> {
    tx: &'t mut Transaction<'a, 'c>,
    ctx: &'t ScriptCtx,
    db: u8,
    read_only: bool,
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
        if spec.has_flag("noscript") || base.has_flag("noscript") {
            return Err(err("ERR This Redis command is not allowed from script"));
        }
        if self.read_only && spec.has_flag("write") {
            return Err(err(
                "ERR Write commands are not allowed from read-only scripts.",
            ));
        }
        if let Some(user) = self.ctx.user.as_ref().filter(|_| !self.ctx.unrestricted) {
            if user.check(spec.name, args).is_err() {
                return Err(err(
                    "NOPERM The user executing the script can't run this command or subcommand",
                ));
            }
        }
        Ok(spec)
    }

    /// The few connection commands a script may call: they change nothing but the script's
    /// own database, or answer from nothing.
    fn connection_command(&mut self, spec: &CommandSpec, args: &[Bytes]) -> (Reply, bool) {
        match spec.name {
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
            "time" => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
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

impl Host for TxHost<'_, '_, '_> {
    fn call(&mut self, args: Vec<Bytes>) -> (Reply, bool) {
        let spec = match self.resolve(&args) {
            Ok(spec) => spec,
            Err(refused) => return refused,
        };
        let at = At {
            db: self.db,
            now_ms: self.tx.now_ms(),
        };
        match spec.handler {
            Some(Handler::Write(f)) => match f(at, &args) {
                Ok(op) => match self.tx.apply(&op) {
                    Ok(v) => (reply::value(v), true),
                    Err(e) => (reply::keyspace_error(&e), false),
                },
                Err(r) => (r, false),
            },
            Some(Handler::Read(f)) => (
                self.tx
                    .read(self.db, |k| f(&mut R::new(k), &args))
                    .unwrap_or_else(|e| e),
                false,
            ),
            Some(_) => match commands::flushdb::in_transaction(spec, at, &args) {
                Some(Ok(op)) => match self.tx.apply(&op) {
                    Ok(v) => (reply::value(v), true),
                    Err(e) => (reply::keyspace_error(&e), false),
                },
                Some(Err(r)) => (r, false),
                None => self.connection_command(spec, &args),
            },
            None => err("ERR Unknown Redis command called from script"),
        }
    }

    fn refuse_writes(&mut self) {
        self.read_only = true;
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
    /// What a script run by this connection needs.
    pub(super) fn script_ctx(&self) -> ScriptCtx {
        let (limit, databases) = {
            let c = self.shared.config.read();
            (c.lua_time_limit_ms, c.databases)
        };
        self.shared.scripts.set_time_limit_ms(limit);
        ScriptCtx {
            scripts: Arc::clone(&self.shared.scripts),
            user: self.client.user.clone(),
            unrestricted: self.client.unrestricted,
            db: self.client.db,
            databases,
        }
    }

    /// EVAL and its forms: queued like a write, so it joins the group of the other
    /// connections' writes and its reply is released with the group's sync.
    pub(super) fn script_command(
        &mut self,
        cmd: ScriptCmd,
        id: usize,
        args: Vec<Bytes>,
    ) -> Pending {
        let run = match ScriptRun::parse(cmd, &args) {
            Ok(run) => run,
            Err(r) => return Pending::Ready(r),
        };
        let ctx = self.script_ctx();
        let threshold = self.shared.slowlog.threshold_micros();
        let now_ms = self.shared.now_ms();
        let origin = self.noloop_origin();
        let h = self
            .shared
            .keyspace
            .transaction_as(origin, None, now_ms, move |tx| {
                let start = Instant::now();
                let reply = match tx {
                    Some(tx) => {
                        let db = ctx.db;
                        run.run(tx, &ctx, db)
                    }
                    None => Reply::NullArray,
                };
                executed(reply, start.elapsed(), threshold, args)
            });
        Pending::Commit(h, id)
    }
}
