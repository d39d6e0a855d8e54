//! CLIENT and its subcommands (Redis's `clientCommand` in networking.c):
//! ID, SETNAME, GETNAME, INFO, LIST, KILL, REPLY, NO-EVICT, PAUSE, UNPAUSE
//! and HELP (the tracking subcommands are in `tracking.rs`).

use super::args;
use super::connection::{valid_client_name, BAD_CLIENT_NAME};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::client::{info_line, Client, ClientKind, ReplyMode};
use crate::util::clock;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("client|id", id),
    ("client|setname", setname),
    ("client|getname", getname),
    ("client|info", info),
    ("client|list", list),
    ("client|kill", kill),
    ("client|reply", reply),
    ("client|no-evict", no_evict),
    ("client|help", help),
    ("client|pause", pause),
    ("client|unpause", unpause),
];

/// CLIENT HELP: Redis 7.0's lines.
const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "HELP",
    "    Prints this help.",
];

/// Writes a HELP reply: an array of status lines (Redis's addReplyHelp).
pub(super) fn write_help(ctx: &mut Ctx<'_>, lines: &[&str]) {
    ctx.reply.array(lines.len());
    for l in lines {
        ctx.reply.simple(l);
    }
}

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

fn id(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.int(ctx.client.id as i64);
    Ok(())
}

fn setname(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let name = argv.get(2);
    if !valid_client_name(name) {
        return Err(Error::err(BAD_CLIENT_NAME));
    }
    ctx.client.name.clear();
    ctx.client.name.extend_from_slice(name);
    ctx.reply.ok();
    Ok(())
}

fn getname(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    if ctx.client.name.is_empty() {
        ctx.reply.null();
    } else {
        ctx.reply.bulk(&ctx.client.name);
    }
    Ok(())
}

fn reply(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mode = argv.get(2);
    let c = &mut *ctx.client;
    if args::is(mode, "on") {
        c.reply_mode = ReplyMode::On;
        ctx.reply.ok();
    } else if args::is(mode, "off") {
        c.reply_mode = ReplyMode::Off;
    } else if args::is(mode, "skip") {
        // SKIP while OFF changes nothing, as in Redis.
        if c.reply_mode != ReplyMode::Off {
            c.reply_mode = ReplyMode::Skip;
        }
    } else {
        return Err(Error::Syntax);
    }
    Ok(())
}

fn no_evict(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let v = argv.get(2);
    if args::is(v, "on") {
        ctx.client.no_evict = true;
    } else if args::is(v, "off") {
        ctx.client.no_evict = false;
    } else {
        return Err(Error::Syntax);
    }
    ctx.reply.ok();
    Ok(())
}

/// Client types CLIENT LIST/KILL TYPE name (Redis's getClientTypeByName).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TypeFilter {
    Normal,
    Replica,
    PubSub,
    Master,
}

fn type_filter(name: &[u8]) -> Result<TypeFilter, Error> {
    if args::is(name, "normal") {
        Ok(TypeFilter::Normal)
    } else if args::is(name, "slave") || args::is(name, "replica") {
        Ok(TypeFilter::Replica)
    } else if args::is(name, "pubsub") {
        Ok(TypeFilter::PubSub)
    } else if args::is(name, "master") {
        Ok(TypeFilter::Master)
    } else {
        Err(Error::err_owned(format!(
            "Unknown client type '{}'",
            args::lossy(name)
        )))
    }
}

fn type_matches(c: &Client, t: TypeFilter) -> bool {
    match c.kind {
        // Redis's getClientType counts monitors as normal clients.
        ClientKind::Normal | ClientKind::Monitor => t == TypeFilter::Normal,
        ClientKind::PubSub => t == TypeFilter::PubSub,
        ClientKind::Replica => t == TypeFilter::Replica,
        ClientKind::Master => t == TypeFilter::Master,
    }
}

fn info(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut s = String::with_capacity(300);
    info_line(
        &mut s,
        ctx.client,
        ctx.server,
        ctx.store,
        clock::real_now_ms(),
        Some(&argv),
    );
    s.push('\n');
    ctx.reply.verbatim(s.as_bytes());
    Ok(())
}

/// Every client, the caller included, in connection order.
fn all_ids(ctx: &Ctx<'_>) -> Vec<u64> {
    let mut ids: Vec<u64> = ctx.server.clients.keys().copied().collect();
    ids.push(ctx.client.id);
    ids.sort_unstable();
    ids
}

/// CLIENT LIST [TYPE type | ID id [id ...]]
fn list(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut filter = None;
    let mut ids: Option<Vec<u64>> = None;
    if argv.len() == 4 && args::is(argv.get(2), "type") {
        filter = Some(type_filter(argv.get(3))?);
    } else if argv.len() > 3 && args::is(argv.get(2), "id") {
        let mut v = Vec::with_capacity(argv.len() - 3);
        for a in argv.iter_from(3) {
            let n = crate::util::num::parse_i64(a).ok_or(Error::err("Invalid client ID"))?;
            // Ids are positive; others match no client.
            v.push(u64::try_from(n).unwrap_or(0));
        }
        ids = Some(v);
    } else if argv.len() != 2 {
        return Err(Error::Syntax);
    }
    // Ages and idle times are real time.
    let now = clock::real_now_ms();
    let ids = ids.unwrap_or_else(|| all_ids(ctx));
    let mut out = String::with_capacity(300 * ids.len());
    for id in ids {
        let (c, current) = if id == ctx.client.id {
            (&*ctx.client, Some(&argv))
        } else {
            match ctx.server.clients.get(&id) {
                Some(c) => (c, None),
                None => continue,
            }
        };
        if filter.is_some_and(|t| !type_matches(c, t)) {
            continue;
        }
        info_line(&mut out, c, ctx.server, ctx.store, now, current);
        out.push('\n');
    }
    ctx.reply.verbatim(out.as_bytes());
    Ok(())
}

/// What CLIENT KILL selects.
#[derive(Default)]
struct KillFilter<'a> {
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    kind: Option<TypeFilter>,
    id: Option<u64>,
    user: Option<crate::server::acl::UserRef>,
    skipme: bool,
}

impl KillFilter<'_> {
    fn matches(&self, c: &Client) -> bool {
        let same_user = |u: &crate::server::acl::UserRef| {
            c.user.as_ref().is_some_and(|cu| std::rc::Rc::ptr_eq(cu, u))
        };
        self.user.as_ref().is_none_or(same_user)
            && self.addr.is_none_or(|a| a == c.addr.to_string().as_bytes())
            && self
                .laddr
                .is_none_or(|a| a == c.laddr.to_string().as_bytes())
            && self.kind.is_none_or(|t| type_matches(c, t))
            && self.id.is_none_or(|id| id == c.id)
    }
}

/// CLIENT KILL addr | CLIENT KILL [ID id] [TYPE t] [ADDR a] [LADDR a]
/// [USER u] [SKIPME yes|no] ...
fn kill(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let old_form = argv.len() == 3;
    let mut f = KillFilter::default();
    if old_form {
        // With the old form a client may kill itself.
        f.addr = Some(argv.get(2));
    } else {
        f.skipme = true;
        let mut i = 2;
        while i < argv.len() {
            let opt = argv.get(i);
            let Some(val) = argv.try_get(i + 1) else {
                return Err(Error::Syntax);
            };
            if args::is(opt, "id") {
                match crate::util::num::parse_i64(val) {
                    Some(n) if n >= 1 => f.id = Some(n as u64),
                    _ => return Err(Error::err("client-id should be greater than 0")),
                }
            } else if args::is(opt, "type") {
                f.kind = Some(type_filter(val)?);
            } else if args::is(opt, "addr") {
                f.addr = Some(val);
            } else if args::is(opt, "laddr") {
                f.laddr = Some(val);
            } else if args::is(opt, "user") {
                let user = ctx.server.acl.user(val).ok_or_else(|| {
                    Error::err_owned(format!("No such user '{}'", args::lossy(val)))
                })?;
                f.user = Some(user);
            } else if args::is(opt, "skipme") {
                if args::is(val, "yes") {
                    f.skipme = true;
                } else if args::is(val, "no") {
                    f.skipme = false;
                } else {
                    return Err(Error::Syntax);
                }
            } else {
                return Err(Error::Syntax);
            }
            i += 2;
        }
    }
    let victims: Vec<u64> = ctx
        .server
        .clients
        .values()
        .filter(|c| f.matches(c))
        .map(|c| c.id)
        .collect();
    let mut killed = victims.len();
    for id in victims {
        ctx.server.kill_client(id);
    }
    let kill_self = !f.skipme && f.matches(ctx.client);
    if kill_self {
        killed += 1;
    }
    if old_form {
        if killed == 0 {
            return Err(Error::err("No such client"));
        }
        ctx.reply.ok();
    } else {
        ctx.reply.int(killed as i64);
    }
    // Flagged only after the reply is queued, so the caller gets it.
    if kill_self {
        ctx.client.close_after_reply = true;
    }
    Ok(())
}

/// CLIENT PAUSE timeout [WRITE|ALL]
fn pause(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 4 {
        return Err(Error::subcommand_arity(argv.get(1), "CLIENT"));
    }
    let mut all = true;
    if let Some(mode) = argv.try_get(3) {
        if args::is(mode, "write") {
            all = false;
        } else if !args::is(mode, "all") {
            return Err(Error::err("CLIENT PAUSE mode must be WRITE or ALL"));
        }
    }
    let ms = crate::util::num::parse_i64(argv.get(2)).ok_or(Error::TimeoutNotInteger)?;
    if ms < 0 {
        return Err(Error::err("timeout is negative"));
    }
    let now = clock::now_ms();
    // An end past the clock's range wraps negative in Redis: no pause.
    let end = i64::try_from(now)
        .ok()
        .and_then(|n| n.checked_add(ms))
        .filter(|_| ms > 0)
        .map_or(0, |e| e as u64);
    ctx.server.pause.extend(end, all, now);
    ctx.reply.ok();
    Ok(())
}

/// CLIENT UNPAUSE: held commands run right after this batch.
fn unpause(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.server.pause.unpause_clients();
    ctx.reply.ok();
    Ok(())
}
