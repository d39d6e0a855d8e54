//! client-output-buffer-limit (Redis's checkClientOutputBufferLimits): a
//! client whose unsent output reaches its class's hard limit, or stays
//! over the soft limit for the soft-limit seconds, is closed at once,
//! without its pending output, and the others keep being served.

use super::client::{Client, ClientKind};
use crate::net::link::{ConnBuffers, ToConn};
use crate::util::clock;

/// The limits of one client class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Bytes at which the client is closed (0: none).
    pub hard: usize,
    /// Bytes the client may stay over only for `soft_secs` (0: none).
    pub soft: usize,
    /// Seconds over the soft limit that close the client.
    pub soft_secs: u64,
}

/// The classes of client-output-buffer-limit, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Ordinary clients.
    Normal = 0,
    /// Replicas.
    Replica = 1,
    /// Clients subscribed to a channel or pattern.
    PubSub = 2,
}

impl Limits {
    /// All three classes from the config value
    /// (`normal H S T slave H S T pubsub H S T`).
    pub fn from_config(value: &str) -> [Limits; 3] {
        let parts: Vec<&str> = value.split(' ').collect();
        let num = |i: usize| {
            parts
                .get(i)
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let class = |i: usize| Limits {
            hard: num(i * 4 + 1) as usize,
            soft: num(i * 4 + 2) as usize,
            soft_secs: num(i * 4 + 3),
        };
        [class(0), class(1), class(2)]
    }

    /// True when no limit applies.
    #[inline]
    pub fn is_off(&self) -> bool {
        self.hard == 0 && self.soft == 0
    }

    /// Whether `pending` unsent bytes in `q` break the limits now; keeps
    /// the time the soft limit was first passed. The soft limit breaks
    /// once more than its seconds have passed in whole Unix seconds, as
    /// Redis's checkClientOutputBufferLimits counts them (`server.unixtime`):
    /// always more than that many seconds, never exactly them.
    pub fn reached(&self, q: &ConnBuffers, pending: usize) -> bool {
        self.reached_at(q, pending, clock::real_now_ms() / 1000)
    }

    fn reached_at(&self, q: &ConnBuffers, pending: usize, now_s: u64) -> bool {
        let mut over = self.hard != 0 && pending >= self.hard;
        if self.soft != 0 && pending >= self.soft {
            let since = q.soft_since.get();
            if since == 0 {
                q.soft_since.set(now_s);
            } else if now_s.saturating_sub(since) > self.soft_secs {
                over = true;
            }
        } else {
            q.soft_since.set(0);
        }
        over
    }
}

/// Bytes of data in one of Redis's reply list nodes: 16 KB asked for, in
/// jemalloc's 20 KB size class, less the node's 16-byte header.
const NODE_DATA: usize = 20_464;

/// What one reply list node counts: its data size plus the list node and
/// block header (Redis's getClientOutputBufferMemoryUsage).
const NODE_COST: usize = NODE_DATA + 40;

/// What `pending` output bytes count against the limits, as Redis counts
/// them: nothing for what fits in the client's reply buffer (every client
/// has one), and the rest as the reply list nodes that would hold it. So
/// even a 1-byte hard limit lets small replies out, and about 100 KB of
/// KEYS output passes a 100,000-byte limit, as in Redis.
#[inline]
pub fn counted(q: &ConnBuffers, pending: usize) -> usize {
    let over = pending.saturating_sub(q.reply_size.get());
    over.div_ceil(NODE_DATA) * NODE_COST
}

/// The class whose limits apply to `c` (Redis's getClientType).
pub fn class_of(c: &Client) -> Class {
    match c.kind {
        ClientKind::PubSub => Class::PubSub,
        ClientKind::Replica => Class::Replica,
        _ => Class::Normal,
    }
}

/// Closes `c` for passing its output limits: logged as Redis logs it, the
/// connection dropped with whatever was queued.
pub fn close(c: &Client, class: Class) {
    let q = &c.bufs;
    if !q.kill() {
        return;
    }
    let name = match class {
        Class::Normal => "normal",
        Class::Replica => "slave",
        Class::PubSub => "pubsub",
    };
    tracing::warn!(
        "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits ({name}).",
        c.id,
        c.addr
    );
    let _ = c.tx.send(ToConn::Close);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_class_of_the_config_value() {
        let l = Limits::from_config("normal 1 2 3 slave 268435456 67108864 60 pubsub 7 8 9");
        assert_eq!(
            l[Class::Normal as usize],
            Limits {
                hard: 1,
                soft: 2,
                soft_secs: 3
            }
        );
        assert_eq!(l[Class::Replica as usize].hard, 268435456);
        assert_eq!(l[Class::PubSub as usize].soft_secs, 9);
        assert!(Limits::from_config("normal 0 0 0")[0].is_off());
    }

    #[test]
    fn the_soft_limit_breaks_after_more_than_its_seconds_as_redis() {
        let l = Limits {
            hard: 0,
            soft: 100,
            soft_secs: 3,
        };
        let q = ConnBuffers::default();
        // Passed at second 1000 (whenever within it), held through 1003.
        for now in [1000, 1001, 1002, 1003] {
            assert!(!l.reached_at(&q, 200, now), "at {now}");
        }
        assert!(l.reached_at(&q, 200, 1004));
        // Back under the limit: the clock starts over.
        assert!(!l.reached_at(&q, 50, 1005));
        assert!(!l.reached_at(&q, 200, 1006));
        assert!(!l.reached_at(&q, 200, 1009));
        assert!(l.reached_at(&q, 200, 1010));
    }

    #[test]
    fn output_counts_as_redis_reply_list_nodes_beyond_the_reply_buffer() {
        let q = ConnBuffers::default();
        q.reply_size.set(16_384);
        assert_eq!(counted(&q, 0), 0);
        assert_eq!(counted(&q, 16_384), 0);
        assert_eq!(counted(&q, 16_385), NODE_COST);
        assert_eq!(counted(&q, 16_384 + NODE_DATA), NODE_COST);
        assert_eq!(counted(&q, 16_384 + NODE_DATA + 1), 2 * NODE_COST);
        // obuf-limits' "KEYS stopped mid-run": 1,000 keys of 103 bytes
        // pass a 100,000-byte limit.
        assert!(counted(&q, 1000 * 111) >= 100_000);
    }
}
