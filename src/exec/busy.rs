//! Serving other clients while a script runs past busy-reply-threshold, or
//! while the data set loads (Redis's processEventsWhileBlocked): the
//! script's hook and the loader call in here through the server's
//! `serve_while_busy`. Each queued command goes through the one command
//! path: as [`Caller::Busy`] beside a script, so only allow-busy commands
//! run (SCRIPT KILL, FUNCTION KILL/STATS, QUIT, AUTH, HELLO...) and
//! everything else gets -BUSY and flags an open transaction, as in Redis;
//! as a client while loading, where `call` answers -LOADING to commands
//! not flagged `loading`. The master's stream waits for the script.

use std::time::Duration;

use crate::net::link::Request;
use crate::server::call::{call, Caller};
use crate::server::client::ClientKind;
use crate::server::ServerState;
use crate::store::Store;

/// Polls the network once and answers every request that arrived.
pub fn serve_while_busy(server: &mut ServerState, store: &mut Store) {
    let Some(net) = server.net.clone() else {
        return;
    };
    let run = server.running_script.clone();
    if run.is_none() && !server.loading {
        return;
    }
    net.borrow_mut().poll(Duration::ZERO);
    if server.loading && server.cluster.is_some() {
        // The bus goes on while a load runs (Redis's
        // processEventsWhileBlocked): pings are answered, so the cluster
        // learns of the load, and no one takes this node for failed.
        crate::server::cluster::bus::process_events(server, store);
    }
    loop {
        let req = net.borrow_mut().next_request();
        let Some(req) = req else {
            break;
        };
        match req {
            Request::Connect(nc) => server.connect(nc),
            Request::Shutdown(_) => {
                // A signal: stop the script and the server, as SHUTDOWN
                // NOSAVE would; a load stops with nothing saved.
                server.shutdown = true;
                match &run {
                    Some(run) => run.killed.set(true),
                    None => server.shutdown_save_done = true,
                }
            }
            Request::Disconnect { id } => {
                server.blocking.forget(id);
                server.forget_disconnected(id);
                server.repl.forget(id);
                server.monitors.retain(|&m| m != id);
                store.watches.unwatch_all(id);
                if let Some(run) = &run {
                    if server.clients.remove(&id).is_none() && id == run.caller_id.get() {
                        // The script's caller went away: close it once the
                        // script returns.
                        run.caller_gone.set(true);
                    }
                } else {
                    server.clients.remove(&id);
                }
            }
            Request::Batch {
                id,
                mut batch,
                mut out,
            } => {
                let Some(mut client) = server.clients.remove(&id) else {
                    continue;
                };
                if run.is_some() && client.kind == ClientKind::Master {
                    // The master's stream waits for the script, never
                    // refused with -BUSY (Redis's processInputBuffer): it
                    // runs, in order, once the script is over.
                    server.clients.insert(id, client);
                    server.postponed.push(crate::server::pause::Postponed {
                        id,
                        batch,
                        out,
                        next: 0,
                    });
                    continue;
                }
                let caller = if run.is_some() {
                    Caller::Busy
                } else {
                    Caller::Client
                };
                for i in 0..batch.len() {
                    call(server, store, &mut client, batch.argv(i), &mut out, caller);
                    if client.close_after_reply {
                        break;
                    }
                }
                batch.clear();
                server.send_replies(&client, batch, out);
                if !client.close_after_reply {
                    server.clients.insert(id, client);
                }
            }
        }
        if server.shutdown {
            // Before SHUTDOWN's caller sees its connection close.
            net.borrow_mut().stop_listening();
        }
        net.borrow_mut().deliver();
        if run.as_ref().is_some_and(|r| r.killed.get()) || server.shutdown {
            // The script or the load stops now; later requests wait.
            break;
        }
    }
    net.borrow_mut().flush();
}
