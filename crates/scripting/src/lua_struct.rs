//! Roberto Ierusalimschy's `struct` library, which Redis embeds: binary packing of numbers and
//! strings by a format (`>` big-endian, `<` little-endian, `!n` alignment; `b B h H l L T i[n]
//! I[n]` integers, `f d` floats, `c[n]` and `s` strings, `x` padding), with the sizes, texts
//! and bounds of Redis 7.0's copy (integers of up to 32 bytes, sizes checked for overflow).

use mlua::{Lua, MultiValue, Table, Value, Variadic};

/// The largest integer size `i[n]`/`I[n]` takes.
const MAX_INT_SIZE: usize = 32;
/// The alignment `!` alone sets: a double's, as C lays out `struct { char c; double d; }`.
const MAX_ALIGN: usize = 8;

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Big,
    Little,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Default for Header {
    fn default() -> Header {
        // The platform's: x86-64 and AArch64 as Redis runs on them.
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

fn error(text: String) -> mlua::Error {
    mlua::Error::runtime(text)
}

fn arg_error(lua: &Lua, n: usize, text: &str) -> mlua::Error {
    crate::vm::arg_error(lua, n, text)
}

pub fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, (fmt, args): (mlua::String, Variadic<Value>)| {
            pack(lua, &fmt.as_bytes(), &args)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(
            |lua, (fmt, data, pos): (mlua::String, mlua::String, Option<i64>)| {
                unpack(lua, &fmt.as_bytes(), &data.as_bytes(), pos.unwrap_or(1))
            },
        )?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|lua, fmt: mlua::String| size(lua, &fmt.as_bytes()))?,
    )?;
    Ok(t)
}

/// A format's reader: the option characters with their optional numbers.
struct Format<'a> {
    fmt: &'a [u8],
    at: usize,
}

impl Format<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = *self.fmt.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    /// The number written at this point of the format, or `default`.
    fn num(&mut self, default: usize) -> mlua::Result<usize> {
        if !self.fmt.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: usize = 0;
        while let Some(d) = self.fmt.get(self.at).filter(|c| c.is_ascii_digit()) {
            let d = usize::from(d - b'0');
            if a > (i32::MAX as usize) / 10 || a * 10 > i32::MAX as usize - d {
                return Err(error("integral size overflow".into()));
            }
            a = a * 10 + d;
            self.at += 1;
        }
        Ok(a)
    }

    /// The size of option `opt` (0 for those without one).
    fn size(&mut self, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.num(1)?,
            b'i' | b'I' => {
                let n = self.num(4)?;
                if n > MAX_INT_SIZE {
                    return Err(error(format!(
                        "integral size {n} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                n
            }
            _ => 0,
        })
    }

    /// Applies a control option (endianness, alignment, a space), or refuses `opt`.
    fn control(&mut self, lua: &Lua, opt: u8, h: &mut Header) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.endian = Endian::Big,
            b'<' => h.endian = Endian::Little,
            b'!' => {
                let a = self.num(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(error(format!("alignment {a} is not a power of 2")));
                }
                h.align = a;
            }
            _ => {
                let text = format!("invalid format option '{}'", char::from(opt));
                return Err(arg_error(lua, 1, &text));
            }
        }
        Ok(())
    }
}

/// Padding before an item of `size` at offset `len`, as C's `gettoalign` computes it.
fn to_align(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size.wrapping_sub(len & size.wrapping_sub(1))) & size.wrapping_sub(1)
}

fn is_integer(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

fn number(lua: &Lua, v: Option<&Value>, arg: usize) -> mlua::Result<f64> {
    match v {
        Some(Value::Number(n)) => Ok(*n),
        Some(Value::Integer(n)) => Ok(*n as f64),
        Some(Value::String(s)) => match s.to_str().ok().and_then(|s| s.trim().parse().ok()) {
            Some(n) => Ok(n),
            None => Err(arg_error(lua, arg, "number expected, got string")),
        },
        other => Err(arg_error(
            lua,
            arg,
            &format!(
                "number expected, got {}",
                other.map_or("no value", |v| v.type_name())
            ),
        )),
    }
}

fn string(lua: &Lua, v: Option<&Value>, arg: usize) -> mlua::Result<Vec<u8>> {
    match v {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Number(n)) => Ok(crate::vm::lua_number(*n).into_bytes()),
        Some(Value::Integer(n)) => Ok(n.to_string().into_bytes()),
        other => Err(arg_error(
            lua,
            arg,
            &format!(
                "string expected, got {}",
                other.map_or("no value", |v| v.type_name())
            ),
        )),
    }
}

fn put_integer(n: f64, h: &Header, size: usize, out: &mut Vec<u8>) {
    // C's casts: a negative number through the signed type, so that it wraps.
    let mut value: u64 = if n < 0.0 { (n as i64) as u64 } else { n as u64 };
    let mut bytes = vec![0u8; size];
    for b in bytes.iter_mut() {
        *b = (value & 0xff) as u8;
        value >>= 8;
    }
    if h.endian == Endian::Big {
        bytes.reverse();
    }
    out.extend_from_slice(&bytes);
}

fn get_integer(data: &[u8], h: &Header, signed: bool) -> f64 {
    let size = data.len();
    let mut l: u64 = 0;
    let mut fold = |b: &u8| l = (l << 8) | u64::from(*b);
    match h.endian {
        Endian::Big => data.iter().for_each(&mut fold),
        Endian::Little => data.iter().rev().for_each(&mut fold),
    }
    if !signed {
        return l as f64;
    }
    if size < 8 {
        let mask = u64::MAX << (size * 8 - 1);
        if l & mask != 0 {
            l |= mask;
        }
    }
    l as i64 as f64
}

fn pack(lua: &Lua, fmt: &[u8], args: &[Value]) -> mlua::Result<mlua::String> {
    let mut h = Header::default();
    let mut f = Format { fmt, at: 0 };
    let mut out = Vec::new();
    let mut arg = 0usize;
    while let Some(opt) = f.next() {
        let size = f.size(opt)?;
        let pad = to_align(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        // Lua numbers the format 1 and the values from 2.
        let argn = arg + 2;
        match opt {
            _ if is_integer(opt) => {
                put_integer(number(lua, args.get(arg), argn)?, &h, size, &mut out);
                arg += 1;
            }
            b'x' => out.push(0),
            b'f' => {
                let v = number(lua, args.get(arg), argn)? as f32;
                arg += 1;
                match h.endian {
                    Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
                    Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
                }
            }
            b'd' => {
                let v = number(lua, args.get(arg), argn)?;
                arg += 1;
                match h.endian {
                    Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
                    Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
                }
            }
            b'c' | b's' => {
                let s = string(lua, args.get(arg), argn)?;
                arg += 1;
                let size = if size == 0 { s.len() } else { size };
                if s.len() < size {
                    // C names the argument after the one it checked: Redis's text, kept.
                    return Err(arg_error(lua, argn + 1, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(lua, opt, &mut h)?,
        }
    }
    lua.create_string(&out)
}

fn unpack(lua: &Lua, fmt: &[u8], data: &[u8], pos: i64) -> mlua::Result<MultiValue> {
    if pos <= 0 {
        return Err(arg_error(lua, 3, "offset must be 1 or greater"));
    }
    let ld = data.len();
    let mut pos = (pos - 1) as usize;
    let mut h = Header::default();
    let mut f = Format { fmt, at: 0 };
    let mut values: Vec<Value> = Vec::new();
    let too_short = || arg_error(lua, 2, "data string too short");
    while let Some(opt) = f.next() {
        let mut size = f.size(opt)?;
        pos = pos.saturating_add(to_align(pos, &h, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        // Values stay below mlua's limit of live values: a format is what the script wrote.
        if values.len() >= 4096 {
            return Err(error("too many results to unpack".into()));
        }
        match opt {
            _ if is_integer(opt) => {
                let signed = opt.is_ascii_lowercase();
                let v = get_integer(&data[pos..pos + size], &h, signed);
                values.push(Value::Number(v));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().map_err(|_| too_short())?;
                let v = match h.endian {
                    Endian::Big => f32::from_be_bytes(b),
                    Endian::Little => f32::from_le_bytes(b),
                };
                values.push(Value::Number(f64::from(v)));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().map_err(|_| too_short())?;
                let v = match h.endian {
                    Endian::Big => f64::from_be_bytes(b),
                    Endian::Little => f64::from_le_bytes(b),
                };
                values.push(Value::Number(v));
            }
            b'c' => {
                if size == 0 {
                    // `c0`: the length is the value read just before.
                    let n = match values.pop() {
                        Some(Value::Number(n)) => n,
                        Some(Value::Integer(n)) => n as f64,
                        _ => return Err(error("format 'c0' needs a previous size".into())),
                    };
                    size = n as usize;
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                values.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(error("unfinished string in data".into()));
                };
                values.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                size = end + 1;
            }
            _ => f.control(lua, opt, &mut h)?,
        }
        pos += size;
    }
    values.push(Value::Number((pos + 1) as f64));
    Ok(MultiValue::from_iter(values))
}

fn size(lua: &Lua, fmt: &[u8]) -> mlua::Result<i64> {
    let mut h = Header::default();
    let mut f = Format { fmt, at: 0 };
    let mut pos = 0usize;
    while let Some(opt) = f.next() {
        let size = f.size(opt)?;
        pos += to_align(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_error(lua, 1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            f.control(lua, opt, &mut h)?;
        }
        pos += size;
    }
    Ok(pos as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> Lua {
        crate::testing::with_library("struct", table)
    }

    fn hex(lua: &Lua, args: &str) -> String {
        crate::testing::hex(lua, &format!("return struct.pack({args})"))
    }

    #[test]
    fn packs_as_c_lays_out() {
        let lua = lua();
        for (args, want) in [
            ("'>I2', 258", "0102"),
            ("'<I2', 258", "0201"),
            ("'>i4', -2", "fffffffe"),
            ("'b', -1", "ff"),
            ("'>h', -2", "fffe"),
            ("'>l', 1", "0000000000000001"),
            ("'>I3', 65536", "010000"),
            ("'>i10', -1", "0000ffffffffffffffff"),
            ("'>d', 1.5", "3ff8000000000000"),
            ("'<f', 1.5", "0000c03f"),
            ("'c3', 'abcdef'", "616263"),
            ("'c0', 'ab'", "6162"),
            ("'s', 'ab'", "616200"),
            ("'xb', 1", "0001"),
            ("'!4 b >i4', 1, 2", "0100000000000002"),
            ("'!b >d', 1, 0", "01000000000000000000000000000000"),
            ("' > B ', 7", "07"),
        ] {
            assert_eq!(hex(&lua, args), want, "{args}");
        }
    }

    #[test]
    fn unpacks_what_it_packed_and_the_next_position() {
        let lua = lua();
        let ok: bool = lua
            .load(
                r#"
                local s = struct.pack('>i2 I4 d c3 s b', -300, 4000000000, 2.25, 'xyz', 'zero', -5)
                local a, b, c, d, e, f, next = struct.unpack('>i2 I4 d c3 s b', s)
                assert(a == -300 and b == 4000000000 and c == 2.25 and d == 'xyz')
                assert(e == 'zero' and f == -5 and next == #s + 1)
                local str, nx, none = struct.unpack('B c0', '\3abcd')
                assert(str == 'abc' and nx == 5 and none == nil)
                local v, p = struct.unpack('>I2', '\0\0\1\2', 3)
                assert(v == 258 and p == 5)
                assert(struct.size('>!4 b i4 d') == 16)
                return true
                "#,
            )
            .eval()
            .unwrap();
        assert!(ok);
    }

    #[test]
    fn bad_formats_and_data_are_clear_errors() {
        let lua = lua();
        let err = |code: &str| lua.load(code).exec().unwrap_err().to_string();
        assert!(err("struct.unpack('>I4', 'ab')").contains("data string too short"));
        assert!(err("struct.unpack('b', 'a', 0)").contains("offset must be 1 or greater"));
        assert!(err("struct.pack('q', 1)").contains("invalid format option 'q'"));
        assert!(
            err("struct.pack('i33', 1)").contains("integral size 33 is larger than limit of 32")
        );
        assert!(err("struct.pack('i99999999999', 1)").contains("integral size overflow"));
        assert!(err("struct.pack('!3', 1)").contains("alignment 3 is not a power of 2"));
        assert!(err("struct.pack('c5', 'ab')").contains("string too short"));
        assert!(err("struct.pack('i')").contains("number expected, got no value"));
        assert!(err("struct.unpack('s', 'abc')").contains("unfinished string in data"));
        assert!(err("struct.unpack('c0', 'abc')").contains("format 'c0' needs a previous size"));
        assert!(err("struct.size('s')").contains("has no fixed size"));
        assert!(err("struct.unpack('c4000000', 'a')").contains("data string too short"));
    }
}
