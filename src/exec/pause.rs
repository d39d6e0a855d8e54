//! Holding and releasing batches under CLIENT PAUSE (Redis's
//! `pauseClients` and BLOCKED_POSTPONE); the pause itself is
//! `server/pause.rs`.

use super::Executor;
use crate::net::request::Batch;
use crate::server::client::{Client, ClientKind};
use crate::util::clock;

impl Executor {
    /// Runs the held batches once the pause is over.
    pub(super) fn resume_postponed(&mut self) {
        if self.server.postponed.is_empty() || self.server.pause.active(clock::now_ms()) {
            return;
        }
        let held = std::mem::take(&mut self.server.postponed);
        for p in held {
            self.run_batch_from(p.id, p.batch, p.out, p.next);
        }
    }

    /// True when command `i` of `batch` must wait for the pause to end; an
    /// EXEC waits when what it would run does (Redis's processCommand).
    /// Replicas are never paused: their acknowledgements must count while
    /// a pause (or a shutdown's wait for them) lasts.
    pub(super) fn paused_for(&self, client: &Client, batch: &Batch, i: usize) -> bool {
        let pause = self.server.pause;
        let now = clock::now_ms();
        if !pause.active(now) || client.kind == ClientKind::Replica {
            return false;
        }
        let argv = batch.argv(i);
        let table = &self.server.table;
        let Some(id) = table.resolve(argv.get(0), argv.try_get(1)) else {
            return false;
        };
        let cmd = &table.commands[id];
        let mut flags = crate::server::call::command_flags(&self.server, id, argv);
        if cmd.name == "exec" {
            flags |= client.multi.as_ref().map_or(0, |m| m.flags);
        }
        pause.holds(flags, now)
    }
}
