//! MODULE (Redis's `moduleCommand`): ferrokv loads no modules, so LIST is
//! always empty and LOAD answers as Redis does when a module fails to
//! load. LOAD, LOADEX and UNLOAD are behind `enable-module-command`, as in
//! Redis 7.0.

use super::args;
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[
    ("module|list", list),
    ("module|load", load),
    ("module|loadex", load),
    ("module|unload", unload),
    ("module|help", help),
];

const HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    super::client::write_help(ctx, HELP);
    Ok(())
}

fn list(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.array(0);
    Ok(())
}

fn load(_ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    tracing::warn!(
        "Module {} failed to load: ferrokv does not load modules",
        args::lossy(argv.get(2))
    );
    Err(Error::err(
        "Error loading the extension. Please check the server logs.",
    ))
}

fn unload(_ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    Err(Error::err(
        "Error unloading module: no such module with that name",
    ))
}
