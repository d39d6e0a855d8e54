//! The one place a command runs (Redis's `processCommand` and `call`):
//! lookup, the checks for who is calling, queueing inside MULTI, the
//! handler, statistics, timing and propagation. Clients' batches, EXEC's
//! queue, scripts' `redis.call`, the busy-script loop and AOF loading all
//! come through [`call`].

use super::acl::{self, log::Context, Denied};
use super::client::{Client, ClientKind, ReplyMode};
use super::table::{flag, CommandId};
use super::{multi, Ctx, ServerState};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::net::request::Argv;
use crate::script::sflag;
use crate::store::Store;
use crate::util::clock;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The client and command of the top-level call under way (Redis's
/// `server.current_client`), for the crash report only.
static RUNNING_CLIENT: AtomicPtr<Client> = AtomicPtr::new(std::ptr::null_mut());
static RUNNING_ARGV: AtomicPtr<Argv<'static>> = AtomicPtr::new(std::ptr::null_mut());

/// The client and command being run, if a call is under way. The pointers
/// are valid only while that call's frame is on the stack: the crash
/// report reads them from a signal handler on that stack.
pub fn running() -> (Option<*mut Client>, Option<*const Argv<'static>>) {
    let c = RUNNING_CLIENT.load(Ordering::Relaxed);
    let a = RUNNING_ARGV.load(Ordering::Relaxed);
    (
        (!c.is_null()).then_some(c),
        (!a.is_null()).then_some(a as *const _),
    )
}

/// Who runs a command; it decides what [`call`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A client's command: processCommand's checks, queued inside MULTI.
    Client,
    /// A client's command while a script runs past busy-reply-threshold:
    /// as [`Caller::Client`], then only allow-busy commands run.
    Busy,
    /// A command read from the AOF at start-up, by the loading client.
    Aof,
    /// A command of EXEC's queue, resolved and checked when queued.
    Exec(CommandId),
    /// `redis.call`/`pcall` from a script (Redis's scriptCall checks).
    Script {
        /// Writes are refused (EVAL_RO, FCALL_RO, `no-writes`).
        read_only: bool,
    },
}

/// What became of a command in [`call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran (or was queued) and replied without an error.
    Done,
    /// It ran and replied with an error, counted in the statistics.
    Failed,
    /// It was refused before running; the error is in the reply.
    Refused,
}

/// Runs or queues one command for `client` and appends its reply to `out`.
/// Every error is written here, and counted once: in errorstats and
/// `failed_calls` when the handler failed, in `rejected_calls` when a check
/// refused it.
pub fn call(
    server: &mut ServerState,
    store: &mut Store,
    client: &mut Client,
    argv: Argv<'_>,
    out: &mut Vec<u8>,
    caller: Caller,
) -> Outcome {
    let top = matches!(caller, Caller::Client | Caller::Busy | Caller::Aof);
    if top {
        RUNNING_CLIENT.store(client as *mut Client, Ordering::Relaxed);
        RUNNING_ARGV.store(
            (&argv as *const Argv<'_>).cast_mut().cast(),
            Ordering::Relaxed,
        );
        // One clock read serves the command's time and the start of its
        // duration (Redis's call() does the same with ustime()). AOF
        // loading keeps the keyspace's time as the loader set it.
        let now_us = clock::now_us();
        let real_us = clock::real_with(now_us);
        server.call_started_us = now_us;
        server.call_started_real_us = real_us;
        if caller != Caller::Aof {
            store.set_now(now_us / 1000);
            client.last_interaction_ms = real_us / 1000;
            store.expiry = match (&server.repl.master, client.kind) {
                // While clients are paused the data set stays as it is:
                // an expired key reads as gone but is not deleted
                // (Redis's checkClientPauseTimeoutAndReturnIfPaused).
                (None, _) if server.pause.active(now_us / 1000) => crate::store::Expiry::Hide,
                (None, _) => crate::store::Expiry::Delete,
                (Some(_), ClientKind::Master) => crate::store::Expiry::Keep,
                (Some(_), _) => crate::store::Expiry::Hide,
            };
        }
    }
    // Busy-script and AOF commands are not a client's own: the running
    // command stays the script's.
    let tracking = caller == Caller::Client && server.tracking.in_use();
    if tracking {
        super::tracking::before_command(server, store, client);
    }
    let mark = out.len();
    // A replica's own commands (REPLCONF ACK) never reply; it is a replica
    // from its SYNC on, whose reply is not counted.
    let replica = top && client.kind == ClientKind::Replica;
    // CLIENT REPLY concerns a client's own commands, not those run for it
    // by EXEC or a script.
    if top && client.reply_mode == ReplyMode::Skip {
        client.reply_mode = ReplyMode::SkipThis;
    }
    let outcome = match run(server, store, client, argv, out, caller) {
        Ok(()) => Outcome::Done,
        Err(Refusal::Checks(e)) => {
            count_error(server, &e);
            if top {
                log_error_to_peer(server, client, caller, &e);
            }
            // A script's refused call is counted here too, as Redis's
            // scriptCall does, even when redis.pcall catches it; the
            // script's own error, if it fails with it, is not counted again.
            ReplyBuf::new(out, client.resp3).error(&e);
            Outcome::Refused
        }
        Err(Refusal::Handler(e)) => {
            count_error(server, &e);
            if top {
                log_error_to_peer(server, client, caller, &e);
            }
            ReplyBuf::new(out, client.resp3).error(&e);
            Outcome::Failed
        }
    };
    if replica && out.len() > mark {
        // Redis's _addReplyToBufferOrList: a reply on the replication
        // link would be read as the stream by the replica.
        out.truncate(mark);
        let mut info = String::new();
        super::client::info_line(
            &mut info,
            client,
            server,
            store,
            clock::real_now_ms(),
            Some(&argv),
        );
        tracing::warn!(
            "Replica generated a reply to command '{}', disconnecting it: {info}",
            client.last_cmd
        );
        client.close_after_reply = true;
    }
    if caller == Caller::Client && (tracking || server.tracking.in_use()) {
        super::tracking::after_command(server, store, client, out, mark);
    }
    match client.reply_mode {
        _ if !top => {}
        // Subscription confirmations are pushed whatever CLIENT REPLY
        // says (Redis 7.0's CLIENT_PUSHING).
        ReplyMode::Off | ReplyMode::SkipThis if is_subscription(argv.get(0)) => {
            if client.reply_mode == ReplyMode::SkipThis {
                client.reply_mode = ReplyMode::On;
            }
        }
        ReplyMode::On | ReplyMode::Skip => {}
        ReplyMode::Off => drop_replies(out, mark, client.resp3),
        ReplyMode::SkipThis => {
            drop_replies(out, mark, client.resp3);
            client.reply_mode = ReplyMode::On;
        }
    }
    // ASKING lasts one command (resetClient), or until EXEC.
    if top
        && client.asking
        && client.multi.is_none()
        && !argv.get(0).eq_ignore_ascii_case(b"asking")
    {
        client.asking = false;
    }
    if top {
        RUNNING_CLIENT.store(std::ptr::null_mut(), Ordering::Relaxed);
        RUNNING_ARGV.store(std::ptr::null_mut(), Ordering::Relaxed);
    }
    outcome
}

/// An error for the master, a replica or the AOF loader is worth a line
/// in the log: nobody reads it (Redis's afterErrorReply). With
/// `propagation-error-behavior` panic (or panic-on-replicas) a read-only
/// replica erring on its master's stream stops, as does the AOF loader
/// under panic: the data set has diverged.
fn log_error_to_peer(server: &mut ServerState, client: &Client, caller: Caller, e: &Error) {
    let (from, to) = match (caller, client.kind) {
        (Caller::Aof, _) => ("server", "AOF-loading-client"),
        (_, ClientKind::Master) => ("replica", "master"),
        (_, ClientKind::Replica) => ("master", "replica"),
        _ => return,
    };
    let text: String = e.message().chars().take(4096).collect();
    let name = if client.last_cmd.is_empty() {
        "<unknown>"
    } else {
        client.last_cmd.as_str()
    };
    tracing::warn!(
        "== CRITICAL == This {from} is sending an error to its {to}: '{text}' after processing the command '{name}'"
    );
    server.stats.unexpected_error_replies += 1;
    let behavior = server.config.get("propagation-error-behavior");
    let panic_in_replica = client.kind == ClientKind::Master
        && caller != Caller::Aof
        && server.config.get_bool("replica-read-only")
        && (behavior == "panic" || behavior == "panic-on-replicas");
    let panic_in_aof = caller == Caller::Aof && behavior == "panic";
    if panic_in_replica || panic_in_aof {
        // Redis's serverPanic; the crash report follows.
        // invariant: the configuration asks for this stop.
        panic!("This {from} panicked sending an error to its {to} after processing the command '{name}'");
    }
}

/// CLIENT REPLY OFF/SKIP: the command's replies go, RESP3 pushes stay.
/// (P|S)SUBSCRIBE and (P|S)UNSUBSCRIBE, whose confirmations CLIENT REPLY
/// OFF and SKIP leave alone.
fn is_subscription(name: &[u8]) -> bool {
    [
        &b"subscribe"[..],
        b"psubscribe",
        b"ssubscribe",
        b"unsubscribe",
        b"punsubscribe",
        b"sunsubscribe",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

fn drop_replies(out: &mut Vec<u8>, mark: usize, resp3: bool) {
    if resp3 {
        crate::net::reply::retain_pushes(out, mark);
    } else {
        out.truncate(mark);
    }
}

/// Why a command did not reply normally.
enum Refusal {
    /// A check refused it before it ran.
    Checks(Error),
    /// Its handler failed.
    Handler(Error),
}

fn run(
    server: &mut ServerState,
    store: &mut Store,
    client: &mut Client,
    argv: Argv<'_>,
    out: &mut Vec<u8>,
    caller: Caller,
) -> Result<(), Refusal> {
    let id = match caller {
        Caller::Exec(id) => {
            // Permissions are checked again at EXEC, in case they changed
            // since the command was queued.
            if let Some(d) = denial(server, client, id, argv) {
                log_denial(server, store, client, id, argv, d, Context::Multi);
                return Err(Refusal::Checks(Error::raw_owned(d.exec_error())));
            }
            id
        }
        Caller::Script { read_only } => {
            match script_check(server, store, client, argv, read_only) {
                Ok(id) => id,
                Err((id, e)) => {
                    if let Some(id) = id {
                        server.table.commands[id].rejected_calls += 1;
                    }
                    return Err(Refusal::Checks(e));
                }
            }
        }
        Caller::Client | Caller::Busy | Caller::Aof => {
            let checked = check(server, client, argv)
                .and_then(|id| {
                    // Redis sets lastcmd before its checks: CLIENT LIST's and
                    // the ACL log's `cmd=` name the command being refused.
                    client.last_cmd.clear();
                    client.last_cmd.push_str(&server.table.commands[id].name);
                    acl_check(server, store, client, id, argv)
                })
                .and_then(|id| pubsub_context_check(server, client, id))
                .and_then(|id| {
                    // Redis's mustObeyClient: the master's stream and the
                    // AOF are never redirected.
                    if server.cluster.is_some()
                        && caller != Caller::Aof
                        && client.kind != ClientKind::Master
                    {
                        client.cluster_slot = cluster_check(server, store, client, id, argv)?;
                    }
                    Ok(id)
                })
                .and_then(|id| {
                    // Replicas and monitors stay off the keyspace.
                    let keyspace = flag::WRITE | flag::READONLY | flag::MAY_REPLICATE;
                    if matches!(client.kind, ClientKind::Replica | ClientKind::Monitor)
                        && server.table.commands[id].flags & keyspace != 0
                    {
                        return Err((
                            Some(id),
                            Error::err("Replica can't interact with the keyspace"),
                        ));
                    }
                    Ok(id)
                })
                .and_then(|id| {
                    // While the data set loads, only commands flagged
                    // `loading` run (the AOF's own commands are the load).
                    let cmd = &server.table.commands[id];
                    let refused = if server.async_loading {
                        cmd.has(flag::NO_ASYNC_LOADING)
                    } else {
                        !cmd.has(flag::LOADING)
                    };
                    if server.loading && caller != Caller::Aof && refused {
                        return Err((
                            Some(id),
                            Error::raw("LOADING Redis is loading the dataset in memory"),
                        ));
                    }
                    Ok(id)
                })
                .and_then(|id| {
                    if caller == Caller::Busy && !server.table.commands[id].has(flag::ALLOW_BUSY) {
                        return Err((Some(id), server.busy_error()));
                    }
                    Ok(id)
                })
                .and_then(|id| {
                    // Not while a busy script yields, nor for the AOF or
                    // the master's stream.
                    if caller == Caller::Client
                        && server.config.maxmemory != 0
                        && client.kind != ClientKind::Master
                    {
                        oom_check(server, store, client, id, argv)?;
                    }
                    Ok(id)
                })
                .and_then(|id| {
                    // Two flags stand for every disk error on the hot path.
                    // The AOF's commands are the data set being loaded: no
                    // disk or replication refusal applies (Redis runs them
                    // without processCommand's checks).
                    if (!server.persist.last_bgsave_ok
                        || !server.aof.last_write_ok
                        || server.aof.on)
                        && caller != Caller::Aof
                    {
                        disk_error_check(server, client, id, argv)?;
                    }
                    Ok(id)
                })
                .and_then(|id| {
                    if (server.repl.master.is_some() || server.repl.min_replicas.0 != 0)
                        && caller != Caller::Aof
                    {
                        replication_check(server, client, id, argv)?;
                    }
                    Ok(id)
                });
            let id = match checked {
                Ok(id) => id,
                Err((id, e)) => return Err(Refusal::Checks(reject(store, server, client, id, e))),
            };
            let cmd = &server.table.commands[id];
            if client.multi.is_some() && !multi::runs_in_multi(&cmd.name) {
                return multi::queue(store, server, client, id, argv, out)
                    .map_err(Refusal::Handler);
            }
            id
        }
    };
    invoke(store, server, client, id, argv, out).map_err(Refusal::Handler)
}

/// The checks of a command called from a script, in Redis's scriptCall
/// order, with its error texts. A write marks the script unkillable.
fn script_check(
    server: &mut ServerState,
    store: &Store,
    client: &mut Client,
    argv: Argv<'_>,
    read_only: bool,
) -> Result<CommandId, (Option<CommandId>, Error)> {
    let table = &server.table;
    let unknown = || (None, Error::err("Unknown Redis command called from script"));
    let mut id = table.lookup(argv.get(0)).ok_or_else(unknown)?;
    if !table.commands[id].subcommands.is_empty() && argv.len() >= 2 {
        id = table.lookup_sub(id, argv.get(1)).ok_or_else(unknown)?;
    }
    let cmd = &table.commands[id];
    let refuse = |msg| Err((Some(id), Error::err(msg)));
    if cmd.handler.is_none() || !cmd.arity_ok(argv.len()) {
        return refuse("Wrong number of args calling Redis command from script");
    }
    if cmd.has(flag::NOSCRIPT) && !server.script_allow_noscript {
        return refuse("This Redis command is not allowed from script");
    }
    // scriptVerifyAllowStale: on a replica whose link is down with
    // replica-serve-stale-data off, only stale-safe commands run.
    let stale = server
        .repl
        .master
        .as_ref()
        .is_some_and(|m| m.state != super::repl::LinkState::Connected)
        && !server.config.get_bool("replica-serve-stale-data");
    if stale && !cmd.has(flag::STALE) {
        return refuse("Can not execute the command on a stale replica");
    }
    if let Some(d) = denial(server, client, id, argv) {
        log_denial(server, store, client, id, argv, d, Context::Lua);
        return Err((Some(id), Error::err(d.script_error())));
    }
    let cmd = &server.table.commands[id];
    // Redis counts may-replicate commands (PUBLISH) as writes here.
    if read_only && cmd.flags & (flag::WRITE | flag::MAY_REPLICATE) != 0 {
        return refuse("Write commands are not allowed from read-only scripts.");
    }
    // Redis's scriptVerifyWriteCommandAllow: a read-only replica runs a
    // script's writes only for its master (or the AOF, whose client is
    // no connection).
    if cmd.has(flag::WRITE)
        && server.repl.master.is_some()
        && server.config.get_bool("replica-read-only")
    {
        let obeyed = server
            .running_script
            .as_ref()
            .is_none_or(|r| r.obey_caller.get());
        if !obeyed {
            return Err((
                Some(id),
                Error::raw("READONLY You can't write against a read only replica."),
            ));
        }
    }
    // A script that already wrote is not stopped halfway.
    if cmd.has(flag::WRITE)
        && !server
            .running_script
            .as_ref()
            .is_some_and(|r| r.wrote.get())
    {
        if let Some(e) = disk_write_error(server) {
            return Err((Some(id), e));
        }
        if server.repl.master.is_none() && server.repl.too_few_replicas() {
            return Err((
                Some(id),
                Error::raw("NOREPLICAS Not enough good replicas to write."),
            ));
        }
    }
    // Redis's scriptVerifyOOM: over maxmemory when the script started, its
    // first denyoom write fails; once it wrote, it may not stop halfway.
    if cmd.has(flag::DENYOOM) && server.config.maxmemory != 0 && server.memory.pre_command_oom {
        if let Some(run) = &server.running_script {
            if !run.wrote.get() && !run.allow_oom.get() {
                return Err((Some(id), OOM));
            }
        }
    }
    if server.cluster.is_some() {
        script_cluster_check(server, store, client, id, argv).map_err(|e| (Some(id), e))?;
    }
    let cmd = &server.table.commands[id];
    if cmd.has(flag::WRITE) {
        if let Some(run) = &server.running_script {
            run.wrote.set(true);
        }
    }
    Ok(id)
}

/// The checks before a command may run or be queued, in Redis's order:
/// existence, arity, authentication, no_multi inside MULTI. A failure
/// carries the command when it was found (for EXEC's own rejection).
fn check(
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
                let sub = crate::util::repr::lossy_cut(argv.get(1), 128);
                let cmd = table.commands[id].name.to_uppercase();
                return Err((None, Error::UnknownSubcommand { sub, cmd }));
            }
        }
    }
    let cmd = &table.commands[id];
    if !cmd.arity_ok(argv.len()) || cmd.handler.is_none() {
        return Err((Some(id), Error::WrongArity(cmd.name.clone())));
    }
    if cmd.has(flag::PROTECTED) {
        protected_allowed(server, client, &cmd.name).map_err(|e| (Some(id), e))?;
    }
    // Redis's authRequired: once the default user needs no password, a
    // client that never authenticated may run commands too.
    if !client.authenticated && !cmd.has(flag::NO_AUTH) && server.acl.auth_required() {
        return Err((Some(id), Error::NoAuth));
    }
    if client.multi.is_some() && cmd.has(flag::NO_MULTI) {
        return Err((Some(id), Error::NotAllowedInMulti));
    }
    Ok(id)
}

/// The ACL check of a client's command (processCommand): a denial is
/// logged and refuses the command, inside MULTI too.
fn acl_check(
    server: &mut ServerState,
    store: &Store,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
) -> Result<CommandId, (Option<CommandId>, Error)> {
    let Some(d) = denial(server, client, id, argv) else {
        return Ok(id);
    };
    let context = acl::context_of(client.multi.is_some());
    log_denial(server, store, client, id, argv, d, context);
    let e = Error::raw_owned(d.error(&server.table.commands[id].name));
    Err((Some(id), e))
}

/// Why the client's user may not run command `id` with `argv`, if it may
/// not. Users whose rules allow everything are not checked.
#[inline]
pub(super) fn denial(
    server: &mut ServerState,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
) -> Option<Denied> {
    let user = client.user.as_ref()?.borrow();
    if user.open {
        return None;
    }
    server
        .acl
        .check(&user, &server.table.commands[id], &argv)
        .err()
}

/// Records a denial in the ACL log with its object: the command's name,
/// or the key or channel denied.
fn log_denial(
    server: &mut ServerState,
    store: &Store,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
    d: Denied,
    context: Context,
) {
    let object = match d.arg() {
        Some(i) => argv.get(i).to_vec(),
        None => server.table.commands[id].name.as_bytes().to_vec(),
    };
    server.acl_log(
        store,
        client,
        (d.reason(), context),
        &object,
        None,
        Some(&argv),
    );
}

/// The error of a command refused for memory.
pub const OOM: Error = Error::raw("OOM command not allowed when used memory > 'maxmemory'.");

/// processCommand's maxmemory step: evicts what the policy allows, then
/// refuses a command that may grow memory (or anything but EXEC, DISCARD,
/// QUIT and RESET inside MULTI) when memory is still over the limit.
fn oom_check(
    server: &mut ServerState,
    store: &mut Store,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
) -> Result<(), (Option<CommandId>, Error)> {
    let oom = server.perform_evictions(store) == super::evict::Evicted::Fail;
    if server.tracking.in_use() {
        // Evicted keys are invalidated before the command runs: their
        // messages reach the running client ahead of its reply.
        super::tracking::drain(server, store, 0);
    }
    server.memory.pre_command_oom = oom;
    if !oom {
        return Ok(());
    }
    let cmd = &server.table.commands[id];
    let name = cmd.name.as_str();
    let queued_flags = client.multi.as_ref().map_or(0, |m| m.flags);
    let denyoom = cmd.has(flag::DENYOOM)
        || (name == "exec" && queued_flags & flag::DENYOOM != 0)
        || declared_script_flags(server, name, argv)
            .is_some_and(|f| f & (sflag::ALLOW_OOM | sflag::NO_WRITES) == 0);
    let in_multi = client.multi.is_some() && !matches!(name, "exec" | "discard" | "quit" | "reset");
    if denyoom || in_multi {
        return Err((Some(id), OOM));
    }
    Ok(())
}

/// A command's flags as the checks see them (Redis's getCommandFlags): an
/// EVAL, EVALSHA or FCALL whose script declares flags writes, is denyoom
/// and runs stale as the script says (scriptFlagsToCmdFlags), and is no
/// longer `may-replicate`: what it does is known.
pub fn command_flags(server: &ServerState, id: CommandId, argv: Argv<'_>) -> u32 {
    let cmd = &server.table.commands[id];
    let Some(script) = declared_script_flags(server, cmd.name.as_str(), argv) else {
        return cmd.flags;
    };
    let mut flags = cmd.flags & !(flag::STALE | flag::DENYOOM | flag::WRITE | flag::MAY_REPLICATE);
    if script & (sflag::ALLOW_OOM | sflag::NO_WRITES) == 0 {
        flags |= flag::DENYOOM;
    }
    if script & sflag::NO_WRITES == 0 {
        flags |= flag::WRITE;
    }
    if script & sflag::ALLOW_STALE != 0 {
        flags |= flag::STALE;
    }
    flags
}

/// The flags an EVAL, EVALSHA or FCALL's script declares (a shebang's, or
/// a function's), which stand for the command's write, denyoom and stale
/// flags (Redis's getCommandFlags and scriptFlagsToCmdFlags): it writes
/// unless `no-writes`, is denyoom unless `allow-oom` or `no-writes`, runs
/// on a stale replica only with `allow-stale`. None for an EVAL without a
/// shebang (the command's own flags apply) or a script not known.
fn declared_script_flags(server: &ServerState, name: &str, argv: Argv<'_>) -> Option<u32> {
    let flags = match name {
        "eval" | "eval_ro" => match crate::script::parse_shebang(argv.get(1)) {
            Ok((flags, _)) => flags,
            Err(_) => return None,
        },
        "evalsha" | "evalsha_ro" => {
            let sha = String::from_utf8_lossy(argv.get(1)).to_ascii_lowercase();
            match server.scripting.get().and_then(|e| e.scripts.get(&sha)) {
                Some(s) => s.flags,
                None => return None,
            }
        }
        "fcall" | "fcall_ro" => {
            let f = String::from_utf8_lossy(argv.get(1));
            match server.scripting.get().and_then(|e| e.function(&f)) {
                Some(func) => func.flags | sflag::HAS_SHEBANG,
                None => return None,
            }
        }
        _ => return None,
    };
    (flags & sflag::HAS_SHEBANG != 0).then_some(flags)
}

/// The error that refuses writes after a persistence failure, if any
/// (Redis's writeCommandsDeniedByDiskError with
/// writeCommandsGetDiskErrorMessage): a failed background save while
/// `stop-writes-on-bgsave-error` is on and save rules are set, or a failed
/// AOF write or fsync.
pub fn disk_write_error(server: &ServerState) -> Option<Error> {
    Some(match disk_error(server)? {
        DiskError::Rdb => Error::raw(
            "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to \
             persist to disk. Commands that may modify the data set are disabled, because this \
             instance is configured to report errors during writes if RDB snapshotting fails \
             (stop-writes-on-bgsave-error option). Please check the Redis logs for details \
             about the RDB error.",
        ),
        DiskError::Aof(why) => {
            Error::raw_owned(format!("MISCONF Errors writing to the AOF file: {why}"))
        }
    })
}

/// The error a script that may write gets before it starts while
/// persistence fails (scriptPrepareForRun's wording).
pub fn script_disk_write_error(server: &ServerState) -> Option<Error> {
    Some(match disk_error(server)? {
        DiskError::Rdb => Error::raw(
            "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to \
             persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only \
             scripts.",
        ),
        DiskError::Aof(why) => Error::raw_owned(format!(
            "MISCONF Redis is configured to persist data to AOF, but it's currently unable to \
             persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only \
             scripts. AOF error: {why}"
        )),
    })
}

/// Why writes are refused (Redis's DISK_ERROR_TYPE_*).
enum DiskError {
    /// A background save failed and `stop-writes-on-bgsave-error` is on.
    Rdb,
    /// An AOF write or fsync failed, with its strerror text.
    Aof(String),
}

fn disk_error(server: &ServerState) -> Option<DiskError> {
    if !server.persist.last_bgsave_ok
        && !server.config.save.is_empty()
        && server.config.get_bool("stop-writes-on-bgsave-error")
    {
        return Some(DiskError::Rdb);
    }
    server.aof.disk_error().map(DiskError::Aof)
}

/// processCommand's disk error step: while persistence fails, writes
/// (and PING, so monitors notice) are refused with MISCONF; the master's
/// stream is applied anyway, with a warning every 10 s, where
/// `replica-ignore-disk-write-errors` allows it.
fn disk_error_check(
    server: &mut ServerState,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
) -> Result<(), (Option<CommandId>, Error)> {
    let Some(err) = disk_write_error(server) else {
        return Ok(());
    };
    let cmd = &server.table.commands[id];
    let ping = cmd.name == "ping";
    let write = command_flags(server, id, argv) & flag::WRITE != 0
        || (cmd.name == "exec"
            && client
                .multi
                .as_ref()
                .is_some_and(|m| m.flags & flag::WRITE != 0));
    if !write && !ping {
        return Ok(());
    }
    if client.kind == ClientKind::Master {
        if !ping && !server.config.get_bool("replica-ignore-disk-write-errors") {
            // Redis's serverPanic: a replica that cannot persist what its
            // master sends stops rather than diverge from its own files
            // (`replica-ignore-disk-write-errors yes` keeps it running).
            // invariant: a deliberate panic, the crash report path.
            panic!("Replica was unable to write command to disk.");
        }
        let now = clock::real_now_ms();
        if now > server.persist.disk_error_logged_ms + 10_000 {
            server.persist.disk_error_logged_ms = now;
            tracing::warn!(
                "Replica is applying a command even though it is unable to write to disk."
            );
        }
        return Ok(());
    }
    Err((Some(id), err))
}

/// processCommand's replication checks: on a master, no writes while
/// fewer than `min-replicas-to-write` replicas are in touch; on a replica,
/// no writes from clients while `replica-read-only` is on, and only
/// stale-safe commands while the link is down and
/// `replica-serve-stale-data` is off. The master's own commands pass.
fn replication_check(
    server: &ServerState,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
) -> Result<(), (Option<CommandId>, Error)> {
    if client.kind == ClientKind::Master {
        return Ok(());
    }
    let cmd = &server.table.commands[id];
    // Only looked at when a check applies: most commands on a master
    // without min-replicas-to-write need neither.
    let script = || declared_script_flags(server, cmd.name.as_str(), argv);
    let write = || match script() {
        Some(f) => f & sflag::NO_WRITES == 0,
        None => {
            cmd.has(flag::WRITE)
                || (cmd.name == "exec"
                    && client
                        .multi
                        .as_ref()
                        .is_some_and(|m| m.flags & flag::WRITE != 0))
        }
    };
    if server.repl.master.is_none() {
        if server.repl.too_few_replicas() && write() {
            return Err((
                Some(id),
                Error::raw("NOREPLICAS Not enough good replicas to write."),
            ));
        }
        return Ok(());
    }
    if server.config.get_bool("replica-read-only") && write() {
        return Err((
            Some(id),
            Error::raw("READONLY You can't write against a read only replica."),
        ));
    }
    let up = server
        .repl
        .master
        .as_ref()
        .is_some_and(|m| m.state == super::repl::LinkState::Connected);
    let stale_ok = || match script() {
        Some(f) => f & sflag::ALLOW_STALE != 0,
        None => {
            cmd.has(flag::STALE)
                && !(cmd.name == "exec"
                    && client
                        .multi
                        .as_ref()
                        .is_some_and(|m| m.inv_flags & flag::STALE != 0))
        }
    };
    if !up && !server.config.get_bool("replica-serve-stale-data") && !stale_ok() {
        return Err((
            Some(id),
            Error::raw(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ),
        ));
    }
    Ok(())
}

/// A RESP2 subscriber can only receive pub/sub-shaped replies.
fn pubsub_context_check(
    server: &ServerState,
    client: &Client,
    id: CommandId,
) -> Result<CommandId, (Option<CommandId>, Error)> {
    let cmd = &server.table.commands[id];
    if client.kind == ClientKind::PubSub
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

/// Redis's allowProtectedAction: a protected command runs when its
/// parameter says `yes`, or `local` and the client is on 127.0.0.1 or ::1.
fn protected_allowed(server: &ServerState, client: &Client, name: &str) -> Result<(), Error> {
    let Some(param) = super::table::protected_by(name) else {
        return Ok(());
    };
    let allowed = match server.config.get(param).as_str() {
        "yes" => true,
        "local" => client.is_local(),
        _ => false,
    };
    if allowed {
        return Ok(());
    }
    Err(Error::err_owned(format!(
        "{} command not allowed. If the {param} option is set to \"local\", you can run it from a \
         local connection, otherwise you need to set this option in the configuration file, and \
         then restart the server.",
        // A subcommand is named by its container, as Redis names it.
        name.split('|').next().unwrap_or(name).to_uppercase()
    )))
}

/// processCommand's cluster redirection: a command with keys (or EXEC,
/// for its queue) runs only on the node serving their slot; that slot,
/// -1 when no key is involved.
fn cluster_check(
    server: &ServerState,
    store: &Store,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
) -> Result<i32, (Option<CommandId>, Error)> {
    use super::cluster::route;
    let Some(cluster) = server.cluster.as_deref() else {
        return Ok(-1);
    };
    let table = &server.table;
    let cmd = &table.commands[id];
    let is_exec = cmd.name == "exec";
    if cmd.key_specs.is_empty() && !cmd.has(flag::MOVABLEKEYS) && !is_exec {
        return Ok(-1);
    }
    let q = route::Query::of(cluster, client);
    let exists = |k: &[u8]| store.peek(0, k).is_some();
    let routed = if is_exec {
        let Some(m) = client.multi.as_deref() else {
            return Ok(-1);
        };
        let queued = m.queued().map(|(id, a)| (&table.commands[id], a));
        route::node_for(cluster, queued, m.flags & flag::WRITE != 0, &q, exists)
    } else {
        // A script with a shebang writes unless it says `no-writes`.
        let write = command_flags(server, id, argv) & flag::WRITE != 0;
        let one = std::iter::once((cmd, argv));
        route::node_for(cluster, one, write, &q, exists)
    };
    routed
        .map(|slot| slot.map_or(-1, i32::from))
        .map_err(|r| (Some(id), r.error(cluster, server.use_pport(client))))
}

/// scriptVerifyClusterState: a script's command may touch only keys this
/// node serves, all of one slot unless the script allows cross-slot keys.
fn script_cluster_check(
    server: &ServerState,
    store: &Store,
    client: &mut Client,
    id: CommandId,
    argv: Argv<'_>,
) -> Result<(), Error> {
    use super::cluster::route::{self, Redirect};
    let Some(cluster) = server.cluster.as_deref() else {
        return Ok(());
    };
    if client.cluster_obey {
        return Ok(());
    }
    let cmd = &server.table.commands[id];
    let q = route::Query::of(cluster, client);
    let exists = |k: &[u8]| store.peek(0, k).is_some();
    let one = std::iter::once((cmd, argv));
    let slot = match route::node_for(cluster, one, cmd.has(flag::WRITE), &q, exists) {
        Ok(slot) => slot,
        Err(Redirect::DownReadOnly) => return Err(Error::err(
            "Script attempted to execute a write command while the cluster is down and readonly",
        )),
        Err(Redirect::DownState) => {
            return Err(Error::err(
                "Script attempted to execute a command while the cluster is down",
            ))
        }
        Err(_) => {
            return Err(Error::err(
                "Script attempted to access a non local key in a cluster node",
            ))
        }
    };
    let cross_ok = server
        .running_script
        .as_ref()
        .is_some_and(|r| r.allow_cross_slot.get());
    if let (Some(slot), false) = (slot, cross_ok) {
        let slot = i32::from(slot);
        if client.cluster_slot == -1 {
            client.cluster_slot = slot;
        } else if client.cluster_slot != slot {
            return Err(Error::err(
                "Script attempted to access keys that do not hash to the same slot",
            ));
        }
    }
    Ok(())
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
    // Redis sets lastcmd before its checks (CLIENT LIST's cmd=): an
    // unknown command leaves it unset, which reads NULL.
    client.last_cmd.clear();
    match id {
        Some(id) => {
            server.table.commands[id].rejected_calls += 1;
            client.last_cmd.push_str(&server.table.commands[id].name);
        }
        None => client.last_cmd.push_str("NULL"),
    }
    multi::flag_transaction(client);
    let is_exec = id.is_some_and(|id| server.table.commands[id].name == "exec");
    if !is_exec {
        return e;
    }
    multi::discard_transaction(client, store);
    if matches!(e, Error::Redirect(_)) {
        return e;
    }
    let msg = e.message();
    let reason = msg.strip_prefix("ERR ").unwrap_or(&msg);
    Error::ExecAbortBecause(reason.to_string())
}

/// Runs the handler of the resolved command `id` and keeps its statistics
/// (Redis `call`).
fn invoke(
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
    let depth = server.propagation.depth;
    // A top-level command started when call() read the clock; commands
    // inside EXEC or a script read it themselves. Durations are real time,
    // whatever the logical clock does.
    let started_us = if depth == 0 {
        server.call_started_real_us
    } else {
        clock::real_now_us()
    };
    if depth == 0 {
        server.propagation.on = server.stream_on();
    }
    let propagating = server.propagation.on;
    let resp3 = client.resp3;
    let dirty = store.stats.dirty;
    store.log_expired = propagating;
    let own = if propagating {
        server.propagation.take_own()
    } else {
        (None, false)
    };
    // EVAL and FCALL are shown before the commands their script runs.
    let flags = server.table.commands[id].flags;
    if !server.monitors.is_empty() && flags & flag::SKIP_MONITOR != 0 {
        super::monitor::feed(server, client, id, argv, out);
    }
    if server.tracking.in_use() {
        super::tracking::before_handler(server, client, id, argv);
    }
    server.propagation.depth += 1;
    let reply_at = out.len();
    let result = {
        let mut ctx = Ctx {
            store,
            client,
            reply: ReplyBuf::new(out, resp3),
            server,
        };
        handler(&mut ctx, argv)
    };
    server.propagation.depth -= 1;
    if let Some(n) = store.stats.counted.take() {
        store.stats.dirty = dirty + n;
    }
    if !store.key_events.is_empty() {
        publish_key_events(server, store, client, out, reply_at);
    }
    if server.repl.master.is_some()
        && store.stats.dirty != dirty
        && client.kind != ClientKind::Master
    {
        remember_replica_volatile(server, store, client.db, id, argv);
    }
    if store.invalidated.is_some() || server.tracking.in_use() {
        super::tracking::after_handler(server, store, client, id, argv);
    }
    if propagating {
        // Keys found expired reach the AOF as DEL before what ran into
        // them, in the same unit; SCAN and RANDOMKEY, which may run into
        // any key, send theirs on their own (Redis's
        // CMD_TOUCHES_ARBITRARY_KEYS).
        if !store.expired_log.is_empty() {
            if depth == 0 && matches!(&*server.table.commands[id].name, "scan" | "randomkey") {
                server.feed_expired(store);
            } else {
                server.propagation.pend_expired(store);
            }
        }
        propagate(store, server, client.db, id, argv, dirty, depth);
        server.propagation.restore(own);
        if depth == 0 {
            let pending = std::mem::take(&mut server.propagation.pending);
            server.feed_ops(&pending);
            // Keep the allocation for the next command.
            server.propagation.pending = pending;
            server.propagation.pending.clear();
        }
    }
    if depth == 0 && !client.reprocessing {
        // The stream's end after every command the client runs, a write or
        // not, is what its next WAIT waits for (processCommand sets
        // `c->woff` after each call; a blocked command served later does
        // not pass there again).
        client.woff = server.repl.offset + server.repl.log.buf.len() as u64;
    }
    // Shown once, when it first runs (a blocked command running again is
    // not shown again); administrative commands never.
    if !server.monitors.is_empty()
        && flags & (flag::SKIP_MONITOR | flag::ADMIN) == 0
        && !client.reprocessing
    {
        super::monitor::feed(server, client, id, argv, out);
    }
    // As Redis 7.0: a blocking command's call is counted when it first
    // runs, blocked or not; its latency, failure and slow log entry when
    // it is served (running again here). A timeout adds nothing.
    let duration = clock::real_now_us().saturating_sub(started_us);
    let cmd = &mut server.table.commands[id];
    if !client.reprocessing {
        cmd.calls += 1;
        server.stats.total_commands_processed += 1;
    }
    cmd.usec += duration;
    if server.blocking.pending.is_some() {
        return result;
    }
    let tracking = server.config.latency_tracking;
    if tracking {
        cmd.latency
            .get_or_insert_with(Box::default)
            .record(duration);
    }
    if result.is_err() {
        cmd.failed_calls += 1;
        server.stats.failed_calls += 1;
    }
    let threshold = server.config.latency_monitor_threshold;
    if threshold != 0 && !server.loading {
        let event = if flags & flag::FAST != 0 {
            "fast-command"
        } else {
            "command"
        };
        server
            .latency
            .add_if_needed(event, duration / 1000, threshold);
    }
    let slower_than = server.config.slowlog_log_slower_than;
    if slower_than >= 0
        && duration >= slower_than as u64
        && flags & flag::SKIP_SLOWLOG == 0
        && !server.loading
    {
        let max_len = server.config.slowlog_max_len as usize;
        let name = &server.table.commands[id].name;
        server.slowlog.push(client, name, argv, duration, max_len);
    }
    result
}

/// Publishes the events the command's lookups raised and no event of its
/// own carried out (a read's `keymiss`, an `expired` key). The caller's
/// own copy goes ahead of its reply, where Redis's lookup put it.
#[cold]
fn publish_key_events(
    server: &mut ServerState,
    store: &mut Store,
    client: &Client,
    out: &mut Vec<u8>,
    reply_at: usize,
) {
    let mut own = Vec::new();
    super::pubsub::drain_key_events(server, store, Some(client), &mut own);
    if !own.is_empty() {
        out.splice(reply_at..reply_at, own);
    }
}

/// On a writable replica, the keys of a write from one of its own clients
/// that now have a TTL are remembered: the replica expires them itself
/// (Redis's rememberSlaveKeyWithExpire from setExpire).
fn remember_replica_volatile(
    server: &ServerState,
    store: &mut Store,
    db: usize,
    id: CommandId,
    argv: Argv<'_>,
) {
    if server.config.get_bool("replica-read-only") {
        return;
    }
    let cmd = &server.table.commands[id];
    if !cmd.has_keys {
        return;
    }
    let mut keys = Vec::new();
    crate::server::keyspec::find_keys(cmd.key_finder, &cmd.key_specs, &argv, &mut keys);
    for k in keys {
        let key = argv.get(k.pos);
        let d = &store.dbs[db];
        if d.dict
            .get(d.dict.hash(key), key)
            .is_some_and(|e| e.expire_at() != 0)
        {
            store.remember_replica_volatile(db, key);
        }
    }
}

/// Collects the command just run for the AOF when it changed the data set
/// (it has the WRITE flag and moved the dirty counter, Redis's rule): as
/// its handler rewrote it, or as called. A lone top-level write, the
/// common case, goes to the AOF at once without being copied.
fn propagate(
    store: &Store,
    server: &mut ServerState,
    db: usize,
    id: CommandId,
    argv: Argv<'_>,
    dirty_before: u64,
    depth: u32,
) {
    let p = &mut server.propagation;
    let rewritten = p.rewritten.take();
    let forced = std::mem::take(&mut p.forced);
    if std::mem::take(&mut p.prevented)
        || (store.stats.dirty == dirty_before && !forced)
        || !server.table.commands[id].has(flag::WRITE)
        // A blocking command that blocked did nothing yet (the DEL of a key
        // it found expired went out on its own).
        || server.blocking.pending.is_some()
    {
        return;
    }
    if depth == 0 && p.pending.is_empty() {
        let argv = rewritten.as_ref().map_or(argv, |r| r.argv());
        server.feed_command(db, argv);
        return;
    }
    let argv = rewritten.unwrap_or_else(|| argv.to_owned());
    // A script's commands go where `redis.set_repl` last said.
    use super::propagate::targets;
    match p.script_excluded {
        0 => {}
        targets::REPLICAS => p.aof_only.push(p.pending.len()),
        targets::AOF => p.repl_only.push(p.pending.len()),
        _ => return,
    }
    p.pending.push((db, argv));
}

/// Counts an error reply by its prefix (INFO errorstats).
pub(crate) fn count_error(server: &mut ServerState, e: &Error) {
    if matches!(e, Error::Counted(_)) {
        return;
    }
    let msg = e.message();
    server.count_error_prefix(msg.split(' ').next().unwrap_or("ERR"));
}
