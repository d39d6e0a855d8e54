//! The keyspace: 16 (by default) databases of keys, lazily expired on access
//! and swept by the active expiry cycle (`expire.rs`). Only the executor
//! thread owns a `Store`, so nothing here locks.
//!
//! Every write goes through [`Store::signal_modified`], the one place that
//! WATCH invalidation, blocked-client wake-ups and the dirty counter hang
//! off (Redis's `signalModifiedKey`).

pub mod bytes;
pub mod dict;
pub mod entry;
pub mod evict;
pub mod expire;
pub mod hash;
pub mod hashed;
pub mod hll;
pub mod intset;
pub mod keylog;
pub mod lazyfree;
pub mod list;
pub mod listpack;
pub mod packed;
pub mod set;
pub mod slots;
pub mod stream;
pub mod tuning;
pub mod value;
pub mod watch;
pub mod zset;
pub mod zset_tree;

pub use self::dict::Incoming;
use self::dict::{Dict, Entry, EntryBox, EntryMut};
use self::value::Value;
use self::watch::Watches;

/// One numbered database.
#[derive(Default)]
pub struct Db {
    /// Keys, values and expiry times.
    pub dict: Dict,
    /// Keys that carry a TTL (INFO keyspace `expires`).
    volatile: usize,
    /// Where the active expiry cycle resumes its walk.
    expire_cursor: u64,
    /// Running estimate of the remaining TTL of keys that have one, in
    /// milliseconds, kept by the active expiry cycle (INFO `avg_ttl`).
    avg_ttl: u64,
}

impl Db {
    /// Number of keys, expired-but-not-yet-reclaimed ones included.
    pub fn len(&self) -> usize {
        self.dict.len()
    }

    /// True when the database holds no key.
    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    /// Keys with a TTL.
    pub fn volatile(&self) -> usize {
        self.volatile
    }

    /// Estimated mean remaining TTL in milliseconds; 0 when unknown or
    /// when no key has a TTL.
    pub fn avg_ttl(&self) -> u64 {
        self.avg_ttl
    }
}

/// Keyspace counters reported by INFO stats.
#[derive(Default, Clone, Debug)]
pub struct KeyStats {
    /// Keys removed because their TTL passed.
    pub expired_keys: u64,
    /// Successful reads of existing keys.
    pub keyspace_hits: u64,
    /// Reads of missing keys.
    pub keyspace_misses: u64,
    /// Writes since the last save (rdb_changes_since_last_save).
    pub dirty: u64,
    /// The running command's own count of its changes (Redis's
    /// `server.dirty += n`: elements pushed, fields set, members added),
    /// which replaces the one change per key write signalled; the command
    /// path applies it when the handler returns.
    pub counted: Option<u64>,
    /// Time spent in active expiry, in microseconds.
    pub expire_cycle_cpu_us: u64,
    /// Keys removed to keep memory under maxmemory.
    pub evicted_keys: u64,
}

/// All databases plus the per-command clock.
pub struct Store {
    /// The databases, indexed by SELECT number.
    pub dbs: Vec<Db>,
    /// The function libraries' source code (FUNCTION LOAD), saved ahead
    /// of the keys as Redis's RDB_OPCODE_FUNCTION2 and filled by a load;
    /// the scripting engine keeps it current after each FUNCTION command.
    pub functions: Vec<Vec<u8>>,
    /// Counters for INFO.
    pub stats: KeyStats,
    /// The command's time in Unix milliseconds; set before each command so
    /// a command sees one consistent "now", as in Redis.
    now_ms: u64,
    /// Keys written since the executor last drained them (WATCH and blocked
    /// clients look here); only recorded while `track_writes` is on.
    pub touched: Vec<(usize, Vec<u8>)>,
    /// Keyspace events the store raises itself, in the order they happen:
    /// `keymiss` (Redis's lookupKey), `new` (dbAdd) and `expired`
    /// (expireIfNeeded and the expire cycle). Only the classes in
    /// `key_event_classes` are recorded; the executor publishes them ahead
    /// of the next event and after each command.
    pub key_events: Vec<KeyEvent>,
    /// Which classes of [`Store::key_events`] are recorded (the executor
    /// follows notify-keyspace-events).
    pub key_event_classes: KeyEventClasses,
    /// Whether anything (WATCH, a blocked client) needs [`Store::touched`].
    pub track_writes: bool,
    /// Set while clients are blocked on keys: they need
    /// [`Store::touched`] too (kept apart from `track_writes` so each user
    /// turns only its own need on and off).
    pub track_blocked: bool,
    /// Databases flushed or swapped since the last drain.
    pub touched_dbs: Vec<usize>,
    /// When set (the AOF is on), expired keys are recorded in
    /// `expired_log` so they can be written to the AOF as DEL, as Redis
    /// propagates expirations.
    pub log_expired: bool,
    /// Keys expired since the AOF last took them: (db, key).
    pub expired_log: Vec<(usize, Vec<u8>)>,
    /// Keys a writable replica's own clients gave a TTL, with a bit per
    /// database (Redis's slaveKeysWithExpire): the replica expires them
    /// itself, as its master knows nothing of them.
    pub replica_volatile: std::collections::HashMap<Vec<u8>, u64>,
    /// WATCHed keys and the clients whose watched keys changed.
    pub watches: Watches,
    /// Keys written since the executor last took them, for client-side
    /// caching (a flush as None); recorded only while some client tracks.
    pub invalidated: Option<keylog::KeyLog>,
    /// LFU parameters while an LFU policy is in force: access stamps are
    /// then frequency counters (see `evict.rs`).
    lfu: Option<evict::Lfu>,
    /// What lookups do with expired keys; set for each command.
    pub expiry: Expiry,
    /// State of the generator eviction sampling and LFU use.
    rng: u64,
    /// The database the random policies evict from next.
    next_evict_db: usize,
}

/// What a lookup does with a key whose TTL has passed (Redis's
/// expireIfNeeded on masters and replicas).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Expiry {
    /// A master's: the key is deleted, and the deletion propagated.
    #[default]
    Delete,
    /// A replica's, for its clients: reads find nothing, nothing is
    /// deleted (the master's DEL will come); a write deletes it first, as
    /// on a writable replica.
    Hide,
    /// A replica's, for its master's commands: the key is still there
    /// until the master says otherwise.
    Keep,
}

/// Expiry to apply when writing a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// No TTL.
    None,
    /// Keep the TTL the key had (SET KEEPTTL, SETRANGE, APPEND, INCR...).
    Keep,
    /// Expire at this Unix time in milliseconds.
    At(u64),
}

/// A keyspace event the store raised (see [`Store::key_events`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    /// Its notify-keyspace-events class: `m`, `n` or `x`.
    pub class: u8,
    /// The database of its key.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
}

impl KeyEvent {
    fn new(class: u8, db: usize, key: &[u8]) -> Self {
        KeyEvent {
            class,
            db,
            key: key.to_vec(),
        }
    }

    /// The event's name, as Redis publishes it.
    pub fn name(&self) -> &'static str {
        match self.class {
            b'm' => "keymiss",
            b'n' => "new",
            _ => "expired",
        }
    }
}

/// The classes of [`KeyEvent`] the store records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyEventClasses {
    /// `keymiss` (class `m`).
    pub miss: bool,
    /// `new` (class `n`).
    pub new: bool,
    /// `expired` (class `x`).
    pub expired: bool,
}

impl Store {
    /// A store with `databases` empty databases.
    pub fn new(databases: usize) -> Self {
        Store {
            functions: Vec::new(),
            key_events: Vec::new(),
            key_event_classes: KeyEventClasses::default(),
            dbs: (0..databases).map(|_| Db::default()).collect(),
            stats: KeyStats::default(),
            now_ms: 0,
            touched: Vec::new(),
            track_writes: false,
            track_blocked: false,
            touched_dbs: Vec::new(),
            log_expired: false,
            expired_log: Vec::new(),
            replica_volatile: std::collections::HashMap::new(),
            watches: Watches::default(),
            invalidated: None,
            lfu: None,
            expiry: Expiry::Delete,
            rng: 0x9e37_79b9_7f4a_7c15,
            next_evict_db: 0,
        }
    }

    /// Sets the clock for the next command.
    #[inline]
    pub fn set_now(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
    }

    /// The current command's time in Unix milliseconds.
    #[inline]
    pub fn now(&self) -> u64 {
        self.now_ms
    }

    /// The time a record keeps (a stream delivery, a consumer's last
    /// sighting): the command's time, or the clock's while an AOF loads
    /// and the command time stands at 0, as Redis stamps them with
    /// mstime() whatever it is doing.
    #[inline]
    pub fn record_time(&self) -> u64 {
        if self.now_ms == 0 {
            crate::util::clock::now_ms()
        } else {
            self.now_ms
        }
    }

    /// The hash of `key` for a lookup, or None when the key is known to be
    /// missing or has expired; an expired key is removed first (Redis's
    /// expireIfNeeded), except as [`Store::expiry`] says: a replica's
    /// reads (`read`) only hide it, its master's commands still see it.
    #[inline]
    fn live_hash(&mut self, db: usize, key: &[u8], read: bool) -> Option<u64> {
        let h = self.dbs[db].dict.hash(key);
        self.live_at(db, h, key, read).then_some(h)
    }

    /// [`Store::live_hash`] for a key whose hash is known: false when the
    /// key is missing or has expired (and was removed, as that says).
    #[inline]
    fn live_at(&mut self, db: usize, h: u64, key: &[u8], read: bool) -> bool {
        let now = self.now_ms;
        let d = &self.dbs[db];
        // With no TTL in the database nothing can have expired: the
        // caller's own lookup finds the key or not.
        if d.volatile == 0 {
            return true;
        }
        let Some(e) = d.dict.get(h, key) else {
            return false;
        };
        if e.is_expired(now) {
            match self.expiry {
                Expiry::Keep => return true,
                Expiry::Hide if read => return false,
                _ => self.expire_now(db, h, key),
            }
            return false;
        }
        true
    }

    /// Deletes `key` when its TTL has passed and this server deletes
    /// expired keys (a replica leaves that to its master); true when it
    /// was expired (SCAN and RANDOMKEY skip it either way).
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8]) -> bool {
        let d = &self.dbs[db];
        let h = d.dict.hash(key);
        let expired = d.dict.get(h, key).is_none_or(|e| e.is_expired(self.now_ms));
        if expired && self.expiry == Expiry::Delete {
            self.expire_now(db, h, key);
        }
        expired
    }

    /// Bytes of bookkeeping the keyspace holds beyond the keys' and
    /// values' own data: the bucket arrays and each entry's header (what
    /// Redis reports as its dictionaries' overhead in
    /// `used_memory_overhead`).
    pub fn overhead_bytes(&self) -> u64 {
        (0..self.dbs.len())
            .map(|db| self.db_overhead_bytes(db))
            .sum()
    }

    /// [`Store::overhead_bytes`] of database `db`.
    pub fn db_overhead_bytes(&self, db: usize) -> u64 {
        // An entry's header, its link, stamp and key length.
        const PER_ENTRY: usize = 16;
        let per_bucket = std::mem::size_of::<*mut u8>();
        let d = &self.dbs[db].dict;
        (d.allocated_buckets() * per_bucket + d.len() * PER_ENTRY) as u64
    }

    /// Moves entries of a resizing keyspace table to its new array for
    /// about `budget` (Redis's incrementallyRehash from databasesCron):
    /// the first database that is rehashing, one per call.
    pub fn rehash(&mut self, budget: std::time::Duration) {
        if let Some(d) = self.dbs.iter_mut().find(|d| d.dict.is_rehashing()) {
            d.dict.rehash_for(budget);
        }
    }

    /// The bytes `key` takes, expired or not (MEMORY USAGE): its entry, its
    /// name's and its value's heap allocations, and its bucket's share.
    pub fn key_footprint(&self, db: usize, key: &[u8]) -> Option<u64> {
        let d = &self.dbs[db].dict;
        let e = d.get(d.hash(key), key)?;
        let bucket = std::mem::size_of::<*mut u8>();
        Some((bucket + e.footprint() + e.value_heap_size()) as u64)
    }

    /// Cache hint for the keys a pipelined batch is about to use.
    pub fn prefetch<'a>(&self, db: usize, keys: impl Iterator<Item = &'a [u8]>) {
        if let Some(d) = self.dbs.get(db) {
            d.dict.prefetch(keys);
        }
    }

    /// The live entry for `key`, expiring it first if its TTL has passed.
    /// Does not count as a keyspace hit or miss (writes use this).
    pub fn get(&mut self, db: usize, key: &[u8]) -> Option<EntryMut<'_>> {
        let h = self.live_hash(db, key, false)?;
        self.dbs[db].dict.get_mut(h, key)
    }

    /// Like [`Store::get`], for reads: counts hits and misses and stamps the
    /// access time.
    pub fn get_read(&mut self, db: usize, key: &[u8]) -> Option<EntryMut<'_>> {
        if self.lfu.is_none() {
            let lru = (self.now_ms / 1000) as u32;
            let mut e = self.get_read_notouch(db, key)?;
            e.set_lru(lru);
            return Some(e);
        }
        // LFU: the counter update needs the store's generator, so the
        // entry is looked up again once the new stamp is known.
        let old = self.get_read_notouch(db, key)?.lru();
        let stamp = self.accessed_stamp(old);
        let d = &mut self.dbs[db].dict;
        let mut e = d.get_mut(d.hash(key), key)?;
        e.set_lru(stamp);
        Some(e)
    }

    /// Like [`Store::get_read`] but leaves the access time alone (Redis's
    /// `LOOKUP_NOTOUCH`: TYPE, TTL, EXISTS...).
    pub fn get_read_notouch(&mut self, db: usize, key: &[u8]) -> Option<EntryMut<'_>> {
        self.lookup_counted(db, key, true)
    }

    /// Like [`Store::get_read_notouch`] but a miss raises no `keymiss`
    /// event (Redis's objectCommandLookup: OBJECT, DEBUG).
    pub fn get_object(&mut self, db: usize, key: &[u8]) -> Option<EntryMut<'_>> {
        self.lookup_counted(db, key, false)
    }

    /// A read lookup counted as a keyspace hit or miss; a miss is a
    /// `keymiss` event when `notify` and that class is on.
    fn lookup_counted(&mut self, db: usize, key: &[u8], notify: bool) -> Option<EntryMut<'_>> {
        let found = match self.live_hash(db, key, true) {
            Some(h) => self.dbs[db].dict.get_mut(h, key),
            None => None,
        };
        match found {
            Some(_) => self.stats.keyspace_hits += 1,
            None => {
                self.stats.keyspace_misses += 1;
                if notify && self.key_event_classes.miss {
                    self.key_events.push(KeyEvent::new(b'm', db, key));
                }
            }
        }
        found
    }

    /// The entry for `key` without expiring it or touching its stats
    /// (used by commands such as OBJECT that must not change state).
    pub fn peek(&self, db: usize, key: &[u8]) -> Option<&Entry> {
        let d = &self.dbs[db];
        d.dict
            .get(d.dict.hash(key), key)
            .filter(|e| self.expiry == Expiry::Keep || !e.is_expired(self.now_ms))
    }

    /// True when `key` exists (and is not expired).
    pub fn exists(&mut self, db: usize, key: &[u8]) -> bool {
        match self.live_hash(db, key, false) {
            Some(h) => self.dbs[db].dict.contains(h, key),
            None => false,
        }
    }

    /// Deletes `key` if its TTL has passed (counted in `expired_keys`), as
    /// Redis's lookupKeyWrite does before a write replaces it.
    pub fn reap_expired(&mut self, db: usize, key: &[u8]) {
        // Nothing can have expired in a database without TTLs.
        if self.dbs[db].volatile != 0 {
            self.live_hash(db, key, false);
        }
    }

    fn expire_now(&mut self, db: usize, hash: u64, key: &[u8]) {
        if let Some(e) = self.dbs[db].dict.remove(hash, key) {
            if e.expire_at() != 0 {
                self.dbs[db].volatile -= 1;
            }
            self.stats.expired_keys += 1;
            self.note_expired(db, key);
            if self.log_expired {
                self.expired_log.push((db, key.to_vec()));
            }
            self.signal_uncounted(db, key);
            lazyfree::free_entry(
                e,
                lazyfree::LAZY_EXPIRE.load(std::sync::atomic::Ordering::Relaxed),
            );
        }
    }

    /// Writes `value` under `key`, replacing any previous value, with the
    /// given TTL rule. Signals the modification. A value whose TTL has
    /// passed is reaped first, as Redis's setKey looks the key up for
    /// writing: the `expired` event and the DEL come before the write's.
    pub fn set<'v>(&mut self, db: usize, key: &[u8], value: impl Into<Incoming<'v>>, ttl: Ttl) {
        let h = self.dbs[db].dict.hash(key);
        self.live_at(db, h, key, false);
        let value = value.into();
        let mut lru = self.new_stamp();
        if self.lfu.is_some() {
            // An overwritten value keeps its key's frequency, counting
            // this access (Redis's dbSetValue after lookupKeyWrite).
            if let Some(e) = self.dbs[db].dict.get(h, key) {
                let old = e.lru();
                lru = self.accessed_stamp(old);
            }
        }
        let now = self.now_ms;
        let d = &mut self.dbs[db];
        // The expiry the new value gets over one that expires at `was`.
        let expiry = |was: u64| {
            let expired = was != 0 && was < now;
            let at = match ttl {
                Ttl::None => 0,
                Ttl::At(at) => at,
                // An expired key is a new key: its old TTL is gone.
                Ttl::Keep if expired => 0,
                Ttl::Keep => was,
            };
            (at, expired)
        };
        if lazyfree::LAZY_SERVER_DEL.load(std::sync::atomic::Ordering::Relaxed)
            && d.dict
                .get(h, key)
                .is_some_and(|e| lazyfree::entry_effort(e) > lazyfree::THRESHOLD)
        {
            // dbOverwrite with lazyfree-lazy-server-del: the old value goes
            // to the background thread, the key gets a new entry.
            if let Some(old) = d.dict.remove(h, key) {
                let was = old.expire_at();
                let (at, expired) = expiry(was);
                d.dict.insert_new(h, key, value, at, lru);
                d.volatile = d.volatile + usize::from(at != 0) - usize::from(was != 0);
                lazyfree::free_entry(old, true);
                if expired {
                    self.note_new(db, key);
                }
                self.signal_modified(db, key);
                return;
            }
        }
        match d.dict.get_mut(h, key) {
            Some(mut e) => {
                let was = e.expire_at();
                let (at, expired) = expiry(was);
                e.store(value, at);
                e.set_lru(lru);
                let (was_volatile, is_volatile) = (was != 0, at != 0);
                d.volatile = d.volatile + usize::from(is_volatile) - usize::from(was_volatile);
                if expired {
                    self.note_new(db, key);
                }
            }
            None => {
                let at = match ttl {
                    Ttl::At(at) => at,
                    _ => 0,
                };
                d.dict.insert_new(h, key, value, at, lru);
                d.volatile += usize::from(at != 0);
                self.note_new(db, key);
            }
        }
        self.signal_modified(db, key);
    }

    /// Records a created key for `new` notifications when they are on.
    #[inline]
    fn note_new(&mut self, db: usize, key: &[u8]) {
        if self.key_event_classes.new {
            self.key_events.push(KeyEvent::new(b'n', db, key));
        }
    }

    /// Records an expired key for `expired` notifications when they are on.
    #[inline]
    pub(crate) fn note_expired(&mut self, db: usize, key: &[u8]) {
        if self.key_event_classes.expired {
            self.key_events.push(KeyEvent::new(b'x', db, key));
        }
    }

    /// Inserts `key` known to be absent (after a failed [`Store::get`]).
    pub fn insert_new(&mut self, db: usize, key: &[u8], value: Value) -> EntryMut<'_> {
        let lru = self.new_stamp();
        self.note_new(db, key);
        // Signalled before the insert, so tell WATCH the key will exist.
        self.note_write(db, key, Some(true));
        let d = &mut self.dbs[db];
        let h = d.dict.hash(key);
        d.dict.insert_new(h, key, value, 0, lru)
    }

    /// Adds a key read from a snapshot (RDB load) with its expiry (0 = none)
    /// and access time; false, changing nothing, when the key is present.
    /// Loading is not a write: nothing is signalled.
    pub fn insert_loaded(
        &mut self,
        db: usize,
        key: &[u8],
        value: Value,
        expire_at: u64,
        lru: u32,
    ) -> bool {
        let d = &mut self.dbs[db];
        let h = d.dict.hash(key);
        if d.dict.get(h, key).is_some() {
            return false;
        }
        d.dict.insert_new(h, key, value, expire_at, lru);
        d.volatile += usize::from(expire_at != 0);
        true
    }

    /// Deletes `key` for a command (Redis's dbDelete): freed in the
    /// background under `lazyfree-lazy-server-del` when large; true when a
    /// live key was deleted.
    pub fn delete(&mut self, db: usize, key: &[u8]) -> bool {
        self.delete_lazily(db, key, &lazyfree::LAZY_SERVER_DEL)
    }

    /// Deletes the destination of a STORE command whose result is empty
    /// (Redis's dbDelete there, which no lookup precedes): a destination
    /// whose TTL has passed is deleted as a live key is, so the command
    /// fires `del`, counts a change and is propagated; true when a key was
    /// there.
    pub fn delete_destination(&mut self, db: usize, key: &[u8]) -> bool {
        let Some(e) = self.take_entry(db, key) else {
            return false;
        };
        self.signal_modified(db, key);
        let lazy = lazyfree::LAZY_SERVER_DEL.load(std::sync::atomic::Ordering::Relaxed);
        lazyfree::free_entry(e, lazy);
        true
    }

    /// Takes `key`'s entry out of its database, expired or not, keeping
    /// the count of keys with a TTL; nothing is signalled.
    pub(crate) fn take_entry(&mut self, db: usize, key: &[u8]) -> Option<EntryBox> {
        let d = &mut self.dbs[db];
        let h = d.dict.hash(key);
        let e = d.dict.remove(h, key)?;
        if e.expire_at() != 0 {
            d.volatile -= 1;
        }
        Some(e)
    }

    /// Deletes `key` whose TTL a command set in the past (EXPIRE, GETEX):
    /// freed as an expiry is, under `lazyfree-lazy-expire`. The command
    /// propagates as [`lazyfree::deletion_verb`] of the returned flag.
    pub fn delete_as_expiry(&mut self, db: usize, key: &[u8]) -> (bool, bool) {
        let lazy = lazyfree::LAZY_EXPIRE.load(std::sync::atomic::Ordering::Relaxed);
        (self.delete_lazily(db, key, &lazyfree::LAZY_EXPIRE), lazy)
    }

    /// Deletes `key` as a user's DEL does (GETDEL): freed in the
    /// background under `lazyfree-lazy-user-del`; (deleted, lazy).
    pub fn delete_as_user(&mut self, db: usize, key: &[u8]) -> (bool, bool) {
        let lazy = lazyfree::LAZY_USER_DEL.load(std::sync::atomic::Ordering::Relaxed);
        (self.delete_lazily(db, key, &lazyfree::LAZY_USER_DEL), lazy)
    }

    fn delete_lazily(
        &mut self,
        db: usize,
        key: &[u8],
        lazy: &std::sync::atomic::AtomicBool,
    ) -> bool {
        let lazy = lazy.load(std::sync::atomic::Ordering::Relaxed);
        self.remove(db, key)
            .map(|e| lazyfree::free_entry(e, lazy))
            .is_some()
    }

    /// Removes `key`; returns the entry if it existed and was live.
    pub fn remove(&mut self, db: usize, key: &[u8]) -> Option<EntryBox> {
        let now = self.now_ms;
        let d = &mut self.dbs[db];
        let h = d.dict.hash(key);
        let e = d.dict.remove(h, key)?;
        if e.expire_at() != 0 {
            d.volatile -= 1;
        }
        if e.is_expired(now) && self.expiry != Expiry::Keep {
            self.stats.expired_keys += 1;
            self.note_expired(db, key);
            if self.log_expired {
                self.expired_log.push((db, key.to_vec()));
            }
            self.signal_uncounted(db, key);
            return None;
        }
        self.signal_modified(db, key);
        Some(e)
    }

    /// Sets (`at` > 0) or clears (`at` = 0) the TTL of an existing key;
    /// false when the key does not exist.
    pub fn set_expire(&mut self, db: usize, key: &[u8], at: u64) -> bool {
        let Some(mut e) = self.get(db, key) else {
            return false;
        };
        let was = e.expire_at() != 0;
        e.set_expire(at);
        let d = &mut self.dbs[db];
        d.volatile = d.volatile + usize::from(at != 0) - usize::from(was);
        self.signal_modified(db, key);
        true
    }

    /// Records a write to `key`: the dirty counter, and the touched list
    /// that WATCH and blocked clients read.
    #[inline]
    pub fn signal_modified(&mut self, db: usize, key: &[u8]) {
        self.note_write(db, key, None);
    }

    /// As [`Store::signal_modified`] without counting a change towards
    /// the next save (Redis's `server.dirty`): for keys expired or evicted,
    /// and an LTRIM that kept every element. Watchers, waiters and trackers
    /// are told; a command that did nothing else is not propagated.
    pub fn signal_uncounted(&mut self, db: usize, key: &[u8]) {
        self.note_write(db, key, None);
        self.stats.dirty -= 1;
    }

    /// Wakes the clients blocked on `key` to look at it again without
    /// counting a write (Redis's signalKeyAsReady after XGROUP DESTROY).
    pub fn signal_ready(&mut self, db: usize, key: &[u8]) {
        if self.track_blocked {
            self.touched.push((db, key.to_vec()));
        }
    }

    /// [`Store::signal_modified`] with what is known about the key's
    /// presence after the write (None: WATCH looks it up if it needs to).
    #[inline]
    fn note_write(&mut self, db: usize, key: &[u8], present: Option<bool>) {
        self.stats.dirty += 1;
        if self.track_writes || self.track_blocked {
            self.touched.push((db, key.to_vec()));
        }
        if self.watches.active() {
            self.touch_watched(db, key, present);
        }
        if let Some(keys) = &mut self.invalidated {
            keys.push_key(key);
        }
    }

    /// Empties database `db` and returns its old contents so the caller may
    /// free them on another thread (FLUSHDB ASYNC).
    pub fn flush_db(&mut self, db: usize) -> Dict {
        if let Some(keys) = &mut self.invalidated {
            keys.push_flush();
        }
        self.empty_db(db)
    }

    /// Empties every database (FLUSHALL, a full resync, DEBUG RELOAD), a
    /// single flush for client-side caching, as Redis's signalFlushedDb(-1).
    pub fn flush_all(&mut self) -> Vec<Dict> {
        if let Some(keys) = &mut self.invalidated {
            keys.push_flush();
        }
        // Keys of the same names from the master are the master's to expire
        // (Redis's flushSlaveKeysWithExpireList).
        self.replica_volatile.clear();
        (0..self.dbs.len()).map(|db| self.empty_db(db)).collect()
    }

    fn empty_db(&mut self, db: usize) -> Dict {
        // While the keys are still there, as Redis's signalFlushedDb.
        if self.watches.active() {
            self.touch_all_watched(db, None);
        }
        let d = &mut self.dbs[db];
        let n = d.len() as u64;
        d.volatile = 0;
        d.expire_cursor = 0;
        self.stats.dirty += n;
        if self.track_writes || self.track_blocked {
            self.touched_dbs.push(db);
        }
        d.dict.take()
    }

    /// Takes the databases and function libraries of `loaded` in place of
    /// this store's (a replica's diskless load: Redis swaps in the
    /// databases it loaded aside). The caller emptied this store first
    /// (`flush_all`), which told watchers and client caches.
    pub fn adopt_loaded(&mut self, mut loaded: Store) {
        for (mine, theirs) in self.dbs.iter_mut().zip(std::mem::take(&mut loaded.dbs)) {
            *mine = theirs;
        }
        self.functions = std::mem::take(&mut loaded.functions);
    }

    /// Swaps two databases (SWAPDB).
    pub fn swap_db(&mut self, a: usize, b: usize) {
        // Watchers stay with their database number, so each sees the other
        // database's keys afterwards (Redis dbSwapDatabases).
        if a != b && self.watches.active() {
            self.touch_all_watched(a, Some(b));
            self.touch_all_watched(b, Some(a));
        }
        self.dbs.swap(a, b);
        self.stats.dirty += 1;
        if self.track_writes || self.track_blocked {
            self.touched_dbs.push(a);
            self.touched_dbs.push(b);
        }
    }

    /// Total keys over all databases.
    pub fn total_keys(&self) -> usize {
        self.dbs.iter().map(Db::len).sum()
    }
}
