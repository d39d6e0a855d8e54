//! EVAL under the Lua debugger (Redis's `evalGenericCommandWithDebugging`,
//! `ldbStartSession`, `ldbEndSession`): the session takes the client's
//! socket over, blocking, until the script ends. SCRIPT DEBUG YES runs it
//! in a forked child, so the server goes on and the script's writes go
//! with the child; SYNC runs it in the server, which waits, and keeps
//! them. Either way the connection closes after the final reply, which is
//! how `redis-cli --ldb` learns the session ended. The debugger itself is
//! `crate::script::ldb`.

use super::scripting::{eval_generic, take_engine};
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::server::client::LuaDebug;

/// Runs EVAL (`ro`: EVAL_RO) for a client that asked for debugging.
pub(super) fn eval_debugging(
    ctx: &mut Ctx<'_>,
    argv: Argv<'_>,
    mode: LuaDebug,
    ro: bool,
) -> CmdResult {
    let forked = mode == LuaDebug::Forked;
    let fd = ctx.client.fd as i32;
    if forked {
        // SAFETY: fork on the executor thread, as BGSAVE does; the child
        // serves this one client and leaves with _exit, never returning to
        // the event loop.
        let fork_started = std::time::Instant::now();
        let pid = unsafe { libc::fork() };
        if pid > 0 {
            crate::util::process::note_fork(fork_started);
        }
        if pid < 0 {
            ctx.client.lua_debug = None;
            return Err(Error::err_owned(format!(
                "Fork() failed: can't run EVAL in debugging mode: {}",
                std::io::Error::last_os_error()
            )));
        }
        if pid > 0 {
            // The child has the conversation now: the server closes its
            // side without a reply.
            ctx.server.ldb_children.push(pid);
            ctx.client.lua_debug = None;
            ctx.reply.raw().clear();
            ctx.client.bufs.handed_over.set(true);
            ctx.client.close_after_reply = true;
            return Ok(());
        }
        become_session_child(fd);
        tracing::warn!("ferrokv forked for debugging eval");
    } else {
        tracing::warn!("ferrokv synchronous debugging eval session started");
    }
    set_blocking(fd, true);
    let engine = take_engine(ctx)?;
    engine.run.ldb.borrow_mut().start(fd, forked, argv.get(1));
    let run = engine.run.clone();
    ctx.server.scripting.put(engine);
    let mark = ctx.reply.raw().len();
    let result = eval_generic(ctx, argv, false, ro);
    run.ldb.borrow_mut().end();
    if forked {
        if let Err(e) = &result {
            ctx.reply.error(e);
        }
        run.ldb.borrow().write(&ctx.reply.raw()[mark..]);
        tracing::warn!("Lua debugging session child exiting");
        // SAFETY: ends the child without running the parent's state down.
        unsafe { libc::_exit(0) };
    }
    tracing::warn!("ferrokv synchronous debugging eval session ended");
    set_blocking(fd, false);
    ctx.client.close_after_reply = true;
    result
}

/// In the session's child: SIGTERM and SIGINT are the server's, and every
/// socket but the client's is closed (listeners, other clients, replicas),
/// so peers see them close with the server, not when the session ends.
fn become_session_child(keep: i32) {
    crate::config::log::set_role(b'C');
    // SAFETY: installing SIG_IGN for two signals in this process.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    for fd in fds {
        if fd <= 2 || fd == keep {
            continue;
        }
        // SAFETY: fstat into a zeroed struct, then close of a socket this
        // (child) process holds.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK {
                libc::close(fd);
            }
        }
    }
}

/// Blocking with a 5 s send timeout while the session talks on the
/// socket (Redis's connBlock and connSendTimeout); non-blocking again
/// after.
fn set_blocking(fd: i32, on: bool) {
    // SAFETY: fcntl and setsockopt on the client's own socket with valid
    // arguments.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            let flags = if on {
                flags & !libc::O_NONBLOCK
            } else {
                flags | libc::O_NONBLOCK
            };
            libc::fcntl(fd, libc::F_SETFL, flags);
        }
        let tv = libc::timeval {
            tv_sec: if on { 5 } else { 0 },
            tv_usec: 0,
        };
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
}
