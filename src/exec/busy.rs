//! Serving other clients while a script runs past busy-reply-threshold
//! (Redis's processEventsWhileBlocked): the script's hook calls in here
//! through the server's `serve_while_busy`. Each queued command goes
//! through the one command path as [`Caller::Busy`], so only allow-busy
//! commands run (SCRIPT KILL, FUNCTION KILL/STATS, QUIT, AUTH, HELLO...),
//! everything else gets -BUSY and flags an open transaction, as in Redis.

use std::time::Duration;

use crate::net::link::Request;
use crate::server::call::{call, Caller};
use crate::server::ServerState;
use crate::store::Store;

/// Polls the network once and answers every request that arrived.
pub fn serve_while_busy(server: &mut ServerState, store: &mut Store) {
    let (Some(net), Some(run)) = (server.net.clone(), server.running_script.clone()) else {
        return;
    };
    net.borrow_mut().poll(Duration::ZERO);
    loop {
        let req = net.borrow_mut().next_request();
        let Some(req) = req else {
            break;
        };
        match req {
            Request::Connect(nc) => server.connect(nc),
            Request::Shutdown(_) => {
                // A signal: stop the script and the server, as SHUTDOWN
                // NOSAVE would.
                server.shutdown = true;
                run.killed.set(true);
            }
            Request::Disconnect { id } => {
                server.blocking.forget(id);
                server.forget_disconnected(id);
                if server.clients.remove(&id).is_none() && id == run.caller_id.get() {
                    // The script's caller went away: close it once the
                    // script returns.
                    run.caller_gone.set(true);
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
                for i in 0..batch.len() {
                    call(
                        server,
                        store,
                        &mut client,
                        batch.argv(i),
                        &mut out,
                        Caller::Busy,
                    );
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
        net.borrow_mut().deliver();
        if run.killed.get() {
            // The script stops now; later requests wait for it.
            break;
        }
    }
    net.borrow_mut().flush();
}
