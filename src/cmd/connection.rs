//! Connection commands: PING, ECHO, QUIT, SELECT, RESET, HELLO and AUTH
//! (Redis's `server.c`/`networking.c`/`acl.c` handlers). CLIENT lives in
//! `client.rs`.

use super::args;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::acl::{self, log::Reason};
use crate::server::client::{ClientKind, ReplyMode};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("ping", ping),
    ("echo", echo),
    ("quit", quit),
    ("select", select),
    ("reset", reset),
    ("hello", hello),
    ("auth", auth),
];

/// The error HELLO gives a client that has not authenticated.
const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, \
otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
the RESP protocol version at the same time";

/// `ERR Client names cannot contain ...`, shared with CLIENT SETNAME.
pub(super) const BAD_CLIENT_NAME: &str =
    "Client names cannot contain spaces, newlines or special characters.";

fn ping(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 2 {
        return Err(Error::WrongArity("ping".into()));
    }
    // A RESP2 subscriber cannot receive plain replies, so Redis answers
    // with a pub/sub-shaped ["pong", arg] array.
    if ctx.client.kind == ClientKind::PubSub && !ctx.client.resp3 {
        ctx.reply.array(2);
        ctx.reply.bulk(b"pong");
        ctx.reply.bulk(argv.try_get(1).unwrap_or_default());
        return Ok(());
    }
    match argv.try_get(1) {
        None => ctx.reply.simple("PONG"),
        Some(msg) => ctx.reply.bulk(msg),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    ctx.reply.bulk(argv.get(1));
    Ok(())
}

fn quit(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn select(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if ctx.server.cluster.is_some() && args::int32(argv.get(1))? != 0 {
        return Err(Error::err("SELECT is not allowed in cluster mode"));
    }
    let db = args::db_index(argv.get(1), ctx.store.dbs.len())?;
    ctx.client.db = db;
    ctx.reply.ok();
    Ok(())
}

/// RESET: Redis's clearClientConnectionState. Back to db 0, RESP2, no
/// name, replies on, and authenticated only if the default user needs no
/// password.
fn reset(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    crate::server::multi::discard_transaction(ctx.client, ctx.store);
    // Redis leaves every channel silently and the client is no longer a
    // subscriber.
    ctx.server.forget_subscriptions(ctx.client.id);
    // A monitor stops monitoring.
    let id = ctx.client.id;
    ctx.server.monitors.retain(|&m| m != id);
    ctx.client.kind = ClientKind::Normal;
    let c = &mut *ctx.client;
    c.db = 0;
    c.resp3 = false;
    c.asking = false;
    c.cluster_readonly = false;
    c.user = Some(ctx.server.acl.default.clone());
    c.set_authenticated(!ctx.server.acl.auth_required());
    c.name.clear();
    // Redis clears REPLY_OFF and REPLY_SKIP_NEXT but not the SKIP of the
    // command running now, so a skipped RESET stays silent.
    if c.reply_mode != ReplyMode::SkipThis {
        c.reply_mode = ReplyMode::On;
    }
    ctx.reply.set_resp3(false);
    ctx.reply.simple("RESET");
    Ok(())
}

/// Authenticates the client as `user` with `pass` (ACLAuthenticateUser):
/// on success the client runs as that user; a failure is logged in the
/// ACL log under the command's own name.
pub(super) fn authenticate(
    ctx: &mut Ctx<'_>,
    argv: &Argv<'_>,
    user: &[u8],
    pass: &[u8],
) -> CmdResult {
    match ctx.server.acl.check_credentials(user, pass) {
        Some(u) => {
            ctx.client.user = Some(u);
            ctx.client.set_authenticated(true);
            Ok(())
        }
        None => {
            let context = acl::context_of(ctx.client.multi.is_some());
            ctx.server.acl_log(
                ctx.store,
                ctx.client,
                (Reason::Auth, context),
                argv.get(0),
                Some(user),
                Some(argv),
            );
            Err(Error::WrongPass)
        }
    }
}

fn auth(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 3 {
        return Err(Error::Syntax);
    }
    let (user, pass): (&[u8], &[u8]) = if argv.len() == 2 {
        // The old one-argument form errors when the default user needs no
        // password.
        if ctx.server.acl.default.borrow().nopass {
            return Err(Error::err(
                "AUTH <password> called without any password configured for the default user. \
                 Are you sure your configuration is correct?",
            ));
        }
        (b"default", argv.get(1))
    } else {
        (argv.get(1), argv.get(2))
    };
    authenticate(ctx, &argv, user, pass)?;
    ctx.reply.ok();
    Ok(())
}

/// True when `name` is a valid client name: printable ASCII without spaces
/// (Redis's clientSetName check).
pub(super) fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// HELLO [protover [AUTH user pass] [SETNAME name]]
fn hello(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut ver = 0;
    let mut next = 1;
    if let Some(v) = argv.try_get(1) {
        ver = crate::util::num::parse_i64(v).ok_or(Error::err(
            "Protocol version is not an integer or out of range",
        ))?;
        next = 2;
        if !(2..=3).contains(&ver) {
            return Err(Error::raw("NOPROTO unsupported protocol version"));
        }
    }
    let mut creds = None;
    let mut name = None;
    let mut j = next;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = argv.get(j);
        if args::is(opt, "auth") && more >= 2 {
            creds = Some((argv.get(j + 1), argv.get(j + 2)));
            j += 3;
        } else if args::is(opt, "setname") && more >= 1 {
            name = Some(argv.get(j + 1));
            j += 2;
        } else {
            return Err(Error::err_owned(format!(
                "Syntax error in HELLO option '{}'",
                args::lossy(opt)
            )));
        }
    }
    if let Some((user, pass)) = creds {
        authenticate(ctx, &argv, user, pass)?;
    }
    // Redis sets the name before checking authentication.
    if let Some(name) = name {
        if !valid_client_name(name) {
            return Err(Error::err(BAD_CLIENT_NAME));
        }
        ctx.client.name.clear();
        ctx.client.name.extend_from_slice(name);
    }
    if !ctx.client.authenticated {
        return Err(Error::raw(HELLO_NOAUTH));
    }
    if ver != 0 {
        ctx.client.resp3 = ver == 3;
        ctx.reply.set_resp3(ver == 3);
    }
    let r = &mut ctx.reply;
    r.map(7);
    r.bulk(b"server");
    r.bulk(b"redis");
    r.bulk(b"version");
    r.bulk(crate::REDIS_VERSION.as_bytes());
    r.bulk(b"proto");
    r.int(if ctx.client.resp3 { 3 } else { 2 });
    r.bulk(b"id");
    r.int(ctx.client.id as i64);
    r.bulk(b"mode");
    r.bulk(if ctx.server.cluster.is_some() {
        b"cluster"
    } else {
        b"standalone"
    });
    r.bulk(b"role");
    r.bulk(b"master");
    r.bulk(b"modules");
    r.array(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_names() {
        assert!(valid_client_name(b"abc-1"));
        assert!(valid_client_name(b""));
        assert!(!valid_client_name(b"a b"));
        assert!(!valid_client_name("é".as_bytes()));
    }
}
