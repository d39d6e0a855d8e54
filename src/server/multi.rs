//! MULTI/EXEC machinery (the client half of Redis's `multi.c`): the queue
//! of commands a client builds between MULTI and EXEC, the queue-time
//! checks, and running the queue.
//!
//! The keyspace half of WATCH (who watches what, who is dirty) is
//! `store/watch.rs`. The command handlers are `cmd/tx.rs`.
//!
//! A transaction is atomic because the executor is one thread: EXEC runs
//! every queued command before it returns, and nothing else runs meanwhile.
//!
//! Memory bound: queued commands are copied out of the request buffer, so a
//! client could grow without limit by queueing. Redis 7.0 only bounds this
//! through client eviction (`maxmemory-clients`, off by default), which
//! counts the queue in the client's memory (`server/client_mem.rs`), and
//! so does ferrokv. Besides, ferrokv closes a client whose queued commands
//! (argument bytes plus per-argument overhead) would pass
//! `client-query-buffer-limit` (1 GB by default), the same bound and the
//! same outcome as for an oversized query buffer.

use super::call;
use super::client::Client;
use super::table::CommandId;
use super::ServerState;
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::net::request::Argv;
use crate::net::request::OwnedArgv;
use crate::store::Store;

/// One queued command, resolved at queue time as Redis does.
struct Queued {
    id: CommandId,
    argv: OwnedArgv,
}

/// The state of a client between MULTI and EXEC/DISCARD.
#[derive(Default)]
pub struct MultiState {
    cmds: Vec<Queued>,
    /// Commands queued (CLIENT LIST `multi=`); kept while EXEC runs them.
    count: usize,
    /// Memory held by the queue, in bytes.
    bytes: usize,
    /// The queued arguments' lengths plus a pointer per argument, what
    /// Redis shows as CLIENT LIST `multi-mem` (`mstate.argv_len_sums`).
    argv_len_sums: usize,
    /// A command was rejected while queueing (Redis `CLIENT_DIRTY_EXEC`):
    /// EXEC answers EXECABORT.
    pub dirty_exec: bool,
    /// The flags of every queued command together (Redis's
    /// `mstate.cmd_flags`): CLIENT PAUSE WRITE holds an EXEC that writes.
    pub flags: u32,
    /// The flags some queued command lacks (Redis's `cmd_inv_flags`): a
    /// stale replica refuses an EXEC with any command not `stale`.
    pub inv_flags: u32,
}

impl MultiState {
    /// Number of commands queued.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The queued commands, in order.
    pub fn queued(&self) -> impl Iterator<Item = (CommandId, Argv<'_>)> {
        self.cmds.iter().map(|q| (q.id, q.argv.argv()))
    }

    /// Bytes held by the queued commands (client memory and eviction).
    pub fn mem(&self) -> usize {
        self.bytes
    }

    /// CLIENT LIST `multi-mem`, counted as Redis counts it.
    pub fn argv_len_sums(&self) -> usize {
        self.argv_len_sums
    }
}

/// Commands that run at once inside MULTI instead of being queued (the
/// list in Redis 7.0's processCommand).
pub fn runs_in_multi(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Redis `flagTransaction`: a command was rejected while the client is in
/// MULTI, so its EXEC must fail.
pub fn flag_transaction(client: &mut Client) {
    if let Some(m) = client.multi.as_mut() {
        m.dirty_exec = true;
    }
}

/// Redis `discardTransaction`: leaves MULTI, drops the queue and every
/// watched key (DISCARD, EXEC, RESET).
pub fn discard_transaction(client: &mut Client, store: &mut Store) {
    client.multi = None;
    store.watches.unwatch_all(client.id);
}

/// Queues `argv` (command `id`) and replies `+QUEUED`. Nothing is stored
/// once the transaction is bound to fail (a rejected command, a touched
/// watched key), as in Redis 7.0's queueMultiCommand.
pub fn queue(
    store: &Store,
    server: &ServerState,
    client: &mut Client,
    id: CommandId,
    argv: Argv<'_>,
    out: &mut Vec<u8>,
) -> CmdResult {
    let dirty_cas = store.watches.is_dirty(client.id);
    let limit = usize::try_from(server.config.client_query_buffer_limit).unwrap_or(usize::MAX);
    let Some(m) = client.multi.as_mut() else {
        return Err(Error::err("EXEC without MULTI"));
    };
    if !m.dirty_exec && !dirty_cas {
        let flags = super::call::command_flags(server, id, argv);
        let arg_bytes: usize = (0..argv.len()).map(|i| argv.get(i).len()).sum();
        let argv_len_sum = arg_bytes + std::mem::size_of::<usize>() * argv.len();
        let argv = argv.to_owned();
        let size = argv.size() + std::mem::size_of::<Queued>();
        if m.bytes.saturating_add(size) > limit {
            tracing::warn!(
                client = client.id,
                "closing client whose MULTI queue reached client-query-buffer-limit"
            );
            client.multi = None;
            client.close_after_reply = true;
            return Ok(());
        }
        m.bytes += size;
        m.argv_len_sums += argv_len_sum;
        m.count += 1;
        m.flags |= flags;
        m.inv_flags |= !flags;
        m.cmds.push(Queued { id, argv });
    }
    ReplyBuf::new(out, client.resp3).simple("QUEUED");
    Ok(())
}

/// Runs the queue of a client whose EXEC may proceed (no queue-time error,
/// no touched watched key) and writes the array of replies. Commands run in
/// order without anything in between; an error is replied in place and the
/// rest still run. Blocking commands act non-blocking meanwhile.
pub fn run_queue(
    store: &mut Store,
    server: &mut ServerState,
    client: &mut Client,
    out: &mut Vec<u8>,
) -> CmdResult {
    // Unwatch first, as Redis does: the transaction's own writes must not
    // mark this client dirty.
    store.watches.unwatch_all(client.id);
    let cmds = match client.multi.as_mut() {
        Some(m) => std::mem::take(&mut m.cmds),
        None => return Err(Error::err("EXEC without MULTI")),
    };
    let deny_blocking = client.deny_blocking;
    client.deny_blocking = true;
    ReplyBuf::new(out, client.resp3).array(cmds.len());
    for q in &cmds {
        call::call(
            server,
            store,
            client,
            q.argv.argv(),
            out,
            call::Caller::Exec(q.id),
        );
    }
    client.deny_blocking = deny_blocking;
    client.multi = None;
    Ok(())
}
