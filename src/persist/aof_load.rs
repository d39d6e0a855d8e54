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

/// A file named by the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AofFile {
    /// File name inside the AOF directory.
    pub name: String,
    /// Its sequence number.
    pub seq: u64,
}

/// The manifest (Redis 7.0's `aofManifest`): the base file, the
/// incremental files in order, and history files waiting for deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The base file, if any.
    pub base: Option<AofFile>,
    /// Incremental files, in order.
    pub incrs: Vec<AofFile>,
    /// Files replaced by a rewrite, not loaded.
    pub history: Vec<AofFile>,
    /// The highest base sequence number seen.
    pub base_seq: u64,
    /// The highest incremental sequence number seen.
    pub incr_seq: u64,
}

impl Manifest {
    /// Every file named.
    pub fn files(&self) -> impl Iterator<Item = &AofFile> {
        self.base.iter().chain(&self.history).chain(&self.incrs)
    }

    /// The manifest text as Redis writes it (`getAofManifestAsString`):
    /// base, then history, then incremental files.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut line = |f: &AofFile, t: char| {
            out.push_str(&format!("file {} seq {} type {t}\n", f.name, f.seq));
        };
        if let Some(b) = &self.base {
            line(b, 'b');
        }
        for h in &self.history {
            line(h, 'h');
        }
        for i in &self.incrs {
            line(i, 'i');
        }
        out
    }
}

/// Reads the manifest; Ok(None) when there is none.
pub fn read_manifest(config: &Config) -> Result<Option<Manifest>, String> {
    let path = manifest_path(config);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "Can't read the AOF manifest {}: {e}",
                path.display()
            ))
        }
    };
    parse_manifest(&text).map(Some)
}

/// Parses a manifest's text (the fuzz target `aof_manifest` feeds it).
pub fn parse_manifest(text: &str) -> Result<Manifest, String> {
    let mut m = Manifest::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let (mut name, mut seq, mut kind) = (None, None, None);
        for pair in words.chunks(2) {
            match pair {
                ["file", v] => name = Some(v.to_string()),
                ["seq", v] => seq = v.parse::<u64>().ok(),
                ["type", v] => kind = Some(v.to_string()),
                _ => {}
            }
        }
        let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
            return Err(format!(
                "Invalid AOF manifest file format at line {}: {line}",
                n + 1
            ));
        };
        let file = AofFile { name, seq };
        match kind.as_str() {
            "b" => {
                if m.base.is_some() {
                    return Err("Found duplicate base file information".into());
                }
                m.base_seq = seq;
                m.base = Some(file);
            }
            "i" => {
                if seq <= m.incr_seq && !m.incrs.is_empty() {
                    return Err("Found a non-monotonic sequence number".into());
                }
                m.incr_seq = seq;
                m.incrs.push(file);
            }
            // History files wait for deletion; they are not loaded.
            "h" => m.history.push(file),
            _ => return Err(format!("Unknown AOF file type {kind} at line {}", n + 1)),
        }
    }
    Ok(m)
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

/// Start-up with `appendonly yes`: loads the files the manifest names and
/// opens the incremental file for appending. Without a manifest, the RDB
/// file (if any) is loaded and a first base is written from it. `host`
/// runs each command read from a file and serves clients between them.
pub fn load_on_start(
    store: &mut Store,
    p: &mut Persistence<'_>,
    host: &mut dyn LoadHost,
) -> std::io::Result<()> {
    let bad = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
    let Some(m) = read_manifest(p.config).map_err(bad)? else {
        super::load_on_start(store, p, host)?;
        tracing::info!("Creating AOF base file on server start");
        p.aof
            .rewrite(store, p.config)
            .map_err(std::io::Error::other)?;
        // Redis does not count the base written at start-up as a rewrite.
        p.aof.rewrites = 0;
        return Ok(());
    };
    load_files(store, p, host, &m)?;
    p.aof.open_on_start(p.config, m)?;
    p.aof.delete_history(p.config);
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

/// Loads the base and incremental files of manifest `m`.
fn load_files(
    store: &mut Store,
    p: &mut Persistence<'_>,
    host: &mut dyn LoadHost,
    m: &Manifest,
) -> std::io::Result<()> {
    let bad = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
    let started = std::time::Instant::now();
    let dir = aof_dir(p.config);
    let truncated_ok = p.config.get_bool("aof-load-truncated");
    if let Some(base) = m.base.as_ref().map(|b| &b.name) {
        let path = dir.join(base);
        let data = std::fs::read(&path)
            .map_err(|e| bad(format!("Can't open the base AOF file {base}: {e}")))?;
        if data.starts_with(b"REDIS") {
            let mut stopped = false;
            let loaded = super::load_file_with(&data, store, p.config, &mut |store, bytes| {
                stopped = !host.progress(store, bytes);
                !stopped
            });
            if stopped {
                return Err(super::load_stopped());
            }
            loaded.map_err(|e| {
                bad(format!(
                    "Bad file format reading the base AOF file {base}: {e}; refusing to start"
                ))
            })?;
        } else {
            replay_file(store, host, &path, base, truncated_ok, m.incrs.is_empty())?;
        }
    }
    let last = m.incrs.len().saturating_sub(1);
    for (i, name) in m.incrs.iter().map(|f| &f.name).enumerate() {
        let path = dir.join(name);
        if !path.exists() && i == last {
            continue;
        }
        replay_file(store, host, &path, name, truncated_ok, i == last)?;
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

/// Replays the commands of one file (Redis's loadSingleAppendOnlyFile). A
/// file that ends early — inside a command, or after a MULTI that never
/// reached EXEC — is cut back when `truncate_ok` (aof-load-truncated), to
/// before that MULTI so that nothing appended later joins the unfinished
/// transaction; that is fatal unless it is the `last` file. Otherwise the
/// start is refused.
fn replay_file(
    store: &mut Store,
    host: &mut dyn LoadHost,
    path: &Path,
    name: &str,
    truncate_ok: bool,
    last: bool,
) -> std::io::Result<()> {
    let bad = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
    let data =
        std::fs::read(path).map_err(|e| bad(format!("Can't open the AOF file {name}: {e}")))?;
    let Replayed::Cut(cut) = replay_data(store, host, &data, name)? else {
        return Ok(());
    };
    if !truncate_ok {
        return Err(bad(format!(
            "Unexpected end of file reading the append only file {name}. You can: 1) Make a \
             backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) \
             Alternatively you can set the 'aof-load-truncated' configuration option to yes and \
             restart the server."
        )));
    }
    tracing::warn!("!!! Warning: short read while loading the AOF file {name}!!!");
    tracing::warn!("!!! Truncating the AOF {name} at offset {cut} !!!");
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.set_len(cut as u64)?;
    f.sync_all()?;
    tracing::warn!("AOF {name} loaded anyway because aof-load-truncated is enabled");
    if !last {
        return Err(bad(
            "Fatal error: the truncated file is not the last file".into()
        ));
    }
    Ok(())
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
    let bad = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
    let mut pos = 0;
    let mut reported = 0;
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
