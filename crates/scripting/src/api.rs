//! The `redis` table's functions that need no host: replies as tables, SHA1, constants, and
//! the replication switches Redis 7 keeps for old scripts (effects are what is logged, so they
//! change nothing). `call`, `pcall`, `setresp` and `log` are bound for each run (`vm.rs`).

use mlua::{Lua, Table, Value};

/// The version scripts see (`redis.REDIS_VERSION`): the Redis release whose behaviour Rialto
/// follows.
const VERSION: &str = "7.0.15";
const VERSION_NUM: i64 = 0x07_00_0f;

/// `{err = "ERR wrong number or type of arguments"}`: what `error_reply` and `status_reply`
/// return for an argument that is not a string.
fn err_table(lua: &Lua) -> mlua::Result<Table> {
    let r = lua.create_table()?;
    r.raw_set("err", "ERR wrong number or type of arguments")?;
    Ok(r)
}

/// The error `redis.error_reply(text)` makes, as Redis 7.0 makes it: a leading `-` is
/// dropped; the first word is the code if there are two or more (else the code is `ERR`
/// before the whole text); line ends at either end of the message are trimmed.
fn error_text(text: &[u8]) -> Vec<u8> {
    let text = text.strip_prefix(b"-").unwrap_or(text);
    let (code, msg): (&[u8], &[u8]) = match text.iter().position(|&b| b == b' ') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (b"ERR", text),
    };
    let is_end = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !is_end(b)).unwrap_or(msg.len());
    let end = msg
        .iter()
        .rposition(|b| !is_end(b))
        .map_or(start, |i| i + 1);
    let mut out = code.to_vec();
    out.push(b' ');
    out.extend_from_slice(&msg[start..end]);
    out
}

pub fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "error_reply",
        lua.create_function(
            |lua, args: mlua::MultiValue| match args.into_iter().next() {
                Some(Value::String(s)) => {
                    let r = lua.create_table()?;
                    r.raw_set("err", lua.create_string(error_text(&s.as_bytes()))?)?;
                    Ok(r)
                }
                // Redis returns this error as the result rather than raising it.
                _ => err_table(lua),
            },
        )?,
    )?;
    t.raw_set(
        "status_reply",
        lua.create_function(
            |lua, args: mlua::MultiValue| match args.into_iter().next() {
                Some(Value::String(s)) => {
                    let r = lua.create_table()?;
                    r.raw_set("ok", s)?;
                    Ok(r)
                }
                _ => err_table(lua),
            },
        )?,
    )?;
    t.raw_set(
        "sha1hex",
        lua.create_function(|lua, v: Value| match v {
            Value::String(s) => lua.create_string(crate::vm::sha1_hex(&s.as_bytes())),
            Value::Integer(n) => lua.create_string(crate::vm::sha1_hex(n.to_string().as_bytes())),
            Value::Number(n) => lua.create_string(crate::vm::sha1_hex(n.to_string().as_bytes())),
            _ => Err(mlua::Error::runtime("wrong number of arguments")),
        })?,
    )?;
    t.raw_set(
        "set_repl",
        lua.create_function(|_, v: Value| match v {
            Value::Integer(0..=3) => Ok(()),
            Value::Number(n) if (0.0..=3.0).contains(&n) => Ok(()),
            Value::Integer(_) | Value::Number(_) => Err(mlua::Error::runtime(
                "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
            )),
            _ => Err(mlua::Error::runtime(
                "redis.set_repl() requires one argument.",
            )),
        })?,
    )?;
    t.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    t.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    t.raw_set(
        "debug",
        lua.create_function(|_, _: mlua::MultiValue| Ok(()))?,
    )?;
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        t.raw_set(name, v)?;
    }
    t.raw_set("REDIS_VERSION", VERSION)?;
    t.raw_set("REDIS_VERSION_NUM", VERSION_NUM)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[test]
    fn error_reply_texts_are_made_as_redis_makes_them() {
        let t = |s: &str| String::from_utf8(error_text(s.as_bytes())).unwrap();
        assert_eq!(t(""), "ERR ");
        assert_eq!(t("My Error"), "My Error");
        assert_eq!(t("-ERR bad thing"), "ERR bad thing");
        assert_eq!(t("X\r\n+INJECTED"), "ERR X\r\n+INJECTED");
        assert_eq!(t("CODE msg\r\n"), "CODE msg");
    }
}
