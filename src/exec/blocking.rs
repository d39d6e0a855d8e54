//! Serving blocked clients (Redis's `blocked.c`): parking a client whose
//! command asked to block, waking waiters when a key they wait on is
//! written (`handleClientsBlockedOnKeys`), timeouts, and resuming the rest
//! of a served client's batch. The registry itself is
//! `server/blocking.rs`.
//!
//! A blocking handler records a [`BlockRequest`] in `Blocking::pending`
//! instead of replying. The batch runner then parks the client with the
//! rest of its batch and its output buffer. After every top-level command
//! (so never inside MULTI/EXEC or a script) the executor looks at the keys
//! the command wrote (`Store::touched`); a written key that now holds a
//! non-empty list serves its waiters in the order they blocked. A served,
//! timed-out or unblocked client gets its reply and the rest of its batch
//! runs.

use super::Executor;
use crate::net::link::ToConn;
use crate::net::reply::ReplyBuf;
use crate::net::request::Batch;
use crate::server::blocking::{BlockOp, BlockRequest, Parked, WaitKind};
use crate::server::pubsub;
use crate::store::list::End;
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

    /// Serves clients blocked on keys written since the last look, then
    /// resumes the batches of served clients; loops until nothing changes.
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
            if let Some((id, p)) = b.served.pop_front() {
                self.resume(id, p);
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

    /// Serves the clients waiting on `key` while it holds a non-empty list
    /// (Redis's serveClientsBlockedOnListKey).
    fn serve_key(&mut self, db: usize, key: &[u8]) {
        if matches!(
            self.store.peek(db, key).map(|e| &e.value),
            Some(Value::Stream(_))
        ) {
            self.serve_stream_key(db, key);
            return;
        }
        loop {
            let zset = match self.store.get(db, key).map(|e| &e.value) {
                Some(Value::List(l)) if !l.is_empty() => false,
                Some(Value::ZSet(z)) if !z.is_empty() => true,
                _ => return,
            };
            let kind = if zset { WaitKind::ZSet } else { WaitKind::List };
            let Some(id) = self.server.blocking.first_waiter(db, key, kind) else {
                return;
            };
            let Some(mut p) = self.server.blocking.unblock(id) else {
                return;
            };
            let resp3 = self.server.clients.get(&id).is_some_and(|c| c.resp3);
            let mut reply = ReplyBuf::new(&mut p.out, resp3);
            let result = if zset {
                crate::cmd::zset_blocking::serve_blocked(
                    &mut self.store,
                    db,
                    key,
                    &p.req.op,
                    &mut reply,
                )
            } else {
                crate::cmd::list::serve_blocked(&mut self.store, db, key, &p.req.op, &mut reply)
            };
            match result {
                Ok(()) => self.notify_served(db, key, &p.req.op),
                Err(e) => reply.error(&e),
            }
            self.server.blocking.finish(id, p);
        }
    }

    /// The keyspace events of a blocked pop or move just served from `key`,
    /// as Redis fires them when serving: the push on the destination (a
    /// move), the pop, `del` when the key emptied.
    fn notify_served(&mut self, db: usize, key: &[u8], op: &BlockOp) {
        if self.server.config.notify_keyspace_events.is_empty() {
            return;
        }
        let mut events: Vec<(u8, &str, &[u8])> = Vec::with_capacity(3);
        match op {
            BlockOp::Pop { end } | BlockOp::MPop { end, .. } => {
                events.push((b'l', crate::cmd::list_blocking::pop_event(*end), key));
            }
            BlockOp::Move { dst, from, to } => {
                let push = if *to == End::Left { "lpush" } else { "rpush" };
                events.push((b'l', push, dst));
                events.push((b'l', crate::cmd::list_blocking::pop_event(*from), key));
            }
            BlockOp::ZPop { max } | BlockOp::ZMPop { max, .. } => {
                events.push((b'z', if *max { "zpopmax" } else { "zpopmin" }, key));
            }
            BlockOp::XRead { .. } => return,
        }
        if self.store.peek(db, key).is_none() {
            events.push((b'g', "del", key));
        }
        let mut sink = Vec::new();
        for (class, event, k) in events {
            pubsub::notify(&mut self.server, None, &mut sink, class, event, db, k);
        }
    }

    /// Serves every XREAD waiting on the stream at `key` for entries past
    /// its ID; reading consumes nothing, so all of them may be served.
    fn serve_stream_key(&mut self, db: usize, key: &[u8]) {
        for id in self.server.blocking.waiters_of(db, key, WaitKind::Stream) {
            let resp3 = self.server.clients.get(&id).is_some_and(|c| c.resp3);
            let Some(p) = self.server.blocking.parked.get_mut(&id) else {
                continue;
            };
            let mark = p.out.len();
            let mut reply = ReplyBuf::new(&mut p.out, resp3);
            let op = p.req.op.clone();
            if !crate::cmd::stream_read::serve_blocked(&mut self.store, db, key, &op, &mut reply) {
                p.out.truncate(mark);
                continue;
            }
            if let Some(p) = self.server.blocking.unblock(id) {
                self.server.blocking.finish(id, p);
            }
        }
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
                ReplyBuf::new(&mut p.out, resp3).null_array();
                self.server.blocking.finish(id, p);
                any = true;
            }
        }
        if any {
            self.handle_ready();
            self.after_writes();
        }
    }

    /// Forgets a blocked client that disconnected; its keys keep their data.
    pub(super) fn forget_blocked(&mut self, id: u64) {
        self.server.blocking.forget(id);
    }
}
