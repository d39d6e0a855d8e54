//! Loading the append-only file at start-up: the manifest, then the base
//! (an RDB image, or commands) and the incremental files in order, each
//! command handed to the caller's [`LoadHost`], which runs it through the
//! one command path with a client of its own and serves clients meanwhile.
//!
//! A torn tail (the last command of the last file cut short, as a crash
//! leaves it) is truncated away and logged when `aof-load-truncated` is yes,
//! as Redis does; anything else malformed refuses the start with the file,
//! the offset and the reason.

use std::path::Path;

use super::{LoadHost, Persistence};
use crate::config::Config;
use crate::net::request::OwnedArgv;
use crate::store::Store;
use crate::util::clock;

use super::aof::{aof_dir, manifest_path};
use crate::util::process::strerror;

pub use super::aof::manifest::{parse_manifest, AofFile, Manifest, ManifestError};

/// Reads the manifest (Redis's aofLoadManifestFromDisk); Ok(None) when the
/// AOF directory or the manifest is missing; a refusal as Redis's reason.
pub fn read_manifest(config: &Config) -> Result<Option<Manifest>, String> {
    read_manifest_with(config, |e| e.reason.to_string())
}

/// [`read_manifest`] at start-up: a refusal is logged as Redis logs it
/// before exiting.
fn read_manifest_on_start(config: &Config) -> std::io::Result<Option<Manifest>> {
    read_manifest_with(config, |e| {
        e.log();
        e.reason.to_string()
    })
    .map_err(|msg| std::io::Error::new(std::io::ErrorKind::InvalidData, msg))
}

fn read_manifest_with(
    config: &Config,
    refused: impl FnOnce(ManifestError) -> String,
) -> Result<Option<Manifest>, String> {
    if !aof_dir(config).is_dir() {
        return Ok(None);
    }
    let path = manifest_path(config);
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "Fatal error: can't open the AOF manifest file {} for reading: {}",
                path.display(),
                strerror(&e)
            ))
        }
    };
    parse_manifest(&data).map(Some).map_err(refused)
}

/// The bytes of the files the manifest names (Redis's
/// getBaseAndIncrAppendOnlyFilesSize); 0 without a manifest.
pub fn files_size(config: &Config) -> u64 {
    let Ok(Some(m)) = read_manifest(config) else {
        return 0;
    };
    let dir = aof_dir(config);
    m.base
        .iter()
        .chain(&m.incrs)
        .filter_map(|f| std::fs::metadata(dir.join(&f.name)).ok())
        .map(|md| md.len())
        .sum()
}

/// Start-up with `appendonly yes` (Redis's loadAppendOnlyFiles, then
/// aofOpenIfNeededOnServerStart): an old-style single AOF in `dir` is
/// moved into the AOF directory first; the files the manifest names are
/// loaded and its last incremental file opened for appending. With no AOF
/// at all, the RDB file (if any) is loaded and a first base written from
/// it. `host` runs each command read from a file and serves clients
/// between them.
pub fn load_on_start(
    store: &mut Store,
    p: &mut Persistence<'_>,
    host: &mut dyn LoadHost,
) -> std::io::Result<()> {
    let mut m = read_manifest_on_start(p.config)?.unwrap_or_default();
    upgrade_old_style(p.config, &mut m)?;
    if m.base.is_none() && m.incrs.is_empty() {
        super::load_on_start(store, p, host)?;
        p.aof
            .rewrite(store, p.config)
            .map_err(std::io::Error::other)?;
        if let Some(base) = &p.aof.manifest.base {
            tracing::info!("Creating AOF base file {} on server start", base.name);
        }
        if let Some(incr) = p.aof.manifest.incrs.last() {
            tracing::info!("Creating AOF incr file {} on server start", incr.name);
        }
        // Redis does not count the base written at start-up as a rewrite.
        p.aof.rewrites = 0;
        return Ok(());
    }
    load_files(store, p, host, &m)?;
    p.aof.open_on_start(p.config, m)?;
    p.aof.delete_history(p.config);
    Ok(())
}

/// Moves the AOF of a server from before the multi-part layout
/// (`dir`/`appendfilename`) into the AOF directory as the base of a new
/// manifest (Redis's aofUpgradePrepare), when the directory does not
/// exist, its manifest names no file, or it names that file alone as the
/// base and the file is not there yet (an upgrade cut short).
fn upgrade_old_style(config: &Config, m: &mut Manifest) -> std::io::Result<()> {
    let name = &config.appendfilename;
    let old = Path::new(&config.dir).join(name);
    if !old.is_file() {
        return Ok(());
    }
    let dir = aof_dir(config);
    let upgrade = !dir.is_dir()
        || (m.base.is_none() && m.incrs.is_empty())
        || (m.incrs.is_empty()
            && m.base.as_ref().is_some_and(|b| &b.name == name)
            && !dir.join(name).exists());
    if !upgrade {
        return Ok(());
    }
    let fatal = |msg: String| {
        tracing::warn!("{msg}");
        std::io::Error::other(msg)
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        fatal(format!(
            "Can't open or create append-only dir {}: {}",
            config.appenddirname,
            strerror(&e)
        ))
    })?;
    m.base = Some(AofFile {
        name: name.clone(),
        seq: 1,
    });
    m.base_seq = 1;
    super::aof::write_manifest(config, m).map_err(std::io::Error::other)?;
    std::fs::rename(&old, dir.join(name)).map_err(|e| {
        fatal(format!(
            "Error trying to move the old AOF file {name} into dir {}: {}",
            config.appenddirname,
            strerror(&e)
        ))
    })?;
    tracing::info!(
        "Successfully migrated an old-style AOF file ({name}) into the AOF directory ({}).",
        config.appenddirname
    );
    Ok(())
}

/// DEBUG LOADAOF: the files the manifest names loaded again (the caller
/// emptied the data set); no manifest is an error.
pub fn reload(
    store: &mut Store,
    p: &mut Persistence<'_>,
    host: &mut dyn LoadHost,
) -> std::io::Result<()> {
    let bad = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
    match read_manifest(p.config).map_err(bad)? {
        Some(m) => load_files(store, p, host, &m),
        None => Err(bad("The AOF directory has no manifest".into())),
    }
}

/// How one file's load ended (Redis's AOF_OK, AOF_EMPTY, AOF_TRUNCATED).
#[derive(Clone, Copy, PartialEq, Eq)]
enum FileLoad {
    Ok,
    Empty,
    Truncated,
}

/// Loads the base and incremental files of manifest `m`. Every file named
/// must exist; a file cut short is truncated (`aof-load-truncated`) only
/// when it is the last one.
fn load_files(
    store: &mut Store,
    p: &mut Persistence<'_>,
    host: &mut dyn LoadHost,
    m: &Manifest,
) -> std::io::Result<()> {
    let started = std::time::Instant::now();
    let dir = aof_dir(p.config);
    let files: Vec<(&AofFile, &str)> = m
        .base
        .iter()
        .map(|b| (b, "base"))
        .chain(m.incrs.iter().map(|i| (i, "incr")))
        .collect();
    let mut total = 0;
    for (f, _) in &files {
        match std::fs::metadata(dir.join(&f.name)) {
            Ok(md) => total += md.len(),
            Err(e) => {
                return Err(std::io::Error::other(format!(
                    "Unable to obtain the AOF file {} length. stat: {}",
                    f.name,
                    strerror(&e)
                )))
            }
        }
    }
    if total > 0 {
        for (i, (f, kind)) in files.iter().enumerate() {
            let last = i + 1 == files.len();
            let t = std::time::Instant::now();
            let loaded = load_one(store, p, host, &f.name)?;
            if loaded == FileLoad::Truncated && !last {
                return Err(std::io::Error::other(
                    "Fatal error: the truncated file is not the last file",
                ));
            }
            if loaded != FileLoad::Empty {
                tracing::info!(
                    "DB loaded from {kind} file {}: {:.3} seconds",
                    f.name,
                    t.elapsed().as_secs_f64()
                );
            }
        }
    }
    store.stats.dirty = 0;
    store.set_now(clock::now_ms());
    tracing::info!(
        "DB loaded from append only file: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    p.aof.base_size = m
        .base
        .as_ref()
        .and_then(|b| std::fs::metadata(dir.join(&b.name)).ok())
        .map_or(0, |md| md.len());
    Ok(())
}

/// Loads one file (Redis's loadSingleAppendOnlyFile): an RDB image first
/// when it starts with one (a base written with `aof-use-rdb-preamble`,
/// or an old-style AOF with an RDB preamble), then commands to the end.
fn load_one(
    store: &mut Store,
    p: &mut Persistence<'_>,
    host: &mut dyn LoadHost,
    name: &str,
) -> std::io::Result<FileLoad> {
    let path = aof_dir(p.config).join(name);
    let data = std::fs::read(&path).map_err(|e| {
        std::io::Error::other(if e.kind() == std::io::ErrorKind::NotFound {
            format!("The append log file {name} doesn't exist: {}", strerror(&e))
        } else {
            format!(
                "Fatal error: can't open the append log file {name} for reading: {}",
                strerror(&e)
            )
        })
    })?;
    if data.is_empty() {
        return Ok(FileLoad::Empty);
    }
    let mut start = 0;
    if data.starts_with(b"REDIS") {
        let old_style = name == p.config.appendfilename;
        if old_style {
            tracing::info!("Reading RDB preamble from AOF file...");
        } else {
            tracing::info!("Reading RDB base file on AOF loading...");
        }
        let mut stopped = false;
        let loaded = super::load_file_with(&data, store, p.config, &mut |store, bytes| {
            stopped = !host.progress(store, bytes);
            !stopped
        });
        if stopped {
            return Err(super::load_stopped());
        }
        let report = loaded.map_err(|e| {
            tracing::warn!(
                "{}",
                if old_style {
                    format!("Error reading the RDB preamble of the AOF file {name}, AOF loading aborted")
                } else {
                    format!("Error reading the RDB base file {name}, AOF loading aborted")
                }
            );
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("Bad file format reading the append only file {name}: {e}"),
            )
        })?;
        if old_style {
            tracing::info!("Reading the remaining AOF tail...");
        }
        start = report.end;
    }
    match replay_from(store, host, &data, start, name)? {
        Replayed::Whole => Ok(FileLoad::Ok),
        Replayed::Cut(cut) => {
            truncate_tail(&path, name, cut, p.config.get_bool("aof-load-truncated"))
        }
    }
}

/// Why a command could not be read at an offset.
enum Stop {
    /// The file ends inside the command.
    Short,
    /// The bytes are not a RESP array of bulk strings.
    Bad(&'static str),
}

/// Parses one command at `pos`; returns its arguments and the next offset.
fn parse_command(data: &[u8], pos: usize) -> Result<(OwnedArgv, usize), Stop> {
    let mut p = pos;
    let count = read_header(data, &mut p, b'*')?;
    if count < 1 {
        return Err(Stop::Bad("invalid array length"));
    }
    let mut argv = OwnedArgv::from_slices(std::iter::empty::<&[u8]>());
    for _ in 0..count {
        let len = read_header(data, &mut p, b'$')?;
        let end = p.checked_add(len).ok_or(Stop::Bad("bulk length"))?;
        let Some(arg) = data.get(p..end) else {
            return Err(Stop::Short);
        };
        match data.get(end..end + 2) {
            Some(b"\r\n") => {}
            Some(_) => return Err(Stop::Bad("expected CRLF after bulk string")),
            None => return Err(Stop::Short),
        }
        argv.push(arg);
        p = end + 2;
    }
    Ok((argv, p))
}

/// Reads `<prefix><digits>\r\n` at `p`.
fn read_header(data: &[u8], p: &mut usize, prefix: u8) -> Result<usize, Stop> {
    match data.get(*p) {
        None => return Err(Stop::Short),
        Some(&c) if c != prefix => {
            return Err(Stop::Bad(if prefix == b'*' {
                "expected '*'"
            } else {
                "expected '$'"
            }))
        }
        Some(_) => {}
    }
    let start = *p + 1;
    let Some(rel) = data
        .get(start..)
        .and_then(|d| d.iter().position(|&c| c == b'\r'))
    else {
        return Err(Stop::Short);
    };
    let digits = &data[start..start + rel];
    let n = std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .ok_or(Stop::Bad("invalid length"))?;
    match data.get(start + rel + 1) {
        Some(b'\n') => {}
        Some(_) => return Err(Stop::Bad("expected CRLF")),
        None => return Err(Stop::Short),
    }
    *p = start + rel + 2;
    Ok(n)
}

/// What follows a file's cut: the tail of a file that ends early —
/// inside a command, or after a MULTI that never reached EXEC — is cut
/// back when `truncate_ok` (aof-load-truncated), to before that MULTI so
/// that nothing appended later joins the unfinished transaction.
/// Otherwise the start is refused.
fn truncate_tail(
    path: &Path,
    name: &str,
    cut: usize,
    truncate_ok: bool,
) -> std::io::Result<FileLoad> {
    if !truncate_ok {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "Unexpected end of file reading the append only file {name}. You can: 1) Make a \
                 backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) \
                 Alternatively you can set the 'aof-load-truncated' configuration option to yes \
                 and restart the server."
            ),
        ));
    }
    tracing::warn!("!!! Warning: short read while loading the AOF file {name}!!!");
    tracing::warn!("!!! Truncating the AOF {name} at offset {cut} !!!");
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.set_len(cut as u64)?;
    f.sync_all()?;
    tracing::warn!("AOF {name} loaded anyway because aof-load-truncated is enabled");
    Ok(FileLoad::Truncated)
}

/// How a file's commands ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replayed {
    /// Every command was whole and every MULTI reached its EXEC.
    Whole,
    /// The file ends inside a command or an open transaction: what follows
    /// this offset was not applied (aof-load-truncated cuts it).
    Cut(usize),
}

/// Replays the commands in one file's bytes through `host`; malformed
/// bytes refuse the load with Redis's message. The fuzz target `aof_load`
/// feeds it.
pub fn replay_data(
    store: &mut Store,
    host: &mut dyn LoadHost,
    data: &[u8],
    name: &str,
) -> std::io::Result<Replayed> {
    replay_from(store, host, data, 0, name)
}

/// [`replay_data`] from offset `start` (after an RDB preamble).
fn replay_from(
    store: &mut Store,
    host: &mut dyn LoadHost,
    data: &[u8],
    start: usize,
    name: &str,
) -> std::io::Result<Replayed> {
    let bad = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
    let mut pos = start;
    let mut reported = start;
    let mut commands = 0u64;
    let mut txn_start = None;
    while pos < data.len() {
        if data[pos] == b'#' {
            // An annotation line (`#TS:` of aof-timestamp-enabled).
            pos = data[pos..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(data.len(), |i| pos + i + 1);
            continue;
        }
        match parse_command(data, pos) {
            Ok((argv, next)) => {
                let a = argv.argv();
                if !host.knows(a) {
                    return Err(bad(format!(
                        "Unknown command '{}' reading the append only file {name}",
                        String::from_utf8_lossy(a.get(0))
                    )));
                }
                if a.get(0).eq_ignore_ascii_case(b"multi") {
                    txn_start = Some(pos);
                } else if a.get(0).eq_ignore_ascii_case(b"exec") {
                    txn_start = None;
                }
                // Time stands still while loading, as in Redis (no key
                // expires during the load): every command sees the data
                // as it was when it was written; PEXPIREAT in the past
                // still sets the time, and the key expires after the load.
                store.set_now(0);
                host.replay(store, a);
                pos = next;
                // Clients are served every 1024 commands, as Redis does.
                commands += 1;
                if commands % 1024 == 0 {
                    if !host.progress(store, (pos - reported) as u64) {
                        return Err(super::load_stopped());
                    }
                    reported = pos;
                }
            }
            Err(Stop::Short) => break,
            Err(Stop::Bad(why)) => {
                return Err(bad(format!(
                    "Bad file format reading the append only file {name} at offset {pos}: \
                     {why}; make a backup of your AOF file, then use ./redis-check-aof --fix \
                     <filename.manifest>; refusing to start"
                )))
            }
        }
    }
    if pos == data.len() && txn_start.is_none() {
        return Ok(Replayed::Whole);
    }
    if pos == data.len() {
        // Every command is whole, but a MULTI never reached its EXEC: its
        // commands were queued, never applied.
        tracing::warn!("Revert incomplete MULTI/EXEC transaction in AOF file {name}");
    }
    Ok(Replayed::Cut(txn_start.unwrap_or(pos)))
}
