//! What the libraries' unit tests share.

use mlua::{Lua, Table};

/// A bare interpreter with one library as the global `name`.
pub(crate) fn with_library(name: &str, make: fn(&Lua) -> mlua::Result<Table>) -> Lua {
    let lua = Lua::new();
    lua.globals().set(name, make(&lua).unwrap()).unwrap();
    lua
}

/// The string `code` returns, in hexadecimal.
pub(crate) fn hex(lua: &Lua, code: &str) -> String {
    let s: mlua::String = lua.load(code).eval().unwrap();
    s.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
}
