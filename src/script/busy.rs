//! Serving other clients while a script runs past busy-reply-threshold
//! (Redis's processEventsWhileBlocked): queued commands get -BUSY, except
//! the allow-busy ones (SCRIPT KILL, FUNCTION KILL/STATS, SHUTDOWN NOSAVE,
//! QUIT, AUTH, HELLO, MULTI...), which run or act on the running script.
//! Called from the instruction-count hook on the executor thread.

use std::time::Duration;

use super::RunState;
use crate::cmd::args::is;
use crate::cmd::table::flag;
use crate::cmd::{Argv, Ctx};
use crate::error::Error;
use crate::exec::client::ToConn;
use crate::exec::{Request, ServerState};
use crate::net::reply::ReplyBuf;
use crate::store::Store;

/// `-BUSY` while a function runs.
const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// -UNKILLABLE once the script wrote.
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";

/// Polls the network once and answers every request that arrived.
pub fn process_events(run: &RunState) {
    if !run.active.get() || run.server.get().is_null() {
        return;
    }
    // SAFETY: valid while `active` is set (see bridge.rs); the script is
    // paused in the hook, so nothing else uses the server state.
    let Some(net) = (unsafe { &*run.server.get() }).net.clone() else {
        return;
    };
    net.borrow_mut().poll(Duration::ZERO);
    loop {
        let req = net.borrow_mut().next_request();
        let Some(req) = req else {
            break;
        };
        // SAFETY: as above.
        let server = unsafe { &mut *run.server.get() };
        handle(run, server, req);
        net.borrow_mut().deliver();
        if run.killed.get() {
            // The script stops now; later requests wait for it.
            break;
        }
    }
    net.borrow_mut().flush();
}

fn handle(run: &RunState, server: &mut ServerState, req: Request) {
    match req {
        Request::Connect(nc) => server.connect(nc),
        Request::Shutdown => {
            // A signal: stop the script and the server, as SHUTDOWN
            // NOSAVE would.
            server.shutdown = true;
            run.killed.set(true);
        }
        Request::Disconnect { id } => {
            server.blocking.forget(id);
            server.pubsub.forget(id);
            if server.clients.remove(&id).is_none() && id == run.caller_id.get() {
                // The script's caller went away: forget it once the
                // script returns.
                run.caller_gone.set(true);
            }
        }
        Request::Batch {
            id,
            mut batch,
            mut out,
            qbuf: _,
        } => {
            let Some(mut client) = server.clients.remove(&id) else {
                return;
            };
            for i in 0..batch.len() {
                let mark = out.len();
                let (result, close) = answer(run, server, &mut client, batch.argv(i), &mut out);
                if let Err(e) = result {
                    ReplyBuf::new(&mut out, client.resp3).error(&e);
                }
                if close {
                    client.close_after_reply = true;
                    if server.shutdown {
                        // SHUTDOWN: the connection closes without a reply.
                        out.truncate(mark);
                    }
                    break;
                }
            }
            batch.clear();
            let close = client.close_after_reply;
            let _ = client.tx.send(ToConn::Replies { batch, out, close });
            if !close {
                server.clients.insert(id, client);
            }
        }
    }
}

fn busy_error(run: &RunState) -> Error {
    if run.is_function.get() {
        Error::raw(BUSY_FUNCTION)
    } else {
        Error::Busy
    }
}

/// Runs or refuses one command while busy; the flag asks to close the
/// connection after the reply.
fn answer(
    run: &RunState,
    server: &mut ServerState,
    client: &mut crate::exec::client::Client,
    argv: Argv<'_>,
    out: &mut Vec<u8>,
) -> (Result<(), Error>, bool) {
    let name = argv.get(0);
    // SHUTDOWN is handled here whether or not the table has it.
    if is(name, "shutdown") {
        if !argv.iter_from(1).any(|a| is(a, "nosave")) {
            return (Err(Error::Busy), false);
        }
        server.shutdown = true;
        server.shutdown_save_done = true;
        run.killed.set(true);
        return (Ok(()), true);
    }
    // The same checks as any command, in Redis's order: lookup, arity,
    // authentication; only then BUSY.
    let id = match crate::exec::call::check(server, client, argv) {
        Ok(id) => id,
        Err((_, e)) => return (Err(e), false),
    };
    let cmd = &server.table.commands[id];
    let Some(handler) = cmd.handler else {
        return (Err(Error::WrongArity(cmd.name.clone())), false);
    };
    if !cmd.has(flag::ALLOW_BUSY) {
        return (Err(busy_error(run)), false);
    }
    match cmd.name.as_str() {
        "script|kill" | "function|kill" => {
            let result = kill(run, cmd.name == "function|kill");
            if result.is_ok() {
                ReplyBuf::new(out, client.resp3).ok();
            }
            return (result, false);
        }
        "function|stats" => {
            function_stats(run, out, client.resp3);
            return (Ok(()), false);
        }
        _ => {}
    }
    // SAFETY: as in process_events; the store is only used by this
    // command while the script is paused.
    let store: &mut Store = unsafe { &mut *run.store.get() };
    let resp3 = client.resp3;
    let result = {
        let mut ctx = Ctx {
            store,
            client: &mut *client,
            reply: ReplyBuf::new(out, resp3),
            server: &mut *server,
        };
        handler(&mut ctx, argv)
    };
    let close = client.close_after_reply;
    (result, close)
}

fn kill(run: &RunState, for_function: bool) -> Result<(), Error> {
    if run.wrote.get() {
        return Err(Error::raw(UNKILLABLE));
    }
    if for_function != run.is_function.get() {
        return Err(busy_error(run));
    }
    run.killed.set(true);
    Ok(())
}

fn function_stats(run: &RunState, out: &mut Vec<u8>, resp3: bool) {
    let mut reply = ReplyBuf::new(out, resp3);
    reply.map(2);
    reply.bulk(b"running_script");
    if run.is_function.get() {
        let command = run.command.borrow();
        reply.map(3);
        reply.bulk(b"name");
        reply.bulk(run.name.borrow().as_bytes());
        reply.bulk(b"command");
        reply.array(command.len());
        for a in command.iter() {
            reply.bulk(a);
        }
        reply.bulk(b"duration_ms");
        reply.int(run.started.get().elapsed().as_millis() as i64);
    } else {
        reply.null();
    }
    let (libs, funcs) = (run.libraries.get(), run.functions.get());
    reply.bulk(b"engines");
    reply.map(1);
    reply.bulk(b"LUA");
    reply.map(2);
    reply.bulk(b"libraries_count");
    reply.int(libs as i64);
    reply.bulk(b"functions_count");
    reply.int(funcs as i64);
}
