//! The append-only file, in Redis 7.0's multi-part layout: inside
//! `dir`/`appenddirname` a base file (`<name>.1.base.rdb`, an RDB image), an
//! incremental file (`<name>.1.incr.aof`, commands in RESP) and the manifest
//! `<name>.manifest` naming both.
//!
//! Propagation (Redis's `feedAppendOnlyFile`): after a command with the
//! WRITE flag changed the dirty counter, `feed` appends it, or the rewrite
//! that replays to the same data (relative expiries followed by PEXPIREAT
//! of the absolute time, EXPIRE family as PEXPIREAT or DEL, INCRBYFLOAT as
//! SET ... KEEPTTL, SPOP as SREM of the popped members, expired keys as
//! DEL), preceded by SELECT when the database differs from the last one
//! written. Writes inside EXEC or a script (its effects, as Redis 7.0
//! replicates scripts) are wrapped in MULTI ... EXEC. The buffer is written
//! to the file before the batch's replies are sent (`flush`), and with
//! `appendfsync always` also fsynced then, so an acknowledged write is on
//! disk; `everysec` fsyncs from a background thread once a second.
//!
//! Rewrites (`rewrite.rs`): BGREWRITEAOF and automatic growth rewrites fork
//! a child that writes the new base while the server keeps appending to a
//! new incremental file; CONFIG SET appendonly yes and start-up without a
//! manifest write the first base synchronously. Either way the manifest is
//! replaced atomically and only then are the old files deleted.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::aof_load::{AofFile, Manifest};
use crate::config::Config;
use crate::net::request::Argv;
use crate::store::Store;

mod rewrite;

pub use self::rewrite::{auto_rewrite, bgrewriteaof, write_commands, BgStart, Rewrite};

/// The fsync policy (`appendfsync`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fsync {
    /// fsync before replies are sent.
    Always,
    /// A background fsync once a second.
    EverySec,
    /// Left to the operating system.
    No,
}

impl Fsync {
    /// Parses the `appendfsync` value (anything unknown counts as everysec).
    pub fn parse(s: &str) -> Fsync {
        match s {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::EverySec,
        }
    }
}

/// AOF state, in `ServerState::aof`.
pub struct Aof {
    /// True while commands are appended (`appendonly yes` and the files
    /// are open). The one check on the hot path.
    pub on: bool,
    buf: Vec<u8>,
    file: Option<File>,
    /// The database the file's commands apply to now (None: SELECT first).
    db: Option<usize>,
    /// Nesting of command calls: EXEC and scripts run commands at depth 2.
    pub depth: u32,
    multi_open: bool,
    fsync: Fsync,
    last_fsync: Instant,
    syncing: Arc<AtomicBool>,
    /// Bytes in the incremental file.
    pub incr_size: u64,
    /// Bytes in the base file.
    pub base_size: u64,
    /// Outcome of the last write (`aof_last_write_status`).
    pub last_write_ok: bool,
    /// Rewrites performed.
    pub rewrites: u64,
    /// Duration of the last rewrite in seconds, -1 when none ran.
    pub last_rewrite_sec: i64,
    /// The files the manifest names now.
    pub manifest: Manifest,
    /// The background rewrite running now (`aof_rewrite_in_progress`).
    pub rewrite: Option<Rewrite>,
    /// A rewrite waits for a background save to end
    /// (`aof_rewrite_scheduled`).
    pub rewrite_scheduled: bool,
    /// Outcome of the last background rewrite (`aof_last_bgrewrite_status`).
    pub last_rewrite_ok: bool,
    /// Background rewrites failed in a row
    /// (`aof_rewrites_consecutive_failures`).
    pub rewrite_failures: u64,
    /// When the last rewrite failed (automatic rewrites back off).
    last_failure: Option<Instant>,
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            on: false,
            buf: Vec::new(),
            file: None,
            db: None,
            depth: 0,
            multi_open: false,
            fsync: Fsync::EverySec,
            last_fsync: Instant::now(),
            syncing: Arc::new(AtomicBool::new(false)),
            incr_size: 0,
            base_size: 0,
            last_write_ok: true,
            rewrites: 0,
            last_rewrite_sec: -1,
            manifest: Manifest::default(),
            rewrite: None,
            rewrite_scheduled: false,
            last_rewrite_ok: true,
            rewrite_failures: 0,
            last_failure: None,
        }
    }
}

/// The AOF directory: `dir`/`appenddirname`.
pub fn aof_dir(config: &Config) -> PathBuf {
    Path::new(&config.dir).join(&config.appenddirname)
}

/// The manifest path.
pub fn manifest_path(config: &Config) -> PathBuf {
    aof_dir(config).join(format!("{}.manifest", config.appendfilename))
}

/// The base file name: `.base.rdb` with `aof-use-rdb-preamble yes`,
/// `.base.aof` (commands) otherwise.
fn base_name(config: &Config, seq: u64) -> String {
    let ext = if config.get_bool("aof-use-rdb-preamble") {
        "rdb"
    } else {
        "aof"
    };
    format!("{}.{seq}.base.{ext}", config.appendfilename)
}

fn incr_name(config: &Config, seq: u64) -> String {
    format!("{}.{seq}.incr.aof", config.appendfilename)
}

/// Appends `args` as a RESP array.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        out.extend_from_slice(a.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Commands whose relative expiry is made absolute: after them the key's
/// expiry time, if any, is appended as PEXPIREAT.
const RELATIVE_TTL: &[&str] = &["set", "setex", "psetex", "getex", "restore"];

/// Commands replaced by PEXPIREAT (or DEL when the key is gone).
const EXPIRES: &[&str] = &["expire", "pexpire", "expireat", "pexpireat"];

impl Aof {
    /// Appends the effect of the command `name` (lowercase) just run in
    /// database `db`. Called only when `on` and the command wrote. `reply`
    /// is the command's reply (SPOP propagates the members it popped).
    pub fn feed(&mut self, store: &Store, db: usize, name: &str, argv: Argv<'_>, reply: &[u8]) {
        if self.depth > 1 && !self.multi_open {
            // The first write of a transaction or script opens MULTI; it
            // goes to the database of that write.
            self.select(db);
            encode(&mut self.buf, &[b"MULTI"]);
            self.multi_open = true;
        }
        self.select(db);
        let key = argv.try_get(1).unwrap_or(b"");
        if EXPIRES.contains(&name) {
            match store.peek(db, key) {
                Some(e) if e.expire_at() != 0 => {
                    let at = e.expire_at().to_string();
                    encode(&mut self.buf, &[b"PEXPIREAT", key, at.as_bytes()]);
                }
                Some(_) => {
                    let args: Vec<&[u8]> = (0..argv.len()).map(|i| argv.get(i)).collect();
                    encode(&mut self.buf, &args);
                }
                None => encode(&mut self.buf, &[b"DEL", key]),
            }
            return;
        }
        if name == "spop" {
            // Random: replayed as the removal of the members popped.
            let members = reply_bulks(reply);
            if !members.is_empty() {
                let mut args: Vec<&[u8]> = vec![b"SREM", key];
                args.extend(members);
                encode(&mut self.buf, &args);
            }
            return;
        }
        if name == "xadd" || name == "xtrim" {
            let args = stream_args(store, db, name == "xadd", argv, reply);
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
            encode(&mut self.buf, &refs);
            return;
        }
        if name == "incrbyfloat" {
            if let Some(v) = store.peek(db, key).and_then(|e| e.value.as_str()) {
                let v = v.to_vec();
                encode(&mut self.buf, &[b"SET", key, &v, b"KEEPTTL"]);
                return;
            }
        }
        let args: Vec<&[u8]> = (0..argv.len()).map(|i| argv.get(i)).collect();
        encode(&mut self.buf, &args);
        if RELATIVE_TTL.contains(&name) {
            if let Some(e) = store.peek(db, key) {
                if e.expire_at() != 0 {
                    let at = e.expire_at().to_string();
                    encode(&mut self.buf, &[b"PEXPIREAT", key, at.as_bytes()]);
                }
            }
        }
    }

    /// Writes the keys expired since the last call as DEL (lazy and active
    /// expiry), before the command that ran into them.
    pub fn feed_expired(&mut self, store: &mut Store) {
        if store.expired_log.is_empty() {
            return;
        }
        let log = std::mem::take(&mut store.expired_log);
        for (db, key) in &log {
            self.select(*db);
            encode(&mut self.buf, &[b"DEL", key]);
        }
    }

    fn select(&mut self, db: usize) {
        if self.db != Some(db) {
            let n = db.to_string();
            encode(&mut self.buf, &[b"SELECT", n.as_bytes()]);
            self.db = Some(db);
        }
    }

    /// Closes an open MULTI once the outermost command (EXEC, EVAL, FCALL)
    /// returned.
    pub fn end_call(&mut self) {
        if self.depth == 0 && self.multi_open {
            encode(&mut self.buf, &[b"EXEC"]);
            self.multi_open = false;
        }
    }

    /// Writes the buffered commands to the file; fsyncs with `always`.
    /// Called before replies are sent.
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let Some(f) = self.file.as_mut() else {
            self.buf.clear();
            return;
        };
        let mut r = f.write_all(&self.buf);
        if r.is_ok() && self.fsync == Fsync::Always {
            r = f.sync_data();
        }
        match r {
            Ok(()) => {
                self.incr_size += self.buf.len() as u64;
                self.last_write_ok = true;
            }
            Err(e) => {
                if self.fsync == Fsync::Always {
                    // Redis: the replies would acknowledge writes that are
                    // not on disk, so the server stops instead.
                    tracing::warn!(
                        "Can't recover from AOF write error when the AOF fsync policy is \
                         'always': {e}. Exiting..."
                    );
                    std::process::exit(1);
                }
                if self.last_write_ok {
                    tracing::warn!("Error writing to the AOF file: {e}");
                }
                self.last_write_ok = false;
            }
        }
        self.buf.clear();
    }

    /// The once-a-second background fsync of `appendfsync everysec`.
    pub fn cron(&mut self) {
        if !self.on || self.fsync != Fsync::EverySec {
            return;
        }
        if self.last_fsync.elapsed().as_millis() < 1000 {
            return;
        }
        self.last_fsync = Instant::now();
        if self.syncing.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(f) = self.file.as_ref().and_then(|f| f.try_clone().ok()) else {
            self.syncing.store(false, Ordering::Release);
            return;
        };
        let flag = self.syncing.clone();
        let spawned = std::thread::Builder::new()
            .name("ferrokv-aof-fsync".into())
            .spawn(move || {
                let _ = f.sync_data();
                flag.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.syncing.store(false, Ordering::Release);
        }
    }

    /// Sets the fsync policy (start-up and CONFIG SET appendfsync).
    pub fn set_fsync(&mut self, policy: &str) {
        self.fsync = Fsync::parse(policy);
    }

    /// Writes a new base (the whole keyspace), a new empty incremental
    /// file and a manifest naming them, then appends to the new
    /// incremental file (start-up without a manifest, CONFIG SET
    /// appendonly yes). Synchronous: the executor waits for it. A
    /// background rewrite still running is abandoned first.
    pub fn rewrite(&mut self, store: &Store, config: &Config) -> Result<(), String> {
        rewrite::cancel(self);
        self.flush();
        let started = Instant::now();
        let dir = aof_dir(config);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("Can't create AOF directory {}: {e}", dir.display()))?;
        let old = super::aof_load::read_manifest(config)?.unwrap_or_default();
        let base = AofFile {
            name: base_name(config, old.base_seq + 1),
            seq: old.base_seq + 1,
        };
        let incr = AofFile {
            name: incr_name(config, old.incr_seq + 1),
            seq: old.incr_seq + 1,
        };
        let bytes = rewrite::write_base(&dir.join(&base.name), store, config)?;
        let file = open_append(&dir.join(&incr.name))?;
        let m = Manifest {
            base_seq: base.seq,
            incr_seq: incr.seq,
            base: Some(base),
            incrs: vec![incr],
            history: Vec::new(),
        };
        write_manifest(config, &m)?;
        delete_replaced(config, &old, &m);
        self.manifest = m;
        self.file = Some(file);
        self.db = None;
        self.incr_size = 0;
        self.base_size = bytes;
        self.rewrites += 1;
        self.last_rewrite_sec = started.elapsed().as_secs() as i64;
        self.set_fsync(&config.appendfsync);
        self.on = true;
        Ok(())
    }

    /// Opens the last incremental file the loaded manifest names for
    /// appending, creating one (and recording it) when there is none.
    pub fn open_on_start(&mut self, config: &Config, mut m: Manifest) -> std::io::Result<()> {
        if m.incrs.is_empty() {
            m.incr_seq += 1;
            m.incrs.push(AofFile {
                name: incr_name(config, m.incr_seq),
                seq: m.incr_seq,
            });
            write_manifest(config, &m).map_err(std::io::Error::other)?;
        }
        let Some(last) = m.incrs.last() else {
            return Err(std::io::Error::other("no incremental AOF file"));
        };
        let path = aof_dir(config).join(&last.name);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        self.incr_size = file.metadata().map_or(0, |m| m.len());
        self.file = Some(file);
        self.manifest = m;
        self.db = None;
        self.set_fsync(&config.appendfsync);
        self.on = true;
        Ok(())
    }

    /// Stops appending (CONFIG SET appendonly no, shutdown), syncing what
    /// was written; a background rewrite is abandoned, as Redis kills its
    /// rewrite child.
    pub fn stop(&mut self) {
        rewrite::cancel(self);
        self.rewrite_scheduled = false;
        self.flush();
        if let Some(f) = self.file.take() {
            let _ = f.sync_data();
        }
        self.on = false;
    }
}

/// Opens `path` for appending, creating it.
fn open_append(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("Can't open the append-only file {}: {e}", path.display()))
}

/// Persists a manifest: temp file, fsync, rename (`persistAofManifest`).
fn write_manifest(config: &Config, m: &Manifest) -> Result<(), String> {
    write_atomically(&manifest_path(config), m.text().as_bytes())
        .map_err(|e| format!("Can't write the AOF manifest: {e}"))
}

/// Deletes the files `old` named that `new` does not (after the new
/// manifest is durable, so a crash never leaves it naming missing files).
fn delete_replaced(config: &Config, old: &Manifest, new: &Manifest) {
    let dir = aof_dir(config);
    for f in old.files() {
        if !new.files().any(|n| n.name == f.name) {
            let _ = std::fs::remove_file(dir.join(&f.name));
        }
    }
}

/// Writes `data` to a temp file next to `path`, fsyncs and renames it.
fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("manifest.tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(d) = path.parent().and_then(|d| File::open(d).ok()) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// XADD/XTRIM as Redis propagates them: the ID XADD generated in place of
/// `*` or `<ms>-*`, and an approximate trim (`~`, which depends on the node
/// layout) rewritten as the exact trim it amounted to: `=` with the
/// resulting length (MAXLEN) or first ID (MINID), LIMIT dropped
/// (streamRewriteApproxSpecifier, streamRewriteTrimArgument).
fn stream_args<'a>(
    store: &Store,
    db: usize,
    xadd: bool,
    argv: Argv<'a>,
    reply: &[u8],
) -> Vec<std::borrow::Cow<'a, [u8]>> {
    use std::borrow::Cow;
    let is = |a: &[u8], kw: &str| a.eq_ignore_ascii_case(kw.as_bytes());
    let n = argv.len();
    let mut args: Vec<Cow<'a, [u8]>> = (0..n).map(|i| Cow::Borrowed(argv.get(i))).collect();
    let mut approx: Option<(usize, bool)> = None;
    let mut limit_at = None;
    let mut id_at = None;
    let mut i = 2;
    while i < n {
        let opt = argv.get(i);
        let more = n - 1 - i;
        if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            let next = argv.get(i + 1);
            let mut at = i + 1;
            if more >= 2 && (next == b"~" || next == b"=") {
                if next == b"~" {
                    approx = Some((i + 1, is(opt, "maxlen")));
                } else {
                    approx = None;
                }
                at += 1;
            }
            i = at;
        } else if is(opt, "limit") && more > 0 {
            limit_at = Some(i);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
        } else if xadd {
            id_at = Some(i);
            break;
        } else {
            break;
        }
        i += 1;
    }
    if let (Some(at), Some(id)) = (id_at, reply_bulks(reply).first()) {
        args[at] = Cow::Owned(id.to_vec());
    }
    if let Some((tilde, maxlen)) = approx {
        if let Some(crate::store::value::Value::Stream(s)) =
            store.peek(db, argv.get(1)).map(|e| &e.value)
        {
            args[tilde] = Cow::Borrowed(b"=");
            args[tilde + 1] = Cow::Owned(if maxlen {
                s.len().to_string().into_bytes()
            } else {
                s.first_id().to_vec()
            });
        }
        if let Some(l) = limit_at {
            args.drain(l..l + 2);
        }
    }
    args
}

/// The bulk strings of a reply that is one bulk string or an array (or
/// RESP3 set) of them; empty for anything else.
fn reply_bulks(reply: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let line = |p: usize| -> Option<(i64, usize)> {
        let rel = reply.get(p..)?.iter().position(|&c| c == b'\r')?;
        let n = std::str::from_utf8(reply.get(p + 1..p + rel)?)
            .ok()?
            .parse()
            .ok()?;
        Some((n, p + rel + 2))
    };
    let bulk = |p: usize| -> Option<(&[u8], usize)> {
        if reply.get(p) != Some(&b'$') {
            return None;
        }
        let (n, start) = line(p)?;
        let end = start.checked_add(usize::try_from(n).ok()?)?;
        Some((reply.get(start..end)?, end + 2))
    };
    match reply.first() {
        Some(b'$') => {
            if let Some((b, _)) = bulk(0) {
                out.push(b);
            }
        }
        Some(b'*' | b'~') => {
            if let Some((n, mut p)) = line(0) {
                for _ in 0..n.max(0) {
                    let Some((b, next)) = bulk(p) else { break };
                    out.push(b);
                    p = next;
                }
            }
        }
        _ => {}
    }
    out
}
