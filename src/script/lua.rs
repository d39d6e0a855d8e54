//! The Lua state: libraries, the sandbox (see `prelude.lua`), the redis.*
//! primitives written in Rust, and the instruction-count hook that keeps
//! runaway scripts killable.

use std::rc::Rc;

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value, Variadic, VmState};

use super::{bridge, lib, sha1_hex, RunState};

/// Redis runs its hook every 100k instructions.
const HOOK_EVERY: u32 = 100_000;

/// Redis's version as `redis.REDIS_VERSION_NUM` (0x00MMmmpp).
const VERSION_NUM: i64 = 0x07_00_0f;

/// The message a killed script fails with.
pub const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// A Rust primitive's result.
type Prim = mlua::Result<Value>;

/// An error raised by a redis.* function: the handler turns it into
/// Redis's error table `{err = <text>}`.
#[derive(Debug)]
pub struct ScriptError(pub Vec<u8>, pub Counted);

/// Whether the statistics counted an error already: a command's own error
/// that `redis.call` raises again (Redis's `ignore_error_stats_update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted(pub bool);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl std::error::Error for ScriptError {}

/// Raises `msg` as a Redis error table.
pub fn raise<T>(msg: impl Into<Vec<u8>>) -> mlua::Result<T> {
    Err(mlua::Error::external(ScriptError(
        msg.into(),
        Counted(false),
    )))
}

/// Raises a command's error reply, which its call counted already.
pub fn raise_counted<T>(msg: impl Into<Vec<u8>>) -> mlua::Result<T> {
    Err(mlua::Error::external(ScriptError(
        msg.into(),
        Counted(true),
    )))
}

fn fail(_lua: &Lua, msg: &str) -> Prim {
    raise(msg)
}

fn err_value(lua: &Lua, msg: &str) -> Prim {
    let t = lua.create_table()?;
    t.raw_set("err", msg)?;
    Ok(Value::Table(t))
}

/// The Lua state and the handles the engine keeps into it.
pub struct Parts {
    /// The state.
    pub lua: Lua,
    /// The read-only `_G` proxy, the environment of EVAL scripts.
    pub env: Table,
    /// `xpcall(f, __redis__err__handler)`.
    pub runner: Function,
    /// The environment of function libraries.
    pub fn_env: Table,
    /// Switches `fn_env` between the load-time API and the globals.
    pub set_loading: Function,
    /// Calls a registered function with KEYS and ARGV tables.
    pub run_fn: Function,
    /// Runs library code at load time.
    pub run_load: Function,
    /// Functions registered by the library being loaded.
    pub pending: super::function::Pending,
    /// The debug library's `getlocal`, for the debugger's `print`.
    pub getlocal: Function,
}

/// Builds a Lua state with Redis's environment.
pub fn create_state(run: Rc<RunState>) -> mlua::Result<Parts> {
    // SAFETY: the debug library is loaded only so the prelude can keep
    // `debug.getinfo` for the error handler; the prelude removes `debug`
    // from the globals before any script runs.
    let lua = unsafe {
        Lua::unsafe_new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
            LuaOptions::new(),
        )
    };
    let g = lua.globals();
    let debug: Table = g.raw_get("debug")?;
    let getlocal: Function = debug.raw_get("getlocal")?;
    g.raw_set("cjson", lib::cjson::open(&lua)?)?;
    g.raw_set("bit", lib::bit::open(&lua)?)?;
    g.raw_set("struct", lib::structlib::open(&lua)?)?;
    g.raw_set("cmsgpack", lib::cmsgpack::open(&lua)?)?;
    let pending = super::function::Pending::default();
    let prims = primitives(&lua, run)?;
    prims.raw_set(
        "load_api",
        super::function::load_api(&lua, &prims, pending.clone())?,
    )?;
    let prelude = lua
        .load(include_str!("prelude.lua"))
        .set_name("=ferrokv")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .into_function()?;
    let mut rets = prelude
        .call::<mlua::MultiValue>((prims, debug))?
        .into_iter();
    let mut next_table = || -> mlua::Result<Table> {
        match rets.next() {
            Some(Value::Table(t)) => Ok(t),
            _ => Err(mlua::Error::RuntimeError("prelude: table expected".into())),
        }
    };
    let env = next_table()?;
    let mut fns = Vec::new();
    let mut tables = Vec::new();
    for v in rets {
        match v {
            Value::Function(f) => fns.push(f),
            Value::Table(t) => tables.push(t),
            _ => {}
        }
    }
    let [runner, set_loading, run_fn, run_load]: [Function; 4] = fns
        .try_into()
        .map_err(|_| mlua::Error::RuntimeError("prelude: functions expected".into()))?;
    let [fn_env, real_of, meta_view]: [Table; 3] = tables
        .try_into()
        .map_err(|_| mlua::Error::RuntimeError("prelude: tables expected".into()))?;
    super::sandbox::install(&lua, &g, &env, real_of, meta_view)?;
    let safe_loadstring: Function = g.raw_get("loadstring")?;
    // `load` is a Rust (C) function so its argument error carries the
    // script position even in a tail call, as the stock one does.
    let load = lua.create_function(move |lua, args: Variadic<Value>| {
        let Some(Value::Function(reader)) = args.first() else {
            return Err(lib::arg_error(
                lua,
                1,
                "load",
                format!("function expected, got {}", lib::type_name(args.first())),
            ));
        };
        let mut chunk = Vec::new();
        loop {
            match reader.call::<Value>(())? {
                Value::String(s) if !s.as_bytes().is_empty() => {
                    chunk.extend_from_slice(&s.as_bytes())
                }
                Value::Nil | Value::String(_) => break,
                _ => {
                    return Ok((
                        Value::Nil,
                        Value::String(lua.create_string("reader function must return a string")?),
                    ))
                }
            }
        }
        let name = match args.get(1) {
            Some(Value::String(s)) => Value::String(s.clone()),
            _ => Value::String(lua.create_string("=(load)")?),
        };
        safe_loadstring.call::<(Value, Value)>((lua.create_string(chunk)?, name))
    })?;
    g.raw_set("load", load)?;
    Ok(Parts {
        lua,
        env,
        runner,
        fn_env,
        set_loading,
        run_fn,
        run_load,
        pending,
        getlocal,
    })
}

/// The Rust half of the redis.* API, handed to the prelude.
fn primitives(lua: &Lua, run: Rc<RunState>) -> mlua::Result<Table> {
    let r = lua.create_table()?;
    let st = run.clone();
    r.raw_set(
        "call",
        lua.create_function(move |lua, args: Variadic<Value>| bridge::call(lua, &st, args, true))?,
    )?;
    let st = run.clone();
    r.raw_set(
        "pcall",
        lua.create_function(move |lua, args: Variadic<Value>| bridge::call(lua, &st, args, false))?,
    )?;
    let st = run.clone();
    r.raw_set(
        "breakpoint",
        lua.create_function(move |_, ()| Ok(super::ldb::breakpoint(&st)))?,
    )?;
    let st = run.clone();
    r.raw_set(
        "debug",
        lua.create_function(move |_, args: Variadic<Value>| {
            super::ldb::debug(&st, &args);
            Ok(())
        })?,
    )?;
    r.raw_set(
        "error_reply",
        lua.create_function(|lua, args: Variadic<Value>| -> Prim {
            let (1, Some(Value::String(s))) = (args.len(), args.first()) else {
                // Redis returns (not raises) this error table.
                return err_value(lua, "ERR wrong number or type of arguments");
            };
            // Redis's luaRedisErrorReplyCommand adds the '-' a message
            // lacks, so its first word becomes the error code.
            let s = s.as_bytes();
            let text = if s.starts_with(b"-") {
                error_table_text(&s)
            } else {
                error_table_text(&[b"-", &s[..]].concat())
            };
            let t = lua.create_table()?;
            t.raw_set("err", lua.create_string(text)?)?;
            Ok(Value::Table(t))
        })?,
    )?;
    r.raw_set(
        "status_reply",
        lua.create_function(|lua, args: Variadic<Value>| -> Prim {
            let (1, Some(Value::String(s))) = (args.len(), args.first()) else {
                // Redis returns (not raises) this error table.
                return err_value(lua, "ERR wrong number or type of arguments");
            };
            let t = lua.create_table()?;
            t.raw_set("ok", s.clone())?;
            Ok(Value::Table(t))
        })?,
    )?;
    r.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: Variadic<Value>| -> Prim {
            if args.len() != 1 {
                return fail(lua, "ERR wrong number of arguments");
            }
            let bytes = to_lua_string(&args[0]).unwrap_or_default();
            Ok(Value::String(lua.create_string(sha1_hex(&bytes))?))
        })?,
    )?;
    r.raw_set(
        "log",
        lua.create_function(|lua, args: Variadic<Value>| -> Prim {
            if args.len() < 2 {
                return fail(lua, "ERR redis.log() requires two arguments or more.");
            }
            let level = match &args[0] {
                Value::Integer(n) => *n,
                Value::Number(n) => *n as i64,
                _ => return fail(lua, "ERR First argument must be a number"),
            };
            if !(0..=3).contains(&level) {
                return fail(lua, "ERR Invalid debug level.");
            }
            let mut msg = Vec::new();
            for (i, a) in args.iter().skip(1).enumerate() {
                if let Some(s) = to_lua_string(a) {
                    if i > 0 {
                        msg.push(b' ');
                    }
                    msg.extend_from_slice(&s);
                }
            }
            let msg = String::from_utf8_lossy(&msg);
            match level {
                3 => tracing::warn!("{msg}"),
                2 => tracing::info!("{msg}"),
                _ => tracing::debug!("{msg}"),
            }
            Ok(Value::Nil)
        })?,
    )?;
    let st = run.clone();
    r.raw_set(
        "setresp",
        lua.create_function(move |lua, args: Variadic<Value>| -> Prim {
            if args.len() != 1 {
                return fail(lua, "ERR redis.setresp() requires one argument.");
            }
            let v = match &args[0] {
                Value::Integer(n) => *n,
                Value::Number(n) => *n as i64,
                _ => 0,
            };
            if v != 2 && v != 3 {
                return fail(lua, "ERR RESP version must be 2 or 3.");
            }
            st.resp3.set(v == 3);
            Ok(Value::Nil)
        })?,
    )?;
    let st = run.clone();
    r.raw_set(
        "set_repl",
        lua.create_function(move |lua, args: Variadic<Value>| -> Prim {
            if args.len() != 1 {
                return fail(lua, "ERR redis.set_repl() requires one argument.");
            }
            let v = match &args[0] {
                Value::Integer(n) => *n,
                Value::Number(n) => *n as i64,
                _ => -1,
            };
            if !(0..=3).contains(&v) {
                return fail(
                    lua,
                    "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                );
            }
            if st.with_host(|h| h.set_replication(v as u8)).is_none() {
                return fail(
                    lua,
                    "ERR redis.set_repl can only be called inside a script invocation",
                );
            }
            Ok(Value::Nil)
        })?,
    )?;
    let st = run;
    r.raw_set(
        "acl_check_cmd",
        lua.create_function(move |lua, args: Variadic<Value>| -> Prim {
            if args.is_empty() {
                return fail(
                    lua,
                    "ERR Please specify at least one argument for this redis lib call",
                );
            }
            let mut argv = crate::net::request::OwnedArgv::default();
            for a in args.iter() {
                if !super::bridge::push_arg(a, &mut argv) {
                    return fail(
                        lua,
                        "ERR Lua redis lib command arguments must be strings or integers",
                    );
                }
            }
            // Outside a run there is no caller whose user could be asked.
            match st.with_host(|h| h.acl_allows(argv.argv())) {
                None => fail(
                    lua,
                    "ERR redis.acl_check_cmd can only be called inside a script invocation",
                ),
                Some(None) => fail(lua, "ERR Invalid command passed to redis.acl_check_cmd()"),
                Some(Some(allowed)) => Ok(Value::Boolean(allowed)),
            }
        })?,
    )?;
    r.raw_set(
        "error_value",
        lua.create_function(|lua, v: Value| -> mlua::Result<Value> {
            let Value::Error(e) = &v else {
                return Ok(v);
            };
            if let Some(ScriptError(msg, counted)) = e.downcast_ref::<ScriptError>() {
                let t = lua.create_table()?;
                t.raw_set("err", lua.create_string(msg)?)?;
                if counted.0 {
                    t.raw_set(bridge::COUNTED, true)?;
                }
                return Ok(Value::Table(t));
            }
            Ok(Value::String(lua.create_string(error_text(e))?))
        })?,
    )?;
    r.raw_set("version", crate::REDIS_VERSION)?;
    r.raw_set("version_num", VERSION_NUM)?;
    Ok(r)
}

/// Lua's tostring for strings and numbers (lua_tolstring), None otherwise.
pub fn to_lua_string(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        Value::Number(n) => Some(crate::util::num::fmt_g(*n, 14).into_bytes()),
        _ => None,
    }
}

/// Redis's luaPushErrorBuff: `-CODE msg` keeps its code, anything else
/// gets `ERR`; trailing newlines go.
pub fn error_table_text(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 4);
    if let Some(rest) = s.strip_prefix(b"-") {
        match rest.iter().position(|&b| b == b' ') {
            Some(sp) => {
                out.extend_from_slice(&rest[..sp]);
                out.push(b' ');
                out.extend_from_slice(trim_crlf(&rest[sp + 1..]));
            }
            None => {
                out.extend_from_slice(b"ERR ");
                out.extend_from_slice(trim_crlf(rest));
            }
        }
    } else {
        out.extend_from_slice(b"ERR ");
        out.extend_from_slice(trim_crlf(s));
    }
    out
}

fn trim_crlf(mut s: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// The plain message of an mlua error (Lua's own text, no mlua prefix).
pub fn error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) | mlua::Error::MemoryError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        mlua::Error::WithContext { cause, .. } => error_text(cause),
        other => other.to_string(),
    }
}

/// Installs the debugger's hook for a debugging session: on every line,
/// and every [`ldb::COUNT_EVERY`](super::ldb::COUNT_EVERY) instructions to
/// notice a script that never stops.
pub fn arm_ldb_hook(lua: &Lua, run: Rc<RunState>, tools: super::ldb::Tools) {
    let triggers = HookTriggers::EVERY_LINE.every_nth_instruction(super::ldb::COUNT_EVERY);
    let _ = lua.set_global_hook(triggers, move |lua, dbg| {
        super::ldb::hook(lua, dbg, &run, &tools)
    });
}

/// Installs the hook: every `HOOK_EVERY` instructions normally, on every
/// line once a kill is decided (so `pcall` cannot swallow the kill).
pub fn arm_hook(lua: &Lua, run: Rc<RunState>, every_line: bool) {
    run.hook_every_line.set(every_line);
    let triggers = if every_line {
        HookTriggers::EVERY_LINE
    } else {
        HookTriggers::new().every_nth_instruction(HOOK_EVERY)
    };
    // A global hook: coroutines created by scripts inherit it.
    let _ = lua.set_global_hook(triggers, move |lua, dbg| {
        // Never interrupt the environment's own code (the error handler
        // must be able to run to report the kill).
        if every_line && dbg.source().source.as_deref() == Some("=ferrokv") {
            return Ok(VmState::Continue);
        }
        if !run.active.get() {
            // FUNCTION LOAD gives library code 500 ms, as Redis does.
            if let Some(deadline) = run.load_deadline.get() {
                if std::time::Instant::now() >= deadline {
                    if !every_line {
                        arm_hook(lua, run.clone(), true);
                    }
                    return raise("ERR FUNCTION LOAD timeout");
                }
            }
            return Ok(VmState::Continue);
        }
        if !run.killed.get() {
            let elapsed = run.started.get().elapsed().as_millis() as u64;
            if elapsed >= run.threshold_ms.get() {
                if !run.busy.get() {
                    run.busy.set(true);
                    tracing::warn!(
                        "Slow script detected: still in execution after {elapsed} milliseconds. \
                         You can try killing the script using the SCRIPT KILL command."
                    );
                }
                run.with_host(|h| h.serve_while_busy());
            }
        }
        if run.killed.get() {
            if !every_line {
                arm_hook(lua, run.clone(), true);
            }
            return raise(KILLED);
        }
        Ok(VmState::Continue)
    });
}
