//! Client memory and client eviction under `maxmemory-clients` (Redis's
//! getClientMemoryUsage, updateClientMemUsageAndBucket and evictClients in
//! networking.c and server.c).
//!
//! A connection's buffers report themselves as they change
//! ([`ConnBuffers`](crate::net::link::ConnBuffers)), and the sum over every
//! client is kept current there, so checking the limit is one load. What
//! the executor holds for a client (its state, MULTI queue, watched keys,
//! subscriptions) is added to its figure after each of its commands, only
//! while client eviction is on. Over the limit, the largest evictable
//! clients are closed until the sum is below it, as Redis walks its memory
//! buckets from the top; clients with CLIENT NO-EVICT are counted but never
//! closed.

use std::mem::size_of;

use super::client::{info_line, Client};
use super::ServerState;
use crate::config::Config;
use crate::net::link::ToConn;
use crate::store::Store;
use crate::util::clock;

/// What every client costs before its buffers: the executor's client state
/// and the connection's.
pub const CLIENT_FIXED: usize = size_of::<Client>() + size_of::<crate::net::conn::Conn>();

/// One watched key's bookkeeping (Redis counts a list node and a
/// watchedKey per key).
const WATCHED_KEY: usize = 48;

/// One subscription's bookkeeping (Redis counts a dict entry per channel
/// or pattern).
const SUBSCRIPTION: usize = 32;

/// One BCAST prefix's bookkeeping besides its bytes (the set's entry;
/// Redis counts its radix tree's nodes).
const TRACKING_PREFIX: usize = 48;

/// The smallest limit Redis applies, so a bad setting still lets clients
/// talk to the server.
const MIN_LIMIT: u64 = 128 * 1024;

/// Redis's getClientEvictionLimit: `maxmemory-clients` in bytes, or as a
/// percentage of maxmemory; 0 when client eviction is off.
pub fn eviction_limit(config: &Config) -> usize {
    let text = config.get("maxmemory-clients");
    let limit = match text.strip_suffix('%') {
        Some(pct) => {
            let pct: u64 = pct.parse().unwrap_or(0);
            if config.maxmemory == 0 {
                return 0;
            }
            (config.maxmemory as f64 * pct as f64 / 100.0) as u64
        }
        None => text.parse().unwrap_or(0),
    };
    if limit == 0 && !text.ends_with('%') {
        return 0;
    }
    limit.max(MIN_LIMIT).try_into().unwrap_or(usize::MAX)
}

/// Whether client eviction may close `c` (Redis's clientEvictionAllowed):
/// normal and pub/sub clients without CLIENT NO-EVICT; never a replica
/// nor the master link.
pub fn evictable(c: &Client) -> bool {
    use super::client::ClientKind;
    !c.no_evict && !matches!(c.kind, ClientKind::Master | ClientKind::Replica)
}

/// What the executor holds for `c` besides the connection's buffers
/// (getClientMemoryUsage's argv, MULTI, pub/sub and tracking prefix
/// parts).
pub fn held(c: &Client, server: &ServerState, store: &Store) -> usize {
    let (channels, patterns, shard) = server.pubsub.counts(c.id);
    CLIENT_FIXED
        + c.multi.as_ref().map_or(0, |m| m.mem())
        + store.watches.watching(c.id) * WATCHED_KEY
        + (channels + patterns + shard) * SUBSCRIPTION
        + server.tracking.prefix_bytes(c.id, TRACKING_PREFIX)
}

impl ServerState {
    /// Counts what the executor holds for `c` in its memory figure, after
    /// a command that may have changed it: its state and `replies`, the
    /// bytes of replies its batch built so far (the connection counts them
    /// once they are handed back). Only while client eviction is on
    /// (otherwise CLIENT LIST computes it when asked).
    #[inline]
    pub fn update_client_mem(&self, c: &Client, store: &Store, replies: usize) {
        if self.client_evict_limit != 0 {
            c.bufs.held.set(held(c, self, store) + replies);
            c.bufs.recount();
        }
    }

    /// Whether the clients together use more memory than
    /// `maxmemory-clients` allows (one load when it is off).
    #[inline]
    pub fn clients_over_limit(&self) -> bool {
        self.client_evict_limit != 0 && self.clients_mem.get() >= self.client_evict_limit
    }

    /// Redis's evictClients: closes the largest evictable clients until
    /// the sum is below `maxmemory-clients`. `current` is the client whose
    /// command is about to run (out of the client table meanwhile); returns
    /// true when it was closed, and then its command does not run.
    pub fn evict_clients(&mut self, store: &Store, current: Option<&Client>) -> bool {
        let limit = self.client_evict_limit;
        let mut order: Vec<(usize, u64)> = self
            .clients
            .values()
            .chain(current)
            .filter(|c| evictable(c) && !c.bufs.killed.get())
            .map(|c| (c.bufs.memory(), c.id))
            .collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut evicted_current = false;
        let mut evicted_others = false;
        for (_, id) in order {
            if self.clients_mem.get() < limit {
                break;
            }
            let is_current = current.is_some_and(|cur| cur.id == id);
            let Some(c) = self.clients.get(&id).or(current.filter(|_| is_current)) else {
                continue;
            };
            let mut info = String::new();
            info_line(&mut info, c, self, store, clock::real_now_ms(), None);
            tracing::info!("Evicting client: {info}");
            c.bufs.kill();
            self.stats.evicted_clients += 1;
            if is_current {
                // Out of the table while its command is at hand; the
                // caller closes it after its reply.
                let _ = c.tx.send(ToConn::Close);
                evicted_current = true;
            } else {
                // Redis frees it at once: the next command (a CLIENT LIST
                // in the same pipeline) no longer sees it.
                self.kill_client(id);
                evicted_others = true;
            }
        }
        if evicted_others {
            self.free_closed_connections();
        }
        if self.clients_mem.get() >= limit {
            tracing::warn!("Over client maxmemory after evicting all evictable clients");
        }
        evicted_current
    }

    /// Drops the connections closed so far, their buffers with them, now
    /// rather than after the running command, as Redis's freeClient does:
    /// memory a client eviction gave back must be free before the
    /// command's key eviction reads `used_memory`. Left to the event loop
    /// while the network is in use further up (a script serving clients
    /// meanwhile).
    fn free_closed_connections(&self) {
        if let Some(mut net) = self.net.as_ref().and_then(|n| n.try_borrow_mut().ok()) {
            net.deliver();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_in_bytes_or_percent_of_maxmemory() {
        let mut c = Config::default();
        let set = |c: &mut Config, v: &str| {
            let (p, _) = crate::config::params::lookup(b"maxmemory-clients").expect("param");
            c.set_value(p, v.as_bytes()).expect("set");
        };
        assert_eq!(eviction_limit(&c), 0);
        set(&mut c, "1mb");
        assert_eq!(eviction_limit(&c), 1024 * 1024);
        set(&mut c, "1000");
        assert_eq!(eviction_limit(&c), 128 * 1024);
        set(&mut c, "10%");
        assert_eq!(eviction_limit(&c), 0);
        c.maxmemory = 100 * 1024 * 1024;
        assert_eq!(eviction_limit(&c), 10 * 1024 * 1024);
    }
}
