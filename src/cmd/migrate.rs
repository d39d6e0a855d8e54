//! MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
//! [AUTH2 user pw] [KEYS key...] (Redis's migrateCommand): the keys are
//! sent as RESTORE (RESTORE-ASKING in cluster mode) over a connection to
//! the target, then deleted here unless COPY, the MIGRATE reaching the AOF
//! and replicas as DEL of the keys the target took. Like Redis's, it
//! blocks the server for the exchange, bounded by `timeout`. Redis keeps
//! the connection for reuse for ten seconds; ferrokv opens one per call.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::args::{self, is};
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::persist::rdb;

/// Appends a RESP command to `out`.
fn push_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    crate::net::request::encode(out, args);
}

/// Reads one reply line (up to 1,024 bytes, as Redis's syncReadLine).
fn read_line(r: &mut BufReader<TcpStream>) -> Option<String> {
    let mut line = Vec::new();
    let n = Read::by_ref(r)
        .take(1024)
        .read_until(b'\n', &mut line)
        .ok()?;
    if n == 0 {
        return None;
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    Some(String::from_utf8_lossy(&line).into_owned())
}

/// An I/O failure toward the target: while writing or while reading.
fn io_error(writing: bool) -> Error {
    Error::raw_owned(format!(
        "IOERR error or timeout {} to target instance",
        if writing { "writing" } else { "reading" }
    ))
}

/// MIGRATE.
pub fn migrate(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (mut copy, mut replace) = (false, false);
    let (mut user, mut password): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let (mut first_key, mut num_keys) = (3, 1);
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let a = argv.get(j);
        if is(a, "copy") {
            copy = true;
        } else if is(a, "replace") {
            replace = true;
        } else if is(a, "auth") {
            if more == 0 {
                return Err(Error::Syntax);
            }
            j += 1;
            password = Some(argv.get(j));
        } else if is(a, "auth2") {
            if more < 2 {
                return Err(Error::Syntax);
            }
            user = Some(argv.get(j + 1));
            password = Some(argv.get(j + 2));
            j += 2;
        } else if is(a, "keys") {
            if !argv.get(3).is_empty() {
                return Err(Error::err(
                    "When using MIGRATE KEYS option, the key argument must be set to the empty \
                     string",
                ));
            }
            first_key = j + 1;
            num_keys = argv.len() - j - 1;
            break;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let mut timeout = args::int(argv.get(5))?;
    let dbid = args::int(argv.get(4))?;
    if timeout <= 0 {
        timeout = 1000;
    }
    let timeout = Duration::from_millis(timeout as u64);
    let db = ctx.db();
    let compress = ctx.server.config.rdbcompression;
    // The keys present, with their payloads and remaining TTLs.
    let now = ctx.store.now();
    let mut found = Vec::new();
    for i in first_key..first_key + num_keys {
        let key = argv.get(i);
        let Some(e) = ctx.store.get_read(db, key) else {
            continue;
        };
        let at = e.expire_at();
        let ttl = if at == 0 {
            0
        } else if at < now {
            continue;
        } else {
            (at - now).max(1)
        };
        found.push((key, ttl, rdb::save::dump_payload(&e.value(), compress)));
    }
    if found.is_empty() {
        ctx.reply.simple("NOKEY");
        return Ok(());
    }
    let restore: &[u8] = if ctx.server.cluster.is_some() {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    let mut cmd = Vec::new();
    if let Some(pw) = password {
        match user {
            Some(u) => push_command(&mut cmd, &[b"AUTH", u, pw]),
            None => push_command(&mut cmd, &[b"AUTH", pw]),
        }
    }
    let dbid_text = dbid.to_string();
    push_command(&mut cmd, &[b"SELECT", dbid_text.as_bytes()]);
    for (key, ttl, payload) in &found {
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), payload];
        if replace {
            args.push(b"REPLACE");
        }
        push_command(&mut cmd, &args);
    }
    let host = args::lossy(argv.get(1));
    let port = args::lossy(argv.get(2));
    let connect = || -> Option<TcpStream> {
        let addr = (host.as_str(), port.parse::<u16>().ok()?)
            .to_socket_addrs()
            .ok()?
            .next()?;
        let s = TcpStream::connect_timeout(&addr, timeout).ok()?;
        s.set_read_timeout(Some(timeout)).ok()?;
        s.set_write_timeout(Some(timeout)).ok()?;
        let _ = s.set_nodelay(true);
        Some(s)
    };
    let Some(mut sock) = connect() else {
        return Err(Error::raw(
            "IOERR error or timeout connecting to the client",
        ));
    };
    if sock.write_all(&cmd).is_err() {
        return Err(io_error(true));
    }
    let Ok(read_half) = sock.try_clone() else {
        return Err(io_error(false));
    };
    let mut r = BufReader::new(read_half);
    let auth_reply = match password {
        Some(_) => Some(read_line(&mut r).ok_or_else(|| io_error(false))?),
        None => None,
    };
    let select_reply = read_line(&mut r).ok_or_else(|| io_error(false))?;
    let mut target_error: Option<String> = None;
    let mut moved: Vec<&[u8]> = Vec::new();
    let mut socket_error = false;
    for (key, _, _) in &found {
        let Some(reply) = read_line(&mut r) else {
            socket_error = true;
            break;
        };
        let failed = [
            auth_reply.as_deref(),
            Some(select_reply.as_str()),
            Some(reply.as_str()),
        ]
        .into_iter()
        .flatten()
        .find(|l| l.starts_with('-'));
        if let Some(e) = failed {
            target_error.get_or_insert_with(|| e[1..].to_string());
        } else if !copy {
            if ctx.store.remove(db, key).is_some() {
                ctx.store.signal_modified(db, key);
                super::pubsub::notify(ctx, b'g', "del", key);
            }
            moved.push(key);
        }
    }
    if !moved.is_empty() {
        let mut del: Vec<&[u8]> = vec![b"DEL"];
        del.extend(moved.iter().copied());
        ctx.propagate_as(&del);
    }
    if let Some(e) = target_error {
        return Err(Error::err_owned(format!(
            "Target instance replied with error: {e}"
        )));
    }
    if socket_error {
        return Err(io_error(false));
    }
    ctx.reply.ok();
    Ok(())
}
