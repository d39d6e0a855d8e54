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
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::aof_load::{AofFile, Manifest};
use super::cmdlog::CommandLog;
use crate::config::Config;
use crate::store::Store;

pub mod manifest;
mod rewrite;

pub use self::rewrite::{auto_rewrite, bgrewriteaof, enable, write_commands, BgStart, Rewrite};

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
    /// are open, or the temporary file of an enabling AOF while its first
    /// rewrite runs). The one check on the hot path.
    pub on: bool,
    /// `appendonly yes` was set and the first background rewrite has not
    /// finished yet (Redis's AOF_WAIT_REWRITE): the AOF counts as enabled
    /// but has no base yet.
    pub enabling: bool,
    /// Commands waiting to be written to the file.
    pub log: CommandLog,
    file: Option<File>,
    fsync: Fsync,
    /// `aof-timestamp-enabled`: `#TS:<unix time>` lines annotate the file.
    pub timestamps: bool,
    /// The second the last annotation named.
    last_timestamp: u64,
    /// `no-appendfsync-on-rewrite`: no fsync while a child process runs.
    pub no_fsync_on_rewrite: bool,
    /// A background save's child runs now (set by the server before each
    /// flush and cron; an AOF rewrite's child is `rewrite`).
    pub saving_child: bool,
    last_fsync: Instant,
    syncing: Arc<AtomicBool>,
    /// Bytes in the incremental file.
    pub incr_size: u64,
    /// Bytes in the base file.
    pub base_size: u64,
    /// Outcome of the last write (`aof_last_write_status`).
    pub last_write_ok: bool,
    /// Why the last write failed (strerror text), for MISCONF.
    pub last_write_error: String,
    /// errno of the last background fsync, 0 when it succeeded (Redis's
    /// aof_bio_fsync_status and aof_bio_fsync_errno).
    fsync_errno: Arc<AtomicI32>,
    /// Rewrites performed.
    pub rewrites: u64,
    /// Duration of the last rewrite in seconds, -1 when none ran.
    pub last_rewrite_sec: i64,
    /// What the last rewrite's child copied on write (`aof_last_cow_size`).
    pub last_cow_size: u64,
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
    /// DEBUG AOF-FLUSH-SLEEP: microseconds to sleep before each write of
    /// buffered commands (tests race replies against the write).
    pub flush_sleep_us: u64,
    /// Minutes the current back-off after repeated failures lasts (0: not
    /// limited yet), doubling each time up to an hour.
    limit_delay_min: u64,
    /// Unix second until which automatic rewrites are held back (0: none).
    limit_until: u64,
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            on: false,
            enabling: false,
            log: CommandLog::default(),
            file: None,
            fsync: Fsync::EverySec,
            timestamps: false,
            last_timestamp: 0,
            no_fsync_on_rewrite: false,
            saving_child: false,
            last_fsync: Instant::now(),
            syncing: Arc::new(AtomicBool::new(false)),
            incr_size: 0,
            base_size: 0,
            last_write_ok: true,
            last_write_error: String::new(),
            fsync_errno: Arc::new(AtomicI32::new(0)),
            rewrites: 0,
            last_rewrite_sec: -1,
            last_cow_size: 0,
            manifest: Manifest::default(),
            rewrite: None,
            rewrite_scheduled: false,
            last_rewrite_ok: true,
            rewrite_failures: 0,
            flush_sleep_us: 0,
            limit_delay_min: 0,
            limit_until: 0,
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

pub use super::cmdlog::encode;

impl Aof {
    /// Bytes buffered and not yet written (not counted against maxmemory).
    pub fn buffered(&self) -> usize {
        self.log.buf.capacity()
    }

    /// Under `aof-timestamp-enabled`, a `#TS:` line before the next command
    /// when the second changed since the last one (Redis's
    /// genAofTimestampAnnotationIfNeeded).
    #[inline]
    pub fn annotate(&mut self) {
        if self.timestamps {
            let now = crate::util::clock::real_now_ms() / 1000;
            if now > self.last_timestamp {
                self.last_timestamp = now;
                self.log
                    .buf
                    .extend_from_slice(timestamp_line(now).as_bytes());
            }
        }
    }

    /// Writes the buffered commands to the file; fsyncs with `always`.
    /// Called before replies are sent.
    pub fn flush(&mut self) {
        if self.log.buf.is_empty() {
            return;
        }
        let held = self.fsync_held();
        let Some(f) = self.file.as_mut() else {
            self.log.buf.clear();
            return;
        };
        if self.flush_sleep_us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(self.flush_sleep_us));
        }
        let mut r = f.write_all(&self.log.buf);
        if r.is_ok() && self.fsync == Fsync::Always && !held {
            r = f.sync_data();
        }
        match r {
            Ok(()) => {
                self.incr_size += self.log.buf.len() as u64;
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
                self.last_write_error = crate::util::process::strerror(&e);
            }
        }
        self.log.buf.clear();
    }

    /// True while `no-appendfsync-on-rewrite` holds fsyncs back: a child
    /// process (background save or AOF rewrite) runs (Redis's
    /// flushAppendOnlyFile with hasActiveChildProcess).
    fn fsync_held(&self) -> bool {
        self.no_fsync_on_rewrite && (self.saving_child || self.rewrite.is_some())
    }

    /// The once-a-second background fsync of `appendfsync everysec`.
    pub fn cron(&mut self) {
        if !self.on || self.fsync != Fsync::EverySec || self.fsync_held() {
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
        let errno = self.fsync_errno.clone();
        let spawned = std::thread::Builder::new()
            .name("ferrokv-aof-fsync".into())
            .spawn(move || {
                match f.sync_data() {
                    Ok(()) => errno.store(0, Ordering::Release),
                    Err(e) => {
                        if errno.swap(e.raw_os_error().unwrap_or(libc::EIO), Ordering::AcqRel) == 0
                        {
                            tracing::warn!("Error trying to fsync the AOF file: {e}");
                        }
                    }
                }
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
        if self.timestamps && !config.get_bool("aof-use-rdb-preamble") {
            // The base's annotation stands for this second.
            self.last_timestamp = crate::util::clock::real_now_ms() / 1000;
        }
        let file = open_append(&dir.join(&incr.name))?;
        let m = Manifest {
            base_seq: base.seq,
            incr_seq: incr.seq,
            base: Some(base),
            incrs: vec![incr],
            history: rewrite::history_after_rewrite(&old, config, false),
        };
        write_manifest(config, &m)?;
        delete_replaced(config, &old, &m);
        self.manifest = m;
        self.file = Some(file);
        self.log.db = None;
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
        let created = m.incrs.is_empty();
        if created {
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
        let verb = if created { "Creating" } else { "Opening" };
        tracing::info!("{verb} AOF incr file {} on server start", last.name);
        self.file = Some(file);
        self.manifest = m;
        self.log.db = None;
        self.set_fsync(&config.appendfsync);
        self.on = true;
        Ok(())
    }

    /// Deletes the history files the manifest names, unless
    /// `aof-disable-auto-gc` keeps them (Redis's aofDelHistoryFiles: after
    /// a rewrite, at start-up, DEBUG LOADAOF, CONFIG SET
    /// aof-disable-auto-gc no).
    pub fn delete_history(&mut self, config: &Config) {
        if config.get_bool("aof-disable-auto-gc") {
            return;
        }
        let mut m = if self.on {
            self.manifest.clone()
        } else {
            match super::aof_load::read_manifest(config) {
                Ok(Some(m)) => m,
                _ => return,
            }
        };
        if m.history.is_empty() {
            return;
        }
        let dir = aof_dir(config);
        for h in m.history.drain(..) {
            tracing::info!("Removing the history file {} in the background", h.name);
            let _ = std::fs::remove_file(dir.join(&h.name));
        }
        if let Err(e) = write_manifest(config, &m) {
            tracing::warn!("{e}");
        }
        if self.on {
            self.manifest = m;
        }
    }

    /// Stops appending (CONFIG SET appendonly no, shutdown), syncing what
    /// was written; a background rewrite is abandoned, as Redis kills its
    /// rewrite child.
    pub fn stop(&mut self) {
        rewrite::cancel(self);
        self.rewrite_scheduled = false;
        if self.enabling {
            // No base was written: what went to the temporary file is
            // dropped (the file stays, truncated by the next enable, as
            // Redis leaves it).
            self.enabling = false;
            self.on = false;
            self.file = None;
            self.log.buf.clear();
            self.incr_size = 0;
            return;
        }
        self.flush();
        if let Some(f) = self.file.take() {
            let _ = f.sync_data();
        }
        self.on = false;
    }

    /// Kills a background rewrite and removes its files (shutdown).
    pub fn kill_rewrite(&mut self) {
        rewrite::cancel(self);
    }

    /// Writes what is buffered and fsyncs the file (shutdown).
    pub fn sync_to_disk(&mut self) {
        self.flush();
        if let Some(f) = &self.file {
            if let Err(e) = f.sync_data() {
                tracing::warn!("Fail to fsync the AOF file: {e}.");
            }
        }
    }

    /// Why writes are refused for the AOF's sake (Redis's
    /// writeCommandsDeniedByDiskError, DISK_ERROR_TYPE_AOF): the strerror
    /// text of a failed write or background fsync while the AOF is on.
    pub fn disk_error(&self) -> Option<String> {
        if !self.enabled() {
            return None;
        }
        if !self.last_write_ok {
            return Some(self.last_write_error.clone());
        }
        match self.fsync_errno.load(Ordering::Acquire) {
            0 => None,
            errno => Some(crate::util::process::strerror(
                &std::io::Error::from_raw_os_error(errno),
            )),
        }
    }

    /// True when the last write and background fsync succeeded (INFO's
    /// `aof_last_write_status`).
    pub fn write_ok(&self) -> bool {
        self.last_write_ok && self.fsync_errno.load(Ordering::Acquire) == 0
    }

    /// True when `appendonly` is on: appending, or waiting for the first
    /// rewrite (INFO's `aof_enabled`).
    pub fn enabled(&self) -> bool {
        self.on || self.enabling
    }
}

/// The annotation `aof-timestamp-enabled` writes for second `unix`.
pub fn timestamp_line(unix: u64) -> String {
    format!("#TS:{unix}\r\n")
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
pub(super) fn write_manifest(config: &Config, m: &Manifest) -> Result<(), String> {
    write_atomically(&manifest_path(config), m.text().as_bytes())
        .map_err(|e| format!("Can't write the AOF manifest: {e}"))
}

/// Deletes the files `old` named that `new` does not (after the new
/// manifest is durable, so a crash never leaves it naming missing files).
fn delete_replaced(config: &Config, old: &Manifest, new: &Manifest) {
    let dir = aof_dir(config);
    // In the order Redis's history list has them: the rewritten
    // incremental files newest first, the old base, the older history.
    let order = (old.incrs.iter().rev())
        .chain(&old.base)
        .chain(&old.history);
    for f in order {
        if !new.files().any(|n| n.name == f.name) {
            tracing::info!("Removing the history file {} in the background", f.name);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `no-appendfsync-on-rewrite` holds fsyncs back only while a child
    /// (a background save here) runs.
    #[test]
    fn fsync_is_held_only_with_the_flag_and_a_child() {
        let mut aof = Aof::default();
        assert!(!aof.fsync_held());
        aof.saving_child = true;
        assert!(!aof.fsync_held());
        aof.no_fsync_on_rewrite = true;
        assert!(aof.fsync_held());
        aof.saving_child = false;
        assert!(!aof.fsync_held());
    }

    /// Annotations: one per second at most, none when off.
    #[test]
    fn timestamp_annotation_once_per_second() {
        let mut aof = Aof::default();
        aof.annotate();
        assert!(aof.log.buf.is_empty());
        aof.timestamps = true;
        aof.annotate();
        aof.annotate();
        let text = String::from_utf8_lossy(&aof.log.buf).into_owned();
        assert!(text.starts_with("#TS:") && text.ends_with("\r\n"), "{text}");
        assert_eq!(text.matches("#TS:").count(), 1, "{text}");
    }
}
