//! Function libraries (Redis 7's FUNCTION and FCALL): code that starts with a metadata line
//! (`#!lua name=mylib`) and registers named functions with `redis.register_function`.
//!
//! Loading runs the library's code once, with a `redis` table that offers only
//! `register_function` and the helpers that need no server (no `call`): what it registers is
//! the library. A library is checked first ([`Scripts::check_library`]), stored by the
//! keyspace, then installed ([`Scripts::install_library`]) in the order the keyspace applied
//! the change, so every FCALL ordered after a FUNCTION LOAD finds its functions.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use mlua::{Function, Lua, MultiValue, Table, Value};
use rialto_resp::Reply;

use crate::vm::{Host, ScriptFlags, Scripts, Vm};

/// Flags a function may declare, as Redis 7.0 knows them.
const FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// One function of a library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo {
    /// Its name.
    pub name: String,
    /// Its description, if it gave one.
    pub description: Option<String>,
    /// The flags it declared (see Redis's `redis.register_function`).
    pub flags: Vec<&'static str>,
}

/// A library: its name, its code and what it registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryInfo {
    /// Its name (from the metadata line).
    pub name: String,
    /// Its code, metadata line included.
    pub code: Bytes,
    /// Its functions, in registration order.
    pub functions: Vec<FunctionInfo>,
}

fn err(text: impl Into<String>) -> Reply {
    Reply::Error(Bytes::from(text.into()))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// The library name in the metadata line, `#!<engine> name=<name>`, split as Redis splits it
/// (`sdssplitargs`: quotes allowed), checked in Redis's order.
fn metadata(code: &[u8]) -> Result<String, Reply> {
    if !code.starts_with(b"#!") {
        return Err(err("ERR Missing library metadata"));
    }
    let invalid = || err("ERR Invalid library metadata");
    let end = code.iter().position(|&b| b == b'\n').ok_or_else(invalid)?;
    let parts = rialto_resp::split_args(&Bytes::copy_from_slice(&code[..end]))
        .filter(|p| !p.is_empty())
        .ok_or_else(invalid)?;
    let engine = String::from_utf8_lossy(parts[0].get(2..).unwrap_or_default()).into_owned();
    let mut name = None;
    for p in &parts[1..] {
        let p = String::from_utf8_lossy(p);
        match p.get(..5) {
            Some(key) if key.eq_ignore_ascii_case("name=") => {
                if name.is_some() {
                    return Err(err(
                        "ERR Invalid metadata value, name argument was given multiple times",
                    ));
                }
                name = Some(p[5..].to_string());
            }
            _ => return Err(err(format!("ERR Invalid metadata value given: {p}"))),
        }
    }
    let name = name.ok_or_else(|| err("ERR Library name was not given"))?;
    if !valid_name(&name) {
        return Err(err(format!("ERR {BAD_NAME}")));
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(err(format!("ERR Engine '{engine}' not found")));
    }
    Ok(name)
}

/// An error raised inside `register_function`: the load fails with its text.
fn raise(text: &str) -> mlua::Error {
    mlua::Error::external(crate::vm::CallError(format!("ERR {text}"), false))
}

/// What one library registered: functions with their callbacks.
type Registered = Vec<(FunctionInfo, Function)>;

/// A library being loaded: what it has registered so far, and whether its `redis.log` lines
/// are written (the check's run writes them; the install's run of the same code does not).
struct LoadCtx {
    registered: Registered,
    log: bool,
}

/// How long a library's top-level code may run (Redis 7.0's FUNCTION LOAD timeout).
const LOAD_TIMEOUT_MS: u64 = 500;

/// A string argument as Redis reads one (`lua_isstring`: a string or a number).
fn string_arg(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.to_string_lossy()),
        Value::Integer(n) => Some(n.to_string()),
        Value::Number(n) => Some(crate::vm::lua_number(*n)),
        _ => None,
    }
}

/// The flags of a `flags = {...}` table, or `None` for one Redis does not know.
fn read_flags(t: &Table) -> mlua::Result<Option<Vec<&'static str>>> {
    let mut flags = Vec::new();
    for f in t.sequence_values::<Value>() {
        let Some(f) = string_arg(&f?) else {
            return Ok(None);
        };
        match FLAGS.iter().find(|known| known.eq_ignore_ascii_case(&f)) {
            Some(known) if flags.contains(known) => {}
            Some(known) => flags.push(*known),
            None => return Ok(None),
        }
    }
    Ok(Some(flags))
}

/// `redis.register_function{function_name = ..., callback = ..., flags = {...},
/// description = ...}` (names in any case, as Redis reads them).
fn named_registration(
    arg: Value,
) -> mlua::Result<(String, Function, Vec<&'static str>, Option<String>)> {
    let Value::Table(t) = arg else {
        return Err(raise("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."));
    };
    let (mut name, mut callback, mut flags, mut description) = (None, None, Vec::new(), None);
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair?;
        let Some(key) = string_arg(&k) else {
            return Err(raise(
                "named argument key given to redis.register_function is not a string",
            ));
        };
        match key.to_ascii_lowercase().as_str() {
            "function_name" => match string_arg(&v) {
                Some(n) => name = Some(n),
                None => return Err(raise("function_name argument given to redis.register_function must be a string")),
            },
            "description" => match string_arg(&v) {
                Some(d) => description = Some(d),
                None => return Err(raise("description argument given to redis.register_function must be a string")),
            },
            "callback" => match v {
                Value::Function(f) => callback = Some(f),
                _ => return Err(raise("callback argument given to redis.register_function must be a function")),
            },
            "flags" => match v {
                Value::Table(fl) => match read_flags(&fl)? {
                    Some(f) => flags = f,
                    None => return Err(raise("unknown flag given")),
                },
                _ => return Err(raise("flags argument to redis.register_function must be a table representing function flags")),
            },
            _ => return Err(raise("unknown argument given to redis.register_function")),
        }
    }
    let name =
        name.ok_or_else(|| raise("redis.register_function must get a function name argument"))?;
    let callback =
        callback.ok_or_else(|| raise("redis.register_function must get a callback argument"))?;
    Ok((name, callback, flags, description))
}

/// `redis.register_function(name, callback)` or its named form, checked as Redis checks
/// them.
fn registration(args: MultiValue) -> mlua::Result<(FunctionInfo, Function)> {
    let mut args = args.into_iter();
    let (name, callback, flags, description) = match (args.next(), args.next(), args.next()) {
        (Some(arg), None, None) => named_registration(arg)?,
        (Some(name), Some(callback), None) => {
            let name = string_arg(&name).ok_or_else(|| {
                raise("first argument to redis.register_function must be a string")
            })?;
            let Value::Function(callback) = callback else {
                return Err(raise(
                    "second argument to redis.register_function must be a function",
                ));
            };
            (name, callback, Vec::new(), None)
        }
        _ => {
            return Err(raise(
                "wrong number of arguments to redis.register_function",
            ))
        }
    };
    if !valid_name(&name) {
        return Err(raise(BAD_NAME));
    }
    Ok((
        FunctionInfo {
            name,
            description,
            flags,
        },
        callback,
    ))
}

/// The globals a library's top-level code sees (Redis 7.0's library API): `redis` alone,
/// offering `register_function`, `log`, the log levels and the version. Reading anything
/// else is an error, as an unknown global is, and nothing may be changed: a function that
/// kept a reference to this `redis` can neither register later nor plant fields in it.
pub(crate) fn load_env(lua: &Lua, full: &Table) -> mlua::Result<Table> {
    let api = lua.create_table()?;
    for k in [
        "LOG_DEBUG",
        "LOG_VERBOSE",
        "LOG_NOTICE",
        "LOG_WARNING",
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
    ] {
        api.raw_set(k, full.raw_get::<Value>(k)?)?;
    }
    api.raw_set(
        "register_function",
        lua.create_function(|lua, args: MultiValue| {
            if lua.app_data_ref::<LoadCtx>().is_none() {
                return Err(raise(
                    "redis.register_function can only be called on FUNCTION LOAD command",
                ));
            }
            let (info, f) = registration(args)?;
            let mut ctx = lua.app_data_mut::<LoadCtx>().ok_or_else(|| {
                raise("redis.register_function can only be called on FUNCTION LOAD command")
            })?;
            if ctx.registered.iter().any(|(i, _)| i.name == info.name) {
                return Err(raise("Function already exists in the library"));
            }
            ctx.registered.push((info, f));
            Ok(())
        })?,
    )?;
    api.raw_set(
        "log",
        lua.create_function(|lua, args: MultiValue| {
            let (level, message) = crate::vm::log_args(&args)?;
            if lua.app_data_ref::<LoadCtx>().is_some_and(|c| c.log) {
                match level {
                    0 => tracing::debug!(target: "script", "{message}"),
                    1 | 2 => tracing::info!(target: "script", "{message}"),
                    _ => tracing::warn!(target: "script", "{message}"),
                }
            }
            Ok(())
        })?,
    )?;
    let (view, _) = crate::vm::strict_view(lua, &api, None)?;
    let env = lua.create_table()?;
    env.raw_set("redis", view)?;
    Ok(env)
}

impl Vm {
    /// Runs a library's code in the library API's globals, within the load timeout if
    /// `timed`; what it registered, or the error reply.
    fn load_library(&mut self, code: &[u8], timed: bool) -> Result<(String, Registered), Reply> {
        let name = metadata(code)?;
        // The metadata line becomes a comment: line numbers stay those of the code.
        let mut body = code.to_vec();
        body[..2].copy_from_slice(b"--");
        let chunk = self
            .lua
            .load(&body[..])
            .set_mode(mlua::ChunkMode::Text)
            .set_name("@user_function")
            .set_environment(self.fenv.clone())
            .into_function()
            .map_err(|e| {
                err(format!(
                    "ERR Error compiling function: {}",
                    crate::vm::one_line(&crate::vm::lua_message(&e))
                ))
            })?;
        let internal = |e: mlua::Error| err(format!("ERR Error registering functions: {e}"));
        self.fstate
            .raw_set("g", self.load_env.clone())
            .map_err(internal)?;
        self.lua.set_app_data(LoadCtx {
            registered: Vec::new(),
            log: timed,
        });
        self.start_load(timed, LOAD_TIMEOUT_MS);
        let outcome = self.runner.call::<MultiValue>(chunk);
        self.end_load();
        let registered = self
            .lua
            .remove_app_data::<LoadCtx>()
            .map(|c| c.registered)
            .unwrap_or_default();
        self.fstate
            .raw_set("g", self.globals.clone())
            .map_err(internal)?;
        let mut values = outcome.map_err(internal)?.into_iter();
        if !matches!(values.next(), Some(Value::Boolean(true))) {
            let failed = values.next().unwrap_or(Value::Nil);
            let text = match crate::vm::script_error("", "user_function", &failed) {
                Reply::Error(e) => String::from_utf8_lossy(&e).into_owned(),
                _ => String::new(),
            };
            // The loader reports the error alone, without where the script failed.
            let text = text
                .split(" script: ")
                .next()
                .unwrap_or_default()
                .to_string();
            return Err(err(format!("ERR Error registering functions: {text}")));
        }
        if registered.is_empty() {
            return Err(err("ERR No functions registered"));
        }
        Ok((name, registered))
    }
}

/// Adds what a library registered to the function index (by lowercase name: function
/// names are case-insensitive, as in Redis; the first of two names differing in case only
/// wins).
fn index(functions: &mut HashMap<String, (Function, ScriptFlags, String)>, registered: Registered) {
    for (info, f) in registered {
        let flags = ScriptFlags {
            no_writes: info.flags.contains(&"no-writes"),
            allow_oom: info.flags.contains(&"allow-oom"),
        };
        functions
            .entry(info.name.to_ascii_lowercase())
            .or_insert((f, flags, info.name));
    }
}

impl Scripts {
    /// Checks a library's code (FUNCTION LOAD before it is stored): its name and functions,
    /// or the error reply. Nothing is installed.
    pub fn check_library(&self, code: &[u8]) -> Result<LibraryInfo, Reply> {
        let mut vm = self.lock_vm()?;
        let (name, registered) = vm.load_library(code, true)?;
        Ok(LibraryInfo {
            name,
            code: Bytes::copy_from_slice(code),
            functions: registered.into_iter().map(|(i, _)| i).collect(),
        })
    }

    /// Installs a library the keyspace stored, replacing one of the same name.
    pub fn install_library(&self, lib: LibraryInfo) -> Result<(), Reply> {
        let mut vm = self.vm.lock();
        // A library's top-level code runs now: in a replicated interpreter what it draws
        // from the random generator must not depend on what ran before.
        if let Some(reseed) = &vm.reseed {
            reseed.call::<()>(()).map_err(|e| {
                Reply::Error(Bytes::from(format!("ERR internal error seeding: {e}")))
            })?;
        }
        let mut libs = self.libraries.lock();
        if let Some(old) = libs.remove(&lib.name) {
            for f in &old.functions {
                vm.functions.remove(&f.name.to_ascii_lowercase());
            }
        }
        // Checked within the timeout before: installed whatever time it takes now, so what
        // the keyspace stored is always installed.
        let (_, registered) = vm.load_library(&lib.code, false)?;
        index(&mut vm.functions, registered);
        libs.insert(lib.name.clone(), lib);
        Ok(())
    }

    /// Removes a library's functions.
    pub fn remove_library(&self, name: &str) {
        let mut vm = self.vm.lock();
        if let Some(old) = self.libraries.lock().remove(name) {
            for f in &old.functions {
                vm.functions.remove(&f.name.to_ascii_lowercase());
            }
        }
    }

    /// Removes every library.
    pub fn flush_libraries(&self) {
        let mut vm = self.vm.lock();
        self.libraries.lock().clear();
        vm.functions.clear();
    }

    /// The installed libraries, in name order.
    pub fn libraries(&self) -> Vec<LibraryInfo> {
        self.libraries.lock().values().cloned().collect()
    }

    /// FCALL and FCALL_RO: runs function `name` with `keys` and `argv`; `read_only` (FCALL_RO)
    /// requires a function declared `no-writes`, and such a function may not write.
    pub fn fcall(
        &self,
        name: &[u8],
        keys: &[Bytes],
        argv: &[Bytes],
        read_only: bool,
        host: &mut dyn Host,
    ) -> Reply {
        let mut vm = self.vm.lock();
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let Some((f, flags, name)) = vm.functions.get(&key).cloned() else {
            return err("ERR Function not found");
        };
        if read_only && !flags.no_writes {
            return err("ERR Can not execute a script with write flag using *_ro command.");
        }
        if read_only {
            host.refuse_writes();
        }
        flags.apply(host);
        self.run_in(&mut vm, &name, "user_function", f, true, keys, argv, host)
    }

    /// The flags function `name` was registered with, if it exists.
    pub fn function_flags(&self, name: &[u8]) -> Option<ScriptFlags> {
        let name = String::from_utf8_lossy(name);
        // Busy: unknown here; the call checks the flags again.
        self.lock_vm()
            .ok()?
            .functions
            .get(&name.to_ascii_lowercase())
            .map(|(_, flags, _)| *flags)
    }

    /// FCALL in a replicated interpreter ([`Scripts::new_replicated`]): as [`Scripts::fcall`],
    /// within `max_instructions` and with the random generator seeded alike.
    pub fn fcall_replicated(
        &self,
        name: &[u8],
        keys: &[Bytes],
        argv: &[Bytes],
        read_only: bool,
        host: &mut dyn Host,
        max_instructions: u64,
    ) -> Reply {
        if let Err(r) = self.start_replicated(&self.vm.lock(), max_instructions) {
            return r;
        }
        self.fcall(name, keys, argv, read_only, host)
    }

    /// Reinstalls every library into a fresh interpreter (after SCRIPT FLUSH, which clears
    /// scripts only).
    pub(crate) fn reinstall(&self, vm: &mut Vm) {
        let libs: BTreeMap<String, LibraryInfo> = self.libraries.lock().clone();
        let mut functions = HashMap::new();
        for lib in libs.values() {
            if let Ok((_, registered)) = vm.load_library(&lib.code, false) {
                index(&mut functions, registered);
            }
        }
        vm.functions = functions;
    }
}

/// A dump of libraries (FUNCTION DUMP): `RIALTO-FUNCTIONS-1`, then per library its code's
/// length (u32 LE) and code, then a CRC32C of everything before it (u32 LE).
pub fn dump(libs: &[LibraryInfo]) -> Bytes {
    let mut out = b"RIALTO-FUNCTIONS-1".to_vec();
    for lib in libs {
        out.extend_from_slice(&(lib.code.len() as u32).to_le_bytes());
        out.extend_from_slice(&lib.code);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Bytes::from(out)
}

/// The library codes of a dump, or `None` if it is not one (or damaged).
pub fn undump(payload: &[u8]) -> Option<Vec<Bytes>> {
    let body_len = payload.len().checked_sub(4)?;
    let (body, crc) = payload.split_at(body_len);
    if crc32c::crc32c(body).to_le_bytes() != crc {
        return None;
    }
    let mut rest = body.strip_prefix(b"RIALTO-FUNCTIONS-1")?;
    let mut codes = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        codes.push(Bytes::copy_from_slice(rest.get(4..4 + len)?));
        rest = &rest[4 + len..];
    }
    Some(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lines_are_read_as_redis_reads_them() {
        assert_eq!(metadata(b"#!lua name=mylib\nx").unwrap(), "mylib");
        assert_eq!(metadata(b"#!LUA NAME=a_1\n").unwrap(), "a_1");
        assert_eq!(metadata(b"#!lua name=\"q\"\n").unwrap(), "q");
        let e = |code: &[u8]| match metadata(code) {
            Err(Reply::Error(e)) => String::from_utf8_lossy(&e).into_owned(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            e(b"redis.register_function()"),
            "ERR Missing library metadata"
        );
        assert_eq!(e(b"#!js name=x\n"), "ERR Engine 'js' not found");
        assert_eq!(e(b"#! name=x\n"), "ERR Engine '' not found");
        assert_eq!(e(b"#!lua name=x"), "ERR Invalid library metadata");
        assert_eq!(e(b"#!lua name=\"x\n"), "ERR Invalid library metadata");
        assert_eq!(
            e(b"#!lua name=a name=b\n"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert!(e(b"#!js name=bad-name\n").starts_with("ERR Library names can only contain"));
        assert_eq!(
            e(b"#!lua name=x foo=bar\n"),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert_eq!(e(b"#!lua\n"), "ERR Library name was not given");
        assert!(e(b"#!lua name=bad-name\n").starts_with("ERR Library names can only contain"));
    }

    #[test]
    fn a_dump_round_trips_and_damage_is_refused() {
        let lib = |code: &'static str| LibraryInfo {
            name: String::new(),
            code: Bytes::from_static(code.as_bytes()),
            functions: Vec::new(),
        };
        let d = dump(&[lib("#!lua name=a\n"), lib("#!lua name=b\nreturn")]);
        assert_eq!(undump(&d).unwrap().len(), 2);
        let mut bad = d.to_vec();
        bad[20] ^= 1;
        assert!(undump(&bad).is_none());
        assert!(undump(b"bad").is_none());
    }
}
