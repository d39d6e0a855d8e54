//! `struct`: Roberto Ierusalimschy's struct library as Redis bundles it
//! (`pack`, `unpack`, `size`), with x86-64 sizes (long = 8, int = 4) and
//! little-endian native order.

use mlua::{Lua, Table, Value, Variadic};

use super::{arg_error, check_number, lua_error, type_name};

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

#[derive(Clone, Copy)]
struct Header {
    big: bool,
    align: usize,
}

const DEFAULT: Header = Header {
    big: false,
    align: 1,
};

/// The number at `fmt[*i..]`, or `default` when there is none; a number
/// past INT_MAX is an error, as struct.c's getnum.
fn getnum(lua: &Lua, fmt: &[u8], i: &mut usize, default: usize) -> mlua::Result<usize> {
    if !fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        return Ok(default);
    }
    let max = i32::MAX as usize;
    let mut a: usize = 0;
    while let Some(&d) = fmt.get(*i).filter(|d| d.is_ascii_digit()) {
        let d = usize::from(d - b'0');
        if a > max / 10 || a * 10 > max - d {
            return Err(lua_error(lua, "integral size overflow"));
        }
        a = a * 10 + d;
        *i += 1;
    }
    Ok(a)
}

fn optsize(lua: &Lua, opt: u8, fmt: &[u8], i: &mut usize) -> mlua::Result<usize> {
    Ok(match opt {
        b'B' | b'b' | b'x' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'c' => getnum(lua, fmt, i, 1)?,
        b'i' | b'I' => {
            let sz = getnum(lua, fmt, i, 4)?;
            if sz > MAXINTSIZE {
                return Err(lua_error(
                    lua,
                    format!("integral size {sz} is larger than limit of {MAXINTSIZE}"),
                ));
            }
            sz
        }
        _ => 0,
    })
}

fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    let align = size - 1;
    (size - (len & align)) & align
}

fn control(
    lua: &Lua,
    fname: &str,
    opt: u8,
    fmt: &[u8],
    i: &mut usize,
    h: &mut Header,
) -> mlua::Result<()> {
    match opt {
        b' ' => {}
        b'>' => h.big = true,
        b'<' => h.big = false,
        b'=' => h.big = false,
        b'!' => {
            let a = getnum(lua, fmt, i, MAXALIGN)?;
            if !a.is_power_of_two() {
                return Err(lua_error(lua, format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
        }
        other => {
            return Err(arg_error(
                lua,
                1,
                fname,
                format!("invalid format option '{}'", char::from(other)),
            ))
        }
    }
    Ok(())
}

fn check_string(lua: &Lua, a: &[Value], i: usize, fname: &str) -> mlua::Result<Vec<u8>> {
    match a.get(i) {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(n)) => Ok(n.to_string().into_bytes()),
        Some(Value::Number(n)) => Ok(crate::util::num::fmt_g(*n, 14).into_bytes()),
        other => Err(arg_error(
            lua,
            i + 1,
            fname,
            format!("string expected, got {}", type_name(other)),
        )),
    }
}

fn put_int(out: &mut Vec<u8>, n: f64, big: bool, size: usize) {
    let v: u64 = if n < 0.0 { (n as i64) as u64 } else { n as u64 };
    // Bytes past the 8 of the value are zero, even for negative numbers
    // (struct.c shifts an unsigned 64-bit value).
    let mut bytes = vec![0u8; size];
    for (k, b) in bytes.iter_mut().enumerate().take(size.min(8)) {
        *b = (v >> (8 * k)) as u8;
    }
    if big {
        bytes.reverse();
    }
    out.extend_from_slice(&bytes);
}

fn get_int(data: &[u8], big: bool, signed: bool, size: usize) -> f64 {
    let mut v: u64 = 0;
    let bytes: Vec<u8> = if big {
        data.iter().rev().copied().collect()
    } else {
        data.to_vec()
    };
    for (k, b) in bytes.iter().enumerate().take(size.min(8)) {
        v |= u64::from(*b) << (8 * k);
    }
    if signed && size > 0 && size < 8 {
        let mask = 1u64 << (size * 8 - 1);
        return ((v ^ mask).wrapping_sub(mask)) as i64 as f64;
    }
    if signed {
        v as i64 as f64
    } else {
        v as f64
    }
}

fn pack(lua: &Lua, a: &[Value]) -> mlua::Result<Value> {
    let fmt = check_string(lua, a, 0, "pack")?;
    let mut h = DEFAULT;
    let mut arg = 1;
    let mut out = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(lua, opt, &fmt, &mut i)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(lua, a, arg, "pack")?;
                arg += 1;
                put_int(&mut out, n, h.big, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, a, arg, "pack")? as f32;
                arg += 1;
                let b = if h.big {
                    f.to_be_bytes()
                } else {
                    f.to_le_bytes()
                };
                out.extend_from_slice(&b);
            }
            b'd' => {
                let d = check_number(lua, a, arg, "pack")?;
                arg += 1;
                let b = if h.big {
                    d.to_be_bytes()
                } else {
                    d.to_le_bytes()
                };
                out.extend_from_slice(&b);
            }
            b'c' | b's' => {
                let s = check_string(lua, a, arg, "pack")?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(arg_error(lua, arg + 1, "pack", "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => control(lua, "pack", opt, &fmt, &mut i, &mut h)?,
        }
    }
    Ok(Value::String(lua.create_string(out)?))
}

fn unpack(lua: &Lua, a: &[Value]) -> mlua::Result<Variadic<Value>> {
    let fmt = check_string(lua, a, 0, "unpack")?;
    let data = check_string(lua, a, 1, "unpack")?;
    let ld = data.len();
    let start = match a.get(2) {
        None | Some(Value::Nil) => 1.0,
        Some(_) => check_number(lua, a, 2, "unpack")?,
    };
    let mut pos = (start as i64 - 1).max(0) as usize;
    if start < 1.0 || pos > ld {
        return Err(arg_error(lua, 3, "unpack", "offset must be 1 or greater"));
    }
    let mut h = DEFAULT;
    let mut res: Vec<Value> = Vec::new();
    let mut i = 0;
    let short = |lua: &Lua| arg_error(lua, 2, "unpack", "data string too short");
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(lua, opt, &fmt, &mut i)?;
        pos += gettoalign(pos, &h, opt, size);
        if size > ld || pos > ld - size {
            return Err(short(lua));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                res.push(Value::Number(get_int(
                    &data[pos..pos + size],
                    h.big,
                    signed,
                    size,
                )));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let f = if h.big {
                    f32::from_be_bytes(b)
                } else {
                    f32::from_le_bytes(b)
                };
                res.push(Value::Number(f64::from(f)));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let d = if h.big {
                    f64::from_be_bytes(b)
                } else {
                    f64::from_le_bytes(b)
                };
                res.push(Value::Number(d));
            }
            b'c' => {
                if size == 0 {
                    let prev = res.last().and_then(super::to_number);
                    let Some(n) = prev else {
                        return Err(lua_error(lua, "format 'c0' needs a previous size"));
                    };
                    res.pop();
                    size = n.max(0.0) as usize;
                    if size > ld || pos > ld - size {
                        return Err(short(lua));
                    }
                }
                res.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(z) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(lua_error(lua, "unfinished string in data"));
                };
                res.push(Value::String(lua.create_string(&data[pos..pos + z])?));
                size = z + 1;
            }
            _ => control(lua, "unpack", opt, &fmt, &mut i, &mut h)?,
        }
        pos += size;
    }
    res.push(Value::Integer(pos as i64 + 1));
    Ok(Variadic::from_iter(res))
}

fn size(lua: &Lua, a: &[Value]) -> mlua::Result<i64> {
    let fmt = check_string(lua, a, 0, "size")?;
    let mut h = DEFAULT;
    let mut pos = 0;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(lua, opt, &fmt, &mut i)?;
        pos += gettoalign(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_error(lua, 1, "size", "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "size", "option 'c0' has no fixed size"));
        }
        if size == 0 {
            control(lua, "size", opt, &fmt, &mut i, &mut h)?;
        }
        pos += size;
    }
    Ok(pos as i64)
}

/// Builds the library table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, a: Variadic<Value>| pack(lua, &a))?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, a: Variadic<Value>| unpack(lua, &a))?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|lua, a: Variadic<Value>| size(lua, &a))?,
    )?;
    Ok(t)
}
