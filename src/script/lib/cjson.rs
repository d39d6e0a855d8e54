//! `cjson`: lua-cjson 2.1.0 as Redis bundles it. Encoding writes numbers
//! with `%.14g`, escapes `/` and control characters, treats tables whose
//! keys are all positive integers as arrays (refusing excessively sparse
//! ones) and everything else as objects. Decoding reports errors the way
//! lua-cjson does (`Expected value but found invalid token at character 1`).

use std::cell::Cell;
use std::rc::Rc;

use mlua::{LightUserData, Lua, Table, Value, Variadic};

use super::{arg_error, lua_error, opt_number};
use crate::util::num::fmt_g;

struct Cfg {
    encode_max_depth: Cell<i64>,
    decode_max_depth: Cell<i64>,
    sparse_convert: Cell<bool>,
    sparse_ratio: Cell<i64>,
    sparse_safe: Cell<i64>,
    precision: Cell<i64>,
    encode_invalid: Cell<bool>,
    decode_invalid: Cell<bool>,
    keep_buffer: Cell<bool>,
}

/// `cjson.null`: a light userdata holding NULL.
pub fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn is_null(v: &Value) -> bool {
    matches!(v, Value::LightUserData(p) if p.0.is_null())
}

/// Builds the library table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let cfg = Rc::new(Cfg {
        encode_max_depth: Cell::new(1000),
        decode_max_depth: Cell::new(1000),
        sparse_convert: Cell::new(false),
        sparse_ratio: Cell::new(2),
        sparse_safe: Cell::new(10),
        precision: Cell::new(14),
        encode_invalid: Cell::new(false),
        decode_invalid: Cell::new(true),
        keep_buffer: Cell::new(true),
    });
    let t = lua.create_table()?;
    let c = cfg.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, a: Variadic<Value>| {
            if a.len() != 1 {
                return Err(arg_error(lua, 1, "encode", "expected 1 argument"));
            }
            let mut out = Vec::new();
            encode(lua, &c, &a[0], 0, &mut out)?;
            lua.create_string(out)
        })?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, a: Variadic<Value>| {
            if a.len() != 1 {
                return Err(arg_error(lua, 1, "decode", "expected 1 argument"));
            }
            let text = match &a[0] {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Integer(n) => n.to_string().into_bytes(),
                Value::Number(n) => fmt_g(*n, 14).into_bytes(),
                other => {
                    return Err(arg_error(
                        lua,
                        1,
                        "decode",
                        format!("string expected, got {}", super::type_name(Some(other))),
                    ))
                }
            };
            // lua-cjson works on a C string: a NUL ends the input.
            let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
            super::json_decode::decode(lua, &text[..end], c.decode_max_depth.get())
        })?,
    )?;
    let int_setting = |name: &'static str, get: fn(&Cfg) -> &Cell<i64>, lo: i64, hi: i64| {
        let c = cfg.clone();
        lua.create_function(move |lua, a: Variadic<Value>| {
            let cell = get(&c);
            if let Some(v) = a.first().filter(|v| !v.is_nil()) {
                let n = super::to_number(v).map(|n| n as i64);
                match n {
                    Some(n) if (lo..=hi).contains(&n) => cell.set(n),
                    _ => {
                        return Err(arg_error(
                            lua,
                            1,
                            name,
                            format!("expected integer between {lo} and {hi}"),
                        ))
                    }
                }
            }
            Ok(cell.get())
        })
    };
    t.raw_set(
        "encode_max_depth",
        int_setting(
            "encode_max_depth",
            |c| &c.encode_max_depth,
            1,
            i64::from(i32::MAX),
        )?,
    )?;
    t.raw_set(
        "decode_max_depth",
        int_setting(
            "decode_max_depth",
            |c| &c.decode_max_depth,
            1,
            i64::from(i32::MAX),
        )?,
    )?;
    t.raw_set(
        "encode_number_precision",
        int_setting("encode_number_precision", |c| &c.precision, 1, 14)?,
    )?;
    let bool_setting = |get: fn(&Cfg) -> &Cell<bool>| {
        let c = cfg.clone();
        lua.create_function(move |_, a: Variadic<Value>| {
            let cell = get(&c);
            match a.first() {
                Some(Value::Boolean(b)) => cell.set(*b),
                Some(Value::String(s)) => cell.set(s.as_bytes().as_ref() == b"on"),
                _ => {}
            }
            Ok(cell.get())
        })
    };
    t.raw_set("encode_keep_buffer", bool_setting(|c| &c.keep_buffer)?)?;
    t.raw_set(
        "encode_invalid_numbers",
        bool_setting(|c| &c.encode_invalid)?,
    )?;
    t.raw_set(
        "decode_invalid_numbers",
        bool_setting(|c| &c.decode_invalid)?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "encode_sparse_array",
        lua.create_function(move |lua, a: Variadic<Value>| {
            match a.first() {
                Some(Value::Boolean(b)) => c.sparse_convert.set(*b),
                Some(Value::String(s)) => c.sparse_convert.set(s.as_bytes().as_ref() == b"on"),
                _ => {}
            }
            if a.len() > 1 {
                c.sparse_ratio
                    .set(opt_number(lua, &a, 1, "encode_sparse_array", 2.0)? as i64);
            }
            if a.len() > 2 {
                c.sparse_safe
                    .set(opt_number(lua, &a, 2, "encode_sparse_array", 10.0)? as i64);
            }
            Ok((
                c.sparse_convert.get(),
                c.sparse_ratio.get(),
                c.sparse_safe.get(),
            ))
        })?,
    )?;
    let module = t.clone();
    t.raw_set("new", lua.create_function(move |_, ()| Ok(module.clone()))?)?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

fn type_of(v: &Value) -> &'static str {
    super::type_name(Some(v))
}

fn exception(lua: &Lua, v: &Value, reason: &str) -> mlua::Error {
    lua_error(lua, format!("Cannot serialise {}: {reason}", type_of(v)))
}

fn append_string(s: &[u8], out: &mut Vec<u8>) {
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
            0..=0x1f | 0x7f => {
                out.extend_from_slice(format!("\\u{:04x}", b).as_bytes());
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

fn append_number(lua: &Lua, cfg: &Cfg, v: &Value, d: f64, out: &mut Vec<u8>) -> mlua::Result<()> {
    if !d.is_finite() {
        if !cfg.encode_invalid.get() {
            return Err(exception(lua, v, "must not be NaN or Inf"));
        }
        out.extend_from_slice(fmt_g(d, 14).as_bytes());
        return Ok(());
    }
    out.extend_from_slice(fmt_g(d, cfg.precision.get() as i32).as_bytes());
    Ok(())
}

/// lua-cjson's lua_array_length: the array size, or None for an object.
fn array_length(lua: &Lua, cfg: &Cfg, t: &Table) -> mlua::Result<Option<usize>> {
    let mut max = 0f64;
    let mut items = 0f64;
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        let k = match k {
            Value::Integer(n) => n as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if k < 1.0 || k.floor() != k {
            return Ok(None);
        }
        if k > max {
            max = k;
        }
        items += 1.0;
    }
    let ratio = cfg.sparse_ratio.get() as f64;
    if ratio > 0.0 && max > items * ratio && max > cfg.sparse_safe.get() as f64 {
        if !cfg.sparse_convert.get() {
            return Err(exception(
                lua,
                &Value::Table(t.clone()),
                "excessively sparse array",
            ));
        }
        return Ok(None);
    }
    Ok(Some(max as usize))
}

fn encode(lua: &Lua, cfg: &Cfg, v: &Value, depth: i64, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::String(s) => append_string(&s.as_bytes(), out),
        Value::Integer(n) => append_number(lua, cfg, v, *n as f64, out)?,
        Value::Number(n) => append_number(lua, cfg, v, *n, out)?,
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Nil => out.extend_from_slice(b"null"),
        v if is_null(v) => out.extend_from_slice(b"null"),
        Value::Table(t) => {
            let depth = depth + 1;
            if depth > cfg.encode_max_depth.get() {
                return Err(lua_error(
                    lua,
                    format!("Cannot serialise, excessive nesting ({depth})"),
                ));
            }
            match array_length(lua, cfg, t)? {
                Some(len) if len > 0 => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: Value = t.raw_get(i)?;
                        encode(lua, cfg, &item, depth, out)?;
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.clone().pairs::<Value, Value>() {
                        let (k, val) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => append_string(&s.as_bytes(), out),
                            Value::Integer(n) => {
                                out.push(b'"');
                                append_number(lua, cfg, &k, *n as f64, out)?;
                                out.push(b'"');
                            }
                            Value::Number(n) => {
                                out.push(b'"');
                                append_number(lua, cfg, &k, *n, out)?;
                                out.push(b'"');
                            }
                            other => {
                                return Err(exception(
                                    lua,
                                    other,
                                    "table key must be a number or string",
                                ))
                            }
                        }
                        out.push(b':');
                        encode(lua, cfg, &val, depth, out)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => return Err(exception(lua, other, "type not supported")),
    }
    Ok(())
}
