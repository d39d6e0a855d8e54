//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (the client-side
//! caching half of Redis's `clientCommand` in networking.c); the tracking
//! itself is `server/tracking.rs`.

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::tracking::ClientTracking;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("client|tracking", tracking),
    ("client|caching", caching),
    ("client|getredir", getredir),
    ("client|trackinginfo", trackinginfo),
];

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN]
/// [OPTOUT] [NOLOOP], with Redis's checks in Redis's order.
fn tracking(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut redirect = 0u64;
    let mut mode = ClientTracking::default();
    let mut prefixes: Vec<&[u8]> = Vec::new();
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        let a = argv.get(j);
        if is(a, "redirect") && more {
            j += 1;
            if redirect != 0 {
                return Err(Error::err(
                    "A client can only redirect to a single other client",
                ));
            }
            let id = args::int(argv.get(j))? as u64;
            let exists = id == ctx.client.id || ctx.server.clients.contains_key(&id);
            if !exists {
                return Err(Error::err(
                    "The client ID you want redirect to does not exist",
                ));
            }
            redirect = id;
        } else if is(a, "bcast") {
            mode.bcast = true;
        } else if is(a, "optin") {
            mode.optin = true;
        } else if is(a, "optout") {
            mode.optout = true;
        } else if is(a, "noloop") {
            mode.noloop = true;
        } else if is(a, "prefix") && more {
            j += 1;
            prefixes.push(argv.get(j));
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let on_off = argv.get(2);
    if is(on_off, "off") {
        ctx.server.tracking.forget(ctx.client.id);
        ctx.reply.ok();
        return Ok(());
    }
    if !is(on_off, "on") {
        return Err(Error::Syntax);
    }
    if !mode.bcast && !prefixes.is_empty() {
        return Err(Error::err(
            "PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let now = ctx.server.tracking.of(ctx.client.id);
    if now.is_some_and(|t| t.bcast != mode.bcast) {
        return Err(Error::err(
            "You can't switch BCAST mode on/off before disabling tracking for this client, \
             and then re-enabling it with a different mode.",
        ));
    }
    if mode.bcast && (mode.optin || mode.optout) {
        return Err(Error::err("OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if mode.optin && mode.optout {
        return Err(Error::err(
            "You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if now.is_some_and(|t| (mode.optin && t.optout) || (mode.optout && t.optin)) {
        return Err(Error::err(
            "You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, \
             and then re-enabling it with a different mode.",
        ));
    }
    if mode.bcast {
        if let Some(e) = ctx
            .server
            .tracking
            .prefix_collision(ctx.client.id, &prefixes)
        {
            return Err(Error::err_owned(e));
        }
    }
    ctx.server
        .tracking
        .enable(ctx.client.id, redirect, mode, &prefixes);
    ctx.reply.ok();
    Ok(())
}

/// CLIENT CACHING YES|NO: the next command is tracked (OPTIN) or not
/// (OPTOUT).
fn caching(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let id = ctx.client.id;
    let Some(t) = ctx.server.tracking.of(id) else {
        return Err(Error::err(
            "CLIENT CACHING can be called only when the client is in tracking mode with OPTIN \
             or OPTOUT mode enabled",
        ));
    };
    let opt = argv.get(2);
    if is(opt, "yes") {
        if !t.optin {
            return Err(Error::err(
                "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(opt, "no") {
        if !t.optout {
            return Err(Error::err(
                "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(Error::Syntax);
    }
    ctx.server.tracking.set_caching(id);
    ctx.reply.ok();
    Ok(())
}

/// CLIENT GETREDIR: the redirect id, 0 without one, -1 when not tracking.
fn getredir(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let redirect = ctx
        .server
        .tracking
        .of(ctx.client.id)
        .map_or(-1, |t| t.redirect as i64);
    ctx.reply.int(redirect);
    Ok(())
}

/// CLIENT TRACKINGINFO: flags, redirect and prefixes.
fn trackinginfo(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let t = ctx.server.tracking.of(ctx.client.id);
    let mut flags: Vec<&str> = Vec::new();
    match t {
        None => flags.push("off"),
        Some(t) => {
            flags.push("on");
            if t.bcast {
                flags.push("bcast");
            }
            if t.optin {
                flags.push("optin");
                if t.caching {
                    flags.push("caching-yes");
                }
            }
            if t.optout {
                flags.push("optout");
                if t.caching {
                    flags.push("caching-no");
                }
            }
            if t.noloop {
                flags.push("noloop");
            }
            if t.broken_redirect {
                flags.push("broken_redirect");
            }
        }
    }
    let r = &mut ctx.reply;
    r.map(3);
    r.bulk(b"flags");
    r.set(flags.len());
    for f in flags {
        r.bulk(f.as_bytes());
    }
    r.bulk(b"redirect");
    r.int(t.map_or(-1, |t| t.redirect as i64));
    r.bulk(b"prefixes");
    match t {
        Some(t) => {
            r.array(t.prefixes.len());
            for p in &t.prefixes {
                r.bulk(p);
            }
        }
        None => r.array(0),
    }
    Ok(())
}
