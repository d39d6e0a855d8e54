//! Running a client's batch: one command after another through
//! [`call`](crate::server::call), parking the client when a command blocks
//! or a pause holds it, serving blocked clients after each command, and
//! sending the replies (Redis's `processInputBuffer` → `processCommand`).

use super::Executor;
use crate::net::request::{Argv, Batch};
use crate::server::call::{call, Caller};
use crate::server::client::Client;

impl Executor {
    /// Runs every command of a batch for client `id` and sends the replies.
    pub(super) fn run_batch(&mut self, id: u64, batch: Batch, out: Vec<u8>) {
        self.run_batch_from(id, batch, out, 0);
    }

    /// Runs a batch from command `start` on (a batch resumed after CLIENT
    /// PAUSE starts past the commands it already ran).
    pub(super) fn run_batch_from(&mut self, id: u64, batch: Batch, out: Vec<u8>, start: usize) {
        let Some(client) = self.server.clients.remove(&id) else {
            return;
        };
        self.run_from(client, batch, out, start);
        self.after_writes();
    }

    /// Runs the commands of `batch` from index `start` on, then sends the
    /// replies; a command that blocks parks the client with the rest of
    /// its batch instead (see `blocking.rs`). Blocked clients whose keys
    /// were written are served after each command.
    pub(super) fn run_from(
        &mut self,
        mut client: Client,
        mut batch: Batch,
        mut out: Vec<u8>,
        start: usize,
    ) {
        let id = client.id;
        if batch.len().saturating_sub(start) > 1 {
            // Keys are usually argv[1]; a wrong guess only wastes a hint.
            let keys = (start..batch.len()).filter_map(|i| batch.argv(i).try_get(1));
            self.store.prefetch(client.db, keys);
        }
        client.batch_input = batch.input.len();
        for i in start..batch.len() {
            if self.paused_for(&client, &batch, i) {
                // Held as Redis's BLOCKED_POSTPONE: a blocked client running
                // this command (CLIENT LIST `b` and `cmd=`, INFO).
                let argv = batch.argv(i);
                if let Some(cid) = self.server.table.resolve(argv.get(0), argv.try_get(1)) {
                    client.last_cmd.clear();
                    client
                        .last_cmd
                        .push_str(&self.server.table.commands[cid].name);
                }
                client.last_interaction_ms = crate::util::clock::real_now_ms();
                client.batch_input = 0;
                self.server.clients.insert(id, client);
                self.server.postponed.push(crate::server::pause::Postponed {
                    id,
                    batch,
                    out,
                    next: i,
                });
                return;
            }
            // Redis's processCommand evicts clients before a command runs,
            // this one included.
            if self.server.clients_over_limit()
                && self.server.evict_clients(&self.store, Some(&client))
            {
                out.clear();
                client.close_after_reply = true;
                break;
            }
            self.call(&mut client, batch.argv(i), &mut out);
            if client.kind == crate::server::client::ClientKind::Master {
                self.applied_from_master(batch.argv(i), client.db, client.multi.is_some());
            }
            self.server
                .update_client_mem(&client, &self.store, out.len());
            if self.output_limit_reached(&client, out.len()) {
                // Closed with what it had queued; nothing more is sent.
                out.clear();
                client.close_after_reply = true;
                break;
            }
            if let Some(req) = self.server.blocking.pending.take() {
                client.batch_input = 0;
                self.park(client, batch, out, i, req);
                self.handle_ready();
                return;
            }
            self.handle_ready();
            if client.close_after_reply || self.server.shutdown {
                break;
            }
        }
        client.batch_input = 0;
        batch.clear();
        // Written (and with appendfsync always, fsynced) before any reply
        // acknowledges it.
        self.server.flush_stream();
        let close = client.close_after_reply;
        // The replies leave for the connection, which counts them now.
        self.server.update_client_mem(&client, &self.store, 0);
        self.server.send_replies(&client, batch, out);
        if close {
            self.store.watches.unwatch_all(id);
            self.server.forget_disconnected(id);
        } else {
            self.server.clients.insert(id, client);
        }
    }

    /// Whether `client`'s output (what the connection still holds plus
    /// `replies` bytes of this batch) broke its class's limits; then it is
    /// closed. Free when the class has no limit (the normal default).
    #[inline]
    fn output_limit_reached(&self, client: &Client, replies: usize) -> bool {
        use crate::server::obuf;
        let class = obuf::class_of(client);
        let limits = &self.server.obuf_limits[class as usize];
        if limits.is_off() {
            return false;
        }
        let pending = obuf::counted(&client.bufs, client.bufs.pending.get() + replies);
        if !limits.reached(&client.bufs, pending) {
            return false;
        }
        obuf::close(client, class);
        true
    }

    /// Runs one client command and appends its reply to `out`.
    pub fn call(&mut self, client: &mut Client, argv: Argv<'_>, out: &mut Vec<u8>) {
        call(
            &mut self.server,
            &mut self.store,
            client,
            argv,
            out,
            Caller::Client,
        );
    }
}
