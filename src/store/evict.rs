//! The keyspace half of eviction (Redis's `evict.c`): access tracking for
//! LRU and LFU, the eviction pool, and the choice of the key to evict under
//! each `maxmemory-policy`. Measuring memory and deleting the chosen keys
//! is the server's part (`server/evict.rs`).
//!
//! An entry's 32-bit `lru` field holds, as Redis's 24-bit one does, either
//! the last access in seconds of the server clock (LRU policies) or, under
//! an LFU policy, the last decrement time in minutes (16 bits) above an
//! 8-bit logarithmic access counter. Switching policy does not convert
//! them; as in Redis the values adjust as keys are used.

use super::dict::Entry;
use super::Store;

/// A `maxmemory-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Refuse writes once over the limit.
    NoEviction,
    /// Least recently used, any key.
    AllkeysLru,
    /// Least frequently used, any key.
    AllkeysLfu,
    /// Random key.
    AllkeysRandom,
    /// Least recently used among keys with a TTL.
    VolatileLru,
    /// Least frequently used among keys with a TTL.
    VolatileLfu,
    /// Random key with a TTL.
    VolatileRandom,
    /// Key with the nearest expiry.
    VolatileTtl,
}

impl Policy {
    /// The policy a (validated) `maxmemory-policy` value names.
    pub fn parse(name: &str) -> Policy {
        match name {
            "allkeys-lru" => Policy::AllkeysLru,
            "allkeys-lfu" => Policy::AllkeysLfu,
            "allkeys-random" => Policy::AllkeysRandom,
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    /// Tracks access frequency rather than access time.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllkeysLfu | Policy::VolatileLfu)
    }

    fn all_keys(self) -> bool {
        matches!(
            self,
            Policy::AllkeysLru | Policy::AllkeysLfu | Policy::AllkeysRandom
        )
    }
}

/// The LFU parameters, set while an LFU policy is in force.
#[derive(Clone, Copy, Debug)]
pub struct Lfu {
    /// `lfu-log-factor`.
    pub log_factor: u32,
    /// `lfu-decay-time`, in minutes.
    pub decay_time: u32,
}

/// A new key's counter (Redis's LFU_INIT_VAL), so it is not evicted at once.
const LFU_INIT_VAL: u32 = 5;

/// Entries the eviction pool keeps (Redis's EVPOOL_SIZE).
const POOL_SIZE: usize = 16;

/// Minutes of the clock, 16 bits wide (Redis's LFUGetTimeInMinutes).
fn minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xffff) as u32
}

/// Redis's LFUDecrAndReturn: the counter once the elapsed decay periods are
/// taken off.
pub fn lfu_counter(stamp: u32, lfu: Lfu, now_ms: u64) -> u32 {
    let ldt = u64::from(stamp >> 8);
    let counter = stamp & 255;
    let now = u64::from(minutes(now_ms));
    // Redis's LFUTimeElapsed in unsigned long: a stamp written under an
    // LRU policy (seconds, wider than 16 bits) wraps to a huge elapsed
    // time, so its counter reads as 0.
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535u64.wrapping_sub(ldt).wrapping_add(now)
    };
    let periods = elapsed.checked_div(u64::from(lfu.decay_time)).unwrap_or(0);
    u64::from(counter).saturating_sub(periods) as u32
}

/// Keys the eviction pool remembers, best candidate last, with their
/// score (higher evicts first).
#[derive(Default)]
pub struct Pool {
    entries: Vec<(u64, usize, Vec<u8>)>,
}

impl Pool {
    /// Redis's evictionPoolPopulate insertion: keeps the POOL_SIZE best
    /// scores, sorted ascending.
    fn insert(&mut self, score: u64, db: usize, key: &[u8]) {
        let k = self.entries.partition_point(|e| e.0 < score);
        if k == 0 && self.entries.len() == POOL_SIZE {
            return;
        }
        if self.entries.len() == POOL_SIZE {
            // Full: drop the worst to make room below the insertion point.
            self.entries.remove(0);
            self.entries.insert(k - 1, (score, db, key.to_vec()));
        } else {
            self.entries.insert(k, (score, db, key.to_vec()));
        }
    }

    /// Forgets every remembered key (FLUSHALL, a policy change).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

impl Store {
    /// The access stamp of a key created now.
    #[inline]
    pub(super) fn new_stamp(&self) -> u32 {
        match self.lfu {
            Some(_) => (minutes(self.now_ms) << 8) | LFU_INIT_VAL,
            None => (self.now_ms / 1000) as u32,
        }
    }

    /// The access stamp of a key RESTORE creates (Redis's
    /// objectSetLRUOrLFU on a new object): under an LFU policy the counter
    /// `freq`, else a last access `idle_s` seconds ago; a new key's stamp
    /// when the option given does not apply to the policy in force.
    pub fn restored_stamp(&self, freq: Option<u8>, idle_s: Option<u64>) -> u32 {
        match (self.lfu, freq, idle_s) {
            (Some(_), Some(f), _) => (minutes(self.now_ms) << 8) | u32::from(f),
            (None, _, Some(idle)) => (self.now_ms / 1000).saturating_sub(idle) as u32,
            _ => self.new_stamp(),
        }
    }

    /// The access stamp after an access to a key stamped `old` (Redis's
    /// updateLFU, or the LRU clock).
    #[inline]
    pub(super) fn accessed_stamp(&mut self, old: u32) -> u32 {
        let Some(lfu) = self.lfu else {
            return (self.now_ms / 1000) as u32;
        };
        let mut counter = lfu_counter(old, lfu, self.now_ms);
        if counter < 255 {
            // Redis's LFULogIncr.
            let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
            let p = 1.0 / (base * f64::from(lfu.log_factor) + 1.0);
            if self.random_unit() < p {
                counter += 1;
            }
        }
        (minutes(self.now_ms) << 8) | counter
    }

    /// A uniform random number in [0, 1).
    fn random_unit(&mut self) -> f64 {
        (self.random_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next number of the store's xorshift generator.
    pub fn random_u64(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// Turns LFU access tracking on (with its parameters) or off.
    pub fn set_lfu(&mut self, lfu: Option<Lfu>) {
        self.lfu = lfu;
    }

    /// The LFU parameters, when an LFU policy is in force.
    pub fn lfu(&self) -> Option<Lfu> {
        self.lfu
    }

    /// The score of `e` under `policy`: higher evicts first.
    fn eviction_score(&self, policy: Policy, e: &Entry) -> u64 {
        match policy {
            Policy::VolatileTtl => u64::MAX - e.expire_at(),
            Policy::AllkeysLfu | Policy::VolatileLfu => {
                let lfu = self.lfu.unwrap_or(Lfu {
                    log_factor: 10,
                    decay_time: 1,
                });
                255 - u64::from(lfu_counter(e.lru(), lfu, self.now_ms))
            }
            // Idle milliseconds, at the clock's one-second resolution.
            _ => (self.now_ms / 1000).saturating_sub(u64::from(e.lru())) * 1000,
        }
    }

    /// Samples up to `samples` keys of `db` that `policy` may evict
    /// (Redis's dictGetSomeKeys on the keys or the expires): a run of
    /// buckets from a random one, walking at most ten times as many
    /// buckets as keys wanted, or the whole table for the volatile
    /// policies when keys with a TTL are rare.
    fn sample(&mut self, db: usize, policy: Policy, samples: usize, out: &mut Vec<(u64, Vec<u8>)>) {
        out.clear();
        let buckets = self.dbs[db].dict.buckets();
        if buckets == 0 {
            return;
        }
        let all = policy.all_keys();
        let budget = if all {
            samples * 10
        } else {
            // Keys with a TTL are looked for as far as their share of the
            // table says they are to be found.
            let d = &self.dbs[db];
            let per = d.len().div_ceil(d.volatile().max(1)).max(1);
            (samples * 10 * per).min(buckets)
        };
        let mask = (buckets - 1) as u64;
        let mut found: Vec<(u64, Vec<u8>)> = Vec::with_capacity(samples);
        // A run of empty buckets finds nothing: start again elsewhere.
        for _ in 0..64 {
            let start = self.random_u64();
            for i in 0..budget.max(1) as u64 {
                let d = &self.dbs[db].dict;
                d.bucket_each((start.wrapping_add(i)) & mask, |e| {
                    if found.len() < samples && (all || e.expire_at() != 0) {
                        found.push((self.eviction_score(policy, e), e.key().to_vec()));
                    }
                });
                if found.len() >= samples {
                    break;
                }
            }
            if !found.is_empty() {
                break;
            }
        }
        *out = found;
    }

    /// The key `policy` evicts next, as Redis's performEvictions picks it:
    /// the pool filled from every database for the LRU, LFU and TTL
    /// policies; a random key, visiting databases in turn, for the random
    /// ones. None when no key qualifies.
    pub fn eviction_candidate(
        &mut self,
        policy: Policy,
        samples: usize,
        pool: &mut Pool,
    ) -> Option<(usize, Vec<u8>)> {
        let all = policy.all_keys();
        let eligible = |d: &super::Db| if all { d.len() } else { d.volatile() };
        match policy {
            Policy::NoEviction => None,
            Policy::AllkeysRandom | Policy::VolatileRandom => {
                let n = self.dbs.len();
                for _ in 0..n {
                    self.next_evict_db = (self.next_evict_db + 1) % n;
                    let db = self.next_evict_db;
                    if eligible(&self.dbs[db]) == 0 {
                        continue;
                    }
                    let mut picked = Vec::with_capacity(1);
                    self.sample(db, policy, 1, &mut picked);
                    if let Some((_, key)) = picked.pop() {
                        return Some((db, key));
                    }
                }
                None
            }
            _ => {
                let mut picked = Vec::new();
                loop {
                    let mut total = 0;
                    for db in 0..self.dbs.len() {
                        let n = eligible(&self.dbs[db]);
                        if n == 0 {
                            continue;
                        }
                        total += n;
                        self.sample(db, policy, samples, &mut picked);
                        for (score, key) in &picked {
                            pool.insert(*score, db, key);
                        }
                    }
                    if total == 0 {
                        return None;
                    }
                    // Best first; a key gone since it was pooled is a ghost.
                    while let Some((_, db, key)) = pool.entries.pop() {
                        let e = self.peek_any(db, &key);
                        if e.is_some_and(|e| all || e.expire_at() != 0) {
                            return Some((db, key));
                        }
                    }
                }
            }
        }
    }

    /// The entry for `key`, expired or not, without side effects.
    fn peek_any(&self, db: usize, key: &[u8]) -> Option<&Entry> {
        let d = &self.dbs[db].dict;
        d.get(d.hash(key), key)
    }

    /// Removes a key chosen for eviction and counts it; the caller then
    /// signals it to WATCH, tracking and blocked clients
    /// ([`Store::signal_modified`]), once it has measured what the removal
    /// freed. True when it was there.
    pub fn evict(&mut self, db: usize, key: &[u8]) -> bool {
        let Some(e) = self.take_entry(db, key) else {
            return false;
        };
        self.stats.evicted_keys += 1;
        super::lazyfree::free_entry(
            e,
            super::lazyfree::LAZY_EVICTION.load(std::sync::atomic::Ordering::Relaxed),
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::value::Value;
    use crate::store::Ttl;

    #[test]
    fn lfu_counter_decays_one_per_period() {
        let lfu = Lfu {
            log_factor: 10,
            decay_time: 1,
        };
        let now = 100 * 60_000;
        let stamp = (minutes(now - 3 * 60_000) << 8) | 20;
        assert_eq!(lfu_counter(stamp, lfu, now), 17);
        let stale = (minutes(now - 60 * 60_000) << 8) | 20;
        assert_eq!(lfu_counter(stale, lfu, now), 0);
        // A key stamped under an LRU policy (Unix seconds), read once the
        // policy is LFU: Redis's unsigned arithmetic wraps to 0.
        assert_eq!(lfu_counter(1_795_000_000, lfu, now), 0);
    }

    #[test]
    fn pool_keeps_the_best_sixteen() {
        let mut p = Pool::default();
        for i in 0..40u64 {
            p.insert((i * 7) % 40, 0, format!("k{i}").as_bytes());
        }
        assert_eq!(p.entries.len(), POOL_SIZE);
        let scores: Vec<u64> = p.entries.iter().map(|e| e.0).collect();
        assert_eq!(scores, (24..40).collect::<Vec<_>>());
    }

    #[test]
    fn lru_evicts_the_idlest_and_volatile_only_keys_with_a_ttl() {
        let mut s = Store::new(2);
        s.set_now(1_000_000);
        for i in 0..200 {
            s.set(0, format!("old{i}").as_bytes(), Value::Int(i), Ttl::None);
        }
        s.set_now(2_000_000);
        for i in 0..200 {
            s.set(1, format!("new{i}").as_bytes(), Value::Int(i), Ttl::None);
        }
        s.set(1, b"ttl", Value::Int(1), Ttl::At(9_000_000));
        let mut pool = Pool::default();
        for _ in 0..50 {
            let (db, key) = s
                .eviction_candidate(Policy::AllkeysLru, 5, &mut pool)
                .expect("a key");
            assert_eq!(db, 0, "{}", String::from_utf8_lossy(&key));
            assert!(s.evict(db, &key));
        }
        let (db, key) = s
            .eviction_candidate(Policy::VolatileTtl, 5, &mut Pool::default())
            .expect("the key with a TTL");
        assert_eq!((db, key.as_slice()), (1, &b"ttl"[..]));
        assert!(s.evict(db, &key));
        assert!(s
            .eviction_candidate(Policy::VolatileLru, 5, &mut Pool::default())
            .is_none());
        assert_eq!(s.stats.evicted_keys, 51);
    }
}
