//! ACL and its subcommands (Redis's aclCommand in acl.c): users are
//! created, changed, described and deleted here; the rules themselves are
//! `server::acl`.

use super::{args, client::write_help, Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::acl::universe::{Universe, CATEGORIES};
use crate::server::acl::{self, Selector, User, UserRef};
use crate::server::client::{Client, ClientKind};
use crate::util::clock;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("acl|cat", cat),
    ("acl|deluser", deluser),
    ("acl|dryrun", dryrun),
    ("acl|genpass", genpass),
    ("acl|getuser", getuser),
    ("acl|help", help),
    ("acl|list", list),
    ("acl|load", load),
    ("acl|log", log),
    ("acl|save", save),
    ("acl|setuser", setuser),
    ("acl|users", users),
    ("acl|whoami", whoami),
];

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

/// ACL SETUSER username [rule ...]
fn setuser(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let name = argv.get(2);
    if acl::user::has_spaces(name) {
        return Err(Error::err(
            "Usernames can't contain spaces or null characters",
        ));
    }
    let ops: Vec<&[u8]> = argv.iter_from(3).collect();
    let server = &mut *ctx.server;
    let old = server
        .acl
        .set_user(&server.table.universe, name, &ops)
        .map_err(Error::err_owned)?;
    if let (Some(old), Some(user)) = (old, server.acl.user(name)) {
        kill_pubsub_clients_if_needed(ctx, &user, &old);
    }
    if name == b"default" {
        ctx.server.acl_changed();
    }
    ctx.reply.ok();
    Ok(())
}

/// Redis's ACLKillPubsubClientsIfNeeded: when a user loses channels, its
/// subscribers that hold a channel or pattern it may no longer use are
/// disconnected.
fn kill_pubsub_clients_if_needed(ctx: &mut Ctx<'_>, user: &UserRef, old: &User) {
    let new = user.borrow();
    if new.selectors.iter().any(|s| s.all_channels) {
        return;
    }
    let upcoming: Vec<Vec<u8>> = new
        .selectors
        .iter()
        .flat_map(|s| s.channels.iter().cloned())
        .collect();
    let kept = old
        .selectors
        .iter()
        .all(|s: &Selector| !s.all_channels && s.channels.iter().all(|c| upcoming.contains(c)));
    if kept {
        return;
    }
    drop(new);
    let violates = |ctx: &Ctx<'_>, c: &Client| {
        if c.kind != ClientKind::PubSub
            || !c
                .user
                .as_ref()
                .is_some_and(|u| std::rc::Rc::ptr_eq(u, user))
        {
            return false;
        }
        let Some(subs) = ctx.server.pubsub.subs(c.id) else {
            return false;
        };
        subs.patterns
            .iter()
            .any(|p| !acl::channel_allowed(&upcoming, p, true))
            || subs
                .channels
                .iter()
                .chain(&subs.shard)
                .any(|ch| !acl::channel_allowed(&upcoming, ch, false))
    };
    let victims: Vec<u64> = ctx
        .server
        .clients
        .values()
        .filter(|c| violates(ctx, c))
        .map(|c| c.id)
        .collect();
    for id in victims {
        ctx.server.kill_client(id);
    }
    if violates(ctx, ctx.client) {
        ctx.client.close_after_reply = true;
    }
}

/// ACL DELUSER username [username ...]
fn deluser(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.iter_from(2).any(|n| n == b"default") {
        return Err(Error::err("The 'default' user cannot be removed"));
    }
    let mut gone = Vec::new();
    for name in argv.iter_from(2) {
        if let Some(u) = ctx.server.acl.users.remove(name) {
            gone.push(u);
        }
    }
    ctx.reply.int(gone.len() as i64);
    ctx.server.kill_clients_of(&gone, ctx.client);
    Ok(())
}

/// ACL GETUSER username
fn getuser(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let Some(user) = ctx.server.acl.user(argv.get(2)) else {
        ctx.reply.null();
        return Ok(());
    };
    let u = user.borrow();
    let universe = &ctx.server.table.universe;
    let r = &mut ctx.reply;
    r.map(6);
    r.bulk(b"flags");
    let mut flags = vec![if u.enabled { "on" } else { "off" }];
    if u.nopass {
        flags.push("nopass");
    }
    match u.skip_sanitize {
        Some(true) => flags.push("skip-sanitize-payload"),
        Some(false) => flags.push("sanitize-payload"),
        None => {}
    }
    r.set(flags.len());
    for f in flags {
        r.bulk(f.as_bytes());
    }
    r.bulk(b"passwords");
    r.array(u.passwords.len());
    for p in &u.passwords {
        r.bulk(p.as_bytes());
    }
    write_selector(r, universe, &u.selectors[0]);
    r.bulk(b"selectors");
    r.array(u.selectors.len() - 1);
    for s in &u.selectors[1..] {
        r.map(3);
        write_selector(r, universe, s);
    }
    Ok(())
}

/// A selector's commands, keys and channels, as GETUSER gives them.
fn write_selector(r: &mut crate::net::reply::ReplyBuf<'_>, u: &Universe, s: &Selector) {
    r.bulk(b"commands");
    r.bulk(s.describe_commands(u).as_bytes());
    r.bulk(b"keys");
    r.bulk(s.describe_keys(" ").as_bytes());
    r.bulk(b"channels");
    r.bulk(s.describe_channels().as_bytes());
}

/// ACL LIST: every user in rule form.
fn list(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let universe = &ctx.server.table.universe;
    let users = &ctx.server.acl.users;
    ctx.reply.array(users.len());
    for (name, user) in users {
        let mut line = b"user ".to_vec();
        line.extend_from_slice(name);
        line.push(b' ');
        line.extend_from_slice(user.borrow().describe(universe).as_bytes());
        ctx.reply.bulk(&line);
    }
    Ok(())
}

/// ACL USERS: the names.
fn users(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let users = &ctx.server.acl.users;
    ctx.reply.array(users.len());
    for name in users.keys() {
        ctx.reply.bulk(name);
    }
    Ok(())
}

/// ACL WHOAMI
fn whoami(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    match &ctx.client.user {
        Some(u) => {
            let name = u.borrow().name.clone();
            ctx.reply.bulk(&name);
        }
        None => ctx.reply.null(),
    }
    Ok(())
}

/// The ACL file's path, or the error when none is configured.
fn aclfile(ctx: &Ctx<'_>) -> Result<String, Error> {
    let path = ctx.server.config.get("aclfile");
    if path.is_empty() {
        return Err(Error::err(
            "This Redis instance is not configured to use an ACL file. You may want to specify \
             users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have \
             a Redis configuration file set) in order to store users in the Redis configuration.",
        ));
    }
    Ok(path)
}

/// ACL LOAD: replaces the users with the ACL file's, or changes nothing.
fn load(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let path = aclfile(ctx)?;
    let server = &mut *ctx.server;
    let gone = server
        .acl
        .load_file(&server.table.universe, &path)
        .map_err(Error::err_owned)?;
    ctx.reply.ok();
    ctx.server.kill_clients_of(&gone, ctx.client);
    ctx.server.acl_changed();
    Ok(())
}

/// ACL SAVE
fn save(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let path = aclfile(ctx)?;
    ctx.server
        .acl
        .save_file(&ctx.server.table.universe, &path)
        .map_err(|_| {
            Error::err(
                "There was an error trying to save the ACLs. Please check the server logs for \
                 more information",
            )
        })?;
    ctx.reply.ok();
    Ok(())
}

/// ACL CAT [category]
fn cat(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 3 {
        return Err(args::subcommand_syntax(&argv));
    }
    let Some(name) = argv.try_get(2) else {
        ctx.reply.array(CATEGORIES.len());
        for c in CATEGORIES {
            ctx.reply.bulk(c.as_bytes());
        }
        return Ok(());
    };
    let Some(cat) = Universe::category(name) else {
        let shown = crate::util::repr::lossy_cut(name, 128);
        return Err(Error::err_owned(format!("Unknown category '{shown}'")));
    };
    let u = &ctx.server.table.universe;
    let names: Vec<&str> = u
        .walk()
        .filter(|&id| u.commands[id].categories & (1 << cat) != 0)
        .map(|id| u.commands[id].name.as_str())
        .collect();
    ctx.reply.array(names.len());
    for n in names {
        ctx.reply.bulk(n.as_bytes());
    }
    Ok(())
}

/// Most bits ACL GENPASS makes.
const GENPASS_MAX_BITS: i64 = 4096;

/// ACL GENPASS [bits]: random hex, 256 bits by default.
fn genpass(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 3 {
        return Err(args::subcommand_syntax(&argv));
    }
    let bits = match argv.try_get(2) {
        Some(b) => crate::util::num::parse_i64(b).ok_or(Error::NotInteger)?,
        None => 256,
    };
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(Error::err_owned(format!(
            "ACL GENPASS argument must be the number of bits for the output password, a positive \
             number up to {GENPASS_MAX_BITS}"
        )));
    }
    let chars = (bits as usize).div_ceil(4);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let pass: Vec<u8> = (0..chars)
        .map(|_| HEX[usize::from(rand::random::<u8>() & 15)])
        .collect();
    ctx.reply.bulk(&pass);
    Ok(())
}

/// ACL LOG [count | RESET]
fn log(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 3 {
        return Err(args::subcommand_syntax(&argv));
    }
    let mut count = 10;
    if let Some(a) = argv.try_get(2) {
        if args::is(a, "reset") {
            ctx.server.acl.log.entries.clear();
            ctx.reply.ok();
            return Ok(());
        }
        count = crate::util::num::parse_i64(a)
            .ok_or(Error::NotInteger)?
            .max(0);
    }
    ctx.server
        .acl
        .log
        .write(&mut ctx.reply, count as usize, clock::real_now_ms());
    Ok(())
}

/// ACL DRYRUN username command [arg ...]: would the user be allowed?
fn dryrun(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let Some(user) = ctx.server.acl.user(argv.get(2)) else {
        return Err(Error::err_owned(format!(
            "User '{}' not found",
            args::lossy(argv.get(2))
        )));
    };
    let table = &ctx.server.table;
    let not_found =
        || Error::err_owned(format!("Command '{}' not found", args::lossy(argv.get(3))));
    let id = table.lookup(argv.get(3)).ok_or_else(not_found)?;
    let id = if table.commands[id].subcommands.is_empty() {
        id
    } else {
        match argv.try_get(4) {
            Some(sub) => table.lookup_sub(id, sub).ok_or_else(not_found)?,
            None => id,
        }
    };
    let target: Vec<&[u8]> = argv.iter_from(3).collect();
    let cmd = &table.commands[id];
    if !cmd.arity_ok(target.len()) {
        return Err(Error::err_owned(format!(
            "wrong number of arguments for '{}' command",
            cmd.name
        )));
    }
    let user = user.borrow();
    let server = &mut *ctx.server;
    let result = server
        .acl
        .check(&user, &server.table.commands[id], &target[..]);
    let name = &server.table.commands[id].name;
    match result {
        Ok(()) => ctx.reply.ok(),
        Err(acl::Denied::Command) => ctx
            .reply
            .bulk(format!("This user has no permissions to run the '{name}' command").as_bytes()),
        Err(acl::Denied::Key(i)) => ctx.reply.bulk(
            format!(
                "This user has no permissions to access the '{}' key",
                args::lossy(target[i])
            )
            .as_bytes(),
        ),
        Err(acl::Denied::Channel(i)) => ctx.reply.bulk(
            format!(
                "This user has no permissions to access the '{}' channel",
                args::lossy(target[i])
            )
            .as_bytes(),
        ),
    }
    Ok(())
}
