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
            if let Some(c) = super::super::lzf::compress(s, s.len() - 4) {
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

    /// The type byte of a value (`rdbSaveObjectType`).
    pub fn value_type(&mut self, v: &Value) {
        self.buf.push(match v {
            Value::List(_) => ty::LIST_QUICKLIST_2,
            // Hashes, sets and sorted sets use the plain encodings, which
            // Redis 7.0 loads and converts to its compact forms itself.
            Value::Hash(_) => ty::HASH,
            Value::Set(_) => ty::SET,
            Value::ZSet(_) => ty::ZSET_2,
            Value::Stream(_) => ty::STREAM_LISTPACKS_2,
            Value::Int(_) | Value::Str(_) | Value::Raw(_) => ty::STRING,
        });
    }

    /// A value's body (`rdbSaveObject`).
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Int(n) => self.int_string(*n),
            Value::Str(s) => self.string(s.as_slice()),
            Value::Raw(s) => self.string(s),
            Value::List(l) => {
                // Node count first: build the nodes, then write them.
                let mut nodes: Vec<(u64, Vec<u8>)> = Vec::new();
                let _ = listpack::build_nodes(l.iter(), |c, b| {
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
            Value::Hash(h) => {
                self.len(h.len() as u64);
                for (field, value) in h.iter() {
                    self.string(field);
                    self.string(value);
                }
            }
            Value::Set(set) => {
                self.len(set.len() as u64);
                for m in set.iter() {
                    m.with(|b| self.string(b));
                }
            }
            Value::ZSet(z) => {
                self.len(z.len() as u64);
                for (member, score) in z.iter_from(0) {
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
    let ctime = crate::exec::clock::now_ms() / 1000;
    e.aux("ctime", ctime.to_string().as_bytes());
    e.aux("used-mem", opts.used_mem.to_string().as_bytes());
    e.aux("aof-base", b"0");
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
