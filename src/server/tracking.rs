//! Client-side caching (Redis's `tracking.c`): which clients may hold
//! which keys, and the invalidation messages sent when those keys change.
//!
//! A client with CLIENT TRACKING ON has the keys its read-only commands
//! touch remembered in the tracking table (key → client ids); a write to a
//! key sends `invalidate` to each of them and forgets the key. In BCAST
//! mode nothing is remembered: keys written under a client's prefixes are
//! gathered and sent once per event-loop round. Messages go as RESP3
//! pushes, or to the REDIRECT client, which may be a RESP2 subscriber
//! (`__redis__:invalidate` messages).
//!
//! The store records the keys it writes while some client tracks
//! ([`Store::invalidated`]); the command path hands them here after each
//! call, before keyspace events, and between event-loop rounds. The state
//! is kept by client id, as pub/sub's, so a client that goes away is
//! forgotten with its id alone. A server where nobody tracks pays a check
//! of two lengths per command.
//!
//! Where Redis keeps a set of client ids per key, ferrokv gives each
//! connected client that ever tracked a slot number and keeps a bitset of
//! slots per key: a read that is remembered tests one bit. A slot outlives
//! CLIENT TRACKING OFF and RESET (the keys read before still invalidate
//! once tracking is back on, as in Redis) and is freed at disconnection;
//! its bits are cleared in a sweep before the slot serves another client,
//! counted on as the dead ids Redis keeps until the key changes.

use std::collections::{BTreeMap, BTreeSet};

use hashbrown::HashMap;

use super::client::{Client, ClientKind};
use super::keyspec::{self, KeyRef};
use super::table::{flag, CommandId};
use super::ServerState;
use crate::net::reply::ReplyBuf;
use crate::net::request::Argv;
use crate::store::keylog::KeyLog;
use crate::store::Store;

/// One client's tracking mode (Redis's CLIENT_TRACKING_* flags).
#[derive(Default, Debug)]
pub struct ClientTracking {
    /// Client id the messages go to (0: the client itself).
    pub redirect: u64,
    /// BCAST: prefixes instead of remembered keys.
    pub bcast: bool,
    /// OPTIN: only the commands after CLIENT CACHING YES are tracked.
    pub optin: bool,
    /// OPTOUT: the commands after CLIENT CACHING NO are not tracked.
    pub optout: bool,
    /// CLIENT CACHING was given for the next command.
    pub caching: bool,
    /// NOLOOP: no messages about the client's own writes.
    pub noloop: bool,
    /// The redirect client went away.
    pub broken_redirect: bool,
    /// BCAST prefixes, in Redis's (byte) order.
    pub prefixes: BTreeSet<Vec<u8>>,
    /// The client's slot in the tracking table.
    slot: u32,
}

/// Keys written under one BCAST prefix in this round, and who listens.
#[derive(Default)]
struct Bcast {
    /// Key → id of the client that wrote it last (0: the server itself).
    keys: BTreeMap<Vec<u8>, u64>,
    /// Clients registered for the prefix.
    clients: BTreeSet<u64>,
}

/// What an invalidation message carries.
enum Payload<'a> {
    /// One key: `*1 $key`.
    Key(&'a [u8]),
    /// Already encoded keys (BCAST's array).
    Proto(&'a [u8]),
    /// Every key (a flush): the tracking client's null.
    Null,
}

/// The clients that may cache one key: a bit per client slot.
#[derive(Default)]
struct Readers {
    /// Slots 0..64.
    low: u64,
    /// Slots from 64 on, 64 per word.
    high: Box<[u64]>,
    /// Bits of disconnected clients swept away: still items until the key
    /// changes, as Redis's dead ids are.
    dead: u32,
}

impl Readers {
    /// Sets `slot`'s bit; true when it was clear.
    #[inline]
    fn insert(&mut self, slot: u32) -> bool {
        let (word, bit) = (slot as usize / 64, 1u64 << (slot % 64));
        let w = if word == 0 {
            &mut self.low
        } else {
            if self.high.len() < word {
                let mut grown = vec![0; word];
                grown[..self.high.len()].copy_from_slice(&self.high);
                self.high = grown.into_boxed_slice();
            }
            &mut self.high[word - 1]
        };
        let was_clear = *w & bit == 0;
        *w |= bit;
        was_clear
    }

    /// Ids in the set, counting the dead.
    fn len(&self) -> usize {
        let bits: u32 = self.high.iter().map(|w| w.count_ones()).sum();
        (self.low.count_ones() + bits + self.dead) as usize
    }

    /// The slots whose bits are set.
    fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(self.low)
            .chain(self.high.iter().copied())
            .enumerate()
            .flat_map(|(i, mut w)| {
                std::iter::from_fn(move || {
                    if w == 0 {
                        return None;
                    }
                    let b = w.trailing_zeros();
                    w &= w - 1;
                    Some(i as u32 * 64 + b)
                })
            })
    }
}

/// Slot numbers of the clients that tracked, by id and by number.
#[derive(Default)]
struct Slots {
    /// Client id → slot.
    of: HashMap<u64, u32>,
    /// Slot → client id (0: free).
    ids: Vec<u64>,
    /// Free slots with no bits left in the table.
    clean: Vec<u32>,
    /// Free slots whose bits may still be in the table.
    dirty: Vec<u32>,
}

/// The server's tracking state.
#[derive(Default)]
pub struct Tracking {
    /// Clients with tracking on, by id.
    clients: HashMap<u64, ClientTracking>,
    /// Key → the clients that may cache it (Redis's TrackingTable).
    table: HashMap<Vec<u8>, Readers>,
    /// Slot numbers of the clients in the table.
    slots: Slots,
    /// Ids in the table, over all keys (tracking_total_items).
    items: usize,
    /// BCAST prefixes (Redis's PrefixTable).
    prefixes: BTreeMap<Vec<u8>, Bcast>,
    /// Invalidations for the client running a command, sent after its
    /// reply (None: a flush).
    pending: Vec<Option<Vec<u8>>>,
    /// Messages for the client running a command as another client's
    /// redirect target, written ahead of its reply.
    ahead: Vec<u8>,
    /// The top-level client running a command (0 between commands).
    current: u64,
    /// Its (RESP3, subscriber), while it is out of the client table.
    current_proto: (bool, bool),
    /// A command is executing (Redis's fixed_time_expire): invalidations
    /// for `current` wait for its reply.
    in_call: bool,
    /// The keys the running script declared, when its caller tracks them
    /// (a read inside the script remembers them, as in Redis 7.0).
    script_keys: Option<Vec<Vec<u8>>>,
    /// Some client has CLIENT CACHING pending (so commands need not look
    /// for one).
    caching_given: bool,
    /// Rounds in a row the table stayed over tracking-table-max-keys.
    over_limit_rounds: u32,
    /// Reused for key positions.
    key_refs: Vec<KeyRef>,
    /// Reused for the ids a key's invalidation goes to.
    targets: Vec<u64>,
}

impl Tracking {
    /// True when some client tracks or the table still holds keys: the
    /// command path then reports reads and writes here.
    #[inline]
    pub fn in_use(&self) -> bool {
        !self.clients.is_empty() || !self.table.is_empty()
    }

    /// Client `id`'s tracking mode, when it tracks.
    pub fn of(&self, id: u64) -> Option<&ClientTracking> {
        self.clients.get(&id)
    }

    /// INFO's tracking_clients.
    pub fn num_clients(&self) -> usize {
        self.clients.len()
    }

    /// INFO's tracking_total_keys.
    pub fn total_keys(&self) -> usize {
        self.table.len()
    }

    /// INFO's tracking_total_items.
    pub fn total_items(&self) -> usize {
        self.items
    }

    /// The bytes of client `id`'s BCAST prefixes, with `each` more per
    /// prefix (its client memory figure).
    pub fn prefix_bytes(&self, id: u64, each: usize) -> usize {
        if self.clients.is_empty() {
            return 0;
        }
        self.clients
            .get(&id)
            .map_or(0, |t| t.prefixes.iter().map(|p| p.len() + each).sum())
    }

    /// INFO's tracking_total_prefixes.
    pub fn total_prefixes(&self) -> usize {
        self.prefixes.len()
    }

    /// Prefix collisions with the client's prefixes or among `new`
    /// (checkPrefixCollisionsOrReply): the error text, if any.
    pub fn prefix_collision(&self, id: u64, new: &[&[u8]]) -> Option<String> {
        let overlap = |a: &[u8], b: &[u8]| {
            let n = a.len().min(b.len());
            a[..n] == b[..n]
        };
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        for (i, p) in new.iter().enumerate() {
            if let Some(t) = self.clients.get(&id) {
                if let Some(old) = t.prefixes.iter().find(|old| overlap(old, p)) {
                    return Some(format!(
                        "Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a \
                         single client must not overlap.",
                        text(p),
                        text(old)
                    ));
                }
            }
            if let Some(q) = new[i + 1..].iter().find(|q| overlap(p, q)) {
                return Some(format!(
                    "Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a \
                     single client must not overlap.",
                    text(p),
                    text(q)
                ));
            }
        }
        None
    }

    /// CLIENT TRACKING ON (enableTracking): the mode's flags are replaced,
    /// BCAST prefixes added to those the client has.
    pub fn enable(&mut self, id: u64, redirect: u64, mode: ClientTracking, prefixes: &[&[u8]]) {
        // A BCAST client remembers nothing: it gets a slot once it may.
        let slot = match self.slots.of.get(&id) {
            Some(&slot) => slot,
            None if mode.bcast => u32::MAX,
            None => self.new_slot(id),
        };
        let t = self.clients.entry(id).or_default();
        t.slot = slot;
        t.redirect = redirect;
        t.bcast = mode.bcast;
        t.optin = mode.optin;
        t.optout = mode.optout;
        t.noloop = mode.noloop;
        t.broken_redirect = false;
        if !mode.bcast {
            return;
        }
        let empty: &[&[u8]] = &[b""];
        for &p in if prefixes.is_empty() { empty } else { prefixes } {
            let bs = self.prefixes.entry(p.to_vec()).or_default();
            if bs.clients.insert(id) {
                t.prefixes.insert(p.to_vec());
            }
        }
    }

    /// CLIENT TRACKING OFF, RESET and disconnection (disableTracking): the
    /// client's table entries are left to be dropped lazily, as in Redis.
    pub fn forget(&mut self, id: u64) {
        let Some(t) = self.clients.remove(&id) else {
            return;
        };
        for p in t.prefixes {
            if let Some(bs) = self.prefixes.get_mut(&p) {
                bs.clients.remove(&id);
                if bs.clients.is_empty() {
                    self.prefixes.remove(&p);
                }
            }
        }
    }

    /// Client `id` disconnected: after [`Tracking::forget`], its slot is
    /// freed, to serve another client once its bits are swept.
    pub fn disconnected(&mut self, id: u64) {
        if let Some(slot) = self.slots.of.remove(&id) {
            self.slots.ids[slot as usize] = 0;
            self.slots.dirty.push(slot);
        }
    }

    /// A slot for client `id`: a clean free one, else a new one while
    /// there are at most twice as many slots as clients holding one (and
    /// 64), else the dirty ones swept clean first. Sweeps so come once per
    /// as many disconnections as there are slots in use.
    fn new_slot(&mut self, id: u64) -> u32 {
        let sl = &mut self.slots;
        if sl.clean.is_empty() && sl.ids.len() >= (2 * sl.of.len()).max(64) {
            self.sweep();
        }
        let sl = &mut self.slots;
        let slot = match sl.clean.pop() {
            Some(slot) => slot,
            None => {
                sl.ids.push(0);
                sl.ids.len() as u32 - 1
            }
        };
        sl.ids[slot as usize] = id;
        sl.of.insert(id, slot);
        slot
    }

    /// Clears the dirty slots' bits from every key, counting them as dead
    /// ids, and makes the slots clean.
    fn sweep(&mut self) {
        let sl = &mut self.slots;
        if sl.dirty.is_empty() {
            return;
        }
        let mut mask = vec![0u64; sl.ids.len().div_ceil(64)];
        for &slot in &sl.dirty {
            mask[slot as usize / 64] |= 1 << (slot % 64);
        }
        for r in self.table.values_mut() {
            let mut gone = (r.low & mask[0]).count_ones();
            r.low &= !mask[0];
            for (w, m) in r.high.iter_mut().zip(&mask[1..]) {
                gone += (*w & m).count_ones();
                *w &= !m;
            }
            r.dead += gone;
        }
        sl.clean.append(&mut sl.dirty);
        // The lowest slots are handed out first, keeping bitsets short.
        sl.clean.sort_unstable_by(|a, b| b.cmp(a));
    }

    /// CLIENT CACHING YES|NO for the next command.
    pub fn set_caching(&mut self, id: u64) {
        if let Some(t) = self.clients.get_mut(&id) {
            t.caching = true;
            self.caching_given = true;
        }
    }

    /// Remembers `keys` for the client in `slot` (trackingRememberKeys).
    fn remember<'k>(&mut self, slot: u32, keys: impl Iterator<Item = &'k [u8]>) {
        for k in keys {
            let readers = match self.table.get_mut(k) {
                Some(r) => r,
                None => self.table.entry(k.to_vec()).or_default(),
            };
            if readers.insert(slot) {
                self.items += 1;
            }
        }
    }

    /// The slot of client `id` when its reads are remembered now
    /// (OPTIN/OPTOUT with CLIENT CACHING); never in BCAST mode.
    fn remembers(&self, id: u64) -> Option<u32> {
        let t = self.clients.get(&id)?;
        let opted_out = (t.optin && !t.caching) || (t.optout && t.caching);
        (!t.bcast && !opted_out).then_some(t.slot)
    }
}

/// Whether client `id` is connected (Redis's lookupClientByID): in the
/// client table, or the one running a command.
fn exists(server: &ServerState, id: u64) -> bool {
    id == server.tracking.current || server.clients.contains_key(&id)
}

/// (RESP3, subscriber) of client `id`; the running client's are `current`.
fn protocol_of(server: &ServerState, id: u64, current: Option<&Client>) -> Option<(bool, bool)> {
    let c = match current.filter(|c| c.id == id) {
        Some(c) => c,
        None if id == server.tracking.current => return Some(server.tracking.current_proto),
        None => server.clients.get(&id)?,
    };
    Some((c.resp3, c.kind == ClientKind::PubSub))
}

/// Writes `bytes` to client `id`: ahead of the running client's reply, or
/// into another client's output.
fn emit(server: &mut ServerState, id: u64, bytes: &[u8]) {
    if id == server.tracking.current {
        server.tracking.ahead.extend_from_slice(bytes);
    } else if let Some(c) = server.clients.get(&id) {
        super::pubsub::deliver(c, bytes, &server.obuf_limits);
    }
}

/// Sends one invalidation message on behalf of tracking client `id`
/// (sendTrackingMessage): to it in RESP3, to its redirect client in RESP3
/// or, for a RESP2 subscriber, on `__redis__:invalidate`. A redirect
/// client that went away marks the redirect broken and tells a RESP3
/// client so.
fn send(server: &mut ServerState, id: u64, payload: Payload<'_>, current: Option<&Client>) {
    let Some(t) = server.tracking.clients.get(&id) else {
        return;
    };
    let redirect = t.redirect;
    let Some((own_resp3, _)) = protocol_of(server, id, current) else {
        return;
    };
    let mut msg = Vec::new();
    let target = if redirect != 0 {
        if !exists(server, redirect) {
            if let Some(t) = server.tracking.clients.get_mut(&id) {
                t.broken_redirect = true;
            }
            if own_resp3 {
                let mut r = ReplyBuf::new(&mut msg, true);
                r.push(2);
                r.bulk(b"tracking-redir-broken");
                r.int(redirect as i64);
                emit(server, id, &msg);
            }
            return;
        }
        redirect
    } else {
        id
    };
    let Some((resp3, subscriber)) = protocol_of(server, target, current) else {
        return;
    };
    let mut r = ReplyBuf::new(&mut msg, resp3);
    if resp3 {
        r.push(2);
        r.bulk(b"invalidate");
    } else if redirect != 0 && subscriber {
        r.array(3);
        r.bulk(b"message");
        r.bulk(b"__redis__:invalidate");
    } else {
        // RESP2 has no pushes on the connection itself.
        return;
    }
    match payload {
        Payload::Key(k) => {
            r.array(1);
            r.bulk(k);
        }
        Payload::Proto(p) => r.raw().extend_from_slice(p),
        // The tracking client's own null, whoever receives it (Redis
        // writes shared.null[c->resp] of the tracking client).
        Payload::Null => ReplyBuf::new(r.raw(), own_resp3).null(),
    }
    emit(server, target, &msg);
}

/// A key changed (trackingInvalidateKey): BCAST prefixes note it (when
/// `bcast`), and each client that may cache it is told, the running one
/// after its reply.
fn invalidate_key(server: &mut ServerState, key: &[u8], by: u64, bcast: bool) {
    let tr = &mut server.tracking;
    if bcast && !tr.prefixes.is_empty() {
        for (p, bs) in tr.prefixes.iter_mut() {
            if key.starts_with(p) {
                match bs.keys.get_mut(key) {
                    Some(who) => *who = by,
                    None => {
                        bs.keys.insert(key.to_vec(), by);
                    }
                }
            }
        }
    }
    let Some(readers) = tr.table.remove(key) else {
        return;
    };
    tr.items -= readers.len();
    // In Redis's order: its id sets are radix trees keyed by the ids'
    // bytes in memory (little-endian).
    let mut ids = std::mem::take(&mut tr.targets);
    ids.extend(readers.slots().map(|s| tr.slots.ids[s as usize]));
    ids.retain(|&id| id != 0);
    ids.sort_unstable_by_key(|id| id.swap_bytes());
    for &id in &ids {
        let tr = &mut server.tracking;
        let Some(t) = tr.clients.get(&id) else {
            continue;
        };
        // Keys remembered before the client switched to BCAST are not
        // sent.
        if t.bcast || (t.noloop && id == tr.current) {
            continue;
        }
        if id == tr.current && tr.in_call {
            tr.pending.push(Some(key.to_vec()));
        } else {
            send(server, id, Payload::Key(key), None);
        }
    }
    ids.clear();
    server.tracking.targets = ids;
}

/// A flush (trackingInvalidateKeysOnFlush): every tracking client gets a
/// null, and the table is emptied.
fn invalidate_all(server: &mut ServerState) {
    let ids: Vec<u64> = server.tracking.clients.keys().copied().collect();
    for id in ids {
        let tr = &mut server.tracking;
        if id == tr.current && tr.in_call {
            tr.pending.push(None);
        } else {
            send(server, id, Payload::Null, None);
        }
    }
    let tr = &mut server.tracking;
    tr.table = HashMap::new();
    tr.items = 0;
    // No bits are left anywhere.
    tr.slots.clean.append(&mut tr.slots.dirty);
}

/// Hands the keys the store wrote since the last call to tracking; `by`
/// is the client that wrote them (0: the server itself).
/// The store records written keys exactly while tracking is in use.
#[inline]
pub fn drain(server: &mut ServerState, store: &mut Store, by: u64) {
    if store.invalidated.as_ref().is_some_and(KeyLog::is_empty) && server.tracking.in_use() {
        return;
    }
    drain_log(server, store, by);
}

fn drain_log(server: &mut ServerState, store: &mut Store, by: u64) {
    let Some(list) = store.invalidated.as_mut() else {
        if server.tracking.in_use() {
            store.invalidated = Some(KeyLog::default());
        }
        return;
    };
    if list.is_empty() {
        if !server.tracking.in_use() {
            store.invalidated = None;
        }
        return;
    }
    let mut list = std::mem::take(list);
    for k in list.iter() {
        match k {
            Some(key) => invalidate_key(server, key, by, true),
            None => invalidate_all(server),
        }
    }
    list.clear();
    // The allocation is kept for the next command.
    store.invalidated = Some(list);
}

/// Before a client's command (processCommand): the running client is
/// known, and the table is brought under tracking-table-max-keys.
pub fn before_command(server: &mut ServerState, store: &mut Store, client: &Client) {
    server.tracking.current = client.id;
    server.tracking.current_proto = (client.resp3, client.kind == ClientKind::PubSub);
    drain(server, store, 0);
    limit_used_slots(server);
}

/// Before a command's handler runs: a script's declared keys, when its
/// caller's reads are remembered.
pub fn before_handler(server: &mut ServerState, client: &Client, id: CommandId, argv: Argv<'_>) {
    server.tracking.in_call = true;
    if server.table.commands[id].flags & flag::SKIP_MONITOR != 0
        && server.tracking.remembers(client.id).is_some()
    {
        let keys = keys_of(server, id, argv);
        server.tracking.script_keys = Some(keys);
    }
}

/// The keys of `argv` for command `id`.
fn keys_of(server: &mut ServerState, id: CommandId, argv: Argv<'_>) -> Vec<Vec<u8>> {
    let cmd = &server.table.commands[id];
    let refs = &mut server.tracking.key_refs;
    keyspec::find_keys_by_proc(cmd.key_finder, &cmd.key_specs, &argv, refs);
    refs.iter().map(|k| argv.get(k.pos).to_vec()).collect()
}

/// After a command's handler ran (Redis's call()): its writes are sent,
/// then the keys a read-only command read are remembered for the client,
/// or, inside a script, the script's declared keys for its caller.
pub fn after_handler(
    server: &mut ServerState,
    store: &mut Store,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
) {
    drain(server, store, client.id);
    let flags = server.table.commands[id].flags;
    // EVAL_RO and friends are read-only, but their keys are remembered by
    // the reads inside.
    if flags & flag::READONLY == 0 || flags & (flag::SKIP_MONITOR | flag::PUBSUB) != 0 {
        return;
    }
    if client.script {
        let tr = &mut server.tracking;
        if let Some(keys) = tr.script_keys.take() {
            if let Some(slot) = tr.remembers(tr.current) {
                tr.remember(slot, keys.iter().map(Vec::as_slice));
            }
            tr.script_keys = Some(keys);
        }
        return;
    }
    let Some(slot) = server.tracking.remembers(client.id) else {
        return;
    };
    let cmd = &server.table.commands[id];
    if let Some((pos, _)) = cmd.single_key {
        server
            .tracking
            .remember(slot, std::iter::once(argv.get(pos)));
        return;
    }
    let refs = &mut server.tracking.key_refs;
    keyspec::find_keys_by_proc(cmd.key_finder, &cmd.key_specs, &argv, refs);
    let refs = std::mem::take(refs);
    server
        .tracking
        .remember(slot, refs.iter().map(|k| argv.get(k.pos)));
    server.tracking.key_refs = refs;
}

/// After a client's command (afterCommand): messages for the client
/// written around its reply (those as a redirect target ahead of it, its
/// own invalidations after it), and CLIENT CACHING spent unless the
/// command was CLIENT or the client is inside MULTI.
pub fn after_command(
    server: &mut ServerState,
    store: &mut Store,
    client: &Client,
    out: &mut Vec<u8>,
    mark: usize,
) {
    drain(server, store, client.id);
    let tr = &mut server.tracking;
    tr.in_call = false;
    tr.script_keys = None;
    if !tr.ahead.is_empty() {
        let ahead = std::mem::take(&mut tr.ahead);
        out.splice(mark..mark, ahead);
    }
    for key in std::mem::take(&mut server.tracking.pending) {
        match &key {
            Some(k) => send(server, client.id, Payload::Key(k), Some(client)),
            None => send(server, client.id, Payload::Null, Some(client)),
        }
    }
    out.append(&mut server.tracking.ahead);
    let tr = &mut server.tracking;
    tr.current = 0;
    if tr.caching_given && client.multi.is_none() && !client.last_cmd.starts_with("client|") {
        if let Some(t) = tr.clients.get_mut(&client.id) {
            t.caching = false;
        }
        tr.caching_given = tr.clients.values().any(|t| t.caching);
    }
}

/// Keeps the table within tracking-table-max-keys (trackingLimitUsedSlots):
/// keys are dropped, their clients told as if the keys changed, with more
/// effort each round the table stays over.
pub fn limit_used_slots(server: &mut ServerState) {
    let max = server.config.tracking_table_max_keys as usize;
    if max == 0 || server.tracking.table.len() <= max {
        server.tracking.over_limit_rounds = 0;
        return;
    }
    let mut effort = 100 * (server.tracking.over_limit_rounds as usize + 1);
    while effort > 0 {
        effort -= 1;
        let Some(key) = server.tracking.table.keys().next().cloned() else {
            break;
        };
        invalidate_key(server, &key, 0, false);
        if server.tracking.table.len() <= max {
            server.tracking.over_limit_rounds = 0;
            return;
        }
    }
    server.tracking.over_limit_rounds += 1;
}

/// The keys of `keys` as a RESP array, leaving out those last written by
/// `skip` (NOLOOP); None when none is left.
fn broadcast_proto(keys: &BTreeMap<Vec<u8>, u64>, skip: Option<u64>) -> Option<Vec<u8>> {
    let n = keys.values().filter(|&&by| Some(by) != skip).count();
    if n == 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut r = ReplyBuf::new(&mut out, false);
    r.array(n);
    for (k, &by) in keys {
        if Some(by) != skip {
            r.bulk(k);
        }
    }
    Some(out)
}

/// Between event-loop rounds (beforeSleep): what changed outside
/// commands is sent, the table kept in its limit, and each BCAST prefix's
/// keys broadcast to its clients (trackingBroadcastInvalidationMessages).
/// False when tracking is not in use and nothing was done.
pub fn before_sleep(server: &mut ServerState, store: &mut Store) -> bool {
    if store.invalidated.is_none() && !server.tracking.in_use() {
        return false;
    }
    server.tracking.current = 0;
    drain(server, store, 0);
    limit_used_slots(server);
    let prefixes: Vec<Vec<u8>> = server
        .tracking
        .prefixes
        .iter()
        .filter(|(_, bs)| !bs.keys.is_empty())
        .map(|(p, _)| p.clone())
        .collect();
    for p in prefixes {
        let Some(bs) = server.tracking.prefixes.get_mut(&p) else {
            continue;
        };
        let keys = std::mem::take(&mut bs.keys);
        let clients: Vec<u64> = bs.clients.iter().copied().collect();
        let Some(common) = broadcast_proto(&keys, None) else {
            continue;
        };
        for id in clients {
            let noloop = server.tracking.clients.get(&id).is_some_and(|t| t.noloop);
            if noloop {
                if let Some(own) = broadcast_proto(&keys, Some(id)) {
                    send(server, id, Payload::Proto(&own), None);
                }
            } else {
                send(server, id, Payload::Proto(&common), None);
            }
        }
    }
    true
}
