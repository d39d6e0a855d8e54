//! CLOCK: ferrokv's own command (no Redis counterpart) to read and move the
//! server's logical time, so tests of TTL-driven logic need not wait. What
//! follows the logical clock and what stays on real time is described in
//! `util/clock.rs`.
//!
//! It is refused unless `enable-clock-command` is `yes`, or `local` and the
//! client is on 127.0.0.1 or ::1, with the text Redis gives DEBUG under
//! `enable-debug-command` (checked in `call()`, as Redis's processCommand
//! checks protected commands).

use super::args;
use super::client::write_help;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::util::clock;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("clock", clock)];

const HELP: &[&str] = &[
    "CLOCK <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "NOW",
    "    Return the server's time in Unix milliseconds.",
    "FREEZE",
    "    Stop the server's time where it stands.",
    "RESUME",
    "    Let the server's time run on from where it stands.",
    "SET <unix-ms>",
    "    Set the server's time; it keeps running, or stays frozen.",
    "ADVANCE <ms>",
    "    Move the server's time forward.",
    "HELP",
    "    Print this help.",
];

/// CLOCK NOW | FREEZE | RESUME | SET unix-ms | ADVANCE ms | HELP.
fn clock(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let sub = argv.get(1);
    let name = sub.to_ascii_lowercase();
    let takes = match name.as_slice() {
        b"set" | b"advance" => 3,
        b"now" | b"freeze" | b"resume" | b"help" => 2,
        _ => {
            return Err(Error::UnknownSubcommand {
                sub: args::lossy(sub),
                cmd: "CLOCK".into(),
            })
        }
    };
    if argv.len() != takes {
        return Err(Error::subcommand_arity(sub, "CLOCK"));
    }
    if name == b"help" {
        write_help(ctx, HELP);
        return Ok(());
    }
    let clock = clock::installed();
    match name.as_slice() {
        b"now" => {
            ctx.reply.int(clock.now_ms() as i64);
            return Ok(());
        }
        b"freeze" => clock.freeze(),
        b"resume" => clock.resume(),
        _ => {
            let ms = u64::try_from(args::int(argv.get(2))?).map_err(|_| Error::NotPositive)?;
            if name == b"set" {
                clock.set_ms(ms);
            } else {
                clock.advance(std::time::Duration::from_millis(ms));
            }
        }
    }
    ctx.reply.ok();
    Ok(())
}
