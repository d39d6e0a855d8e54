//! Persistence: RDB snapshots compatible with Redis 7.0 (`rdb/`), the
//! SAVE/BGSAVE machinery around them, `save <seconds> <changes>` rules,
//! loading on start, and the facts INFO persistence reports
//! ([`PersistState`], read by INFO persistence).
//!
//! BGSAVE (`bgsave.rs`) and BGREWRITEAOF (`aof/rewrite.rs`) fork, as Redis
//! does: a child writes its copy-on-write view of the keyspace while the
//! server keeps answering, one child at a time.
//!
//! Files are written as Redis does: to a temporary file in `dir`, fsynced,
//! then renamed over `dbfilename`, so the previous file stays intact until
//! the new one is complete.

pub mod aof;
pub mod aof_load;
mod bgsave;
pub mod child_info;
pub mod cmdlog;
pub mod rdb;

pub use self::bgsave::{bgsave_poll, bgsave_start, cancel_bgsave, Bgsave, Piece, SyncSnapshot};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use self::rdb::load::{load_rdb_with, LoadOptions, LoadReport};
pub use self::rdb::save::ReplInfo;
use self::rdb::save::{write_rdb, DbSource, EachKey, SaveOptions, SaveReport};
use crate::config::Config;
use crate::store::Store;
use crate::util::clock;

/// Redis's CONFIG_BGSAVE_RETRY_DELAY: after a failed background save, save
/// rules wait this many seconds before trying again.
const BGSAVE_RETRY_DELAY: u64 = 5;

/// The server's side of a load at start or DEBUG LOADAOF: it runs the
/// commands an AOF holds and, between chunks of the files, serves clients
/// (Redis's processEventsWhileBlocked during loading).
pub trait LoadHost {
    /// Runs one command read from an AOF.
    fn replay(&mut self, store: &mut Store, argv: crate::net::request::Argv<'_>);
    /// `argv` names a command (and subcommand) this server has: an AOF
    /// naming another is refused (Redis's lookupCommand in
    /// loadSingleAppendOnlyFile).
    fn knows(&self, _argv: crate::net::request::Argv<'_>) -> bool {
        true
    }
    /// `bytes` more of the files were read: INFO's loading figures move
    /// and waiting clients are served. False stops the load (a shutdown).
    fn progress(&mut self, store: &mut Store, bytes: u64) -> bool;
    /// This server is a master (not a replica by `replicaof` nor a cluster
    /// replica by its nodes.conf): it skips keys whose TTL has passed.
    fn am_master(&self) -> bool;
}

/// The size of the RDB file a start-up loads (0 when there is none).
pub fn rdb_size(config: &Config) -> u64 {
    std::fs::metadata(rdb_path(config)).map_or(0, |m| m.len())
}

/// The error of a load a shutdown stopped.
pub fn load_stopped() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Interrupted,
        "loading stopped by a shutdown",
    )
}

/// What persistence works on besides the keyspace: the configuration, its
/// own state and the append-only file; never the whole server.
pub struct Persistence<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// Save state.
    pub state: &'a mut PersistState,
    /// The append-only file.
    pub aof: &'a mut aof::Aof,
    /// The replication history a save records (see [`ReplInfo`]).
    pub repl: Option<ReplInfo>,
    /// A snapshot for replicas is being made.
    pub replica_snapshot: bool,
}

impl Persistence<'_> {
    /// A child writing an RDB runs: a background save, or a snapshot for
    /// replicas (Redis's CHILD_TYPE_RDB).
    pub fn rdb_child_running(&self) -> bool {
        self.state.bgsave.is_some() || self.replica_snapshot
    }

    /// Any child runs (Redis's hasActiveChildProcess): one at a time.
    pub fn child_running(&self) -> bool {
        self.rdb_child_running() || self.aof.rewrite.is_some()
    }
}

/// Persistence state, read by INFO persistence and
/// LASTSAVE. Lives in `ServerState::persist`.
pub struct PersistState {
    /// Unix time of the last successful save (LASTSAVE).
    pub last_save: u64,
    /// The background save running now, if any.
    pub bgsave: Option<Bgsave>,
    /// Outcome of the last background (or foreground) save
    /// (`rdb_last_bgsave_status`).
    pub last_bgsave_ok: bool,
    /// What the last background save's child copied on write
    /// (`rdb_last_cow_size`).
    pub last_cow_size: u64,
    /// Real Unix ms of the last "applying a command even though it is
    /// unable to write to disk" warning of a replica.
    pub disk_error_logged_ms: u64,
    /// Duration of the last background save in seconds, -1 when none ran
    /// (`rdb_last_bgsave_time_sec`).
    pub last_bgsave_time_sec: i64,
    /// Unix time of the last background save attempt.
    pub last_bgsave_try: u64,
    /// Saves performed, foreground and background (`rdb_saves`).
    pub saves: u64,
    /// Keys skipped as expired by the last load (`rdb_last_load_keys_expired`).
    pub last_load_keys_expired: u64,
    /// Keys loaded by the last load (`rdb_last_load_keys_loaded`).
    pub last_load_keys_loaded: u64,
    /// BGSAVE SCHEDULE found an AOF rewrite running: save once it ends.
    pub bgsave_scheduled: bool,
    /// The replication history the file loaded at start-up recorded.
    pub loaded_repl: Option<ReplInfo>,
    /// The keys that load skipped as expired, for a master's backlog.
    pub loaded_expired: Vec<(usize, Vec<u8>)>,
}

impl Default for PersistState {
    fn default() -> Self {
        PersistState {
            last_save: clock::real_now_ms() / 1000,
            bgsave: None,
            last_bgsave_ok: true,
            last_cow_size: 0,
            disk_error_logged_ms: 0,
            last_bgsave_time_sec: -1,
            last_bgsave_try: 0,
            saves: 0,
            last_load_keys_expired: 0,
            last_load_keys_loaded: 0,
            bgsave_scheduled: false,
            loaded_repl: None,
            loaded_expired: Vec::new(),
        }
    }
}

/// Parses the `save` directive as Redis 7.0 does: `""` clears the rules,
/// otherwise pairs of non-negative `<seconds> <changes>` integers.
pub fn parse_save_rules(s: &str) -> Result<Vec<(u64, u64)>, &'static str> {
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.len() % 2 == 1 {
        return Err("Invalid save parameters");
    }
    words
        .chunks(2)
        .map(|p| match (p[0].parse::<u64>(), p[1].parse::<u64>()) {
            (Ok(secs), Ok(changes)) => Ok((secs, changes)),
            _ => Err("Invalid save parameters"),
        })
        .collect()
}

/// The `save` rules as CONFIG GET shows them (`3600 1 300 100 60 10000`).
pub fn format_save_rules(rules: &[(u64, u64)]) -> String {
    rules
        .iter()
        .map(|(s, c)| format!("{s} {c}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The file SAVE writes and start-up loads: `dir`/`dbfilename`.
pub fn rdb_path(config: &Config) -> PathBuf {
    Path::new(&config.dir).join(&config.dbfilename)
}

/// Bytes allocated, for the `used-mem` AUX field.
fn used_memory() -> u64 {
    crate::util::counting_alloc::allocated()
}

/// The options of an RDB save under `config`.
pub(crate) fn save_options(config: &Config) -> SaveOptions {
    SaveOptions {
        compress: config.rdbcompression,
        checksum: config.rdbchecksum,
        used_mem: used_memory(),
        aof_base: false,
        repl: None,
        key_delay_us: config.get_i64("rdb-key-save-delay").unwrap_or(0),
        fsync_every: if config.get_bool("rdb-save-incremental-fsync") {
            AUTOSYNC_BYTES
        } else {
            0
        },
    }
}

/// How often a file being saved is fsynced with the incremental fsync
/// directives on (Redis's REDIS_AUTOSYNC_BYTES): the kernel never holds
/// much of it dirty, so the final fsync does not stall.
pub(crate) const AUTOSYNC_BYTES: u64 = 4 * 1024 * 1024;

/// A file written through, fsynced every `every` bytes (never when 0).
pub(crate) struct AutoSync {
    file: std::fs::File,
    every: u64,
    since: u64,
    /// fsyncs made so far.
    syncs: u64,
}

impl AutoSync {
    pub(crate) fn new(file: std::fs::File, every: u64) -> AutoSync {
        AutoSync {
            file,
            every,
            since: 0,
            syncs: 0,
        }
    }

    pub(crate) fn into_inner(self) -> std::fs::File {
        self.file
    }
}

impl std::io::Write for AutoSync {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        if self.every != 0 {
            self.since += n as u64;
            if self.since >= self.every {
                self.since = 0;
                self.syncs += 1;
                self.file.sync_data()?;
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl DbSource for Store {
    fn db_count(&self) -> usize {
        self.dbs.len()
    }

    fn functions(&self) -> &[Vec<u8>] {
        &self.functions
    }

    fn db_sizes(&self, db: usize) -> (usize, usize) {
        (self.dbs[db].len(), self.dbs[db].volatile())
    }

    fn each(&self, db: usize, f: &mut EachKey<'_>) -> std::io::Result<()> {
        let mut err = None;
        self.dbs[db].dict.for_each(|e| {
            if err.is_none() {
                if let Err(x) = f(e.key(), &e.value(), e.expire_at()) {
                    err = Some(x);
                }
            }
        });
        err.map_or(Ok(()), Err)
    }
}

/// Saves being written by this process now: the first is named as Redis
/// names it, `temp-<pid>.rdb` (tests and tools look for that name); one
/// overlapping it gets a sequence number too, so they never share a file.
pub(crate) static TEMP_IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// The temp file process `pid` writes next to `path`: `temp-<pid>.rdb`,
/// or `temp-<pid>-<seq>.rdb` when `seq` is given.
pub(crate) fn temp_path(path: &Path, pid: u32, seq: Option<u64>) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match seq {
        None => dir.join(format!("temp-{pid}.rdb")),
        Some(seq) => dir.join(format!("temp-{pid}-{seq}.rdb")),
    }
}

/// Writes `src` to `path` safely: a temp file in the same directory,
/// fsynced, renamed over `path`, and the directory fsynced.
pub fn write_file(
    path: &Path,
    src: &dyn DbSource,
    opts: SaveOptions,
    cancel: Option<&AtomicBool>,
) -> Result<SaveReport, String> {
    let overlapping = TEMP_IN_FLIGHT.fetch_add(1, Ordering::Relaxed) > 0;
    let seq = overlapping.then(|| TEMP_SEQ.fetch_add(1, Ordering::Relaxed) + 1);
    let tmp = temp_path(path, std::process::id(), seq);
    let dir = tmp
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let result = write_temp_and_rename(path, &tmp, &dir, src, opts, cancel);
    TEMP_IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// [`write_file`]'s steps, failing with rdbSave's messages.
fn write_temp_and_rename(
    path: &Path,
    tmp: &Path,
    dir: &Path,
    src: &dyn DbSource,
    opts: SaveOptions,
    cancel: Option<&AtomicBool>,
) -> Result<SaveReport, String> {
    let name = |p: &Path| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    // The server's root directory, as rdbSave's getcwd().
    let root = || {
        std::fs::canonicalize(dir).map_or_else(|_| "unknown".into(), |d| d.display().to_string())
    };
    let strerror = crate::util::process::strerror;
    let werr = |op: &str, e: std::io::Error| {
        format!("Write error saving DB on disk({op}): {}", strerror(&e))
    };
    let file = std::fs::File::create(tmp).map_err(|e| {
        format!(
            "Failed opening the temp RDB file {} (in server root dir {}) for saving: {}",
            name(tmp),
            root(),
            strerror(&e)
        )
    })?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, AutoSync::new(file, opts.fsync_every));
    let report = write_rdb(&mut w, src, opts, cancel).map_err(|e| werr("rdbSaveRio", e))?;
    w.flush().map_err(|e| werr("fflush", e))?;
    let file = w
        .into_inner()
        .map_err(|e| werr("fflush", e.into_error()))?
        .into_inner();
    file.sync_all().map_err(|e| werr("fsync", e))?;
    drop(file);
    if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
        return Err("Background saving cancelled".into());
    }
    std::fs::rename(tmp, path).map_err(|e| {
        format!(
            "Error moving temp DB file {} on the final destination {} (in server root dir {}): {}",
            name(tmp),
            name(path),
            root(),
            strerror(&e)
        )
    })?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(report)
}

/// Saves the keyspace now, on the calling thread (SAVE, and SHUTDOWN when
/// save rules are set: call `persist::save_now(ctx.store, ctx.server)`).
/// A background save still running is abandoned first, so it cannot
/// replace this newer file when it finishes.
pub fn save_now(store: &mut Store, p: &mut Persistence<'_>) -> Result<SaveReport, String> {
    cancel_bgsave(p);
    let path = rdb_path(p.config);
    p.state.saves += 1;
    let opts = SaveOptions {
        repl: p.repl,
        ..save_options(p.config)
    };
    let report = write_file(&path, store, opts, None);
    match &report {
        Ok(_) => {
            store.stats.dirty = 0;
            p.state.last_save = clock::real_now_ms() / 1000;
            p.state.last_bgsave_ok = true;
            tracing::info!("DB saved on disk");
        }
        Err(e) => tracing::warn!("{e}"),
    }
    report
}

/// The save step of SHUTDOWN and SIGTERM (Redis's `prepareForShutdown`):
/// saves when `SAVE` was given, or when save rules are set and `NOSAVE` was
/// not. On `Err` SHUTDOWN without FORCE answers
/// `ERR Errors trying to SHUTDOWN. Check logs.` and keeps running.
pub fn save_on_shutdown(
    store: &mut Store,
    p: &mut Persistence<'_>,
    save: bool,
    nosave: bool,
) -> Result<(), String> {
    if nosave || (!save && p.config.save.is_empty()) {
        cancel_bgsave(p);
        return Ok(());
    }
    tracing::info!("Saving the final RDB snapshot before exiting.");
    save_now(store, p).map(|_| ())
}

/// Starts a background save when one was scheduled (BGSAVE SCHEDULE) or a
/// `save <seconds> <changes>` rule is met (serverCron's check): enough
/// changes, enough time since the last save, and not right after a failed
/// attempt.
pub fn check_save_rules(store: &Store, p: &mut Persistence<'_>) {
    // One child at a time, as in Redis: saves wait for an AOF rewrite
    // and a snapshot for replicas.
    if p.child_running() {
        return;
    }
    if p.state.bgsave_scheduled {
        p.state.bgsave_scheduled = false;
        if let Err(e) = bgsave_start(store, p) {
            p.state.last_bgsave_ok = false;
            tracing::warn!("{e}");
        }
        return;
    }
    if p.config.save.is_empty() {
        return;
    }
    // Save points count real seconds: moving the logical clock saves nothing.
    let now = clock::real_now_ms() / 1000;
    let dirty = store.stats.dirty;
    let since = now.saturating_sub(p.state.last_save);
    let retry_ok =
        now.saturating_sub(p.state.last_bgsave_try) > BGSAVE_RETRY_DELAY || p.state.last_bgsave_ok;
    let due = p
        .config
        .save
        .iter()
        .find(|(secs, changes)| dirty >= *changes && since > *secs && retry_ok);
    if let Some((secs, changes)) = due.copied() {
        tracing::info!("{changes} changes in {secs} seconds. Saving...");
        if let Err(e) = bgsave_start(store, p) {
            p.state.last_bgsave_ok = false;
            tracing::warn!("{e}");
        }
    }
}

/// Loads `dir`/`dbfilename` into an empty store at start-up. A missing file
/// is not an error; a damaged one is, with the file, offset and reason.
pub fn load_on_start(
    store: &mut Store,
    p: &mut Persistence<'_>,
    host: &mut dyn LoadHost,
) -> std::io::Result<()> {
    let path = rdb_path(p.config);
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot read RDB file {}: {e}", path.display()),
            ))
        }
    };
    let started = Instant::now();
    let mut stopped = false;
    let now = clock::now_ms();
    store.set_now(now);
    let opts = LoadOptions {
        // A master lists what expired, for its backlog (a replica gets its
        // master's DELs).
        feed_expired: p.config.get("replicaof").is_empty(),
        keep_expired: !host.am_master(),
        ..load_options(p.config, now, false)
    };
    let loaded = load_rdb_with(&data, store, opts, &mut |store, bytes| {
        stopped = !host.progress(store, bytes);
        !stopped
    })
    .map(|report| {
        store.stats.dirty = 0;
        report
    });
    if stopped {
        return Err(load_stopped());
    }
    let report = loaded.map_err(|e| {
        report_bad_file(&path, &e);
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "Terminating server after rdb file reading failure.",
        )
    })?;
    p.state.last_load_keys_loaded = report.keys_loaded;
    p.state.last_load_keys_expired = report.keys_expired;
    p.state.loaded_repl = ReplInfo::from_aux(&report.aux);
    if p.state.loaded_repl.is_some() {
        p.state.loaded_expired = report.expired;
    }
    tracing::info!(
        "DB loaded from disk: {:.3} seconds ({} keys, {} expired keys skipped)",
        started.elapsed().as_secs_f64(),
        report.keys_loaded,
        report.keys_expired
    );
    Ok(())
}

/// Logs why the RDB file at start-up does not load, as Redis does before
/// it exits: its internal-error line, then (on standard output, as
/// redis-check-rdb prints it) where the file went wrong.
fn report_bad_file(path: &std::path::Path, e: &rdb::load::LoadError) {
    use std::io::Write;
    tracing::warn!("{}", e.internal_error_line());
    let mut out = std::io::stdout().lock();
    // Standard output may be closed (a daemon): the log line above stands.
    let _ = writeln!(out, "[offset 0] Checking RDB file {}", path.display());
    for line in e.check_report() {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

/// An RDB image with no keys and the function libraries `functions` (a
/// replica that asked for no data, or for the functions alone).
pub fn empty_rdb(config: &Config, functions: &[Vec<u8>]) -> Vec<u8> {
    empty_rdb_for_replicas(config, functions, None)
}

/// [`empty_rdb`] with the replication history's aux fields, as a snapshot
/// for replicas filtered by `rdb-filter-only` carries them.
pub fn empty_rdb_for_replicas(
    config: &Config,
    functions: &[Vec<u8>],
    info: Option<ReplInfo>,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut store = Store::new(1);
    store.functions = functions.to_vec();
    let opts = SaveOptions {
        repl: info,
        ..save_options(config)
    };
    // Writing into memory cannot fail.
    let _ = write_rdb(&mut out, &store, opts, None);
    out
}

/// Loads an RDB image into `store` and resets the change counter.
pub fn load_file(
    data: &[u8],
    store: &mut Store,
    config: &Config,
) -> Result<LoadReport, rdb::load::LoadError> {
    load_file_with(data, store, config, &mut |_, _| true)
}

/// [`load_file`] into a store that keeps its keys, the file's replacing
/// those it names (DEBUG RELOAD MERGE: Redis's RDBFLAGS_ALLOW_DUP).
pub fn load_file_merging(
    data: &[u8],
    store: &mut Store,
    config: &Config,
) -> Result<LoadReport, rdb::load::LoadError> {
    load_image(data, store, config, true, &mut |_, _| true)
}

/// [`load_file`] with a progress hook (see [`rdb::load::load_rdb_with`]).
pub fn load_file_with(
    data: &[u8],
    store: &mut Store,
    config: &Config,
    progress: &mut dyn FnMut(&mut Store, u64) -> bool,
) -> Result<LoadReport, rdb::load::LoadError> {
    load_image(data, store, config, false, progress)
}

/// The options a load takes from the configuration, at `now_ms`.
pub fn load_options(config: &Config, now_ms: u64, allow_dup: bool) -> LoadOptions {
    LoadOptions {
        verify_checksum: config.rdbchecksum && !config.skip_checksum_validation,
        now_ms,
        key_delay_us: config.get_i64("key-load-delay").unwrap_or(0),
        events_interval: config
            .get_i64("loading-process-events-interval-bytes")
            .unwrap_or(0)
            .max(0) as u64,
        allow_dup,
        feed_expired: false,
        keep_expired: false,
    }
}

fn load_image(
    data: &[u8],
    store: &mut Store,
    config: &Config,
    allow_dup: bool,
    progress: &mut dyn FnMut(&mut Store, u64) -> bool,
) -> Result<LoadReport, rdb::load::LoadError> {
    let now = clock::now_ms();
    store.set_now(now);
    let report = load_rdb_with(data, store, load_options(config, now, allow_dup), progress)?;
    store.stats.dirty = 0;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::value::Value;

    /// The incremental fsync directives: one fsync per 4 MB written, none
    /// when off.
    #[test]
    fn auto_sync_fsyncs_every_four_megabytes() {
        use std::io::Write as _;
        let dir = std::env::temp_dir().join(format!("ferrokv-autosync-{}", std::process::id()));
        for (every, want) in [(AUTOSYNC_BYTES, 2), (0, 0)] {
            let file = std::fs::File::create(&dir).expect("create");
            let mut w = std::io::BufWriter::with_capacity(1 << 16, AutoSync::new(file, every));
            let chunk = vec![b'x'; 1 << 16];
            for _ in 0..160 {
                w.write_all(&chunk).expect("write");
            }
            let inner = w.into_inner().map_err(|e| e.into_error()).expect("flush");
            assert_eq!(inner.syncs, want);
        }
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn save_rules_parse_and_format() {
        let rules = parse_save_rules("3600 1 300 100 60 10000").expect("valid");
        assert_eq!(rules, Config::default().save);
        assert_eq!(format_save_rules(&rules), "3600 1 300 100 60 10000");
        assert_eq!(parse_save_rules(""), Ok(vec![]));
        assert!(parse_save_rules("10").is_err());
        assert!(parse_save_rules("10 -1").is_err());
        assert!(parse_save_rules("a 1").is_err());
    }

    #[test]
    fn saves_reset_the_change_counter() {
        let mut bed = TestBed::new("info", 0);
        bed.store
            .set(0, b"k", Value::string(b"v"), crate::store::Ttl::None);
        assert_eq!(bed.store.stats.dirty, 1);
        assert_eq!(bed.state.saves, 0);
        let (store, mut p) = bed.split();
        save_now(store, &mut p).expect("saves");
        assert_eq!(bed.store.stats.dirty, 0);
        assert_eq!(bed.state.saves, 1);
        assert!(bed.state.last_bgsave_ok);
    }
}

/// A keyspace with what persistence works on, in a directory of its own,
/// for the unit tests here and in `bgsave.rs`.
#[cfg(test)]
pub(crate) struct TestBed {
    pub store: Store,
    pub config: Config,
    pub state: PersistState,
    pub aof: aof::Aof,
    pub dir: PathBuf,
}

#[cfg(test)]
impl TestBed {
    /// `keys` string keys `k0`, `k1`... in database 0.
    pub fn new(name: &str, keys: usize) -> TestBed {
        let dir = std::env::temp_dir().join(format!("ferrokv-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let config = Config {
            dir: dir.display().to_string(),
            ..Config::default()
        };
        let mut store = Store::new(16);
        store.set_now(clock::now_ms());
        for i in 0..keys {
            let k = format!("k{i}");
            let v = crate::store::value::Value::string(k.as_bytes());
            store.set(0, k.as_bytes(), v, crate::store::Ttl::None);
        }
        TestBed {
            store,
            config,
            state: PersistState::default(),
            aof: aof::Aof::default(),
            dir,
        }
    }

    /// The keyspace and the persistence view, borrowed apart.
    pub fn split(&mut self) -> (&mut Store, Persistence<'_>) {
        let p = Persistence {
            config: &self.config,
            state: &mut self.state,
            aof: &mut self.aof,
            repl: None,
            replica_snapshot: false,
        };
        (&mut self.store, p)
    }
}

#[cfg(test)]
impl Drop for TestBed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
