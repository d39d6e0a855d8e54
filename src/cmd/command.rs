//! COMMAND and its subcommands, answered from the command table: the
//! captured Redis 7.0 facts of the commands ferrokv implements, and nothing
//! about the others.

use super::{args, client::write_help, Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::keyspec;
use crate::server::spec::Node;
use crate::server::table::{flag, CommandId, CommandTable};
use crate::util::glob::glob_match;

/// The handlers this family registers. `command` comes first so the table
/// creates it with its handler before adding the subcommands under it.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("command", all),
    ("command|count", count),
    ("command|info", info),
    ("command|docs", docs),
    ("command|list", list),
    ("command|getkeys", getkeys),
    ("command|getkeysandflags", getkeysandflags),
    ("command|help", help),
];

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

/// COMMAND: the info of every top-level command.
fn all(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let table = &ctx.server.table;
    let ids: Vec<CommandId> = table.top_level().collect();
    ctx.reply.array(ids.len());
    for id in ids {
        table.info_node(id).write(&mut ctx.reply);
    }
    Ok(())
}

fn count(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let n = ctx.server.table.top_level().count();
    ctx.reply.int(n as i64);
    Ok(())
}

/// Redis's lookupCommandBySds: `name` or `container|sub`.
fn by_full_name(table: &CommandTable, name: &[u8]) -> Option<CommandId> {
    let mut parts = name.split(|&c| c == b'|');
    let base = table.lookup(parts.next()?)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(base),
        (Some(sub), None) if !table.commands[base].subcommands.is_empty() => {
            table.lookup_sub(base, sub)
        }
        _ => None,
    }
}

/// COMMAND INFO [name ...]: all commands without names; null for unknown
/// names.
fn info(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() == 2 {
        return all(ctx, argv);
    }
    let table = &ctx.server.table;
    ctx.reply.array(argv.len() - 2);
    for name in argv.iter_from(2) {
        match by_full_name(table, name) {
            Some(id) => table.info_node(id).write(&mut ctx.reply),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

/// The DOCS entry of a command or subcommand (subcommands' docs live in
/// their container's `subcommands` map).
fn docs_of(table: &CommandTable, id: CommandId) -> Node {
    let cmd = &table.commands[id];
    let Some(parent) = cmd.parent else {
        return table.docs_node(id);
    };
    table
        .docs_node(parent)
        .get(b"subcommands")
        .and_then(|subs| subs.get(cmd.name.as_bytes()))
        .cloned()
        .unwrap_or(Node::Map(Vec::new()))
}

/// COMMAND DOCS [name ...]: a map of name to docs; unknown names are
/// left out.
fn docs(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let table = &ctx.server.table;
    let ids: Vec<CommandId> = if argv.len() == 2 {
        table.top_level().collect()
    } else {
        argv.iter_from(2)
            .filter_map(|n| by_full_name(table, n))
            .collect()
    };
    ctx.reply.map(ids.len());
    for id in ids {
        ctx.reply.bulk(table.commands[id].name.as_bytes());
        docs_of(table, id).write(&mut ctx.reply);
    }
    Ok(())
}

/// A COMMAND LIST FILTERBY clause.
enum Filter<'a> {
    Module,
    AclCat(Vec<u8>),
    Pattern(&'a [u8]),
}

impl Filter<'_> {
    fn keeps(&self, table: &CommandTable, id: CommandId) -> bool {
        match self {
            // No modules are ever loaded.
            Filter::Module => false,
            Filter::AclCat(cat) => match table.spec.info.get(&table.commands[id].name) {
                Some(Node::Array(f)) => match f.get(6) {
                    Some(Node::Set(cats)) => cats
                        .iter()
                        .any(|c| c.as_bytes().is_some_and(|c| c.eq_ignore_ascii_case(cat))),
                    _ => false,
                },
                _ => false,
            },
            Filter::Pattern(p) => glob_match(p, table.commands[id].name.as_bytes(), true),
        }
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT cat | PATTERN pattern]:
/// names of containers and of their subcommands alike.
fn list(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut filter = None;
    let mut i = 2;
    while i < argv.len() {
        // FILTERBY must come last, with exactly its two arguments.
        if !(args::is(argv.get(i), "filterby") && argv.len() - 1 - i == 2) {
            return Err(Error::Syntax);
        }
        let (kind, arg) = (argv.get(i + 1), argv.get(i + 2));
        filter = Some(if args::is(kind, "module") {
            Filter::Module
        } else if args::is(kind, "aclcat") {
            let mut cat = b"@".to_vec();
            cat.extend_from_slice(arg);
            Filter::AclCat(cat)
        } else if args::is(kind, "pattern") {
            Filter::Pattern(arg)
        } else {
            return Err(Error::Syntax);
        });
        i += 3;
    }
    let table = &ctx.server.table;
    let mark = ctx.reply.defer();
    let mut n = 0;
    for top in table.top_level() {
        let mut subs: Vec<CommandId> = table.commands[top].subcommands.values().copied().collect();
        subs.sort_unstable();
        for id in std::iter::once(top).chain(subs) {
            if filter.as_ref().is_none_or(|f| f.keeps(table, id)) {
                ctx.reply.bulk(table.commands[id].name.as_bytes());
                n += 1;
            }
        }
    }
    ctx.reply.finish_deferred_array(mark, n);
    Ok(())
}

fn getkeys(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    keys_reply(ctx, argv, false)
}

fn getkeysandflags(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    keys_reply(ctx, argv, true)
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS <command> [args ...]
fn keys_reply(ctx: &mut Ctx<'_>, argv: Argv<'_>, with_flags: bool) -> CmdResult {
    let table = &ctx.server.table;
    let target: Vec<&[u8]> = argv.iter_from(2).collect();
    let id = table
        .resolve(
            target.first().copied().unwrap_or_default(),
            target.get(1).copied(),
        )
        .ok_or(Error::err("Invalid command specified"))?;
    let cmd = &table.commands[id];
    if !cmd.has_keys {
        return Err(Error::err("The command has no key arguments"));
    }
    if !cmd.arity_ok(target.len()) {
        return Err(Error::err(
            "Invalid number of arguments specified for command",
        ));
    }
    let mut keys = Vec::new();
    keyspec::find_keys(cmd.key_finder, &cmd.key_specs, &target[..], &mut keys);
    if keys.is_empty() && !cmd.has(flag::NO_MANDATORY_KEYS) {
        return Err(Error::err("Invalid arguments specified for command"));
    }
    ctx.reply.array(keys.len());
    for k in keys {
        if with_flags {
            ctx.reply.array(2);
        }
        ctx.reply.bulk(target[k.pos]);
        if with_flags {
            let names = keyspec::key::NAMES.iter().filter(|(b, _)| k.flags & b != 0);
            ctx.reply.set(names.clone().count());
            for (_, n) in names {
                ctx.reply.simple(n);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(name: &str, argv: &[&str]) -> Vec<usize> {
        let t = CommandTable::build(crate::cmd::FAMILIES);
        let id = t.lookup(name.as_bytes()).expect("implemented");
        let a: Vec<&[u8]> = argv.iter().map(|s| s.as_bytes()).collect();
        let mut keys = Vec::new();
        let cmd = &t.commands[id];
        keyspec::find_keys(cmd.key_finder, &cmd.key_specs, &a[..], &mut keys);
        keys.into_iter().map(|k| k.pos).collect()
    }

    #[test]
    fn every_handler_has_a_spec_row_and_arity() {
        let t = CommandTable::build(crate::cmd::FAMILIES);
        let get = t.lookup(b"GeT").expect("get is implemented");
        assert_eq!(t.commands[get].arity, 2);
        assert!(t.commands[get].has(crate::server::table::flag::READONLY));
        assert_eq!(t.commands[get].key_positions(2), vec![1]);
    }

    #[test]
    fn key_positions_from_specs() {
        assert_eq!(positions("get", &["get", "k"]), vec![1]);
        assert_eq!(positions("set", &["set", "k", "v", "get"]), vec![1]);
    }
}
