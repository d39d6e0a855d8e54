//! Pub/sub registries (Redis's `pubsub.c` state): who listens to which
//! channel, pattern and shard channel, and delivery of messages to other
//! clients through their connection task.
//!
//! Subscriptions are kept here by client id rather than in `Client`, so a
//! client that goes away (even while taken out of the client map) is
//! forgotten with its id alone.

use std::collections::HashMap;

use super::client::Client;
use super::obuf;
use crate::net::link::ToConn;
use crate::net::reply::ReplyBuf;
use crate::util::glob::glob_match;

/// The three subscription spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE channels.
    Channel,
    /// PSUBSCRIBE patterns.
    Pattern,
    /// SSUBSCRIBE shard channels.
    Shard,
}

impl Kind {
    fn sub_name(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    fn unsub_name(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

/// One client's subscriptions, in subscription order.
#[derive(Default, Debug)]
pub struct Subs {
    /// Channels.
    pub channels: Vec<Vec<u8>>,
    /// Patterns.
    pub patterns: Vec<Vec<u8>>,
    /// Shard channels.
    pub shard: Vec<Vec<u8>>,
}

impl Subs {
    fn list(&mut self, kind: Kind) -> &mut Vec<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// The count SUBSCRIBE-family replies carry: channels plus patterns,
    /// or shard channels alone for the S commands (Redis 7.0).
    fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard.len()
    }
}

/// The server's pub/sub state.
#[derive(Default)]
pub struct PubSub {
    channels: HashMap<Vec<u8>, Vec<u64>>,
    patterns: HashMap<Vec<u8>, Vec<u64>>,
    shard: HashMap<Vec<u8>, Vec<u64>>,
    clients: HashMap<u64, Subs>,
    /// Messages for subscribers missing from the client map while a
    /// command ran: the client whose script published them (RESP2 and
    /// RESP3 encodings). Cleared after every batch.
    pub held: Vec<(u64, Vec<u8>, Vec<u8>)>,
}

impl PubSub {
    /// Takes the held messages for client `id`, encoded for its protocol.
    pub fn take_held(&mut self, id: u64, resp3: bool, out: &mut Vec<u8>) {
        if self.held.is_empty() {
            return;
        }
        for (to, r2, r3) in std::mem::take(&mut self.held) {
            if to == id {
                out.extend_from_slice(if resp3 { &r3 } else { &r2 });
            }
        }
    }

    fn space(&mut self, kind: Kind) -> &mut HashMap<Vec<u8>, Vec<u64>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// Client `id`'s subscriptions, if any.
    pub fn subs(&self, id: u64) -> Option<&Subs> {
        self.clients.get(&id)
    }

    /// (channels, patterns, shard channels) of client `id` (CLIENT LIST).
    pub fn counts(&self, id: u64) -> (usize, usize, usize) {
        self.clients.get(&id).map_or((0, 0, 0), |s| {
            (s.channels.len(), s.patterns.len(), s.shard.len())
        })
    }

    /// Channels with at least one subscriber (INFO pubsub_channels).
    pub fn num_channels(&self) -> usize {
        self.channels.len()
    }

    /// Patterns with at least one subscriber (PUBSUB NUMPAT).
    pub fn num_patterns(&self) -> usize {
        self.patterns.len()
    }

    /// Shard channels with at least one subscriber.
    pub fn num_shard_channels(&self) -> usize {
        self.shard.len()
    }

    /// Subscribers of a channel (PUBSUB NUMSUB/SHARDNUMSUB).
    pub fn num_sub(&self, kind: Kind, ch: &[u8]) -> usize {
        let space = match kind {
            Kind::Shard => &self.shard,
            _ => &self.channels,
        };
        space.get(ch).map_or(0, Vec::len)
    }

    /// Active channels matching `pattern` (all when None).
    pub fn active(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<&[u8]> {
        let space = match kind {
            Kind::Shard => &self.shard,
            _ => &self.channels,
        };
        space
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .map(Vec::as_slice)
            .collect()
    }

    /// Subscribes `client` to `name` and writes the confirmation.
    pub fn subscribe(
        &mut self,
        client: &mut Client,
        reply: &mut ReplyBuf<'_>,
        kind: Kind,
        name: &[u8],
    ) {
        let id = client.id;
        let subs = self.clients.entry(id).or_default();
        let new = !subs.list(kind).iter().any(|c| c == name);
        if new {
            subs.list(kind).push(name.to_vec());
        }
        let count = subs.count(kind);
        if new {
            self.space(kind).entry(name.to_vec()).or_default().push(id);
        }
        confirm(reply, kind.sub_name(), Some(name), count);
        client.kind = super::client::ClientKind::PubSub;
    }

    /// Unsubscribes `client` from `names` (all when empty) and writes one
    /// confirmation each; with nothing to leave, one with a null name.
    pub fn unsubscribe(
        &mut self,
        client: &mut Client,
        reply: &mut ReplyBuf<'_>,
        kind: Kind,
        names: &[&[u8]],
    ) {
        let id = client.id;
        if names.is_empty() {
            let all = self
                .clients
                .get_mut(&id)
                .map(|s| s.list(kind).clone())
                .unwrap_or_default();
            if all.is_empty() {
                confirm(reply, kind.unsub_name(), None, self.count(id, kind));
            }
            for name in &all {
                self.leave(id, kind, name);
                confirm(reply, kind.unsub_name(), Some(name), self.count(id, kind));
            }
        } else {
            for name in names {
                self.leave(id, kind, name);
                confirm(reply, kind.unsub_name(), Some(name), self.count(id, kind));
            }
        }
        if self.clients.get(&id).is_none_or(|s| s.total() == 0) {
            self.clients.remove(&id);
            client.kind = super::client::ClientKind::Normal;
        }
    }

    fn count(&self, id: u64, kind: Kind) -> usize {
        self.clients.get(&id).map_or(0, |s| s.count(kind))
    }

    fn leave(&mut self, id: u64, kind: Kind, name: &[u8]) -> bool {
        let Some(subs) = self.clients.get_mut(&id) else {
            return false;
        };
        let list = subs.list(kind);
        let Some(pos) = list.iter().position(|c| c == name) else {
            return false;
        };
        list.remove(pos);
        let space = self.space(kind);
        if let Some(ids) = space.get_mut(name) {
            ids.retain(|&c| c != id);
            if ids.is_empty() {
                space.remove(name);
            }
        }
        true
    }

    /// Drops every subscription of client `id` silently (disconnect,
    /// RESET).
    pub fn forget(&mut self, id: u64) {
        let Some(subs) = self.clients.remove(&id) else {
            return;
        };
        for (kind, list) in [
            (Kind::Channel, subs.channels),
            (Kind::Pattern, subs.patterns),
            (Kind::Shard, subs.shard),
        ] {
            let space = self.space(kind);
            for name in list {
                if let Some(ids) = space.get_mut(&name) {
                    ids.retain(|&c| c != id);
                    if ids.is_empty() {
                        space.remove(&name);
                    }
                }
            }
        }
    }
}

fn confirm(reply: &mut ReplyBuf<'_>, what: &[u8], name: Option<&[u8]>, count: usize) {
    reply.push(3);
    reply.bulk(what);
    match name {
        Some(n) => reply.bulk(n),
        None => reply.null(),
    }
    reply.int(count as i64);
}

/// A message being delivered, encoded once per protocol on demand.
struct Message<'a> {
    parts: [&'a [u8]; 4],
    n: usize,
    resp2: Option<Vec<u8>>,
    resp3: Option<Vec<u8>>,
}

impl Message<'_> {
    fn bytes(&mut self, resp3: bool) -> &[u8] {
        let slot = if resp3 {
            &mut self.resp3
        } else {
            &mut self.resp2
        };
        slot.get_or_insert_with(|| {
            let mut out = Vec::new();
            let mut r = ReplyBuf::new(&mut out, resp3);
            r.push(self.n);
            for p in &self.parts[..self.n] {
                r.bulk(p);
            }
            out
        })
    }
}

/// Sends a message to client `c` (not the caller), closing it when its
/// queued output passes its class's limits (Redis's
/// checkClientOutputBufferLimits).
pub fn deliver(c: &Client, bytes: &[u8], limits: &[obuf::Limits; 3]) {
    let q = &c.bufs;
    if q.killed.get() {
        return;
    }
    let pending = q.pending.get() + bytes.len();
    q.pending.set(pending);
    let class = obuf::class_of(c);
    if limits[class as usize].reached(q, obuf::counted(q, pending)) {
        obuf::close(c, class);
        return;
    }
    let _ = c.tx.send(ToConn::Push(bytes.to_vec()));
}

/// PUBLISH/SPUBLISH: delivers `msg` to the subscribers of `ch` (and, for
/// plain channels, of matching patterns); returns how many received it.
/// The caller, when subscribed, gets its copy in `own` ahead of its reply.
pub fn publish(
    server: &mut super::ServerState,
    caller: Option<&Client>,
    own: &mut Vec<u8>,
    shard: bool,
    ch: &[u8],
    msg: &[u8],
) -> usize {
    let limits = server.obuf_limits;
    let ps = &server.pubsub;
    let held = &mut Vec::new();
    let mut n = 0;
    let mut send = |id: u64, m: &mut Message<'_>| {
        n += 1;
        if let Some(me) = caller.filter(|c| c.id == id) {
            own.extend_from_slice(m.bytes(me.resp3));
        } else if let Some(c) = server.clients.get(&id) {
            deliver(c, m.bytes(c.resp3), &limits);
        } else {
            // The client running a script: its copy is written ahead of
            // the script's reply.
            held.push((id, m.bytes(false).to_vec(), m.bytes(true).to_vec()));
        }
    };
    let space = if shard { &ps.shard } else { &ps.channels };
    if let Some(ids) = space.get(ch) {
        let kind: &[u8] = if shard { b"smessage" } else { b"message" };
        let mut m = Message {
            parts: [kind, ch, msg, b""],
            n: 3,
            resp2: None,
            resp3: None,
        };
        for &id in ids {
            send(id, &mut m);
        }
    }
    if !shard {
        for (pat, ids) in &ps.patterns {
            if !glob_match(pat, ch, false) {
                continue;
            }
            let mut m = Message {
                parts: [b"pmessage", pat, ch, msg],
                n: 4,
                resp2: None,
                resp3: None,
            };
            for &id in ids {
                send(id, &mut m);
            }
        }
    }
    server.pubsub.held.append(held);
    n
}

/// Whether notify-keyspace-events `flags` enable events of `class`
/// (Redis's class characters; `A` stands for every class but `m` and `n`).
fn class_enabled(flags: &str, class: u8) -> bool {
    flags.as_bytes().contains(&class) || (flags.contains('A') && b"g$lshzxetd".contains(&class))
}

/// Redis's notifyKeyspaceEvent: publishes `event` on
/// `__keyspace@<db>__:<key>` and `key` on `__keyevent@<db>__:<event>`, as
/// the configuration asks.
pub fn notify(
    server: &mut super::ServerState,
    caller: Option<&Client>,
    own: &mut Vec<u8>,
    class: u8,
    event: &str,
    db: usize,
    key: &[u8],
) {
    let flags = &server.config.notify_keyspace_events;
    if flags.is_empty() || !class_enabled(flags, class) {
        return;
    }
    let space = flags.contains('K');
    let keyevent = flags.contains('E');
    if space {
        let mut ch = format!("__keyspace@{db}__:").into_bytes();
        ch.extend_from_slice(key);
        publish(server, caller, own, false, &ch, event.as_bytes());
    }
    if keyevent {
        let ch = format!("__keyevent@{db}__:{event}");
        publish(server, caller, own, false, ch.as_bytes(), key);
    }
}

/// Publishes the events the store raised since the last call (`keymiss`,
/// `new`, `expired`), in their order, and has the store record the
/// classes the configuration enables. A copy for `caller`, when it is
/// subscribed, goes to `own`.
pub fn drain_key_events(
    server: &mut super::ServerState,
    store: &mut crate::store::Store,
    caller: Option<&Client>,
    own: &mut Vec<u8>,
) {
    if !store.key_events.is_empty() {
        let log = std::mem::take(&mut store.key_events);
        for e in &log {
            notify(server, caller, own, e.class, e.name(), e.db, &e.key);
        }
        // Keep the allocation for the next events.
        store.key_events = log;
        store.key_events.clear();
    }
    let flags = &server.config.notify_keyspace_events;
    store.key_event_classes = crate::store::KeyEventClasses {
        miss: class_enabled(flags, b'm'),
        new: class_enabled(flags, b'n'),
        expired: class_enabled(flags, b'x'),
    };
}

/// The subscribers of shard channels in `slots` are unsubscribed from them,
/// each told with a `sunsubscribe` message (Redis's
/// pubsubShardUnsubscribeAllChannelsInSlot: the slot moved elsewhere).
pub fn unsubscribe_shard_slots(server: &mut super::ServerState, slots: &[u16]) {
    let limits = server.obuf_limits;
    let channels: Vec<Vec<u8>> = server
        .pubsub
        .shard
        .keys()
        .filter(|ch| slots.contains(&crate::util::crc16::key_hash_slot(ch)))
        .cloned()
        .collect();
    for ch in channels {
        let ids = server.pubsub.shard.get(&ch).cloned().unwrap_or_default();
        for id in ids {
            server.pubsub.leave(id, Kind::Shard, &ch);
            let left = server.pubsub.count(id, Kind::Shard);
            let none_left = server
                .pubsub
                .clients
                .get(&id)
                .is_none_or(|s| s.total() == 0);
            if none_left {
                server.pubsub.clients.remove(&id);
            }
            let Some(c) = server.clients.get_mut(&id) else {
                continue;
            };
            if none_left {
                // Out of pub/sub mode, as Redis moves it.
                c.kind = super::client::ClientKind::Normal;
            }
            let mut out = Vec::with_capacity(ch.len() + 40);
            out.extend_from_slice(if c.resp3 { b">3\r\n" } else { b"*3\r\n" });
            out.extend_from_slice(b"$12\r\nsunsubscribe\r\n");
            out.extend_from_slice(format!("${}\r\n", ch.len()).as_bytes());
            out.extend_from_slice(&ch);
            out.extend_from_slice(format!("\r\n:{left}\r\n").as_bytes());
            deliver(c, &out, &limits);
        }
    }
}
