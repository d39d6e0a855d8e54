//! Writing RDB: value serialization as `rdbSaveObject` does it (shared by
//! files and DUMP payloads) and whole files as `rdbSaveRio` lays them out:
//! header, AUX fields, then per non-empty database SELECTDB, RESIZEDB and
//! its keys, then EOF and the CRC64.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{enc, listpack, op, ty, CRC64, RDB_VERSION};
use crate::store::value::Value;
use crate::util::num;

/// Serializes RDB items into a byte buffer.
pub struct Enc {
    /// The bytes written so far.
    pub buf: Vec<u8>,
    /// `rdbcompression`: LZF-compress strings longer than 20 bytes.
    pub compress: bool,
}

impl Enc {
    /// An empty encoder.
    pub fn new(compress: bool) -> Self {
        Enc {
            buf: Vec::new(),
            compress,
        }
    }

    /// A length (`rdbSaveLen`).
    pub fn len(&mut self, n: u64) {
        if n < 1 << 6 {
            self.buf.push(n as u8);
        } else if n < 1 << 14 {
            self.buf
                .extend_from_slice(&[(n >> 8) as u8 | 0x40, n as u8]);
        } else if n <= u64::from(u32::MAX) {
            self.buf.push(0x80);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            self.buf.push(0x81);
            self.buf.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// An integer in the special INT8/16/32 encodings; false when it does
    /// not fit in 32 bits (`rdbEncodeInteger`).
    fn encoded_int(&mut self, v: i64) -> bool {
        if let Ok(b) = i8::try_from(v) {
            self.buf.extend_from_slice(&[0xC0 | enc::INT8, b as u8]);
        } else if let Ok(h) = i16::try_from(v) {
            self.buf.push(0xC0 | enc::INT16);
            self.buf.extend_from_slice(&h.to_le_bytes());
        } else if let Ok(w) = i32::try_from(v) {
            self.buf.push(0xC0 | enc::INT32);
            self.buf.extend_from_slice(&w.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    /// A string as `rdbSaveRawString` writes it: integer-encoded when it is
    /// a canonical integer of up to 11 characters that fits in 32 bits,
    /// else LZF-compressed when enabled, longer than 20 bytes and the
    /// result is at least 4 bytes shorter, else as is.
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 11 {
            if let Some(v) = num::parse_i64(s) {
                if self.encoded_int(v) {
                    return;
                }
            }
        }
        if self.compress && s.len() > 20 {
            if let Some(c) = crate::util::lzf::compress(s, s.len() - 4) {
                self.buf.push(0xC0 | enc::LZF);
                self.len(c.len() as u64);
                self.len(s.len() as u64);
                self.buf.extend_from_slice(&c);
                return;
            }
        }
        self.len(s.len() as u64);
        self.buf.extend_from_slice(s);
    }

    /// An int-encoded string object (`rdbSaveLongLongAsStringObject`).
    pub fn int_string(&mut self, v: i64) {
        if !self.encoded_int(v) {
            let mut b = num::itoa_buf();
            let s = num::fmt_i64(v, &mut b);
            self.len(s.len() as u64);
            self.buf.extend_from_slice(s);
        }
    }

    /// The type byte of a value (`rdbSaveObjectType`): compact hashes,
    /// sets and sorted sets in the compact types Redis 7.0 writes for them.
    pub fn value_type(&mut self, v: &Value) {
        self.buf.push(match v {
            Value::List(_) => ty::LIST_QUICKLIST_2,
            Value::Hash(h) if h.is_listpack() => ty::HASH_LISTPACK,
            Value::Hash(_) => ty::HASH,
            Value::Set(s) if s.encoding() == "intset" => ty::SET_INTSET,
            Value::Set(_) => ty::SET,
            Value::ZSet(z) if z.encoding() == "listpack" => ty::ZSET_LISTPACK,
            Value::ZSet(_) => ty::ZSET_2,
            Value::Stream(_) => ty::STREAM_LISTPACKS_2,
            Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Large(_) => ty::STRING,
        });
    }

    /// A value's body (`rdbSaveObject`).
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Int(n) => self.int_string(*n),
            Value::Str(s) => self.string(s.as_slice()),
            Value::Raw(s) => self.string(s),
            Value::Large(s) => self.string(s),
            Value::List(l) => {
                // Node count first: build the nodes, then write them.
                let mut nodes: Vec<(u64, Vec<u8>)> = Vec::new();
                let rule = listpack::NodeRule {
                    fill: l.fill(),
                    plain_threshold: crate::store::list::plain_threshold(),
                };
                let _ = listpack::build_nodes(l.iter(), rule, |c, b| {
                    nodes.push((c, b.to_vec()));
                    Ok::<(), ()>(())
                });
                self.len(nodes.len() as u64);
                // PLAIN and PACKED nodes alike go through rdbSaveRawString.
                for (c, b) in nodes {
                    self.len(c);
                    self.string(&b);
                }
            }
            Value::Hash(h) if h.is_listpack() => {
                let lp = listpack::build(h.iter().flat_map(|(f, v)| [f, v]));
                self.string(&lp);
            }
            Value::Hash(h) => {
                self.len(h.len() as u64);
                for (field, value) in h.iter() {
                    self.string(field);
                    self.string(value);
                }
            }
            Value::Set(set) if set.encoding() == "intset" => self.string(&intset_blob(set)),
            Value::Set(set) => {
                self.len(set.len() as u64);
                for m in set.iter() {
                    m.with(|b| self.string(b));
                }
            }
            Value::ZSet(z) if z.encoding() == "listpack" => {
                let scores: Vec<Vec<u8>> = z.iter_from(0).map(|(_, s)| d2string(s)).collect();
                let lp = listpack::build(
                    z.iter_from(0)
                        .zip(&scores)
                        .flat_map(|((m, _), s)| [m, s.as_slice()]),
                );
                self.string(&lp);
            }
            Value::ZSet(z) => {
                // From the highest score down, as Redis walks its skiplist
                // from the tail (so that loading inserts at the head).
                self.len(z.len() as u64);
                for (member, score) in z.iter_rev_from(z.len().saturating_sub(1)) {
                    self.string(member);
                    self.buf.extend_from_slice(&score.to_le_bytes());
                }
            }
            Value::Stream(s) => super::stream::save(self, s),
        }
    }

    /// An AUX field with a string value.
    fn aux(&mut self, name: &str, value: &[u8]) {
        self.buf.push(op::AUX);
        self.string(name.as_bytes());
        self.string(value);
    }
}

/// An intset blob (`intset.c`): the narrowest of 2, 4 or 8 bytes per
/// member that holds them all, the count, the members ascending.
fn intset_blob(set: &crate::store::set::Set) -> Vec<u8> {
    let ints: Vec<i64> = set
        .iter()
        .map(|m| match m {
            crate::store::set::Member::Int(n) => n,
            crate::store::set::Member::Bytes(b) => num::parse_i64(b).unwrap_or(0),
        })
        .collect();
    let width: u32 = if ints.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if ints.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + ints.len() * width as usize);
    out.extend_from_slice(&width.to_le_bytes());
    out.extend_from_slice(&(ints.len() as u32).to_le_bytes());
    for v in ints {
        out.extend_from_slice(&v.to_le_bytes()[..width as usize]);
    }
    out
}

/// A score as Redis 7.0's `d2string` writes it into a listpack: integers
/// within +-2^52 without a fraction, `inf`/`-inf`, else `%.17g`.
fn d2string(v: f64) -> Vec<u8> {
    let mut out = Vec::new();
    if v.is_nan() {
        out.extend_from_slice(b"nan");
    } else if v.is_infinite() {
        out.extend_from_slice(if v < 0.0 { b"-inf" } else { b"inf" });
    } else if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
    } else if v > -4503599627370495.0 && v < 4503599627370496.0 && v == (v as i64) as f64 {
        let mut b = num::itoa_buf();
        out.extend_from_slice(num::fmt_i64(v as i64, &mut b));
    } else {
        num::write_g17(v, &mut out);
    }
    out
}

/// A DUMP payload: type, value, RDB version (2 bytes LE), CRC64 (8 bytes LE).
pub fn dump_payload(v: &Value, compress: bool) -> Vec<u8> {
    let mut e = Enc::new(compress);
    e.value_type(v);
    e.value(v);
    e.buf.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&e.buf);
    e.buf.extend_from_slice(&crc.to_le_bytes());
    e.buf
}

/// The callback [`DbSource::each`] calls per key.
pub type EachKey<'a> = dyn FnMut(&[u8], &Value, u64) -> std::io::Result<()> + 'a;

/// The keys of one database to save.
pub trait DbSource {
    /// Number of databases.
    fn db_count(&self) -> usize;
    /// Keys and keys with a TTL in database `db` (RESIZEDB hints).
    fn db_sizes(&self, db: usize) -> (usize, usize);
    /// Calls `f(key, value, expire_at_ms /* 0 = none */)` for every key of
    /// `db`, stopping at the first error.
    fn each(&self, db: usize, f: &mut EachKey<'_>) -> std::io::Result<()>;
    /// The function libraries' code, written before the keys.
    fn functions(&self) -> &[Vec<u8>] {
        &[]
    }
}

/// Options of a file save.
#[derive(Clone, Copy, Debug)]
pub struct SaveOptions {
    /// `rdbcompression`.
    pub compress: bool,
    /// `rdbchecksum`: when off the CRC64 is written as 0, as Redis does.
    pub checksum: bool,
    /// Memory in use, for the `used-mem` AUX field.
    pub used_mem: u64,
    /// The file is an AOF base (the `aof-base` AUX field is 1).
    pub aof_base: bool,
    /// The replication history the data stands for, when the server is
    /// in a replication chain (rdbPopulateSaveInfo).
    pub repl: Option<ReplInfo>,
    /// `rdb-key-save-delay`: microseconds to wait after each key (a test
    /// hook that keeps a save in progress long enough to observe).
    pub key_delay_us: i64,
    /// fsync the file every this many bytes written (0: only at the end):
    /// `rdb-save-incremental-fsync`, or `aof-rewrite-incremental-fsync`
    /// for an AOF base (Redis's rioSetAutoSync).
    pub fsync_every: u64,
}

/// The `repl-stream-db`, `repl-id` and `repl-offset` AUX fields: a
/// restarted replica continues from them with PSYNC, a restarted master
/// lets its replicas do so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplInfo {
    /// The database the replication stream was in.
    pub stream_db: i64,
    /// The replication ID.
    pub id: [u8; 40],
    /// The replication offset.
    pub offset: u64,
}

impl ReplInfo {
    /// The fields from a loaded file's AUX fields, when all are there and
    /// valid (Redis ignores a `repl-stream-db` of -1).
    pub fn from_aux(aux: &[(String, String)]) -> Option<ReplInfo> {
        let get = |name: &str| aux.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let stream_db: i64 = get("repl-stream-db")?.parse().ok()?;
        let id: [u8; 40] = get("repl-id")?.as_bytes().try_into().ok()?;
        let offset: i64 = get("repl-offset")?.parse().ok()?;
        (stream_db >= 0 && offset >= 0).then_some(ReplInfo {
            stream_db,
            id,
            offset: offset as u64,
        })
    }
}

/// What a save wrote.
#[derive(Clone, Copy, Debug, Default)]
pub struct SaveReport {
    /// Keys written.
    pub keys: u64,
    /// File size.
    pub bytes: u64,
}

/// Buffered bytes flushed to the file (with the checksum updated) beyond
/// this size.
const FLUSH_AT: usize = 1 << 20;

/// Writes a whole RDB file to `out`. `cancel`, when set by another thread,
/// stops the write with an error (a newer save supersedes this one).
pub fn write_rdb<W: Write>(
    out: &mut W,
    src: &dyn DbSource,
    opts: SaveOptions,
    cancel: Option<&AtomicBool>,
) -> std::io::Result<SaveReport> {
    let mut digest = CRC64.digest();
    let mut e = Enc::new(opts.compress);
    let mut report = SaveReport::default();
    e.buf.extend_from_slice(b"REDIS");
    e.buf
        .extend_from_slice(format!("{RDB_VERSION:04}").as_bytes());
    e.aux("redis-ver", crate::REDIS_VERSION.as_bytes());
    e.aux("redis-bits", b"64");
    let ctime = crate::util::clock::real_now_ms() / 1000;
    e.aux("ctime", ctime.to_string().as_bytes());
    e.aux("used-mem", opts.used_mem.to_string().as_bytes());
    if let Some(r) = &opts.repl {
        e.aux("repl-stream-db", r.stream_db.to_string().as_bytes());
        e.aux("repl-id", &r.id);
        e.aux("repl-offset", r.offset.to_string().as_bytes());
    }
    e.aux("aof-base", if opts.aof_base { b"1" } else { b"0" });
    // Function libraries come before the keys (rdbSaveFunctions).
    for code in src.functions() {
        e.buf.push(op::FUNCTION2);
        e.string(code);
    }
    let mut flush =
        |e: &mut Enc, digest: &mut crc::Digest<'_, u64, crc::Table<16>>, out: &mut W| {
            digest.update(&e.buf);
            report.bytes += e.buf.len() as u64;
            let r = out.write_all(&e.buf);
            e.buf.clear();
            r
        };
    for db in 0..src.db_count() {
        let (keys, expires) = src.db_sizes(db);
        if keys == 0 {
            continue;
        }
        e.buf.push(op::SELECTDB);
        e.len(db as u64);
        e.buf.push(op::RESIZEDB);
        e.len(keys as u64);
        e.len(expires as u64);
        let mut n = 0u64;
        src.each(db, &mut |key, value, expire_at| {
            if expire_at != 0 {
                e.buf.push(op::EXPIRETIME_MS);
                e.buf.extend_from_slice(&expire_at.to_le_bytes());
            }
            e.value_type(value);
            e.string(key);
            e.value(value);
            n += 1;
            super::super::child_info::key_saved();
            if opts.key_delay_us != 0 {
                crate::util::clock::debug_delay(opts.key_delay_us);
            }
            if e.buf.len() >= FLUSH_AT {
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return Err(std::io::Error::other("save cancelled"));
                }
                flush(&mut e, &mut digest, out)?;
            }
            Ok(())
        })?;
        report.keys += n;
    }
    e.buf.push(op::EOF);
    flush(&mut e, &mut digest, out)?;
    let crc = if opts.checksum { digest.finalize() } else { 0 };
    out.write_all(&crc.to_le_bytes())?;
    report.bytes += 8;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &[u8]) -> Vec<u8> {
        let mut e = Enc::new(true);
        e.string(s);
        e.buf
    }

    #[test]
    fn strings_encode_as_redis() {
        assert_eq!(enc(b"1"), [0xC0, 1]);
        assert_eq!(enc(b"-200"), [0xC1, 0x38, 0xff]);
        assert_eq!(enc(b"100000"), [0xC2, 0xa0, 0x86, 1, 0]);
        assert_eq!(enc(b"01"), [2, b'0', b'1']);
        assert_eq!(
            enc(b"12345678901"),
            [11, b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8', b'9', b'0', b'1']
        );
        assert_eq!(&enc(&[b'x'; 50])[..3], &[0xC3, 9, 50]);
        let mut e = Enc::new(true);
        e.len(16384);
        e.len(100);
        assert_eq!(e.buf, [0x80, 0, 0, 0x40, 0, 0x40, 100]);
    }

    #[test]
    fn dump_of_a_string_matches_redis() {
        // redis-cli DUMP of SET big <50 x> in redis-server 7.0.
        let redis = [
            0x00, 0xc3, 0x09, 0x32, 0x01, 0x78, 0x78, 0xe0, 0x25, 0x00, 0x01, 0x78, 0x78, 0x0a,
            0x00, 0xbc, 0xb8, 0x0b, 0xdd, 0xa0, 0x70, 0x6b, 0xe7,
        ];
        assert_eq!(dump_payload(&Value::string(&[b'x'; 50]), true), redis);
    }
}
