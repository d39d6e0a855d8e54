//! Base functions that must see through the read-only proxies (`rawget`,
//! `rawset`, `next`, `pairs`, `setmetatable`, `getmetatable`), written in
//! Rust so that, like the C originals, their argument errors carry the
//! script's position (`user_script:1: bad argument #1 to 'next' ...`).

use mlua::{Function, Lua, MultiValue, Table, Value, Variadic};

use super::lib::{arg_error, lua_error, type_name};

/// The message for writes to a read-only table (raised without position).
const READONLY: &str = "Attempt to modify a readonly table";

fn check_table(lua: &Lua, args: &[Value], fname: &str) -> mlua::Result<Table> {
    match args.first() {
        Some(Value::Table(t)) => Ok(t.clone()),
        other => Err(arg_error(
            lua,
            1,
            fname,
            format!("table expected, got {}", type_name(other)),
        )),
    }
}

fn check_any(lua: &Lua, args: &[Value], i: usize, fname: &str) -> mlua::Result<()> {
    if args.len() <= i {
        return Err(arg_error(lua, i + 1, fname, "value expected"));
    }
    Ok(())
}

/// Lua 5.1's luaO_chunkid: how a chunk name shows in messages.
fn chunkid(src: &[u8]) -> Vec<u8> {
    let src = &src[..src.iter().position(|&b| b == 0).unwrap_or(src.len())];
    match src.first() {
        Some(b'=') => src[1..].iter().take(59).copied().collect(),
        Some(b'@') => src[1..].to_vec(),
        _ => {
            let line = src
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
                .unwrap_or(src.len());
            let len = line.min(43);
            let mut out = b"[string \"".to_vec();
            out.extend_from_slice(&src[..len]);
            if len < src.len() {
                out.extend_from_slice(b"...");
            }
            out.extend_from_slice(b"\"]");
            out
        }
    }
}

/// `loadstring(s [, name])`: text chunks only (Redis's Lua refuses
/// bytecode as a lexer error), compiled into the script environment.
fn loadstring(lua: &Lua, env: &Table, a: &[Value]) -> mlua::Result<(Value, Value)> {
    let code: Vec<u8> = match a.first() {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(Value::Integer(n)) => n.to_string().into_bytes(),
        Some(Value::Number(n)) => crate::util::num::fmt_g(*n, 14).into_bytes(),
        other => {
            return Err(arg_error(
                lua,
                1,
                "loadstring",
                format!("string expected, got {}", type_name(other)),
            ))
        }
    };
    let name: Vec<u8> = match a.get(1) {
        None | Some(Value::Nil) => code.clone(),
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(Value::Integer(n)) => n.to_string().into_bytes(),
        Some(Value::Number(n)) => crate::util::num::fmt_g(*n, 14).into_bytes(),
        other => {
            return Err(arg_error(
                lua,
                2,
                "loadstring",
                format!("string expected, got {}", type_name(other)),
            ))
        }
    };
    if code.first() == Some(&27) {
        let mut msg = chunkid(&name);
        msg.extend_from_slice(b":1: unexpected symbol near 'char(27)'");
        return Ok((Value::Nil, Value::String(lua.create_string(msg)?)));
    }
    let chunk = lua
        .load(code)
        .set_name(String::from_utf8_lossy(&name).into_owned())
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(env.clone());
    match chunk.into_function() {
        Ok(f) => Ok((Value::Function(f), Value::Nil)),
        Err(e) => Ok((
            Value::Nil,
            Value::String(lua.create_string(super::lua::error_text(&e))?),
        )),
    }
}

/// Installs the functions into the real globals `g`. `real_of` maps each
/// proxy to its table, `meta_view` gives what getmetatable shows for one.
pub fn install(
    lua: &Lua,
    g: &Table,
    env: &Table,
    real_of: Table,
    meta_view: Table,
) -> mlua::Result<()> {
    let env = env.clone();
    g.raw_set(
        "loadstring",
        lua.create_function(move |lua, a: Variadic<Value>| loadstring(lua, &env, &a))?,
    )?;
    let orig_next: Function = g.raw_get("next")?;
    let orig_getmetatable: Function = g.raw_get("getmetatable")?;
    let real = {
        let real_of = real_of.clone();
        move |t: &Table| -> Option<Table> {
            real_of.raw_get::<Option<Table>>(t.clone()).ok().flatten()
        }
    };

    let r = real.clone();
    g.raw_set(
        "rawget",
        lua.create_function(move |lua, a: Variadic<Value>| {
            let t = check_table(lua, &a, "rawget")?;
            check_any(lua, &a, 1, "rawget")?;
            let t = r(&t).unwrap_or(t);
            t.raw_get::<Value>(a[1].clone())
        })?,
    )?;

    let r = real.clone();
    g.raw_set(
        "rawset",
        lua.create_function(move |lua, a: Variadic<Value>| {
            let t = check_table(lua, &a, "rawset")?;
            check_any(lua, &a, 1, "rawset")?;
            check_any(lua, &a, 2, "rawset")?;
            if r(&t).is_some() {
                return Err(mlua::Error::RuntimeError(READONLY.into()));
            }
            t.raw_set(a[1].clone(), a[2].clone())?;
            Ok(t)
        })?,
    )?;

    let r = real.clone();
    let next = orig_next.clone();
    g.raw_set(
        "next",
        lua.create_function(move |lua, a: Variadic<Value>| {
            let t = check_table(lua, &a, "next")?;
            let t = r(&t).unwrap_or(t);
            let key = a.get(1).cloned().unwrap_or(Value::Nil);
            next.call::<MultiValue>((t, key)).map_err(|e| {
                // Re-raise Lua's own message, without the traceback mlua
                // adds when Rust calls into Lua.
                let text = super::lua::error_text(&e);
                let head = text.split("\nstack traceback:").next().unwrap_or("");
                mlua::Error::RuntimeError(head.to_string())
            })
        })?,
    )?;

    let r = real.clone();
    let next = orig_next;
    g.raw_set(
        "pairs",
        lua.create_function(move |lua, a: Variadic<Value>| {
            let t = check_table(lua, &a, "pairs")?;
            let t = r(&t).unwrap_or(t);
            Ok((next.clone(), t, Value::Nil))
        })?,
    )?;

    let r = real.clone();
    g.raw_set(
        "setmetatable",
        lua.create_function(move |lua, a: Variadic<Value>| {
            let t = check_table(lua, &a, "setmetatable")?;
            let m = match a.get(1) {
                Some(Value::Nil) => None,
                Some(Value::Table(m)) => Some(m.clone()),
                _ => return Err(arg_error(lua, 2, "setmetatable", "nil or table expected")),
            };
            if r(&t).is_some() {
                return Err(mlua::Error::RuntimeError(READONLY.into()));
            }
            if let Some(old) = t.metatable() {
                if !old.raw_get::<Value>("__metatable")?.is_nil() {
                    return Err(lua_error(lua, "cannot change a protected metatable"));
                }
            }
            t.set_metatable(m)?;
            Ok(t)
        })?,
    )?;

    let r = real;
    g.raw_set(
        "getmetatable",
        lua.create_function(move |lua, a: Variadic<Value>| {
            check_any(lua, &a, 0, "getmetatable")?;
            if let Value::Table(t) = &a[0] {
                if r(t).is_some() {
                    return meta_view.raw_get::<Value>(t.clone());
                }
            }
            orig_getmetatable.call::<Value>(a[0].clone())
        })?,
    )?;
    Ok(())
}
