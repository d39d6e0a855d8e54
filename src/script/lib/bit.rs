//! `bit`: LuaBitOp 1.0.2 semantics. Numbers become 32-bit integers by
//! rounding modulo 2^32 (the 2^52+2^51 trick), results are signed 32-bit.

use mlua::{Lua, Table, Value, Variadic};

use super::{check_number, opt_number};

/// LuaBitOp's `barg`: the low 32 bits of `n` rounded to an integer.
fn tobit(n: f64) -> i32 {
    let biased = n + 6_755_399_441_055_744.0;
    biased.to_bits() as u32 as i32
}

fn arg(lua: &Lua, args: &[Value], i: usize, name: &str) -> mlua::Result<i32> {
    check_number(lua, args, i, name).map(tobit)
}

fn ret(v: i32) -> Value {
    Value::Number(f64::from(v))
}

/// Builds the library table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "tobit",
        lua.create_function(|lua, a: Variadic<Value>| Ok(ret(arg(lua, &a, 0, "tobit")?)))?,
    )?;
    t.raw_set(
        "bnot",
        lua.create_function(|lua, a: Variadic<Value>| Ok(ret(!arg(lua, &a, 0, "bnot")?)))?,
    )?;
    type Op = fn(i32, i32) -> i32;
    let folds: [(&str, Op); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, op) in folds {
        t.raw_set(
            name,
            lua.create_function(move |lua, a: Variadic<Value>| {
                let mut acc = arg(lua, &a, 0, name)?;
                for i in 1..a.len() {
                    acc = op(acc, arg(lua, &a, i, name)?);
                }
                Ok(ret(acc))
            })?,
        )?;
    }
    let shifts: [(&str, Op); 5] = [
        ("lshift", |b, n| ((b as u32) << (n & 31)) as i32),
        ("rshift", |b, n| ((b as u32) >> (n & 31)) as i32),
        ("arshift", |b, n| b >> (n & 31)),
        ("rol", |b, n| (b as u32).rotate_left((n & 31) as u32) as i32),
        ("ror", |b, n| {
            (b as u32).rotate_right((n & 31) as u32) as i32
        }),
    ];
    for (name, op) in shifts {
        t.raw_set(
            name,
            lua.create_function(move |lua, a: Variadic<Value>| {
                let b = arg(lua, &a, 0, name)?;
                let n = arg(lua, &a, 1, name)?;
                Ok(ret(op(b, n)))
            })?,
        )?;
    }
    t.raw_set(
        "bswap",
        lua.create_function(|lua, a: Variadic<Value>| {
            Ok(ret(arg(lua, &a, 0, "bswap")?.swap_bytes()))
        })?,
    )?;
    t.raw_set(
        "tohex",
        lua.create_function(|lua, a: Variadic<Value>| {
            let b = arg(lua, &a, 0, "tohex")? as u32;
            let mut n = tobit(opt_number(lua, &a, 1, "tohex", 8.0)?);
            // As Redis's patched bit.tohex: INT_MIN cannot be negated.
            if n == i32::MIN {
                n += 1;
            }
            let digits: &[u8] = if n < 0 {
                n = n.wrapping_neg();
                b"0123456789ABCDEF"
            } else {
                b"0123456789abcdef"
            };
            let n = n.clamp(0, 8) as usize;
            let mut out = vec![0u8; n];
            let mut v = b;
            for slot in out.iter_mut().rev() {
                *slot = digits[(v & 15) as usize];
                v >>= 4;
            }
            lua.create_string(out)
        })?,
    )?;
    Ok(t)
}
