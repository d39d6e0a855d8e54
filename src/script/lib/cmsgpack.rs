//! `cmsgpack`: lua-cmsgpack 0.4.0 as Redis bundles it. Integral numbers
//! take the smallest integer encoding, other numbers a float when exact,
//! else a double; tables whose keys are exactly 1..n are arrays; tables
//! nested 16 deep encode as nil (which is how cycles end).

use mlua::{Lua, Table, Value, Variadic};

use super::{arg_error, check_number, lua_error, type_name};

const MAX_NESTING: usize = 16;

fn encode_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        let u = n as u64;
        if u <= 127 {
            out.push(u as u8);
        } else if u <= 0xff {
            out.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_number(d: f64, out: &mut Vec<u8>) {
    // IS_INT64_EQUIVALENT: not infinite and (int64_t)d == d.
    if (crate::script::bridge::I64_LOW..crate::script::bridge::I64_HIGH).contains(&d) {
        let i = d as i64;
        if i as f64 == d {
            encode_int(i, out);
            return;
        }
    }
    let f = d as f32;
    if f64::from(f) == d {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn header(len: usize, fix: u8, m16: u8, m32: u8, out: &mut Vec<u8>) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(m16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(m32);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn is_array(t: &Table) -> mlua::Result<bool> {
    let (mut count, mut max) = (0f64, 0f64);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        let n = match k {
            Value::Integer(n) => n as f64,
            Value::Number(n) => n,
            _ => return Ok(false),
        };
        if n <= 0.0 || n.floor() != n {
            return Ok(false);
        }
        max = f64::max(max, n);
        count += 1.0;
    }
    Ok(max == count)
}

fn encode(v: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => encode_number(*n as f64, out),
        Value::Number(n) => encode_number(*n, out),
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Table(t) if level < MAX_NESTING => {
            if is_array(t)? {
                let len = t.raw_len();
                header(len, 0x90, 0xdc, 0xdd, out);
                for i in 1..=len {
                    let item: Value = t.raw_get(i)?;
                    encode(&item, level + 1, out)?;
                }
            } else {
                // Two passes, as Redis's lua_next walks do: holding every
                // key and value at once would overflow the Lua stack that
                // backs them on a large table.
                let mut count = 0;
                for pair in t.clone().pairs::<Value, Value>() {
                    pair?;
                    count += 1;
                }
                header(count, 0x80, 0xde, 0xdf, out);
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, val) = pair?;
                    encode(&k, level + 1, out)?;
                    encode(&val, level + 1, out)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

enum DecodeError {
    Eof,
    BadFormat,
    /// lua-cmsgpack's luaL_checkstack failing; the text names the function.
    StackOverflow(&'static str),
}

/// Lua's LUAI_MAXCSTACK: how many stack slots the decoder may hold. Each
/// array level holds 2 (table, index), each map level 3.
const MAX_SLOTS: usize = 8000;

struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
    slots: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        if self.s.len() - self.pos < n {
            return Err(DecodeError::Eof);
        }
        let b = &self.s[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    fn uint(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn decode(&mut self, lua: &Lua) -> Result<Value, DecodeError> {
        let tag = self.take(1)?[0];
        Ok(match tag {
            0x00..=0x7f => Value::Number(f64::from(tag)),
            0x80..=0x8f => self.map(lua, usize::from(tag & 0x0f))?,
            0x90..=0x9f => self.array(lua, usize::from(tag & 0x0f))?,
            0xa0..=0xbf => self.string(lua, usize::from(tag & 0x1f))?,
            0xc0 => Value::Nil,
            0xc2 => Value::Boolean(false),
            0xc3 => Value::Boolean(true),
            0xc4 | 0xd9 => {
                let n = self.uint(1)? as usize;
                self.string(lua, n)?
            }
            0xc5 | 0xda => {
                let n = self.uint(2)? as usize;
                self.string(lua, n)?
            }
            0xc6 | 0xdb => {
                let n = self.uint(4)? as usize;
                self.string(lua, n)?
            }
            0xca => Value::Number(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Value::Number(f64::from_bits(self.uint(8)?)),
            0xcc => Value::Number(self.uint(1)? as f64),
            0xcd => Value::Number(self.uint(2)? as f64),
            0xce => Value::Number(self.uint(4)? as f64),
            0xcf => Value::Number(self.uint(8)? as f64),
            0xd0 => Value::Number(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => Value::Number(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => Value::Number(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => Value::Number(self.uint(8)? as i64 as f64),
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(lua, n)?
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(lua, n)?
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(lua, n)?
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(lua, n)?
            }
            0xe0..=0xff => Value::Number(f64::from(tag as i8)),
            _ => return Err(DecodeError::BadFormat),
        })
    }

    fn string(&mut self, lua: &Lua, n: usize) -> Result<Value, DecodeError> {
        let b = self.take(n)?;
        lua.create_string(b)
            .map(Value::String)
            .map_err(|_| DecodeError::BadFormat)
    }

    fn array(&mut self, lua: &Lua, n: usize) -> Result<Value, DecodeError> {
        if self.slots + 2 > MAX_SLOTS {
            return Err(DecodeError::StackOverflow("mp_decode_to_lua_array"));
        }
        self.slots += 2;
        let t = lua.create_table().map_err(|_| DecodeError::BadFormat)?;
        for i in 1..=n {
            let v = self.decode(lua)?;
            t.raw_set(i, v).map_err(|_| DecodeError::BadFormat)?;
        }
        self.slots -= 2;
        Ok(Value::Table(t))
    }

    fn map(&mut self, lua: &Lua, n: usize) -> Result<Value, DecodeError> {
        if self.slots + 3 > MAX_SLOTS {
            return Err(DecodeError::StackOverflow("mp_decode_to_lua_hash"));
        }
        self.slots += 3;
        let t = lua.create_table().map_err(|_| DecodeError::BadFormat)?;
        for _ in 0..n {
            let k = self.decode(lua)?;
            let v = self.decode(lua)?;
            if !k.is_nil() {
                t.raw_set(k, v).map_err(|_| DecodeError::BadFormat)?;
            }
        }
        self.slots -= 3;
        Ok(Value::Table(t))
    }
}

fn unpack_full(
    lua: &Lua,
    a: &[Value],
    fname: &str,
    limit: i64,
    offset: i64,
) -> mlua::Result<Variadic<Value>> {
    let s = match a.first() {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(Value::Integer(n)) => n.to_string().into_bytes(),
        Some(Value::Number(n)) => crate::util::num::fmt_g(*n, 14).into_bytes(),
        other => {
            return Err(arg_error(
                lua,
                1,
                fname,
                format!("string expected, got {}", type_name(other)),
            ))
        }
    };
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(lua_error(
            lua,
            format!(
                "Invalid request to unpack with offset of {offset} and limit of {}.",
                s.len()
            ),
        ));
    }
    if offset as usize > s.len() {
        return Err(lua_error(
            lua,
            format!(
                "Start offset {offset} greater than input length {}.",
                s.len()
            ),
        ));
    }
    let limit = if decode_all { i64::MAX } else { limit };
    let mut c = Cursor {
        s: &s,
        pos: offset as usize,
        slots: 0,
    };
    let mut out = Vec::new();
    let mut cnt = 0;
    while c.pos < s.len() && cnt < limit {
        match c.decode(lua) {
            Ok(v) => out.push(v),
            Err(DecodeError::Eof) => return Err(lua_error(lua, "Missing bytes in input.")),
            Err(DecodeError::BadFormat) => return Err(lua_error(lua, "Bad data format in input.")),
            Err(DecodeError::StackOverflow(f)) => {
                return Err(lua_error(lua, format!("stack overflow (in function {f})")))
            }
        }
        cnt += 1;
    }
    if !decode_all {
        let next = if c.pos >= s.len() { -1 } else { c.pos as i64 };
        out.insert(0, Value::Integer(next));
    }
    Ok(Variadic::from_iter(out))
}

/// Builds the library table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, a: Variadic<Value>| {
            if a.is_empty() {
                return Err(arg_error(lua, 0, "pack", "MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in a.iter() {
                encode(v, 0, &mut out)?;
            }
            lua.create_string(out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, a: Variadic<Value>| unpack_full(lua, &a, "unpack", 0, 0))?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, a: Variadic<Value>| {
            let offset = match a.get(1) {
                None | Some(Value::Nil) => 0.0,
                Some(_) => check_number(lua, &a, 1, "unpack_one")?,
            };
            unpack_full(lua, &a, "unpack_one", 1, offset as i64)
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(|lua, a: Variadic<Value>| {
            let limit = check_number(lua, &a, 1, "unpack_limit")?;
            let offset = match a.get(2) {
                None | Some(Value::Nil) => 0.0,
                Some(_) => check_number(lua, &a, 2, "unpack_limit")?,
            };
            unpack_full(lua, &a, "unpack_limit", limit as i64, offset as i64)
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}
