//! Latency monitoring (Redis's `latency.c`) and per-command latency
//! tracking (7.0's `latency-tracking`):
//!
//! - events (`command`, `fast-command`, `expire-cycle`, `eviction-cycle`)
//!   that took `latency-monitor-threshold` ms or more are kept per event as
//!   the last 160 samples, one per second at most (the worst of that
//!   second), with the worst ever (LATENCY LATEST, HISTORY, GRAPH, DOCTOR);
//! - every command's durations go into a histogram of its own, allocated
//!   when the command first runs: log-linear buckets of microseconds (8 per
//!   power of two, so a percentile is within 12.5%) for INFO latencystats,
//!   and powers of two for LATENCY HISTOGRAM. Recording is two increments.

use std::collections::BTreeMap;

/// Samples kept per event (LATENCY_TS_LEN).
pub const SAMPLES: usize = 160;

/// One sample: Unix time in seconds and latency in milliseconds.
#[derive(Clone, Copy, Default)]
pub struct Sample {
    /// When (0: unused slot).
    pub time: u64,
    /// How long, in ms.
    pub latency: u64,
}

/// An event's samples (Redis's latencyTimeSeries).
pub struct Series {
    /// Where the next sample goes.
    pub idx: usize,
    /// The worst latency ever.
    pub max: u64,
    /// The ring of samples.
    pub samples: [Sample; SAMPLES],
}

impl Series {
    /// The samples, oldest first.
    pub fn in_order(&self) -> impl Iterator<Item = &Sample> {
        (0..SAMPLES)
            .map(move |j| &self.samples[(self.idx + j) % SAMPLES])
            .filter(|s| s.time != 0)
    }

    /// The latest sample.
    pub fn last(&self) -> &Sample {
        &self.samples[(self.idx + SAMPLES - 1) % SAMPLES]
    }
}

/// Every event seen, by name.
#[derive(Default)]
pub struct Monitor {
    /// Events in name order (Redis's order is its hash table's).
    pub events: BTreeMap<String, Box<Series>>,
}

impl Monitor {
    /// Adds a sample when `ms` reaches `threshold` (latencyAddSampleIfNeeded).
    #[inline]
    pub fn add_if_needed(&mut self, event: &str, ms: u64, threshold: u64) {
        if threshold != 0 && ms >= threshold {
            self.add(event, ms, crate::util::clock::real_now_ms() / 1000);
        }
    }

    /// Adds a sample at Unix time `now` (latencyAddSample): within the
    /// second of the previous one it only raises that one.
    pub fn add(&mut self, event: &str, ms: u64, now: u64) {
        let ts = self.events.entry(event.to_string()).or_insert_with(|| {
            Box::new(Series {
                idx: 0,
                max: 0,
                samples: [Sample::default(); SAMPLES],
            })
        });
        ts.max = ts.max.max(ms);
        let prev = (ts.idx + SAMPLES - 1) % SAMPLES;
        if ts.samples[prev].time == now {
            ts.samples[prev].latency = ts.samples[prev].latency.max(ms);
            return;
        }
        ts.samples[ts.idx] = Sample {
            time: now,
            latency: ms,
        };
        ts.idx = (ts.idx + 1) % SAMPLES;
    }

    /// Forgets `event` (any case), or every event; how many went.
    pub fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        match event {
            None => self.events.clear(),
            Some(e) => self
                .events
                .retain(|k, _| !k.as_bytes().eq_ignore_ascii_case(e)),
        }
        before - self.events.len()
    }
}

/// Log-linear buckets: 8 exact values, then 8 per power of two.
const BUCKETS: usize = 8 + 61 * 8;

/// A command's durations (Redis keeps an hdr_histogram per command).
pub struct Histogram {
    /// Calls recorded.
    pub total: u64,
    counts: [u64; BUCKETS],
    /// Calls by power-of-two bucket: index k holds durations under
    /// 1024·2^k ns (LATENCY HISTOGRAM's buckets).
    pow2: [u64; 64],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            total: 0,
            counts: [0; BUCKETS],
            pow2: [0; 64],
        }
    }
}

fn bucket(us: u64) -> usize {
    if us < 8 {
        return us as usize;
    }
    let p = 63 - us.leading_zeros() as usize;
    8 + (p - 3) * 8 + ((us >> (p - 3)) as usize & 7)
}

/// The largest duration bucket `i` holds, in µs.
fn bucket_high(i: usize) -> u64 {
    if i < 8 {
        return i as u64;
    }
    let (p, sub) = ((i - 8) / 8 + 3, (i - 8) % 8);
    ((9 + sub as u64) << (p - 3)) - 1
}

impl Histogram {
    /// Records a duration of `us` microseconds.
    #[inline]
    pub fn record(&mut self, us: u64) {
        self.total += 1;
        self.counts[bucket(us)] += 1;
        let ns = us.saturating_mul(1000);
        let k = (64 - (ns >> 10).leading_zeros() as usize).min(63);
        self.pow2[k] += 1;
    }

    /// The duration in µs at `percentile` (0-100): the highest value of
    /// the bucket where the cumulative count reaches it.
    pub fn percentile(&self, percentile: f64) -> u64 {
        let want = ((percentile / 100.0) * self.total as f64 + 0.5).max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return bucket_high(i);
            }
        }
        0
    }

    /// LATENCY HISTOGRAM's buckets: (µs, calls at most that long), for the
    /// buckets where the count grows, as Redis's log iteration from 1024
    /// ns doubling reports them.
    pub fn cumulative(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut seen = 0;
        for (k, &c) in self.pow2.iter().enumerate() {
            if seen == self.total {
                break;
            }
            seen += c;
            if c > 0 {
                out.push((((1024u64 << k) - 1) / 1000, seen));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_their_values() {
        for us in [
            0u64,
            1,
            7,
            8,
            9,
            15,
            16,
            17,
            100,
            1000,
            123_456,
            u64::MAX / 2,
        ] {
            let i = bucket(us);
            assert!(bucket_high(i) >= us, "{us}");
            assert!(i == 0 || bucket_high(i - 1) < us, "{us}");
        }
        let mut h = Histogram::default();
        for us in 1..=100 {
            h.record(us);
        }
        assert_eq!(h.percentile(50.0), 51);
        assert!((99..=103).contains(&h.percentile(99.0)));
        let c = h.cumulative();
        assert_eq!(c.first(), Some(&(1, 1)));
        assert_eq!(c.last().map(|x| x.1), Some(100));
    }

    #[test]
    fn one_sample_per_second_keeps_the_worst() {
        let mut m = Monitor::default();
        m.add("command", 5, 100);
        m.add("command", 9, 100);
        m.add("command", 3, 101);
        let s = &m.events["command"];
        let v: Vec<(u64, u64)> = s.in_order().map(|s| (s.time, s.latency)).collect();
        assert_eq!(v, [(100, 9), (101, 3)]);
        assert_eq!(s.max, 9);
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
    }
}
