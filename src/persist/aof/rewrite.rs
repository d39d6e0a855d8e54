//! Background AOF rewrites, as Redis 7.0's `rewriteAppendOnlyFileBackground`
//! and `backgroundRewriteDoneHandler` do them in the multi-part layout:
//!
//! 1. at the start a NEW incremental file is opened and recorded in the
//!    manifest, and the parent appends there from then on;
//! 2. a forked child writes its copy-on-write view of the keyspace as the
//!    new base (an RDB image with `aof-use-rdb-preamble yes`, commands
//!    otherwise) to a temp file;
//! 3. when the child succeeds the temp file becomes the next base, the
//!    manifest (temp file, fsync, rename) names the new base and the new
//!    incremental file only, and the old base and incremental files are
//!    deleted. When it fails, the manifest from step 1 still names every
//!    file needed, so nothing is lost.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use super::{
    aof_dir, base_name, delete_replaced, encode, incr_name, open_append, write_manifest, Aof,
};
use crate::config::Config;
use crate::persist::aof_load::{read_manifest, AofFile, Manifest};
use crate::persist::rdb::save::DbSource;
use crate::persist::Persistence;
use crate::store::value::Value;
use crate::store::Store;
use crate::util::num;

/// Elements per command in a command base (Redis's
/// AOF_REWRITE_ITEMS_PER_CMD).
const ITEMS_PER_CMD: usize = 64;

/// After this many failures in a row automatic rewrites back off
/// (Redis's AOF_REWRITE_LIMITE_THRESHOLD).
const FAILURES_BEFORE_BACKOFF: u64 = 3;

/// A background rewrite in progress.
pub struct Rewrite {
    /// When it started (`aof_current_rewrite_time_sec`).
    pub started: Instant,
    pid: i32,
    tmp: PathBuf,
    done: Receiver<Result<(), crate::persist::bgsave::ChildFailed>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// What the child reports as it goes (keys written, copy-on-write).
    pub child_info: Option<crate::persist::child_info::ChildInfo>,
    /// The keys there were at the fork (`current_save_keys_total`).
    pub keys_total: u64,
}

/// What BGREWRITEAOF did.
pub enum BgStart {
    /// The child was forked.
    Started,
    /// Another child (a background save) runs; the rewrite starts after it.
    Scheduled,
    /// A rewrite is already running.
    InProgress,
    /// The rewrite could not start (logged).
    Failed,
}

/// BGREWRITEAOF (`bgrewriteaofCommand`).
pub fn bgrewriteaof(store: &Store, p: &mut Persistence<'_>, in_exec: bool) -> BgStart {
    if p.aof.rewrite.is_some() {
        return BgStart::InProgress;
    }
    if p.rdb_child_running() || in_exec {
        p.aof.rewrite_scheduled = true;
        // A scheduled manual rewrite is not held back by earlier failures
        // (a rewrite started now never is).
        p.aof.rewrite_failures = 0;
        return BgStart::Scheduled;
    }
    match start(store, p) {
        Ok(()) => BgStart::Started,
        Err(e) => {
            tracing::warn!("{e}");
            BgStart::Failed
        }
    }
}

/// CONFIG SET appendonly yes (`startAppendOnly`): the AOF waits for a
/// background rewrite to write its first base (Redis's AOF_WAIT_REWRITE),
/// started now, or scheduled while another child runs or inside EXEC.
/// Until that rewrite ends, writes go to a temporary incremental file.
/// False when no rewrite could start (logged).
pub fn enable(store: &Store, p: &mut Persistence<'_>, in_exec: bool) -> bool {
    p.aof.enabling = true;
    if p.rdb_child_running() {
        p.aof.rewrite_scheduled = true;
        tracing::warn!(
            "AOF was enabled but there is already another background operation. An AOF \
             background was scheduled to start when possible."
        );
    } else if in_exec {
        p.aof.rewrite_scheduled = true;
        tracing::warn!(
            "AOF was enabled during a transaction. An AOF background was scheduled to start \
             when possible."
        );
    } else {
        if p.aof.rewrite.is_some() {
            // That rewrite's base misses the writes it never saw appended.
            tracing::warn!(
                "AOF was enabled but there is already an AOF rewriting in background. Stopping \
                 background AOF and starting a rewrite now."
            );
            cancel(p.aof);
        }
        if let Err(e) = start(store, p) {
            tracing::warn!("{e}");
            p.aof.enabling = false;
            tracing::warn!(
                "ferrokv needs to enable the AOF but can't trigger a background AOF rewrite \
                 operation. Check the above logs for more info about the error."
            );
            return false;
        }
    }
    if p.aof
        .fsync_errno
        .swap(0, std::sync::atomic::Ordering::AcqRel)
        != 0
    {
        tracing::warn!("AOF reopen, just ignore the AOF fsync error in bio job");
    }
    if !p.aof.last_write_ok {
        tracing::warn!("AOF reopen, just ignore the last error.");
        p.aof.last_write_ok = true;
    }
    true
}

/// The file an enabling AOF appends to until its first rewrite ends
/// (Redis's getTempIncrAofName).
fn temp_incr_name(config: &Config) -> String {
    format!("temp-{}.incr", config.appendfilename)
}

/// Starts a background rewrite; the caller checks no child runs.
fn start(store: &Store, p: &mut Persistence<'_>) -> Result<(), String> {
    let config = p.config;
    let aof = &mut p.aof;
    aof.rewrite_scheduled = false;
    let dir = aof_dir(config);
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("Can't create AOF directory {}: {e}", dir.display()))?;
    if aof.enabling {
        open_temp_incr(aof, config, &dir)?;
    } else if aof.on {
        switch_incr(aof, config, &dir)?;
    }
    let child_info = crate::persist::child_info::ChildInfo::new();
    let (pid, tmp, thread, done) = match fork_child(store, config, &dir, child_info.as_ref()) {
        Ok(forked) => forked,
        Err(e) => {
            if aof.enabling {
                drop_temp_incr(aof, config);
            }
            return Err(e);
        }
    };
    // Counted when started, as Redis's stat_aof_rewrites.
    aof.rewrites += 1;
    aof.rewrite = Some(Rewrite {
        started: Instant::now(),
        pid,
        tmp,
        done,
        thread: Some(thread),
        child_info,
        keys_total: store.total_keys() as u64,
    });
    tracing::info!("Background append only file rewriting started by pid {pid}");
    Ok(())
}

/// Opens the temporary incremental file of an enabling AOF and appends
/// there from now on: the rewrite starting now snapshots every earlier
/// write (`openNewIncrAofForAppend` in AOF_WAIT_REWRITE).
fn open_temp_incr(aof: &mut Aof, config: &Config, dir: &Path) -> Result<(), String> {
    let name = temp_incr_name(config);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.join(&name))
        .map_err(|e| format!("Can't open the append-only file {name}: {e}"))?;
    tracing::info!("Creating AOF incr file {name} on background rewrite");
    aof.file = Some(file);
    aof.log.buf.clear();
    aof.log.db = None;
    aof.incr_size = 0;
    aof.on = true;
    Ok(())
}

/// Stops appending to an enabling AOF's temporary file and deletes it (its
/// rewrite failed or was abandoned): the next rewrite snapshots again.
pub(super) fn drop_temp_incr(aof: &mut Aof, config: &Config) {
    aof.on = false;
    aof.file = None;
    aof.log.buf.clear();
    aof.incr_size = 0;
    let name = temp_incr_name(config);
    tracing::info!("Removing the temp incr aof file {name} in the background");
    let _ = std::fs::remove_file(aof_dir(config).join(name));
}

/// Opens the next incremental file, records it in the manifest and
/// appends there from now on (`openNewIncrAofForAppend`). The previous
/// file is fsynced and closed off the executor thread.
fn switch_incr(aof: &mut Aof, config: &Config, dir: &Path) -> Result<(), String> {
    aof.flush();
    let mut m = aof.manifest.clone();
    m.incr_seq += 1;
    let incr = AofFile {
        name: incr_name(config, m.incr_seq),
        seq: m.incr_seq,
    };
    let file = open_append(&dir.join(&incr.name))?;
    m.incrs.push(incr);
    if let Err(e) = write_manifest(config, &m) {
        let _ = std::fs::remove_file(dir.join(&m.incrs[m.incrs.len() - 1].name));
        return Err(e);
    }
    tracing::info!(
        "Creating AOF incr file {} on background rewrite",
        m.incrs[m.incrs.len() - 1].name
    );
    if let Some(old) = aof.file.replace(file) {
        let _ = std::thread::Builder::new()
            .name("ferrokv-aof-close".into())
            .spawn(move || {
                let _ = old.sync_data();
            });
    }
    aof.manifest = m;
    aof.log.db = None;
    aof.incr_size = 0;
    Ok(())
}

type Forked = (
    i32,
    PathBuf,
    std::thread::JoinHandle<()>,
    Receiver<Result<(), crate::persist::bgsave::ChildFailed>>,
);

/// Forks the child that writes the new base to
/// `temp-rewriteaof-bg-<pid>.aof`, and a thread that waits for it.
#[cfg(unix)]
fn fork_child(
    store: &Store,
    config: &Config,
    dir: &Path,
    info: Option<&crate::persist::child_info::ChildInfo>,
) -> Result<Forked, String> {
    // SAFETY: called on the executor thread, which owns the store, so the
    // child's copy is consistent. The child only writes the file and leaves
    // with _exit, never running the parent's runtime or destructors (see
    // bgsave.rs, which forks the same way).
    let fork_started = std::time::Instant::now();
    let pid = unsafe { libc::fork() };
    if pid > 0 {
        crate::util::process::note_fork(fork_started);
    }
    if pid < 0 {
        return Err(format!(
            "Can't rewrite append only file in background: fork: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        #[cfg(target_os = "linux")]
        // SAFETY: close_range(2) on descriptors of this (child) process only.
        unsafe {
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        }
        crate::persist::child_info::child_started("redis-aof-rewrite");
        crate::store::hashed::in_fork_child();
        let tmp = temp_name(dir, std::process::id());
        if let Some(info) = info {
            info.report_here();
        }
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            write_base(&tmp, store, config)
        }))
        .unwrap_or_else(|_| Err("the AOF rewrite panicked".into()));
        let ok = match written {
            Ok(_) => {
                crate::config::log::child_line(
                    false,
                    &format!(
                        "Successfully created the temporary AOF base file {}",
                        file_name(&tmp)
                    ),
                );
                crate::persist::child_info::save_ended("AOF rewrite");
                true
            }
            Err(e) => {
                crate::config::log::child_line(true, &e);
                false
            }
        };
        // SAFETY: ends the child without unwinding into the parent's state.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    crate::store::hashed::child_started();
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("ferrokv-aofrw-wait".into())
        .spawn(move || {
            let _ = tx.send(crate::persist::bgsave::wait_child(pid));
        });
    match thread {
        Ok(t) => Ok((pid, temp_name(dir, pid as u32), t, rx)),
        Err(e) => {
            // SAFETY: the child forked above; nobody else will reap it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            crate::store::hashed::child_ended();
            Err(format!("Can't start the AOF rewrite waiter: {e}"))
        }
    }
}

#[cfg(not(unix))]
fn fork_child(
    _: &Store,
    _: &Config,
    _: &Path,
    _: Option<&crate::persist::child_info::ChildInfo>,
) -> Result<Forked, String> {
    Err("Can't rewrite append only file in background: fork is not available".into())
}

/// Renames the child's file to the new base `name` in `dir`, with
/// backgroundRewriteDoneHandler's lines; returns the base's path.
fn place_base(tmp: &Path, dir: &Path, name: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    std::fs::rename(tmp, &path).map_err(|e| {
        format!(
            "Error trying to rename the temporary AOF base file {} into {name}: {}",
            file_name(tmp),
            crate::util::process::strerror(&e)
        )
    })?;
    tracing::info!(
        "Successfully renamed the temporary AOF base file {} into {name}",
        file_name(tmp)
    );
    Ok(path)
}

/// A path's last part, as Redis names the files it logs (it runs in `dir`).
fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

fn temp_name(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("temp-rewriteaof-bg-{pid}.aof"))
}

/// Kills a running rewrite child and removes its temp file (CONFIG SET
/// appendonly, shutdown, a synchronous rewrite superseding it).
pub(super) fn cancel(aof: &mut Aof) {
    if let Some(mut rw) = aof.rewrite.take() {
        #[cfg(unix)]
        // SAFETY: kill(2) on the child this process forked and has not
        // reaped yet (the waiter thread reaps it).
        unsafe {
            libc::kill(rw.pid, libc::SIGKILL);
        }
        if let Some(t) = rw.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&rw.tmp);
        // An RDB-preamble base is written to the save's own temp file
        // first (persist::write_file), named after the child.
        let _ = std::fs::remove_file(crate::persist::temp_path(&rw.tmp, rw.pid as u32, None));
        tracing::info!("Killing running AOF rewrite child: {}", rw.pid);
    }
}

/// The AOF's periodic work (called from the executor timers): collects a
/// finished rewrite, starts a scheduled one once no background save runs,
/// and starts one on growth (`auto-aof-rewrite-percentage` over the size
/// after the last rewrite, at least `auto-aof-rewrite-min-size`), as
/// serverCron does.
pub fn auto_rewrite(store: &Store, p: &mut Persistence<'_>) {
    poll(p);
    if p.child_running() {
        return;
    }
    if p.aof.rewrite_scheduled {
        if rewrite_limited(p.aof) {
            return;
        }
        if let Err(e) = start(store, p) {
            tracing::warn!("{e}");
        }
        return;
    }
    let aof = &mut p.aof;
    if !aof.on {
        return;
    }
    let pct = p.config.get_i64("auto-aof-rewrite-percentage").unwrap_or(0);
    if pct <= 0 {
        return;
    }
    let min =
        num::parse_memory(p.config.get("auto-aof-rewrite-min-size").as_bytes()).unwrap_or(64 << 20);
    let size = aof.base_size + aof.incr_size;
    let base = aof.base_size.max(1);
    if size <= min || size.saturating_sub(base) * 100 / base < pct as u64 || rewrite_limited(aof) {
        return;
    }
    tracing::info!(
        "Starting automatic rewriting of AOF on {}% growth",
        size.saturating_sub(base) * 100 / base
    );
    if let Err(e) = start(store, p) {
        tracing::warn!("{e}");
    }
}

/// After repeated failures automatic rewrites wait one minute, then two,
/// doubling up to an hour between tries (Redis's aofRewriteLimited): the
/// first call past the threshold starts the wait and logs it; once the
/// wait is over one try is let through, and a further failure doubles it.
fn rewrite_limited(aof: &mut Aof) -> bool {
    if aof.rewrite_failures < FAILURES_BEFORE_BACKOFF {
        aof.limit_delay_min = 0;
        aof.limit_until = 0;
        return false;
    }
    let now = crate::util::clock::real_now_ms() / 1000;
    if aof.limit_until != 0 {
        if now < aof.limit_until {
            return true;
        }
        aof.limit_until = 0;
        return false;
    }
    aof.limit_delay_min = (aof.limit_delay_min * 2).clamp(1, 60);
    aof.limit_until = now + aof.limit_delay_min * 60;
    tracing::warn!(
        "Background AOF rewrite has repeatedly failed and triggered the limit, will retry in {} minutes",
        aof.limit_delay_min
    );
    true
}

/// Collects a finished child (`backgroundRewriteDoneHandler`).
fn poll(p: &mut Persistence<'_>) {
    let Some(rw) = p.aof.rewrite.as_mut() else {
        return;
    };
    let ended = match rw.done.try_recv() {
        Ok(ended) => ended,
        Err(TryRecvError::Empty) => return,
        Err(TryRecvError::Disconnected) => Err(crate::persist::bgsave::ChildFailed::Lost(
            "the waiter died".into(),
        )),
    };
    let Some(mut rw) = p.aof.rewrite.take() else {
        return;
    };
    if let Some(t) = rw.thread.take() {
        let _ = t.join();
    }
    let aof = &mut p.aof;
    aof.last_rewrite_sec = rw.started.elapsed().as_secs() as i64;
    if let Some(info) = &rw.child_info {
        aof.last_cow_size = info.cow().0;
    }
    let result = match ended {
        Ok(()) => {
            tracing::info!("Background AOF rewrite terminated with success");
            install(aof, p.config, &rw.tmp)
        }
        Err(f) => Err(f.message(
            "Background AOF rewrite",
            "Background AOF rewrite terminated with error",
        )),
    };
    match result {
        Ok(()) => {
            aof.last_rewrite_ok = true;
            aof.rewrite_failures = 0;
            tracing::info!("Background AOF rewrite finished successfully");
        }
        Err(e) => {
            let _ = std::fs::remove_file(&rw.tmp);
            aof.last_rewrite_ok = false;
            aof.rewrite_failures += 1;
            tracing::warn!("{e}");
            if aof.enabling {
                // The AOF still waits for its first base: try again.
                drop_temp_incr(aof, p.config);
                aof.rewrite_scheduled = true;
            }
        }
    }
}

/// The history a manifest names after a rewrite replaced `old`'s base and
/// incremental files (all of them, or all but the one still appended to
/// when `appending`): none under auto-gc, else the replaced files, newest
/// first, ahead of the older history (Redis's
/// getNewBaseFileNameAndMarkPreAsHistory and markRewrittenIncrAofAsHistory).
pub(super) fn history_after_rewrite(
    old: &Manifest,
    config: &Config,
    appending: bool,
) -> Vec<AofFile> {
    if !config.get_bool("aof-disable-auto-gc") {
        return Vec::new();
    }
    let rewritten = if appending {
        &old.incrs[..old.incrs.len().saturating_sub(1)]
    } else {
        &old.incrs[..]
    };
    let mut history = rewritten.to_vec();
    history.extend(old.base.clone());
    history.extend(old.history.iter().cloned());
    history
}

/// Makes the child's file the new base: renamed into place, a manifest
/// naming it and the incremental file opened at the start, then the
/// replaced files deleted.
fn install(aof: &mut Aof, config: &Config, tmp: &Path) -> Result<(), String> {
    if aof.enabling {
        return install_first(aof, config, tmp);
    }
    let dir = aof_dir(config);
    let old = if aof.on {
        aof.manifest.clone()
    } else {
        read_manifest(config)?.unwrap_or_default()
    };
    let mut m = old.clone();
    m.history = history_after_rewrite(&old, config, aof.on);
    m.base_seq += 1;
    let base = AofFile {
        name: base_name(config, m.base_seq),
        seq: m.base_seq,
    };
    let path = place_base(tmp, &dir, &base.name)?;
    m.base = Some(base);
    // With the AOF on, the file opened at the start holds every write made
    // since the child's snapshot; the earlier ones are in the new base.
    m.incrs = if aof.on {
        m.incrs.last().cloned().into_iter().collect()
    } else {
        Vec::new()
    };
    if let Err(e) = write_manifest(config, &m) {
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    delete_replaced(config, &old, &m);
    aof.base_size = std::fs::metadata(&path).map_or(0, |md| md.len());
    if aof.on {
        aof.manifest = m;
    }
    Ok(())
}

/// Ends an enabling AOF's first rewrite: the child's file becomes the new
/// base and the temporary incremental file the next incremental one, both
/// named by a new manifest; earlier files become history. The AOF is on
/// from here (AOF_WAIT_REWRITE to AOF_ON).
fn install_first(aof: &mut Aof, config: &Config, tmp: &Path) -> Result<(), String> {
    let dir = aof_dir(config);
    let old = read_manifest(config)?.unwrap_or_default();
    let mut m = old.clone();
    m.history = history_after_rewrite(&old, config, false);
    m.base_seq += 1;
    m.incr_seq += 1;
    let base = AofFile {
        name: base_name(config, m.base_seq),
        seq: m.base_seq,
    };
    let incr = AofFile {
        name: incr_name(config, m.incr_seq),
        seq: m.incr_seq,
    };
    let base_path = place_base(tmp, &dir, &base.name)?;
    // Everything appended so far reaches the file before it is renamed.
    aof.flush();
    let temp_incr = temp_incr_name(config);
    if let Err(e) = std::fs::rename(dir.join(&temp_incr), dir.join(&incr.name)) {
        let _ = std::fs::remove_file(&base_path);
        return Err(format!(
            "Error trying to rename the temporary AOF incr file {temp_incr} into {}: {e}",
            incr.name
        ));
    }
    tracing::info!(
        "Successfully renamed the temporary AOF incr file {temp_incr} into {}",
        incr.name
    );
    m.base = Some(base);
    m.incrs = vec![incr];
    if let Err(e) = write_manifest(config, &m) {
        let _ = std::fs::remove_file(&base_path);
        let _ = std::fs::remove_file(dir.join(&m.incrs[0].name));
        return Err(e);
    }
    delete_replaced(config, &old, &m);
    aof.base_size = std::fs::metadata(&base_path).map_or(0, |md| md.len());
    aof.manifest = m;
    aof.enabling = false;
    Ok(())
}

/// Writes a base file: an RDB image (`aof-use-rdb-preamble yes`) or the
/// commands that rebuild the keyspace, via a temp file, fsync and rename.
/// Returns its size.
pub(super) fn write_base(path: &Path, src: &dyn DbSource, config: &Config) -> Result<u64, String> {
    let fsync_every = if config.get_bool("aof-rewrite-incremental-fsync") {
        crate::persist::AUTOSYNC_BYTES
    } else {
        0
    };
    if config.get_bool("aof-use-rdb-preamble") {
        let mut opts = crate::persist::save_options(config);
        opts.aof_base = true;
        opts.fsync_every = fsync_every;
        return crate::persist::write_file(path, src, opts, None).map(|r| r.bytes);
    }
    let tmp = path.with_extension("tmp");
    let result = (|| -> std::io::Result<u64> {
        let file = crate::persist::AutoSync::new(File::create(&tmp)?, fsync_every);
        let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
        let mut n = 0;
        if config.get_bool("aof-timestamp-enabled") {
            let ts = super::timestamp_line(crate::util::clock::real_now_ms() / 1000);
            w.write_all(ts.as_bytes())?;
            n += ts.len() as u64;
        }
        n += write_commands(
            &mut w,
            src,
            config.get_i64("rdb-key-save-delay").unwrap_or(0),
        )?;
        w.flush()?;
        w.into_inner()
            .map_err(|e| e.into_error())?
            .into_inner()
            .sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(n)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("Write error writing the AOF base {}: {e}", path.display())
    })
}

/// Writes the commands that rebuild `src` (`rewriteAppendOnlyFileRio`):
/// per non-empty database SELECT, then per key SET, RPUSH, SADD, ZADD or
/// HMSET (64 elements per command) and PEXPIREAT for a TTL. Returns the
/// bytes written. `key_delay_us` is `rdb-key-save-delay`, waited after
/// each key.
pub fn write_commands<W: Write>(
    out: &mut W,
    src: &dyn DbSource,
    key_delay_us: i64,
) -> std::io::Result<u64> {
    let mut buf = Vec::with_capacity(1 << 16);
    let mut total = 0u64;
    // The function libraries first (Redis's rewriteFunctions).
    for code in src.functions() {
        encode(&mut buf, &[b"FUNCTION", b"LOAD", code]);
    }
    for db in 0..src.db_count() {
        if src.db_sizes(db).0 == 0 {
            continue;
        }
        encode(&mut buf, &[b"SELECT", db.to_string().as_bytes()]);
        src.each(db, &mut |key, value, expire_at| {
            crate::persist::child_info::key_saved();
            key_commands(&mut buf, key, value);
            if expire_at != 0 {
                encode(
                    &mut buf,
                    &[b"PEXPIREAT", key, expire_at.to_string().as_bytes()],
                );
            }
            if key_delay_us != 0 {
                crate::util::clock::debug_delay(key_delay_us);
            }
            if buf.len() >= 1 << 16 {
                total += buf.len() as u64;
                out.write_all(&buf)?;
                buf.clear();
            }
            Ok(())
        })?;
    }
    total += buf.len() as u64;
    out.write_all(&buf)?;
    Ok(total)
}

/// The commands that create one key.
fn key_commands(out: &mut Vec<u8>, key: &[u8], value: &Value) {
    // Emits `cmd key items...` in chunks of ITEMS_PER_CMD items.
    fn chunked(out: &mut Vec<u8>, cmd: &[u8], key: &[u8], items: Vec<Vec<u8>>, per: usize) {
        for chunk in items.chunks(ITEMS_PER_CMD * per) {
            let mut args: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 2);
            args.push(cmd);
            args.push(key);
            args.extend(chunk.iter().map(Vec::as_slice));
            encode(out, &args);
        }
    }
    match value {
        Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Large(_) => {
            let mut b = num::itoa_buf();
            let v: &[u8] = match value {
                Value::Int(n) => num::fmt_i64(*n, &mut b),
                Value::Str(s) => s.as_slice(),
                Value::Raw(r) => r,
                Value::Large(r) => r,
                _ => &[],
            };
            encode(out, &[b"SET", key, v]);
        }
        Value::List(l) => chunked(
            out,
            b"RPUSH",
            key,
            l.iter().map(<[u8]>::to_vec).collect(),
            1,
        ),
        Value::Set(s) => chunked(out, b"SADD", key, s.iter().map(|m| m.to_vec()).collect(), 1),
        Value::Hash(h) => {
            let items = h
                .iter()
                .flat_map(|(f, v)| [f.to_vec(), v.to_vec()])
                .collect();
            chunked(out, b"HMSET", key, items, 2);
        }
        Value::ZSet(z) => {
            let items = z
                .iter_from(0)
                .flat_map(|(m, s)| {
                    let mut score = Vec::new();
                    num::write_g17(s, &mut score);
                    [score, m.to_vec()]
                })
                .collect();
            chunked(out, b"ZADD", key, items, 2);
        }
        Value::Stream(st) => {
            // rewriteStreamObject: the entries by XADD (an empty stream by
            // the MAXLEN 0 trick), then XSETID restores the last ID and
            // the counters that XDEL and trims leave behind.
            if st.entries.is_empty() {
                encode(out, &[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
            }
            for (id, fields) in &st.entries {
                let id = id.to_vec();
                let mut args: Vec<&[u8]> = Vec::with_capacity(fields.len() + 3);
                args.extend([b"XADD".as_slice(), key, &id]);
                args.extend(fields.iter().map(Vec::as_slice));
                encode(out, &args);
            }
            let (last, added, maxdel) = (
                st.last_id.to_vec(),
                st.entries_added.to_string(),
                st.max_deleted_id.to_vec(),
            );
            encode(
                out,
                &[
                    b"XSETID",
                    key,
                    &last,
                    b"ENTRIESADDED",
                    added.as_bytes(),
                    b"MAXDELETEDID",
                    &maxdel,
                ],
            );
            // Each group by XGROUP CREATE, its pending entries by XCLAIM
            // FORCE, consumers owning nothing by XGROUP CREATECONSUMER.
            for (group, g) in &st.groups {
                let (last, read) = (g.last_id.to_vec(), g.entries_read.to_string());
                encode(
                    out,
                    &[
                        b"XGROUP",
                        b"CREATE",
                        key,
                        group,
                        &last,
                        b"ENTRIESREAD",
                        read.as_bytes(),
                    ],
                );
                for (consumer, c) in &g.consumers {
                    if c.pel.is_empty() {
                        encode(out, &[b"XGROUP", b"CREATECONSUMER", key, group, consumer]);
                        continue;
                    }
                    for id in &c.pel {
                        let Some(nack) = g.pel.get(id) else {
                            continue;
                        };
                        let (id, time, count) = (
                            id.to_vec(),
                            nack.delivery_time.to_string(),
                            nack.delivery_count.to_string(),
                        );
                        encode(
                            out,
                            &[
                                b"XCLAIM",
                                key,
                                group,
                                consumer,
                                b"0",
                                &id,
                                b"TIME",
                                time.as_bytes(),
                                b"RETRYCOUNT",
                                count.as_bytes(),
                                b"JUSTID",
                                b"FORCE",
                            ],
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Ttl;

    #[test]
    fn commands_rebuild_every_type() {
        let mut s = Store::new(16);
        s.set_now(1_000);
        s.set(0, b"str", Value::string(b"hello"), Ttl::At(5_000));
        s.set(0, b"int", Value::string(b"42"), Ttl::None);
        let mut l = crate::store::list::List::default();
        for i in 0..100 {
            l.push_back(i.to_string().as_bytes());
        }
        s.set(2, b"list", Value::List(Box::new(l)), Ttl::None);
        let mut z = crate::store::zset::ZSet::default();
        z.insert(b"m", 1.5);
        z.insert(b"inf", f64::INFINITY);
        s.set(2, b"z", Value::ZSet(z), Ttl::None);
        let mut out = Vec::new();
        let n = write_commands(&mut out, &s, 0).expect("writes to memory");
        assert_eq!(n, out.len() as u64);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"),
            "{text}"
        );
        assert!(text.contains("$9\r\nPEXPIREAT\r\n$3\r\nstr\r\n$4\r\n5000\r\n"));
        assert!(text.contains("*66\r\n$5\r\nRPUSH\r\n$4\r\nlist\r\n"));
        assert!(text.contains("*38\r\n$5\r\nRPUSH\r\n"));
        assert!(text.contains("$3\r\n1.5\r\n$1\r\nm\r\n$3\r\ninf\r\n$3\r\ninf\r\n"));
    }
}
