//! The active expiry cycle (Redis's `activeExpireCycle`): keys nobody reads
//! again are still reclaimed. Each run walks bucket ranges of databases that
//! hold volatile keys, removing expired entries, within a time budget.

use std::time::{Duration, Instant};

use super::Store;

/// Buckets walked between clock checks.
const CHECK_EVERY: usize = 64;

impl Store {
    /// Remembers that a writable replica's own client gave `key` of `db` a
    /// TTL (Redis's rememberSlaveKeyWithExpire; databases past 63 are not
    /// tracked, as in Redis).
    pub fn remember_replica_volatile(&mut self, db: usize, key: &[u8]) {
        if db > 63 {
            return;
        }
        *self.replica_volatile.entry(key.to_vec()).or_insert(0) |= 1 << db;
    }

    /// A writable replica's expiry of the keys its own clients gave a TTL
    /// (Redis's expireSlaveKeys): keys looked at in the map's order, the
    /// expired ones deleted, those no longer volatile forgotten; it stops
    /// after more than three keys that have not expired yet or a
    /// millisecond. Returns the keys deleted.
    pub fn expire_replica_keys(&mut self) -> usize {
        if self.replica_volatile.is_empty() {
            return 0;
        }
        let start = Instant::now();
        let now = self.now();
        let (mut looked, mut unexpired, mut deleted) = (0usize, 0usize, 0usize);
        let mut updates: Vec<(Vec<u8>, u64)> = Vec::new();
        for (key, &dbs) in &self.replica_volatile {
            let mut keep = 0u64;
            for db in (0..self.dbs.len().min(64)).filter(|db| dbs & (1 << db) != 0) {
                let d = &self.dbs[db];
                let Some(e) = d.dict.get(d.dict.hash(key), key) else {
                    continue;
                };
                if e.expire_at() == 0 {
                    continue;
                }
                if e.is_expired(now) {
                    deleted += 1;
                } else {
                    unexpired += 1;
                    keep |= 1 << db;
                }
            }
            updates.push((key.clone(), keep));
            looked += 1;
            if unexpired > 3 || (looked % 64 == 0 && start.elapsed() > Duration::from_millis(1)) {
                break;
            }
        }
        for (key, keep) in updates {
            let dbs = self.replica_volatile.get(&key).copied().unwrap_or(0);
            for db in (0..self.dbs.len().min(64)).filter(|db| dbs & !keep & (1 << db) != 0) {
                let d = &self.dbs[db];
                let h = d.dict.hash(&key);
                if d.dict.get(h, &key).is_some_and(|e| e.is_expired(now)) {
                    self.expire_now(db, h, &key);
                }
            }
            if keep == 0 {
                self.replica_volatile.remove(&key);
            } else {
                self.replica_volatile.insert(key, keep);
            }
        }
        deleted
    }

    /// Runs one cycle with the given time budget; returns keys reclaimed.
    /// `effort` is active-expire-effort (1 to 10): each step above 1 walks
    /// a quarter more of the table before stopping and lowers by a point
    /// the share of expired keys (10%) that keeps the cycle going, as
    /// Redis's activeExpireCycle scales its keys per loop and acceptable
    /// stale share.
    pub fn active_expire_cycle(&mut self, budget: Duration, effort: u32) -> usize {
        let extra = effort.clamp(1, 10) as usize - 1;
        let stale_percent = 10 - extra;
        let start = Instant::now();
        let now = self.now();
        let mut reclaimed = 0;
        for db in 0..self.dbs.len() {
            if self.dbs[db].volatile == 0 {
                self.dbs[db].avg_ttl = 0;
                continue;
            }
            // Walk a hundredth of the table per cycle, so at the default hz
            // of 10 every key is looked at within ten seconds, and keep going
            // while the budget lasts if more than a tenth of the keys with a
            // TTL seen so far had expired (Redis's acceptable stale share,
            // reckoned as Redis does over keys with a TTL only: keys without
            // one are never reclaimed and must not hold the cycle back). A
            // tenth of the table per cycle cost a few percent of the CPU of
            // a busy server whose keys all had long TTLs, for nothing.
            let buckets = self.dbs[db].dict.buckets();
            let quota = ((buckets / 100) * (4 + extra) / 4).max(CHECK_EVERY);
            // Keys with a TTL seen so far: the live ones sampled here, plus
            // the expired ones, which are all removed (`expired_here`).
            let (mut walked, mut expired_here) = (0usize, 0usize);
            let (mut ttl_sum, mut ttl_samples) = (0u64, 0usize);
            loop {
                let d = &mut self.dbs[db];
                let cursor = d.expire_cursor;
                let (next, removed) = d.dict.sweep_bucket(cursor, |e| {
                    let expired = e.is_expired(now);
                    if e.expire_at() != 0 && !expired {
                        ttl_sum = ttl_sum.saturating_add(e.expire_at() - now);
                        ttl_samples += 1;
                    }
                    expired
                });
                d.expire_cursor = next;
                walked += 1;
                d.volatile -= removed.len();
                expired_here += removed.len();
                for e in removed {
                    self.stats.expired_keys += 1;
                    self.note_expired(db, e.key());
                    if self.log_expired {
                        self.expired_log.push((db, e.key().to_vec()));
                    }
                    self.signal_uncounted(db, e.key());
                }
                if next == 0 || self.dbs[db].volatile == 0 {
                    break;
                }
                if walked % CHECK_EVERY == 0 {
                    if start.elapsed() >= budget {
                        break;
                    }
                    let stale = expired_here * 100 > stale_percent * (ttl_samples + expired_here);
                    if walked >= quota && !stale {
                        break;
                    }
                }
            }
            if self.dbs[db].volatile == 0 {
                // The last key with a TTL went in this cycle: Redis's loop
                // finds its expires table empty on its next turn.
                self.dbs[db].avg_ttl = 0;
            } else if let Some(sample) = ttl_sum.checked_div(ttl_samples as u64) {
                // Redis's running average: the new sample weighs 2%.
                let d = &mut self.dbs[db];
                if d.avg_ttl == 0 {
                    d.avg_ttl = sample;
                }
                d.avg_ttl = d.avg_ttl / 50 * 49 + sample / 50;
            }
            self.dbs[db].dict.compact();
            reclaimed += expired_here;
            if start.elapsed() >= budget {
                break;
            }
        }
        self.stats.expire_cycle_cpu_us += start.elapsed().as_micros() as u64;
        reclaimed
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Store, Ttl};
    use crate::store::value::Value;
    use std::time::Duration;

    #[test]
    fn reclaims_expired_keys_without_access() {
        let mut s = Store::new(1);
        s.set_now(1_000);
        for i in 0..10_000 {
            s.set(0, format!("k{i}").as_bytes(), Value::Int(i), Ttl::At(1_100));
        }
        s.set(0, b"forever", Value::Int(1), Ttl::None);
        s.set_now(2_000);
        for _ in 0..100 {
            s.active_expire_cycle(Duration::from_millis(25), 1);
            if s.dbs[0].len() == 1 {
                break;
            }
        }
        assert_eq!(s.dbs[0].len(), 1);
        assert_eq!(s.dbs[0].volatile(), 0);
        assert_eq!(s.stats.expired_keys, 10_000);
    }

    #[test]
    fn a_greater_effort_reclaims_more_per_cycle() {
        // One key in twenty expired: under effort 1's stale share (10%),
        // over effort 10's (1%).
        let reclaimed = |effort| {
            let mut s = Store::new(1);
            s.set_now(1_000);
            for i in 0..100_000 {
                let at = if i % 20 == 0 { 1_100 } else { 1_000_000 };
                s.set(0, format!("k{i}").as_bytes(), Value::Int(i), Ttl::At(at));
            }
            s.set_now(2_000);
            s.active_expire_cycle(Duration::from_secs(10), effort)
        };
        let (low, high) = (reclaimed(1), reclaimed(10));
        assert!(low < 1_000, "effort 1 reclaimed {low}");
        assert_eq!(high, 5_000);
    }
}
