//! FUNCTION and FCALL/FCALL_RO (Redis 7.0's functions.c). DUMP payloads use
//! Redis's format: one FUNCTION2 opcode and library code string per
//! library, then the RDB version and a CRC64.

use super::args::{is, lossy};
use super::scripting::{kill_running, numkeys, run_on_host, take_engine};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::script::function::FLAG_NAMES;
use crate::util::glob::glob_match;

pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("fcall", fcall),
    ("fcall_ro", fcall_ro),
    ("function|load", function_load),
    ("function|list", function_list),
    ("function|delete", function_delete),
    ("function|flush", function_flush),
    ("function|dump", function_dump),
    ("function|restore", function_restore),
    ("function|stats", function_stats),
    ("function|kill", function_kill),
    ("function|help", function_help),
];

/// RDB opcode of a function library (RDB_OPCODE_FUNCTION2).
const OPCODE_FUNCTION2: u8 = 245;
/// RDB version written in DUMP payloads (Redis 7.0).
const RDB_VERSION: u16 = 10;

fn fcall(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    fcall_generic(ctx, argv, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    fcall_generic(ctx, argv, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, ro: bool) -> CmdResult {
    // Redis looks the function up before reading numkeys, with texts of
    // its own for a numkeys that is not a number.
    let name = String::from_utf8_lossy(argv.get(1));
    if ctx
        .server
        .scripting
        .get()
        .and_then(|e| e.function(&name))
        .is_none()
    {
        return Err(crate::script::function::FUNCTION_NOT_FOUND);
    }
    if crate::util::num::parse_i64(argv.get(2)).is_none() {
        return Err(Error::err("Bad number of keys provided"));
    }
    let nk = numkeys(&argv, 2)?;
    let mut engine = take_engine(ctx)?;
    let keys: Vec<&[u8]> = argv.iter_from(3).take(nk).collect();
    let args: Vec<&[u8]> = argv.iter_from(3 + nk).collect();
    *engine.run.command.borrow_mut() = argv.iter_from(0).map(<[u8]>::to_vec).collect();
    let name = argv.get(1);
    let result = run_on_host(ctx, &argv, &mut engine, |e, run| {
        e.fcall(run, name, &keys, &args, ro)
    });
    ctx.server.scripting.put(engine);
    result
}

fn function_load(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    // Options come before the code, which is the last argument.
    let code = argv.get(argv.len() - 1);
    let mut replace = false;
    for a in argv.iter_from(2).take(argv.len() - 3) {
        if is(a, "replace") {
            replace = true;
        } else {
            return Err(Error::err_owned(format!(
                "Unknown option given: {}",
                lossy(a)
            )));
        }
    }
    let mut engine = take_engine(ctx)?;
    let result = engine.load_library(code, replace);
    if result.is_ok() {
        libraries_changed(ctx, &engine);
    }
    ctx.server.scripting.put(engine);
    ctx.reply.bulk(result?.as_bytes());
    Ok(())
}

/// The libraries changed: the store's copy follows (it is saved with the
/// keys), and the command counts as a change of the data set, so it
/// reaches replicas and the AOF (Redis's `server.dirty++`).
fn libraries_changed(ctx: &mut Ctx<'_>, engine: &crate::script::Engine) {
    ctx.store.functions = engine.library_codes();
    ctx.store.stats.dirty += 1;
}

fn function_list(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < argv.len() {
        let a = argv.get(i);
        if is(a, "withcode") {
            if with_code {
                return Err(Error::err_owned(format!("Unknown argument {}", lossy(a))));
            }
            with_code = true;
        } else if is(a, "libraryname") {
            if pattern.is_some() {
                return Err(Error::err_owned(format!("Unknown argument {}", lossy(a))));
            }
            let Some(p) = argv.try_get(i + 1) else {
                return Err(Error::err("library name argument was not given"));
            };
            pattern = Some(p);
            i += 1;
        } else {
            return Err(Error::err_owned(format!("Unknown argument {}", lossy(a))));
        }
        i += 1;
    }
    let Some(engine) = ctx.server.scripting.get() else {
        ctx.reply.array(0);
        return Ok(());
    };
    let libs: Vec<_> = engine
        .libraries
        .libs
        .values()
        .filter(|l| pattern.is_none_or(|p| glob_match(p, l.name.as_bytes(), false)))
        .collect();
    let reply = &mut ctx.reply;
    reply.array(libs.len());
    for lib in libs {
        reply.map(if with_code { 4 } else { 3 });
        reply.bulk(b"library_name");
        reply.bulk(lib.name.as_bytes());
        reply.bulk(b"engine");
        reply.bulk(b"LUA");
        reply.bulk(b"functions");
        reply.array(lib.functions.len());
        for f in lib.functions.values() {
            reply.map(3);
            reply.bulk(b"name");
            reply.bulk(f.name.as_bytes());
            reply.bulk(b"description");
            match &f.description {
                Some(d) => reply.bulk(d),
                None => reply.null(),
            }
            reply.bulk(b"flags");
            let names: Vec<&str> = FLAG_NAMES
                .iter()
                .filter(|(_, bit)| f.flags & bit != 0)
                .map(|(n, _)| *n)
                .collect();
            reply.set(names.len());
            for n in names {
                reply.simple(n);
            }
        }
        if with_code {
            reply.bulk(b"library_code");
            reply.bulk(&lib.code);
        }
    }
    Ok(())
}

fn function_delete(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let name = lossy(argv.get(2));
    let deleted = match ctx.server.scripting.take() {
        Some(mut engine) => {
            let d = engine.delete_library(&name);
            if d {
                libraries_changed(ctx, &engine);
            }
            ctx.server.scripting.put(engine);
            d
        }
        None => false,
    };
    if !deleted {
        return Err(Error::err("Library not found"));
    }
    ctx.reply.ok();
    Ok(())
}

fn function_flush(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 3 {
        return Err(Error::subcommand_arity(argv.get(1), "FUNCTION"));
    }
    match argv.try_get(2) {
        None => {}
        Some(a) if argv.len() == 3 && (is(a, "sync") || is(a, "async")) => {}
        Some(_) => return Err(Error::err("FUNCTION FLUSH only supports SYNC|ASYNC option")),
    }
    if let Some(mut engine) = ctx.server.scripting.take() {
        engine.flush_libraries();
        ctx.server.scripting.put(engine);
    }
    ctx.store.functions.clear();
    ctx.store.stats.dirty += 1;
    ctx.reply.ok();
    Ok(())
}

/// Redis's CRC64 (Jones polynomial, reflected, no final xor).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

fn rdb_len(n: usize, out: &mut Vec<u8>) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as usize {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
}

fn function_dump(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let mut out = Vec::new();
    if let Some(engine) = ctx.server.scripting.get() {
        for lib in engine.libraries.libs.values() {
            out.push(OPCODE_FUNCTION2);
            rdb_len(lib.code.len(), &mut out);
            out.extend_from_slice(&lib.code);
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    ctx.reply.bulk(&out);
    Ok(())
}

/// Reads an RDB length; the flag is set for the special encodings.
fn read_len(p: &[u8], pos: &mut usize) -> Option<(u64, bool)> {
    let b = *p.get(*pos)?;
    *pos += 1;
    match b >> 6 {
        0 => Some((u64::from(b & 0x3f), false)),
        1 => {
            let b2 = *p.get(*pos)?;
            *pos += 1;
            Some(((u64::from(b & 0x3f) << 8) | u64::from(b2), false))
        }
        3 => Some((u64::from(b & 0x3f), true)),
        _ if b == 0x80 => {
            let v = p.get(*pos..*pos + 4)?;
            *pos += 4;
            Some((u64::from(u32::from_be_bytes(v.try_into().ok()?)), false))
        }
        _ if b == 0x81 => {
            let v = p.get(*pos..*pos + 8)?;
            *pos += 8;
            Some((u64::from_be_bytes(v.try_into().ok()?), false))
        }
        _ => None,
    }
}

/// LZF decompression (liblzf's lzf_decompress).
fn lzf_decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            out.extend_from_slice(input.get(ip..ip + run)?);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            let mut back = (ctrl & 0x1f) << 8;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            back += usize::from(*input.get(ip)?);
            ip += 1;
            len += 2;
            let start = out.len().checked_sub(back + 1)?;
            for k in 0..len {
                let b = *out.get(start + k)?;
                out.push(b);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

fn read_string(p: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let (n, special) = read_len(p, pos)?;
    if !special {
        let n = usize::try_from(n).ok()?;
        let s = p.get(*pos..*pos + n)?.to_vec();
        *pos += n;
        return Some(s);
    }
    match n {
        0 => {
            let v = *p.get(*pos)? as i8;
            *pos += 1;
            Some(v.to_string().into_bytes())
        }
        1 => {
            let v = i16::from_le_bytes(p.get(*pos..*pos + 2)?.try_into().ok()?);
            *pos += 2;
            Some(v.to_string().into_bytes())
        }
        2 => {
            let v = i32::from_le_bytes(p.get(*pos..*pos + 4)?.try_into().ok()?);
            *pos += 4;
            Some(v.to_string().into_bytes())
        }
        3 => {
            let (clen, _) = read_len(p, pos)?;
            let (ulen, _) = read_len(p, pos)?;
            let clen = usize::try_from(clen).ok()?;
            let data = p.get(*pos..*pos + clen)?;
            *pos += clen;
            lzf_decompress(data, usize::try_from(ulen).ok()?)
        }
        _ => None,
    }
}

fn function_restore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 4 {
        return Err(Error::subcommand_arity(argv.get(1), "FUNCTION"));
    }
    let payload = argv.get(2);
    #[derive(PartialEq)]
    enum Policy {
        Append,
        Replace,
        Flush,
    }
    let policy = match argv.try_get(3) {
        None => Policy::Append,
        Some(a) if is(a, "append") => Policy::Append,
        Some(a) if is(a, "replace") => Policy::Replace,
        Some(a) if is(a, "flush") => Policy::Flush,
        Some(_) => {
            return Err(Error::err(
                "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
    };
    if argv.len() > 4 {
        return Err(Error::Syntax);
    }
    let bad = || Error::err("DUMP payload version or checksum are wrong");
    if payload.len() < 10 {
        return Err(bad());
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..10].try_into().map_err(|_| bad())?);
    if version > RDB_VERSION || crc64(0, &payload[..payload.len() - 8]) != crc {
        return Err(bad());
    }
    let mut codes = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        if body[pos] != OPCODE_FUNCTION2 {
            return Err(Error::err("given type is not a function"));
        }
        pos += 1;
        let Some(code) = read_string(body, &mut pos) else {
            return Err(bad());
        };
        codes.push(code);
    }
    let mut engine = take_engine(ctx)?;
    let backup = engine.libraries.clone();
    let result = (|| {
        if policy == Policy::Flush {
            engine.flush_libraries();
        }
        if policy == Policy::Append {
            for code in &codes {
                let (name, _) = crate::script::function::parse_metadata(code)?;
                if engine.libraries.libs.contains_key(&name) {
                    return Err(Error::err_owned(format!("Library {name} already exists")));
                }
            }
        }
        for code in &codes {
            engine.load_library(code, policy == Policy::Replace)?;
        }
        Ok(())
    })();
    // RESTORE is all or nothing.
    if result.is_err() {
        engine.libraries = backup;
    } else {
        libraries_changed(ctx, &engine);
    }
    ctx.server.scripting.put(engine);
    result?;
    ctx.reply.ok();
    Ok(())
}

fn function_stats(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let running = ctx.server.running_script.clone();
    let (libs, funcs) = ctx.server.function_counts();
    let reply = &mut ctx.reply;
    reply.map(2);
    reply.bulk(b"running_script");
    match running.filter(|run| run.is_function.get()) {
        Some(run) => {
            let command = run.command.borrow();
            reply.map(3);
            reply.bulk(b"name");
            reply.bulk(run.name.borrow().as_bytes());
            reply.bulk(b"command");
            reply.array(command.len());
            for a in command.iter() {
                reply.bulk(a);
            }
            reply.bulk(b"duration_ms");
            reply.int(run.started.get().elapsed().as_millis() as i64);
        }
        None => reply.null(),
    }
    reply.bulk(b"engines");
    reply.map(1);
    reply.bulk(b"LUA");
    reply.map(2);
    reply.bulk(b"libraries_count");
    reply.int(libs as i64);
    reply.bulk(b"functions_count");
    reply.int(funcs as i64);
    Ok(())
}

fn function_kill(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    kill_running(ctx, true)
}

const FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

fn function_help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.array(FUNCTION_HELP.len());
    for line in FUNCTION_HELP {
        ctx.reply.simple(line);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_matches_redis_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }
}
