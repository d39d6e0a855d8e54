//! MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
//! [AUTH2 user pw] [KEYS key...] (Redis's migrateCommand): the keys are
//! sent as RESTORE (RESTORE-ASKING in cluster mode) over a connection to
//! the target, then deleted here unless COPY, the MIGRATE reaching the AOF
//! and replicas as DEL of the keys the target took. Like Redis's, it
//! blocks the server for the exchange, bounded by `timeout`. The
//! connection to a target is kept for ten seconds of disuse, as Redis
//! keeps it (SELECT is sent only when the database changes).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::args::{self, is};
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::persist::rdb;
use crate::server::MigrateSocket;

/// Appends a RESP command to `out`.
fn push_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    crate::net::request::encode(out, args);
}

/// Reads one reply line (up to 1,024 bytes, as Redis's syncReadLine);
/// Err(true) when the read timed out, Err(false) on another failure.
fn read_line(r: &mut BufReader<TcpStream>) -> Result<String, bool> {
    let mut line = Vec::new();
    match Read::by_ref(r).take(1024).read_until(b'\n', &mut line) {
        Ok(0) => return Err(false),
        Ok(_) => {}
        Err(e) => return Err(timed_out(&e)),
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// Whether an I/O error is a timeout.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// How long an unused cached connection is kept (MIGRATE_SOCKET_CACHE_TTL).
const SOCKET_TTL_MS: u64 = 10_000;
/// Most cached connections (MIGRATE_SOCKET_CACHE_ITEMS).
const SOCKET_CACHE_ITEMS: usize = 64;

/// The cached connection to `name` (`host:port`), opened if needed
/// (migrateGetSocket); None when it cannot be opened within `timeout`.
fn cached_socket<'s>(
    ctx: &'s mut Ctx<'_>,
    name: &str,
    host: &str,
    port: &str,
    timeout: Duration,
) -> Option<&'s mut MigrateSocket> {
    let now = crate::util::clock::real_now_ms();
    let cache = &mut ctx.server.migrate_sockets;
    if !cache.contains_key(name) {
        if cache.len() >= SOCKET_CACHE_ITEMS {
            // Too many: drop one.
            if let Some(k) = cache.keys().next().cloned() {
                cache.remove(&k);
            }
        }
        let addr = (host, port.parse::<u16>().ok()?)
            .to_socket_addrs()
            .ok()?
            .next()?;
        let s = TcpStream::connect_timeout(&addr, timeout).ok()?;
        let _ = s.set_nodelay(true);
        let reader = BufReader::new(s.try_clone().ok()?);
        cache.insert(
            name.to_string(),
            MigrateSocket {
                writer: s,
                reader,
                last_dbid: None,
                last_use_ms: now,
            },
        );
    }
    let sock = cache.get_mut(name)?;
    sock.writer.set_read_timeout(Some(timeout)).ok()?;
    sock.writer.set_write_timeout(Some(timeout)).ok()?;
    sock.last_use_ms = now;
    Some(sock)
}

/// Closes cached connections unused for ten seconds
/// (migrateCloseTimedoutSockets, from the server's cron).
pub fn close_idle_sockets(server: &mut crate::server::ServerState) {
    let now = crate::util::clock::real_now_ms();
    server
        .migrate_sockets
        .retain(|_, s| now.saturating_sub(s.last_use_ms) <= SOCKET_TTL_MS);
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
    let host = args::lossy(argv.get(1));
    let port = args::lossy(argv.get(2));
    let name = format!("{host}:{port}");
    // A cached connection may have been closed by the target: one retry
    // on a fresh one, unless the failure was a timeout (Redis's
    // may_retry).
    let mut may_retry = true;
    let (auth_reply, select_reply, replies) = loop {
        let Some(sock) = cached_socket(ctx, &name, &host, &port, timeout) else {
            return Err(Error::raw(
                "IOERR error or timeout connecting to the client",
            ));
        };
        let select = sock.last_dbid != Some(dbid);
        let mut cmd = Vec::new();
        if let Some(pw) = password {
            match user {
                Some(u) => push_command(&mut cmd, &[b"AUTH", u, pw]),
                None => push_command(&mut cmd, &[b"AUTH", pw]),
            }
        }
        let dbid_text = dbid.to_string();
        if select {
            push_command(&mut cmd, &[b"SELECT", dbid_text.as_bytes()]);
        }
        for (key, ttl, payload) in &found {
            let ttl = ttl.to_string();
            let mut args: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), payload];
            if replace {
                args.push(b"REPLACE");
            }
            push_command(&mut cmd, &args);
        }
        let exchange = (|| -> Result<_, (bool, bool)> {
            sock.writer
                .write_all(&cmd)
                .map_err(|e| (true, timed_out(&e)))?;
            let line = |r: &mut BufReader<TcpStream>| read_line(r).map_err(|t| (false, t));
            let auth = match password {
                Some(_) => Some(line(&mut sock.reader)?),
                None => None,
            };
            let sel = if select {
                Some(line(&mut sock.reader)?)
            } else {
                None
            };
            // The first reply missing is a connection that died before it
            // did anything: retried. Later ones end the exchange.
            let mut replies = vec![line(&mut sock.reader)?];
            for _ in 1..found.len() {
                match read_line(&mut sock.reader) {
                    Ok(r) => replies.push(r),
                    Err(_) => break,
                }
            }
            Ok((auth, sel, replies))
        })();
        match exchange {
            Ok((auth, sel, replies)) => {
                if replies.len() < found.len() {
                    ctx.server.migrate_sockets.remove(&name);
                }
                break (auth, sel, replies);
            }
            Err((writing, timed_out)) => {
                ctx.server.migrate_sockets.remove(&name);
                if may_retry && !timed_out {
                    may_retry = false;
                    continue;
                }
                return Err(io_error(writing));
            }
        }
    };
    let mut target_error: Option<String> = None;
    let mut moved: Vec<&[u8]> = Vec::new();
    for ((key, _, _), reply) in found.iter().zip(&replies) {
        let failed = [
            auth_reply.as_deref(),
            select_reply.as_deref(),
            Some(reply.as_str()),
        ]
        .into_iter()
        .flatten()
        .find(|l| l.starts_with('-'));
        if let Some(e) = failed {
            target_error.get_or_insert_with(|| e[1..].to_string());
        } else if !copy {
            if ctx.store.delete(db, key) {
                ctx.store.signal_modified(db, key);
                super::pubsub::notify(ctx, b'g', "del", key);
            }
            moved.push(key);
        }
    }
    let socket_error = replies.len() < found.len();
    match ctx.server.migrate_sockets.get_mut(&name) {
        // On an error the target's database is no longer known.
        Some(s) if target_error.is_none() => s.last_dbid = Some(dbid),
        Some(s) => s.last_dbid = None,
        None => {}
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
