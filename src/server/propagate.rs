//! The propagation stream (Redis's `alsoPropagate`, `propagatePendingCommands`
//! and `rewriteClientCommandVector`): what each command changed, said as
//! commands that replay deterministically. A handler states its own
//! effects ([`Ctx::propagate_as`], [`Ctx::also_propagate`]); the command
//! path collects them for the outermost command and hands them on when it
//! returns, wrapped in MULTI/EXEC when there are several (a transaction's,
//! a script's, SPOP's batches). The AOF writes what it is given.
//!
//! [`Ctx::propagate_as`]: super::Ctx::propagate_as
//! [`Ctx::also_propagate`]: super::Ctx::also_propagate

use crate::net::request::OwnedArgv;

/// The commands waiting to be propagated and the running command's own
/// statement about itself.
#[derive(Default)]
pub struct Propagation {
    /// Someone reads the stream (the AOF is on). Off, a handler's
    /// statements cost one branch and are dropped.
    pub on: bool,
    /// Nesting of the command path: EXEC and scripts run commands at
    /// depth 2; what was collected goes out when it is back at 0.
    pub depth: u32,
    /// Commands collected for the outermost command, with their database.
    pub pending: Vec<(usize, OwnedArgv)>,
    /// The running command propagates as this instead of as called.
    pub rewritten: Option<OwnedArgv>,
    /// The running command propagates nothing itself (its handler said
    /// everything with `also_propagate`).
    pub prevented: bool,
    /// The running command propagates even if it changed nothing
    /// (Redis's forceCommandPropagation: FLUSHALL of an empty server).
    pub forced: bool,
    /// Indexes of `pending` that go to replicas only, not the AOF
    /// (PROPAGATE_REPL: PUBLISH).
    pub repl_only: Vec<usize>,
    /// Indexes of `pending` that go to the AOF only (a script's
    /// `redis.set_repl(redis.REPL_AOF)`).
    pub aof_only: Vec<usize>,
    /// Where a running script's commands do not go (`redis.set_repl`):
    /// [`targets`] bits; none outside scripts.
    pub script_excluded: u8,
}

/// `redis.set_repl` targets (Redis's PROPAGATE_AOF and PROPAGATE_REPL).
pub mod targets {
    /// The AOF.
    pub const AOF: u8 = 1;
    /// The replicas.
    pub const REPLICAS: u8 = 2;
    /// Both.
    pub const ALL: u8 = AOF | REPLICAS;
}

impl Propagation {
    /// What the running command said about itself, taken so a nested
    /// command starts clean; [`Propagation::restore`] puts it back.
    pub fn take_own(&mut self) -> (Option<OwnedArgv>, bool) {
        (self.rewritten.take(), std::mem::take(&mut self.prevented))
    }

    /// `args` reaches the AOF in database `db` before the running command
    /// (Redis's `alsoPropagate`); for handlers holding the keyspace
    /// borrowed, which cannot reach [`super::Ctx::also_propagate`].
    pub fn also(&mut self, db: usize, args: &[&[u8]]) {
        if self.on {
            self.pending.push((db, argv_of(args)));
        }
    }

    /// `args` reaches the replicas, not the AOF, in database `db`, after
    /// what the running command propagated so far (Redis's alsoPropagate
    /// with PROPAGATE_REPL).
    pub fn also_to_replicas(&mut self, db: usize, args: &[&[u8]]) {
        if self.on {
            self.repl_only.push(self.pending.len());
            self.pending.push((db, argv_of(args)));
        }
    }

    /// The keys the running command found expired join what it
    /// propagates, ahead of it (Redis's propagateDeletion through
    /// alsoPropagate): with the command they make a unit of several, so
    /// they go out wrapped in MULTI/EXEC together. Whatever `redis.set_repl`
    /// says, they reach the AOF and the replicas alike.
    pub fn pend_expired(&mut self, store: &mut crate::store::Store) {
        let verb = crate::store::lazyfree::deletion_verb(lazy_expire());
        for (db, key) in store.expired_log.drain(..) {
            self.pending.push((db, argv_of(&[verb, &key])));
        }
    }

    /// Puts back what [`Propagation::take_own`] took.
    pub fn restore(&mut self, own: (Option<OwnedArgv>, bool)) {
        self.rewritten = own.0;
        self.prevented = own.1;
    }
}

/// Hands `ops` to `feed`, less those at the indexes in `skip` (copied only
/// then); nothing when none is left.
fn feed_except(
    ops: &[(usize, OwnedArgv)],
    skip: &[usize],
    mut feed: impl FnMut(&[(usize, OwnedArgv)]),
) {
    if skip.is_empty() {
        return feed(ops);
    }
    let kept: Vec<(usize, OwnedArgv)> = ops
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(_, (db, argv))| (*db, argv.clone()))
        .collect();
    if !kept.is_empty() {
        feed(&kept);
    }
}

/// Whether expired keys are freed in the background
/// (`lazyfree-lazy-expire`), and so propagate as UNLINK.
fn lazy_expire() -> bool {
    crate::store::lazyfree::LAZY_EXPIRE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Builds an owned argument vector from slices.
pub fn argv_of(args: &[&[u8]]) -> OwnedArgv {
    OwnedArgv::from_slices(args.iter().copied())
}

impl super::ServerState {
    /// Someone reads the propagation stream: the AOF, or replicas.
    #[inline]
    pub fn stream_on(&self) -> bool {
        self.aof.on || self.repl.feeding()
    }

    /// Hands what the outermost command propagated to the AOF and the
    /// replicas.
    pub fn feed_ops(&mut self, ops: &[(usize, OwnedArgv)]) {
        let repl_only = std::mem::take(&mut self.propagation.repl_only);
        let aof_only = std::mem::take(&mut self.propagation.aof_only);
        if self.aof.on {
            self.aof.annotate();
            let log = &mut self.aof.log;
            feed_except(ops, &repl_only, |o| log.feed(o));
        }
        if self.repl.feeding() {
            let log = &mut self.repl.log;
            feed_except(ops, &aof_only, |o| log.feed(o));
        }
    }

    /// Hands one command in database `db` to the AOF and the replicas.
    pub fn feed_command(&mut self, db: usize, argv: crate::net::request::Argv<'_>) {
        if self.aof.on {
            self.aof.annotate();
            self.aof.log.feed_command(db, argv);
        }
        if self.repl.feeding() {
            self.repl.log.feed_command(db, argv);
        }
    }

    /// A deleted key (expired or evicted) reaches the AOF and the replicas
    /// as DEL, or as UNLINK when it was freed `lazy`.
    pub fn feed_del(&mut self, db: usize, key: &[u8], lazy: bool) {
        if self.aof.on {
            self.aof.annotate();
            self.aof.log.feed_del(db, key, lazy);
        }
        if self.repl.feeding() {
            self.repl.log.feed_del(db, key, lazy);
        }
    }

    /// The keys expired since the last call, each on its own (the active
    /// expiry's, or what SCAN and RANDOMKEY ran into: Redis never wraps
    /// those in MULTI/EXEC).
    pub fn feed_expired(&mut self, store: &mut crate::store::Store) {
        if store.expired_log.is_empty() {
            return;
        }
        let lazy = lazy_expire();
        let mut log = std::mem::take(&mut store.expired_log);
        for (db, key) in &log {
            self.feed_del(*db, key, lazy);
        }
        log.clear();
        store.expired_log = log;
    }

    /// Writes the stream out before replies acknowledge it: to the AOF
    /// file (fsynced under `appendfsync always`) and to the replicas.
    pub fn flush_stream(&mut self) {
        self.aof.saving_child = self.persist.bgsave.is_some();
        self.aof.flush();
        self.repl.flush();
    }
}
