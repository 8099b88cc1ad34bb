//! lua-cmsgpack's `cmsgpack` library, which Redis embeds: Lua values to MessagePack and back,
//! byte for byte as Redis 7.0 encodes them (smallest integer and string forms, a double as a
//! float when that loses nothing, a table as an array when its keys are exactly 1..n).

use mlua::{Lua, MultiValue, Table, Value, Variadic};

/// Tables nested deeper than this pack as nil: cmsgpack's answer to reference cycles.
const MAX_NESTING: usize = 16;
/// Unpacking refuses deeper nesting rather than recursing without bound on hostile input.
const MAX_UNPACK_DEPTH: usize = 256;

pub fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.is_empty() {
                return Err(crate::vm::arg_error(
                    lua,
                    0,
                    "MessagePack pack needs input.",
                ));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                pack(v, 0, &mut out)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, s: mlua::String| unpack_full(lua, &s.as_bytes(), None, 0))?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, (s, offset): (mlua::String, Option<i64>)| {
            unpack_full(lua, &s.as_bytes(), Some(1), offset.unwrap_or(0))
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(
            |lua, (s, limit, offset): (mlua::String, i64, Option<i64>)| {
                unpack_full(lua, &s.as_bytes(), Some(limit), offset.unwrap_or(0))
            },
        )?,
    )?;
    Ok(t)
}

fn pack(v: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => pack_int(*i, out),
        Value::Number(n) => pack_number(*n, out),
        Value::String(s) => pack_str(&s.as_bytes(), out),
        Value::Table(t) if level < MAX_NESTING => pack_table(t, level, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn pack_number(n: f64, out: &mut Vec<u8>) {
    // An integral double inside i64's range packs as an integer (-0.0 as 0, as C's cast has it).
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if n.is_finite() && n.trunc() == n && (-TWO_63..TWO_63).contains(&n) {
        return pack_int(n as i64, out);
    }
    let f = n as f32;
    if f64::from(f) == n {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_int(n: i64, out: &mut Vec<u8>) {
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        0x1_0000_0000.. => {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
        -32..=-1 => out.push(n as u8),
        -128..=-33 => out.extend_from_slice(&[0xd0, n as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(n as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn pack_str(s: &[u8], out: &mut Vec<u8>) {
    let n = s.len();
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[0xd9, n as u8]);
    } else if n <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// A collection header: the fix form's tag (`fix`, below 16 items), else 16- or 32-bit.
fn pack_len(n: usize, fix: u8, wide16: u8, out: &mut Vec<u8>) {
    if n < 16 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(wide16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(wide16 + 1);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn pack_table(t: &Table, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    // Two passes, each holding one pair at a time: mlua keeps every live Lua value in a
    // stack of its own that holds fewer than 8,000.
    let (mut count, mut max, mut array) = (0usize, 0usize, true);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        count += 1;
        if array {
            match array_index(&k) {
                Some(i) => max = max.max(i),
                None => array = false,
            }
        }
    }
    if array && max == count {
        pack_len(count, 0x90, 0xdc, out);
        for i in 1..=count {
            pack(&t.raw_get::<Value>(i)?, level + 1, out)?;
        }
    } else {
        pack_len(count, 0x80, 0xde, out);
        for pair in t.clone().pairs::<Value, Value>() {
            let (k, v) = pair?;
            pack(&k, level + 1, out)?;
            pack(&v, level + 1, out)?;
        }
    }
    Ok(())
}

/// A key as an array's index: a whole number of at least 1.
fn array_index(k: &Value) -> Option<usize> {
    let n = match k {
        Value::Integer(i) => *i as f64,
        Value::Number(n) => *n,
        _ => return None,
    };
    (n >= 1.0 && n.trunc() == n && n <= usize::MAX as f64).then_some(n as usize)
}

enum Failure {
    Eof,
    BadFormat,
    TooDeep,
    Lua(mlua::Error),
}

impl From<mlua::Error> for Failure {
    fn from(e: mlua::Error) -> Failure {
        Failure::Lua(e)
    }
}

/// Decodes up to `limit` objects (all, without one) from `offset`; with a limit, the values
/// are preceded by the offset after the last one decoded, or -1 at the input's end.
fn unpack_full(lua: &Lua, s: &[u8], limit: Option<i64>, offset: i64) -> mlua::Result<MultiValue> {
    if offset < 0 || limit.is_some_and(|l| l < 0) {
        // lua-cmsgpack names the input's length as the limit: Redis's text, kept.
        return Err(mlua::Error::runtime(format!(
            "Invalid request to unpack with offset of {offset} and limit of {}.",
            s.len()
        )));
    }
    if offset as u64 > s.len() as u64 {
        return Err(mlua::Error::runtime(format!(
            "Start offset {offset} greater than input length {}.",
            s.len()
        )));
    }
    let mut cur = &s[offset as usize..];
    let mut values = Vec::new();
    while !cur.is_empty() && limit.is_none_or(|l| (values.len() as i64) < l) {
        match unpack(lua, &mut cur, 0) {
            Ok(v) => values.push(v),
            Err(Failure::Eof) => return Err(mlua::Error::runtime("Missing bytes in input.")),
            Err(Failure::BadFormat) => {
                return Err(mlua::Error::runtime("Bad data format in input."))
            }
            Err(Failure::TooDeep) => {
                return Err(mlua::Error::runtime(format!(
                    "MessagePack input nested deeper than {MAX_UNPACK_DEPTH} levels."
                )))
            }
            Err(Failure::Lua(e)) => return Err(e),
        }
    }
    if limit.is_some() {
        let next = if cur.is_empty() {
            -1
        } else {
            (s.len() - cur.len()) as i64
        };
        values.insert(0, Value::Number(next as f64));
    }
    Ok(MultiValue::from_iter(values))
}

fn take<'a>(cur: &mut &'a [u8], n: usize) -> Result<&'a [u8], Failure> {
    if cur.len() < n {
        return Err(Failure::Eof);
    }
    let (head, rest) = cur.split_at(n);
    *cur = rest;
    Ok(head)
}

fn take_array<const N: usize>(cur: &mut &[u8]) -> Result<[u8; N], Failure> {
    let mut a = [0u8; N];
    a.copy_from_slice(take(cur, N)?);
    Ok(a)
}

fn take_len(cur: &mut &[u8], width: usize) -> Result<usize, Failure> {
    Ok(match width {
        1 => take(cur, 1)?[0] as usize,
        2 => u16::from_be_bytes(take_array(cur)?) as usize,
        _ => u32::from_be_bytes(take_array(cur)?) as usize,
    })
}

fn unpack(lua: &Lua, cur: &mut &[u8], depth: usize) -> Result<Value, Failure> {
    let tag = take(cur, 1)?[0];
    let num = |n: f64| Ok(Value::Number(n));
    match tag {
        0x00..=0x7f => num(f64::from(tag)),
        0xe0..=0xff => num(f64::from(tag as i8)),
        0xc0 => Ok(Value::Nil),
        0xc2 => Ok(Value::Boolean(false)),
        0xc3 => Ok(Value::Boolean(true)),
        0xcc => num(f64::from(take(cur, 1)?[0])),
        0xcd => num(f64::from(u16::from_be_bytes(take_array(cur)?))),
        0xce => num(f64::from(u32::from_be_bytes(take_array(cur)?))),
        0xcf => num(u64::from_be_bytes(take_array(cur)?) as f64),
        0xd0 => num(f64::from(take(cur, 1)?[0] as i8)),
        0xd1 => num(f64::from(i16::from_be_bytes(take_array(cur)?))),
        0xd2 => num(f64::from(i32::from_be_bytes(take_array(cur)?))),
        0xd3 => num(i64::from_be_bytes(take_array(cur)?) as f64),
        0xca => num(f64::from(f32::from_be_bytes(take_array(cur)?))),
        0xcb => num(f64::from_be_bytes(take_array(cur)?)),
        0xa0..=0xbf => bytes(lua, (tag & 0x1f) as usize, cur),
        // str 8/16/32 and bin 8/16/32 alike become Lua strings.
        0xd9 | 0xc4 => bytes(lua, take_len(cur, 1)?, cur),
        0xda | 0xc5 => bytes(lua, take_len(cur, 2)?, cur),
        0xdb | 0xc6 => bytes(lua, take_len(cur, 4)?, cur),
        0x90..=0x9f => array(lua, (tag & 0x0f) as usize, cur, depth),
        0xdc => array(lua, take_len(cur, 2)?, cur, depth),
        0xdd => array(lua, take_len(cur, 4)?, cur, depth),
        0x80..=0x8f => map(lua, (tag & 0x0f) as usize, cur, depth),
        0xde => map(lua, take_len(cur, 2)?, cur, depth),
        0xdf => map(lua, take_len(cur, 4)?, cur, depth),
        _ => Err(Failure::BadFormat),
    }
}

fn bytes(lua: &Lua, n: usize, cur: &mut &[u8]) -> Result<Value, Failure> {
    Ok(Value::String(lua.create_string(take(cur, n)?)?))
}

fn array(lua: &Lua, n: usize, cur: &mut &[u8], depth: usize) -> Result<Value, Failure> {
    if depth >= MAX_UNPACK_DEPTH {
        return Err(Failure::TooDeep);
    }
    // Sized by what the input can hold (an item is at least a byte), not by its claim.
    let t = lua.create_table_with_capacity(n.min(cur.len()), 0)?;
    for i in 1..=n {
        let v = unpack(lua, cur, depth + 1)?;
        t.raw_set(i, v)?;
    }
    Ok(Value::Table(t))
}

fn map(lua: &Lua, n: usize, cur: &mut &[u8], depth: usize) -> Result<Value, Failure> {
    if depth >= MAX_UNPACK_DEPTH {
        return Err(Failure::TooDeep);
    }
    let t = lua.create_table_with_capacity(0, n.min(cur.len() / 2))?;
    for _ in 0..n {
        let k = unpack(lua, cur, depth + 1)?;
        let v = unpack(lua, cur, depth + 1)?;
        t.raw_set(k, v)?;
    }
    Ok(Value::Table(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> Lua {
        crate::testing::with_library("cmsgpack", table)
    }

    fn hex(lua: &Lua, expr: &str) -> String {
        crate::testing::hex(lua, &format!("return cmsgpack.pack({expr})"))
    }

    #[test]
    fn packs_as_redis_does() {
        let lua = lua();
        for (expr, want) in [
            ("0.1", "cb3fb999999999999a"),
            ("-1099511627776", "d3ffffff0000000000"),
            ("1.5", "ca3fc00000"),
            (
                "0, 127, 128, 255, 256, 65535, 65536",
                "007fcc80ccffcd0100cdffffce00010000",
            ),
            ("2^32, 2^53", "cf0000000100000000cf0020000000000000"),
            ("-1, -32, -33, -128, -129", "ffe0d0dfd080d1ff7f"),
            (
                "-32768, -32769, -2^31, -2^31 - 1",
                "d18000d2ffff7fffd280000000d3ffffffff7fffffff",
            ),
            ("2^63", "ca5f000000"),
            ("2^64 + 2^12", "cb43f0000000000001"),
            ("-0.0", "00"),
            ("nil, true, false", "c0c3c2"),
            ("'abc'", "a3616263"),
            ("string.rep('x', 32)", &format!("d920{}", "78".repeat(32))),
            ("{}", "90"),
            ("{1, 'a', {}}", "9301a16190"),
            ("{[2] = 1}", "810201"),
            ("{[1] = 1, [1.5] = 2}", ""),
            ("print", "c0"),
        ] {
            let got = hex(&lua, expr);
            if want.is_empty() {
                assert!(got.starts_with("82"), "{expr}: {got}");
            } else {
                assert_eq!(got, want, "{expr}");
            }
        }
    }

    #[test]
    fn long_collections_take_wide_headers() {
        let lua = lua();
        let h = hex(
            &lua,
            "(function() local t = {} for i = 1, 16 do t[i] = i end return t end)()",
        );
        assert!(h.starts_with("dc0010"), "{h}");
        let h = hex(
            &lua,
            "(function() local t = {} for i = 1, 70000 do t[i] = 0 end return t end)()",
        );
        assert!(h.starts_with("dd00011170"), "{}", &h[..10]);
        let h = hex(&lua, "string.rep('x', 70000)");
        assert!(h.starts_with("db00011170"), "{}", &h[..10]);
    }

    #[test]
    fn tables_of_any_size_pack_and_unpack() {
        let lua = lua();
        let n: i64 = lua
            .load(
                r#"
                local a, m = {}, {}
                for i = 1, 100000 do a[i] = i; m[tostring(i)] = i end
                local ua = cmsgpack.unpack(cmsgpack.pack(a))
                local um = cmsgpack.unpack(cmsgpack.pack(m))
                assert(ua[100000] == 100000 and um["77777"] == 77777)
                return #ua
                "#,
            )
            .eval()
            .unwrap();
        assert_eq!(n, 100000);
    }

    #[test]
    fn nesting_past_sixteen_packs_as_nil() {
        let lua = lua();
        let h = hex(&lua, "(function() local a = {} a[1] = a return a end)()");
        assert_eq!(h, format!("{}c0", "91".repeat(16)));
    }

    #[test]
    fn round_trips_and_offsets() {
        let lua = lua();
        let ok: bool = lua
            .load(
                r#"
                local s = cmsgpack.pack({a = 1, b = {1, 2, "x"}}, "two", 3.25, nil, false)
                local t, two, f, n, b = cmsgpack.unpack(s)
                assert(t.a == 1 and t.b[3] == "x" and #t.b == 3)
                assert(two == "two" and f == 3.25 and n == nil and b == false)
                assert(select('#', cmsgpack.unpack(s)) == 5)
                local off, v = cmsgpack.unpack_one(s)
                assert(v.a == 1 and off > 0)
                off, v = cmsgpack.unpack_one(s, off)
                assert(v == "two")
                local off2, x, y, z = cmsgpack.unpack_limit(s, 3, off)
                assert(x == 3.25 and y == nil and z == false and off2 == -1)
                assert(select('#', cmsgpack.unpack("")) == 0)
                return true
                "#,
            )
            .eval()
            .unwrap();
        assert!(ok);
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let lua = lua();
        let err = |code: &str| lua.load(code).exec().unwrap_err().to_string();
        assert!(err("cmsgpack.unpack('\\205\\1')").contains("Missing bytes in input."));
        assert!(err("cmsgpack.unpack('\\193')").contains("Bad data format in input."));
        assert!(err("cmsgpack.unpack_one('\\1', 5)")
            .contains("Start offset 5 greater than input length 1."));
        assert!(err("cmsgpack.unpack_limit('\\1', -1)").contains("Invalid request to unpack"));
        assert!(err("cmsgpack.pack()").contains("MessagePack pack needs input."));
        // A claimed length far past the input allocates nothing and fails as truncated.
        assert!(err("cmsgpack.unpack('\\221\\127\\255\\255\\255')").contains("Missing bytes"));
        let deep = "\\145".repeat(MAX_UNPACK_DEPTH + 1);
        assert!(err(&format!("cmsgpack.unpack('{deep}')")).contains("nested deeper"));
    }
}
