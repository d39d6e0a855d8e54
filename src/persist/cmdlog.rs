//! The propagation stream as bytes (Redis's `catAppendOnlyGenericCommand`
//! and the SELECT bookkeeping of `feedAppendOnlyFile` and
//! `replicationFeedSlaves`): commands encoded as RESP arrays, each
//! preceded by SELECT when its database differs from the last one written.
//! The AOF and the replication stream each keep one.

pub use crate::net::request::encode;
use crate::net::request::{encode_argv, Argv, OwnedArgv};

/// Encoded commands waiting to be written, and the database they leave
/// selected.
#[derive(Default)]
pub struct CommandLog {
    /// The encoded commands.
    pub buf: Vec<u8>,
    /// The database the reader has selected (None: SELECT first).
    pub db: Option<usize>,
}

impl CommandLog {
    /// Appends what the outermost command propagated: each command in its
    /// database, several wrapped in MULTI/EXEC so they replay atomically,
    /// as Redis's propagatePendingCommands does.
    pub fn feed(&mut self, ops: &[(usize, OwnedArgv)]) {
        let Some((first_db, _)) = ops.first() else {
            return;
        };
        let wrap = ops.len() > 1;
        if wrap {
            self.select(*first_db);
            encode(&mut self.buf, &[b"MULTI"]);
        }
        for (db, argv) in ops {
            self.feed_command(*db, argv.argv());
        }
        if wrap {
            encode(&mut self.buf, &[b"EXEC"]);
        }
    }

    /// Appends one command in database `db`.
    pub fn feed_command(&mut self, db: usize, argv: Argv<'_>) {
        self.select(db);
        encode_argv(&mut self.buf, argv);
    }

    /// Appends one command given as its arguments in database `db`.
    pub fn feed_args(&mut self, db: usize, args: &[&[u8]]) {
        self.select(db);
        encode(&mut self.buf, args);
    }

    /// Appends a DEL of `key` (an expired or evicted key), or an UNLINK
    /// when it was freed `lazy` (Redis's propagateDeletion).
    pub fn feed_del(&mut self, db: usize, key: &[u8], lazy: bool) {
        self.select(db);
        encode(
            &mut self.buf,
            &[crate::store::lazyfree::deletion_verb(lazy), key],
        );
    }

    fn select(&mut self, db: usize) {
        if self.db != Some(db) {
            let n = db.to_string();
            encode(&mut self.buf, &[b"SELECT", n.as_bytes()]);
            self.db = Some(db);
        }
    }
}
