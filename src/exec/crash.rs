//! The crash report (Redis's `sigsegvHandler`, `_serverPanic` and
//! `bugReportStart`/`bugReportEnd` in `debug.c`): a fatal signal or a panic
//! writes, to the log, the block tools and people look for — between
//! Redis's `=== REDIS BUG REPORT START` and `END` markers — with the cause,
//! the stack trace, INFO, the client list, and the client and command
//! being run, then the process dies of the same signal (or aborts, for a
//! panic). DEBUG SEGFAULT and DEBUG PANIC exercise it.
//!
//! The report is written from the signal handler, as Redis writes its own:
//! formatting allocates and reads the server state that the crashed code
//! was using. Nothing runs after it, and a second fault inside it ends the
//! process with the default action.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use super::Executor;
use crate::util::process::AssertionFailed;

/// The executor whose state the report shows, while its loop runs.
static EXECUTOR: AtomicPtr<Executor> = AtomicPtr::new(std::ptr::null_mut());
/// The process the handlers belong to (forked children do not report).
static PID: AtomicU32 = AtomicU32::new(0);

/// Signals that end the process with a report.
const FATAL: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// Installs the fatal-signal handlers and the panic hook (server binary
/// only: embedded servers keep their host's handling).
pub fn install() {
    PID.store(std::process::id(), Ordering::Relaxed);
    crate::util::watchdog::set_report(write_watchdog_report);
    // SAFETY: a sigaction with a valid handler for each fatal signal; the
    // handler resets itself (SA_RESETHAND), so a fault inside it ends the
    // process.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_fatal_signal as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESETHAND;
        libc::sigemptyset(&mut act.sa_mask);
        for sig in FATAL {
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if PID.load(Ordering::Relaxed) != std::process::id() {
            // A forked child catches its own panics.
            return default(info);
        }
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" #{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let head = match info.payload().downcast_ref::<AssertionFailed>() {
            Some(AssertionFailed { context, expr }) => {
                let (file, line) = info.location().map_or(("?", 0), |l| (l.file(), l.line()));
                let mut head = context.clone();
                head.push("=== ASSERTION FAILED ===".to_string());
                head.push(format!("==> {file}:{line} '{expr}' is not true"));
                head
            }
            None => vec![
                "------------------------------------------------".to_string(),
                "!!! Software Failure. Press left mouse button to continue".to_string(),
                format!("Guru Meditation: {msg}{at}"),
            ],
        };
        // Without the crash log (Redis's crashlog_enabled), the cause alone.
        write_report(&head, None, crash_log_enabled());
        if crate::util::process::EXIT_ON_PANIC.load(Ordering::Relaxed) {
            // SAFETY: ends the process at once, as Redis's _exit(1) with
            // use-exit-on-panic.
            unsafe { libc::_exit(1) };
        }
        // SAFETY: back to the default action, so the abort below ends the
        // process without a second report.
        unsafe { libc::signal(libc::SIGABRT, libc::SIG_DFL) };
        std::process::abort();
    }));
}

/// Makes `executor` the state the report shows, for as long as its loop
/// runs (None when it stops).
pub(super) fn watch(executor: Option<&mut Executor>) {
    let ptr = executor.map_or(std::ptr::null_mut(), |e| e as *mut Executor);
    EXECUTOR.store(ptr, Ordering::Relaxed);
}

fn crash_log_enabled() -> bool {
    crate::util::process::CRASH_LOG.load(Ordering::Relaxed)
}

extern "C" fn on_fatal_signal(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    // Without the crash log Redis installs no handler: the signal's default
    // action, and no report.
    if PID.load(Ordering::Relaxed) == std::process::id() && crash_log_enabled() {
        let mut head = Vec::new();
        // SAFETY: the kernel passes valid siginfo and ucontext pointers to
        // an SA_SIGINFO handler.
        unsafe {
            let code = (*info).si_code;
            head.push(format!(
                "ferrokv {} crashed by signal: {sig}, si_code: {code}",
                crate::VERSION
            ));
            if matches!(sig, libc::SIGSEGV | libc::SIGBUS) {
                head.push(format!("Accessing address: {:p}", (*info).si_addr()));
            }
            if let Some(ip) = instruction_pointer(uc) {
                head.push(format!("Crashed running the instruction at: {ip:#x}"));
            }
        }
        write_report(&head, Some(sig), true);
    }
    // SAFETY: the default action for the signal, raised again: the process
    // ends as the signal would have ended it (a core dump where enabled).
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// The faulting instruction, from the signal's machine context.
unsafe fn instruction_pointer(uc: *mut libc::c_void) -> Option<usize> {
    if uc.is_null() {
        return None;
    }
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let uc = uc.cast::<libc::ucontext_t>();
        Some((*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as usize)
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        let uc = uc.cast::<libc::ucontext_t>();
        Some((*uc).uc_mcontext.pc as usize)
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        None
    }
}

/// The software watchdog's report (Redis's watchdogSignalHandler): the
/// stack of the executor thread, which this runs on, between Redis's
/// markers. The process goes on.
fn write_watchdog_report() {
    let mut out = String::from("\n");
    out.push_str(&crate::config::log::line(
        '#',
        "\n--- WATCHDOG TIMER EXPIRED ---",
    ));
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    for line in crashed_frames(&trace) {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&crate::config::log::line('#', "--------\n"));
    write_log(&out);
}

/// The configured log file, or "" for standard output.
fn logfile() -> String {
    let executor = EXECUTOR.load(Ordering::Relaxed);
    if executor.is_null() {
        String::new()
    } else {
        // SAFETY: see the module notes: the executor outlives its loop, and
        // a report runs on the executor's thread, between its steps.
        unsafe { (*executor).server.config.logfile.clone() }
    }
}

/// Appends `out` to the log file, or writes it to standard output.
fn write_log(out: &str) {
    let logfile = logfile();
    if logfile.is_empty() {
        let _ = std::io::stdout().lock().write_all(out.as_bytes());
    } else if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&logfile) {
        let _ = f.write_all(out.as_bytes());
    }
}

/// Writes the whole report to the log: `head` as warning lines, then the
/// stack trace and the server's state.
fn write_report(head: &[String], _sig: Option<libc::c_int>, full: bool) {
    let executor = EXECUTOR.load(Ordering::Relaxed);
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n");
    for line in head {
        out.push_str(&crate::config::log::line('#', line));
    }
    if full {
        out.push_str("\n------ STACK TRACE ------\n\nBacktrace:\n");
        let trace = std::backtrace::Backtrace::force_capture().to_string();
        for line in crashed_frames(&trace) {
            out.push_str(line);
            out.push('\n');
        }
    }
    if full && !executor.is_null() {
        // SAFETY: as above.
        state_sections(unsafe { &mut *executor }, &mut out);
    }
    out.push_str(
        "\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n       \
         Please report the crash by opening an issue on ferrokv's tracker,\n       \
         with the report above.\n\n",
    );
    write_log(&out);
}

/// The backtrace's lines from the frame that crashed on: the report's own
/// frames, the signal trampoline and the panic machinery go.
fn crashed_frames(trace: &str) -> Vec<&str> {
    let lines: Vec<&str> = trace.lines().collect();
    let is_frame = |l: &str| l.trim_start().starts_with(|c: char| c.is_ascii_digit());
    let marker = |l: &str| {
        is_frame(l)
            && [
                "on_fatal_signal",
                "on_watchdog_signal",
                "panic_fmt",
                "begin_panic",
                "panic_display",
                "panic_explicit",
            ]
            .iter()
            .any(|m| l.contains(m))
    };
    let Some(last) = lines.iter().rposition(|l| marker(l)) else {
        return lines;
    };
    let mut start = lines[last + 1..]
        .iter()
        .position(|l| is_frame(l))
        .map_or(lines.len(), |i| last + 1 + i);
    // The signal trampoline has no symbol.
    if lines.get(start).is_some_and(|l| l.ends_with("<unknown>")) {
        start = lines[start + 1..]
            .iter()
            .position(|l| is_frame(l))
            .map_or(lines.len(), |i| start + 1 + i);
    }
    lines[start..].to_vec()
}

/// INFO, CLIENT LIST, the client being served and its command.
fn state_sections(e: &mut Executor, out: &mut String) {
    let (client_ptr, argv) = crate::server::call::running();
    let mut spare = crate::server::client::Client::internal();
    // SAFETY: `running` names the client and command of the call under
    // way, whose frame is still on this stack.
    let (client, argv) = unsafe {
        match client_ptr {
            Some(c) => (&mut *c, argv.map(|a| &*a)),
            None => (&mut spare, None),
        }
    };
    let mut sink = Vec::new();
    let info = {
        let mut ctx = crate::server::Ctx {
            store: &mut e.store,
            client: &mut *client,
            reply: crate::net::reply::ReplyBuf::new(&mut sink, false),
            server: &mut e.server,
        };
        crate::cmd::info::generate(&mut ctx, &[b"all".to_vec()])
    };
    out.push_str("\n------ INFO OUTPUT ------\n");
    out.push_str(&info.replace("\r\n", "\n"));
    out.push_str("\n------ CLIENT LIST OUTPUT ------\n");
    let now = crate::util::clock::real_now_ms();
    let mut ids: Vec<u64> = e.server.clients.keys().copied().collect();
    if client_ptr.is_some() {
        ids.push(client.id);
    }
    ids.sort_unstable();
    for id in ids {
        let (c, current) = if client_ptr.is_some() && id == client.id {
            (&*client, argv)
        } else {
            match e.server.clients.get(&id) {
                Some(c) => (c, None),
                None => continue,
            }
        };
        crate::server::client::info_line(out, c, &e.server, &e.store, now, current);
        out.push('\n');
    }
    if client_ptr.is_some() {
        out.push_str("\n------ CURRENT CLIENT INFO ------\n");
        crate::server::client::info_line(out, client, &e.server, &e.store, now, argv);
        out.push('\n');
        if let Some(argv) = argv {
            for (j, a) in argv.iter_from(0).enumerate() {
                let mut quoted = Vec::new();
                crate::util::repr::repr(&a[..a.len().min(128)], &mut quoted);
                let _ = writeln!(out, "argv[{j}]: '{}'", String::from_utf8_lossy(&quoted));
            }
        }
    }
    out.push_str("\n------ MODULES INFO OUTPUT ------\n");
    out.push_str("\n------ CONFIG DEBUG OUTPUT ------\n");
    for name in [
        "proto-max-bulk-len",
        "replica-read-only",
        "client-query-buffer-limit",
        "io-threads",
        "maxmemory",
        "maxmemory-policy",
        "appendonly",
        "appendfsync",
    ] {
        let _ = writeln!(out, "{name} {}", e.server.config.get(name));
    }
}
