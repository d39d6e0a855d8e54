//! The Lua libraries Redis bundles, written in Rust with Redis's behaviour:
//! `bit` (LuaBitOp), `cjson` (lua-cjson), `cmsgpack` (lua-cmsgpack) and
//! `struct` (Roberto Ierusalimschy's struct library).

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod json_decode;
pub mod structlib;

use mlua::{Lua, Value};

/// A Lua runtime error with the caller's position in front, as
/// `luaL_error` writes it (`user_script:1: ...`).
pub fn lua_error(lua: &Lua, msg: impl AsRef<str>) -> mlua::Error {
    let pos = lua
        .inspect_stack(1, |d| {
            let line = d.current_line().unwrap_or(0);
            match d.source().short_src {
                Some(src) if line > 0 => format!("{src}:{line}: "),
                _ => String::new(),
            }
        })
        .unwrap_or_default();
    mlua::Error::RuntimeError(format!("{pos}{}", msg.as_ref()))
}

/// `bad argument #n to 'f' (msg)`, as luaL_argerror.
pub fn arg_error(lua: &Lua, n: usize, fname: &str, msg: impl AsRef<str>) -> mlua::Error {
    lua_error(
        lua,
        format!("bad argument #{n} to '{fname}' ({})", msg.as_ref()),
    )
}

/// Lua's type name of an argument (`no value` when absent).
pub fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(Value::LightUserData(_)) => "userdata",
        Some(_) => "userdata",
    }
}

/// The number in `v` (numbers, and strings Lua converts), or None.
pub fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => {
            let b = s.as_bytes();
            let t = std::str::from_utf8(&b).ok()?.trim();
            if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                return u64::from_str_radix(h, 16).ok().map(|n| n as f64);
            }
            t.parse::<f64>().ok().filter(|_| !t.is_empty())
        }
        _ => None,
    }
}

/// luaL_checknumber.
pub fn check_number(lua: &Lua, args: &[Value], i: usize, fname: &str) -> mlua::Result<f64> {
    match args.get(i).and_then(to_number) {
        Some(n) => Ok(n),
        None => Err(arg_error(
            lua,
            i + 1,
            fname,
            format!("number expected, got {}", type_name(args.get(i))),
        )),
    }
}

/// luaL_optnumber.
pub fn opt_number(
    lua: &Lua,
    args: &[Value],
    i: usize,
    fname: &str,
    default: f64,
) -> mlua::Result<f64> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_number(lua, args, i, fname),
    }
}
