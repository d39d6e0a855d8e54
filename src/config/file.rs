//! redis.conf parsing, as Redis's `loadServerConfigFromString`: one
//! directive per line, arguments split with `sdssplitargs` quoting rules,
//! `include` files, and a fatal, line-numbered report for anything wrong.

use std::fmt;

use super::params::{self, MULTI_ARG};
use super::Config;
use crate::util::splitargs::split_args;

/// Why the configuration could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// A file could not be read (Redis logs it and exits 1).
    CantOpen {
        /// The path.
        path: String,
        /// strerror text.
        reason: String,
    },
    /// A fatal problem found after parsing (logged by Redis, then exit 1).
    Fatal(String),
    /// A bad line; printed as Redis's FATAL CONFIG FILE ERROR block.
    Bad {
        /// Line number and trimmed text, when the error is about a line.
        line: Option<(usize, String)>,
        /// The reason.
        reason: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::CantOpen { path, reason } => {
                write!(f, "Fatal error, can't open config file '{path}': {reason}")
            }
            LoadError::Fatal(msg) => write!(f, "{msg}"),
            LoadError::Bad { line, reason } => {
                writeln!(
                    f,
                    "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***",
                    crate::REDIS_VERSION
                )?;
                if let Some((n, text)) = line {
                    writeln!(f, "Reading the configuration file, at line {n}")?;
                    writeln!(f, ">>> '{text}'")?;
                }
                write!(f, "{reason}")
            }
        }
    }
}

/// Loading state shared across included files.
#[derive(Default)]
struct LoadState {
    /// The first `save` line replaces the defaults; later ones add points.
    save_loaded: bool,
    /// Include depth, to stop include loops.
    depth: usize,
    /// A module parameter (`name.param value`) was given.
    module_config: bool,
}

use crate::util::process::strerror;

fn read_file(path: &str) -> Result<String, LoadError> {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| LoadError::CantOpen {
            path: path.to_string(),
            reason: strerror(&e),
        })
}

/// Loads `file` (if any), then standard input (if asked), then `options`
/// (the command line's `--name value` directives), as redis-server does:
/// the three are joined into one text, so line numbers run on across them.
pub fn load(
    config: &mut Config,
    file: Option<&str>,
    from_stdin: bool,
    options: &str,
) -> Result<(), LoadError> {
    let mut text = String::new();
    if let Some(path) = file {
        text.push_str(&read_file(path)?);
    }
    if from_stdin {
        use std::io::Read;
        let mut s = String::new();
        let _ = std::io::stdin().read_to_string(&mut s);
        text.push_str(&s);
    }
    if !options.is_empty() {
        text.push('\n');
        text.push_str(options);
    }
    let mut state = LoadState::default();
    load_string(config, &text, &mut state)?;
    if state.module_config {
        // No module can claim it, as in Redis without the loadmodule.
        return Err(LoadError::Fatal(
            "Module Configuration detected without loadmodule directive or no ApplyConfig call: aborting"
                .into(),
        ));
    }
    if !config.logfile.is_empty() {
        if let Err(e) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            // Relative to `dir`, where the server will open it.
            .open(std::path::Path::new(&config.dir).join(&config.logfile))
        {
            return Err(LoadError::Bad {
                line: None,
                reason: format!("Can't open the log file: {}", strerror(&e)),
            });
        }
    }
    Ok(())
}

/// Parses configuration text (for tests and `include`).
pub fn load_str(config: &mut Config, text: &str) -> Result<(), LoadError> {
    load_string(config, text, &mut LoadState::default())
}

fn load_string(config: &mut Config, text: &str, state: &mut LoadState) -> Result<(), LoadError> {
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.trim_matches([' ', '\t', '\r', '\n']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |reason: String| LoadError::Bad {
            line: Some((i + 1, line.to_string())),
            reason,
        };
        let mut buf = Vec::new();
        let mut lens = Vec::new();
        if split_args(line.as_bytes(), &mut buf, &mut lens).is_err() {
            return Err(bad("Unbalanced quotes in configuration line".into()));
        }
        let argv = slices(&buf, &lens);
        let Some(first) = argv.first() else { continue };
        let name = first.to_ascii_lowercase();
        let args = &argv[1..];
        if let Some((p, _)) = params::lookup(&name) {
            if p.flags & MULTI_ARG == 0 && args.len() != 1 {
                return Err(bad("wrong number of arguments".into()));
            }
            let append = p.name == "save" && state.save_loaded;
            if p.name == "save" {
                state.save_loaded = true;
            }
            // A multi-argument directive given as one non-empty value
            // (`--save "900 1"`) is split again, as Redis does.
            let mut split_buf = Vec::new();
            let mut split_lens = Vec::new();
            let split: Vec<&[u8]>;
            let args = if p.flags & MULTI_ARG != 0 && args.len() == 1 && !args[0].is_empty() {
                // Unbalanced quotes leave no arguments (sdssplitargs fails).
                if split_args(args[0], &mut split_buf, &mut split_lens).is_err() {
                    split_lens.clear();
                }
                split = slices(&split_buf, &split_lens);
                &split[..]
            } else {
                args
            };
            config
                .set_args(p, args, append)
                .map_err(|e| bad(e.into_owned()))?;
            continue;
        }
        let argc = argv.len();
        match name.as_slice() {
            b"list-max-ziplist-entries" | b"list-max-ziplist-value" | b"lua-replicate-commands"
                if argc == 2 => {}
            b"include" if argc == 2 => {
                if state.depth > 32 {
                    return Err(bad("Too many nested includes".into()));
                }
                let path = String::from_utf8_lossy(args[0]).into_owned();
                let included = read_included(&path)?;
                state.depth += 1;
                let r = load_string(config, &included, state);
                state.depth -= 1;
                r?;
            }
            // Checked and applied against the command table when the
            // server starts (the table is a layer above this one).
            b"rename-command" if argc == 3 => {
                config.renamed_commands.push(super::RenameCommand {
                    from: args[0].to_vec(),
                    to: args[1].to_vec(),
                    line: Some((i + 1, line.to_string())),
                });
            }
            b"user" if argc >= 2 => {
                if config.users.iter().any(|u| u[0] == args[0]) {
                    return Err(bad(format!(
                        "Error in user declaration '{}': Duplicate user found. A user can only \
                         be defined once in config files",
                        String::from_utf8_lossy(args[0])
                    )));
                }
                config.users.push(args.iter().map(|a| a.to_vec()).collect());
            }
            b"loadmodule" if argc >= 2 => {
                config
                    .modules
                    .push(String::from_utf8_lossy(args[0]).into_owned());
            }
            _ if name.contains(&b'.') => {
                if argc < 2 {
                    return Err(bad("Module config specified without value".into()));
                }
                state.module_config = true;
            }
            b"sentinel" => {
                if argc != 1 {
                    return Err(bad("sentinel directive while not in sentinel mode".into()));
                }
            }
            _ => return Err(bad("Bad directive or wrong number of arguments".into())),
        }
    }
    Ok(())
}

/// The arguments [`split_args`] wrote into `buf`, `lens` long each.
fn slices<'a>(buf: &'a [u8], lens: &[usize]) -> Vec<&'a [u8]> {
    let mut at = 0;
    lens.iter()
        .map(|&l| {
            at += l;
            &buf[at - l..at]
        })
        .collect()
}

/// Reads an included file; a pattern with wildcards includes every match
/// (none is fine), as Redis does with glob(3).
fn read_included(path: &str) -> Result<String, LoadError> {
    if !path.contains(['*', '?', '[']) {
        return read_file(path);
    }
    let p = std::path::Path::new(path);
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(std::path::Path::new("."));
    let pattern = p
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut names: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| {
                    crate::util::glob::glob_match(
                        pattern.as_bytes(),
                        e.file_name().to_string_lossy().as_bytes(),
                        false,
                    )
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut text = String::new();
    for n in names {
        text.push_str(&read_file(&n.display().to_string())?);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quotes_units_and_save_lines() {
        let mut c = Config::default();
        load_str(
            &mut c,
            "# comment\nport 7000\nrequirepass \"a b\\x41\"\nmaxmemory 1gb\nsave 10 1\nsave 20 2\n",
        )
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.requirepass.as_deref(), Some(&b"a bA"[..]));
        assert_eq!(c.maxmemory, 1 << 30);
        assert_eq!(c.save, vec![(10, 1), (20, 2)]);
        // `save ""` after other save lines empties them, as Redis's
        // `--save` without a value after a config file's rules does.
        let mut c = Config::default();
        load_str(&mut c, "save 10 1\nsave \"\"\n").unwrap();
        assert_eq!(c.save, vec![]);
    }

    #[test]
    fn bad_directive_message() {
        let mut c = Config::default();
        let e = load_str(&mut c, "port 1\nfoo bar\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 2\n>>> 'foo bar'\nBad directive or wrong number of arguments"
        );
    }
}
