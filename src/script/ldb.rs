//! The Lua debugger (Redis's LDB, `eval.c`): a client that said SCRIPT
//! DEBUG YES|SYNC gets its next EVAL run under a line hook that stops at
//! each step or breakpoint, sends what it logged as an array of status
//! lines straight to the client's socket, and reads the debugger's
//! commands from it (blocking), as `redis-cli --ldb` expects. The server
//! side (fork, the socket, ending the session) is in `cmd/scripting.rs`;
//! this is the engine side: the session's state, the hook and the REPL.

use std::time::Instant;

use mlua::{Function, Lua, Table, Value, VmState};

use super::RunState;
use crate::util::repr::repr;

/// Breakpoints a session may hold (LDB_BREAKPOINTS_MAX).
const BREAKPOINTS_MAX: usize = 64;
/// Default cut of logged replies and values (LDB_MAX_LEN_DEFAULT).
const MAXLEN_DEFAULT: usize = 256;
/// Nesting shown of a table inside a table (LUA_MINSTACK / 2).
const MAX_DEPTH: usize = 10;
/// The hook also runs every this many instructions, to notice a script
/// that runs on without reaching a line that stops.
pub const COUNT_EVERY: u32 = 100_000;

/// One debugging session's state (Redis's `struct ldbState`).
#[derive(Default)]
pub struct Ldb {
    /// A session runs.
    pub active: bool,
    /// In a forked child (SCRIPT DEBUG YES) rather than the server itself.
    pub forked: bool,
    /// The debugging client's socket.
    fd: i32,
    /// Stop at the next line whatever the breakpoints.
    pub step: bool,
    /// Stop at the next line: `redis.breakpoint()` was called.
    pub luabp: bool,
    bps: Vec<i64>,
    src: Vec<Vec<u8>>,
    /// The line the script is at.
    pub current_line: i64,
    cbuf: Vec<u8>,
    maxlen: usize,
    maxlen_hint_sent: bool,
    logs: Vec<Vec<u8>>,
}

/// Handles into the Lua state the debugger's commands use.
#[derive(Clone)]
pub struct Tools {
    /// The scripts' global environment (`eval`, `redis`).
    pub env: Table,
    /// The debug library's `getlocal` (`print`).
    pub getlocal: Function,
}

impl Ldb {
    /// Starts a session on socket `fd` for script `body`, split in lines
    /// (trailing newlines dropped) for `list` and the stop lines.
    pub fn start(&mut self, fd: i32, forked: bool, body: &[u8]) {
        let mut body = body;
        while let [rest @ .., b'\n' | b'\r'] = body {
            body = rest;
        }
        *self = Ldb {
            active: true,
            forked,
            fd,
            step: true,
            maxlen: MAXLEN_DEFAULT,
            // As Redis's sdssplitlen: an empty body has no line at all.
            src: if body.is_empty() {
                Vec::new()
            } else {
                body.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
            },
            ..Ldb::default()
        };
    }

    /// Ends the session: `<endsession>` and what is still logged go out.
    pub fn end(&mut self) {
        self.log("<endsession>");
        self.send_logs();
        self.active = false;
        self.src.clear();
    }

    /// Commands run by the script are logged (a step is under way).
    pub fn enabled(&self) -> bool {
        self.active && self.step
    }

    /// Adds a line to what the next stop sends.
    pub fn log(&mut self, line: impl Into<Vec<u8>>) {
        self.logs.push(line.into());
    }

    /// Logs `line` cut to `maxlen` bytes, hinting once how to see it all.
    fn log_with_maxlen(&mut self, mut line: Vec<u8>) {
        let trimmed = self.maxlen != 0 && line.len() > self.maxlen;
        if trimmed {
            line.truncate(self.maxlen);
            line.extend_from_slice(b" ...");
        }
        self.log(line);
        if trimmed && !self.maxlen_hint_sent {
            self.maxlen_hint_sent = true;
            self.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.");
        }
    }

    /// Sends the logged lines as an array of status replies, newlines
    /// turned to spaces. A failed write is noticed by the next read.
    pub fn send_logs(&mut self) {
        let mut proto = format!("*{}\r\n", self.logs.len()).into_bytes();
        for line in self.logs.drain(..) {
            proto.push(b'+');
            proto.extend(
                line.iter()
                    .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
            );
            proto.extend_from_slice(b"\r\n");
        }
        write_all(self.fd, &proto);
    }

    /// Writes `bytes` to the debugging client (the final reply).
    pub fn write(&self, bytes: &[u8]) {
        write_all(self.fd, bytes);
    }

    fn source_line(&self, line: i64) -> &[u8] {
        match usize::try_from(line - 1).ok().and_then(|i| self.src.get(i)) {
            Some(l) => l,
            None => b"<out of range source code line>",
        }
    }

    fn is_breakpoint(&self, line: i64) -> bool {
        self.bps.contains(&line)
    }

    fn log_source_line(&mut self, line: i64) {
        let prefix = match (self.current_line == line, self.is_breakpoint(line)) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut l = format!("{prefix}{line:<3} ").into_bytes();
        l.extend_from_slice(self.source_line(line));
        self.log(l);
    }

    fn list(&mut self, around: i64, context: i64) {
        for j in 1..=self.src.len() as i64 {
            if around != 0 && (around - j).abs() > context {
                continue;
            }
            self.log_source_line(j);
        }
    }

    fn breakpoints(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 1 {
            if self.bps.is_empty() {
                self.log("No breakpoints set. Use 'b <line>' to add one.");
            } else {
                self.log(format!("{} breakpoints set:", self.bps.len()));
                for line in self.bps.clone() {
                    self.log_source_line(line);
                }
            }
            return;
        }
        for arg in &argv[1..] {
            let Some(line) = crate::util::num::parse_i64(arg) else {
                let mut l = b"Invalid argument:'".to_vec();
                l.extend_from_slice(arg);
                l.push(b'\'');
                self.log(l);
                continue;
            };
            if line == 0 {
                self.bps.clear();
                self.log("All breakpoints removed.");
            } else if line > 0 {
                if self.bps.len() == BREAKPOINTS_MAX {
                    self.log("Too many breakpoints set.");
                } else if line <= self.src.len() as i64 && !self.is_breakpoint(line) {
                    self.bps.push(line);
                    self.list(line, 1);
                } else {
                    self.log("Wrong line number.");
                }
            } else if let Some(i) = self.bps.iter().position(|&l| l == -line) {
                self.bps.remove(i);
                self.log("Breakpoint removed.");
            } else {
                self.log("No breakpoint in the specified line.");
            }
        }
    }

    fn maxlen_command(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 2 {
            let mut v = atoi(&argv[1]);
            self.maxlen_hint_sent = true;
            if v != 0 && v <= 60 {
                v = 60;
            }
            self.maxlen = v as usize;
        }
        if self.maxlen != 0 {
            self.log(format!(
                "<value> replies are truncated at {} bytes.",
                self.maxlen
            ));
        } else {
            self.log("<value> replies are unlimited.");
        }
    }

    /// Parses one command from what the client sent, with Redis's
    /// forgiving parser: Ok(None) when more must be read.
    fn parse_command(&self) -> Result<Option<Vec<Vec<u8>>>, ()> {
        let buf = &self.cbuf;
        if buf.is_empty() {
            return Ok(None);
        }
        let find = |from: usize, pat: &[u8]| {
            buf.get(from..)?
                .windows(pat.len())
                .position(|w| w == pat)
                .map(|i| i + from)
        };
        let Some(star) = buf.iter().position(|&b| b == b'*') else {
            return Err(());
        };
        let Some(eol) = find(star, b"\r\n") else {
            return Ok(None);
        };
        let argc = atoi(&buf[star + 1..eol]);
        if argc <= 0 || argc > 1024 {
            return Err(());
        }
        let mut p = eol + 2;
        let mut argv = Vec::with_capacity(argc as usize);
        while argv.len() < argc as usize {
            match buf.get(p) {
                None => return Ok(None),
                Some(b'$') => {}
                Some(_) => return Err(()),
            }
            let Some(eol) = find(p, b"\r\n") else {
                return Ok(None);
            };
            let len = atoi(&buf[p + 1..eol]);
            if len <= 0 || len > 1024 {
                return Err(());
            }
            p = eol + 2;
            let end = p + len as usize;
            if end + 2 > buf.len() {
                return Ok(None);
            }
            argv.push(buf[p..end].to_vec());
            if &buf[end..end + 2] != b"\r\n" {
                return Err(());
            }
            p = end + 2;
        }
        Ok(Some(argv))
    }
}

/// C's atoi: leading blanks, a sign, digits; 0 when there are none.
fn atoi(s: &[u8]) -> i64 {
    let s = match s.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(i) => &s[i..],
        None => return 0,
    };
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
        n = n.wrapping_mul(10).wrapping_add(i64::from(b - b'0'));
    }
    if neg {
        -n
    } else {
        n
    }
}

fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a live slice to a descriptor this session
        // owns; errors end the loop.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Reads what the client sent next; false when it closed or failed.
fn read_more(ldb: &mut Ldb) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        // SAFETY: reads into a live stack buffer of the given length.
        let n = unsafe { libc::read(ldb.fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return false;
        }
        ldb.cbuf.extend_from_slice(&buf[..n as usize]);
        return true;
    }
}

/// Appends a human-readable form of a Lua value (ldbCatStackValue).
pub fn cat_value(out: &mut Vec<u8>, v: &Value, level: usize) {
    if level == MAX_DEPTH {
        out.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    match v {
        Value::String(s) => repr(&s.as_bytes(), out),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => {
            out.extend_from_slice(crate::util::num::fmt_g(*n as f64, 6).as_bytes())
        }
        Value::Number(n) => out.extend_from_slice(crate::util::num::fmt_g(*n, 6).as_bytes()),
        Value::Nil => out.extend_from_slice(b"nil"),
        Value::Table(t) => {
            let (mut array, mut full) = (Vec::new(), Vec::new());
            let mut is_array = true;
            let mut expected = 1.0;
            for pair in t.clone().pairs::<Value, Value>() {
                let Ok((k, v)) = pair else { break };
                let index = match k {
                    Value::Integer(n) => Some(n as f64),
                    Value::Number(n) => Some(n),
                    _ => None,
                };
                if index != Some(expected) {
                    is_array = false;
                }
                cat_value(&mut array, &v, level + 1);
                array.extend_from_slice(b"; ");
                full.push(b'[');
                cat_value(&mut full, &k, level + 1);
                full.extend_from_slice(b"]=");
                cat_value(&mut full, &v, level + 1);
                full.extend_from_slice(b"; ");
                expected += 1.0;
            }
            let mut chosen = if is_array { array } else { full };
            chosen.truncate(chosen.len().saturating_sub(2));
            out.push(b'{');
            out.extend_from_slice(&chosen);
            out.push(b'}');
        }
        Value::Function(_) | Value::UserData(_) | Value::Thread(_) | Value::LightUserData(_) => {
            let name = match v {
                Value::Function(_) => "function",
                Value::UserData(_) => "userdata",
                Value::Thread(_) => "thread",
                _ => "light-userdata",
            };
            out.extend_from_slice(format!("\"{name}@{:p}\"", v.to_pointer()).as_bytes());
        }
        _ => out.extend_from_slice(b"\"<unknown-lua-type>\""),
    }
}

/// Appends a human-readable form of the RESP reply at `buf[*pos..]`
/// (ldbRedisProtocolToHuman).
pub fn cat_reply(out: &mut Vec<u8>, buf: &[u8], pos: &mut usize) {
    let Some(&kind) = buf.get(*pos) else { return };
    let start = *pos;
    let eol = buf[start..]
        .iter()
        .position(|&b| b == b'\r')
        .map_or(buf.len(), |i| start + i);
    let head = &buf[(start + 1).min(eol)..eol];
    *pos = (eol + 2).min(buf.len());
    let count = || crate::util::num::parse_i64(head).unwrap_or(0);
    match kind {
        b':' => out.extend_from_slice(head),
        b'$' => {
            let len = count();
            if len < 0 {
                out.extend_from_slice(b"NULL");
            } else {
                let end = (*pos + len as usize).min(buf.len());
                repr(&buf[*pos..end], out);
                *pos = (end + 2).min(buf.len());
            }
        }
        b'+' | b'-' => repr(&buf[start..eol], out),
        b'*' => {
            let n = count();
            if n < 0 {
                out.extend_from_slice(b"NULL");
                return;
            }
            out.push(b'[');
            cat_items(out, buf, pos, n);
            out.push(b']');
        }
        b'~' => {
            let n = count();
            out.extend_from_slice(b"~(");
            cat_items(out, buf, pos, n);
            out.push(b')');
        }
        b'%' => {
            let n = count();
            out.push(b'{');
            for j in 0..n {
                cat_reply(out, buf, pos);
                out.extend_from_slice(b" => ");
                cat_reply(out, buf, pos);
                if j != n - 1 {
                    out.push(b',');
                }
            }
            out.push(b'}');
        }
        b'_' => out.extend_from_slice(b"(null)"),
        b'#' => out.extend_from_slice(if head == b"t" { b"#true" } else { b"#false" }),
        b',' => {
            out.extend_from_slice(b"(double) ");
            out.extend_from_slice(head);
        }
        _ => {}
    }
}

/// Appends `n` replies from `buf[*pos..]`, comma-separated.
fn cat_items(out: &mut Vec<u8>, buf: &[u8], pos: &mut usize, n: i64) {
    for j in 0..n {
        cat_reply(out, buf, pos);
        if j != n - 1 {
            out.push(b',');
        }
    }
}

/// Logs a command `redis.call` is about to run, while stepping.
pub fn log_command(run: &RunState, argv: crate::net::request::Argv<'_>) {
    let mut ldb = run.ldb.borrow_mut();
    if !ldb.enabled() {
        return;
    }
    let mut line = b"<redis>".to_vec();
    for (j, a) in argv.iter_from(0).enumerate() {
        if j == 10 {
            line.extend_from_slice(format!(" ... ({} more)", argv.len() - j - 1).as_bytes());
            break;
        }
        line.push(b' ');
        line.extend_from_slice(a);
    }
    ldb.log(line);
}

/// Logs the reply of a command the script ran, while stepping: a refusal
/// as `<error>`, anything else (the command's own errors too) as
/// `<reply>`.
pub fn log_reply(run: &RunState, reply: &[u8], refused: bool) {
    let mut ldb = run.ldb.borrow_mut();
    if !ldb.enabled() {
        return;
    }
    if refused {
        let end = reply.len().saturating_sub(2).max(1);
        let msg = &reply[1.min(reply.len())..end];
        log_error(&mut ldb, msg);
        return;
    }
    if reply.first() == Some(&b'-') {
        // Turning the error reply into a Lua error logs it as is first.
        let end = reply.len().saturating_sub(2);
        let mut line = b"<error> ".to_vec();
        line.extend_from_slice(&reply[..end]);
        ldb.log(line);
    }
    let mut line = b"<reply> ".to_vec();
    cat_reply(&mut line, reply, &mut 0);
    ldb.log_with_maxlen(line);
}

/// Logs an error a redis.* function raises, while stepping.
pub fn log_error_if_enabled(run: &RunState, msg: &[u8]) {
    let mut ldb = run.ldb.borrow_mut();
    if ldb.enabled() {
        log_error(&mut ldb, msg);
    }
}

fn log_error(ldb: &mut Ldb, msg: &[u8]) {
    let msg = msg.strip_prefix(b"ERR ").unwrap_or(msg);
    let mut line = b"<error> ".to_vec();
    line.extend_from_slice(msg);
    ldb.log(line);
}

/// `redis.debug(...)`: logs its arguments with the current line.
pub fn debug(run: &RunState, args: &[Value]) {
    let mut ldb = run.ldb.borrow_mut();
    if !ldb.active {
        return;
    }
    let mut line = format!("<debug> line {}: ", ldb.current_line).into_bytes();
    for (i, v) in args.iter().enumerate() {
        cat_value(&mut line, v, 0);
        if i + 1 != args.len() {
            line.extend_from_slice(b", ");
        }
    }
    ldb.log(line);
}

/// `redis.breakpoint()`: stops at the next line when debugging.
pub fn breakpoint(run: &RunState) -> bool {
    let mut ldb = run.ldb.borrow_mut();
    if ldb.active {
        ldb.luabp = true;
    }
    ldb.active
}

/// The line hook of a debugging session (luaLdbLineHook).
pub fn hook(
    lua: &Lua,
    dbg: &mlua::debug::Debug,
    run: &RunState,
    tools: &Tools,
) -> mlua::Result<VmState> {
    let line = dbg.current_line().map_or(-1, |l| l as i64);
    let in_script = dbg
        .source()
        .short_src
        .is_some_and(|s| s.contains("user_script"));
    let count_event = matches!(dbg.event(), mlua::debug::DebugEvent::Count);
    let reason;
    let mut timeout = false;
    {
        let mut ldb = run.ldb.borrow_mut();
        ldb.current_line = line;
        if !in_script {
            return Ok(VmState::Continue);
        }
        let bp = ldb.is_breakpoint(line) || ldb.luabp;
        if count_event && !ldb.step && !bp {
            let limit = match run.threshold_ms.get() {
                0 => 5000,
                ms => ms,
            };
            if (run.started.get().elapsed().as_millis() as u64) < limit {
                return Ok(VmState::Continue);
            }
            timeout = true;
            ldb.step = true;
        }
        if !ldb.step && !bp {
            return Ok(VmState::Continue);
        }
        reason = if bp && ldb.luabp {
            "redis.breakpoint() called"
        } else if bp {
            "break point"
        } else if timeout {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        ldb.step = false;
        ldb.luabp = false;
        ldb.log(format!("* Stopped at {line}, stop reason = {reason}"));
        ldb.log_source_line(line);
        ldb.send_logs();
    }
    let continuing = repl(lua, run, tools)?;
    if !continuing && timeout {
        return super::lua::raise(
            "ERR timeout during Lua debugging with client closing connection",
        );
    }
    run.started.set(Instant::now());
    Ok(VmState::Continue)
}

/// Reads and runs the debugger's commands until one lets the script go
/// on (ldbRepl): Ok(false) when the client went away.
fn repl(lua: &Lua, run: &RunState, tools: &Tools) -> mlua::Result<bool> {
    loop {
        let argv = {
            let mut ldb = run.ldb.borrow_mut();
            loop {
                match ldb.parse_command() {
                    Ok(Some(argv)) => break argv,
                    Err(()) => return super::lua::raise("ERR protocol error"),
                    Ok(None) => {}
                }
                if !read_more(&mut ldb) {
                    // The script runs on without anyone to stop for.
                    ldb.step = false;
                    ldb.bps.clear();
                    return Ok(false);
                }
                if ldb.cbuf.len() > 1 << 20 {
                    ldb.cbuf.clear();
                    return super::lua::raise("ERR max client buffer reached");
                }
            }
        };
        run.ldb.borrow_mut().cbuf.clear();
        let name = argv[0].to_ascii_lowercase();
        let is = |a: &str, b: &str| name == a.as_bytes() || name == b.as_bytes();
        if is("h", "help") {
            let mut ldb = run.ldb.borrow_mut();
            for line in HELP {
                ldb.log(*line);
            }
        } else if is("s", "step") || is("n", "next") {
            run.ldb.borrow_mut().step = true;
            return Ok(true);
        } else if is("c", "continue") {
            return Ok(true);
        } else if is("t", "trace") {
            trace(lua, run);
        } else if is("m", "maxlen") {
            run.ldb.borrow_mut().maxlen_command(&argv);
        } else if is("b", "break") {
            run.ldb.borrow_mut().breakpoints(&argv);
        } else if is("e", "eval") {
            eval(lua, run, tools, &argv);
        } else if is("a", "abort") {
            return super::lua::raise("ERR script aborted for user request");
        } else if argv.len() > 1 && is("r", "redis") {
            redis(lua, run, tools, &argv);
        } else if is("p", "print") {
            if argv.len() == 2 {
                print(lua, run, tools, &argv[1]);
            } else {
                print_all(lua, run, tools);
            }
        } else if is("l", "list") {
            let mut ldb = run.ldb.borrow_mut();
            let mut around = ldb.current_line;
            let mut context = 5;
            if argv.len() > 1 {
                let n = atoi(&argv[1]);
                if n > 0 {
                    around = n;
                }
            }
            if argv.len() > 2 {
                context = atoi(&argv[2]);
            }
            ldb.list(around, context);
        } else if is("w", "whole") {
            run.ldb.borrow_mut().list(1, 1_000_000);
        } else {
            run.ldb
                .borrow_mut()
                .log("<error> Unknown Redis Lua debugger command or wrong number of arguments.");
        }
        run.ldb.borrow_mut().send_logs();
    }
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

/// `trace`: the script's frames, innermost first.
fn trace(lua: &Lua, run: &RunState) {
    let mut frames = Vec::new();
    let mut level = 0;
    while let Some(f) = lua.inspect_stack(level, |d| {
        let src = d
            .source()
            .short_src
            .map(|s| s.into_owned())
            .unwrap_or_default();
        let name = d.names().name.map(|s| s.into_owned());
        (src, name, d.current_line().map_or(-1, |l| l as i64))
    }) {
        if f.0.contains("user_script") {
            frames.push((level, f.1, f.2));
        }
        level += 1;
    }
    let mut ldb = run.ldb.borrow_mut();
    for (level, name, line) in frames {
        let name = name.unwrap_or_else(|| "top level".into());
        ldb.log(format!(
            "{} {name}:",
            if level == 0 { "In" } else { "From" }
        ));
        ldb.log_source_line(line);
    }
    if level == 0 {
        ldb.log("<error> Can't retrieve Lua stack.");
    }
}

/// The locals of the frame at `level` (as the hook sees the stack), in
/// order. `getlocal` runs one frame further down.
fn locals(lua: &Lua, tools: &Tools, level: usize) -> Option<Vec<(String, Value)>> {
    lua.inspect_stack(level, |_| ())?;
    let mut vars = Vec::new();
    for i in 1.. {
        match tools.getlocal.call::<(Value, Value)>((level + 1, i)) {
            Ok((Value::String(name), v)) => vars.push((name.to_string_lossy(), v)),
            _ => break,
        }
    }
    Some(vars)
}

/// `print <var>`: the first local of that name from the current frame
/// outwards, else the globals KEYS and ARGV.
fn print(lua: &Lua, run: &RunState, tools: &Tools, name: &[u8]) {
    let mut level = 0;
    while let Some(vars) = locals(lua, tools, level) {
        if let Some((_, v)) = vars.iter().find(|(n, _)| n.as_bytes() == name) {
            log_value(run, b"<value> ".to_vec(), v);
            return;
        }
        level += 1;
    }
    if name == b"ARGV" || name == b"KEYS" {
        let name = String::from_utf8_lossy(name);
        let v = lua.globals().raw_get::<Value>(&*name).unwrap_or(Value::Nil);
        log_value(run, b"<value> ".to_vec(), &v);
    } else {
        run.ldb.borrow_mut().log("No such variable.");
    }
}

/// `print`: every local of the current frame.
fn print_all(lua: &Lua, run: &RunState, tools: &Tools) {
    let mut shown = 0;
    for (name, v) in locals(lua, tools, 0).unwrap_or_default() {
        if name.contains("(*temporary)") {
            continue;
        }
        log_value(run, format!("<value> {name} = ").into_bytes(), &v);
        shown += 1;
    }
    if shown == 0 {
        run.ldb
            .borrow_mut()
            .log("No local variables in the current context.");
    }
}

fn log_value(run: &RunState, mut line: Vec<u8>, v: &Value) {
    cat_value(&mut line, v, 0);
    run.ldb.borrow_mut().log_with_maxlen(line);
}

/// `eval <code>`: runs the code as an expression, else as statements, in
/// the scripts' environment, and shows its first result.
fn eval(lua: &Lua, run: &RunState, tools: &Tools, argv: &[Vec<u8>]) {
    let code = argv[1..].join(&b' ');
    let mut expr = b"return ".to_vec();
    expr.extend_from_slice(&code);
    let load = |src: &[u8]| {
        lua.load(src)
            .set_name("@ldb_eval")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(tools.env.clone())
            .into_function()
    };
    let func = match load(&expr).or_else(|_| load(&code)) {
        Ok(f) => f,
        Err(e) => {
            let msg = format!("<error> {}", without_traceback(&super::lua::error_text(&e)));
            run.ldb.borrow_mut().log(msg);
            return;
        }
    };
    match func.call::<mlua::MultiValue>(()) {
        Ok(values) => {
            let v = values.into_iter().next().unwrap_or(Value::Nil);
            log_value(run, b"<retval> ".to_vec(), &v);
        }
        Err(e) => {
            let msg = format!("<error> {}", without_traceback(&super::lua::error_text(&e)));
            run.ldb.borrow_mut().log(msg);
        }
    }
}

/// An error's message without the traceback the Lua binding appends.
fn without_traceback(msg: &str) -> &str {
    msg.split("\nstack traceback:").next().unwrap_or(msg)
}

/// `redis <cmd>`: runs the command through `redis.call` while stepping,
/// so it and its reply are logged.
fn redis(lua: &Lua, run: &RunState, tools: &Tools, argv: &[Vec<u8>]) {
    let call = tools
        .env
        .get::<Table>("redis")
        .and_then(|r| r.get::<Function>("call"));
    let Ok(call) = call else { return };
    let Ok(args) = argv[1..]
        .iter()
        .map(|a| lua.create_string(a).map(Value::String))
        .collect::<mlua::Result<Vec<Value>>>()
    else {
        return;
    };
    run.ldb.borrow_mut().step = true;
    let _ = call.call::<Value>(mlua::MultiValue::from_iter(args));
    run.ldb.borrow_mut().step = false;
}
