//! Running one command, in Redis's `processCommand` order: lookup, arity,
//! authentication, the MULTI checks, then either queueing (inside MULTI) or
//! the handler. Replies go straight into the batch's output buffer.

use super::client::{Client, ReplyMode, ToConn};
use super::{clock, multi, Executor, ServerState};
use crate::cmd::table::{flag, CommandId};
use crate::cmd::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::net::request::Batch;
use crate::store::Store;

impl Executor {
    /// Runs every command of a batch for client `id` and sends the replies.
    pub(super) fn run_batch(&mut self, id: u64, batch: Batch, out: Vec<u8>, qbuf: usize) {
        self.run_batch_from(id, batch, out, qbuf, 0);
    }

    /// Runs a batch from command `start` on (a batch resumed after CLIENT
    /// PAUSE starts past the commands it already ran).
    pub(super) fn run_batch_from(
        &mut self,
        id: u64,
        batch: Batch,
        out: Vec<u8>,
        qbuf: usize,
        start: usize,
    ) {
        let Some(mut client) = self.server.clients.remove(&id) else {
            return;
        };
        client.qbuf = qbuf;
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
        for i in start..batch.len() {
            if self.paused_for(&batch, i) {
                let qbuf = client.qbuf;
                self.server.clients.insert(id, client);
                self.server.postponed.push(super::pause::Postponed {
                    id,
                    batch,
                    out,
                    qbuf,
                    next: i,
                });
                return;
            }
            self.call(&mut client, batch.argv(i), &mut out);
            if let Some(req) = self.server.blocking.pending.take() {
                self.park(client, batch, out, i, req);
                self.handle_ready();
                return;
            }
            self.handle_ready();
            if client.close_after_reply || self.server.shutdown {
                break;
            }
        }
        batch.clear();
        // Written (and with appendfsync always, fsynced) before any reply
        // acknowledges it.
        self.server.aof.flush();
        let close = client.close_after_reply;
        // A send fails only when the connection task is gone; its
        // Disconnect message will follow.
        let _ = client.tx.send(ToConn::Replies { batch, out, close });
        if close {
            self.store.watches.unwatch_all(id);
            self.server.pubsub.forget(id);
        } else {
            self.server.clients.insert(id, client);
        }
    }

    /// Runs one command and appends its reply to `out`.
    pub fn call(&mut self, client: &mut Client, argv: Argv<'_>, out: &mut Vec<u8>) {
        // One clock read serves the command's time and the start of its
        // duration (Redis's call() does the same with ustime()).
        let now_us = clock::now_us();
        let now = now_us / 1000;
        self.server.call_started_us = now_us;
        self.store.set_now(now);
        client.last_interaction_ms = now;
        let mark = out.len();
        if client.reply_mode == ReplyMode::Skip {
            client.reply_mode = ReplyMode::SkipThis;
        }
        let result = dispatch(&mut self.store, &mut self.server, client, argv, out);
        if let Err(e) = result {
            count_error(&mut self.server, &e);
            ReplyBuf::new(out, client.resp3).error(&e);
        }
        match client.reply_mode {
            ReplyMode::On => {}
            ReplyMode::Off => out.truncate(mark),
            ReplyMode::SkipThis => {
                out.truncate(mark);
                client.reply_mode = ReplyMode::On;
            }
            ReplyMode::Skip => {}
        }
    }
}

/// Checks a command and runs or queues it (Redis `processCommand`).
fn dispatch(
    store: &mut Store,
    server: &mut ServerState,
    client: &mut Client,
    argv: Argv<'_>,
    out: &mut Vec<u8>,
) -> CmdResult {
    let id = match check(server, client, argv) {
        Ok(id) => id,
        Err((id, e)) => return Err(reject(store, server, client, id, e)),
    };
    let cmd = &server.table.commands[id];
    client.last_cmd.clear();
    client.last_cmd.push_str(&cmd.name);
    if client.multi.is_some() && !multi::runs_in_multi(&cmd.name) {
        return multi::queue(store, server, client, id, argv, out);
    }
    invoke(store, server, client, id, argv, out)
}

/// The checks before a command may run or be queued, in Redis's order:
/// existence, arity, authentication, no_multi inside MULTI. A failure
/// carries the command when it was found (for EXEC's own rejection).
pub(crate) fn check(
    server: &ServerState,
    client: &Client,
    argv: Argv<'_>,
) -> Result<CommandId, (Option<CommandId>, Error)> {
    let table = &server.table;
    let name = argv.get(0);
    let Some(mut id) = table.lookup(name) else {
        let args: Vec<&[u8]> = argv.iter_from(1).collect();
        return Err((None, Error::unknown_command(name, &args)));
    };
    if !table.commands[id].subcommands.is_empty() && argv.len() >= 2 {
        match table.lookup_sub(id, argv.get(1)) {
            Some(sub) => id = sub,
            None => {
                let mut sub = String::from_utf8_lossy(argv.get(1)).into_owned();
                sub.truncate(128);
                let cmd = table.commands[id].name.to_uppercase();
                return Err((None, Error::UnknownSubcommand { sub, cmd }));
            }
        }
    }
    let cmd = &table.commands[id];
    if !cmd.arity_ok(argv.len()) || cmd.handler.is_none() {
        return Err((Some(id), Error::WrongArity(cmd.name.clone())));
    }
    if !client.authenticated && !cmd.has(flag::NO_AUTH) {
        return Err((Some(id), Error::NoAuth));
    }
    if client.multi.is_some() && cmd.has(flag::NO_MULTI) {
        return Err((Some(id), Error::NotAllowedInMulti));
    }
    // A RESP2 subscriber can only receive pub/sub-shaped replies.
    if client.kind == super::client::ClientKind::PubSub
        && !client.resp3
        && !matches!(
            cmd.name.as_str(),
            "ping"
                | "subscribe"
                | "ssubscribe"
                | "unsubscribe"
                | "sunsubscribe"
                | "psubscribe"
                | "punsubscribe"
                | "quit"
                | "reset"
        )
    {
        return Err((
            Some(id),
            Error::err_owned(format!(
                "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                cmd.name
            )),
        ));
    }
    Ok(id)
}

/// Redis `rejectCommand`: counts the rejection and flags an open
/// transaction so its EXEC fails. When EXEC itself is rejected, the
/// transaction is discarded and the error says so (execCommandAbort), even
/// outside MULTI.
fn reject(
    store: &mut Store,
    server: &mut ServerState,
    client: &mut Client,
    id: Option<CommandId>,
    e: Error,
) -> Error {
    server.stats.rejected_calls += 1;
    if let Some(id) = id {
        server.table.commands[id].rejected_calls += 1;
    }
    multi::flag_transaction(client);
    let is_exec = id.is_some_and(|id| server.table.commands[id].name == "exec");
    if !is_exec {
        return e;
    }
    multi::discard_transaction(client, store);
    let msg = e.message();
    let reason = msg.strip_prefix("ERR ").unwrap_or(&msg);
    Error::ExecAbortBecause(reason.to_string())
}

/// Runs the handler of the resolved command `id` and keeps its statistics
/// (Redis `call`). Used for direct commands and for each command of EXEC.
pub(crate) fn invoke(
    store: &mut Store,
    server: &mut ServerState,
    client: &mut Client,
    id: CommandId,
    argv: Argv<'_>,
    out: &mut Vec<u8>,
) -> CmdResult {
    let Some(handler) = server.table.commands[id].handler else {
        return Err(Error::WrongArity(server.table.commands[id].name.clone()));
    };
    // A top-level command started when call() read the clock; commands
    // inside EXEC or a script read it themselves.
    let started_us = if server.aof.depth == 0 {
        server.call_started_us
    } else {
        clock::now_us()
    };
    let resp3 = client.resp3;
    let dirty = store.stats.dirty;
    let mark = out.len();
    store.log_expired = server.aof.on;
    server.aof.depth += 1;
    let result = {
        let mut ctx = Ctx {
            store,
            client,
            reply: ReplyBuf::new(out, resp3),
            server,
        };
        handler(&mut ctx, argv)
    };
    if server.aof.on {
        server.aof.feed_expired(store);
        let reply = out.get(mark..).unwrap_or_default();
        propagate(store, server, client.db, id, argv, dirty, reply);
    }
    server.aof.depth -= 1;
    if server.aof.on {
        server.aof.end_call();
    }
    let cmd = &mut server.table.commands[id];
    cmd.calls += 1;
    cmd.usec += clock::now_us().saturating_sub(started_us);
    server.stats.total_commands_processed += 1;
    if result.is_err() {
        server.stats.failed_calls += 1;
        cmd.failed_calls += 1;
    }
    result
}

/// Appends a command that wrote (it has the WRITE flag and changed the dirty
/// counter, Redis's rule) to the AOF. Scripts call this for each command
/// they run.
pub(crate) fn propagate(
    store: &Store,
    server: &mut ServerState,
    db: usize,
    id: CommandId,
    argv: Argv<'_>,
    dirty_before: u64,
    reply: &[u8],
) {
    let cmd = &server.table.commands[id];
    if store.stats.dirty == dirty_before || !cmd.has(flag::WRITE) {
        return;
    }
    // Subcommands are named "parent|sub"; only top-level names are rewritten.
    server.aof.feed(store, db, &cmd.name, argv, reply);
}

/// Runs one command read from the AOF at start-up, as a client would.
pub(crate) fn replay(
    store: &mut Store,
    server: &mut ServerState,
    client: &mut Client,
    argv: Argv<'_>,
    out: &mut Vec<u8>,
) -> CmdResult {
    server.call_started_us = clock::now_us();
    dispatch(store, server, client, argv, out)
}

/// Counts an error reply by its prefix (INFO errorstats).
pub(crate) fn count_error(server: &mut ServerState, e: &Error) {
    let msg = e.message();
    let prefix = msg.split(' ').next().unwrap_or("ERR").to_string();
    *server.stats.errors.entry(prefix).or_insert(0) += 1;
}
