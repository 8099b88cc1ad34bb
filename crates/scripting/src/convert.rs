//! Replies to Lua values and back, by Redis's rules (7.0).
//!
//! A reply a script receives from `redis.call` (RESP2 rules unless the script chose RESP3 with
//! `redis.setresp(3)`): integer → number, bulk → string, null → `false`, array → table,
//! status → `{ok = text}`, error → `{err = text}`; with RESP3 also map → `{map = t}`,
//! set → `{set = t}` (members as keys, `true` as values), null → `nil`, double →
//! `{double = n}`, boolean → boolean, big number → `{big_number = text}`, verbatim →
//! `{verbatim_string = {format = f, string = s}}`.
//!
//! A script's result: number → integer (truncated), string → bulk, `true` → 1, `false` and
//! `nil` → null, `{err = e}` → error, `{ok = s}` → status, a table → array of its items up to
//! the first `nil`; with RESP3 `{map}`, `{set}`, `{double}`, `{big_number}` as above.

use bytes::Bytes;
use mlua::{Lua, Table, Value};
use rialto_resp::Reply;

/// Most nesting of tables converted to a reply (deeper is an error, not a stack overflow).
const MAX_DEPTH: usize = 1000;

/// `[key, value]` tables in a sequence.
fn pair_sequence(lua: &Lua, pairs: &[(Reply, Reply)], resp: u8) -> mlua::Result<Value> {
    sequence(
        lua,
        pairs.len(),
        pairs.iter().map(|(k, v)| {
            let pair = [reply_to_lua(lua, k, resp)?, reply_to_lua(lua, v, resp)?];
            Ok(Value::Table(lua.create_sequence_from(pair)?))
        }),
    )
}

/// A reply as a Lua value, for a script that speaks RESP `resp` (2 or 3).
pub fn reply_to_lua(lua: &Lua, r: &Reply, resp: u8) -> mlua::Result<Value> {
    Ok(match r {
        Reply::Integer(n) => Value::Number(*n as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(&b[..])?),
        Reply::Null | Reply::NullArray if resp == 3 => Value::Nil,
        Reply::Null | Reply::NullArray => Value::Boolean(false),
        Reply::Simple(s) => field(lua, "ok", Value::String(lua.create_string(&s[..])?))?,
        Reply::Error(e) | Reply::BlobError(e) => {
            field(lua, "err", Value::String(lua.create_string(&e[..])?))?
        }
        Reply::Array(items) | Reply::Push(items) => sequence(
            lua,
            items.len(),
            items.iter().map(|v| reply_to_lua(lua, v, resp)),
        )?,
        Reply::Set(items) if resp == 3 => {
            let t = lua.create_table()?;
            for v in items {
                t.raw_set(reply_to_lua(lua, v, resp)?, true)?;
            }
            field(lua, "set", Value::Table(t))?
        }
        Reply::Set(items) => sequence(
            lua,
            items.len(),
            items.iter().map(|v| reply_to_lua(lua, v, resp)),
        )?,
        Reply::Map(pairs) | Reply::Keyed(pairs) if resp == 3 => {
            let t = lua.create_table()?;
            for (k, v) in pairs {
                t.raw_set(reply_to_lua(lua, k, resp)?, reply_to_lua(lua, v, resp)?)?;
            }
            field(lua, "map", Value::Table(t))?
        }
        Reply::Pairs(pairs) if resp == 3 => pair_sequence(lua, pairs, resp)?,
        // XREAD's streams: a RESP3 map (above), else [key, value] pairs.
        Reply::Keyed(pairs) => pair_sequence(lua, pairs, resp)?,
        Reply::Pairs(pairs) => sequence(
            lua,
            pairs.len() * 2,
            pairs
                .iter()
                .flat_map(|(k, v)| [k, v])
                .map(|r| reply_to_lua(lua, r, resp)),
        )?,
        Reply::Map(pairs) => sequence(
            lua,
            pairs.len() * 2,
            pairs
                .iter()
                .flat_map(|(k, v)| [k, v])
                .map(|r| reply_to_lua(lua, r, resp)),
        )?,
        Reply::Double(d) if resp == 3 => field(lua, "double", Value::Number(*d))?,
        // What a RESP2 client reads: the bulk string Redis formats the double as.
        Reply::Double(d) => match Reply::Double(*d).as_received(rialto_resp::Protocol::Resp2) {
            Reply::Bulk(text) => Value::String(lua.create_string(&text[..])?),
            _ => Value::String(lua.create_string(d.to_string())?),
        },
        Reply::HumanDouble(d) => {
            let text = rialto_resp::format_human_double(*d);
            if resp == 3 {
                field(lua, "double", Value::Number(text.parse().unwrap_or(*d)))?
            } else {
                Value::String(lua.create_string(&text)?)
            }
        }
        Reply::Boolean(b) if resp == 3 => Value::Boolean(*b),
        Reply::Boolean(b) => Value::Number(if *b { 1.0 } else { 0.0 }),
        Reply::BigNumber(n) if resp == 3 => {
            field(lua, "big_number", Value::String(lua.create_string(&n[..])?))?
        }
        Reply::BigNumber(n) => Value::String(lua.create_string(&n[..])?),
        Reply::Verbatim { format, text } if resp == 3 => {
            let t = lua.create_table()?;
            t.raw_set("format", lua.create_string(&format[..])?)?;
            t.raw_set("string", lua.create_string(&text[..])?)?;
            field(lua, "verbatim_string", Value::Table(t))?
        }
        Reply::Verbatim { text, .. } => Value::String(lua.create_string(&text[..])?),
        Reply::Attribute { reply, .. } => reply_to_lua(lua, reply, resp)?,
    })
}

/// A table of `len` items, each set as it is made: mlua keeps every live Lua value in a
/// stack of its own that holds fewer than 8,000, so a reply's items are never all held at once.
fn sequence(
    lua: &Lua,
    len: usize,
    items: impl Iterator<Item = mlua::Result<Value>>,
) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(len, 0)?;
    for (i, v) in items.enumerate() {
        t.raw_set(i + 1, v?)?;
    }
    Ok(Value::Table(t))
}

fn field(lua: &Lua, name: &str, v: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(name, v)?;
    Ok(Value::Table(t))
}

/// A script's result as a reply, for a script speaking RESP2 (see [`lua_to_reply_in`]).
pub fn lua_to_reply(v: &Value) -> Reply {
    lua_to_reply_in(v, 2)
}

/// A script's result as a reply, in the protocol the script chose with `redis.setresp`
/// (`resp`): a boolean is RESP3's boolean under 3, and 1 or nil under 2, as in Redis.
pub fn lua_to_reply_in(v: &Value, resp: u8) -> Reply {
    to_reply(v, 0, resp)
}

fn to_reply(v: &Value, depth: usize, resp: u8) -> Reply {
    match v {
        Value::Nil => Reply::Null,
        Value::Boolean(b) if resp == 3 => Reply::Boolean(*b),
        Value::Boolean(true) => Reply::Integer(1),
        Value::Boolean(false) => Reply::Null,
        Value::Integer(n) => Reply::Integer(*n),
        Value::Number(n) => Reply::Integer(number_to_int(*n)),
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Table(t) if depth >= MAX_DEPTH => {
            let _ = t;
            Reply::error("ERR reached lua stack limit")
        }
        Value::Table(t) => table_to_reply(t, depth, resp),
        _ => Reply::Null,
    }
}

/// Lua numbers become integers as Redis's C cast does on x86-64: truncated toward zero, and
/// out of range (or NaN) the "integer indefinite" value, `i64::MIN`.
fn number_to_int(n: f64) -> i64 {
    if n.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

fn text_of(v: &Value) -> Option<Bytes> {
    match v {
        Value::String(s) => Some(Bytes::copy_from_slice(&s.as_bytes())),
        _ => None,
    }
}

/// A status or error text as Redis takes it from a script: a C string (up to the first NUL).
fn c_text(v: &Value) -> Option<Bytes> {
    let t = text_of(v)?;
    let end = t.iter().position(|&b| b == 0).unwrap_or(t.len());
    Some(t.slice(..end))
}

/// `text` with its CRs and LFs made spaces, as Redis does to a script's status and big number
/// (sent as one line in RESP3, either would end the reply early).
fn one_line(text: Bytes) -> Bytes {
    if !text.iter().any(|&b| b == b'\r' || b == b'\n') {
        return text;
    }
    text.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect::<Vec<u8>>()
        .into()
}

fn table_to_reply(t: &Table, depth: usize, resp: u8) -> Reply {
    if let Ok(e) = t.raw_get::<Value>("err") {
        if let Some(e) = c_text(&e) {
            return Reply::Error(e);
        }
    }
    if let Ok(s) = t.raw_get::<Value>("ok") {
        if let Some(s) = c_text(&s) {
            return Reply::Simple(one_line(s));
        }
    }
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        return Reply::Double(d);
    }
    if let Ok(Value::Integer(d)) = t.raw_get::<Value>("double") {
        return Reply::Double(d as f64);
    }
    if let Ok(n) = t.raw_get::<Value>("big_number") {
        if let Some(n) = text_of(&n) {
            return Reply::BigNumber(one_line(n));
        }
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        let (format, text) = (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"));
        if let (Ok(format), Ok(text)) = (format, text) {
            if let (Some(format), Some(text)) = (text_of(&format), text_of(&text)) {
                // Redis takes the format's first three bytes.
                if let Ok(format) = <[u8; 3]>::try_from(&format[..format.len().min(3)]) {
                    return Reply::Verbatim { format, text };
                }
            }
        }
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let mut pairs = Vec::new();
        for (k, v) in m.pairs::<Value, Value>().flatten() {
            pairs.push((to_reply(&k, depth + 1, resp), to_reply(&v, depth + 1, resp)));
        }
        return Reply::Map(pairs);
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let mut items = Vec::new();
        for (k, _) in s.pairs::<Value, Value>().flatten() {
            items.push(to_reply(&k, depth + 1, resp));
        }
        return Reply::Set(items);
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_reply(&v, depth + 1, resp)),
        }
    }
    Reply::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(lua: &Lua, code: &str) -> Reply {
        let v: Value = lua.load(code).eval().unwrap();
        lua_to_reply(&v)
    }

    /// Regression: a reply of more items than mlua's stack of live values holds (8,000)
    /// panicked the thread running the script, and every later write waited behind it.
    #[test]
    fn replies_of_any_length_reach_the_script() {
        let lua = Lua::new();
        let items: Vec<Reply> = (0..50_000).map(Reply::Integer).collect();
        let pairs: Vec<(Reply, Reply)> = (0..20_000)
            .map(|i| (Reply::bulk(format!("f{i}")), Reply::Integer(i)))
            .collect();
        for (reply, resp, len) in [
            (Reply::Array(items.clone()), 2, 50_000),
            (Reply::Set(items), 2, 50_000),
            (Reply::Map(pairs.clone()), 2, 40_000),
            (Reply::Pairs(pairs.clone()), 3, 20_000),
        ] {
            let Value::Table(t) = reply_to_lua(&lua, &reply, resp).unwrap() else {
                panic!("not a table");
            };
            assert_eq!(t.raw_len(), len);
        }
        let Value::Table(m) = reply_to_lua(&lua, &Reply::Map(pairs), 3).unwrap() else {
            panic!("not a table");
        };
        let inner: Table = m.raw_get("map").unwrap();
        assert_eq!(inner.raw_get::<i64>("f19999").unwrap(), 19_999);
    }

    #[test]
    fn a_status_or_big_number_with_line_breaks_stays_one_line() {
        let lua = Lua::new();
        assert_eq!(
            roundtrip(&lua, r"return {big_number='123\r\n123'}"),
            Reply::BigNumber(Bytes::from_static(b"123  123"))
        );
        assert_eq!(
            roundtrip(&lua, r"return {ok='a\nb'}"),
            Reply::Simple(Bytes::from_static(b"a b"))
        );
    }

    #[test]
    fn script_results_convert_as_redis_converts_them() {
        let lua = Lua::new();
        assert_eq!(roundtrip(&lua, "return 3.99"), Reply::Integer(3));
        assert_eq!(roundtrip(&lua, "return -3.99"), Reply::Integer(-3));
        assert_eq!(roundtrip(&lua, "return true"), Reply::Integer(1));
        assert_eq!(roundtrip(&lua, "return false"), Reply::Null);
        assert_eq!(roundtrip(&lua, "return nil"), Reply::Null);
        assert_eq!(roundtrip(&lua, "return 'x'"), Reply::bulk("x"));
        assert_eq!(
            roundtrip(&lua, "return {1, 'a', {2}, nil, 5}"),
            Reply::Array(vec![
                Reply::Integer(1),
                Reply::bulk("a"),
                Reply::Array(vec![Reply::Integer(2)])
            ])
        );
        assert_eq!(
            roundtrip(&lua, "return {err = 'My Error'}"),
            Reply::Error(Bytes::from_static(b"My Error"))
        );
        assert_eq!(
            roundtrip(&lua, "return {ok = 'FINE'}"),
            Reply::Simple(Bytes::from_static(b"FINE"))
        );
    }

    #[test]
    fn replies_reach_scripts_as_redis_hands_them() {
        let lua = Lua::new();
        let f = |r: &Reply, resp| reply_to_lua(&lua, r, resp).unwrap();
        assert!(matches!(f(&Reply::Null, 2), Value::Boolean(false)));
        assert!(matches!(f(&Reply::Null, 3), Value::Nil));
        let Value::Table(t) = f(&Reply::simple("OK"), 2) else {
            panic!("a status is a table")
        };
        assert_eq!(t.raw_get::<String>("ok").unwrap(), "OK");
        // What a script receives and returns unchanged comes back as it was.
        for r in [
            Reply::Integer(7),
            Reply::bulk("v"),
            Reply::Array(vec![Reply::bulk("a"), Reply::Integer(2)]),
            Reply::error("ERR bad"),
        ] {
            assert_eq!(lua_to_reply(&f(&r, 2)), r);
        }
    }
}
