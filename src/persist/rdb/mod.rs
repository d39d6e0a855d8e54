//! Redis's RDB format, version 10 (what Redis 7.0 writes), following
//! `rdb.h`/`rdb.c` of the 7.0 branch: the opcodes and value types, the
//! length and string encodings, and the CRC64 that closes the file.
//!
//! - `save.rs` writes files and DUMP payloads,
//! - `load.rs` reads them back (strings, every list encoding Redis ever
//!   wrote, expiry, AUX, SELECTDB/RESIZEDB),
//! - `compact.rs` reads the compact encodings of small hashes, sets and
//!   sorted sets (intset, zipmap, ziplist and listpack pairs),
//! - `listpack.rs` encodes and decodes the listpack and ziplist blobs lists
//!   are stored in.

pub mod compact;
pub mod listpack;
pub mod load;
pub mod save;
pub mod stream;

/// The RDB version written (Redis 7.0).
pub const RDB_VERSION: u16 = 10;

/// Value types (the byte before a key).
pub mod ty {
    /// A string.
    pub const STRING: u8 = 0;
    /// A list as a plain sequence of strings (before 3.2).
    pub const LIST: u8 = 1;
    /// A set as a plain sequence of members (Redis 7.0 still loads it).
    pub const SET: u8 = 2;
    /// A sorted set as members with text scores (before 3.2).
    pub const ZSET: u8 = 3;
    /// A hash as field/value strings (Redis 7.0 still loads it).
    pub const HASH: u8 = 4;
    /// A sorted set as members with binary double scores.
    pub const ZSET_2: u8 = 5;
    /// A small hash as a zipmap (Redis 2.x).
    pub const HASH_ZIPMAP: u8 = 9;
    /// A list in one ziplist (before 3.2).
    pub const LIST_ZIPLIST: u8 = 10;
    /// A set of integers as an intset.
    pub const SET_INTSET: u8 = 11;
    /// A small sorted set as a ziplist (before 7.0).
    pub const ZSET_ZIPLIST: u8 = 12;
    /// A small hash as a ziplist (before 7.0).
    pub const HASH_ZIPLIST: u8 = 13;
    /// A quicklist of ziplists (3.2 to 6.2).
    pub const LIST_QUICKLIST: u8 = 14;
    /// A small hash as a listpack (7.0).
    pub const HASH_LISTPACK: u8 = 16;
    /// A small sorted set as a listpack (7.0).
    pub const ZSET_LISTPACK: u8 = 17;
    /// A quicklist of listpack or plain nodes (7.0).
    pub const LIST_QUICKLIST_2: u8 = 18;
    /// A stream as listpack nodes (5.0 to 6.2).
    pub const STREAM_LISTPACKS: u8 = 15;
    /// A stream as listpack nodes with 7.0's extra metadata.
    pub const STREAM_LISTPACKS_2: u8 = 19;
}

/// Opcodes that are not value types.
pub mod op {
    /// A function library (7.0 GA).
    pub const FUNCTION2: u8 = 245;
    /// A function library (7.0 release candidates).
    pub const FUNCTION_PRE_GA: u8 = 246;
    /// Module auxiliary data.
    pub const MODULE_AUX: u8 = 247;
    /// LRU idle time of the next key.
    pub const IDLE: u8 = 248;
    /// LFU frequency of the next key.
    pub const FREQ: u8 = 249;
    /// An auxiliary field (name, value).
    pub const AUX: u8 = 250;
    /// Hash table size hints for the current database.
    pub const RESIZEDB: u8 = 251;
    /// Expiry of the next key in milliseconds.
    pub const EXPIRETIME_MS: u8 = 252;
    /// Expiry of the next key in seconds (old files).
    pub const EXPIRETIME: u8 = 253;
    /// Selects the database the next keys belong to.
    pub const SELECTDB: u8 = 254;
    /// End of the file; the CRC64 follows.
    pub const EOF: u8 = 255;
}

/// Quicklist node containers in `LIST_QUICKLIST_2`.
pub mod container {
    /// One element stored as is.
    pub const PLAIN: u64 = 1;
    /// A listpack of elements.
    pub const PACKED: u64 = 2;
}

/// Special string encodings (length byte `11xxxxxx`).
pub mod enc {
    /// 8-bit integer.
    pub const INT8: u8 = 0;
    /// 16-bit integer.
    pub const INT16: u8 = 1;
    /// 32-bit integer.
    pub const INT32: u8 = 2;
    /// LZF-compressed string.
    pub const LZF: u8 = 3;
}

/// The CRC64 Redis uses (Jones polynomial, reflected).
pub static CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// The name of a value type, for error messages.
pub fn type_name(t: u8) -> &'static str {
    match t {
        0 => "string",
        1 | 10 | 14 | 18 => "list",
        2 | 11 | 20 => "set",
        3 | 5 | 12 | 17 => "zset",
        4 | 9 | 13 | 16 => "hash",
        6 | 7 => "module",
        15 | 19 => "stream",
        _ => "unknown",
    }
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    #[test]
    fn crc64_matches_redis() {
        // crc64.c's self test: crc64(0, "123456789") == 0xe9c6d914c4b8d9ca.
        assert_eq!(super::CRC64.checksum(b"123456789"), 0xe9c6d914c4b8d9ca);
    }
}
