//! Lua scripts as Redis 7.0 runs them: an embedded Lua 5.1 (through `mlua`), the `redis`
//! table, the conversions between replies and Lua values, read-only globals, the script cache
//! and the state SCRIPT KILL and the busy-script limit need.
//!
//! The crate knows nothing of commands: what `redis.call` runs is the server's [`Host`],
//! called inside the transaction the script runs in.

mod api;
mod bit;
mod cjson;
mod cmsgpack;
mod convert;
mod functions;
mod lua_struct;
#[cfg(test)]
mod testing;
mod vm;

pub use convert::{lua_to_reply, lua_to_reply_in, reply_to_lua};
pub use functions::{dump, undump, FunctionInfo, LibraryInfo};
pub use vm::{sha1_hex, Host, KillError, ScriptFlags, Scripts, Source, BUSY, BUSY_FUNCTION};
