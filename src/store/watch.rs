//! WATCH bookkeeping (the keyspace half of Redis's `multi.c`): which clients
//! watch which keys, and which clients saw a watched key change
//! (`CLIENT_DIRTY_CAS`, after which their EXEC answers a null array).
//!
//! The registry lives in the [`Store`] because every write already passes
//! through [`Store::signal_modified`]; that hook looks here only when at
//! least one key is watched, so a server nobody WATCHes pays one integer
//! comparison per write.
//!
//! Redis 7.0 remembers, per watcher, whether the key was already logically
//! expired (present but past its TTL) when WATCH ran. The later deletion of
//! such a key (lazy or active expiry, a flush) is no logical change and does
//! not abort the transaction; a write to it does.

use std::collections::{HashMap, HashSet};

use super::Store;

/// One client watching one key.
#[derive(Clone, Copy, Debug)]
struct Watcher {
    client: u64,
    /// The key was logically expired when watched (Redis `wk->expired`).
    expired: bool,
}

/// A watched key: database and name.
type DbKey = (usize, Box<[u8]>);

/// Watched keys per database and per client, and the dirty clients.
#[derive(Default)]
pub struct Watches {
    /// Per database: key → clients watching it.
    by_key: Vec<HashMap<Box<[u8]>, Vec<Watcher>>>,
    /// Per client: the (db, key) pairs it watches, in WATCH order.
    by_client: HashMap<u64, Vec<DbKey>>,
    /// Clients one of whose watched keys was touched.
    dirty: HashSet<u64>,
    /// Number of (db, key) pairs with at least one watcher; the write hook
    /// does nothing while this is zero.
    keys: usize,
}

impl Watches {
    /// True when some key is watched (the write hook has work to do).
    #[inline]
    pub fn active(&self) -> bool {
        self.keys != 0
    }

    /// True when a key watched by `client` was touched since it was
    /// watched (CLIENT LIST flag `d`).
    pub fn is_dirty(&self, client: u64) -> bool {
        !self.dirty.is_empty() && self.dirty.contains(&client)
    }

    /// Number of keys `client` watches.
    pub fn watching(&self, client: u64) -> usize {
        self.by_client.get(&client).map_or(0, Vec::len)
    }

    /// Marks `client` dirty: its next EXEC fails. Its watches are dropped
    /// at once, as Redis does: they cannot matter any more, and later
    /// writes to those keys then cost nothing.
    pub fn mark_dirty(&mut self, client: u64) {
        if self.dirty.insert(client) {
            self.forget(client);
        }
    }

    /// Starts watching `key` of `db` for `client`; `expired` tells whether
    /// the key is logically expired right now. Watching a key twice is a
    /// no-op, as in Redis.
    pub fn watch(&mut self, client: u64, db: usize, key: &[u8], expired: bool) {
        if self.by_key.len() <= db {
            self.by_key.resize_with(db + 1, HashMap::new);
        }
        let map = &mut self.by_key[db];
        match map.get_mut(key) {
            Some(list) if list.iter().any(|w| w.client == client) => return,
            Some(list) => list.push(Watcher { client, expired }),
            None => {
                map.insert(key.into(), vec![Watcher { client, expired }]);
                self.keys += 1;
            }
        }
        self.by_client
            .entry(client)
            .or_default()
            .push((db, key.into()));
    }

    /// Forgets every key `client` watches and its dirty flag (UNWATCH,
    /// EXEC, DISCARD, RESET, disconnection).
    pub fn unwatch_all(&mut self, client: u64) {
        self.dirty.remove(&client);
        self.forget(client);
    }

    /// Drops the watches of `client`, keeping its dirty flag.
    fn forget(&mut self, client: u64) {
        let Some(mine) = self.by_client.remove(&client) else {
            return;
        };
        for (db, key) in mine {
            let Some(map) = self.by_key.get_mut(db) else {
                continue;
            };
            if let Some(list) = map.get_mut(&key[..]) {
                list.retain(|w| w.client != client);
                if list.is_empty() {
                    map.remove(&key[..]);
                    self.keys -= 1;
                }
            }
        }
    }

    fn watchers_mut(&mut self, db: usize, key: &[u8]) -> Option<&mut Vec<Watcher>> {
        self.by_key.get_mut(db)?.get_mut(key)
    }
}

impl Store {
    /// True when `key` is in `db` but its TTL has passed (Redis
    /// `keyIsExpired`): no lazy deletion, no stats.
    pub fn key_is_expired(&self, db: usize, key: &[u8]) -> bool {
        let d = &self.dbs[db];
        d.dict
            .get(d.dict.hash(key), key)
            .is_some_and(|e| e.is_expired(self.now_ms))
    }

    /// True when `key` is physically in `db`, expired or not.
    fn key_present(&self, db: usize, key: &[u8]) -> bool {
        let d = &self.dbs[db];
        d.dict.get(d.dict.hash(key), key).is_some()
    }

    /// Starts watching `key` for `client` in `db` (WATCH).
    pub fn watch_key(&mut self, client: u64, db: usize, key: &[u8]) {
        let expired = self.key_is_expired(db, key);
        self.watches.watch(client, db, key, expired);
    }

    /// True when a key `client` watches has expired since it was watched
    /// (Redis `isWatchedKeyExpired`, checked by EXEC): such a key is gone
    /// for readers even though nothing deleted it yet.
    pub fn watched_key_expired(&self, client: u64) -> bool {
        let Some(mine) = self.watches.by_client.get(&client) else {
            return false;
        };
        mine.iter().any(|(db, key)| {
            let expired_at_watch = self
                .watches
                .by_key
                .get(*db)
                .and_then(|m| m.get(&key[..]))
                .and_then(|l| l.iter().find(|w| w.client == client))
                .is_some_and(|w| w.expired);
            !expired_at_watch && self.key_is_expired(*db, key)
        })
    }

    /// The WATCH half of `signal_modified` (Redis `touchWatchedKey`):
    /// marks the watchers of `key` dirty. `present` says whether the key is
    /// in the database after the change (None: look it up).
    pub(super) fn touch_watched(&mut self, db: usize, key: &[u8], present: Option<bool>) {
        let Some(list) = self.watches.by_key.get(db).and_then(|m| m.get(key)) else {
            return;
        };
        let present = if list.iter().any(|w| w.expired) {
            present.unwrap_or_else(|| self.key_present(db, key))
        } else {
            true
        };
        let Some(list) = self.watches.watchers_mut(db, key) else {
            return;
        };
        let mut dirty = Vec::new();
        for w in list.iter_mut() {
            if w.expired && !present {
                // A key that was already expired when watched is now
                // deleted: logically nothing changed. From here on the
                // key counts as deleted, not expired.
                w.expired = false;
                continue;
            }
            dirty.push(w.client);
        }
        for c in dirty {
            self.watches.mark_dirty(c);
        }
    }

    /// Touches the watched keys of database `emptied` before it is flushed
    /// (`replaced_with` None) or swapped with `replaced_with` (Redis
    /// `touchAllWatchedKeysInDb`). Only keys present in either database
    /// count, so flushing a database that holds none of the watched keys
    /// aborts nothing.
    pub(super) fn touch_all_watched(&mut self, emptied: usize, replaced_with: Option<usize>) {
        let Some(mut map) = self.watches.by_key.get_mut(emptied).map(std::mem::take) else {
            return;
        };
        let mut dirty = Vec::new();
        for (key, list) in map.iter_mut() {
            let in_emptied = self.key_present(emptied, key);
            let in_replacement = replaced_with.is_some_and(|r| self.key_present(r, key));
            if !in_emptied && !in_replacement {
                continue;
            }
            let replacement_expired = replaced_with.is_some_and(|r| self.key_is_expired(r, key));
            for w in list.iter_mut() {
                if w.expired {
                    if !in_replacement {
                        // The expired key is deleted: no logical change.
                        w.expired = false;
                        continue;
                    }
                    if replacement_expired {
                        // Expired before, expired after.
                        continue;
                    }
                } else if !in_emptied && replacement_expired {
                    // A missing key replaced by an expired one.
                    w.expired = true;
                    continue;
                }
                dirty.push(w.client);
            }
        }
        self.watches.by_key[emptied] = map;
        for c in dirty {
            self.watches.mark_dirty(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::value::Value;
    use crate::store::Ttl;

    #[test]
    fn registry_empties_so_writes_skip_it() {
        let mut s = Store::new(2);
        s.watch_key(1, 0, b"k");
        s.watch_key(1, 0, b"k");
        s.watch_key(2, 0, b"k");
        s.watch_key(2, 1, b"k");
        assert!(s.watches.active());
        assert_eq!(s.watches.watching(1), 1);
        assert_eq!(s.watches.watching(2), 2);
        s.set(1, b"k", Value::Int(1), Ttl::None);
        assert!(!s.watches.is_dirty(1));
        assert!(s.watches.is_dirty(2));
        // A dirty client's watches are dropped, its flag kept.
        assert_eq!(s.watches.watching(2), 0);
        assert_eq!(s.watches.watching(1), 1);
        s.watches.unwatch_all(1);
        s.watches.unwatch_all(2);
        assert!(!s.watches.active());
        assert!(!s.watches.is_dirty(2));
        assert!(s.watches.by_key.iter().all(HashMap::is_empty));
        assert!(s.watches.by_client.is_empty());
    }

    #[test]
    fn flush_touches_only_present_keys() {
        let mut s = Store::new(1);
        s.set(0, b"here", Value::Int(1), Ttl::None);
        s.watch_key(1, 0, b"here");
        s.watch_key(2, 0, b"gone");
        drop(s.flush_db(0));
        assert!(s.watches.is_dirty(1));
        assert!(!s.watches.is_dirty(2));
    }

    #[test]
    fn key_expired_at_watch_time_is_not_touched_by_its_deletion() {
        let mut s = Store::new(1);
        s.set_now(1000);
        s.set(0, b"k", Value::Int(1), Ttl::At(500));
        s.watch_key(1, 0, b"k");
        assert!(!s.watched_key_expired(1));
        assert!(s.get(0, b"k").is_none());
        assert!(!s.watches.is_dirty(1));
        s.set(0, b"k", Value::Int(2), Ttl::None);
        assert!(s.watches.is_dirty(1));
    }

    #[test]
    fn key_expiring_after_watch_fails_exec() {
        let mut s = Store::new(1);
        s.set_now(1000);
        s.set(0, b"k", Value::Int(1), Ttl::At(2000));
        s.watch_key(1, 0, b"k");
        assert!(!s.watched_key_expired(1));
        s.set_now(3000);
        assert!(s.watched_key_expired(1));
    }
}
