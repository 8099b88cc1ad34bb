//! The `cjson` library Redis embeds (Lua CJSON's behaviour): `cjson.encode`, `cjson.decode`,
//! `cjson.null`, and the settings `encode_max_depth`, `decode_max_depth`,
//! `encode_invalid_numbers`, `decode_invalid_numbers`, `encode_number_precision` and
//! `encode_keep_buffer` (accepted; buffers are not kept). Settings belong to the interpreter,
//! as in Redis: a script's change lasts until changed back or SCRIPT FLUSH.
//!
//! Encoding follows Lua CJSON's defaults: a table whose keys are all positive integers is an
//! array when it is not too sparse (highest index at most 10, or at most twice the number of
//! items), with `null` in the gaps; any other table is an object, number keys written as
//! strings; an empty table is `{}`; integral numbers are written without a fraction, others
//! with 14 significant digits; `/` is escaped. Decoding gives tables, with `cjson.null` for
//! JSON's null. Error texts are close to Lua CJSON's but not always equal for malformed input.

use std::sync::Arc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value};
use parking_lot::Mutex;

/// Deepest nesting either way, by default.
const MAX_DEPTH: usize = 1000;

/// What `encode_invalid_numbers` says of NaN and infinities.
#[derive(Clone, Copy, PartialEq)]
enum Invalid {
    /// An error (the default).
    Refuse,
    /// Written as `nan`, `inf`, `-inf` (not JSON, as Lua CJSON writes them).
    Write,
    /// Written as `null`.
    Null,
}

/// The library's settings.
#[derive(Clone, Copy)]
struct Config {
    encode_max_depth: usize,
    decode_max_depth: usize,
    encode_invalid: Invalid,
    decode_invalid: bool,
    precision: usize,
    keep_buffer: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encode_max_depth: MAX_DEPTH,
            decode_max_depth: MAX_DEPTH,
            encode_invalid: Invalid::Refuse,
            decode_invalid: true,
            precision: 14,
            keep_buffer: true,
        }
    }
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn number(out: &mut Vec<u8>, n: f64, cfg: &Config) -> mlua::Result<()> {
    if !n.is_finite() {
        match cfg.encode_invalid {
            Invalid::Refuse => {
                return Err(mlua::Error::runtime(
                    "Cannot serialise number: must not be NaN or Inf",
                ))
            }
            Invalid::Null => out.extend_from_slice(b"null"),
            Invalid::Write => out.extend_from_slice(crate::vm::lua_number(n).as_bytes()),
        }
        return Ok(());
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        out.extend_from_slice((n as i64).to_string().as_bytes());
    } else if cfg.precision == 14 {
        out.extend_from_slice(crate::vm::lua_number(n).as_bytes());
    } else {
        out.extend_from_slice(g_format(n, cfg.precision).as_bytes());
    }
    Ok(())
}

/// C's `%.{precision}g` of a finite `n`.
fn g_format(n: f64, precision: usize) -> String {
    let p = precision.max(1);
    let exp = if n == 0.0 {
        0
    } else {
        n.abs().log10().floor() as i32
    };
    let text = if exp < -4 || exp >= p as i32 {
        let s = format!("{:.*e}", p - 1, n);
        // Rust writes `1.5e3`; C writes `1.5e+03`, without trailing zeros in the mantissa.
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = trim_fraction(mantissa);
        let e: i32 = e.parse().unwrap_or(0);
        format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim_fraction(&format!("{n:.decimals$}")).to_string()
    };
    text
}

fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 || b == 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

/// The array length of `t` if it encodes as an array.
fn array_len(t: &Table) -> mlua::Result<Option<usize>> {
    let (mut max, mut items) = (0usize, 0usize);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        let idx = match k {
            Value::Integer(i) if i >= 1 => i as usize,
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => n as usize,
            _ => return Ok(None),
        };
        max = max.max(idx);
        items += 1;
    }
    if max > 10 && max > items * 2 {
        return Ok(None);
    }
    Ok(Some(max))
}

fn encode_value(out: &mut Vec<u8>, v: &Value, depth: usize, cfg: &Config) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(u) if u.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Number(n) => number(out, *n, cfg)?,
        Value::String(s) => string(out, &s.as_bytes()),
        Value::Table(t) => {
            if depth >= cfg.encode_max_depth {
                return Err(mlua::Error::runtime(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                )));
            }
            match array_len(t)? {
                Some(n) if n > 0 => {
                    out.push(b'[');
                    for i in 1..=n {
                        if i > 1 {
                            out.push(b',');
                        }
                        encode_value(out, &t.raw_get::<Value>(i)?, depth + 1, cfg)?;
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.clone().pairs::<Value, Value>() {
                        let (k, v) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match k {
                            Value::String(s) => string(out, &s.as_bytes()),
                            Value::Integer(n) => string(out, n.to_string().as_bytes()),
                            Value::Number(n) => {
                                let mut key = Vec::new();
                                number(&mut key, n, cfg)?;
                                string(out, &key);
                            }
                            _ => {
                                return Err(mlua::Error::runtime(
                                    "Cannot serialise table: table key must be a number or string",
                                ))
                            }
                        }
                        out.push(b':');
                        encode_value(out, &v, depth + 1, cfg)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )))
        }
    }
    Ok(())
}

fn decode_value(lua: &Lua, v: serde_json::Value, depth: usize, max: usize) -> mlua::Result<Value> {
    if depth >= max {
        return Err(mlua::Error::runtime(
            "Found too many nested data structures",
        ));
    }
    Ok(match v {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => Value::Boolean(b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, decode_value(lua, item, depth + 1, max)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                t.raw_set(k, decode_value(lua, item, depth + 1, max)?)?;
            }
            Value::Table(t)
        }
    })
}

/// A depth setting's argument (none: unchanged), as Lua CJSON checks it.
fn depth_arg(v: &Value, name: &str) -> mlua::Result<Option<usize>> {
    match v {
        Value::Nil => Ok(None),
        Value::Integer(n) if *n >= 1 && *n <= i64::from(i32::MAX) => Ok(Some(*n as usize)),
        Value::Number(n) if *n >= 1.0 && *n <= f64::from(i32::MAX) => Ok(Some(*n as usize)),
        _ => Err(mlua::Error::runtime(format!(
            "bad argument #1 to '{name}' (expected integer between 1 and 2147483647)"
        ))),
    }
}

/// A boolean setting's argument (none: unchanged): `true`/`false` or `"on"`/`"off"`.
fn switch_arg(v: &Value, name: &str) -> mlua::Result<Option<bool>> {
    match v {
        Value::Nil => Ok(None),
        Value::Boolean(b) => Ok(Some(*b)),
        Value::String(s) if &s.as_bytes()[..] == b"on" => Ok(Some(true)),
        Value::String(s) if &s.as_bytes()[..] == b"off" => Ok(Some(false)),
        _ => Err(mlua::Error::runtime(format!(
            "bad argument #1 to '{name}' (invalid option)"
        ))),
    }
}

fn first(args: &MultiValue) -> Value {
    args.iter().next().cloned().unwrap_or(Value::Nil)
}

pub fn table(lua: &Lua) -> mlua::Result<Table> {
    let cfg = Arc::new(Mutex::new(Config::default()));
    let t = lua.create_table()?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            let cfg = *c.lock();
            let mut out = Vec::new();
            encode_value(&mut out, &v, 0, &cfg)?;
            lua.create_string(out)
        })?,
    )?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "decode",
        lua.create_function(move |lua, s: mlua::String| {
            let cfg = *c.lock();
            let v: serde_json::Value = serde_json::from_slice(&s.as_bytes()).map_err(|e| {
                mlua::Error::runtime(format!(
                    "Expected value but found invalid token at character {}",
                    e.column()
                ))
            })?;
            decode_value(lua, v, 0, cfg.decode_max_depth)
        })?,
    )?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "encode_max_depth",
        lua.create_function(move |_, args: MultiValue| {
            let mut cfg = c.lock();
            if let Some(d) = depth_arg(&first(&args), "encode_max_depth")? {
                cfg.encode_max_depth = d;
            }
            Ok(cfg.encode_max_depth)
        })?,
    )?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "decode_max_depth",
        lua.create_function(move |_, args: MultiValue| {
            let mut cfg = c.lock();
            if let Some(d) = depth_arg(&first(&args), "decode_max_depth")? {
                cfg.decode_max_depth = d;
            }
            Ok(cfg.decode_max_depth)
        })?,
    )?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "encode_number_precision",
        lua.create_function(move |_, args: MultiValue| {
            let mut cfg = c.lock();
            match first(&args) {
                Value::Nil => {}
                Value::Integer(n) if (1..=14).contains(&n) => cfg.precision = n as usize,
                Value::Number(n) if (1.0..=14.0).contains(&n) => cfg.precision = n as usize,
                _ => {
                    return Err(mlua::Error::runtime(
                        "bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
                    ))
                }
            }
            Ok(cfg.precision)
        })?,
    )?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "encode_keep_buffer",
        lua.create_function(move |_, args: MultiValue| {
            let mut cfg = c.lock();
            if let Some(on) = switch_arg(&first(&args), "encode_keep_buffer")? {
                cfg.keep_buffer = on;
            }
            Ok(cfg.keep_buffer)
        })?,
    )?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "decode_invalid_numbers",
        lua.create_function(move |_, args: MultiValue| {
            let mut cfg = c.lock();
            if let Some(on) = switch_arg(&first(&args), "decode_invalid_numbers")? {
                cfg.decode_invalid = on;
            }
            Ok(cfg.decode_invalid)
        })?,
    )?;
    let c = Arc::clone(&cfg);
    t.raw_set(
        "encode_invalid_numbers",
        lua.create_function(move |lua, args: MultiValue| {
            let mut cfg = c.lock();
            match first(&args) {
                Value::String(s) if &s.as_bytes()[..] == b"null" => {
                    cfg.encode_invalid = Invalid::Null
                }
                v => {
                    if let Some(on) = switch_arg(&v, "encode_invalid_numbers")? {
                        cfg.encode_invalid = if on { Invalid::Write } else { Invalid::Refuse };
                    }
                }
            }
            Ok(match cfg.encode_invalid {
                Invalid::Refuse => Value::Boolean(false),
                Invalid::Write => Value::Boolean(true),
                Invalid::Null => Value::String(lua.create_string("null")?),
            })
        })?,
    )?;
    t.raw_set("null", null())?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(lua: &Lua, code: &str) -> String {
        lua.load(code).eval::<String>().unwrap()
    }

    #[test]
    fn encodes_and_decodes_as_lua_cjson_does() {
        let lua = Lua::new();
        lua.globals().set("cjson", table(&lua).unwrap()).unwrap();
        assert_eq!(
            eval(&lua, "return cjson.encode({1, 2, {a = 'x'}, true})"),
            r#"[1,2,{"a":"x"},true]"#
        );
        assert_eq!(eval(&lua, "return cjson.encode({})"), "{}");
        assert_eq!(eval(&lua, "return cjson.encode({a = 1.5})"), r#"{"a":1.5}"#);
        assert_eq!(
            eval(&lua, "return cjson.encode({[1] = 1, [3] = 3})"),
            "[1,null,3]"
        );
        // Too sparse for an array: an object, number keys as strings.
        assert_eq!(
            eval(
                &lua,
                "return tostring(cjson.decode(cjson.encode({[1] = 1, [30] = 3}))['30'])"
            ),
            "3"
        );
        assert_eq!(
            eval(&lua, r#"return cjson.encode('a"b/\\')"#),
            r#""a\"b\/\\""#
        );
        assert_eq!(
            eval(
                &lua,
                r#"local t = cjson.decode('[1,2.5,"x",null,{"k":[true]}]'); return tostring(t[4] == cjson.null) .. t[3] .. tostring(t[5].k[1])"#
            ),
            "truextrue"
        );
        assert!(lua
            .load("return cjson.encode(1/0)")
            .eval::<String>()
            .is_err());
        assert!(lua
            .load("return cjson.decode('{bad')")
            .eval::<Value>()
            .is_err());
    }

    #[test]
    fn settings_change_what_encode_and_decode_accept() {
        let lua = Lua::new();
        lua.globals().set("cjson", table(&lua).unwrap()).unwrap();
        let ok = |code: &str| lua.load(code).eval::<bool>().unwrap();
        assert!(ok("return cjson.encode_keep_buffer(false) == false"));
        assert!(ok(
            "cjson.encode_max_depth(1) return not pcall(cjson.encode, {a = {1}})"
        ));
        assert!(ok(
            "cjson.encode_max_depth(1000) return pcall(cjson.encode, {a = {1}})"
        ));
        assert!(ok(
            "cjson.decode_max_depth(1) return not pcall(cjson.decode, '[[1]]')"
        ));
        assert!(ok(
            "cjson.decode_max_depth(1000) return pcall(cjson.decode, '[[1]]')"
        ));
        assert!(ok("return not pcall(cjson.encode, 0/0)"));
        assert_eq!(
            eval(
                &lua,
                "cjson.encode_invalid_numbers(true) return cjson.encode({1/0})"
            ),
            "[inf]"
        );
        assert_eq!(
            eval(
                &lua,
                "cjson.encode_invalid_numbers('null') return cjson.encode({1/0})"
            ),
            "[null]"
        );
        assert!(ok("return cjson.encode_invalid_numbers(false) == false"));
        assert_eq!(
            eval(
                &lua,
                "cjson.encode_number_precision(3) return cjson.encode(3.14159)"
            ),
            "3.14"
        );
        assert!(lua.load("cjson.encode_max_depth(0)").exec().is_err());
    }
}
