//! Reading RDB files and DUMP payloads, as Redis 7.0's `rdbLoad` and
//! `rdbLoadObject` do. The whole input is in memory, so every failure can
//! name the byte offset where it was found. Nothing is trusted: lengths
//! are checked before use and no input can make the loader panic.

use std::borrow::Cow;

use super::{compact, container, enc, listpack, op, ty, CRC64, RDB_VERSION};
use crate::store::list::List;
use crate::store::value::Value;
use crate::store::Store;

/// Why a load failed, and where.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadError {
    /// Byte offset in the file (or payload) where the problem was found.
    pub offset: usize,
    /// What is wrong, in Redis's words where Redis reports it
    /// (`rdbReportCorruptRDB`: "Hash ziplist integrity check failed.").
    pub reason: String,
    /// ferrokv's more precise cause, when the reason is Redis's general one
    /// ("ziplist too short").
    pub detail: &'static str,
    /// The key being read, and its RDB type, when the error is in a value.
    pub key: Option<(Vec<u8>, u8)>,
    /// Keys read before the error, in a file load.
    pub keys_read: u64,
}

impl LoadError {
    /// Redis's log line for the error (rdbReportError).
    pub fn internal_error_line(&self) -> String {
        format!(
            "Internal error in RDB reading offset {} -> {}",
            self.offset, self.reason
        )
    }

    /// The report redis-check-rdb prints after that line when a file fails
    /// to load: the offset, the reason and what was being read.
    pub fn check_report(&self) -> Vec<String> {
        let mut lines = vec![
            "--- RDB ERROR DETECTED ---".to_string(),
            format!("[offset {}] {}", self.offset, self.reason),
        ];
        if !self.detail.is_empty() {
            lines.push(format!("[additional info] {}", self.detail));
        }
        if let Some((key, t)) = &self.key {
            lines.push(format!(
                "[additional info] Reading key '{}'",
                String::from_utf8_lossy(key)
            ));
            lines.push(format!(
                "[additional info] Reading type {t} ({})",
                check_type_name(*t)
            ));
        }
        // The key being read counts as read.
        let keys = self.keys_read + u64::from(self.key.is_some());
        lines.push(format!("[info] {keys} keys read"));
        lines
    }
}

/// redis-check-rdb's name for an RDB value type (its rdb_type_string).
fn check_type_name(t: u8) -> &'static str {
    const NAMES: [&str; 19] = [
        "string",
        "list-linked",
        "set-hashtable",
        "zset-v1",
        "hash-hashtable",
        "zset-v2",
        "module-value",
        "",
        "",
        "hash-zipmap",
        "list-ziplist",
        "set-intset",
        "zset-ziplist",
        "hash-ziplist",
        "quicklist",
        "stream",
        "hash-listpack",
        "zset-listpack",
        "quicklist-v2",
    ];
    NAMES.get(usize::from(t)).copied().unwrap_or("unknown")
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.reason)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

/// A cursor over RDB bytes.
pub struct Dec<'a> {
    data: &'a [u8],
    /// Current offset.
    pub pos: usize,
    /// Set when a read ran past the end: the offset the input would have
    /// to reach (a streamed load waits for that many bytes and retries).
    pub short: Option<usize>,
    /// Listpacks, intsets and streams get Redis's deep integrity checks
    /// (false: a RESTORE under `sanitize-dump-payload no`, checked as
    /// Redis's shallow validation, see [`listpack::decode_with`]).
    pub deep: bool,
    /// Deep checks made (INFO `dump_payload_sanitizations`).
    pub sanitizations: u64,
}

/// A length or a special encoding marker.
enum Len {
    Plain(u64),
    Special(u8),
}

impl<'a> Dec<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Dec {
            data,
            pos: 0,
            short: None,
            deep: true,
            sanitizations: 0,
        }
    }

    /// Notes that the input ends before `n` more bytes.
    fn ran_short(&mut self, n: u64) {
        let need = (self.pos as u64).saturating_add(n);
        self.short = Some(usize::try_from(need).unwrap_or(usize::MAX));
    }

    fn fail<T>(&self, reason: impl Into<String>) -> Result<T, LoadError> {
        Err(LoadError {
            offset: self.pos,
            reason: reason.into(),
            ..LoadError::default()
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        match self.data.get(self.pos..self.pos.saturating_add(n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => {
                self.ran_short(n as u64);
                self.fail(format!(
                    "unexpected end of file (needed {n} more bytes, {} left)",
                    self.data.len().saturating_sub(self.pos)
                ))
            }
        }
    }

    /// `n` raw bytes (stream IDs and times in consumer groups).
    pub fn raw(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        self.take(n)
    }

    fn u8(&mut self) -> Result<u8, LoadError> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], LoadError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn len_or_special(&mut self) -> Result<Len, LoadError> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.u8()?)),
            3 => Len::Special(b & 0x3f),
            _ => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => return self.fail(format!("unknown length encoding 0x{b:02x}")),
            },
        })
    }

    /// A length (`rdbLoadLen`).
    pub fn length(&mut self) -> Result<u64, LoadError> {
        match self.len_or_special()? {
            Len::Plain(n) => Ok(n),
            Len::Special(_) => self.fail("string encoding found where a length was expected"),
        }
    }

    /// A length that must fit in memory and in what is left of the input.
    fn size(&mut self) -> Result<usize, LoadError> {
        let n = self.length()?;
        if n > (self.data.len() - self.pos) as u64 {
            self.ran_short(n);
            return self.fail(format!("length {n} runs past the end of the file"));
        }
        Ok(n as usize)
    }

    /// A string in any encoding (`rdbGenericLoadStringObject`); integers
    /// come back as `Err(Ok(n))`-free [`Str::Int`].
    fn str_any(&mut self) -> Result<Str<'a>, LoadError> {
        match self.len_or_special()? {
            Len::Plain(n) => {
                if n > (self.data.len() - self.pos) as u64 {
                    self.ran_short(n);
                    return self.fail(format!(
                        "unexpected end of file (string of {n} bytes, {} left)",
                        self.data.len() - self.pos
                    ));
                }
                Ok(Str::Bytes(Cow::Borrowed(self.take(n as usize)?)))
            }
            Len::Special(enc::INT8) => Ok(Str::Int(i64::from(self.u8()? as i8))),
            Len::Special(enc::INT16) => Ok(Str::Int(i64::from(i16::from_le_bytes(self.array()?)))),
            Len::Special(enc::INT32) => Ok(Str::Int(i64::from(i32::from_le_bytes(self.array()?)))),
            Len::Special(enc::LZF) => {
                let clen = self.size()?;
                let len = self.length()?;
                let at = self.pos;
                let c = self.take(clen)?;
                // Redis decompresses into a buffer of the announced length:
                // with 0, lzf_decompress yields 0 bytes, which is what was
                // asked, so the string loads empty whatever the data.
                if len == 0 {
                    return Ok(Str::Bytes(Cow::Borrowed(&[])));
                }
                // An LZF run expands at most ~40x (a 3-byte back reference
                // yields 264 bytes), which bounds what a hostile length may
                // make us allocate.
                if len > (clen as u64).saturating_mul(100).saturating_add(64) {
                    self.pos = at;
                    return self.fail(format!("LZF length {len} too large for {clen} bytes"));
                }
                match crate::util::lzf::decompress(c, len as usize) {
                    Some(v) => Ok(Str::Bytes(Cow::Owned(v))),
                    None => {
                        self.pos = at;
                        self.fail("Invalid LZF compressed string")
                    }
                }
            }
            Len::Special(e) => self.fail(format!("Unknown RDB string encoding type {e}")),
        }
    }

    /// A string's bytes, integers rendered as text.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, LoadError> {
        Ok(match self.str_any()? {
            Str::Bytes(b) => b,
            Str::Int(n) => {
                let mut buf = crate::util::num::itoa_buf();
                Cow::Owned(crate::util::num::fmt_i64(n, &mut buf).to_vec())
            }
        })
    }

    /// A value of RDB type `t` (`rdbLoadObject`); None for an empty list,
    /// which Redis skips.
    pub fn value(&mut self, t: u8) -> Result<Option<Value>, LoadError> {
        let at = self.pos;
        let mut list = List::default();
        match t {
            ty::STRING => {
                return Ok(Some(match self.str_any()? {
                    Str::Int(n) => Value::Int(n),
                    Str::Bytes(b) => Value::string(&b),
                }))
            }
            ty::LIST => {
                let n = self.length()?;
                for _ in 0..n {
                    list.push_back(&self.string()?);
                }
            }
            ty::LIST_ZIPLIST => {
                let blob = self.string()?;
                self.blob(
                    at,
                    "List ziplist integrity check failed.",
                    listpack::decode_ziplist(&blob, |e| list.push_back(e)),
                )?;
            }
            ty::LIST_QUICKLIST | ty::LIST_QUICKLIST_2 => {
                let nodes = self.length()?;
                for _ in 0..nodes {
                    let c = if t == ty::LIST_QUICKLIST_2 {
                        self.length()?
                    } else {
                        container::PACKED
                    };
                    let node_at = self.pos;
                    let blob = self.string()?;
                    if blob.is_empty() {
                        self.pos = node_at;
                        return self.fail("empty quicklist node");
                    }
                    match (t, c) {
                        (ty::LIST_QUICKLIST, _) => self.blob(
                            node_at,
                            "Ziplist integrity check failed.",
                            listpack::decode_ziplist(&blob, |e| list.push_back(e)),
                        )?,
                        (_, container::PLAIN) => list.push_back(&blob),
                        (_, container::PACKED) => {
                            self.sanitizations += u64::from(self.deep);
                            let deep = self.deep;
                            self.blob(
                                node_at,
                                "Listpack integrity check failed.",
                                listpack::decode_with(&blob, deep, |e| list.push_back(e)),
                            )?
                        }
                        _ => {
                            self.pos = node_at;
                            return Err(LoadError {
                                offset: node_at,
                                reason: "Quicklist integrity check failed.".into(),
                                detail: "unknown quicklist node container",
                                ..LoadError::default()
                            });
                        }
                    }
                }
            }
            ty::SET => {
                let mut set = crate::store::set::Set::default();
                for _ in 0..self.length()? {
                    let at = self.pos;
                    if !set.add(&self.string()?) {
                        self.pos = at;
                        return self.fail("Duplicate set members detected");
                    }
                }
                return Ok((!set.is_empty()).then_some(Value::Set(set)));
            }
            ty::HASH => {
                let mut hash = crate::store::hash::Hash::default();
                for _ in 0..self.length()? {
                    let at = self.pos;
                    let field = self.string()?;
                    let value = self.string()?;
                    // Unchecked, the first of a repeated field stays.
                    if !self.deep && hash.get(&field).is_some() {
                        continue;
                    }
                    if !hash.set(&field, &value) {
                        self.pos = at;
                        return self.fail("Duplicate hash fields detected");
                    }
                }
                return Ok((!hash.is_empty()).then(|| Value::Hash(hash)));
            }
            ty::ZSET | ty::ZSET_2 => {
                let n = self.length()?;
                let mut z = crate::store::zset::ZSet::with_hint(n.min(1 << 20) as usize, 0);
                for _ in 0..n {
                    let at = self.pos;
                    let member = self.string()?;
                    let score = if t == ty::ZSET {
                        self.text_double()?
                    } else {
                        f64::from_le_bytes(self.array::<8>()?)
                    };
                    if score.is_nan() {
                        return self.fail("Zset with NAN score detected");
                    }
                    if z.insert(&member, score).is_some() {
                        self.pos = at;
                        return self.fail("Duplicate zset fields detected");
                    }
                }
                // Redis converts small loaded sorted sets to a listpack.
                z.shrink_encoding();
                return Ok((!z.is_empty()).then(|| Value::ZSet(z)));
            }
            ty::SET_INTSET => {
                let blob = self.string()?;
                self.sanitizations += u64::from(self.deep);
                return compact::intset(&blob, self.deep)
                    .map(Some)
                    .map_err(|e| blob_err(at, "Intset integrity check failed.", e));
            }
            ty::HASH_ZIPMAP | ty::HASH_ZIPLIST | ty::HASH_LISTPACK => {
                let blob = self.string()?;
                let items = match t {
                    ty::HASH_ZIPMAP => compact::zipmap(&blob),
                    _ => compact::elements(&blob, t == ty::HASH_ZIPLIST, self.deep),
                };
                // Redis checks zipmaps and ziplists fully in any case.
                let deep = self.deep || t != ty::HASH_LISTPACK;
                self.sanitizations += u64::from(self.deep && t == ty::HASH_LISTPACK);
                let reason = match t {
                    ty::HASH_ZIPMAP => "Zipmap integrity check failed.",
                    ty::HASH_ZIPLIST => "Hash ziplist integrity check failed.",
                    _ => "Hash listpack integrity check failed.",
                };
                return items
                    .and_then(|i| compact::hash(&i, t == ty::HASH_ZIPMAP, deep))
                    .map_err(|e| blob_err(at, reason, e));
            }
            ty::ZSET_ZIPLIST | ty::ZSET_LISTPACK => {
                let blob = self.string()?;
                let reason = match t {
                    ty::ZSET_ZIPLIST => "Zset ziplist integrity check failed.",
                    _ => "Zset listpack integrity check failed.",
                };
                let deep = self.deep || t == ty::ZSET_ZIPLIST;
                self.sanitizations += u64::from(self.deep && t == ty::ZSET_LISTPACK);
                return compact::elements(&blob, t == ty::ZSET_ZIPLIST, deep)
                    .and_then(|i| compact::zset(&i, deep))
                    .map_err(|e| blob_err(at, reason, e));
            }
            ty::STREAM_LISTPACKS | ty::STREAM_LISTPACKS_2 => {
                let s = super::stream::load(self, t == ty::STREAM_LISTPACKS_2)?;
                return Ok(Some(Value::Stream(Box::new(s))));
            }
            _ => return self.fail(unsupported(t)),
        }
        Ok((!list.is_empty()).then(|| Value::List(Box::new(list))))
    }

    fn blob(
        &mut self,
        at: usize,
        reason: &'static str,
        r: Result<(), &'static str>,
    ) -> Result<(), LoadError> {
        r.map_err(|e| blob_err(at, reason, e))
    }

    /// A double as text with a one-byte length (`rdbLoadDoubleValue`, the
    /// scores of the old ZSET type): 253 is NaN, 254 +inf, 255 -inf.
    fn text_double(&mut self) -> Result<f64, LoadError> {
        let at = self.pos;
        Ok(match self.u8()? {
            253 => f64::NAN,
            254 => f64::INFINITY,
            255 => f64::NEG_INFINITY,
            n => {
                let text = self.take(usize::from(n))?;
                match std::str::from_utf8(text).ok().and_then(|s| s.parse().ok()) {
                    Some(v) => v,
                    None => {
                        self.pos = at;
                        return self.fail("invalid sorted set score");
                    }
                }
            }
        })
    }
}

/// A damaged encoded blob, reported at the start of its value with Redis's
/// `reason` for its type and what exactly is wrong (`detail`).
pub(super) fn blob_err(at: usize, reason: &'static str, detail: &'static str) -> LoadError {
    LoadError {
        offset: at,
        reason: reason.into(),
        detail,
        ..LoadError::default()
    }
}

fn unsupported(t: u8) -> String {
    format!(
        "unsupported value type {t} ({}): ferrokv reads strings, lists, hashes, sets and sorted sets",
        super::type_name(t)
    )
}

/// Value types this loader reads.
fn supported(t: u8) -> bool {
    matches!(
        t,
        ty::STRING
            | ty::LIST
            | ty::SET
            | ty::HASH
            | ty::ZSET
            | ty::ZSET_2
            | ty::HASH_ZIPMAP
            | ty::SET_INTSET
            | ty::ZSET_ZIPLIST
            | ty::HASH_ZIPLIST
            | ty::HASH_LISTPACK
            | ty::ZSET_LISTPACK
            | ty::LIST_ZIPLIST
            | ty::LIST_QUICKLIST
            | ty::LIST_QUICKLIST_2
            | ty::STREAM_LISTPACKS
            | ty::STREAM_LISTPACKS_2
    )
}

enum Str<'a> {
    Bytes(Cow<'a, [u8]>),
    Int(i64),
}

/// Checks a DUMP payload's footer (`verifyDumpPayload`): at least the
/// 2-byte version and 8-byte CRC64, a version Redis 7.0 reads, a matching
/// checksum (unless `skip_checksum`).
pub fn verify_payload(p: &[u8], skip_checksum: bool) -> bool {
    let Some(footer) = p.len().checked_sub(10).and_then(|at| p.get(at..)) else {
        return false;
    };
    let ver = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    ver <= RDB_VERSION
        && (skip_checksum || CRC64.checksum(&p[..p.len() - 8]) == u64::from_le_bytes(crc))
}

/// Decodes a verified payload into a value (None, `Bad data format`, when
/// it does not parse or is an empty list). As in Redis the reader is given
/// the whole payload, footer included, and trailing bytes are ignored.
pub fn payload_value(payload: &[u8]) -> Option<Value> {
    payload_value_or_error(payload, true, &mut 0).ok().flatten()
}

/// [`payload_value`], with why a payload that does not parse was refused
/// (Ok(None): an empty value).
/// `deep`: Redis's deep integrity checks (`sanitize-dump-payload`); the
/// number of checks made is added to `sanitizations`.
pub fn payload_value_or_error(
    payload: &[u8],
    deep: bool,
    sanitizations: &mut u64,
) -> Result<Option<Value>, LoadError> {
    let mut d = Dec::new(payload);
    d.deep = deep;
    let t = d.u8()?;
    let r = d.value(t);
    *sanitizations += d.sanitizations;
    r
}

/// Options of a file load.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// `rdbchecksum`: verify the CRC64 (a stored 0 means "not computed").
    pub verify_checksum: bool,
    /// Unix time in ms: keys that expired before it are skipped.
    pub now_ms: u64,
    /// `key-load-delay`: microseconds to wait after each key (a test hook
    /// that keeps a load in progress long enough to observe).
    pub key_delay_us: i64,
    /// `loading-process-events-interval-bytes`: the progress hook of
    /// [`load_rdb_with`] is called each time the load crosses a multiple
    /// of it (0: never).
    pub events_interval: u64,
    /// A key already in the store is replaced rather than refused
    /// (Redis's RDBFLAGS_ALLOW_DUP: DEBUG RELOAD MERGE).
    pub allow_dup: bool,
    /// Keys skipped as expired are listed in the report, to reach the
    /// backlog as DELs (Redis's RDBFLAGS_FEED_REPL: a master restarting
    /// with its replication history).
    pub feed_expired: bool,
    /// Keys whose TTL has passed are loaded too: a replica's are removed
    /// by its master's DELs (Redis skips them only when iAmMaster()).
    pub keep_expired: bool,
}

/// What a load found.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Keys loaded.
    pub keys_loaded: u64,
    /// Keys skipped because their TTL had passed.
    pub keys_expired: u64,
    /// Empty lists skipped.
    pub empty_skipped: u64,
    /// AUX fields.
    pub aux: Vec<(String, String)>,
    /// Function libraries read (into the store's `functions`).
    pub functions: u64,
    /// The keys skipped as expired, with their database, when
    /// [`LoadOptions::feed_expired`] asks for them.
    pub expired: Vec<(usize, Vec<u8>)>,
    /// The offset just past the image (its checksum included): an AOF
    /// with an RDB preamble goes on with commands from there.
    pub end: usize,
}

/// Loads a whole RDB file image into `store` (which should be empty).
pub fn load_rdb(
    data: &[u8],
    store: &mut Store,
    opts: LoadOptions,
) -> Result<LoadReport, LoadError> {
    load_rdb_with(data, store, opts, &mut |_, _| true)
}

/// [`load_rdb`], calling `progress` with the store and the bytes read
/// since its last call whenever the load crosses a multiple of
/// `opts.events_interval` (Redis's rdbLoadProgressCallback, where the
/// server serves its clients); `progress` answering false stops the load.
pub fn load_rdb_with(
    data: &[u8],
    store: &mut Store,
    opts: LoadOptions,
    progress: &mut dyn FnMut(&mut Store, u64) -> bool,
) -> Result<LoadReport, LoadError> {
    let mut reported = 0usize;
    let mut d = Dec::new(data);
    let version = read_header(&mut d)?;
    let mut cursor = LoadCursor::new(version, &opts);
    loop {
        let step = cursor.step(&mut d, store, &opts).map_err(|mut e| {
            e.keys_read = cursor.report.keys_loaded;
            e
        })?;
        if step == Step::End {
            break;
        }
        let interval = opts.events_interval as usize;
        if interval != 0 && d.pos / interval > reported / interval {
            if !progress(store, (d.pos - reported) as u64) {
                return Err(LoadError {
                    offset: d.pos,
                    reason: "loading stopped".into(),
                    ..LoadError::default()
                });
            }
            reported = d.pos;
        }
    }
    let sum_end = d.pos;
    if version >= 5 {
        let stored = u64::from_le_bytes(d.array()?);
        if opts.verify_checksum && stored != 0 {
            let computed = CRC64.checksum(&data[..sum_end]);
            if computed != stored {
                return Err(checksum_error(sum_end, stored, computed));
            }
        }
    }
    log_done(&cursor.report);
    cursor.report.end = d.pos;
    Ok(cursor.report)
}

/// Redis's line at the end of a load (rdbLoadRio), a warning when empty
/// keys were skipped.
fn log_done(r: &LoadReport) {
    if r.empty_skipped > 0 {
        tracing::warn!(
            "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
            r.keys_loaded,
            r.keys_expired,
            r.empty_skipped
        );
    } else {
        tracing::info!(
            "Done loading RDB, keys loaded: {}, keys expired: {}.",
            r.keys_loaded,
            r.keys_expired
        );
    }
}

/// A checksum that does not match: Redis's warning, then its reason.
fn checksum_error(offset: usize, stored: u64, computed: u64) -> LoadError {
    tracing::warn!(
        "Wrong RDB checksum expected: ({computed:x}) but got ({stored:x}). Aborting now."
    );
    LoadError {
        offset,
        reason: "RDB CRC error".into(),
        ..LoadError::default()
    }
}

/// The `REDIS<version>` header; the version.
fn read_header(d: &mut Dec<'_>) -> Result<u16, LoadError> {
    let magic = d.take(9)?;
    if &magic[..5] != b"REDIS" {
        return Err(LoadError {
            offset: 0,
            reason: "wrong signature (not an RDB file)".into(),
            ..LoadError::default()
        });
    }
    let version = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|v| v.parse::<u16>().ok())
        .unwrap_or(0);
    if !(1..=RDB_VERSION).contains(&version) {
        return Err(LoadError {
            offset: 5,
            reason: format!(
                "can't handle RDB format version {}",
                String::from_utf8_lossy(&magic[5..])
            ),
            ..LoadError::default()
        });
    }
    Ok(version)
}

/// What a [`LoadCursor::step`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A key (loaded, or skipped as expired or empty).
    Record,
    /// The end-of-file opcode; the checksum follows.
    End,
}

/// A load between two records: what it carries from one to the next.
struct LoadCursor {
    db: usize,
    lru_now: u32,
    report: LoadReport,
}

impl LoadCursor {
    fn new(_version: u16, opts: &LoadOptions) -> Self {
        LoadCursor {
            db: 0,
            lru_now: (opts.now_ms / 1000) as u32,
            report: LoadReport::default(),
        }
    }

    /// Reads the opcodes up to the next key and that key, or up to the
    /// end-of-file opcode. Nothing is kept of a step that fails, so a
    /// streamed load may retry it from its start with more bytes.
    fn step(
        &mut self,
        d: &mut Dec<'_>,
        store: &mut Store,
        opts: &LoadOptions,
    ) -> Result<Step, LoadError> {
        let databases = store.dbs.len();
        let mut db = self.db;
        let mut expire: Option<i64> = None;
        let mut idle: Option<u64> = None;
        let mut aux = Vec::new();
        let mut functions = Vec::new();
        let t = loop {
            let at = d.pos;
            let t = d.u8()?;
            match t {
                op::EXPIRETIME => {
                    expire = Some(i64::from(i32::from_le_bytes(d.array()?)) * 1000);
                }
                op::EXPIRETIME_MS => {
                    expire = Some(i64::from_le_bytes(d.array()?));
                }
                op::FREQ => {
                    d.u8()?;
                }
                op::IDLE => {
                    idle = Some(d.length()?);
                }
                op::EOF => break t,
                op::SELECTDB => {
                    let n = d.length()?;
                    if n >= databases as u64 {
                        d.pos = at;
                        return d.fail(format!(
                            "the file selects database {n} but only {databases} are configured"
                        ));
                    }
                    db = n as usize;
                }
                op::RESIZEDB => {
                    d.length()?;
                    d.length()?;
                }
                op::AUX => {
                    let k = d.string()?;
                    let v = d.string()?;
                    aux.push((
                        String::from_utf8_lossy(&k).into_owned(),
                        String::from_utf8_lossy(&v).into_owned(),
                    ));
                }
                op::FUNCTION2 => {
                    // A function library's source: the server compiles it
                    // once the file is loaded (ServerState::install_functions).
                    functions.push(d.string()?.into_owned());
                }
                op::FUNCTION_PRE_GA | op::MODULE_AUX => {
                    d.pos = at;
                    return d.fail(format!(
                        "unsupported opcode {t} ({})",
                        if t == op::MODULE_AUX {
                            "module data"
                        } else {
                            "pre-GA function"
                        }
                    ));
                }
                _ if !supported(t) => {
                    d.pos = at;
                    return d.fail(unsupported(t));
                }
                _ => break t,
            }
        };
        let mut commit = |cursor: &mut LoadCursor, store: &mut Store| {
            cursor.db = db;
            for (k, v) in &aux {
                log_aux(k, v);
            }
            cursor.report.aux.append(&mut aux);
            cursor.report.functions += functions.len() as u64;
            store.functions.append(&mut functions);
        };
        if t == op::EOF {
            commit(self, store);
            return Ok(Step::End);
        }
        let at = d.pos - 1;
        let key = d.string()?;
        let value = d.value(t).map_err(|mut e| {
            e.key = Some((key.to_vec(), t));
            e
        })?;
        commit(self, store);
        let Some(value) = value else {
            // Redis names the first ten (rdbLoadRio).
            if self.report.empty_skipped < 10 {
                tracing::warn!(
                    "rdbLoadObject skipping empty key: {}",
                    String::from_utf8_lossy(&key)
                );
            }
            self.report.empty_skipped += 1;
            return Ok(Step::Record);
        };
        if let Some(e) = expire.filter(|_| !opts.keep_expired) {
            if e < opts.now_ms as i64 {
                self.report.keys_expired += 1;
                if opts.feed_expired {
                    self.report.expired.push((db, key.into_owned()));
                }
                return Ok(Step::Record);
            }
        }
        let expire_at = expire.map_or(0, |e| e.max(0) as u64);
        let lru = self
            .lru_now
            .saturating_sub(idle.map_or(0, |i| i.min(u64::from(u32::MAX)) as u32));
        if opts.allow_dup {
            store.remove(db, &key);
        }
        if !store.insert_loaded(db, &key, value, expire_at, lru) {
            d.pos = at;
            return d.fail(format!(
                "duplicate key '{}' in database {db}",
                String::from_utf8_lossy(&key)
            ));
        }
        self.report.keys_loaded += 1;
        if opts.key_delay_us != 0 {
            crate::util::clock::debug_delay(opts.key_delay_us);
        }
        Ok(Step::Record)
    }
}

/// Where a streamed load reads from: bytes arrive in pieces.
pub trait Incoming {
    /// The bytes received and not yet consumed.
    fn buffered(&self) -> &[u8];
    /// Drops the first `n` buffered bytes, read.
    fn consume(&mut self, n: usize);
    /// Waits for more bytes; fails when none will come.
    fn more(&mut self) -> Result<(), String>;
}

/// Loads an RDB image as it arrives (a replica's diskless load, Redis's
/// rdbLoadRio over the master's socket): each record is read once the
/// bytes it needs are in, and bytes already loaded are let go. Stops after
/// the checksum; what follows stays buffered.
pub fn load_rdb_streamed(
    src: &mut dyn Incoming,
    store: &mut Store,
    opts: LoadOptions,
) -> Result<LoadReport, String> {
    let mut crc = CRC64.digest();
    let mut cursor: Option<(u16, LoadCursor)> = None;
    let mut consumed = 0usize;
    let mut need = 0usize;
    loop {
        while src.buffered().len() < need {
            src.more()?;
        }
        let data = src.buffered();
        let mut d = Dec::new(data);
        let stepped = match &mut cursor {
            None => read_header(&mut d).map(|v| {
                cursor = Some((v, LoadCursor::new(v, &opts)));
                Step::Record
            }),
            Some((_, c)) => c.step(&mut d, store, &opts),
        };
        match stepped {
            Ok(step) => {
                let n = d.pos;
                crc.update(&data[..n]);
                src.consume(n);
                consumed += n;
                need = 0;
                if step == Step::End {
                    break;
                }
            }
            Err(_) if d.short.is_some() => {
                need = d.short.unwrap_or(0).max(data.len() + 1);
            }
            Err(mut e) => {
                e.offset += consumed;
                return Err(e.to_string());
            }
        }
    }
    let Some((version, cursor)) = cursor else {
        return Err("the load ended before its header".into());
    };
    if version >= 5 {
        while src.buffered().len() < 8 {
            src.more()?;
        }
        let mut sum = [0u8; 8];
        sum.copy_from_slice(&src.buffered()[..8]);
        src.consume(8);
        let stored = u64::from_le_bytes(sum);
        let computed = crc.finalize();
        if opts.verify_checksum && stored != 0 && computed != stored {
            return Err(checksum_error(consumed, stored, computed).to_string());
        }
    }
    log_done(&cursor.report);
    Ok(cursor.report)
}

/// The log line of an AUX field as a load reads it (Redis's rdbLoadRio):
/// the producing version, the file's age and memory, an AOF tail or base,
/// `%`-named information fields; the rest at debug level.
fn log_aux(key: &str, value: &str) {
    let number = || value.trim().parse::<i64>().unwrap_or(0);
    if key.starts_with('%') {
        tracing::info!("RDB '{key}': {value}");
        return;
    }
    match key.to_ascii_lowercase().as_str() {
        "repl-stream-db" | "repl-id" | "repl-offset" | "lua" | "redis-bits" => {}
        "redis-ver" => tracing::info!("Loading RDB produced by version {value}"),
        "ctime" => {
            let now = (crate::util::clock::real_now_ms() / 1000) as i64;
            tracing::info!("RDB age {} seconds", now.saturating_sub(number()).max(0));
        }
        "used-mem" => tracing::info!(
            "RDB memory usage when created {:.2} Mb",
            number() as f64 / (1024.0 * 1024.0)
        ),
        "aof-preamble" if number() != 0 => tracing::info!("RDB has an AOF tail"),
        "aof-base" if number() != 0 => tracing::info!("RDB is base AOF"),
        "aof-preamble" | "aof-base" => {}
        _ => tracing::trace!("Unrecognized RDB AUX field: '{key}'"),
    }
}
