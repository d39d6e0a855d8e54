//! Background saves. On Unix the executor forks, as Redis does: the child
//! writes its copy-on-write view of the keyspace and exits, so BGSAVE
//! costs the executor only the fork. Where fork is unavailable (or fails)
//! the executor clones the keyspace (values are plain owned data) and a
//! thread writes the clone. Either way the file is a point-in-time view
//! and the server keeps answering while it is written.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

use super::rdb::save::{DbSource, EachKey, SaveOptions, SaveReport};
use super::Persistence;
use super::{rdb_path, save_options, write_file};
use crate::store::bytes::CompactBytes;
use crate::store::value::Value;
use crate::store::Store;
use crate::util::clock;

/// A background save in progress.
pub struct Bgsave {
    /// When it started (`rdb_current_bgsave_time_sec`).
    pub started: Instant,
    dirty_at_start: u64,
    cancel: Arc<AtomicBool>,
    done: Receiver<Result<SaveReport, String>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The forked child writing the file, and its temp file.
    child: Option<(i32, PathBuf)>,
    /// Keys written so far (`current_save_keys_processed`; the thread
    /// writer only).
    pub keys_processed: Arc<AtomicU64>,
    /// Keys to write (`current_save_keys_total`).
    pub keys_total: u64,
    /// What the forked child reports as it goes.
    pub child_info: Option<super::child_info::ChildInfo>,
}

/// A point-in-time copy of the keyspace for a background save.
struct Snapshot {
    dbs: Vec<Vec<(CompactBytes, Value, u64)>>,
    functions: Vec<Vec<u8>>,
    processed: Arc<AtomicU64>,
}

impl Snapshot {
    fn of(store: &Store, processed: Arc<AtomicU64>) -> Self {
        let dbs = store
            .dbs
            .iter()
            .map(|d| {
                let mut v = Vec::with_capacity(d.len());
                d.dict.for_each(|e| {
                    v.push((CompactBytes::new(e.key()), e.to_value(), e.expire_at()))
                });
                v
            })
            .collect();
        Snapshot {
            dbs,
            functions: store.functions.clone(),
            processed,
        }
    }
}

impl DbSource for Snapshot {
    fn db_count(&self) -> usize {
        self.dbs.len()
    }

    fn functions(&self) -> &[Vec<u8>] {
        &self.functions
    }

    fn db_sizes(&self, db: usize) -> (usize, usize) {
        let d = &self.dbs[db];
        (d.len(), d.iter().filter(|e| e.2 != 0).count())
    }

    fn each(&self, db: usize, f: &mut EachKey<'_>) -> std::io::Result<()> {
        for (k, v, at) in &self.dbs[db] {
            f(k.as_slice(), v, *at)?;
            self.processed.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Stops a running background save and waits for its writer.
pub fn cancel_bgsave(p: &mut Persistence<'_>) {
    if let Some(mut bg) = p.state.bgsave.take() {
        bg.cancel.store(true, Ordering::Relaxed);
        #[cfg(unix)]
        if let Some((pid, _)) = &bg.child {
            // SAFETY: kill(2) on the child this process forked and has not
            // reaped yet (the waiter thread reaps it).
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        if let Some(t) = bg.thread.take() {
            let _ = t.join();
        }
        if let Some((_, tmp)) = &bg.child {
            let _ = std::fs::remove_file(tmp);
        }
        tracing::info!("background saving cancelled");
    }
}

/// Starts a background save (BGSAVE, save rules). The caller checks that
/// none is running.
pub fn bgsave_start(store: &Store, p: &mut Persistence<'_>) -> Result<(), String> {
    let path = rdb_path(p.config);
    let opts = SaveOptions {
        repl: p.repl,
        ..save_options(p.config)
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let processed = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let keys_total = store.total_keys() as u64;
    p.state.last_bgsave_try = clock::real_now_ms() / 1000;
    // Counted when started, as Redis's rdbSaveBackground does.
    p.state.saves += 1;
    #[cfg(unix)]
    let child_info = super::child_info::ChildInfo::new();
    let forked = match fork_writer(
        store,
        &path,
        opts,
        keys_total,
        tx.clone(),
        child_info.as_ref(),
    ) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!("fork failed ({e}); saving from a copy of the data instead");
            None
        }
    };
    #[cfg(not(unix))]
    let (forked, child_info) = (None, None);
    let (thread, child) = match forked {
        Some((thread, child)) => (thread, Some(child)),
        None => (
            thread_writer(store, path, opts, &cancel, &processed, tx)?,
            None,
        ),
    };
    let forked_child = child.is_some();
    match &child {
        Some((pid, _)) => tracing::info!("Background saving started by pid {pid}"),
        None => tracing::info!("Background saving started"),
    }
    p.state.bgsave = Some(Bgsave {
        started: Instant::now(),
        dirty_at_start: store.stats.dirty,
        cancel,
        done: rx,
        thread: Some(thread),
        child,
        keys_processed: processed,
        keys_total,
        child_info: if forked_child { child_info } else { None },
    });
    Ok(())
}

type Done = Sender<Result<SaveReport, String>>;

/// Clones the keyspace and writes the clone on a thread.
fn thread_writer(
    store: &Store,
    path: PathBuf,
    opts: SaveOptions,
    cancel: &Arc<AtomicBool>,
    processed: &Arc<AtomicU64>,
    tx: Done,
) -> Result<std::thread::JoinHandle<()>, String> {
    let snap = Snapshot::of(store, processed.clone());
    let c = cancel.clone();
    std::thread::Builder::new()
        .name("ferrokv-bgsave".into())
        .spawn(move || {
            let r = write_file(&path, &snap, opts, Some(&c)).map_err(|e| {
                tracing::warn!("{e}");
                "Background saving error".to_string()
            });
            let _ = tx.send(r);
            // The snapshot is freed here, off the executor thread.
        })
        .map_err(|e| format!("Can't start the background save thread: {e}"))
}

/// Forks a child that writes the file from its copy-on-write view of the
/// store, plus a thread that waits for it. Returns the thread, the child's
/// pid and the temp file it writes.
#[cfg(unix)]
fn fork_writer(
    store: &Store,
    path: &std::path::Path,
    opts: SaveOptions,
    keys: u64,
    tx: Done,
    info: Option<&super::child_info::ChildInfo>,
) -> Result<(std::thread::JoinHandle<()>, (i32, PathBuf)), String> {
    let pid = fork_child(None, "redis-rdb-bgsave", || {
        // The child's only save: it is named `temp-<child pid>.rdb`.
        super::TEMP_IN_FLIGHT.store(0, Ordering::Relaxed);
        if let Some(info) = info {
            info.report_here();
        }
        saved_in_child(write_file(path, store, opts, None))
    })?;
    let tmp = super::temp_path(path, pid as u32, None);
    let thread = std::thread::Builder::new()
        .name("ferrokv-bgsave-wait".into())
        .spawn(move || {
            let r = wait_child(pid)
                .map(|()| SaveReport { keys, bytes: 0 })
                .map_err(|f| f.message("Background saving", "Background saving error"));
            let _ = tx.send(r);
        });
    match thread {
        Ok(t) => Ok((t, (pid, tmp))),
        Err(e) => {
            // SAFETY: the child forked above; nobody else will reap it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            crate::store::hashed::child_ended();
            Err(format!("Can't start the background save waiter: {e}"))
        }
    }
}

/// Forks a child that runs `work` on its copy-on-write view of the
/// process and exits with its outcome; returns the child's pid.
#[cfg(unix)]
fn fork_child(
    keep_fd: Option<i32>,
    title: &str,
    work: impl FnOnce() -> bool,
) -> Result<i32, String> {
    // SAFETY: called on the executor thread, which owns the store, so the
    // child's copy is consistent. The child only writes (jemalloc and std
    // file I/O are fork-safe) and leaves with _exit, never running the
    // parent's runtime, destructors or other threads' work.
    let fork_started = std::time::Instant::now();
    let pid = unsafe { libc::fork() };
    if pid > 0 {
        crate::util::process::note_fork(fork_started);
    }
    if pid < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    if pid == 0 {
        // Like Redis's closeChildUnusedResourceAfterFork: the child drops
        // the inherited descriptors (listening sockets, client connections)
        // but the one it writes to, so they close when the parent closes
        // them, whatever the child is doing. Best effort.
        #[cfg(target_os = "linux")]
        // SAFETY: close_range(2) on descriptors of this (child) process only.
        unsafe {
            match keep_fd {
                Some(fd) => {
                    libc::syscall(
                        libc::SYS_close_range,
                        3u32,
                        (fd as u32).saturating_sub(1),
                        0u32,
                    );
                    libc::syscall(libc::SYS_close_range, fd as u32 + 1, u32::MAX, 0u32);
                }
                None => {
                    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
                }
            }
        }
        super::child_info::child_started(title);
        crate::store::hashed::in_fork_child();
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(false);
        // SAFETY: ends the child without unwinding into the parent's state.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    crate::store::hashed::child_started();
    Ok(pid)
}

/// The end of a saving child's work: its log lines ("DB saved on disk"
/// and the copy-on-write figures, or the error), and whether it succeeded.
fn saved_in_child<T>(result: Result<T, String>) -> bool {
    match result {
        Ok(_) => {
            crate::config::log::child_line(false, "DB saved on disk");
            super::child_info::save_ended("RDB");
            true
        }
        Err(e) => {
            crate::config::log::child_line(true, &e);
            false
        }
    }
}

/// How a forked child that did not succeed ended (Redis's exitcode and
/// bysignal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildFailed {
    /// It exited with this status (not 0).
    Exited(i32),
    /// A signal ended it.
    Killed(i32),
    /// It could not be waited for.
    Lost(String),
}

impl ChildFailed {
    /// The done handler's line: "`what` terminated by signal N" for a
    /// killed child, else `error`.
    pub fn message(&self, what: &str, error: &str) -> String {
        match self {
            ChildFailed::Exited(_) => error.to_string(),
            ChildFailed::Killed(sig) => format!("{what} terminated by signal {sig}"),
            ChildFailed::Lost(e) => format!("{error}: {e}"),
        }
    }
}

/// Waits for child `pid` to exit; Ok when it exited with status 0.
#[cfg(unix)]
pub(crate) fn wait_child(pid: i32) -> Result<(), ChildFailed> {
    let r = reap(pid);
    crate::store::hashed::child_ended();
    r
}

#[cfg(unix)]
fn reap(pid: i32) -> Result<(), ChildFailed> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waits for a child this process forked; `status` is a
        // valid out pointer.
        let w = unsafe { libc::waitpid(pid, &mut status, 0) };
        if w == pid {
            return if libc::WIFSIGNALED(status) {
                Err(ChildFailed::Killed(libc::WTERMSIG(status)))
            } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                Ok(())
            } else {
                Err(ChildFailed::Exited(libc::WEXITSTATUS(status)))
            };
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(ChildFailed::Lost(format!("waitpid: {e}")));
        }
    }
}

/// A snapshot for replicas (Redis's rdbSaveToSlavesSockets): a forked
/// child writes the RDB into a pipe and a thread of this process reads
/// it, so the executor keeps serving and no file is written. Collected
/// whole, or streamed: handed on in pieces as the child writes them, the
/// thread waiting while the executor has not taken the last ones, so the
/// slowest replica paces the child (Redis's rdbPipeReadHandler).
pub struct SyncSnapshot {
    pid: i32,
    done: Receiver<Result<Vec<u8>, String>>,
    /// The pieces of a streamed snapshot.
    pieces: Option<Receiver<Vec<u8>>>,
    /// The outcome, once the thread sent it (a streamed snapshot's pieces
    /// are taken first).
    outcome: Option<Result<Vec<u8>, String>>,
    /// Bytes collected so far (memory not counted against maxmemory).
    held: Arc<std::sync::atomic::AtomicUsize>,
    /// When it started.
    pub started: Instant,
    /// The end mark of a streamed (diskless) transfer.
    pub mark: Option<String>,
    /// What the child reports as it goes (keys written, copy-on-write).
    pub child_info: Option<super::child_info::ChildInfo>,
    /// The keys there were at the fork (`current_save_keys_total`).
    pub keys_total: u64,
    /// Also written to `dbfilename`: Redis's disk target, a save like
    /// BGSAVE's.
    pub disk: bool,
    /// The change count at the fork, for a disk target's save.
    pub dirty_at_start: u64,
}

/// What a streamed snapshot has next.
pub enum Piece {
    /// The next bytes of the RDB.
    Data(Vec<u8>),
    /// Nothing yet.
    Wait,
    /// The child is done: Ok once it wrote everything.
    End(Result<(), String>),
}

/// How many pieces a streamed snapshot's reader may hold ahead of the
/// executor, each up to [`PIECE`] bytes.
const PIECES_AHEAD: usize = 4;
/// A streamed snapshot's piece, Redis's PROTO_IOBUF_LEN.
const PIECE: usize = 16 * 1024;

impl SyncSnapshot {
    /// Forks the child writing `store`; with `mark`, the snapshot is
    /// streamed (a diskless transfer ending with that mark). With `disk`,
    /// a collected snapshot is also written to `dbfilename`, as Redis's
    /// BGSAVE for replication with a disk target is.
    #[cfg(unix)]
    pub fn start(
        store: &Store,
        config: &crate::config::Config,
        repl: Option<super::ReplInfo>,
        mark: Option<String>,
        disk: bool,
    ) -> Result<SyncSnapshot, String> {
        use std::io::{Read, Write};
        use std::os::fd::FromRawFd;
        let opts = SaveOptions {
            repl,
            ..save_options(config)
        };
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe(2) fills the two-element array.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        let (rfd, wfd) = (fds[0], fds[1]);
        let title = if mark.is_some() {
            "redis-rdb-to-slaves"
        } else {
            "redis-rdb-bgsave"
        };
        let child_info = super::child_info::ChildInfo::new();
        let keys_total = store.total_keys() as u64;
        // A disk target: the child writes `dbfilename` as BGSAVE's does,
        // and the reader takes the file once it is done.
        let file = (disk && mark.is_none()).then(|| rdb_path(config));
        let pid = fork_child(Some(wfd), title, || {
            if let Some(info) = &child_info {
                info.report_here();
            }
            // SAFETY: the child owns the pipe's write end from here on.
            let pipe = unsafe { std::fs::File::from_raw_fd(wfd) };
            if let Some(path) = &file {
                drop(pipe);
                // The child's only save: it is named `temp-<child pid>.rdb`.
                super::TEMP_IN_FLIGHT.store(0, Ordering::Relaxed);
                return saved_in_child(write_file(path, store, opts, None));
            }
            let mut w = std::io::BufWriter::with_capacity(1 << 16, pipe);
            let ok =
                super::rdb::save::write_rdb(&mut w, store, opts, None).is_ok() && w.flush().is_ok();
            if ok {
                super::child_info::save_ended("RDB");
            }
            ok
        });
        // SAFETY: the parent's copy of the write end is closed so the
        // reader sees end of file when the child is done; the read end is
        // owned by the reader thread's File.
        unsafe { libc::close(wfd) };
        let reader = unsafe { std::fs::File::from_raw_fd(rfd) };
        let pid = pid?;
        let (tx, rx) = std::sync::mpsc::channel();
        let (piece_tx, pieces) = if mark.is_some() {
            let (t, r) = std::sync::mpsc::sync_channel(PIECES_AHEAD);
            (Some(t), Some(r))
        } else {
            (None, None)
        };
        let held = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = held.clone();
        let disk = file.is_some();
        let (what, error) = if mark.is_some() {
            ("Background transfer", "Background transfer error")
        } else {
            ("Background saving", "Background saving error")
        };
        let spawned = std::thread::Builder::new()
            .name("ferrokv-sync-read".into())
            .spawn(move || {
                let mut data = Vec::new();
                let mut reader = reader;
                let mut chunk = vec![0u8; 1 << 16];
                let read = loop {
                    let want = if piece_tx.is_some() {
                        PIECE
                    } else {
                        chunk.len()
                    };
                    match reader.read(&mut chunk[..want]) {
                        Ok(0) => break Ok(()),
                        Ok(n) => match &piece_tx {
                            // The executor dropped the snapshot: the
                            // child is being killed, the pipe closes.
                            Some(t) => {
                                if t.send(chunk[..n].to_vec()).is_err() {
                                    break Err("the transfer was cancelled".to_string());
                                }
                            }
                            None => {
                                data.extend_from_slice(&chunk[..n]);
                                counter.store(data.capacity(), Ordering::Relaxed);
                            }
                        },
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => break Err(e.to_string()),
                    }
                };
                drop(reader);
                let r = wait_child(pid)
                    .map_err(|f| f.message(what, error))
                    .and(read)
                    .map(|_| data);
                let r = match (r, &file) {
                    (Ok(_), Some(path)) => std::fs::read(path)
                        .map_err(|e| format!("{error}: reading {}: {e}", path.display())),
                    (r, _) => r,
                };
                let _ = tx.send(r);
            });
        if let Err(e) = spawned {
            // SAFETY: the child forked above; nobody else will reap it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            crate::store::hashed::child_ended();
            return Err(format!("Can't start the snapshot reader: {e}"));
        }
        if mark.is_some() {
            tracing::info!("Background RDB transfer started by pid {pid}");
        } else {
            tracing::info!("Background saving started by pid {pid}");
        }
        Ok(SyncSnapshot {
            pid,
            done: rx,
            pieces,
            outcome: None,
            held,
            started: Instant::now(),
            disk,
            mark,
            child_info,
            keys_total,
            dirty_at_start: store.stats.dirty,
        })
    }

    /// What the child copied on write, as it last measured
    /// (`rdb_last_cow_size` once it is done).
    pub fn cow_size(&self) -> u64 {
        self.child_info.as_ref().map_or(0, |i| i.cow().0)
    }

    /// How the child ended, once it died without finishing (killed, or
    /// failed), seen without reaping it (the reader thread does): its
    /// reader may be waiting for the executor, not on the pipe (Redis's
    /// checkChildrenDone notices a dead child by itself).
    #[cfg(unix)]
    pub fn child_failed(&self) -> Option<ChildFailed> {
        // SAFETY: waitid(2) with WNOWAIT only looks at the state of a child
        // this process forked and has not reaped; `info` is a valid out
        // pointer, zeroed so that si_pid reads 0 when nothing changed.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            if r != 0 || info.si_pid() != self.pid {
                return None;
            }
            match (info.si_code, info.si_status()) {
                (libc::CLD_EXITED, 0) => None,
                (libc::CLD_EXITED, code) => Some(ChildFailed::Exited(code)),
                (_, sig) => Some(ChildFailed::Killed(sig)),
            }
        }
    }

    /// True for a streamed (diskless) snapshot.
    pub fn streamed(&self) -> bool {
        self.pieces.is_some()
    }

    /// Bytes collected so far.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The snapshot's bytes once the child is done (a collected one).
    pub fn poll(&self) -> Option<Result<Vec<u8>, String>> {
        match self.done.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err("snapshot reader died".into())),
        }
    }

    /// A streamed snapshot's next piece. The thread sends every piece
    /// before the outcome, so once the outcome is in, pieces are taken
    /// until none is left and only then is the end reported.
    pub fn next_piece(&mut self) -> Piece {
        if self.outcome.is_none() {
            self.outcome = self.poll();
        }
        if let Some(Ok(p)) = self.pieces.as_ref().map(|r| r.try_recv()) {
            return Piece::Data(p);
        }
        match self.outcome.take() {
            Some(r) => Piece::End(r.map(|_| ())),
            None => Piece::Wait,
        }
    }
}

impl Drop for SyncSnapshot {
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.outcome.is_none() && self.done.try_recv().is_err() {
            // SAFETY: the child this snapshot forked; the reader thread
            // reaps it and then ends on the closed pipe.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

/// Collects a finished background save (called from the executor timers),
/// as Redis's `backgroundSaveDoneHandler`.
pub fn bgsave_poll(store: &mut Store, p: &mut Persistence<'_>) {
    let Some(bg) = p.state.bgsave.as_mut() else {
        return;
    };
    let result = match bg.done.try_recv() {
        Ok(r) => r,
        Err(TryRecvError::Empty) => return,
        Err(TryRecvError::Disconnected) => Err("background save thread died".into()),
    };
    let Some(mut bg) = p.state.bgsave.take() else {
        return;
    };
    if let Some(t) = bg.thread.take() {
        let _ = t.join();
    }
    let st = &mut *p.state;
    st.last_bgsave_time_sec = bg.started.elapsed().as_secs() as i64;
    if let Some(info) = &bg.child_info {
        st.last_cow_size = info.cow().0;
    }
    match result {
        Ok(_) => {
            store.stats.dirty = store.stats.dirty.saturating_sub(bg.dirty_at_start);
            st.last_save = clock::real_now_ms() / 1000;
            st.last_bgsave_ok = true;
            tracing::info!("Background saving terminated with success");
        }
        Err(e) => {
            st.last_bgsave_ok = false;
            tracing::warn!("{e}");
            // A killed child leaves its temp file (rdbRemoveTempFile).
            if let Some((_, tmp)) = &bg.child {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::persist::TestBed;

    fn keys_in(dir: &std::path::Path) -> u64 {
        let data = std::fs::read(dir.join("dump.rdb")).expect("file");
        let mut store = Store::new(16);
        super::super::load_file(&data, &mut store, &Config::default())
            .expect("loads")
            .keys_loaded
    }

    fn temp_files(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .expect("dir")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("temp-"))
            })
            .count()
    }

    #[test]
    fn thread_writer_saves_a_copy() {
        let mut bed = TestBed::new("bg-thread", 5000);
        let (tx, rx) = std::sync::mpsc::channel();
        let path = rdb_path(&bed.config);
        let cancel = Arc::new(AtomicBool::new(false));
        let processed = Arc::new(AtomicU64::new(0));
        let t = thread_writer(
            &bed.store,
            path,
            save_options(&bed.config),
            &cancel,
            &processed,
            tx,
        )
        .expect("thread starts");
        // Writes after the copy do not reach the file.
        bed.store
            .set(0, b"late", Value::string(b"x"), crate::store::Ttl::None);
        let r = rx.recv().expect("result").expect("saved");
        let _ = t.join();
        assert_eq!(r.keys, 5000);
        assert_eq!(processed.load(Ordering::Relaxed), 5000);
        assert_eq!(keys_in(&bed.dir), 5000);
    }

    #[test]
    fn a_foreground_save_supersedes_a_running_background_one() {
        let mut bed = TestBed::new("bg-cancel", 20_000);
        let (store, mut p) = bed.split();
        bgsave_start(store, &mut p).expect("starts");
        assert!(p.state.bgsave.is_some());
        store.set(0, b"newer", Value::string(b"x"), crate::store::Ttl::None);
        super::super::save_on_shutdown(store, &mut p, true, false).expect("saves");
        assert!(p.state.bgsave.is_none());
        assert_eq!(keys_in(&bed.dir), 20_001);
        assert_eq!(temp_files(&bed.dir), 0);
        // And a background save runs to completion when left alone.
        let (store, mut p) = bed.split();
        bgsave_start(store, &mut p).expect("starts");
        let end = Instant::now() + std::time::Duration::from_secs(10);
        while p.state.bgsave.is_some() && Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(5));
            bgsave_poll(store, &mut p);
        }
        assert!(p.state.bgsave.is_none() && p.state.last_bgsave_ok);
        assert_eq!(store.stats.dirty, 0);
        assert_eq!(keys_in(&bed.dir), 20_001);
    }
}
