//! Lua scripting (Redis's `eval.c`, `script.c`, `script_lua.c`): one Lua 5.1
//! state per server, living on the executor thread, with compiled scripts
//! cached by the SHA-1 of their body.
//!
//! The engine knows no server state. A script runs inside a command
//! handler, which hands the engine a [`Host`] for that one run: `redis.call`
//! goes through [`Host::call`] (the server's one command path), and the
//! instruction-count hook calls [`Host::serve_while_busy`] once the script
//! passes busy-reply-threshold, so other clients get -BUSY and SCRIPT KILL
//! can stop it, as Redis's processEventsWhileBlocked does. The host is
//! reached through a pointer held in [`RunState`] for exactly the duration
//! of the run (see the SAFETY notes in `bridge.rs`).

pub mod bridge;
pub mod function;
pub mod ldb;
pub mod lib;
pub mod lua;
pub mod sandbox;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use mlua::{Function, Lua, Value};
use sha1::{Digest, Sha1};

use crate::error::Error;
use crate::net::reply::ReplyBuf;
use crate::net::request::Argv;

/// The server as a running script sees it, handed to the engine for one
/// run.
pub trait Host {
    /// Runs `argv` as the script's client (`redis.call`/`pcall`) and
    /// appends its reply, or its error, to `out`. `read_only` refuses
    /// writes (EVAL_RO, `no-writes`); `resp3` is the script's protocol
    /// (`redis.setresp`). Says how it went; an error is counted in the
    /// statistics already.
    fn call(&mut self, argv: Argv<'_>, out: &mut Vec<u8>, read_only: bool, resp3: bool) -> Called;
    /// Whether the calling client's user may run `argv`
    /// (`redis.acl_check_cmd`); None when no such command exists.
    fn acl_allows(&mut self, argv: crate::net::request::Argv<'_>) -> Option<bool>;

    /// Where the script's next commands propagate (`redis.set_repl`):
    /// bit 0 the AOF, bit 1 the replicas.
    fn set_replication(&mut self, targets: u8);
    /// Serves other clients while the script runs past
    /// busy-reply-threshold; may set [`RunState::killed`].
    fn serve_while_busy(&mut self);
}

/// A [`Host`] pointer with its lifetime erased, stored while a run lasts.
type HostPtr = *mut (dyn Host + 'static);

/// Script flags from a `#!lua flags=...` shebang.
pub mod sflag {
    /// `no-writes`: the script may not call write commands.
    pub const NO_WRITES: u32 = 1 << 0;
    /// `allow-oom`.
    pub const ALLOW_OOM: u32 = 1 << 1;
    /// `allow-stale`.
    pub const ALLOW_STALE: u32 = 1 << 2;
    /// `no-cluster`.
    pub const NO_CLUSTER: u32 = 1 << 3;
    /// `allow-cross-slot-keys`.
    pub const ALLOW_CROSS_SLOT: u32 = 1 << 4;
    /// The script had a shebang at all (no "compat" mode).
    pub const HAS_SHEBANG: u32 = 1 << 5;
}

/// Runs `f` with the Lua memory limit lifted. mlua wraps every value it
/// creates in a protected call (a fresh C closure each time) while a limit
/// is set; Rust code that builds many values (KEYS/ARGV, command replies)
/// runs unlimited and fast, and the limit applies to script code again
/// right after.
pub fn unlimited<T>(lua: &Lua, run: &RunState, f: impl FnOnce() -> T) -> T {
    let limit = run.mem_limit.get();
    if limit == 0 || !run.active.get() {
        return f();
    }
    let _ = lua.set_memory_limit(0);
    let r = f();
    let _ = lua.set_memory_limit(limit);
    r
}

/// A compiled EVAL script.
pub struct Script {
    /// The compiled body, held in the Lua registry: a `Function` handle
    /// takes a slot of mlua's reference stack, which Lua 5.1 caps at about
    /// 8,000, and a server may cache far more scripts than that.
    pub func: mlua::RegistryKey,
    /// Shebang flags.
    pub flags: u32,
}

/// What a running script needs from the server, valid only while
/// [`RunState::active`] is set.
pub struct RunState {
    /// A script is running.
    pub active: Cell<bool>,
    /// The host of the running script; set only while `active`.
    host: Cell<Option<HostPtr>>,
    /// The script speaks RESP3 to the server (`redis.setresp(3)`).
    pub resp3: Cell<bool>,
    /// Id of the client that called the script.
    pub caller_id: Cell<u64>,
    /// The caller is this server's master or the AOF (id 0, no
    /// connection): its writes run even on a read-only replica (Redis's
    /// mustObeyClient).
    pub obey_caller: Cell<bool>,
    /// Write commands are refused (EVAL_RO, `no-writes`).
    pub read_only: Cell<bool>,
    /// A write command ran: SCRIPT KILL is refused from now on.
    pub wrote: Cell<bool>,
    /// The script declared `allow-oom`: its writes are never refused for
    /// memory.
    pub allow_oom: Cell<bool>,
    /// SCRIPT KILL or SHUTDOWN NOSAVE asked the script to stop.
    pub killed: Cell<bool>,
    /// The script passed busy-reply-threshold.
    pub busy: Cell<bool>,
    /// Running a function (FCALL) rather than EVAL.
    pub is_function: Cell<bool>,
    /// When the script started.
    pub started: Cell<Instant>,
    /// busy-reply-threshold in milliseconds.
    pub threshold_ms: Cell<u64>,
    /// Scratch output for commands called by the script.
    pub scratch: RefCell<Vec<u8>>,
    /// The caller disconnected while the script ran.
    pub caller_gone: Cell<bool>,
    /// The script declared `allow-cross-slot-keys`.
    pub allow_cross_slot: Cell<bool>,
    /// Name of the running script (sha or function name).
    pub name: RefCell<String>,
    /// The FCALL command line (FUNCTION STATS).
    pub command: RefCell<Vec<Vec<u8>>>,
    /// Library count at start (FUNCTION STATS while busy).
    pub libraries: Cell<usize>,
    /// Function count at start.
    pub functions: Cell<usize>,
    /// Reused argument vector for redis.call.
    pub argv: RefCell<crate::net::request::OwnedArgv>,
    /// The hook runs on every line (after a kill) and must be re-armed.
    pub hook_every_line: Cell<bool>,
    /// The Lua memory limit in force while Lua code runs (0: none).
    pub mem_limit: Cell<usize>,
    /// While FUNCTION LOAD runs library code: when it must give up.
    pub load_deadline: Cell<Option<Instant>>,
    /// The Lua debugger's session, when a client debugs its EVAL.
    pub ldb: RefCell<ldb::Ldb>,
}

impl RunState {
    fn new() -> Self {
        RunState {
            active: Cell::new(false),
            host: Cell::new(None),
            resp3: Cell::new(false),
            caller_id: Cell::new(0),
            obey_caller: Cell::new(false),
            allow_cross_slot: Cell::new(false),
            read_only: Cell::new(false),
            wrote: Cell::new(false),
            allow_oom: Cell::new(false),
            killed: Cell::new(false),
            busy: Cell::new(false),
            is_function: Cell::new(false),
            started: Cell::new(Instant::now()),
            threshold_ms: Cell::new(5000),
            scratch: RefCell::new(Vec::new()),
            caller_gone: Cell::new(false),
            name: RefCell::new(String::new()),
            command: RefCell::new(Vec::new()),
            libraries: Cell::new(0),
            functions: Cell::new(0),
            argv: RefCell::new(crate::net::request::OwnedArgv::default()),
            hook_every_line: Cell::new(false),
            mem_limit: Cell::new(0),
            load_deadline: Cell::new(None),
            ldb: RefCell::new(ldb::Ldb::default()),
        }
    }

    /// Runs `f` with the host of the running script; None when no script
    /// runs.
    pub fn with_host<T>(&self, f: impl FnOnce(&mut dyn Host) -> T) -> Option<T> {
        if !self.active.get() {
            return None;
        }
        let ptr = self.host.get()?;
        // SAFETY: the pointer was made from the `&mut dyn Host` that
        // `Engine::call` holds for the whole run and is cleared before that
        // borrow ends; while Lua runs, `Engine::call` itself does not touch
        // the host, so this is its only user. Calls do not nest: a command
        // run through the host cannot start another script while one runs
        // (the engine is out of the server meanwhile).
        Some(f(unsafe { &mut *ptr }))
    }
}

/// The Lua engine: state, environment and script cache.
pub struct Engine {
    /// The Lua state.
    pub lua: Lua,
    /// Shared with the Rust callbacks registered in the state.
    pub run: Rc<RunState>,
    /// Compiled scripts by lowercase hex SHA-1.
    pub scripts: HashMap<String, Script>,
    /// Script bodies in load order, kept for memory accounting.
    pub body_bytes: usize,
    /// The sha of every cached body, so a repeated EVAL finds its script
    /// without hashing the body again (Redis looks the body up in a dict
    /// the same way before computing a SHA-1).
    pub shas: HashMap<Box<[u8]>, String>,
    /// The function libraries (FUNCTION LOAD).
    pub libraries: function::Libraries,
    /// Handles into the Lua state.
    parts: lua::Parts,
    /// The interned names `KEYS` and `ARGV`, made once rather than per run.
    kv_names: [mlua::LuaString; 2],
    /// Runs since the last collection step.
    runs_since_gc: u32,
}

/// Every this many runs the collector takes a step of this many KB
/// (Redis's LUA_GC_CYCLE_PERIOD): garbage never piles up to a full cycle,
/// which would cost latency, nor grows the heap between cycles.
const GC_CYCLE_PERIOD: u32 = 50;

/// One collection step of `kbytes` of work (`lua_gc(L, LUA_GCSTEP, n)`).
fn gc_step_kbytes(lua: &Lua, kbytes: i32) {
    // SAFETY: lua_gc on the state mlua hands over, inside its protected
    // call; it pushes and pops nothing.
    let _ = unsafe {
        lua.exec_raw::<()>((), |state| {
            mlua::ffi::lua_gc(state, mlua::ffi::LUA_GCSTEP, kbytes);
        })
    };
}

/// Where the server keeps its engine: empty until the first script.
#[derive(Default)]
pub struct EngineSlot(Option<Box<Engine>>);

// SAFETY: the Lua state is not thread-safe, but the slot is empty when the
// executor moves to its thread (the engine is created lazily there), and
// the engine never leaves that thread afterwards.
unsafe impl Send for EngineSlot {}

impl EngineSlot {
    /// Takes the engine out (while a script runs, or to drop it).
    pub fn take(&mut self) -> Option<Box<Engine>> {
        self.0.take()
    }

    /// Puts the engine back.
    pub fn put(&mut self, engine: Box<Engine>) {
        self.0 = Some(engine);
    }

    /// Drops the engine (SCRIPT FLUSH): the next script gets a new state.
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// The engine, if created.
    pub fn get(&self) -> Option<&Engine> {
        self.0.as_deref()
    }
}

/// Lowercase hex SHA-1 of `data` (script ids, redis.sha1hex).
pub fn sha1_hex(data: &[u8]) -> String {
    let digest = Sha1::digest(data);
    let mut s = String::with_capacity(40);
    for b in digest.iter() {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    s
}

impl Engine {
    /// What the script cache takes outside the Lua state (INFO
    /// `used_memory_scripts_eval`): the bodies, and each script's SHA-1
    /// held twice with its entries in the two maps.
    pub fn scripts_memory(&self) -> usize {
        use std::mem::size_of;
        let entry = size_of::<(String, Script)>() + size_of::<(Box<[u8]>, String)>() + 2 * 40;
        self.body_bytes + self.scripts.len() * entry
    }

    /// A fresh Lua state with Redis's environment.
    /// `mem_limit` caps the Lua heap while script code runs (0: none).
    pub fn new(mem_limit: usize) -> Result<Box<Engine>, Error> {
        let run = Rc::new(RunState::new());
        let parts =
            lua::create_state(run.clone()).map_err(|e| Error::err_owned(format!("Lua: {e}")))?;
        run.mem_limit.set(mem_limit);
        lua::arm_hook(&parts.lua, run.clone(), false);
        let name = |n: &str| {
            parts
                .lua
                .create_string(n)
                .map_err(|e| Error::err_owned(format!("Lua: {e}")))
        };
        let kv_names = [name("KEYS")?, name("ARGV")?];
        Ok(Box::new(Engine {
            lua: parts.lua.clone(),
            run,
            scripts: HashMap::new(),
            body_bytes: 0,
            shas: HashMap::new(),
            libraries: function::Libraries::default(),
            parts,
            kv_names,
            runs_since_gc: 0,
        }))
    }

    /// Compiles `body` and caches it under its SHA-1; returns the sha.
    pub fn load(&mut self, body: &[u8]) -> Result<String, Error> {
        if let Some(sha) = self.shas.get(body) {
            if self.scripts.contains_key(sha) {
                return Ok(sha.clone());
            }
        }
        let sha = sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, skip) = parse_shebang(body)?;
        let func = self
            .lua
            .load(&body[skip..])
            .set_name("@user_script")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(self.parts.env.clone())
            .into_function()
            .map_err(|e| {
                Error::err_owned(format!(
                    "Error compiling script (new function): {}",
                    lua::error_text(&e)
                ))
            })?;
        let func = self.lua.create_registry_value(func).map_err(|e| {
            Error::err_owned(format!(
                "Error compiling script (new function): {}",
                lua::error_text(&e)
            ))
        })?;
        self.body_bytes += body.len();
        self.scripts.insert(sha.clone(), Script { func, flags });
        self.shas.insert(body.into(), sha.clone());
        // Compiling leaves garbage (the parser's constant table, the C
        // closures of the calls into Lua) that the incremental collector
        // otherwise frees in large batches, the slots it frees scattered
        // among slabs still pinned by newer garbage: 50,000 SCRIPT LOADs
        // measured allocator_frag_ratio 1.07 so, 1.02 with one step each.
        let _ = self.lua.gc_step();
        Ok(sha)
    }

    /// Runs the cached script `sha` on `run` and writes its reply.
    /// `keys`/`args` become KEYS and ARGV.
    pub fn run_script(
        &mut self,
        run: Run<'_, '_>,
        sha: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        read_only: bool,
    ) -> Result<(), Error> {
        let Some(script) = self.scripts.get(sha) else {
            return Err(Error::NoScript);
        };
        let func: Function = self
            .lua
            .registry_value(&script.func)
            .map_err(|e| Error::err_owned(lua::error_text(&e)))?;
        let g = self.lua.globals();
        let set = |name: &mlua::LuaString, items: &[&[u8]]| -> mlua::Result<()> {
            let t = self.lua.create_table_with_capacity(items.len(), 0)?;
            for (i, a) in items.iter().enumerate() {
                t.raw_set(i + 1, self.lua.create_string(a)?)?;
            }
            g.raw_set(name, t)
        };
        set(&self.kv_names[0], keys)
            .and_then(|_| set(&self.kv_names[1], args))
            .map_err(|e| Error::err_owned(format!("Lua: {e}")))?;
        let runner = self.parts.runner.clone();
        let flags = script.flags;
        self.call(run, sha, read_only, false, flags, || {
            runner.call::<(bool, Value)>(func)
        })
    }

    /// Runs `invoke` (which calls into Lua) with the run state pointing at
    /// the run's host, then converts the result or error into the reply.
    /// `ro`: called as EVAL_RO, EVALSHA_RO or FCALL_RO.
    pub fn call(
        &mut self,
        r: Run<'_, '_>,
        name: &str,
        ro: bool,
        is_function: bool,
        flags: u32,
        invoke: impl FnOnce() -> mlua::Result<(bool, Value)>,
    ) -> Result<(), Error> {
        let flagged = is_function || flags & sflag::HAS_SHEBANG != 0;
        prepare_for_run(&r, ro, flagged, flags)?;
        let read_only = ro || (flagged && flags & sflag::NO_WRITES != 0);
        let run = &self.run;
        run.allow_oom.set(flagged && flags & sflag::ALLOW_OOM != 0);
        // Scripts without flags (EVAL's compatibility mode) may touch keys
        // of any slot this node serves.
        run.allow_cross_slot
            .set(!flagged || flags & sflag::ALLOW_CROSS_SLOT != 0);
        let host: *mut (dyn Host + '_) = r.host;
        // SAFETY: only the lifetime is erased; `with_host` documents why the
        // pointer is used only while `r.host` is borrowed here.
        let host: HostPtr = unsafe { std::mem::transmute(host) };
        run.host.set(Some(host));
        // The script client speaks RESP2 until redis.setresp.
        run.resp3.set(false);
        run.caller_id.set(r.caller_id);
        run.read_only.set(read_only);
        run.wrote.set(false);
        run.killed.set(false);
        run.busy.set(false);
        run.is_function.set(is_function);
        run.started.set(Instant::now());
        run.threshold_ms.set(r.busy_threshold_ms);
        run.caller_gone.set(false);
        name.clone_into(&mut run.name.borrow_mut());
        run.libraries.set(self.libraries.libs.len());
        run.functions.set(self.libraries.function_count());
        run.active.set(true);
        let debugging = run.ldb.borrow().active;
        if debugging {
            let tools = ldb::Tools {
                env: self.parts.env.clone(),
                getlocal: self.parts.getlocal.clone(),
            };
            lua::arm_ldb_hook(&self.lua, self.run.clone(), tools);
        } else if run.hook_every_line.get() {
            lua::arm_hook(&self.lua, self.run.clone(), false);
        }
        let limit = run.mem_limit.get();
        let _ = self.lua.set_memory_limit(limit);
        let result = invoke();
        let _ = self.lua.set_memory_limit(0);
        if debugging {
            lua::arm_hook(&self.lua, self.run.clone(), false);
        }
        run.active.set(false);
        run.host.set(None);
        let reply = match result {
            Ok((true, value)) => match bridge::returned_error(&value) {
                Some(e) => Err(e),
                None => {
                    bridge::write_reply(r.reply, &value, run.resp3.get());
                    Ok(())
                }
            },
            Ok((false, err)) => Err(bridge::script_error(&err, name)),
            Err(e) => Err(Error::err_owned(format!(
                "Error running script {name}, {:.100}",
                lua::error_text(&e)
            ))),
        };
        // Give back what a failed (maybe memory-hungry) script left behind.
        if reply.is_err() {
            let _ = self.lua.gc_collect();
        }
        self.runs_since_gc += 1;
        if self.runs_since_gc == GC_CYCLE_PERIOD {
            gc_step_kbytes(&self.lua, GC_CYCLE_PERIOD as i32);
            self.runs_since_gc = 0;
        }
        reply
    }
}

/// How a command a script called went ([`Host::call`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Called {
    /// It ran; `out` holds its reply (maybe an error reply it wrote).
    Done,
    /// It ran and failed; `out` holds its counted error.
    Failed,
    /// A check refused it before it ran; `out` holds the counted error
    /// (the debugger shows it without a reply).
    Refused,
}

/// One run of a script: the host it reaches the server through, where its
/// reply goes, and facts about the caller.
pub struct Run<'h, 'r> {
    /// The server, for `redis.call` and the busy loop.
    pub host: &'h mut dyn Host,
    /// The caller's reply.
    pub reply: &'h mut ReplyBuf<'r>,
    /// Id of the calling client (its disconnect is noticed while busy).
    pub caller_id: u64,
    /// busy-reply-threshold in milliseconds.
    pub busy_threshold_ms: u64,
    /// Memory was over maxmemory when the command started (Redis's
    /// pre_command_oom_state with maxmemory set).
    pub oom: bool,
    /// The server runs in cluster mode.
    pub cluster: bool,
    /// Persistence fails: a script that may write is refused before it
    /// starts, with this error.
    pub disk_error: Option<Error>,
    /// A replica whose master link is down with
    /// `replica-serve-stale-data no`.
    pub stale: bool,
    /// A read-only replica, and the caller is not its master.
    pub readonly_replica: bool,
    /// A master with fewer good replicas than `min-replicas-to-write`.
    pub too_few_replicas: bool,
}

/// Redis's scriptPrepareForRun: scripts with flags (functions, or a
/// shebang) are checked against the server's state as their flags say
/// before they start; scripts without (EVAL's compatibility mode) only
/// for a stale replica.
fn prepare_for_run(r: &Run<'_, '_>, ro: bool, flagged: bool, flags: u32) -> Result<(), Error> {
    if !flagged {
        if r.stale {
            return Err(Error::raw(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ));
        }
        return Ok(());
    }
    if r.cluster && flags & sflag::NO_CLUSTER != 0 {
        return Err(Error::err(
            "Can not run script on cluster, 'no-cluster' flag is set.",
        ));
    }
    if r.stale && flags & sflag::ALLOW_STALE == 0 {
        return Err(Error::raw(
            "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and \
             'allow-stale' flag is not set on the script.",
        ));
    }
    if flags & sflag::NO_WRITES == 0 {
        if r.readonly_replica {
            return Err(Error::raw(
                "READONLY Can not run script with write flag on readonly replica",
            ));
        }
        if let Some(e) = &r.disk_error {
            return Err(e.clone());
        }
        if ro {
            return Err(Error::err(
                "Can not execute a script with write flag using *_ro command.",
            ));
        }
        if r.too_few_replicas {
            return Err(Error::raw("NOREPLICAS Not enough good replicas to write."));
        }
    }
    if r.oom && flags & (sflag::ALLOW_OOM | sflag::NO_WRITES) == 0 {
        return Err(Error::raw(
            "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'",
        ));
    }
    Ok(())
}

/// Parses a `#!<engine> flags=a,b` first line: returns the flags and how
/// many bytes to skip (the line without its newline, so line numbers stay).
pub fn parse_shebang(body: &[u8]) -> Result<(u32, usize), Error> {
    if !body.starts_with(b"#!") {
        return Ok((0, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err(Error::err("Invalid script shebang"));
    };
    let line = String::from_utf8_lossy(&body[..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(Error::err_owned(format!(
            "Unexpected engine in script shebang: {engine}"
        )));
    }
    let mut flags = sflag::HAS_SHEBANG;
    for p in parts {
        let Some(list) = p.strip_prefix("flags=") else {
            return Err(Error::err_owned(format!("Unknown lua shebang option: {p}")));
        };
        for f in list.split(',').filter(|f| !f.is_empty()) {
            flags |= match f {
                "no-writes" => sflag::NO_WRITES,
                "allow-oom" => sflag::ALLOW_OOM,
                "allow-stale" => sflag::ALLOW_STALE,
                "no-cluster" => sflag::NO_CLUSTER,
                "allow-cross-slot-keys" => sflag::ALLOW_CROSS_SLOT,
                other => {
                    return Err(Error::err_owned(format!(
                        "Unexpected flag in script shebang: {other}"
                    )))
                }
            };
        }
    }
    Ok((flags, end))
}
