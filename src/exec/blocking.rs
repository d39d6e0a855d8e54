//! Serving blocked clients (Redis's `blocked.c`): parking a client whose command asked to block, running that command
//! again when a key it waits on is written, timeouts, and resuming the rest
//! of a served client's batch. The registry itself is `server/blocking.rs`;
//! what a blocking command does lives in its family file only.
//!
//! A blocking handler records a [`BlockRequest`] in `Blocking::pending`
//! instead of replying. The batch runner then parks the client with the
//! rest of its batch and its output buffer. After every top-level command
//! (so never inside MULTI/EXEC or a script) the executor looks at the keys
//! the command wrote (`Store::touched`); a written key that now holds what
//! its waiters want runs their commands again through `call()`, longest
//! waiter first, taking from that key alone, as Redis 7.0 serves it. A
//! served, timed-out or unblocked client gets its reply and the rest of
//! its batch runs before the event loop sleeps, as Redis 7.0's
//! processUnblockedClients.

use super::Executor;
use crate::net::link::ToConn;
use crate::net::reply::ReplyBuf;
use crate::net::request::Batch;
use crate::server::blocking::{BlockRequest, Parked, WaitKind};
use crate::server::call::{call, Caller};
use crate::store::value::Value;
use crate::util::clock;

impl Executor {
    /// Parks `client` (whose command at `next` asked to block) until served,
    /// timed out or unblocked. Replies already made are sent now, as Redis
    /// would have written them before blocking.
    pub(super) fn park(
        &mut self,
        client: crate::server::client::Client,
        batch: Batch,
        mut out: Vec<u8>,
        next: usize,
        req: BlockRequest,
    ) {
        if !out.is_empty() {
            let _ = client.tx.send(ToConn::Push(std::mem::take(&mut out)));
        }
        let id = client.id;
        let b = &mut self.server.blocking;
        for k in &req.keys {
            b.waiters
                .entry((req.db, k.clone()))
                .or_default()
                .push_back(id);
        }
        if req.deadline != 0 {
            b.deadlines.insert((req.deadline, id));
        }
        b.parked.insert(
            id,
            Parked {
                req,
                batch,
                out,
                next,
            },
        );
        self.store.track_blocked = true;
        self.server.clients.insert(id, client);
    }

    /// Serves clients blocked on keys written since the last look; loops
    /// until nothing changes. Their batches continue before the loop sleeps
    /// ([`Executor::resume_served`]).
    /// Runs after each top-level command (Redis's handleClientsBlockedOnKeys
    /// in processCommand).
    pub(super) fn handle_ready(&mut self) {
        if self.server.blocking.serving {
            return;
        }
        if self.server.blocking.parked.is_empty() && self.server.blocking.served.is_empty() {
            self.server.blocking.touched_seen = self.store.touched.len();
            self.server.blocking.dbs_seen = self.store.touched_dbs.len();
            self.store.track_blocked = false;
            return;
        }
        self.server.blocking.serving = true;
        // Someone else may have drained the lists since the last look.
        let b = &mut self.server.blocking;
        if b.touched_seen > self.store.touched.len() {
            b.touched_seen = 0;
        }
        if b.dbs_seen > self.store.touched_dbs.len() {
            b.dbs_seen = 0;
        }
        loop {
            let b = &mut self.server.blocking;
            if b.touched_seen < self.store.touched.len() {
                let (db, key) = self.store.touched[b.touched_seen].clone();
                b.touched_seen += 1;
                self.serve_key(db, &key);
                continue;
            }
            if b.dbs_seen < self.store.touched_dbs.len() {
                let db = self.store.touched_dbs[b.dbs_seen];
                b.dbs_seen += 1;
                let keys: Vec<Vec<u8>> = b
                    .waiters
                    .keys()
                    .filter(|(d, _)| *d == db)
                    .map(|(_, k)| k.clone())
                    .collect();
                for k in keys {
                    self.serve_key(db, &k);
                }
                continue;
            }
            break;
        }
        let b = &mut self.server.blocking;
        b.serving = false;
        if b.parked.is_empty() {
            self.store.track_blocked = false;
        }
    }

    /// Serves the clients waiting on `key`, each taking from that key alone.
    fn serve_key(&mut self, db: usize, key: &[u8]) {
        self.server.blocking.ready_key = Some(key.to_vec());
        self.serve_waiters_of(db, key);
        self.server.blocking.ready_key = None;
    }

    /// Serves the clients waiting on `key` in the order they blocked, by
    /// running their commands again (Redis 7.2's design, with 7.0's
    /// outcome: each takes from `key` alone): while it holds a
    /// non-empty list or sorted set, the longest waiter for that type; for
    /// a stream, every reader (reading consumes nothing). Group readers of
    /// a stream that was deleted or replaced are woken to learn it.
    fn serve_waiters_of(&mut self, db: usize, key: &[u8]) {
        // Redis looks the key up as a command would: one found expired
        // goes now, its DEL propagated, and its waiters stay blocked.
        self.store.reap_expired(db, key);
        if self.server.stream_on() {
            self.server.feed_expired(&mut self.store);
        }
        let kind = match self.store.peek(db, key).and_then(|e| e.object()) {
            Some(Value::List(_)) => Some(WaitKind::List),
            Some(Value::ZSet(_)) => Some(WaitKind::ZSet),
            Some(Value::Stream(_)) => Some(WaitKind::Stream),
            _ => None,
        };
        if kind == Some(WaitKind::Stream) {
            let kinds = [WaitKind::Stream, WaitKind::StreamGroup];
            for id in self.server.blocking.waiters_of(db, key, &kinds) {
                self.rerun(id);
            }
            return;
        }
        for id in self
            .server
            .blocking
            .waiters_of(db, key, &[WaitKind::StreamGroup])
        {
            self.rerun(id);
        }
        let Some(kind) = kind else {
            return;
        };
        loop {
            let ready = match self.store.peek(db, key).and_then(|e| e.object()) {
                Some(Value::List(l)) => kind == WaitKind::List && !l.is_empty(),
                Some(Value::ZSet(z)) => kind == WaitKind::ZSet && !z.is_empty(),
                _ => false,
            };
            let waiter = self.server.blocking.first_waiter(db, key, kind);
            let (true, Some(id)) = (ready, waiter) else {
                return;
            };
            if !self.rerun(id) {
                // Still blocked with the key non-empty: nothing will change
                // until another write.
                return;
            }
        }
    }

    /// Runs parked client `id`'s blocking command again, through the one
    /// command path, as if it had just arrived (its keyspace events,
    /// propagation and statistics are a plain command's). Served, it leaves
    /// the wait lists and the rest of its batch runs after the current
    /// command; blocked again, it keeps its place and deadline. Returns
    /// whether it was served.
    pub(super) fn rerun(&mut self, id: u64) -> bool {
        let Some(mut p) = self.server.blocking.take_parked(id) else {
            return false;
        };
        let Some(mut client) = self.server.clients.remove(&id) else {
            self.server.blocking.repark(id, p);
            return false;
        };
        let mut out = std::mem::take(&mut p.out);
        client.reprocessing = true;
        call(
            &mut self.server,
            &mut self.store,
            &mut client,
            p.command(),
            &mut out,
            Caller::Client,
        );
        client.reprocessing = false;
        p.out = out;
        self.server.clients.insert(id, client);
        if self.server.blocking.pending.take().is_some() {
            self.server.blocking.repark(id, p);
            return false;
        }
        self.server.blocking.leave_waits(id, &p.req);
        self.server.blocking.finish(id, p);
        true
    }

    /// Continues the batches of the clients served, timed out or unblocked
    /// since the last look, in that order; what they run may serve others,
    /// who continue in turn. As Redis 7.0's processUnblockedClients in
    /// beforeSleep: a served client's next commands run after every request
    /// read in this round, not between the commands of the client whose
    /// write served it. Returns whether any continued.
    pub(super) fn resume_served(&mut self) -> bool {
        let mut any = false;
        while let Some((id, p)) = self.server.blocking.served.pop_front() {
            self.resume(id, p);
            any = true;
        }
        any
    }

    /// Continues a served client's batch after its blocking command.
    fn resume(&mut self, id: u64, p: Parked) {
        let Some(client) = self.server.clients.remove(&id) else {
            return;
        };
        self.run_from(client, p.batch, p.out, p.next + 1);
    }

    /// Answers clients whose timeout passed (null array, as Redis's
    /// replyToBlockedClientTimedOut) and resumes them.
    pub(super) fn expire_blocked(&mut self) {
        let now = clock::now_ms();
        let mut any = false;
        while let Some(&(t, id)) = self.server.blocking.deadlines.first() {
            if t > now {
                break;
            }
            self.server.blocking.deadlines.pop_first();
            if let Some(mut p) = self.server.blocking.unblock(id) {
                let resp3 = self.server.clients.get(&id).is_some_and(|c| c.resp3);
                let mut reply = ReplyBuf::new(&mut p.out, resp3);
                match self.server.clients.get(&id) {
                    Some(c) if p.req.kind == WaitKind::Replicas => {
                        reply.int(crate::cmd::repl::wait_timed_out(&self.server, c));
                    }
                    _ => reply.null_array(),
                }
                self.server.blocking.finish(id, p);
                any = true;
            }
        }
        if any {
            self.handle_ready();
            self.after_writes();
        }
    }

    /// clusterRedirectBlockedClientIfNeeded: a client blocked on keys of a
    /// slot this node no longer serves (and does not import) gets -MOVED,
    /// or -CLUSTERDOWN when the slot is unserved or the cluster failed.
    pub(super) fn cluster_redirect_blocked(&mut self) {
        use crate::server::cluster::{key_hash_slot, route::Redirect, Health};
        let Some(c) = self.server.cluster.as_deref() else {
            return;
        };
        let mut redirect = Vec::new();
        for (&id, p) in &self.server.blocking.parked {
            if matches!(p.req.kind, WaitKind::Replicas | WaitKind::Shutdown) {
                continue;
            }
            if c.state == Health::Fail {
                redirect.push((id, Redirect::DownState));
                continue;
            }
            let Some(key) = p.req.keys.first() else {
                continue;
            };
            let slot = key_hash_slot(key);
            let mut owner = c.slot_owner(usize::from(slot));
            let me = c.me();
            let readonly = self
                .server
                .clients
                .get(&id)
                .is_some_and(|cl| cl.cluster_readonly);
            let write = self
                .server
                .table
                .lookup(p.command().get(0))
                .is_some_and(|cmd| {
                    self.server.table.commands[cmd].has(crate::server::table::flag::WRITE)
                });
            if readonly && !write && me.is_replica() && me.master == owner {
                owner = Some(c.myself);
            }
            if owner != Some(c.myself) && !c.importing_from.contains_key(&slot) {
                redirect.push((
                    id,
                    match owner {
                        None => Redirect::DownUnbound,
                        Some(n) => Redirect::Moved(slot, n),
                    },
                ));
            }
        }
        for (id, r) in redirect {
            let Some(c) = self.server.cluster.as_deref() else {
                return;
            };
            let use_pport = self
                .server
                .clients
                .get(&id)
                .is_some_and(|cl| self.server.use_pport(cl));
            let e = r.error(c, use_pport);
            if let Some(mut p) = self.server.blocking.unblock(id) {
                let resp3 = self.server.clients.get(&id).is_some_and(|c| c.resp3);
                ReplyBuf::new(&mut p.out, resp3).error(&e);
                crate::server::call::count_error(&mut self.server, &e);
                self.server.blocking.finish(id, p);
            }
        }
    }

    /// Forgets a blocked client that disconnected; its keys keep their data.
    pub(super) fn forget_blocked(&mut self, id: u64) {
        self.server.blocking.forget(id);
    }
}
