//! Serving other clients while a script runs past busy-reply-threshold
//! (Redis's processEventsWhileBlocked): queued commands get -BUSY, except
//! SCRIPT KILL, FUNCTION KILL and SHUTDOWN NOSAVE, which act on the running
//! script. Called from the instruction-count hook on the executor thread.

use super::RunState;
use crate::cmd::args::is;
use crate::error::Error;
use crate::exec::client::ToConn;
use crate::exec::Request;
use crate::net::reply::ReplyBuf;

/// `-BUSY` while a function runs.
const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// -UNKILLABLE once the script wrote.
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";

/// Answers every request queued at the executor.
pub fn process_events(run: &RunState) {
    if !run.active.get() || run.server.get().is_null() {
        return;
    }
    loop {
        // SAFETY: valid while `active` is set (see bridge.rs); the script
        // is paused in the hook, so nothing else uses the server state.
        let server = unsafe { &mut *run.server.get() };
        let Some(Ok(req)) = server.inbox.as_ref().map(|rx| rx.try_recv()) else {
            return;
        };
        match req {
            Request::Connect {
                id,
                addr,
                laddr,
                tx,
            } => server.connect(id, addr, laddr, tx),
            Request::Disconnect { id } => {
                server.clients.remove(&id);
            }
            Request::Batch {
                id,
                mut batch,
                mut out,
                qbuf: _,
            } => {
                let resp3 = server.clients.get(&id).is_some_and(|c| c.resp3);
                let mut close = false;
                for i in 0..batch.len() {
                    let argv = batch.argv(i);
                    let mut reply = ReplyBuf::new(&mut out, resp3);
                    let mark = reply.len();
                    if let Some(err) = answer(run, argv, &mut close) {
                        reply.error(&err);
                    } else {
                        reply.ok();
                    }
                    if close {
                        // SHUTDOWN: the connection closes without a reply.
                        reply.truncate(mark);
                        break;
                    }
                }
                batch.clear();
                if let Some(c) = server.clients.get(&id) {
                    let _ = c.tx.send(ToConn::Replies { batch, out, close });
                }
                if run.killed.get() && server.shutdown {
                    return;
                }
            }
        }
    }
}

/// The answer to one command while busy: None means `+OK`.
fn answer(run: &RunState, argv: crate::cmd::Argv<'_>, close: &mut bool) -> Option<Error> {
    let name = argv.get(0);
    let sub = argv.try_get(1).unwrap_or(b"");
    let busy = || {
        if run.is_function.get() {
            Error::raw(BUSY_FUNCTION)
        } else {
            Error::Busy
        }
    };
    let kill = |for_function: bool| {
        if argv.len() != 2 {
            return Some(busy());
        }
        if run.wrote.get() {
            return Some(Error::raw(UNKILLABLE));
        }
        if for_function != run.is_function.get() {
            return Some(busy());
        }
        run.killed.set(true);
        None
    };
    if is(name, "script") && is(sub, "kill") {
        return kill(false);
    }
    if is(name, "function") && is(sub, "kill") {
        return kill(true);
    }
    if is(name, "shutdown") && argv.iter_from(1).any(|a| is(a, "nosave")) {
        // SAFETY: as in process_events.
        let server = unsafe { &mut *run.server.get() };
        server.shutdown = true;
        run.killed.set(true);
        *close = true;
        return None;
    }
    Some(busy())
}
