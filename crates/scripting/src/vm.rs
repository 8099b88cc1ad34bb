//! [`Scripts`]: one Lua 5.1 interpreter, its script cache, and the state SCRIPT KILL and the
//! busy-script limit read while a script runs.
//!
//! Scripts run one at a time (the interpreter is behind a lock, and the server runs each
//! script inside one merger transaction). A script sees what Redis 7.0 gives it: the base,
//! table, string and math libraries, `bit`, the `redis` table, `KEYS` and `ARGV`; globals are
//! read-only (a script's chunk runs with an environment that refuses writes and reading a
//! missing name), so one script cannot leave state for the next.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};
use parking_lot::Mutex;
use rialto_resp::Reply;

use crate::convert::{lua_to_reply_in, reply_to_lua};

/// Lua instructions between two checks of the time limit and of SCRIPT KILL (and between
/// two ticks of a replicated script's instruction budget).
const HOOK_EVERY: u32 = 100_000;

/// Scripts a replicated interpreter keeps compiled; past it the cache starts again.
const REPLICATED_CACHE_MAX: usize = 10_000;

/// What a script's `redis.call` reaches: the server's commands, inside the script's
/// transaction.
pub trait Host {
    /// Runs `args` (command name first) and returns its reply, an error reply for any
    /// failure (in Redis's words), and whether it wrote.
    fn call(&mut self, args: Vec<Bytes>) -> (Reply, bool);
    /// `redis.log`: `level` 0 (debug) to 3 (warning).
    fn log(&mut self, level: u8, message: &str);
    /// From now on, refuse write commands (a function declared `no-writes`, FCALL_RO).
    fn refuse_writes(&mut self);
    /// The script declared that it may run while used memory exceeds `maxmemory`
    /// (`allow-oom`, or `no-writes`, which implies it).
    fn allow_oom(&mut self) {}
    /// `redis.acl_check_cmd`: whether the script's user may run `args` (command name first);
    /// `None` when no such command exists.
    fn acl_check(&mut self, args: &[Bytes]) -> Option<bool> {
        let _ = args;
        Some(true)
    }
    /// The command that runs the script (EVAL and its arguments), for FUNCTION STATS.
    fn command(&self) -> &[Bytes] {
        &[]
    }
    /// Drops every write the script made: it was stopped by SHUTDOWN NOSAVE, and a script
    /// takes effect whole or not at all.
    fn abandon(&mut self) {}
    /// The script's reply is an error reply that one of its calls answered (raised by
    /// `redis.call`, or the table `redis.pcall` returned): the host counted that error when
    /// the call answered it, and counts it once.
    fn error_already_counted(&mut self) {}
}

/// What a script's shebang (`#!lua flags=...`) or a function's registration declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScriptFlags {
    pub no_writes: bool,
    pub allow_oom: bool,
}

impl ScriptFlags {
    /// Whether it may run while used memory exceeds `maxmemory` (`no-writes` implies
    /// `allow-oom`, as in Redis).
    pub fn allows_oom(self) -> bool {
        self.allow_oom || self.no_writes
    }

    /// Tells the host what the flags allow and refuse.
    pub(crate) fn apply(self, host: &mut dyn Host) {
        if self.no_writes {
            host.refuse_writes();
        }
        if self.allows_oom() {
            host.allow_oom();
        }
    }
}

/// Which script to run.
pub enum Source<'a> {
    /// EVAL: the body (compiled and cached if new).
    Body(&'a [u8]),
    /// EVALSHA: a cached script by its SHA1 (hex, any case).
    Sha(&'a [u8]),
}

/// Why SCRIPT KILL did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KillError {
    /// No script is running.
    #[error("no script is running")]
    NotBusy,
    /// The running script has written: killing it would leave half its effects.
    #[error("the running script has already written")]
    Unkillable,
    /// SCRIPT KILL of a function, or FUNCTION KILL of an EVAL script.
    #[error("the running script is of the other kind")]
    OtherKind,
}

/// The state of the script running now, read by other threads.
#[derive(Default)]
pub(crate) struct Running {
    /// A script is running.
    active: AtomicBool,
    /// It has run past `lua-time-limit`: other clients get BUSY.
    busy: AtomicBool,
    /// SCRIPT KILL asked it to stop.
    kill: AtomicBool,
    /// SHUTDOWN NOSAVE asked it to stop, written or not; its writes are dropped.
    abort: AtomicBool,
    /// The hook raises the stop on every line until the script ends.
    stopping: AtomicBool,
    /// It is a function (FCALL), not an EVAL script.
    function: AtomicBool,
    /// Its name (a function's, or `f_` and the script's SHA1) and the command that runs it.
    current: parking_lot::Mutex<(String, Vec<Bytes>)>,
    /// It has written (SCRIPT KILL refuses).
    wrote: AtomicBool,
    /// Milliseconds since `epoch` when it started.
    started_ms: AtomicU64,
    /// `lua-time-limit`, milliseconds (0: never busy).
    limit_ms: AtomicU64,
    /// A replicated interpreter: no clock, no SCRIPT KILL; an instruction budget instead.
    replicated: bool,
    /// Replicated: hook ticks ([`HOOK_EVERY`] instructions each) this run may take (0: no
    /// limit), and those it took.
    budget_ticks: AtomicU64,
    ticks: AtomicU64,
    /// A library's top-level code is loading (FUNCTION LOAD): milliseconds since `epoch`
    /// past which the load stops (0: none).
    pub(crate) load_deadline_ms: AtomicU64,
}

pub(crate) struct Vm {
    pub(crate) lua: Lua,
    /// Cached scripts by lowercase SHA1 hex: the chunk, the flags its shebang declared
    /// (`None`: no shebang, Redis's compatibility mode), and its body.
    cache: HashMap<[u8; 40], (Function, Option<ScriptFlags>, Bytes)>,
    /// Replicated: reseeds `math.random` (its own generator, not the C library's).
    pub(crate) reseed: Option<Function>,
    /// The environment scripts run in (read-only globals).
    pub(crate) env: Table,
    /// The environment function libraries run in, and the table whose `g` names the
    /// globals it reads: [`Vm::load_env`] while a library loads, the globals while one of
    /// its functions runs.
    pub(crate) fenv: Table,
    pub(crate) fstate: Table,
    /// What a library's top-level code sees: `redis` with `register_function`, `log` and
    /// the version alone (Redis 7.0's library API), nothing else.
    pub(crate) load_env: Table,
    /// Functions of the installed libraries by lowercase name (FCALL finds a function
    /// whatever the case): its callback, its declared flags, its name as registered.
    pub(crate) functions: HashMap<String, (Function, ScriptFlags, String)>,
    /// The real globals (where KEYS and ARGV are set).
    pub(crate) globals: Table,
    /// Runs a function under the error handler that records where an error was raised:
    /// `runner(f, keys, args)` returns `true, result` or `false, {err = text | raw = error,
    /// line = n}`.
    pub(crate) runner: Function,
    /// What the hook watches (shared with [`Scripts`]), and the clock it reads.
    running: Arc<Running>,
    epoch: Instant,
}

/// The scripting engine.
pub struct Scripts {
    /// The interpreter's memory cap, bytes (0: none).
    memory_limit: usize,
    pub(crate) vm: Mutex<Vm>,
    /// The installed function libraries, by name (kept to reinstall them into a fresh
    /// interpreter, and for FUNCTION LIST, DUMP and STATS).
    pub(crate) libraries: Mutex<std::collections::BTreeMap<String, crate::functions::LibraryInfo>>,
    running: Arc<Running>,
    epoch: Instant,
    /// Scripts in the cache, for INFO without taking the interpreter's lock.
    cached: std::sync::atomic::AtomicUsize,
}

/// The reply to a command refused while a script is busy (past `lua-time-limit`).
pub const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// [`BUSY`] while the busy script is a function.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// How long a command that needs the interpreter waits at a time for a running script before
/// it looks whether the script has become busy.
const VM_WAIT_STEP: std::time::Duration = std::time::Duration::from_millis(5);

/// The SHA1 of `body` as lowercase hex.
pub fn sha1_hex(body: &[u8]) -> [u8; 40] {
    let digest = sha1_smol::Sha1::from(body).digest().bytes();
    let mut out = [0u8; 40];
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in digest.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 15)];
    }
    out
}

impl Scripts {
    /// A fresh interpreter with an empty cache; `limit_ms` is `lua-time-limit`. The
    /// interpreter's memory is capped at `memory_limit` bytes (`lua-memory-limit`; 0: none):
    /// an allocation beyond it is a script error ("not enough memory"), never the process's.
    pub fn new(limit_ms: u64, memory_limit: usize) -> Result<Scripts, mlua::Error> {
        Self::with(limit_ms, memory_limit, false)
    }

    /// An interpreter for scripts that every replica runs at the same place in a log, which
    /// must give every replica the same result: `math.random` is a generator of its own,
    /// seeded alike before each script; nothing reads a clock; the time a script may run is
    /// bounded by a count of instructions ([`Scripts::run_replicated`]), not by time, and
    /// SCRIPT KILL does not reach it.
    pub fn new_replicated(memory_limit: usize) -> Result<Scripts, mlua::Error> {
        Self::with(0, memory_limit, true)
    }

    fn with(limit_ms: u64, memory_limit: usize, replicated: bool) -> Result<Scripts, mlua::Error> {
        let running = Arc::new(Running {
            replicated,
            ..Running::default()
        });
        running.limit_ms.store(limit_ms, Ordering::Relaxed);
        let epoch = Instant::now();
        let vm = Mutex::new(Vm::new(Arc::clone(&running), epoch, memory_limit)?);
        Ok(Scripts {
            memory_limit,
            vm,
            libraries: Mutex::default(),
            running,
            epoch,
            cached: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The interpreter, for a command from outside a script (SCRIPT LOAD, FUNCTION LOAD...):
    /// it waits while a script runs, as every client waits for a script in Redis, and is
    /// refused with [`BUSY`] once that script runs past `lua-time-limit`, so the caller's
    /// thread is free again to serve SCRIPT KILL.
    pub(crate) fn lock_vm(&self) -> Result<parking_lot::MutexGuard<'_, Vm>, Reply> {
        loop {
            if let Some(vm) = self.vm.try_lock_for(VM_WAIT_STEP) {
                return Ok(vm);
            }
            if self.busy() {
                return Err(self.busy_reply());
            }
        }
    }

    /// How many scripts the cache holds (INFO's `number_of_cached_scripts`).
    pub fn cached_scripts(&self) -> usize {
        self.cached.load(Ordering::Relaxed)
    }

    /// Sets `lua-time-limit`, milliseconds.
    pub fn set_time_limit_ms(&self, ms: u64) {
        self.running.limit_ms.store(ms, Ordering::Relaxed);
    }

    /// Whether a script has run past `lua-time-limit` (other commands get BUSY).
    pub fn busy(&self) -> bool {
        self.running.busy.load(Ordering::Acquire)
    }

    /// The reply to a command refused while a script is busy.
    pub fn busy_reply(&self) -> Reply {
        Reply::error(if self.running.function.load(Ordering::Acquire) {
            BUSY_FUNCTION
        } else {
            BUSY
        })
    }

    /// Whether an EVAL script (not a function) runs now.
    pub fn eval_running(&self) -> bool {
        self.running.active.load(Ordering::Acquire)
            && !self.running.function.load(Ordering::Acquire)
    }

    /// The script running now: its name, the command that runs it, and for how long it has
    /// run, in milliseconds (FUNCTION STATS).
    pub fn running(&self) -> Option<(String, Vec<Bytes>, u64)> {
        let r = &self.running;
        if !r.active.load(Ordering::Acquire) {
            return None;
        }
        let (name, command) = r.current.lock().clone();
        let now = self.epoch.elapsed().as_millis() as u64;
        Some((
            name,
            command,
            now.saturating_sub(r.started_ms.load(Ordering::Relaxed)),
        ))
    }

    /// SHUTDOWN NOSAVE: stops the running script, if any, even one that has written, and
    /// has its writes dropped. Returns whether a script was running.
    pub fn abort(&self) -> bool {
        if !self.running.active.load(Ordering::Acquire) {
            return false;
        }
        self.running.abort.store(true, Ordering::Release);
        true
    }

    /// SCRIPT KILL (`function` false) or FUNCTION KILL: asks the running script to stop,
    /// unless it has written or is not of the kind named.
    pub fn kill(&self, function: bool) -> Result<(), KillError> {
        if !self.running.active.load(Ordering::Acquire) {
            return Err(KillError::NotBusy);
        }
        if self.running.function.load(Ordering::Acquire) != function {
            return Err(KillError::OtherKind);
        }
        if self.running.wrote.load(Ordering::Acquire) {
            return Err(KillError::Unkillable);
        }
        self.running.kill.store(true, Ordering::Release);
        Ok(())
    }

    /// SCRIPT LOAD: compiles and caches `body`; its SHA1, or the compile error's reply.
    pub fn load(&self, body: &[u8]) -> Result<[u8; 40], Reply> {
        let mut vm = self.lock_vm()?;
        let sha = sha1_hex(body);
        vm.compile(&sha, body)?;
        self.cached.store(vm.cache.len(), Ordering::Relaxed);
        Ok(sha)
    }

    /// The body of the cached script `sha` (any case), if cached.
    pub fn source(&self, sha: &[u8]) -> Result<Option<Bytes>, Reply> {
        let Some(s) = lower_sha(sha) else {
            return Ok(None);
        };
        Ok(self
            .lock_vm()?
            .cache
            .get(&s)
            .map(|(_, _, body)| body.clone()))
    }

    /// The flags a script declares in its shebang, without running it: `None` for a script
    /// without one (Redis's compatibility mode), an unknown SHA1, or a shebang in error (the
    /// run reports it).
    pub fn declared_flags(&self, source: Source<'_>) -> Option<ScriptFlags> {
        match source {
            Source::Body(body) if body.starts_with(b"#!") => shebang(body).ok(),
            Source::Body(_) => None,
            Source::Sha(sha) => {
                let s = lower_sha(sha)?;
                // Busy: unknown here; the run checks the flags again.
                self.lock_vm()
                    .ok()?
                    .cache
                    .get(&s)
                    .and_then(|(_, flags, _)| *flags)
            }
        }
    }

    /// SCRIPT EXISTS for one SHA1 (any case).
    pub fn exists(&self, sha: &[u8]) -> Result<bool, Reply> {
        let Some(s) = lower_sha(sha) else {
            return Ok(false);
        };
        Ok(self.lock_vm()?.cache.contains_key(&s))
    }

    /// SCRIPT FLUSH: forgets every cached script (and starts a fresh interpreter, so nothing
    /// a script left in the libraries' tables survives).
    pub fn flush(&self) -> Result<(), Reply> {
        let mut fresh =
            Vm::new(Arc::clone(&self.running), self.epoch, self.memory_limit).map_err(|e| {
                Reply::Error(Bytes::from(format!(
                    "ERR cannot start a fresh Lua interpreter: {e}"
                )))
            })?;
        self.reinstall(&mut fresh);
        *self.lock_vm()? = fresh;
        self.cached.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Runs a script with `keys` and `argv` (the host refuses what the script may not call,
    /// such as writes from EVAL_RO). Returns the script's reply, or the error reply Redis
    /// gives.
    pub fn run(
        &self,
        source: Source<'_>,
        keys: &[Bytes],
        argv: &[Bytes],
        host: &mut dyn Host,
    ) -> Reply {
        let mut vm = self.vm.lock();
        let (sha, (f, flags)) = match source {
            Source::Body(body) => {
                let sha = sha1_hex(body);
                match vm.compile(&sha, body) {
                    Ok(f) => {
                        self.cached.store(vm.cache.len(), Ordering::Relaxed);
                        (sha, f)
                    }
                    Err(r) => return r,
                }
            }
            Source::Sha(s) => match lower_sha(s).and_then(|s| Some((s, vm.cache.get(&s)?.clone())))
            {
                Some((sha, (f, flags, _))) => (sha, (f, flags)),
                None => return Reply::error("NOSCRIPT No matching script. Please use EVAL."),
            },
        };
        if let Some(flags) = flags {
            flags.apply(host);
        }
        let label = String::from_utf8_lossy(&sha).into_owned();
        self.run_in(&mut vm, &label, "user_script", f, false, keys, argv, host)
    }

    /// Runs `body` in a replicated interpreter ([`Scripts::new_replicated`]) with at most
    /// `max_instructions` Lua instructions (rounded up to the hook's granularity; 0: no
    /// limit): past it the script stops with an error, at the same instruction on every
    /// replica. The random generator is seeded alike before it.
    pub fn run_replicated(
        &self,
        body: &[u8],
        keys: &[Bytes],
        argv: &[Bytes],
        host: &mut dyn Host,
        max_instructions: u64,
    ) -> Reply {
        {
            let mut vm = self.vm.lock();
            if vm.cache.len() >= REPLICATED_CACHE_MAX {
                vm.cache.clear();
            }
            if let Err(r) = self.start_replicated(&vm, max_instructions) {
                return r;
            }
        }
        self.run(Source::Body(body), keys, argv, host)
    }

    /// Readies a replicated interpreter for a run of at most `max_instructions`: the budget,
    /// the hook's count started again (every replica's first tick falls at the same
    /// instruction of this run, whatever ran before) and the random generator reseeded.
    pub(crate) fn start_replicated(&self, vm: &Vm, max_instructions: u64) -> Result<(), Reply> {
        let r = &self.running;
        r.budget_ticks.store(
            max_instructions.div_ceil(u64::from(HOOK_EVERY)),
            Ordering::Relaxed,
        );
        r.ticks.store(0, Ordering::Relaxed);
        install_hook(&vm.lua, Arc::clone(r), self.epoch);
        if let Some(reseed) = &vm.reseed {
            reseed.call::<()>(()).map_err(|e| {
                Reply::Error(Bytes::from(format!(
                    "ERR internal error seeding the script: {e}"
                )))
            })?;
        }
        Ok(())
    }

    /// Runs `f` as the running script: SCRIPT KILL and the time limit see it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_in(
        &self,
        vm: &mut Vm,
        label: &str,
        chunk: &str,
        f: Function,
        as_function: bool,
        keys: &[Bytes],
        argv: &[Bytes],
        host: &mut dyn Host,
    ) -> Reply {
        let r = &self.running;
        r.kill.store(false, Ordering::Relaxed);
        r.abort.store(false, Ordering::Relaxed);
        r.wrote.store(false, Ordering::Relaxed);
        r.busy.store(false, Ordering::Relaxed);
        r.function.store(as_function, Ordering::Relaxed);
        {
            let mut current = r.current.lock();
            current.0.clear();
            if !as_function {
                current.0.push_str("f_");
            }
            current.0.push_str(label);
            current.1.clear();
            current.1.extend_from_slice(host.command());
        }
        r.started_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        r.active.store(true, Ordering::Release);
        let (reply, counted) = vm
            .run(label, chunk, f, as_function, keys, argv, host, r)
            .unwrap_or_else(|e| {
                let text = format!("ERR internal error running script: {e}");
                (Reply::Error(Bytes::from(text)), false)
            });
        if counted {
            host.error_already_counted();
        }
        if r.abort.load(Ordering::Acquire) {
            host.abandon();
        }
        // A stop asked of this script ends with it.
        r.kill.store(false, Ordering::Relaxed);
        r.abort.store(false, Ordering::Relaxed);
        if r.stopping.swap(false, Ordering::AcqRel) {
            install_hook(&vm.lua, Arc::clone(r), self.epoch);
        }
        r.active.store(false, Ordering::Release);
        r.busy.store(false, Ordering::Release);
        reply
    }
}

/// Checks, every [`HOOK_EVERY`] instructions, SCRIPT KILL and the time limit; or, in a
/// replicated interpreter, the run's instruction budget alone.
fn install_hook(lua: &Lua, running: Arc<Running>, epoch: Instant) {
    install_hook_on(
        lua,
        running,
        epoch,
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
    );
}

/// [`install_hook`] on `triggers`. A stopped script's error is raised again on every line,
/// so a `pcall` cannot swallow it and go on (as Redis does).
fn install_hook_on(lua: &Lua, running: Arc<Running>, epoch: Instant, triggers: HookTriggers) {
    let on = Arc::clone(&running);
    lua.set_hook(triggers, move |lua, _| {
        let running = &on;
        let deadline = running.load_deadline_ms.load(Ordering::Relaxed);
        if deadline != 0 && epoch.elapsed().as_millis() as u64 >= deadline {
            // Raised again on every line, as a stopped script's error is.
            if !running.stopping.swap(true, Ordering::AcqRel) {
                install_hook_on(
                    lua,
                    Arc::clone(running),
                    epoch,
                    HookTriggers::new().every_line(),
                );
            }
            return Err(mlua::Error::runtime("ERR FUNCTION LOAD timeout"));
        }
        if running.replicated {
            let ticks = running.ticks.fetch_add(1, Ordering::Relaxed) + 1;
            let budget = running.budget_ticks.load(Ordering::Relaxed);
            if budget != 0 && ticks >= budget {
                return Err(mlua::Error::runtime(
                    "ERR Script exceeded the instruction budget of a replicated script",
                ));
            }
            return Ok(VmState::Continue);
        }
        if !running.active.load(Ordering::Acquire) {
            // A library loading: only the load timeout above bounds it (a kill asked of the
            // script before it is not for this code).
            return Ok(VmState::Continue);
        }
        let stop = if running.abort.load(Ordering::Acquire) {
            Some("ERR Script killed by SHUTDOWN NOSAVE")
        } else if running.kill.load(Ordering::Acquire) {
            Some("ERR Script killed by user with SCRIPT KILL...")
        } else {
            None
        };
        if let Some(why) = stop {
            if !running.stopping.swap(true, Ordering::AcqRel) {
                install_hook_on(
                    lua,
                    Arc::clone(running),
                    epoch,
                    HookTriggers::new().every_line(),
                );
            }
            return Err(mlua::Error::runtime(why));
        }
        let limit = running.limit_ms.load(Ordering::Relaxed);
        let now = epoch.elapsed().as_millis() as u64;
        let started = running.started_ms.load(Ordering::Relaxed);
        if limit != 0 && now.saturating_sub(started) >= limit {
            running.busy.store(true, Ordering::Release);
        }
        Ok(VmState::Continue)
    });
}

/// A script's shebang line (`#!lua flags=no-writes,...`): the flags it declares, or Redis's
/// error for what it may not say.
fn shebang(body: &[u8]) -> Result<ScriptFlags, Reply> {
    let line = body.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line[2..].split(' ').filter(|p| !p.is_empty());
    if parts.next() != Some("lua") {
        return Err(Reply::Error(Bytes::from(format!(
            "ERR Unexpected engine in script shebang: {line}"
        ))));
    }
    let mut declared = ScriptFlags::default();
    for p in parts {
        let Some(flags) = p.strip_prefix("flags=") else {
            return Err(Reply::Error(Bytes::from(format!(
                "ERR Unknown lua shebang option: {p}"
            ))));
        };
        for f in flags.split(',').filter(|f| !f.is_empty()) {
            match f {
                "no-writes" => declared.no_writes = true,
                "allow-oom" => declared.allow_oom = true,
                "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                other => {
                    return Err(Reply::Error(Bytes::from(format!(
                        "ERR Unexpected flag in script shebang: {other}"
                    ))))
                }
            }
        }
    }
    Ok(declared)
}

fn lower_sha(s: &[u8]) -> Option<[u8; 40]> {
    let s: [u8; 40] = s.try_into().ok()?;
    Some(s.map(|b| b.to_ascii_lowercase()))
}

/// `luaL_argerror`'s error for argument `n` of the running function, named as its caller
/// called it (`?` when it has no name there, as through `pcall`).
pub(crate) fn arg_error(lua: &Lua, n: usize, text: &str) -> mlua::Error {
    let name = lua
        .inspect_stack(0)
        .and_then(|d| d.names().name.map(|n| n.into_owned()))
        .unwrap_or_else(|| "?".to_string());
    mlua::Error::runtime(format!("bad argument #{n} to '{name}' ({text})"))
}

/// A number as `redis.call` passes it: integers without a fraction, others as Lua prints
/// them (`%.14g`).
fn number_arg(n: f64) -> Bytes {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        Bytes::from((n as i64).to_string())
    } else {
        Bytes::from(lua_number(n))
    }
}

/// A number as Lua 5.1's `tostring` writes it (C's `%.14g`).
pub(crate) fn lua_number(n: f64) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() {
            "-nan".into()
        } else {
            "nan".into()
        };
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if n == 0.0 {
        return if n.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let exp = n.abs().log10().floor() as i32;
    if !(-5..14).contains(&exp) {
        // Scientific: 14 significant digits, trailing zeros dropped, exponent of two digits
        // at least.
        let s = format!("{:.13e}", n);
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", e.abs())
    } else {
        let decimals = (13 - exp).max(0) as usize;
        let s = format!("{:.*}", decimals, n);
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

impl Vm {
    fn new(running: Arc<Running>, epoch: Instant, memory_limit: usize) -> Result<Vm, mlua::Error> {
        // SAFETY: `debug` is what makes this constructor unsafe (it can break the sandbox).
        // It is taken out of the globals below, before any script is compiled, and only the
        // error handler keeps a reference to it.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::default(),
            )
        };
        if memory_limit != 0 {
            lua.set_memory_limit(memory_limit)?;
        }
        let globals = lua.globals();
        // The debug library only serves the error handler below; scripts do not get it.
        let debug: Table = globals.raw_get("debug")?;
        for hidden in ["dofile", "loadfile", "debug", "print"] {
            globals.raw_set(hidden, Value::Nil)?;
        }
        let runner: Function = lua
            .load(
                r#"
                local dbg, xpcall, type = ...
                local function handler(err)
                    -- Where in the script: the nearest frame of its chunk (past redis.call
                    -- and the environment's own functions).
                    local level, i = 2, dbg.getinfo(2, "Sl")
                    while i and i.source ~= "@user_script" and i.source ~= "@user_function" do
                        level = level + 1
                        i = dbg.getinfo(level, "Sl")
                    end
                    local out = {}
                    if type(err) == "table" then
                        out.err = err.err
                        out.counted = err.ignore_error_stats_update == true
                    elseif type(err) == "string" then out.err = "ERR " .. err
                    else out.raw = err end
                    if i then out.line = i.currentline end
                    return out
                end
                return function(f, keys, args)
                    if keys == nil then return xpcall(f, handler) end
                    return xpcall(function() return f(keys, args) end, handler)
                end
                "#,
            )
            .set_name("=rialto")
            .call((
                debug,
                globals.raw_get::<Function>("xpcall")?,
                globals.raw_get::<Function>("type")?,
            ))?;
        // Precompiled chunks are never loaded: Lua 5.1 does not verify bytecode, and a crafted
        // chunk can corrupt memory. `loadstring` gives nil for one (as Redis's), and `load`
        // goes through it.
        lua.load(
            r#"
            local orig, type, byte, concat = loadstring, type, string.byte, table.concat
            loadstring = function(s, name)
                if type(s) == "string" and byte(s, 1) == 27 then
                    return nil, "binary chunks are not loaded"
                end
                return orig(s, name)
            end
            load = function(f, name)
                local parts = {}
                while true do
                    local p = f()
                    if p == nil or p == "" then break end
                    parts[#parts + 1] = p
                end
                return loadstring(concat(parts), name)
            end
            "#,
        )
        .set_name("=rialto")
        .exec()?;
        // Lua 5.1's `unpack` trusts its range: a huge one overflows the C stack check (Redis
        // patches its copy the same way). Too many results is an error, as in Redis.
        lua.load(
            r#"
            local orig, type = unpack, type
            unpack = function(t, ...)
                local i, j = ...
                if type(i) == "number" and type(j) == "number" then
                    if i > j then return end
                    if j - i >= 7999 then error("too many results to unpack", 2) end
                end
                -- Only the arguments given: each one takes a slot of the C stack's 8000.
                return orig(t, ...)
            end
            "#,
        )
        .set_name("=rialto")
        .exec()?;
        // A replicated interpreter's `math.random`: Lua 5.1's formulas over the minimal
        // standard generator (exact in doubles), instead of the C library's process-wide
        // `rand`, and reseeded before each script.
        let reseed = if running.replicated {
            let math: Table = globals.raw_get("math")?;
            Some(
                lua.load(
                    r#"
                    local math = ...
                    local floor, tonumber, error = math.floor, tonumber, error
                    local state = 1
                    local function step()
                        state = (state * 16807) % 2147483647
                        return (state - 1) / 2147483646
                    end
                    math.randomseed = function(seed)
                        state = floor(tonumber(seed) or 0) % 2147483646 + 1
                    end
                    math.random = function(m, n)
                        local r = step()
                        if m == nil then return r end
                        if n == nil then
                            if m < 1 then error("bad argument #1 to 'random' (interval is empty)", 2) end
                            return floor(r * m) + 1
                        end
                        if m > n then error("bad argument #2 to 'random' (interval is empty)", 2) end
                        return floor(r * (n - m + 1)) + m
                    end
                    return function() state = 1 end
                    "#,
                )
                .set_name("=rialto")
                .call::<Function>(math)?,
            )
        } else {
            None
        };
        let redis = crate::api::redis_table(&lua)?;
        bind_server_functions(&lua, &redis)?;
        globals.raw_set("redis", redis.clone())?;
        globals.raw_set("bit", crate::bit::table(&lua)?)?;
        globals.raw_set("cjson", crate::cjson::table(&lua)?)?;
        globals.raw_set("cmsgpack", crate::cmsgpack::table(&lua)?)?;
        globals.raw_set("struct", crate::lua_struct::table(&lua)?)?;
        // What `pcall` catches from a function of ours is what Redis's C functions raise: the
        // error's text (`redis.call`'s with its code), not the binding's own error value,
        // which would reach the script as an opaque userdata.
        lua.load(
            r#"
            local real, pcall, settle_error = ...
            local function settle(ok, ...)
                if ok then return ok, ... end
                return false, settle_error((...))
            end
            real.pcall = function(...) return settle(pcall(...)) end
            "#,
        )
        .set_name("=rialto")
        .call::<()>((
            globals.clone(),
            globals.raw_get::<Function>("pcall")?,
            lua.create_function(|lua, v: Value| settle_error(lua, v))?,
        ))?;
        // The libraries are read-only too: a script cannot replace `redis.call` or
        // `string.format` for the scripts after it (Redis 7.0.15's texts).
        lua.load(
            r#"
            local real, setmetatable, rawget, rawset, error = ...
            for _, name in ipairs({"redis", "cjson", "cmsgpack", "struct", "bit", "string", "table", "math"}) do
                rawset(real, name, setmetatable({}, {
                    __index = rawget(real, name),
                    __newindex = function() error("Attempt to modify a readonly table", 2) end,
                    __metatable = false,
                }))
            end
            "#,
        )
        .set_name("=rialto")
        .call::<()>((
            globals.clone(),
            globals.raw_get::<Function>("setmetatable")?,
            globals.raw_get::<Function>("rawget")?,
            globals.raw_get::<Function>("rawset")?,
            globals.raw_get::<Function>("error")?,
        ))?;
        // The environment of every chunk: reads fall through to the globals (an unknown name
        // is an error), writes are refused.
        let (env, env_meta) = strict_view(&lua, &globals, None)?;
        globals.raw_set("_G", env.clone())?;
        // The environment of function libraries: the same, except that the globals read are
        // those `fstate.g` names now — the library API alone while a library loads, the
        // globals while a function runs.
        let fstate = lua.create_table()?;
        fstate.raw_set("g", globals.clone())?;
        let (fenv, fenv_meta) = strict_view(&lua, &fstate, Some("g"))?;
        let load_env = crate::functions::load_env(&lua, &redis)?;
        // What the metatables scripts can reach show, and `setmetatable` on a protected
        // table, read as Redis's read-only tables: `getmetatable(_G)` and `getmetatable('')`
        // give read-only views (their `__index` is the read-only globals, or `string`), so
        // a script can neither swap the globals' lookup nor the strings' methods for the
        // scripts after it, and `setmetatable(_G, ...)` is "Attempt to modify a readonly
        // table".
        lua.load(
            r#"
            local real, env, fenv, setmetatable, getmetatable, rawget, rawset, error, pairs = ...
            local protected = {}
            local function refuse() error("Attempt to modify a readonly table", 2) end
            local function view(fields)
                local v = setmetatable({}, {
                    __index = fields, __newindex = refuse, __metatable = false,
                })
                protected[v] = true
                return v
            end
            for _, e in pairs({env, fenv}) do
                protected[e] = true
            end
            for _, name in pairs({"redis", "cjson", "cmsgpack", "struct", "bit", "string", "table", "math"}) do
                protected[rawget(real, name)] = true
            end
            rawset(getmetatable(""), "__metatable", view({__index = rawget(real, "string")}))
            local orig = setmetatable
            rawset(real, "setmetatable", function(t, mt)
                -- Raised as Redis's C code raises it: without a position.
                if protected[t] then error("Attempt to modify a readonly table", 0) end
                return orig(t, mt)
            end)
            return function(e, mt) rawset(mt, "__metatable", view({__index = e})) end
            "#,
        )
        .set_name("=rialto")
        .call::<Function>((
            globals.clone(),
            env.clone(),
            fenv.clone(),
            globals.raw_get::<Function>("setmetatable")?,
            globals.raw_get::<Function>("getmetatable")?,
            globals.raw_get::<Function>("rawget")?,
            globals.raw_get::<Function>("rawset")?,
            globals.raw_get::<Function>("error")?,
            globals.raw_get::<Function>("pairs")?,
        ))
        .and_then(|show| {
            show.call::<()>((env.clone(), env_meta))?;
            show.call::<()>((fenv.clone(), fenv_meta))
        })?;
        install_hook(&lua, Arc::clone(&running), epoch);
        Ok(Vm {
            lua,
            cache: HashMap::new(),
            reseed,
            env,
            fenv,
            fstate,
            load_env,
            functions: HashMap::new(),
            globals,
            runner,
            running,
            epoch,
        })
    }

    /// A library's top-level code starts: stopped after [`crate::functions`]'s load timeout
    /// if `timed`.
    pub(crate) fn start_load(&self, timed: bool, timeout_ms: u64) {
        let deadline = if timed {
            self.epoch.elapsed().as_millis() as u64 + timeout_ms
        } else {
            0
        };
        self.running
            .load_deadline_ms
            .store(deadline, Ordering::Relaxed);
    }

    /// A library's top-level code has ended: the hook is the usual one again.
    pub(crate) fn end_load(&self) {
        self.running.load_deadline_ms.store(0, Ordering::Relaxed);
        if self.running.stopping.swap(false, Ordering::AcqRel) {
            install_hook(&self.lua, Arc::clone(&self.running), self.epoch);
        }
    }

    fn compile(
        &mut self,
        sha: &[u8; 40],
        body: &[u8],
    ) -> Result<(Function, Option<ScriptFlags>), Reply> {
        if let Some((f, flags, _)) = self.cache.get(sha) {
            return Ok((f.clone(), *flags));
        }
        let (flags, code) = match body.strip_prefix(b"#!") {
            Some(_) => {
                let flags = shebang(body)?;
                // The shebang becomes a comment: line numbers stay those of the body.
                let mut code = body.to_vec();
                code[..2].copy_from_slice(b"--");
                (Some(flags), std::borrow::Cow::Owned(code))
            }
            None => (None, std::borrow::Cow::Borrowed(body)),
        };
        let f = self
            .lua
            .load(&code[..])
            .set_mode(mlua::ChunkMode::Text)
            .set_name("@user_script")
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| {
                Reply::Error(Bytes::from(format!(
                    "ERR Error compiling script (new function): {}",
                    one_line(&lua_message(&e))
                )))
            })?;
        self.cache
            .insert(*sha, (f.clone(), flags, Bytes::copy_from_slice(body)));
        Ok((f, flags))
    }

    /// Runs `f` — a script's chunk (`args` `None`: KEYS and ARGV are globals) or a library's
    /// function (called with the key and argument tables) — naming it `label` in errors.
    /// Returns the reply, and whether it is an error reply one of the script's calls
    /// answered (already counted by the host).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &mut self,
        label: &str,
        chunk: &str,
        f: Function,
        as_function: bool,
        keys: &[Bytes],
        argv: &[Bytes],
        host: &mut dyn Host,
        running: &Running,
    ) -> mlua::Result<(Reply, bool)> {
        let lua = &self.lua;
        let (keys_t, argv_t) = key_and_arg_tables(lua, keys, argv)?;
        if as_function {
            self.fstate.raw_set("g", self.globals.clone())?;
        }
        if !as_function {
            self.globals.raw_set("KEYS", keys_t.clone())?;
            self.globals.raw_set("ARGV", argv_t.clone())?;
        }
        // `redis.call` and its siblings reach the host through the run's context, set for
        // this run only (the functions themselves are made once, in `Vm::new`).
        // SAFETY: the pointer is only dereferenced by those functions, which Lua calls only
        // while `runner` below runs; the context is removed before this function returns, so
        // the pointer never outlives the borrow of `host`.
        let host: *mut (dyn Host + '_) = host;
        let host: *mut (dyn Host + 'static) = unsafe { std::mem::transmute(host) };
        lua.set_app_data(RunCtx {
            host,
            resp: 2,
            running: running as *const Running,
        });
        let outcome = if as_function {
            self.runner.call::<MultiValue>((f, keys_t, argv_t))
        } else {
            self.runner.call::<MultiValue>(f)
        };
        // The protocol the script ended in (`redis.setresp`) decides how its result converts.
        let resp = lua.app_data_ref::<RunCtx>().map_or(2, |c| c.resp);
        lua.remove_app_data::<RunCtx>();
        let outcome = outcome?;
        let mut values = outcome.into_iter();
        let ok = matches!(values.next(), Some(Value::Boolean(true)));
        let value = values.next().unwrap_or(Value::Nil);
        let counted = call_answered(&value, ok);
        if ok {
            return Ok((lua_to_reply_in(&value, resp), counted));
        }
        Ok((script_error(label, chunk, &value), counted))
    }
}

/// The KEYS and ARGV tables of a run. Built in one protected call: with a memory limit set,
/// each string or table made through the safe API would pay for a protected call of its own.
fn key_and_arg_tables(lua: &Lua, keys: &[Bytes], argv: &[Bytes]) -> mlua::Result<(Table, Table)> {
    fn push_sequence(state: *mut mlua::ffi::lua_State, items: &[Bytes]) {
        // SAFETY: called inside the protected call below, whose stack has room (checked
        // there); a memory error longjmps out of it, and nothing here needs dropping.
        unsafe {
            mlua::ffi::lua_createtable(state, items.len().min(i32::MAX as usize) as i32, 0);
            for (i, item) in items.iter().enumerate() {
                mlua::ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
                mlua::ffi::lua_rawseti(state, -2, (i + 1) as mlua::ffi::lua_Integer);
            }
        }
    }
    // SAFETY: the closure only pushes two tables (three stack slots at most at a time) and
    // holds no value with a destructor.
    unsafe {
        lua.exec_raw::<(Table, Table)>((), |state| {
            push_sequence(state, keys);
            push_sequence(state, argv);
        })
    }
}

/// What the `redis` functions that reach the server use during one run (Lua app data).
struct RunCtx {
    /// The run's host (see the SAFETY note in `Vm::run`).
    host: *mut (dyn Host + 'static),
    /// The RESP version replies reach the script in (`redis.setresp`).
    resp: u8,
    /// The running script's state (`wrote`).
    running: *const Running,
}

// SAFETY: a `RunCtx` lives only for one run, on the thread that runs the script (the `send`
// feature of mlua requires app data to be `Send`; it never crosses threads).
unsafe impl Send for RunCtx {}

/// The run's host and protocol; an error outside a run.
fn run_ctx(lua: &Lua) -> mlua::Result<(*mut (dyn Host + 'static), u8, *const Running)> {
    let ctx = lua
        .app_data_ref::<RunCtx>()
        .ok_or_else(|| mlua::Error::runtime("this function runs only inside a script"))?;
    Ok((ctx.host, ctx.resp, ctx.running))
}

/// `redis.acl_check_cmd(command, args...)`: whether the script's user may run it.
fn acl_check_cmd(lua: &Lua, args: MultiValue) -> mlua::Result<bool> {
    let (host, _, _) = run_ctx(lua)?;
    let cmd = match cmd_args(&args) {
        Ok(cmd) => cmd,
        Err(text) => return Err(mlua::Error::external(CallError(text, false))),
    };
    // SAFETY: see `Vm::run`.
    match unsafe { (*host).acl_check(&cmd) } {
        Some(allowed) => Ok(allowed),
        None => Err(mlua::Error::external(CallError(
            "ERR Invalid command passed to redis.acl_check_cmd()".into(),
            false,
        ))),
    }
}

/// A redis lib call's arguments as a command, or Redis's error for them.
fn cmd_args(args: &MultiValue) -> Result<Vec<Bytes>, String> {
    let mut cmd = Vec::with_capacity(args.len());
    for a in args.iter() {
        match a {
            Value::String(s) => cmd.push(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(n) => cmd.push(Bytes::from(n.to_string())),
            Value::Number(n) => cmd.push(number_arg(*n)),
            _ => {
                return Err(
                    "ERR Lua redis lib command arguments must be strings or integers".into(),
                )
            }
        }
    }
    if cmd.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call".into());
    }
    Ok(cmd)
}

/// One command of `redis.call`/`redis.pcall`: `Ok(reply as Lua)` or `Err((error text,
/// whether the command answered it))` (else the call's arguments were refused before it).
fn run_cmd(lua: &Lua, args: MultiValue) -> mlua::Result<Result<Value, (String, bool)>> {
    let (host, resp, running) = run_ctx(lua)?;
    let cmd = match cmd_args(&args) {
        Ok(cmd) => cmd,
        Err(text) => return Ok(Err((text, false))),
    };
    // SAFETY: see `Vm::run`: valid for the whole run, and only this call uses it now.
    let (reply, wrote) = unsafe { (*host).call(cmd) };
    if wrote {
        // SAFETY: `Running` outlives every run (the `Scripts` that owns it runs them).
        unsafe { (*running).wrote.store(true, Ordering::Release) };
    }
    match reply {
        Reply::Error(e) => Ok(Err((String::from_utf8_lossy(&e).into_owned(), true))),
        r => Ok(Ok(reply_to_lua(lua, &r, resp)?)),
    }
}

/// `redis.call`, `redis.pcall`, `redis.setresp` and `redis.log`, made once.
fn bind_server_functions(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set(
        "call",
        lua.create_function(|lua, args: MultiValue| match run_cmd(lua, args)? {
            Ok(v) => Ok(v),
            Err((text, counted)) => Err(mlua::Error::external(CallError(text, counted))),
        })?,
    )?;
    redis.raw_set(
        "pcall",
        lua.create_function(|lua, args: MultiValue| match run_cmd(lua, args)? {
            Ok(v) => Ok(v),
            Err((text, counted)) => err_table(lua, &text, counted),
        })?,
    )?;
    redis.raw_set(
        "acl_check_cmd",
        lua.create_function(|lua, args: MultiValue| acl_check_cmd(lua, args))?,
    )?;
    redis.raw_set(
        "setresp",
        lua.create_function(|lua, v: Value| {
            let resp = match v {
                Value::Integer(n @ (2 | 3)) => n as u8,
                Value::Number(n) if n == 2.0 || n == 3.0 => n as u8,
                _ => return Err(mlua::Error::runtime("RESP version must be 2 or 3.")),
            };
            let mut ctx = lua
                .app_data_mut::<RunCtx>()
                .ok_or_else(|| mlua::Error::runtime("this function runs only inside a script"))?;
            ctx.resp = resp;
            Ok(())
        })?,
    )?;
    redis.raw_set(
        "log",
        lua.create_function(|lua, args: MultiValue| {
            let (level, message) = log_args(&args)?;
            let (host, _, _) = run_ctx(lua)?;
            // SAFETY: see `Vm::run`.
            unsafe { (*host).log(level, &message) };
            Ok(())
        })?,
    )
}

/// `redis.log(level, message...)`'s level and message, or Redis's error for its arguments.
pub(crate) fn log_args(args: &MultiValue) -> mlua::Result<(u8, String)> {
    let mut it = args.iter();
    let level = match it.next() {
        Some(Value::Integer(n)) if (0..=3).contains(n) => *n as u8,
        Some(Value::Number(n)) if (0.0..=3.0).contains(n) => *n as u8,
        Some(_) => return Err(mlua::Error::runtime("Invalid debug level.")),
        None => {
            return Err(mlua::Error::runtime(
                "redis.log() requires two arguments or more.",
            ))
        }
    };
    let parts: Vec<String> = it
        .map(|v| match v {
            Value::String(s) => s.to_string_lossy(),
            Value::Integer(n) => n.to_string(),
            Value::Number(n) => n.to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    if parts.is_empty() {
        return Err(mlua::Error::runtime(
            "redis.log() requires two arguments or more.",
        ));
    }
    Ok((level, parts.join(" ")))
}

/// An error reply `redis.call` raises: it stops the script, and the script's reply is it.
/// With `true`, the command answered it (the host counted it as an error reply).
#[derive(Debug)]
pub(crate) struct CallError(pub(crate) String, pub(crate) bool);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CallError {}

/// A read-only view of `source` (of `source[field]`, looked up at every access, when `field`
/// is given) and its metatable: reading a name it lacks is an error, as an unknown global
/// is in Redis's scripts, and every write is refused, both with Redis 7.0's texts.
pub(crate) fn strict_view(
    lua: &Lua,
    source: &Table,
    field: Option<&str>,
) -> mlua::Result<(Table, Table)> {
    lua.load(
        r#"
        local source, field, setmetatable, rawget, error, tostring = ...
        local meta = {
            __index = function(_, k)
                local t = source
                if field then t = rawget(source, field) end
                local v = rawget(t, k)
                if v == nil then
                    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
                end
                return v
            end,
            __newindex = function() error("Attempt to modify a readonly table", 2) end,
            __metatable = false,
        }
        return setmetatable({}, meta), meta
        "#,
    )
    .set_name("=rialto")
    .call((
        source.clone(),
        field,
        lua.globals().raw_get::<Function>("setmetatable")?,
        lua.globals().raw_get::<Function>("rawget")?,
        lua.globals().raw_get::<Function>("error")?,
        lua.globals().raw_get::<Function>("tostring")?,
    ))
}

/// An error value a `pcall` caught, as Redis's C functions raise it (see `Vm::new`).
fn settle_error(lua: &Lua, v: Value) -> mlua::Result<Value> {
    let Value::Error(e) = v else {
        return Ok(v);
    };
    if let Some(CallError(text, _)) = call_error(&e) {
        return Ok(Value::String(lua.create_string(text)?));
    }
    let mut cause = &*e;
    while let mlua::Error::CallbackError { cause: inner, .. } = cause {
        cause = inner;
    }
    let text = match cause {
        mlua::Error::RuntimeError(m) => m.clone(),
        other => other.to_string(),
    };
    Ok(Value::String(lua.create_string(text)?))
}

/// The error reply `redis.call` raised, if that is what `e` is.
fn call_error(e: &mlua::Error) -> Option<&CallError> {
    match e {
        mlua::Error::CallbackError { cause, .. } => call_error(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<CallError>(),
        _ => None,
    }
}

/// `redis.pcall`'s error table; one a command answered carries Redis's
/// `ignore_error_stats_update` mark, so that returning it does not count the error twice.
fn err_table(lua: &Lua, text: &str, counted: bool) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", text)?;
    if counted {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(Value::Table(t))
}

/// Whether a script's result (`ok`: returned, else the error handler's table) is an error
/// reply one of its calls answered: a `redis.pcall` table returned or raised, or the
/// error `redis.call` raised.
fn call_answered(value: &Value, ok: bool) -> bool {
    let Value::Table(t) = value else {
        return false;
    };
    if ok {
        return matches!(t.raw_get::<Value>("err"), Ok(Value::String(_)))
            && matches!(
                t.raw_get::<Value>("ignore_error_stats_update"),
                Ok(Value::Boolean(true))
            );
    }
    match t.raw_get::<Value>("raw") {
        Ok(Value::Error(e)) => call_error(&e).is_some_and(|c| c.1),
        _ => matches!(t.raw_get::<Value>("counted"), Ok(Value::Boolean(true))),
    }
}

/// The reply for a script that raised: the error handler's `{err | raw, line}`. Redis
/// appends the script (its SHA1, or the function's name) and the line where it failed.
pub(crate) fn script_error(label: &str, chunk: &str, value: &Value) -> Reply {
    let (text, line) = match value {
        Value::Table(t) => {
            let line = match t.raw_get::<Value>("line") {
                Ok(Value::Integer(n)) => n,
                Ok(Value::Number(n)) => n as i64,
                _ => 0,
            };
            let text = match (t.raw_get::<Value>("err"), t.raw_get::<Value>("raw")) {
                (Ok(Value::String(s)), _) => s.to_string_lossy(),
                (_, Ok(Value::Error(e))) => match call_error(&e) {
                    Some(CallError(text, _)) => text.clone(),
                    // Raised by one of the libraries: placed as Lua places an error, unless
                    // it carries its own code (SCRIPT KILL's).
                    None => {
                        let m = lua_message(&e);
                        if m.starts_with("ERR ") {
                            m
                        } else {
                            format!("ERR {chunk}:{line}: {m}")
                        }
                    }
                },
                (_, Ok(other)) if !other.is_nil() => format!("ERR {other:?}"),
                _ => "ERR unknown error".to_string(),
            };
            (text, line)
        }
        other => (format!("ERR {other:?}"), 0),
    };
    let text = one_line(&text);
    Reply::Error(Bytes::from(format!(
        "{text} script: {label}, on @{chunk}:{line}."
    )))
}

/// The message of a Lua error, without mlua's traceback.
pub(crate) fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_message(cause),
        other => other.to_string(),
    }
}

/// Error replies are one line.
pub(crate) fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GET, SET and INCR on a map; anything else is unknown.
    #[derive(Default)]
    struct MapHost(HashMap<Bytes, Bytes>, Vec<String>);

    impl Host for MapHost {
        fn call(&mut self, args: Vec<Bytes>) -> (Reply, bool) {
            let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
            match (name.as_str(), args.len()) {
                ("get", 2) => (
                    self.0
                        .get(&args[1])
                        .cloned()
                        .map_or(Reply::Null, Reply::Bulk),
                    false,
                ),
                ("set", 3) => {
                    self.0.insert(args[1].clone(), args[2].clone());
                    (Reply::simple("OK"), true)
                }
                ("incr", 2) => {
                    let cur = self.0.get(&args[1]).map_or(Some(0), |v| {
                        std::str::from_utf8(v)
                            .ok()
                            .and_then(|s| s.parse::<i64>().ok())
                    });
                    match cur {
                        Some(n) => {
                            self.0
                                .insert(args[1].clone(), Bytes::from((n + 1).to_string()));
                            (Reply::Integer(n + 1), true)
                        }
                        None => (
                            Reply::error("ERR value is not an integer or out of range"),
                            false,
                        ),
                    }
                }
                _ => (
                    Reply::error("ERR Unknown Redis command called from script"),
                    false,
                ),
            }
        }
        fn log(&mut self, _: u8, message: &str) {
            self.1.push(message.to_string());
        }
        fn refuse_writes(&mut self) {}
        fn abandon(&mut self) {
            self.0.clear();
            self.1.push("abandoned".into());
        }
    }

    fn eval(s: &Scripts, host: &mut MapHost, body: &str, keys: &[&str], argv: &[&str]) -> Reply {
        let b = |v: &[&str]| {
            v.iter()
                .map(|x| Bytes::copy_from_slice(x.as_bytes()))
                .collect::<Vec<_>>()
        };
        s.run(Source::Body(body.as_bytes()), &b(keys), &b(argv), host)
    }

    fn err(r: Reply) -> String {
        match r {
            Reply::Error(e) => String::from_utf8_lossy(&e).into_owned(),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn scripts_call_the_host_with_keys_and_argv() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        let r = eval(
            &s,
            &mut h,
            "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[1])",
            &["n"],
            &["41"],
        );
        assert_eq!(r, Reply::Integer(42));
        assert_eq!(
            eval(&s, &mut h, "return redis.call('get', 'missing')", &[], &[]),
            Reply::Null
        );
        assert_eq!(
            eval(&s, &mut h, "return #KEYS .. ARGV[1]", &["a", "b"], &["c"]),
            Reply::bulk("2c")
        );
        assert_eq!(
            eval(&s, &mut h, "return redis.call('set', 'k', 10)", &[], &[]),
            Reply::simple("OK")
        );
        assert_eq!(h.0.get(&b"k"[..]).map(|v| &v[..]), Some(&b"10"[..]));
        eval(
            &s,
            &mut h,
            "redis.log(redis.LOG_WARNING, 'hello', 3)",
            &[],
            &[],
        );
        assert_eq!(h.1, vec!["hello 3".to_string()]);
    }

    #[test]
    fn errors_read_as_redis_writes_them() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        h.0.insert(Bytes::from_static(b"s"), Bytes::from_static(b"abc"));
        let sha = |body: &str| String::from_utf8(sha1_hex(body.as_bytes()).to_vec()).unwrap();
        let body = "return redis.call('incr','s')";
        assert_eq!(
            err(eval(&s, &mut h, body, &[], &[])),
            format!(
                "ERR value is not an integer or out of range script: {}, on @user_script:1.",
                sha(body)
            )
        );
        assert_eq!(
            eval(&s, &mut h, "return redis.pcall('incr','s')", &[], &[]),
            Reply::error("ERR value is not an integer or out of range")
        );
        let body = "\nerror('boom')";
        assert_eq!(
            err(eval(&s, &mut h, body, &[], &[])),
            format!(
                "ERR user_script:2: boom script: {}, on @user_script:2.",
                sha(body)
            )
        );
        assert!(err(eval(&s, &mut h, "x = 1", &[], &[]))
            .starts_with("ERR user_script:1: Attempt to modify a readonly table script:"));
        assert!(err(eval(&s, &mut h, "return y", &[], &[])).starts_with(
            "ERR user_script:1: Script attempted to access nonexistent global variable 'y' script:"
        ));
        assert_eq!(
            err(eval(&s, &mut h, "syntax error here", &[], &[])),
            "ERR Error compiling script (new function): user_script:1: '=' expected near 'error'"
        );
        assert!(
            err(eval(&s, &mut h, "return redis.call()", &[], &[])).starts_with(
                "ERR Please specify at least one argument for this redis lib call script:"
            )
        );
        assert!(
            err(eval(&s, &mut h, "return redis.call('get', {})", &[], &[])).starts_with(
                "ERR Lua redis lib command arguments must be strings or integers script:"
            )
        );
        assert_eq!(
            eval(&s, &mut h, "return redis.error_reply('My Error')", &[], &[]),
            Reply::error("My Error")
        );
        assert_eq!(
            eval(&s, &mut h, "return redis.status_reply('FINE')", &[], &[]),
            Reply::simple("FINE")
        );
        assert_eq!(
            eval(&s, &mut h, "return redis.sha1hex('')", &[], &[]),
            Reply::bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
        );
    }

    #[test]
    fn a_replicated_interpreter_gives_the_same_results_whatever_ran_before() {
        let body = b"local t = {} for i = 1, 5 do t[i] = math.random(1, 1000000) end \
                     t[6] = tostring(math.random()) return t";
        let a = Scripts::new_replicated(64 << 20).unwrap();
        let b = Scripts::new_replicated(64 << 20).unwrap();
        let mut h = MapHost::default();
        // `b` has run other scripts, and drawn numbers, first.
        for _ in 0..3 {
            b.run_replicated(b"return math.random(10)", &[], &[], &mut h, 0);
        }
        let ra = a.run_replicated(body, &[], &[], &mut h, 0);
        let rb = b.run_replicated(body, &[], &[], &mut h, 0);
        assert_eq!(ra, rb);
        assert!(matches!(&ra, Reply::Array(v) if v.len() == 6), "{ra:?}");
        assert_eq!(a.run_replicated(body, &[], &[], &mut h, 0), ra, "reseeded");
        assert_eq!(
            a.source(&sha1_hex(body)).unwrap().as_deref(),
            Some(&body[..])
        );
        let empty = a.run_replicated(b"return math.random(0)", &[], &[], &mut h, 0);
        assert!(matches!(&empty, Reply::Error(e) if e.windows(8).any(|w| w == b"interval")));
    }

    #[test]
    fn a_replicated_script_stops_at_its_instruction_budget_at_the_same_point_every_time() {
        let s = Scripts::new_replicated(64 << 20).unwrap();
        let mut h = MapHost::default();
        let body = b"local n = 0 while true do n = n + 1 end";
        let first = s.run_replicated(body, &[], &[], &mut h, 1_000_000);
        assert!(
            matches!(&first, Reply::Error(e) if e.starts_with(b"ERR Script exceeded the instruction budget")),
            "{first:?}"
        );
        // How far a counting script gets is the same on each run (the count restarts).
        let count =
            b"local n = 0 local ok = pcall(function() while true do n = n + 1 end end) return n";
        let once = s.run_replicated(count, &[], &[], &mut h, 1_000_000);
        let twice = s.run_replicated(count, &[], &[], &mut h, 1_000_000);
        assert_eq!(once, twice);
        assert_eq!(
            s.run_replicated(b"return 1", &[], &[], &mut h, 1_000_000),
            Reply::Integer(1)
        );
    }

    #[test]
    fn the_cache_serves_evalsha_until_flushed() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        let sha = s.load(b"return 'cached'").unwrap();
        assert!(s.exists(&sha.map(|b| b.to_ascii_uppercase())).unwrap());
        assert_eq!(
            s.run(Source::Sha(&sha), &[], &[], &mut h),
            Reply::bulk("cached")
        );
        s.flush().unwrap();
        assert!(!s.exists(&sha).unwrap());
        assert_eq!(
            s.run(Source::Sha(&sha), &[], &[], &mut h),
            Reply::error("NOSCRIPT No matching script. Please use EVAL.")
        );
        assert_eq!(s.kill(false), Err(KillError::NotBusy));
    }

    #[test]
    fn a_long_script_turns_busy_and_is_killed_unless_it_wrote() {
        let s = Arc::new(Scripts::new(10, 64 << 20).unwrap());
        let killer = {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                while !s.busy() {
                    std::thread::yield_now();
                }
                s.kill(false)
            })
        };
        let mut h = MapHost::default();
        let r = eval(&s, &mut h, "while true do end", &[], &[]);
        assert_eq!(killer.join().unwrap(), Ok(()));
        assert!(err(r).contains("Script killed by user with SCRIPT KILL"));
        assert!(!s.busy());
        // A script that wrote cannot be killed.
        let refused = {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                while !s.busy() {
                    std::thread::yield_now();
                }
                let r = s.kill(false);
                // Let it finish: it stops itself after a while.
                r
            })
        };
        let r = eval(
            &s,
            &mut h,
            "redis.call('set','w','1'); local i = 0; while i < 30000000 do i = i + 1 end; return i",
            &[],
            &[],
        );
        assert_eq!(refused.join().unwrap(), Err(KillError::Unkillable));
        assert_eq!(r, Reply::Integer(30_000_000));
    }

    #[test]
    fn a_killed_script_cannot_catch_the_kill_with_pcall() {
        let s = Arc::new(Scripts::new(10, 64 << 20).unwrap());
        for _ in 0..2 {
            let killer = {
                let s = Arc::clone(&s);
                std::thread::spawn(move || {
                    while !s.busy() {
                        std::thread::yield_now();
                    }
                    s.kill(false)
                })
            };
            let mut h = MapHost::default();
            let body = "local f = function() while 1 do redis.call('get', 'k') end end \
                        while 1 do pcall(f) end";
            let r = eval(&s, &mut h, body, &[], &[]);
            assert_eq!(killer.join().unwrap(), Ok(()));
            assert!(err(r).contains("Script killed by user with SCRIPT KILL"));
        }
        // A kill asked of a script that has ended stops nothing after it, and code run
        // outside a script (a library's load) neither stops nor turns the server busy.
        assert_eq!(s.kill(false), Err(KillError::NotBusy));
        let lib = "#!lua name=after\nlocal n = 0 for i = 1, 300000 do n = n + i end\n\
                   redis.register_function('f', function() return n end)";
        assert!(s.check_library(lib.as_bytes()).is_ok());
        assert!(!s.busy());
        // The next script runs normally: its pcalls catch its own errors again.
        let mut h = MapHost::default();
        let body = "local ok = pcall(function() error('x') end) return ok and 1 or 0";
        assert_eq!(eval(&s, &mut h, body, &[], &[]), Reply::Integer(0));
    }

    #[test]
    fn shutdown_stops_a_busy_script_that_wrote_and_its_writes_are_abandoned() {
        let s = Arc::new(Scripts::new(10, 64 << 20).unwrap());
        let stopper = {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                while !s.busy() {
                    std::thread::yield_now();
                }
                let running = s.running().expect("a script runs");
                let kills = (s.kill(true), s.kill(false));
                (running, kills, s.abort())
            })
        };
        let mut h = MapHost::default();
        let r = eval(
            &s,
            &mut h,
            "redis.call('set','w','1') while true do end",
            &[],
            &[],
        );
        let ((name, _, _), kills, aborted) = stopper.join().unwrap();
        assert!(name.starts_with("f_"), "{name}");
        assert_eq!(
            kills,
            (Err(KillError::OtherKind), Err(KillError::Unkillable))
        );
        assert!(aborted);
        assert!(err(r).contains("SHUTDOWN NOSAVE"));
        assert!(
            h.0.is_empty() && h.1 == ["abandoned"],
            "its writes are dropped"
        );
        assert!(s.running().is_none() && !s.busy() && !s.abort());
        assert_eq!(s.busy_reply(), Reply::error(BUSY));
    }

    #[test]
    fn declared_flags_are_read_from_shebangs_and_registrations() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let flags = |body: &str| s.declared_flags(Source::Body(body.as_bytes()));
        assert_eq!(flags("return 1"), None);
        assert_eq!(flags("#!lua\nreturn 1"), Some(ScriptFlags::default()));
        let oom = flags("#!lua flags=allow-oom\nreturn 1").expect("declared");
        assert!(oom.allow_oom && !oom.no_writes && oom.allows_oom());
        let ro = flags("#!lua flags=no-writes,allow-stale\nreturn 1").expect("declared");
        assert!(ro.no_writes && !ro.allow_oom && ro.allows_oom());
        assert_eq!(flags("#!lua flags=bogus\nreturn 1"), None);
        let sha = s.load(b"#!lua flags=allow-oom\nreturn 1").unwrap();
        assert_eq!(s.declared_flags(Source::Sha(&sha)), Some(oom));
        assert_eq!(s.declared_flags(Source::Sha(&[b'0'; 40])), None);
        let lib = "#!lua name=l\nredis.register_function{function_name='w', callback=function() return 1 end, flags={'allow-oom'}}\nredis.register_function('plain', function() return 1 end)";
        s.install_library(s.check_library(lib.as_bytes()).unwrap())
            .unwrap();
        assert_eq!(s.function_flags(b"w"), Some(oom));
        assert_eq!(s.function_flags(b"plain"), Some(ScriptFlags::default()));
        assert_eq!(s.function_flags(b"nosuch"), None);
    }

    #[test]
    fn reachable_metatables_are_read_only() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        for body in [
            "setmetatable(_G, {})",
            "local g = getmetatable(_G); g.__index = {}",
            "getmetatable(_G).__index.redis = 1",
            "getmetatable('').__index = function() return 1 end",
            "getmetatable('').__index.upper = nil",
            "setmetatable(redis, {})",
        ] {
            let e = err(eval(&s, &mut h, body, &[], &[]));
            assert!(
                e.contains("Attempt to modify a readonly table"),
                "{body}: {e}"
            );
        }
        // Strings keep their methods; a script's own tables take metatables.
        assert_eq!(
            eval(&s, &mut h, "local t = setmetatable({}, {__index = function() return 'm' end}) return ('x'):upper() .. t.y", &[], &[]),
            Reply::bulk("Xm")
        );
    }

    #[test]
    fn a_library_loads_with_the_library_api_alone() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let e = |code: &str| err(s.check_library(code.as_bytes()).expect_err("refused"));
        let prefix = "ERR Error registering functions: ERR ";
        for (body, text) in [
            ("return math.random()", "user_function:2: Script attempted to access nonexistent global variable 'math'"),
            ("return redis.set_repl(redis.REPL_NONE)", "user_function:2: Script attempted to access nonexistent global variable 'set_repl'"),
            ("redis.math.random()", "user_function:2: Script attempted to access nonexistent global variable 'math'"),
            ("redis.x = 1", "user_function:2: Attempt to modify a readonly table"),
            ("redis.register_function('f1')", "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
            ("redis.register_function(nil, function() return 1 end)", "first argument to redis.register_function must be a string"),
            ("redis.register_function('f2', 'not a function')", "second argument to redis.register_function must be a function"),
            ("redis.register_function('f', function() end, {})", "wrong number of arguments to redis.register_function"),
            ("redis.register_function{[true] = 1}", "named argument key given to redis.register_function is not a string"),
        ] {
            assert_eq!(e(&format!("#!lua name=l\n{body}")), format!("{prefix}{text}"), "{body}");
        }
        // Numbers are strings to it, and named arguments and flags are read in any case.
        let lib = s
            .check_library(b"#!lua name=l\nredis.log(redis.LOG_NOTICE, 'loading', redis.REDIS_VERSION)\nredis.register_function(12, function() return 1 end)\nredis.register_function{FUNCTION_NAME='n', CallBack=function() return 2 end, flags={'NO-WRITES', 'no-writes'}}")
            .unwrap();
        assert_eq!(lib.functions[0].name, "12");
        assert_eq!(lib.functions[1].flags, vec!["no-writes"]);
    }

    #[test]
    fn function_names_are_case_insensitive_and_register_only_while_loading() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        let code = "#!lua name=lib1\nlocal lib = redis\nredis.register_function('Test', function() return math.floor(1.5) end)\nredis.register_function('f1', function() lib.math = math end)\nredis.register_function('f2', function() lib.register_function('f3', function() end) end)";
        s.install_library(s.check_library(code.as_bytes()).unwrap())
            .unwrap();
        // A function sees every global when it runs.
        assert_eq!(s.fcall(b"TEST", &[], &[], false, &mut h), Reply::Integer(1));
        assert_eq!(s.fcall(b"test", &[], &[], false, &mut h), Reply::Integer(1));
        assert!(err(s.fcall(b"f1", &[], &[], false, &mut h))
            .starts_with("ERR user_function:4: Attempt to modify a readonly table"));
        assert!(err(s.fcall(b"F2", &[], &[], false, &mut h)).starts_with(
            "ERR redis.register_function can only be called on FUNCTION LOAD command"
        ));
        s.remove_library("lib1");
        assert_eq!(
            s.fcall(b"test", &[], &[], false, &mut h),
            Reply::error("ERR Function not found")
        );
    }

    #[test]
    fn a_library_whose_load_runs_too_long_is_stopped() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let code = "#!lua name=slow\nlocal a = 1\nwhile 1 do a = a + 1 end";
        assert_eq!(
            err(s.check_library(code.as_bytes()).expect_err("stopped")),
            "ERR Error registering functions: ERR FUNCTION LOAD timeout"
        );
        // Not busy: other commands were never refused, and scripts run as before.
        assert!(!s.busy());
        let mut h = MapHost::default();
        assert_eq!(
            eval(
                &s,
                &mut h,
                "local n = 0 for i = 1, 100000 do n = n + 1 end return n",
                &[],
                &[]
            ),
            Reply::Integer(100000)
        );
        let lib = s.check_library(
            b"#!lua name=ok\nredis.register_function('ok', function() return 1 end)",
        );
        assert!(lib.is_ok());
    }

    #[test]
    fn libraries_load_register_and_run_as_redis_functions_do() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        let e = |r: Result<crate::LibraryInfo, Reply>| err(r.expect_err("refused"));
        let code = "#!lua name=mylib\nredis.register_function('echo', function(keys, args) return args[1] end)\nredis.register_function{function_name='ro', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}";
        let lib = s.check_library(code.as_bytes()).unwrap();
        assert_eq!(lib.name, "mylib");
        assert_eq!(lib.functions.len(), 2);
        assert_eq!(lib.functions[1].flags, vec!["no-writes"]);
        assert_eq!(
            s.fcall(b"echo", &[], &[], false, &mut h),
            Reply::error("ERR Function not found")
        );
        s.install_library(lib).unwrap();
        let b = |x: &'static str| Bytes::from_static(x.as_bytes());
        assert_eq!(
            s.fcall(b"echo", &[], &[b("hi")], false, &mut h),
            Reply::bulk("hi")
        );
        assert_eq!(
            s.fcall(b"echo", &[], &[], true, &mut h),
            Reply::error("ERR Can not execute a script with write flag using *_ro command.")
        );
        h.0.insert(b("k"), b("v"));
        assert_eq!(
            s.fcall(b"ro", &[b("k")], &[], true, &mut h),
            Reply::bulk("v")
        );
        // SCRIPT FLUSH empties the script cache, not the libraries.
        s.flush().unwrap();
        assert_eq!(
            s.fcall(b"echo", &[], &[b("again")], false, &mut h),
            Reply::bulk("again")
        );
        assert_eq!(
            e(s.check_library(b"#!lua name=e\nreturn 1")),
            "ERR No functions registered"
        );
        assert_eq!(
            e(s.check_library(b"#!lua name=c\nredis.call('ping')")),
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"
        );
        assert_eq!(
            e(s.check_library(b"#!lua name=c2\nx = 1")),
            "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"
        );
        assert_eq!(
            e(s.check_library(b"#!lua name=f\nredis.register_function{function_name='f', callback=function() end, flags={'bad'}}")),
            "ERR Error registering functions: ERR unknown flag given"
        );
        assert_eq!(
            e(s.check_library(b"#!lua name=d\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)")),
            "ERR Error registering functions: ERR Function already exists in the library"
        );
        let boom = "#!lua name=boom\nredis.register_function('boom', function() error('boom') end)";
        s.install_library(s.check_library(boom.as_bytes()).unwrap())
            .unwrap();
        assert_eq!(
            s.fcall(b"boom", &[], &[], false, &mut h),
            Reply::error("ERR user_function:2: boom script: boom, on @user_function:2.")
        );
        s.remove_library("mylib");
        assert_eq!(
            s.fcall(b"echo", &[], &[], false, &mut h),
            Reply::error("ERR Function not found")
        );
        assert_eq!(s.libraries().len(), 1);
        s.flush_libraries();
        assert!(s.libraries().is_empty());
    }

    #[test]
    fn huge_unpacks_and_allocations_are_script_errors() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        for body in [
            "return {unpack({1,2,3}, 0, 2147483647)}",
            "return {unpack({1,2,3}, -2147483648, -2)}",
        ] {
            assert!(err(eval(&s, &mut h, body, &[], &[]))
                .starts_with("ERR user_script:1: too many results to unpack script:"));
        }
        assert_eq!(
            eval(&s, &mut h, "return {unpack({1,2,3}, 2, 3)}", &[], &[]),
            Reply::Array(vec![Reply::Integer(2), Reply::Integer(3)])
        );
        // A whole table of 7,999 values unpacks, as in Redis.
        let whole = "local a = {} for i = 1, 7999 do a[i] = 1 end return select('#', unpack(a))";
        assert_eq!(eval(&s, &mut h, whole, &[], &[]), Reply::Integer(7999));
        let e = err(eval(&s, &mut h, "return #string.rep('x', 1e9)", &[], &[]));
        assert!(e.contains("not enough memory"), "{e}");
        // The interpreter still works afterwards.
        assert_eq!(eval(&s, &mut h, "return 1", &[], &[]), Reply::Integer(1));
    }

    #[test]
    fn bytecode_is_never_loaded_and_print_is_gone() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        let e = err(eval(
            &s,
            &mut h,
            "return loadstring(string.dump(function() return 1 end))()",
            &[],
            &[],
        ));
        assert!(e.contains("attempt to call a nil value"), "{e}");
        let e = err(eval(&s, &mut h, "local d = string.dump(function() return 1 end); local done = false; return load(function() if done then return nil end done = true return d end)()", &[], &[]));
        assert!(e.contains("attempt to call a nil value"), "{e}");
        assert_eq!(
            eval(&s, &mut h, "return loadstring('return 7')()", &[], &[]),
            Reply::Integer(7)
        );
        // A body that is itself bytecode is refused at compile time.
        let lua = Lua::new();
        let dumped = lua.load("return 1").into_function().unwrap().dump(false);
        let r = s.run(Source::Body(&dumped), &[], &[], &mut h);
        assert!(err(r).starts_with("ERR Error compiling script"));
        let e = err(eval(&s, &mut h, "print('x')", &[], &[]));
        assert!(e.contains("nonexistent global variable 'print'"), "{e}");
    }

    #[test]
    fn the_libraries_are_read_only() {
        let s = Scripts::new(5000, 64 << 20).unwrap();
        let mut h = MapHost::default();
        for body in [
            "redis.call = function() return 1 end",
            "cjson.encode = function() return 1 end",
            "bit.lshift = function() return 1 end",
            "string.format = nil",
            "table.new = 1",
        ] {
            let e = err(eval(&s, &mut h, body, &[], &[]));
            assert!(
                e.contains("Attempt to modify a readonly table"),
                "{body}: {e}"
            );
        }
        assert_eq!(
            eval(
                &s,
                &mut h,
                "return string.format('%d', 5) .. ('x'):upper() .. table.concat({1, 2})",
                &[],
                &[]
            ),
            Reply::bulk("5X12")
        );
    }
}
