//! Configuration: typed values with Redis 7.0 defaults, read from a
//! redis.conf-style file and `--directive value` arguments, and changed at
//! run time by CONFIG SET.

/// The server configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// TCP port (0 picks a free one).
    pub port: u16,
    /// Addresses to bind; a leading `-` marks an optional one.
    pub bind: Vec<String>,
    /// Password for AUTH; None disables authentication.
    pub requirepass: Option<Vec<u8>>,
    /// Number of databases.
    pub databases: usize,
    /// Background task frequency.
    pub hz: u32,
    /// Largest bulk string accepted.
    pub proto_max_bulk_len: usize,
    /// Most simultaneous clients.
    pub maxclients: usize,
    /// Log level name.
    pub loglevel: String,
    /// Log file; empty logs to standard output.
    pub logfile: String,
    /// Refuse non-loopback clients when no password is set.
    pub protected_mode: bool,
    /// Network threads.
    pub io_threads: usize,
    /// Directory of the RDB file (`dir`).
    pub dir: String,
    /// RDB file name (`dbfilename`).
    pub dbfilename: String,
    /// LZF-compress strings in RDB files (`rdbcompression`).
    pub rdbcompression: bool,
    /// Write and verify the RDB CRC64 (`rdbchecksum`).
    pub rdbchecksum: bool,
    /// `save <seconds> <changes>` rules; empty disables automatic saves.
    pub save: Vec<(u64, u64)>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 6379,
            bind: vec!["127.0.0.1".into(), "-::1".into()],
            requirepass: None,
            databases: 16,
            hz: 10,
            proto_max_bulk_len: 512 * 1024 * 1024,
            maxclients: 10000,
            loglevel: "notice".into(),
            logfile: String::new(),
            protected_mode: true,
            io_threads: 1,
            dir: ".".into(),
            dbfilename: "dump.rdb".into(),
            rdbcompression: true,
            rdbchecksum: true,
            save: vec![(3600, 1), (300, 100), (60, 10000)],
        }
    }
}
