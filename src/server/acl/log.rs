//! The ACL log (Redis's ACLLog and addACLLogEntry): denied commands and
//! failed authentications, newest first, similar events within a minute
//! merged into one entry with a count.

use std::collections::VecDeque;

/// What was denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A command or subcommand.
    Command,
    /// A key.
    Key,
    /// A channel.
    Channel,
    /// AUTH or HELLO with a wrong password.
    Auth,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where it was denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// A client's own command.
    Toplevel,
    /// Inside MULTI/EXEC.
    Multi,
    /// A script's `redis.call`.
    Lua,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Times it happened.
    pub count: u64,
    /// What was denied.
    pub reason: Reason,
    /// Where.
    pub context: Context,
    /// The command's full name, the key, the channel, or AUTH's argv[0].
    pub object: Vec<u8>,
    /// The user.
    pub username: Vec<u8>,
    /// Unix ms of the last occurrence.
    pub time_ms: u64,
    /// CLIENT INFO of the client, at the last occurrence.
    pub client_info: String,
}

/// Merging window for similar entries (ACL_LOG_GROUPING_MAX_TIME_DELTA).
const GROUPING_MS: u64 = 60_000;

/// The log, newest first.
#[derive(Default)]
pub struct AclLog {
    /// Entries, newest first.
    pub entries: VecDeque<Entry>,
}

impl AclLog {
    /// Adds an event, merging it into one of the ten newest entries when
    /// only the client differs, and trims to `max_len`.
    pub fn add(&mut self, e: Entry, max_len: usize) {
        let similar = |old: &Entry| {
            old.reason == e.reason
                && old.context == e.context
                && old.time_ms.abs_diff(e.time_ms) <= GROUPING_MS
                && old.object == e.object
                && old.username == e.username
        };
        if let Some(i) = self.entries.iter().take(10).position(similar) {
            if let Some(mut old) = self.entries.remove(i) {
                old.count += 1;
                old.time_ms = e.time_ms;
                old.client_info = e.client_info;
                self.entries.push_front(old);
            }
            return;
        }
        self.entries.push_front(e);
        self.entries.truncate(max_len);
    }

    /// Writes ACL LOG's reply for the newest `count` entries.
    pub fn write(&self, r: &mut crate::net::reply::ReplyBuf<'_>, count: usize, now_ms: u64) {
        let n = count.min(self.entries.len());
        r.array(n);
        for e in self.entries.iter().take(n) {
            r.map(7);
            r.bulk(b"count");
            r.int(e.count as i64);
            r.bulk(b"reason");
            r.bulk(e.reason.name().as_bytes());
            r.bulk(b"context");
            r.bulk(e.context.name().as_bytes());
            r.bulk(b"object");
            r.bulk(&e.object);
            r.bulk(b"username");
            r.bulk(&e.username);
            r.bulk(b"age-seconds");
            r.double(now_ms.saturating_sub(e.time_ms) as f64 / 1000.0);
            r.bulk(b"client-info");
            r.bulk(e.client_info.as_bytes());
        }
    }
}
