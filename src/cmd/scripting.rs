//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (Redis's eval.c). The Lua
//! side lives in `crate::script`.

use super::args::{int, is, lossy};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::script::{Engine, Run};
use crate::server::client::ClientKind;
use crate::server::script_host::{script_client, ScriptHost};

pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("eval", eval),
    ("evalsha", evalsha),
    ("eval_ro", eval_ro),
    ("evalsha_ro", evalsha_ro),
    ("script|load", script_load),
    ("script|exists", script_exists),
    ("script|flush", script_flush),
    ("script|kill", script_kill),
    ("script|help", script_help),
    ("script|debug", script_debug),
];

/// -NOTBUSY, for SCRIPT KILL and FUNCTION KILL when nothing runs.
pub(super) const NOTBUSY: Error = Error::raw("NOTBUSY No scripts in execution right now.");

fn eval(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    match ctx.client.lua_debug {
        None => eval_generic(ctx, argv, false, false),
        Some(mode) => super::ldb::eval_debugging(ctx, argv, mode, false),
    }
}

fn evalsha(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    evalsha_generic(ctx, argv, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    match ctx.client.lua_debug {
        None => eval_generic(ctx, argv, false, true),
        Some(mode) => super::ldb::eval_debugging(ctx, argv, mode, true),
    }
}

fn evalsha_ro(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    evalsha_generic(ctx, argv, true)
}

/// EVALSHA: a script is not debugged by its sha.
fn evalsha_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, ro: bool) -> CmdResult {
    if argv.get(1).len() != 40 {
        return Err(Error::NoScript);
    }
    if ctx.client.lua_debug.is_some() {
        return Err(Error::err(
            "Please use EVAL instead of EVALSHA for debugging",
        ));
    }
    eval_generic(ctx, argv, true, ro)
}

/// Takes the engine out of the server state, creating it on first use.
pub(super) fn take_engine(ctx: &mut Ctx<'_>) -> Result<Box<Engine>, Error> {
    match ctx.server.scripting.take() {
        Some(e) => Ok(e),
        None => Engine::new(ctx.server.config.lua_memory_limit),
    }
}

/// Runs a script or function (`start`) with the server as its host: the
/// scripts' client starts in the caller's database, SCRIPT KILL and the
/// busy loop see the run, and pub/sub messages held meanwhile follow the
/// reply.
pub(super) fn run_on_host(
    ctx: &mut Ctx<'_>,
    argv: &Argv<'_>,
    engine: &mut Engine,
    start: impl FnOnce(&mut Engine, Run<'_, '_>) -> CmdResult,
) -> CmdResult {
    let mut client = ctx
        .server
        .script_client
        .take()
        .unwrap_or_else(|| Box::new(script_client()));
    client.db = ctx.client.db;
    // Cluster routing of the script's commands follows its caller's.
    client.cluster_readonly = ctx.client.cluster_readonly;
    client.asking = ctx.client.asking;
    client.cluster_slot = ctx.client.cluster_slot;
    client.cluster_obey =
        ctx.client.kind == crate::server::client::ClientKind::Master || ctx.server.loading;
    // The script runs as its caller's user (Redis's scriptCall); a
    // restricted user's denials are logged with the caller's info.
    client.user = ctx.client.user.clone();
    client.script_caller_info = None;
    if client.user.as_ref().is_some_and(|u| !u.borrow().open) {
        client.script_caller_info = Some(ctx.caller_info(argv));
    }
    let run = engine.run.clone();
    run.obey_caller
        .set(ctx.client.kind == ClientKind::Master || ctx.client.id == 0);
    ctx.server.running_script = Some(run.clone());
    let busy_threshold_ms = ctx.server.config.busy_reply_threshold;
    let oom = ctx.server.config.maxmemory != 0 && ctx.server.memory.pre_command_oom;
    let caller_id = ctx.client.id;
    let cluster = ctx.server.cluster.is_some();
    let obey = run.obey_caller.get();
    let disk_error = if obey {
        None
    } else {
        crate::server::call::script_disk_write_error(ctx.server)
    };
    let repl = &ctx.server.repl;
    let stale = repl
        .master
        .as_ref()
        .is_some_and(|m| m.state != crate::server::repl::LinkState::Connected)
        && !ctx.server.config.get_bool("replica-serve-stale-data");
    let readonly_replica =
        repl.master.is_some() && !obey && ctx.server.config.get_bool("replica-read-only");
    let too_few_replicas = repl.master.is_none() && repl.too_few_replicas();
    let mark = ctx.reply.raw().len();
    let result = {
        let mut host = ScriptHost {
            server: &mut *ctx.server,
            store: &mut *ctx.store,
            client: &mut client,
        };
        let run = Run {
            host: &mut host,
            reply: &mut ctx.reply,
            caller_id,
            busy_threshold_ms,
            oom,
            cluster,
            disk_error,
            stale,
            readonly_replica,
            too_few_replicas,
        };
        start(engine, run)
    };
    ctx.server.running_script = None;
    ctx.server.propagation.script_excluded = 0;
    ctx.server.script_client = Some(client);
    if run.caller_gone.get() {
        // Its disconnect was seen while busy: close it after the reply.
        ctx.client.close_after_reply = true;
    }
    // Messages the script published to its caller go before the reply.
    let mut held = Vec::new();
    let resp3 = ctx.client.resp3;
    ctx.server.pubsub.take_held(ctx.client.id, resp3, &mut held);
    if !held.is_empty() {
        let out = ctx.reply.raw();
        out.splice(mark..mark, held);
    }
    result
}

/// Parses numkeys at `argv[at]` and checks it against the arguments left.
pub(super) fn numkeys(argv: &Argv<'_>, at: usize) -> Result<usize, Error> {
    let n = int(argv.get(at))?;
    if n > (argv.len() - at - 1) as i64 {
        return Err(Error::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    if n < 0 {
        return Err(Error::err("Number of keys can't be negative"));
    }
    Ok(n as usize)
}

pub(super) fn eval_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, by_sha: bool, ro: bool) -> CmdResult {
    let nk = numkeys(&argv, 2)?;
    let mut engine = take_engine(ctx)?;
    let result = (|| {
        let sha = if by_sha {
            let sha = argv.get(1).to_ascii_lowercase();
            let sha = String::from_utf8_lossy(&sha).into_owned();
            if sha.len() != 40 || !engine.scripts.contains_key(&sha) {
                return Err(Error::NoScript);
            }
            sha
        } else {
            engine.load(argv.get(1))?
        };
        let keys: Vec<&[u8]> = argv.iter_from(3).take(nk).collect();
        let args: Vec<&[u8]> = argv.iter_from(3 + nk).collect();
        run_on_host(ctx, &argv, &mut engine, |e, run| {
            e.run_script(run, &sha, &keys, &args, ro)
        })
    })();
    ctx.server.scripting.put(engine);
    result
}

fn script_load(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut engine = take_engine(ctx)?;
    let result = engine.load(argv.get(2));
    ctx.server.scripting.put(engine);
    ctx.reply.bulk(result?.as_bytes());
    Ok(())
}

fn script_exists(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    ctx.reply.array(argv.len() - 2);
    for sha in argv.iter_from(2) {
        let sha = lossy(&sha.to_ascii_lowercase());
        let found = ctx
            .server
            .scripting
            .get()
            .is_some_and(|e| e.scripts.contains_key(&sha));
        ctx.reply.int(i64::from(found));
    }
    Ok(())
}

fn script_flush(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    match argv.try_get(2) {
        None => {}
        Some(a) if argv.len() == 3 && (is(a, "sync") || is(a, "async")) => {}
        Some(_) => return Err(Error::err("SCRIPT FLUSH only support SYNC|ASYNC option")),
    }
    // Redis throws its EVAL Lua state away; functions live on, so here
    // only the cached scripts go.
    if let Some(mut engine) = ctx.server.scripting.take() {
        engine.scripts.clear();
        engine.shas.clear();
        engine.body_bytes = 0;
        // The dropped scripts' registry slots.
        engine.lua.expire_registry_values();
        let _ = engine.lua.gc_collect();
        ctx.server.scripting.put(engine);
    }
    ctx.reply.ok();
    Ok(())
}

fn script_kill(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    kill_running(ctx, false)
}

/// SCRIPT KILL and FUNCTION KILL (Redis's scriptKill): stops the running
/// script unless it wrote, or is of the other kind.
pub(super) fn kill_running(ctx: &mut Ctx<'_>, function: bool) -> CmdResult {
    let Some(run) = &ctx.server.running_script else {
        return Err(NOTBUSY);
    };
    if run.wrote.get() {
        return Err(UNKILLABLE);
    }
    if function != run.is_function.get() {
        return Err(ctx.server.busy_error());
    }
    run.killed.set(true);
    ctx.reply.ok();
    Ok(())
}

/// -UNKILLABLE once the running script wrote.
const UNKILLABLE: Error = Error::raw("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");

/// SCRIPT DEBUG YES|SYNC|NO: how the client's next EVAL is debugged.
fn script_debug(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    // The debugger talks on the socket directly: nothing may be queued.
    if !ctx.reply.raw().is_empty() || ctx.client.bufs.pending.get() != 0 {
        return Err(Error::err("SCRIPT DEBUG must be called outside a pipeline"));
    }
    use crate::server::client::LuaDebug;
    let mode = argv.get(2);
    ctx.client.lua_debug = if is(mode, "no") {
        None
    } else if is(mode, "yes") {
        Some(LuaDebug::Forked)
    } else if is(mode, "sync") {
        Some(LuaDebug::Sync)
    } else {
        return Err(Error::err("Use SCRIPT DEBUG YES/SYNC/NO"));
    };
    ctx.reply.ok();
    Ok(())
}

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

fn script_help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.array(SCRIPT_HELP.len());
    for line in SCRIPT_HELP {
        ctx.reply.simple(line);
    }
    Ok(())
}
