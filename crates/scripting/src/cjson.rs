//! The `cjson` library Redis embeds (Lua CJSON's behaviour): `cjson.encode`, `cjson.decode`
//! and `cjson.null`.
//!
//! Encoding follows Lua CJSON's defaults: a table whose keys are all positive integers is an
//! array when it is not too sparse (highest index at most 10, or at most twice the number of
//! items), with `null` in the gaps; any other table is an object, number keys written as
//! strings; an empty table is `{}`; integral numbers are written without a fraction, others
//! with 14 significant digits; `/` is escaped. Decoding gives tables, with `cjson.null` for
//! JSON's null. Error texts are close to Lua CJSON's but not always equal for malformed input.

use mlua::{LightUserData, Lua, Table, Value};

/// Deepest nesting either way.
const MAX_DEPTH: usize = 1000;

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn number(out: &mut Vec<u8>, n: f64) -> mlua::Result<()> {
    if !n.is_finite() {
        return Err(mlua::Error::runtime(
            "Cannot serialise number: must not be NaN or Inf",
        ));
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        out.extend_from_slice((n as i64).to_string().as_bytes());
    } else {
        out.extend_from_slice(crate::vm::lua_number(n).as_bytes());
    }
    Ok(())
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

fn encode_value(out: &mut Vec<u8>, v: &Value, depth: usize) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(u) if u.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Number(n) => number(out, *n)?,
        Value::String(s) => string(out, &s.as_bytes()),
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
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
                        encode_value(out, &t.raw_get::<Value>(i)?, depth + 1)?;
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
                                number(&mut key, n)?;
                                string(out, &key);
                            }
                            _ => {
                                return Err(mlua::Error::runtime(
                                    "Cannot serialise table: table key must be a number or string",
                                ))
                            }
                        }
                        out.push(b':');
                        encode_value(out, &v, depth + 1)?;
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

fn decode_value(lua: &Lua, v: serde_json::Value, depth: usize) -> mlua::Result<Value> {
    if depth >= MAX_DEPTH {
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
                t.raw_set(i + 1, decode_value(lua, item, depth + 1)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                t.raw_set(k, decode_value(lua, item, depth + 1)?)?;
            }
            Value::Table(t)
        }
    })
}

pub fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "encode",
        lua.create_function(|lua, v: Value| {
            let mut out = Vec::new();
            encode_value(&mut out, &v, 0)?;
            lua.create_string(out)
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(|lua, s: mlua::String| {
            let v: serde_json::Value = serde_json::from_slice(&s.as_bytes()).map_err(|e| {
                mlua::Error::runtime(format!(
                    "Expected value but found invalid token at character {}",
                    e.column()
                ))
            })?;
            decode_value(lua, v, 0)
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
}
