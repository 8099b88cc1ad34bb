//! LuaBitOp's `bit` library, which Redis embeds: 32-bit operations on numbers.

use mlua::{Lua, Table, Variadic};

/// A number as LuaBitOp reads it: modulo 2^32, as a signed 32-bit integer.
fn tobit(n: f64) -> i32 {
    let m = n.rem_euclid(4_294_967_296.0);
    (m as u64 as u32) as i32
}

pub fn table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("tobit", lua.create_function(|_, n: f64| Ok(tobit(n)))?)?;
    t.raw_set("bnot", lua.create_function(|_, n: f64| Ok(!tobit(n)))?)?;
    let fold = |lua: &Lua, op: fn(i32, i32) -> i32| {
        lua.create_function(move |_, (first, rest): (f64, Variadic<f64>)| {
            Ok(rest.iter().fold(tobit(first), |a, &b| op(a, tobit(b))))
        })
    };
    t.raw_set("band", fold(lua, |a, b| a & b)?)?;
    t.raw_set("bor", fold(lua, |a, b| a | b)?)?;
    t.raw_set("bxor", fold(lua, |a, b| a ^ b)?)?;
    let shift = |lua: &Lua, op: fn(i32, u32) -> i32| {
        lua.create_function(move |_, (x, n): (f64, f64)| Ok(op(tobit(x), (tobit(n) & 31) as u32)))
    };
    t.raw_set("lshift", shift(lua, |x, n| ((x as u32) << n) as i32)?)?;
    t.raw_set("rshift", shift(lua, |x, n| ((x as u32) >> n) as i32)?)?;
    t.raw_set("arshift", shift(lua, |x, n| x >> n)?)?;
    t.raw_set("rol", shift(lua, |x, n| (x as u32).rotate_left(n) as i32)?)?;
    t.raw_set("ror", shift(lua, |x, n| (x as u32).rotate_right(n) as i32)?)?;
    t.raw_set(
        "bswap",
        lua.create_function(|_, x: f64| Ok(tobit(x).swap_bytes()))?,
    )?;
    t.raw_set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let x = tobit(x) as u32;
            let n = n.map_or(8, tobit);
            let (width, upper) = (n.unsigned_abs().min(8) as usize, n < 0);
            let s = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            Ok(s[8 - width..].to_string())
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_match_luabitop() {
        let lua = Lua::new();
        lua.globals().set("bit", table(&lua).unwrap()).unwrap();
        let eval = |c: &str| lua.load(c).eval::<i64>().unwrap();
        assert_eq!(eval("return bit.band(7, 3)"), 3);
        assert_eq!(eval("return bit.bor(1, 2, 4)"), 7);
        assert_eq!(eval("return bit.bnot(0)"), -1);
        assert_eq!(eval("return bit.tobit(0xffffffff + 1)"), 0);
        assert_eq!(eval("return bit.lshift(1, 31)"), i64::from(i32::MIN));
        assert_eq!(eval("return bit.rshift(-1, 28)"), 15);
        assert_eq!(eval("return bit.arshift(-256, 4)"), -16);
        assert_eq!(eval("return bit.rol(0x12345678, 8)"), 0x34567812);
        let hex = lua
            .load("return bit.tohex(255, -4)")
            .eval::<String>()
            .unwrap();
        assert_eq!(hex, "00FF");
    }
}
