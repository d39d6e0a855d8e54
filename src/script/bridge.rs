//! `redis.call`/`redis.pcall` and the conversions between Redis replies and
//! Lua values, both ways, as Redis 7.0's script_lua.c does them.
//!
//! # Safety of the run pointer
//! [`RunState`] holds a pointer to the run's [`Host`](super::Host), set by
//! `Engine::call` from the `&mut` borrow it is handed right before the
//! script starts and cleared right after it returns; during that window
//! `Engine::call` does nothing but wait for Lua, so the callbacks here are
//! the only users of that borrow ([`RunState::with_host`]).

use mlua::{Lua, Table, Value, Variadic};

use super::RunState;
use crate::error::Error;
use crate::net::reply::ReplyBuf;
use crate::net::request::OwnedArgv;
use crate::util::num;

type CallResult = mlua::Result<Value>;

/// Appends one argument of redis.call: strings as they are, numbers as
/// `%.17g` (Redis avoids Lua's lossy `%.14g` here).
pub(super) fn push_arg(v: &Value, argv: &mut OwnedArgv) -> bool {
    match v {
        Value::String(s) => argv.push(&s.as_bytes()),
        Value::Integer(n) => {
            let mut buf = num::itoa_buf();
            argv.push(num::fmt_i64(*n, &mut buf));
        }
        Value::Number(n) => {
            let mut buf = Vec::with_capacity(32);
            num::write_g17(*n, &mut buf);
            argv.push(&buf);
        }
        _ => return false,
    }
    true
}

/// `redis.call(...)`/`redis.pcall(...)`: runs a command as the script's
/// client and returns the converted reply; an error reply is raised when
/// `raise` is set (redis.call) and returned as `{err=...}` otherwise.
pub fn call(lua: &Lua, st: &RunState, args: Variadic<Value>, raise: bool) -> CallResult {
    let err_table = |lua: &Lua, msg: &[u8]| -> CallResult {
        super::ldb::log_error_if_enabled(st, msg);
        if raise {
            return super::lua::raise(msg);
        }
        let t = lua.create_table()?;
        t.raw_set("err", lua.create_string(msg)?)?;
        Ok(Value::Table(t))
    };
    if !st.active.get() {
        return err_table(
            lua,
            b"ERR redis.call can only be called from a running script",
        );
    }
    if args.is_empty() {
        return err_table(
            lua,
            b"ERR Please specify at least one argument for this redis lib call",
        );
    }
    let mut owned = std::mem::take(&mut *st.argv.borrow_mut());
    owned.clear();
    for a in args.iter() {
        if !push_arg(a, &mut owned) {
            *st.argv.borrow_mut() = owned;
            return err_table(
                lua,
                b"ERR Lua redis lib command arguments must be strings or integers",
            );
        }
    }
    let result = super::unlimited(lua, st, || {
        run_command(lua, st, owned.argv(), raise, &err_table)
    });
    *st.argv.borrow_mut() = owned;
    result
}

/// Runs one command through the host and converts its reply, as Redis's
/// luaRedisGenericCommand does: an error reply becomes `{err=...}`, marked
/// when the command itself counted it so the script's own error does not
/// count it again.
fn run_command(
    lua: &Lua,
    st: &RunState,
    argv: crate::net::request::Argv<'_>,
    raise: bool,
    err_table: &dyn Fn(&Lua, &[u8]) -> CallResult,
) -> CallResult {
    let mut out = std::mem::take(&mut *st.scratch.borrow_mut());
    out.clear();
    let (read_only, resp3) = (st.read_only.get(), st.resp3.get());
    super::ldb::log_command(st, argv);
    let Some(called) = st.with_host(|h| h.call(argv, &mut out, read_only, resp3)) else {
        *st.scratch.borrow_mut() = out;
        return err_table(
            lua,
            b"ERR redis.call can only be called from a running script",
        );
    };
    let counted = called != super::Called::Done;
    let refused = out.first() == Some(&b'-') && called == super::Called::Refused;
    super::ldb::log_reply(st, &out, refused);
    let converted = if out.first() == Some(&b'-') {
        let end = out.len().saturating_sub(2).max(1);
        let msg = &out[1..end];
        match (raise, counted) {
            (true, true) => super::lua::raise_counted(msg),
            (true, false) => super::lua::raise(msg),
            (false, _) => {
                let t = lua.create_table()?;
                t.raw_set("err", lua.create_string(msg)?)?;
                if counted {
                    t.raw_set(COUNTED, true)?;
                }
                Ok(Value::Table(t))
            }
        }
    } else {
        let mut pos = 0;
        parse_reply(lua, &out, &mut pos)
    };
    *st.scratch.borrow_mut() = out;
    converted
}

/// The field of an error table whose error the statistics counted already
/// (Redis's `ignore_error_stats_update`).
pub const COUNTED: &str = "ignore_error_stats_update";

fn read_line<'b>(buf: &'b [u8], pos: &mut usize) -> &'b [u8] {
    let start = *pos;
    let rest = &buf[start.min(buf.len())..];
    let end = rest
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(rest.len());
    *pos = start + end + 2;
    &rest[..end]
}

fn line_int(line: &[u8]) -> i64 {
    num::parse_i64(line).unwrap_or(0)
}

fn wrap_field(lua: &Lua, field: &str, v: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(field, v)?;
    Ok(Value::Table(t))
}

/// Converts one RESP reply at `pos` (as written by [`ReplyBuf`]) into a
/// Lua value, as Redis's redisProtocolToLuaType does.
pub fn parse_reply(lua: &Lua, buf: &[u8], pos: &mut usize) -> mlua::Result<Value> {
    let Some(&kind) = buf.get(*pos) else {
        return Ok(Value::Nil);
    };
    *pos += 1;
    let line = read_line(buf, pos);
    Ok(match kind {
        b':' => Value::Integer(line_int(line)),
        b'$' => {
            let n = line_int(line);
            if n < 0 {
                return Ok(Value::Boolean(false));
            }
            let start = (*pos).min(buf.len());
            let end = (start + n as usize).min(buf.len());
            *pos = end + 2;
            Value::String(lua.create_string(&buf[start..end])?)
        }
        b'+' => wrap_field(lua, "ok", Value::String(lua.create_string(line)?))?,
        b'-' => wrap_field(lua, "err", Value::String(lua.create_string(line)?))?,
        b'*' | b'>' => {
            let n = line_int(line);
            if n < 0 {
                return Ok(Value::Boolean(false));
            }
            let t = lua.create_table_with_capacity(n as usize, 0)?;
            for i in 0..n {
                let v = parse_reply(lua, buf, pos)?;
                t.raw_set(i + 1, v)?;
            }
            Value::Table(t)
        }
        b'%' => {
            let n = line_int(line);
            let t = lua.create_table()?;
            for _ in 0..n {
                let k = parse_reply(lua, buf, pos)?;
                let v = parse_reply(lua, buf, pos)?;
                if !k.is_nil() {
                    t.raw_set(k, v)?;
                }
            }
            wrap_field(lua, "map", Value::Table(t))?
        }
        b'~' => {
            let n = line_int(line);
            let t = lua.create_table()?;
            for _ in 0..n {
                let k = parse_reply(lua, buf, pos)?;
                if !k.is_nil() {
                    t.raw_set(k, true)?;
                }
            }
            wrap_field(lua, "set", Value::Table(t))?
        }
        b'_' => Value::Nil,
        b'#' => Value::Boolean(line == b"t"),
        b',' => {
            let d = num::parse_f64(line).unwrap_or(match line {
                b"inf" => f64::INFINITY,
                b"-inf" => f64::NEG_INFINITY,
                _ => f64::NAN,
            });
            wrap_field(lua, "double", Value::Number(d))?
        }
        b'(' => wrap_field(lua, "big_number", Value::String(lua.create_string(line)?))?,
        b'=' => {
            let n = line_int(line).max(0) as usize;
            let start = (*pos).min(buf.len());
            let end = (start + n).min(buf.len());
            *pos = end + 2;
            let body = &buf[start..end];
            let (format, text) = if body.len() >= 4 {
                (&body[..3], &body[4..])
            } else {
                (&b""[..], body)
            };
            let t = lua.create_table()?;
            t.raw_set("format", lua.create_string(format)?)?;
            t.raw_set("string", lua.create_string(text)?)?;
            wrap_field(lua, "verbatim_string", Value::Table(t))?
        }
        b'|' => {
            // Attributes are skipped; the reply follows.
            let n = line_int(line);
            for _ in 0..2 * n {
                parse_reply(lua, buf, pos)?;
            }
            return parse_reply(lua, buf, pos);
        }
        _ => Value::Nil,
    })
}

/// -2^63 and 2^63 as doubles: the range a double converts to i64 in.
pub const I64_LOW: f64 = -9_223_372_036_854_775_808.0;
/// 2^63 (exclusive upper bound).
pub const I64_HIGH: f64 = 9_223_372_036_854_775_808.0;

/// C's `(long long)` cast of a double as x86-64 does it: out of range and
/// NaN give LLONG_MIN.
pub fn double_to_i64(d: f64) -> i64 {
    if !(I64_LOW..I64_HIGH).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

fn bytes_lossy_oneline(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace(['\r', '\n'], " ")
}

/// Writes a script's return value as the reply, as Redis's
/// luaReplyToRedisReply does. `script_resp3` is the script's setresp.
pub fn write_reply(reply: &mut ReplyBuf<'_>, v: &Value, script_resp3: bool) {
    write_value(reply, v, script_resp3, 0);
}

/// The error a script returned as its value (`return {err=...}`, or
/// `return redis.pcall(...)` of a failed command), as the command's own
/// error, so the statistics count it unless its command counted it already.
pub fn returned_error(v: &Value) -> Option<Error> {
    let Value::Table(t) = v else {
        return None;
    };
    let Ok(Value::String(e)) = t.raw_get::<Value>("err") else {
        return None;
    };
    let msg = bytes_lossy_oneline(&e.as_bytes());
    if matches!(t.raw_get::<Value>(COUNTED), Ok(Value::Boolean(true))) {
        return Some(Error::Counted(msg));
    }
    Some(Error::raw_owned(msg))
}

/// Deepest reply nesting written; Redis stops at its Lua stack limit.
const MAX_REPLY_DEPTH: usize = 7000;

fn write_value(reply: &mut ReplyBuf<'_>, v: &Value, script_resp3: bool, depth: usize) {
    if depth > MAX_REPLY_DEPTH {
        reply.error(&Error::err("reached lua stack limit"));
        return;
    }
    match v {
        Value::String(s) => reply.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if script_resp3 {
                reply.boolean(*b);
            } else if *b {
                reply.int(1);
            } else {
                reply.null();
            }
        }
        Value::Integer(n) => reply.int(*n),
        Value::Number(d) => reply.int(double_to_i64(*d)),
        Value::Table(t) => write_table(reply, t, script_resp3, depth),
        _ => reply.null(),
    }
}

fn write_table(reply: &mut ReplyBuf<'_>, t: &Table, script_resp3: bool, depth: usize) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        let msg = bytes_lossy_oneline(&e.as_bytes());
        reply.error(&Error::raw_owned(msg));
        return;
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        let msg = bytes_lossy_oneline(&s.as_bytes());
        reply.simple(&msg);
        return;
    }
    if let Ok(d) = t.raw_get::<Value>("double") {
        match d {
            Value::Number(d) => return reply.double(d),
            Value::Integer(n) => return reply.double(n as f64),
            _ => {}
        }
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        let text = bytes_lossy_oneline(&s.as_bytes());
        if reply.is_resp3() {
            let out = reply.raw();
            out.push(b'(');
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\r\n");
        } else {
            reply.bulk(text.as_bytes());
        }
        return;
    }
    // Maps and sets are walked twice (count, then write) rather than
    // collected: holding every key and value at once would overflow the
    // Lua stack that backs them on a large table.
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        reply.map(m.clone().pairs::<Value, Value>().count());
        for (k, v) in m.pairs::<Value, Value>().filter_map(Result::ok) {
            write_value(reply, &k, script_resp3, depth + 1);
            write_value(reply, &v, script_resp3, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        reply.set(s.clone().pairs::<Value, Value>().count());
        for (k, _) in s.pairs::<Value, Value>().filter_map(Result::ok) {
            write_value(reply, &k, script_resp3, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(vs)) = t.raw_get::<Value>("verbatim_string") {
        let format: Option<mlua::LuaString> = vs.raw_get("format").ok();
        let text: Option<mlua::LuaString> = vs.raw_get("string").ok();
        if let (Some(format), Some(text)) = (format, text) {
            let (format, text) = (format.as_bytes(), text.as_bytes());
            if reply.is_resp3() && format.len() == 3 {
                let out = reply.raw();
                out.push(b'=');
                num::write_i64(text.len() as i64 + 4, out);
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(&format);
                out.push(b':');
                out.extend_from_slice(&text);
                out.extend_from_slice(b"\r\n");
            } else {
                reply.bulk(&text);
            }
            return;
        }
    }
    let mark = reply.defer();
    let mut n = 0;
    loop {
        let v: Value = t.raw_get(n + 1).unwrap_or(Value::Nil);
        if v.is_nil() {
            break;
        }
        write_value(reply, &v, script_resp3, depth + 1);
        n += 1;
    }
    reply.finish_deferred_array(mark, n);
}

/// The error reply for a script that raised `err` (the error handler's
/// table, or a plain value when the handler could not run).
pub fn script_error(err: &Value, name: &str) -> Error {
    let Value::Table(t) = err else {
        let msg = match err {
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            Value::Error(e) => super::lua::error_text(e),
            _ => "execution failure".into(),
        };
        let mut msg = msg;
        truncate_chars(&mut msg, 100);
        return Error::err_owned(format!("Error running script {name}, {msg}"));
    };
    let msg: String = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        _ => "(null)".into(),
    };
    let source: Option<String> = match t.raw_get::<Value>("source") {
        Ok(Value::String(s)) => Some(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
        _ => None,
    };
    let line: Option<i64> = match t.raw_get::<Value>("line") {
        Ok(Value::Integer(n)) => Some(n),
        Ok(Value::Number(n)) => Some(n as i64),
        _ => None,
    };
    let text = match (source, line) {
        (Some(source), Some(line)) => format!("{msg} script: {name}, on {source}:{line}."),
        _ => msg,
    };
    if matches!(t.raw_get::<Value>(COUNTED), Ok(Value::Boolean(true))) {
        return Error::Counted(text);
    }
    Error::raw_owned(text)
}

fn truncate_chars(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replies to a RESP3 caller, checked against redis-server 7.0.15
    /// (HELLO 3, then EVAL).
    #[test]
    fn resp3_caller_replies_match_redis() {
        let lua = Lua::new();
        let cases: &[(&str, bool, &[u8])] = &[
            ("return {double=3.5}", false, b",3.5\r\n"),
            ("return true", false, b":1\r\n"),
            ("return false", false, b"_\r\n"),
            ("return true", true, b"#t\r\n"),
            ("return false", true, b"#f\r\n"),
            ("return {map={a=1}}", false, b"%1\r\n$1\r\na\r\n:1\r\n"),
            ("return {set={a=true}}", false, b"~1\r\n$1\r\na\r\n"),
            ("return {big_number='123'}", false, b"(123\r\n"),
            (
                "return {verbatim_string={format='txt',string='hi'}}",
                false,
                b"=6\r\ntxt:hi\r\n",
            ),
            ("return nil", false, b"_\r\n"),
            ("return {1,{2}}", false, b"*2\r\n:1\r\n*1\r\n:2\r\n"),
            ("return {ok='x'}", false, b"+x\r\n"),
            ("return 3.7", false, b":3\r\n"),
        ];
        for (src, script_resp3, want) in cases {
            let v: Value = lua.load(*src).eval().expect("eval");
            let mut out = Vec::new();
            write_reply(&mut ReplyBuf::new(&mut out, true), &v, *script_resp3);
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(want),
                "{src}"
            );
        }
    }

    #[test]
    fn doubles_convert_like_a_c_cast() {
        assert_eq!(double_to_i64(3.99), 3);
        assert_eq!(double_to_i64(-3.99), -3);
        assert_eq!(double_to_i64(1e300), i64::MIN);
        assert_eq!(double_to_i64(f64::NAN), i64::MIN);
    }
}
