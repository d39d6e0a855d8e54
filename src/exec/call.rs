//! Running one command, in Redis's `processCommand` order: lookup, arity,
//! authentication, then the handler. Replies go straight into the batch's
//! output buffer.

use super::client::{Client, ReplyMode, ToConn};
use super::{clock, Executor};
use crate::cmd::table::flag;
use crate::cmd::{Argv, Ctx};
use crate::error::Error;
use crate::net::reply::ReplyBuf;
use crate::net::request::Batch;

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
        mut batch: Batch,
        mut out: Vec<u8>,
        qbuf: usize,
        start: usize,
    ) {
        let Some(mut client) = self.server.clients.remove(&id) else {
            return;
        };
        client.qbuf = qbuf;
        for i in start..batch.len() {
            if self.paused_for(&batch, i) {
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
            if client.close_after_reply || self.server.shutdown {
                break;
            }
        }
        self.after_writes();
        batch.clear();
        let close = client.close_after_reply;
        // A send fails only when the connection task is gone; its
        // Disconnect message will follow.
        let _ = client.tx.send(ToConn::Replies { batch, out, close });
        if !close {
            self.server.clients.insert(id, client);
        }
    }

    /// Runs one command and appends its reply to `out`.
    pub fn call(&mut self, client: &mut Client, argv: Argv<'_>, out: &mut Vec<u8>) {
        let now = clock::now_ms();
        self.store.set_now(now);
        client.last_interaction_ms = now;
        let mark = out.len();
        if client.reply_mode == ReplyMode::Skip {
            client.reply_mode = ReplyMode::SkipThis;
        }
        let resp3 = client.resp3;
        let result = self.dispatch(client, argv, out, resp3);
        if let Err(e) = result {
            self.count_error(&e);
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

    fn dispatch(
        &mut self,
        client: &mut Client,
        argv: Argv<'_>,
        out: &mut Vec<u8>,
        resp3: bool,
    ) -> Result<(), Error> {
        let table = &self.server.table;
        let name = argv.get(0);
        let Some(mut id) = table.lookup(name) else {
            self.server.stats.rejected_calls += 1;
            let args: Vec<&[u8]> = argv.iter_from(1).collect();
            return Err(Error::unknown_command(name, &args));
        };
        if !table.commands[id].subcommands.is_empty() && argv.len() >= 2 {
            match table.lookup_sub(id, argv.get(1)) {
                Some(sub) => id = sub,
                None => {
                    self.server.stats.rejected_calls += 1;
                    let mut sub = String::from_utf8_lossy(argv.get(1)).into_owned();
                    sub.truncate(128);
                    return Err(Error::UnknownSubcommand {
                        sub,
                        cmd: table.commands[id].name.to_uppercase(),
                    });
                }
            }
        }
        let cmd = &table.commands[id];
        if !cmd.arity_ok(argv.len()) || cmd.handler.is_none() {
            self.server.stats.rejected_calls += 1;
            return Err(Error::WrongArity(cmd.name.clone()));
        }
        if !client.authenticated && !cmd.has(flag::NO_AUTH) {
            self.server.stats.rejected_calls += 1;
            return Err(Error::NoAuth);
        }
        // invariant: handler checked for None just above.
        let handler = cmd.handler.expect("checked above");
        client.last_cmd.clear();
        client.last_cmd.push_str(&cmd.name);
        let started = std::time::Instant::now();
        let result = {
            let mut ctx = Ctx {
                store: &mut self.store,
                client,
                reply: ReplyBuf::new(out, resp3),
                server: &mut self.server,
            };
            handler(&mut ctx, argv)
        };
        let cmd = &mut self.server.table.commands[id];
        cmd.calls += 1;
        cmd.usec += started.elapsed().as_micros() as u64;
        self.server.stats.total_commands_processed += 1;
        if result.is_err() {
            self.server.stats.failed_calls += 1;
        }
        result
    }

    fn count_error(&mut self, e: &Error) {
        let msg = e.message();
        let prefix = msg.split(' ').next().unwrap_or("ERR").to_string();
        *self.server.stats.errors.entry(prefix).or_insert(0) += 1;
    }
}
