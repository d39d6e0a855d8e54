//! The slow log (Redis's `slowlog.c`): commands that ran for
//! `slowlog-log-slower-than` microseconds or more, newest first, at most
//! `slowlog-max-len` of them. An entry keeps at most 32 arguments (the
//! last one then says how many more there were) of at most 128 bytes each,
//! secrets redacted as MONITOR redacts them.

use std::collections::VecDeque;

use super::client::Client;
use crate::net::request::Argv;

/// Most arguments an entry keeps (SLOWLOG_ENTRY_MAX_ARGC).
const MAX_ARGC: usize = 32;
/// Most bytes an argument keeps (SLOWLOG_ENTRY_MAX_STRING).
const MAX_STRING: usize = 128;

/// One logged command.
pub struct Entry {
    /// Its unique, increasing id.
    pub id: u64,
    /// Unix time in seconds when it was logged.
    pub time: u64,
    /// How long it ran, in microseconds.
    pub duration: u64,
    /// Its arguments, trimmed.
    pub argv: Vec<Vec<u8>>,
    /// The client's address (`ip:port`).
    pub peer: String,
    /// The client's name.
    pub name: Vec<u8>,
}

/// The slow log.
#[derive(Default)]
pub struct SlowLog {
    /// Newest first.
    pub entries: VecDeque<Entry>,
    /// The id the next entry gets (kept across SLOWLOG RESET).
    next_id: u64,
}

impl SlowLog {
    /// Logs `argv` run by `client` for `duration` µs of command `name`
    /// (slowlogPushEntryIfNeeded), keeping at most `max_len` entries.
    pub fn push(
        &mut self,
        client: &Client,
        name: &str,
        argv: Argv<'_>,
        duration: u64,
        max_len: usize,
    ) {
        let argc = argv.len().min(MAX_ARGC);
        let mut args = Vec::with_capacity(argc);
        for i in 0..argc {
            if argc != argv.len() && i == argc - 1 {
                args.push(format!("... ({} more arguments)", argv.len() - argc + 1).into_bytes());
            } else if super::monitor::is_redacted(name, argv, i) {
                args.push(b"(redacted)".to_vec());
            } else {
                let a = argv.get(i);
                if a.len() > MAX_STRING {
                    let mut s = a[..MAX_STRING].to_vec();
                    s.extend_from_slice(
                        format!("... ({} more bytes)", a.len() - MAX_STRING).as_bytes(),
                    );
                    args.push(s);
                } else {
                    args.push(a.to_vec());
                }
            }
        }
        let peer = if client.script {
            // Redis's scripts' client has no connection: getClientPeerId
            // gives "?:0".
            "?:0".to_string()
        } else {
            client.addr.to_string()
        };
        self.entries.push_front(Entry {
            id: self.next_id,
            time: crate::util::clock::real_now_ms() / 1000,
            duration,
            argv: args,
            peer,
            name: client.name.clone(),
        });
        self.next_id += 1;
        self.entries.truncate(max_len);
    }

    /// Empties the log (SLOWLOG RESET); ids go on from where they were.
    pub fn reset(&mut self) {
        self.entries.clear();
    }
}
