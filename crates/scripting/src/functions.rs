//! Function libraries (Redis 7's FUNCTION and FCALL): code that starts with a metadata line
//! (`#!lua name=mylib`) and registers named functions with `redis.register_function`.
//!
//! Loading runs the library's code once, with a `redis` table that offers only
//! `register_function` and the helpers that need no server (no `call`): what it registers is
//! the library. A library is checked first ([`Scripts::check_library`]), stored by the
//! keyspace, then installed ([`Scripts::install_library`]) in the order the keyspace applied
//! the change, so every FCALL ordered after a FUNCTION LOAD finds its functions.

use std::cell::RefCell;
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

/// The library name in the metadata line: `#!<engine> name=<name>`.
fn metadata(code: &[u8]) -> Result<String, Reply> {
    let first = code.split(|&b| b == b'\n').next().unwrap_or_default();
    let Some(line) = first.strip_prefix(b"#!") else {
        return Err(err("ERR Missing library metadata"));
    };
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(err(format!("ERR Engine '{engine}' not found")));
    }
    let mut name = None;
    for p in parts {
        match p.strip_prefix("name=") {
            Some(n) if name.is_none() => name = Some(n.to_string()),
            _ => return Err(err(format!("ERR Invalid metadata value given: {p}"))),
        }
    }
    let name = name.ok_or_else(|| err("ERR Library name was not given"))?;
    if !valid_name(&name) {
        return Err(err(format!("ERR {BAD_NAME}")));
    }
    Ok(name)
}

/// An error raised inside `register_function`: the load fails with its text.
fn raise(text: &str) -> mlua::Error {
    mlua::Error::external(crate::vm::CallError(format!("ERR {text}")))
}

/// What one library registered: functions with their callbacks.
type Registered = Vec<(FunctionInfo, Function)>;

/// `redis.register_function(name, callback)` or `redis.register_function{function_name =
/// ..., callback = ..., flags = {...}, description = ...}`.
fn registration(args: MultiValue) -> mlua::Result<(FunctionInfo, Function)> {
    let mut it = args.into_iter();
    let (name, callback, flags, description) = match (it.next(), it.next(), it.next()) {
        (Some(Value::Table(t)), None, None) => {
            let (mut name, mut callback, mut flags, mut description) =
                (None, None, Vec::new(), None);
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                let key = match &k {
                    Value::String(s) => s.to_string_lossy(),
                    _ => return Err(raise("unknown argument given to redis.register_function")),
                };
                match (key.as_str(), v) {
                    ("function_name", Value::String(s)) => name = Some(s.to_string_lossy()),
                    ("callback", Value::Function(f)) => callback = Some(f),
                    ("description", Value::String(s)) => description = Some(s.to_string_lossy()),
                    ("flags", Value::Table(fl)) => {
                        for f in fl.sequence_values::<Value>() {
                            let f = match f? {
                                Value::String(s) => s.to_string_lossy(),
                                _ => return Err(raise("unknown flag given")),
                            };
                            match FLAGS.iter().find(|known| **known == f) {
                                Some(known) => flags.push(*known),
                                None => return Err(raise("unknown flag given")),
                            }
                        }
                    }
                    ("function_name", _) => {
                        return Err(raise("function_name argument given to redis.register_function must be a string"))
                    }
                    ("callback", _) => {
                        return Err(raise("callback argument given to redis.register_function must be a function"))
                    }
                    ("description", _) => {
                        return Err(raise("description argument given to redis.register_function must be a string"))
                    }
                    ("flags", _) => {
                        return Err(raise("flags argument to redis.register_function must be a table representing function flags"))
                    }
                    _ => return Err(raise("unknown argument given to redis.register_function")),
                }
            }
            let name = name.ok_or_else(|| {
                raise("redis.register_function must get a function name argument")
            })?;
            let callback = callback
                .ok_or_else(|| raise("redis.register_function must get a callback argument"))?;
            (name, callback, flags, description)
        }
        (Some(Value::String(n)), Some(Value::Function(f)), None) => {
            (n.to_string_lossy(), f, Vec::new(), None)
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

impl Vm {
    /// Runs a library's code with the loading `redis` table; what it registered, or the error
    /// reply.
    fn load_library(&mut self, code: &[u8]) -> Result<(String, Registered), Reply> {
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
        let registered: RefCell<Registered> = RefCell::new(Vec::new());
        let outcome = self
            .lua
            .scope(|scope| {
                let register = scope.create_function(|_, args: MultiValue| {
                    let (info, f) = registration(args)?;
                    let mut r = registered.borrow_mut();
                    if r.iter().any(|(i, _)| i.name == info.name) {
                        return Err(raise("Function already exists in the library"));
                    }
                    r.push((info, f));
                    Ok(())
                })?;
                let loading = loading_redis(&self.lua, &self.redis, register)?;
                self.fstate.raw_set("redis", loading)?;
                self.runner.call::<MultiValue>(chunk)
            })
            .map_err(|e| err(format!("ERR Error registering functions: {e}")))?;
        let mut values = outcome.into_iter();
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
        let registered = registered.into_inner();
        if registered.is_empty() {
            return Err(err("ERR No functions registered"));
        }
        Ok((name, registered))
    }
}

/// The `redis` table a library sees while it loads: `register_function` and the helpers,
/// nothing that reaches the server; any other field is an error, as an unknown global is.
fn loading_redis(lua: &Lua, full: &Table, register: Function) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for pair in full.pairs::<Value, Value>() {
        let (k, v) = pair?;
        let skip = matches!(&k, Value::String(s) if ["call", "pcall", "setresp", "log"].contains(&s.to_string_lossy().as_str()));
        if !skip {
            t.raw_set(k, v)?;
        }
    }
    t.raw_set("register_function", register)?;
    let meta: Table = lua
        .load(
            r#"
            return { __index = function(_, k)
                error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
            end }
            "#,
        )
        .set_name("=rialto")
        .eval()?;
    t.set_metatable(Some(meta));
    Ok(t)
}

/// Adds what a library registered to the function index: name → callback, its flags.
fn index(functions: &mut HashMap<String, (Function, ScriptFlags)>, registered: Registered) {
    for (info, f) in registered {
        let flags = ScriptFlags {
            no_writes: info.flags.contains(&"no-writes"),
            allow_oom: info.flags.contains(&"allow-oom"),
        };
        functions.insert(info.name, (f, flags));
    }
}

impl Scripts {
    /// Checks a library's code (FUNCTION LOAD before it is stored): its name and functions,
    /// or the error reply. Nothing is installed.
    pub fn check_library(&self, code: &[u8]) -> Result<LibraryInfo, Reply> {
        let mut vm = self.lock_vm()?;
        let (name, registered) = vm.load_library(code)?;
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
                vm.functions.remove(&f.name);
            }
        }
        let (_, registered) = vm.load_library(&lib.code)?;
        index(&mut vm.functions, registered);
        libs.insert(lib.name.clone(), lib);
        Ok(())
    }

    /// Removes a library's functions.
    pub fn remove_library(&self, name: &str) {
        let mut vm = self.vm.lock();
        if let Some(old) = self.libraries.lock().remove(name) {
            for f in &old.functions {
                vm.functions.remove(&f.name);
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
        let name = String::from_utf8_lossy(name).into_owned();
        let Some((f, flags)) = vm.functions.get(&name).cloned() else {
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
            .get(name.as_ref())
            .map(|(_, flags)| *flags)
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
            if let Ok((_, registered)) = vm.load_library(&lib.code) {
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
        assert_eq!(metadata(b"#!LUA name=a_1").unwrap(), "a_1");
        let e = |code: &[u8]| match metadata(code) {
            Err(Reply::Error(e)) => String::from_utf8_lossy(&e).into_owned(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            e(b"redis.register_function()"),
            "ERR Missing library metadata"
        );
        assert_eq!(e(b"#!js name=x\n"), "ERR Engine 'js' not found");
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
