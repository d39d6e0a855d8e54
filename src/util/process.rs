//! Process-wide settings the kernel holds for the server, as Redis's
//! server.c sets them: the OOM killer's score (`setOOMScoreAdj`, from
//! `oom-score-adj` and `oom-score-adj-values`). Like Redis's statics they
//! belong to the process: forked children (background saves, AOF
//! rewrites) inherit them and switch to the child class. Also the start-up
//! checks of the kernel's memory settings (linuxMemoryWarnings), which
//! turn transparent huge pages off for the process with `disable-thp`.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};

/// Children forked (INFO `total_forks`): background saves, snapshots for
/// replicas, AOF rewrites, Lua debugging sessions (Redis's redisFork).
pub static TOTAL_FORKS: AtomicU64 = AtomicU64::new(0);
/// How long the last fork took, in µs (INFO `latest_fork_usec`).
pub static LATEST_FORK_USEC: AtomicU64 = AtomicU64::new(0);

/// Counts a fork that started at `started`, in the parent once it returned.
pub fn note_fork(started: std::time::Instant) {
    TOTAL_FORKS.fetch_add(1, Ordering::Relaxed);
    LATEST_FORK_USEC.store(started.elapsed().as_micros() as u64, Ordering::Relaxed);
}

/// The process classes of `oom-score-adj-values`, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OomClass {
    /// A master (or a server replicating from no one).
    Master = 0,
    /// A replica.
    Replica = 1,
    /// A forked child: background save or AOF rewrite.
    BgChild = 2,
}

/// `oom-score-adj`: no, relative (also `yes`) or absolute.
static OOM_MODE: AtomicU8 = AtomicU8::new(0);
static OOM_VALUES: [AtomicI32; 3] = [AtomicI32::new(0), AtomicI32::new(200), AtomicI32::new(800)];
/// Whether the score was changed by the server, and what it was before.
static OOM_ADJUSTED: AtomicBool = AtomicBool::new(false);
static OOM_BASE: AtomicI32 = AtomicI32::new(0);
/// The class the parent process is in now.
static OOM_CLASS: AtomicU8 = AtomicU8::new(0);

const OOM_FILE: &str = "/proc/self/oom_score_adj";

/// Records `oom-score-adj` (`no`, `yes`, `relative`, `absolute`) and
/// `oom-score-adj-values`; [`apply_oom_score`] puts them into effect.
pub fn configure_oom(mode: &str, values: [i32; 3]) {
    let m = match mode {
        "yes" | "relative" => 1,
        "absolute" => 2,
        _ => 0,
    };
    OOM_MODE.store(m, Ordering::Relaxed);
    for (slot, v) in OOM_VALUES.iter().zip(values) {
        slot.store(v, Ordering::Relaxed);
    }
}

/// Writes the score for `class` (None: the class the process is in now)
/// to /proc, as Redis's setOOMScoreAdj: relative scores add to the score
/// the process had before the server first changed it, and turning the
/// feature off restores that score. An error says what failed.
pub fn apply_oom_score(class: Option<OomClass>) -> Result<(), String> {
    if let Some(c) = class {
        if c != OomClass::BgChild {
            OOM_CLASS.store(c as u8, Ordering::Relaxed);
        }
    }
    let class = class.map_or(OOM_CLASS.load(Ordering::Relaxed), |c| c as u8);
    let mode = OOM_MODE.load(Ordering::Relaxed);
    let val = if mode != 0 {
        if !OOM_ADJUSTED.swap(true, Ordering::Relaxed) {
            let base = std::fs::read_to_string(OOM_FILE)
                .map_err(|e| format!("Unable to read oom_score_adj: {}", strerror(&e)))
                .inspect_err(|_| OOM_ADJUSTED.store(false, Ordering::Relaxed))?;
            OOM_BASE.store(atoi(&base), Ordering::Relaxed);
        }
        let mut v = OOM_VALUES[usize::from(class)].load(Ordering::Relaxed);
        if mode == 1 {
            v += OOM_BASE.load(Ordering::Relaxed);
        }
        v.clamp(-1000, 1000)
    } else if OOM_ADJUSTED.swap(false, Ordering::Relaxed) {
        OOM_BASE.load(Ordering::Relaxed)
    } else {
        return Ok(());
    };
    std::fs::write(OOM_FILE, format!("{val}\n"))
        .map_err(|e| format!("Unable to write oom_score_adj: {}", strerror(&e)))
}

/// The leading integer of `s`, as C's atoi (0 when there is none).
fn atoi(s: &str) -> i32 {
    i32::try_from(super::num::atoi(s)).unwrap_or(0)
}

/// An I/O error as C's strerror prints it (no " (os error N)").
pub fn strerror(e: &std::io::Error) -> String {
    let msg = e.to_string();
    match msg.find(" (os error") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

/// Redis's start-up memory checks (linuxMemoryWarnings): a warning when
/// overcommit is off, and when transparent huge pages are always on, unless
/// `disable_thp` turns them off for this process (PR_SET_THP_DISABLE).
/// Returns whether THP stays enabled for the process.
pub fn linux_memory_warnings(disable_thp: bool) -> bool {
    let overcommit = std::fs::read_to_string("/proc/sys/vm/overcommit_memory")
        .ok()
        .map(|s| super::num::atoi(&s));
    if overcommit.is_some_and(|v| v != 1) {
        tracing::warn!(
            "WARNING Memory overcommit must be enabled! Without it, a background save or replication may fail under low memory condition. Being disabled, it can can also cause failures without low memory condition, see https://github.com/jemalloc/jemalloc/issues/1328. To fix this issue add 'vm.overcommit_memory = 1' to /etc/sysctl.conf and then reboot or run the command 'sysctl vm.overcommit_memory=1' for this to take effect."
        );
    }
    let thp_always = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]"));
    if !thp_always {
        return false;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) with PR_SET_THP_DISABLE takes plain integers and
    // changes only this process's flag.
    if disable_thp && unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } == 0 {
        return false;
    }
    tracing::warn!(
        "WARNING You have Transparent Huge Pages (THP) support enabled in your kernel. This will create latency and memory usage issues with Redis. To fix this issue run the command 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' as root, and add it to your /etc/rc.local in order to retain the setting after a reboot. Redis must be restarted after THP is disabled (set to 'madvise' or 'never')."
    );
    true
}

/// Detaches from the terminal (Redis's daemonize): the parent exits 0,
/// the child starts a session of its own with standard input, output and
/// error on /dev/null. Call before any thread is started.
#[cfg(unix)]
pub fn daemonize() {
    // SAFETY: called from main while the process has one thread, so the
    // child is a complete copy; the parent leaves at once with _exit, never
    // running destructors that the child still relies on.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            // Redis exits from the child's side only; a failed fork leaves
            // the server in the foreground.
            return;
        }
        if pid > 0 {
            libc::_exit(0);
        }
        libc::setsid();
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0);
        if fd != -1 {
            libc::dup2(fd, libc::STDIN_FILENO);
            libc::dup2(fd, libc::STDOUT_FILENO);
            libc::dup2(fd, libc::STDERR_FILENO);
            if fd > libc::STDERR_FILENO {
                libc::close(fd);
            }
        }
    }
}

/// The supervisor a server reports its readiness to (`supervised`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supervisor {
    /// upstart: the server stops itself with SIGSTOP when ready.
    Upstart,
    /// systemd: `READY=1` and `STATUS=` lines to `$NOTIFY_SOCKET`.
    Systemd,
}

/// Supervised by systemd (Redis's `server.supervised_mode`), for the
/// status lines sent after start-up; process-wide, as Redis's.
static SUPERVISED_BY_SYSTEMD: AtomicBool = AtomicBool::new(false);

/// Sends a `STATUS=` line to systemd when it supervises the server
/// (Redis's redisCommunicateSystemd after a replica's sync).
pub fn systemd_status(status: &str) {
    if SUPERVISED_BY_SYSTEMD.load(Ordering::Relaxed) {
        notify_systemd(&format!("STATUS={status}\n"));
    }
}

/// Redis's redisIsSupervised: the supervisor `mode` (`no`, `upstart`,
/// `systemd`, `auto`) names, when it is there.
pub fn supervisor(mode: &str) -> Option<Supervisor> {
    let mode = match mode {
        "auto" if std::env::var_os("UPSTART_JOB").is_some() => "upstart",
        "auto" if std::env::var_os("NOTIFY_SOCKET").is_some() => "systemd",
        m => m,
    };
    match mode {
        "upstart" => {
            if std::env::var_os("UPSTART_JOB").is_none() {
                tracing::warn!("upstart supervision requested, but UPSTART_JOB not found!");
                return None;
            }
            Some(Supervisor::Upstart)
        }
        "systemd" => {
            if !notify_systemd("STATUS=Redis is loading...\n") {
                return None;
            }
            SUPERVISED_BY_SYSTEMD.store(true, Ordering::Relaxed);
            tracing::info!("Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit.");
            Some(Supervisor::Systemd)
        }
        _ => None,
    }
}

/// Tells the supervisor the server is ready (after loading).
pub fn supervisor_ready(s: Supervisor, replica: bool) {
    match s {
        Supervisor::Upstart => {
            tracing::info!("supervised by upstart, will stop to signal readiness.");
            // SAFETY: raise(3) sends a signal to this process.
            unsafe {
                libc::raise(libc::SIGSTOP);
            }
            std::env::remove_var("UPSTART_JOB");
        }
        Supervisor::Systemd => {
            notify_systemd(if replica {
                "STATUS=Ready to accept connections in read-only mode. Waiting for MASTER <-> REPLICA sync\n"
            } else {
                "STATUS=Ready to accept connections\n"
            });
            notify_systemd("READY=1\n");
        }
    }
}

/// Sends one sd_notify message to `$NOTIFY_SOCKET` (a path, or an
/// abstract socket name after `@`); true when it was sent.
#[cfg(target_os = "linux")]
pub fn notify_systemd(msg: &str) -> bool {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        tracing::warn!(
            "systemd supervision requested or auto-detected, but NOTIFY_SOCKET is not set"
        );
        return false;
    };
    let path = path.to_string_lossy().into_owned();
    let addr = match path.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
        None => SocketAddr::from_pathname(&path),
    };
    let sent = UnixDatagram::unbound()
        .and_then(|sock| addr.and_then(|a| sock.send_to_addr(msg.as_bytes(), &a)));
    match sent {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("Can't send notification to systemd: {e}");
            false
        }
    }
}

/// Sends one sd_notify message (systemd exists on Linux alone).
#[cfg(not(target_os = "linux"))]
pub fn notify_systemd(_msg: &str) -> bool {
    false
}

/// Work a forked child does first, as Redis's redisFork: it takes the
/// child's OOM score and its title ("redis-rdb-bgsave"...). Err: the OOM
/// score could not be set (the caller logs it).
pub fn after_fork_in_child(title: &str) -> Result<(), String> {
    // Redis's child notices a dead parent when its next report to it
    // fails; this one is told by the kernel, whatever it is doing, so a
    // killed server leaves no child writing on (a child of a thread that
    // ended is told too: the executor forks, and outlives its children).
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) on this (child) process's own attribute.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    super::proctitle::set_titled(title);
    apply_oom_score(Some(OomClass::BgChild))
}

/// Whether the main thread's stack can grow to `bytes`, so that the
/// event loop can run on it (signals sent to the process then reach the
/// thread that serves, as in Redis). Raises the soft `RLIMIT_STACK`,
/// which the kernel checks as the stack grows, when the hard limit allows
/// it; then checks that the address space below the stack is free for
/// that much (the kernel leaves room for the limit in force at exec, and
/// with address randomization the room left can be less).
#[cfg(target_os = "linux")]
pub fn main_stack_can_grow_to(bytes: usize) -> bool {
    // What main() and the start-up used of the stack come on top.
    let want = (bytes + (8 << 20)) as libc::rlim_t;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } != 0 {
        return false;
    }
    if limit.rlim_cur != libc::RLIM_INFINITY && limit.rlim_cur < want {
        if limit.rlim_max != libc::RLIM_INFINITY && limit.rlim_max < want {
            return false;
        }
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit(2) reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_STACK, &raised) } != 0 {
            return false;
        }
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    // The kernel keeps a guard gap (1 MB by default) below a growing stack.
    room_below_stack(&maps).is_some_and(|room| room >= want as u64 + (2 << 20))
}

#[cfg(not(target_os = "linux"))]
pub fn main_stack_can_grow_to(_bytes: usize) -> bool {
    false
}

/// The free address space between the main thread's stack (`[stack]` in
/// /proc/self/maps) and the mapping below it, counted from the stack's top.
fn room_below_stack(maps: &str) -> Option<u64> {
    let range = |line: &str| -> Option<(u64, u64)> {
        let (start, end) = line.split_whitespace().next()?.split_once('-')?;
        Some((
            u64::from_str_radix(start, 16).ok()?,
            u64::from_str_radix(end, 16).ok()?,
        ))
    };
    let (stack_start, stack_end) = maps
        .lines()
        .find(|l| l.ends_with("[stack]"))
        .and_then(range)?;
    let below = maps
        .lines()
        .filter_map(range)
        .map(|(_, end)| end)
        .filter(|&end| end <= stack_start)
        .max()
        .unwrap_or(0);
    Some(stack_end - below)
}

/// A panic payload that reports as Redis's failed assertion
/// (`_serverAssertWithInfo`) in the crash report: the context lines (the
/// client and object the assertion was about), then the expression that
/// is not true.
pub struct AssertionFailed {
    /// Lines logged ahead of the assertion.
    pub context: Vec<String>,
    /// The expression.
    pub expr: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_below_the_stack_is_read_from_the_maps() {
        let maps = "\
55d0c0000000-55d0c0001000 r--p 00000000 00:00 0    /bin/x
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0    [stack]
7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0    [vdso]";
        assert_eq!(
            room_below_stack(maps),
            Some(0x7ffc00021000 - 0x7f0000100000)
        );
        assert_eq!(room_below_stack("7f00-7f10 rw-p 0 0 0"), None);
    }

    #[test]
    fn atoi_reads_a_leading_integer() {
        assert_eq!(atoi("12\n"), 12);
        assert_eq!(atoi("-300\n"), -300);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi(""), 0);
    }
}

/// `crash-log-enabled`: a crash writes its report (the signal handlers act).
pub static CRASH_LOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
/// `use-exit-on-panic`: a panic ends the process with exit status 1 rather
/// than abort().
pub static EXIT_ON_PANIC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Applies the crash directives (start-up and CONFIG SET).
pub fn set_crash_handling(crash_log: bool, exit_on_panic: bool) {
    use std::sync::atomic::Ordering::Relaxed;
    CRASH_LOG.store(crash_log, Relaxed);
    EXIT_ON_PANIC.store(exit_on_panic, Relaxed);
}
