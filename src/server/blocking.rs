//! The registry of blocked clients (Redis's `blocked.c`): BLPOP, BRPOP,
//! BLMOVE, BRPOPLPUSH, BLMPOP, BZPOP*, BZMPOP and XREAD[GROUP] BLOCK park their
//! client here when every key is empty: the keys it waits on, in order,
//! its deadline and the rest of its batch. Serving them, by running their
//! command again when a key is ready, is the engine's work
//! (`exec/blocking.rs`).

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::net::request::{Argv, Batch, OwnedArgv};

/// The type of value a blocked command waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// A non-empty list.
    List,
    /// A non-empty sorted set.
    ZSet,
    /// A stream with new entries.
    Stream,
    /// A stream with entries new to a consumer group, or the loss of the
    /// stream or the group (XREADGROUP is then woken with an error).
    StreamGroup,
    /// Acknowledgements from replicas (WAIT); no keys.
    Replicas,
    /// The end of a shutdown waiting for replicas (SHUTDOWN); no keys,
    /// no timeout of its own.
    Shutdown,
}

/// A handler's request to block the calling client.
#[derive(Debug, Clone)]
pub struct BlockRequest {
    /// Database of the keys.
    pub db: usize,
    /// Keys waited on, without duplicates, in command order.
    pub keys: Vec<Vec<u8>>,
    /// Absolute deadline in Unix ms; 0 waits forever.
    pub deadline: u64,
    /// What the command waits for.
    pub kind: WaitKind,
    /// The command to run again when a key is ready, when it is not the
    /// one the client sent (XREAD with `$` resolved to the IDs it waits
    /// after).
    pub rerun: Option<OwnedArgv>,
}

/// A parked client's unfinished batch: its blocking command runs again
/// when a key it waits on is ready, then the rest of the batch.
pub struct Parked {
    pub(crate) req: BlockRequest,
    pub(crate) batch: Batch,
    /// Output buffer the blocked command's reply goes to.
    pub out: Vec<u8>,
    /// Index of the blocking command in `batch`.
    pub(crate) next: usize,
}

impl Parked {
    /// The command to run again.
    pub fn command(&self) -> Argv<'_> {
        match &self.req.rerun {
            Some(argv) => argv.argv(),
            None => self.batch.argv(self.next),
        }
    }
}

/// Every blocked client; lives in `ServerState::blocking`.
#[derive(Default)]
pub struct Blocking {
    /// Set by a blocking handler; taken by the batch runner right after.
    pub pending: Option<BlockRequest>,
    pub(crate) parked: HashMap<u64, Parked>,
    pub(crate) waiters: HashMap<(usize, Vec<u8>), VecDeque<u64>>,
    pub(crate) deadlines: BTreeSet<(u64, u64)>,
    /// Clients whose reply is written and whose batch must continue.
    pub(crate) served: VecDeque<(u64, Parked)>,
    /// How far `Store::touched` / `touched_dbs` have been looked at.
    pub(crate) touched_seen: usize,
    pub(crate) dbs_seen: usize,
    pub(crate) serving: bool,
    /// The key whose waiters are being served: a served command takes
    /// from it alone, as Redis 7.0 serves each ready key's waiters from
    /// that key (serveClientsBlockedOnListKey and its siblings).
    pub ready_key: Option<Vec<u8>>,
}

impl Blocking {
    /// Whether a blocking command may take from `key` now: at once, from
    /// any of its keys; served after blocking, only from the ready key.
    pub fn may_serve_from(&self, reprocessing: bool, key: &[u8]) -> bool {
        !reprocessing || self.ready_key.as_deref().is_none_or(|k| k == key)
    }

    /// Clients blocked now (INFO `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        self.parked.len()
    }

    /// Blocked clients that have a timeout (INFO
    /// `clients_in_timeout_table`).
    pub fn clients_with_timeout(&self) -> usize {
        self.deadlines.len()
    }

    /// Distinct keys clients are blocked on (INFO `total_blocking_keys`).
    pub fn blocking_keys(&self) -> usize {
        self.waiters.len()
    }

    /// True when client `id` is blocked (CLIENT LIST flag `b`).
    pub fn is_blocked(&self, id: u64) -> bool {
        self.parked.contains_key(&id)
    }

    /// Forgets that the touched lists were read (they were just cleared).
    pub fn reset_touched(&mut self) {
        self.touched_seen = 0;
        self.dbs_seen = 0;
    }

    /// Removes client `id` from every wait list; returns its parked state.
    pub fn unblock(&mut self, id: u64) -> Option<Parked> {
        let p = self.parked.remove(&id)?;
        self.leave_waits(id, &p.req);
        Some(p)
    }

    /// Takes client `id`'s parked state out while its command runs again,
    /// leaving its place in the wait lists; [`Blocking::repark`] puts it
    /// back, [`Blocking::leave_waits`] gives the place up.
    pub fn take_parked(&mut self, id: u64) -> Option<Parked> {
        self.parked.remove(&id)
    }

    /// Puts back what [`Blocking::take_parked`] took: still blocked, in
    /// the same place.
    pub fn repark(&mut self, id: u64, p: Parked) {
        self.parked.insert(id, p);
    }

    /// Removes client `id`, blocked with `req`, from the wait lists.
    pub fn leave_waits(&mut self, id: u64, req: &BlockRequest) {
        for k in &req.keys {
            let wk = (req.db, k.clone());
            if let Some(q) = self.waiters.get_mut(&wk) {
                q.retain(|&c| c != id);
                if q.is_empty() {
                    self.waiters.remove(&wk);
                }
            }
        }
        if req.deadline != 0 {
            self.deadlines.remove(&(req.deadline, id));
        }
    }

    /// Forgets client `id` entirely (disconnect, CLIENT KILL): it leaves
    /// every wait list and any pending resumption.
    pub fn forget(&mut self, id: u64) {
        drop(self.unblock(id));
        self.served.retain(|(c, _)| *c != id);
    }

    /// Queues an unblocked client whose reply is in `p.out` so the rest of
    /// its batch runs after the current command.
    pub fn finish(&mut self, id: u64, p: Parked) {
        self.served.push_back((id, p));
    }

    /// The nearest timeout, in Unix ms.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadlines.first().map(|&(t, _)| t)
    }

    /// The longest-waiting client on `key` whose command wants the key's
    /// type (a list write never wakes a sorted-set waiter, and back).
    pub(crate) fn first_waiter(&self, db: usize, key: &[u8], kind: WaitKind) -> Option<u64> {
        // Allocation only while clients are blocked.
        self.waiters.get(&(db, key.to_vec())).and_then(|q| {
            q.iter()
                .copied()
                .find(|id| self.parked.get(id).is_some_and(|p| p.req.kind == kind))
        })
    }

    /// Every client waiting on `key` for one of `kinds`, longest-waiting
    /// first.
    pub(crate) fn waiters_of(&self, db: usize, key: &[u8], kinds: &[WaitKind]) -> Vec<u64> {
        self.waiters
            .get(&(db, key.to_vec()))
            .map(|q| {
                q.iter()
                    .copied()
                    .filter(|id| {
                        self.parked
                            .get(id)
                            .is_some_and(|p| kinds.contains(&p.req.kind))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}
