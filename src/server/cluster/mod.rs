//! Redis Cluster's node table and slot map (Redis's `clusterState` and
//! `clusterNode` in `cluster.c`): who this node is, the nodes it knows,
//! which master serves each of the 16,384 hash slots, the slots being
//! migrated or imported, the epochs, and the cluster's state.
//!
//! Nodes live in one table keyed by a number given out once
//! ([`NodeKey`]), so the slot map is 16,384 small integers rather than
//! references; names (40 hex digits) are looked up through an index.
//! The configuration file (`nodes.conf`) is in `nodes_conf.rs`, request
//! routing (`getNodeByQuery`) in `route.rs`.

pub mod bus;
pub mod cron;
pub mod failover;
pub mod gossip;
pub mod msg;
pub mod nodes_conf;
pub mod route;

use std::collections::{BTreeMap, HashMap};

use crate::server::ServerState;
use crate::store::Store;

pub use crate::util::crc16::{key_hash_slot, SLOTS};

/// Node flags (`CLUSTER_NODE_*`), as the bus carries them.
pub mod node_flag {
    /// A master.
    pub const MASTER: u16 = 1;
    /// A replica.
    pub const SLAVE: u16 = 2;
    /// Not answering: failure not yet agreed.
    pub const PFAIL: u16 = 4;
    /// Failed, by a majority of masters.
    pub const FAIL: u16 = 8;
    /// This node.
    pub const MYSELF: u16 = 16;
    /// The first PING has not been answered yet.
    pub const HANDSHAKE: u16 = 32;
    /// Its address is unknown.
    pub const NOADDR: u16 = 64;
    /// Send it a MEET.
    pub const MEET: u16 = 128;
    /// A master replicas may migrate to.
    pub const MIGRATE_TO: u16 = 256;
    /// A replica that will not fail over.
    pub const NOFAILOVER: u16 = 512;
}
use node_flag as nf;

/// The flags CLUSTER NODES shows, in Redis's order.
const FLAG_NAMES: &[(u16, &str)] = &[
    (nf::MYSELF, "myself"),
    (nf::MASTER, "master"),
    (nf::SLAVE, "slave"),
    (nf::PFAIL, "fail?"),
    (nf::FAIL, "fail"),
    (nf::HANDSHAKE, "handshake"),
    (nf::NOADDR, "noaddr"),
    (nf::NOFAILOVER, "nofailover"),
];

/// Length of a node name.
pub const NAME_LEN: usize = 40;
/// The bus port is the client port plus this, unless `cluster-port` says.
pub const PORT_INCR: u32 = 10000;

/// A node's number in [`ClusterState::nodes`]; never reused.
pub type NodeKey = u32;
/// The slot map's "no node".
const NONE: NodeKey = NodeKey::MAX;

/// One node as this one sees it (`clusterNode`).
#[derive(Clone, Debug)]
pub struct Node {
    /// 40 lowercase hex digits.
    pub name: String,
    /// [`node_flag`] bits.
    pub flags: u16,
    /// The epoch of its slot configuration.
    pub config_epoch: u64,
    /// The slots it serves, one bit each.
    pub slots: Box<[u8; SLOTS / 8]>,
    /// How many bits of `slots` are set.
    pub numslots: usize,
    /// Its master, when a replica known to have one.
    pub master: Option<NodeKey>,
    /// Its replicas, when a master.
    pub replicas: Vec<NodeKey>,
    /// When it was created (ms).
    pub ctime: u64,
    /// When the unanswered PING was sent (ms), 0 when none.
    pub ping_sent: u64,
    /// When the last PONG came (ms).
    pub pong_received: u64,
    /// When anything last came from it (ms).
    pub data_received: u64,
    /// When it was flagged FAIL (ms).
    pub fail_time: u64,
    /// When this node last voted for one of its replicas (ms).
    pub voted_time: u64,
    /// When its replication offset was last learned (ms).
    pub repl_offset_time: u64,
    /// Since when it has been a master without working replicas (ms).
    pub orphaned_time: u64,
    /// Its replication offset, as last learned.
    pub repl_offset: u64,
    /// Its IP address, empty while unknown.
    pub ip: String,
    /// `cluster-announce-hostname`, empty when none.
    pub hostname: String,
    /// Its client port.
    pub port: u16,
    /// Its plaintext port when `port` is TLS (0 here).
    pub pport: u16,
    /// Its bus port.
    pub cport: u16,
    /// The link this node opened to it.
    pub link: Option<u64>,
    /// The link it opened to this node.
    pub inbound_link: Option<u64>,
    /// (reporter, ms): masters that said it is failing, and when.
    pub fail_reports: Vec<(NodeKey, u64)>,
    /// The number of the last PING whose gossip named it.
    pub last_in_ping_gossip: u64,
}

impl Node {
    /// A node with `name` and `flags`, knowing nothing else yet.
    pub fn new(name: String, flags: u16, now: u64) -> Node {
        Node {
            name,
            flags,
            config_epoch: 0,
            slots: Box::new([0; SLOTS / 8]),
            numslots: 0,
            master: None,
            replicas: Vec::new(),
            ctime: now,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            voted_time: 0,
            repl_offset_time: 0,
            orphaned_time: 0,
            repl_offset: 0,
            ip: String::new(),
            hostname: String::new(),
            port: 0,
            pport: 0,
            cport: 0,
            link: None,
            inbound_link: None,
            fail_reports: Vec::new(),
            last_in_ping_gossip: 0,
        }
    }

    /// True for a master.
    pub fn is_master(&self) -> bool {
        self.flags & nf::MASTER != 0
    }

    /// True for a replica.
    pub fn is_replica(&self) -> bool {
        self.flags & nf::SLAVE != 0
    }

    /// True when flagged FAIL.
    pub fn failed(&self) -> bool {
        self.flags & nf::FAIL != 0
    }

    /// True when flagged PFAIL.
    pub fn timed_out(&self) -> bool {
        self.flags & nf::PFAIL != 0
    }

    /// True while the first PING is unanswered.
    pub fn in_handshake(&self) -> bool {
        self.flags & nf::HANDSHAKE != 0
    }

    /// Whether it serves `slot`.
    pub fn has_slot(&self, slot: usize) -> bool {
        self.slots[slot / 8] & (1 << (slot % 8)) != 0
    }

    /// Sets the bit of `slot`; the old value.
    fn set_slot_bit(&mut self, slot: usize) -> bool {
        let old = self.has_slot(slot);
        self.slots[slot / 8] |= 1 << (slot % 8);
        if !old {
            self.numslots += 1;
        }
        old
    }

    /// Clears the bit of `slot`; the old value.
    fn clear_slot_bit(&mut self, slot: usize) -> bool {
        let old = self.has_slot(slot);
        self.slots[slot / 8] &= !(1 << (slot % 8));
        if old {
            self.numslots -= 1;
        }
        old
    }

    /// The flags as CLUSTER NODES lists them ("myself,master").
    pub fn flag_names(&self) -> String {
        let names: Vec<&str> = FLAG_NAMES
            .iter()
            .filter(|(f, _)| self.flags & f != 0)
            .map(|(_, n)| *n)
            .collect();
        if names.is_empty() {
            "noflags".to_string()
        } else {
            names.join(",")
        }
    }
}

/// The cluster's state as this node sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// Every slot is served (or coverage is not required) and a majority
    /// of masters is reachable.
    Ok,
    /// Not so.
    Fail,
}

/// Things to do before the event loop sleeps (`todo_before_sleep`).
pub mod todo {
    /// Run the failover logic of a replica.
    pub const HANDLE_FAILOVER: u8 = 1;
    /// Re-evaluate the cluster's state.
    pub const UPDATE_STATE: u8 = 2;
    /// Write nodes.conf.
    pub const SAVE_CONFIG: u8 = 4;
    /// Write nodes.conf and fsync it.
    pub const FSYNC_CONFIG: u8 = 8;
    /// Run the manual failover logic.
    pub const HANDLE_MANUALFAILOVER: u8 = 16;
}

/// Bus message types, by number (`CLUSTERMSG_TYPE_*`).
pub const MESSAGE_TYPES: [&str; 11] = [
    "ping",
    "pong",
    "meet",
    "fail",
    "publish",
    "auth-req",
    "auth-ack",
    "update",
    "mfstart",
    "module",
    "publishshard",
];

/// The cluster as this node knows it (`clusterState`).
pub struct ClusterState {
    /// This node's key.
    pub myself: NodeKey,
    /// The greatest epoch seen.
    pub current_epoch: u64,
    /// The epoch of the last vote given.
    pub last_vote_epoch: u64,
    /// Ok or failing.
    pub state: Health,
    /// Masters serving at least one slot.
    pub size: usize,
    nodes: BTreeMap<NodeKey, Node>,
    by_name: HashMap<String, NodeKey>,
    next_key: NodeKey,
    slots: Box<[NodeKey]>,
    /// Slot -> the node it is being migrated to.
    pub migrating_to: HashMap<u16, NodeKey>,
    /// Slot -> the node it is being imported from.
    pub importing_from: HashMap<u16, NodeKey>,
    /// Bus messages sent, by type.
    pub sent: [u64; 11],
    /// Bus messages received, by type.
    pub received: [u64; 11],
    /// Links closed for passing cluster-link-sendbuf-limit.
    pub links_buffer_limit_exceeded: u64,
    /// [`todo`] bits.
    pub todo: u8,
    /// Node names forgotten recently, with when they may come back (ms).
    pub blacklist: HashMap<String, u64>,
    /// Slots this node (or its master) stopped serving since the last
    /// before-sleep: their shard channels' subscribers are unsubscribed
    /// there (Redis's removeChannelsInSlot).
    pub lost_slots: Vec<u16>,
    /// When the state was first evaluated (ms); 0 before.
    pub first_update_ms: u64,
    /// When this node last found itself in a minority (ms).
    pub among_minority_ms: u64,
    /// The path of nodes.conf.
    pub config_file: std::path::PathBuf,
    /// nodes.conf held open with an exclusive lock for the process's life.
    pub lock: Option<std::fs::File>,
    /// Bus links by id.
    pub links: HashMap<u64, Link>,
    /// Slots whose owner stopped claiming them in its messages.
    pub owner_not_claiming: Box<[u8; SLOTS / 8]>,
    /// PINGs sent so far (to not gossip twice about a node in one).
    pub pings_sent: u64,
    /// Nodes in PFAIL (with an address), counted by the cron.
    pub pfail_nodes: usize,
    /// Cron runs so far.
    pub cron_runs: u64,
    /// The replica-side election and the manual failover.
    pub election: failover::Election,
    /// `cluster-preferred-endpoint-type`: how redirections name a node.
    pub endpoint_type: String,
    /// The `cluster-announce-ip` last applied: this node's IP changes only
    /// when that directive does (clusterUpdateMyselfIp's `prev_ip`).
    pub announced_ip: String,
    /// `cluster-allow-reads-when-down` and
    /// `cluster-allow-pubsubshard-when-down`, kept here so routing a
    /// command reads no configuration.
    pub allow_when_down: (bool, bool),
}

/// A bus link as the cluster sees it (`clusterLink`).
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// The node it belongs to, once known.
    pub node: Option<NodeKey>,
    /// Accepted from the node (rather than opened to it).
    pub inbound: bool,
    /// When it was created (ms).
    pub ctime: u64,
    /// Still connecting.
    pub connecting: bool,
}

/// Number of keys of database 0 in `slot` (countKeysInSlot), from the
/// slot index cluster mode keeps.
pub fn count_keys_in_slot(store: &Store, slot: u16) -> usize {
    match store.dbs[0].dict.slot_index() {
        Some(ix) => ix.count(slot),
        None => keys_in_slot(store, slot, usize::MAX).len(),
    }
}

/// `cluster-node-timeout` in milliseconds.
pub fn node_timeout(server: &ServerState) -> u64 {
    server
        .config
        .get_i64("cluster-node-timeout")
        .unwrap_or(15000)
        .max(0) as u64
}

/// Whether database 0 holds a key of `slot`.
pub fn has_keys_in_slot(store: &Store, slot: u16) -> bool {
    count_keys_in_slot(store, slot) > 0
}

/// The keys of database 0 in `slot`, at most `max`.
pub fn keys_in_slot(store: &Store, slot: u16, max: usize) -> Vec<Vec<u8>> {
    if let Some(ix) = store.dbs[0].dict.slot_index() {
        return ix.keys(slot).take(max).map(<[u8]>::to_vec).collect();
    }
    let mut keys = Vec::new();
    store.dbs[0].dict.for_each(|e| {
        if keys.len() < max && key_hash_slot(e.key()) == slot {
            keys.push(e.key().to_vec());
        }
    });
    keys
}

/// delKeysInSlot: deletes the keys of `slot`, each propagated as DEL and
/// announced as a `del` event; how many.
pub fn del_keys_in_slot(server: &mut ServerState, store: &mut Store, slot: u16) -> usize {
    let keys = keys_in_slot(store, slot, usize::MAX);
    for k in &keys {
        if store.delete(0, k) {
            store.signal_modified(0, k);
            server.feed_del(0, k, false);
            crate::server::pubsub::notify(server, None, &mut Vec::new(), b'g', "del", 0, k);
        }
    }
    keys.len()
}

/// 40 random hex digits: a new node's name.
pub fn random_name() -> String {
    (0..NAME_LEN)
        .map(|_| char::from(b"0123456789abcdef"[usize::from(rand::random::<u8>() % 16)]))
        .collect()
}

/// Redis's verifyClusterNodeId: 40 characters, lowercase letters or digits.
pub fn valid_name(name: &[u8]) -> bool {
    name.len() == NAME_LEN
        && name
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

impl ClusterState {
    /// A cluster of one fresh master: this node, named `name`.
    pub fn new(name: String, config_file: std::path::PathBuf, now: u64) -> ClusterState {
        let mut c = ClusterState {
            myself: 0,
            current_epoch: 0,
            last_vote_epoch: 0,
            state: Health::Fail,
            size: 1,
            nodes: BTreeMap::new(),
            by_name: HashMap::new(),
            next_key: 0,
            slots: vec![NONE; SLOTS].into_boxed_slice(),
            migrating_to: HashMap::new(),
            importing_from: HashMap::new(),
            sent: [0; 11],
            received: [0; 11],
            links_buffer_limit_exceeded: 0,
            todo: 0,
            blacklist: HashMap::new(),
            lost_slots: Vec::new(),
            first_update_ms: 0,
            among_minority_ms: 0,
            config_file,
            lock: None,
            links: HashMap::new(),
            owner_not_claiming: Box::new([0; SLOTS / 8]),
            pings_sent: 0,
            pfail_nodes: 0,
            cron_runs: 0,
            election: failover::Election::default(),
            endpoint_type: "ip".into(),
            announced_ip: String::new(),
            allow_when_down: (false, true),
        };
        c.myself = c.add_node(Node::new(name, nf::MYSELF | nf::MASTER, now));
        c
    }

    /// Adds `node`; its key.
    pub fn add_node(&mut self, node: Node) -> NodeKey {
        let key = self.next_key;
        self.next_key += 1;
        self.by_name.insert(node.name.clone(), key);
        self.nodes.insert(key, node);
        key
    }

    /// The node with `key`. Keys come from this table, so a missing one is
    /// a bug.
    pub fn node(&self, key: NodeKey) -> &Node {
        // Keys live until `del_node`, which removes every reference too.
        // invariant: a key handed out refers to a node.
        self.nodes.get(&key).expect("a live node key")
    }

    /// The node with `key`, to change.
    pub fn node_mut(&mut self, key: NodeKey) -> &mut Node {
        // invariant: as in `node`.
        self.nodes.get_mut(&key).expect("a live node key")
    }

    /// This node.
    pub fn me(&self) -> &Node {
        self.node(self.myself)
    }

    /// This node, to change.
    pub fn me_mut(&mut self) -> &mut Node {
        let k = self.myself;
        self.node_mut(k)
    }

    /// Every node, in the order they became known.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeKey, &Node)> {
        self.nodes.iter().map(|(k, n)| (*k, n))
    }

    /// Every node's key.
    pub fn keys(&self) -> Vec<NodeKey> {
        self.nodes.keys().copied().collect()
    }

    /// Number of nodes known, this one included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never: this node is always known.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether `key` is still a node.
    pub fn contains(&self, key: NodeKey) -> bool {
        self.nodes.contains_key(&key)
    }

    /// The node named `name` (clusterLookupNode).
    pub fn lookup(&self, name: &[u8]) -> Option<NodeKey> {
        if !valid_name(name) {
            return None;
        }
        std::str::from_utf8(name)
            .ok()
            .and_then(|n| self.by_name.get(n).copied())
    }

    /// Gives node `key` the name `name` (a handshake learned it).
    pub fn rename(&mut self, key: NodeKey, name: String) {
        let old = std::mem::replace(&mut self.node_mut(key).name, name.clone());
        self.by_name.remove(&old);
        self.by_name.insert(name, key);
    }

    /// The master serving `slot`.
    pub fn slot_owner(&self, slot: usize) -> Option<NodeKey> {
        let k = self.slots[slot];
        (k != NONE).then_some(k)
    }

    /// Assigns `slot` to `n` (clusterAddSlot); false when it is taken.
    pub fn add_slot(&mut self, n: NodeKey, slot: usize) -> bool {
        if self.slots[slot] != NONE {
            return false;
        }
        let masters_have_replicas = self.masters_have_replicas();
        let node = self.node_mut(n);
        if !node.set_slot_bit(slot) && node.numslots == 1 && masters_have_replicas {
            node.flags |= nf::MIGRATE_TO;
        }
        self.slots[slot] = n;
        true
    }

    /// getPreferredEndpoint: how clients are told to reach node `k`.
    pub fn endpoint(&self, k: NodeKey) -> &str {
        let n = self.node(k);
        match self.endpoint_type.as_str() {
            "hostname" if !n.hostname.is_empty() => &n.hostname,
            "hostname" => "?",
            "unknown-endpoint" => "",
            _ => &n.ip,
        }
    }

    /// isSlotUnclaimed: served by no node, or its owner stopped claiming it.
    pub fn slot_unclaimed(&self, slot: usize) -> bool {
        self.slots[slot] == NONE || self.owner_not_claiming[slot / 8] & (1 << (slot % 8)) != 0
    }

    /// Sets or clears the owner-not-claiming bit of `slot`.
    pub fn set_not_claiming(&mut self, slot: usize, on: bool) {
        if on {
            self.owner_not_claiming[slot / 8] |= 1 << (slot % 8);
        } else {
            self.owner_not_claiming[slot / 8] &= !(1 << (slot % 8));
        }
    }

    /// Whether `slot` is served by this node or, for a replica, by its
    /// master (clusterGetNodesServingMySlots holds myself).
    pub fn serves_as_mine(&self, slot: usize) -> bool {
        self.slot_owner(slot)
            .is_some_and(|n| self.is_me_or_my_master(n))
    }

    /// `n` is this node or the master it replicates.
    fn is_me_or_my_master(&self, n: NodeKey) -> bool {
        n == self.myself || self.me().master == Some(n)
    }

    /// Unassigns `slot` (clusterDelSlot); false when it was not assigned.
    pub fn del_slot(&mut self, slot: usize) -> bool {
        let Some(n) = self.slot_owner(slot) else {
            return false;
        };
        if self.is_me_or_my_master(n) {
            self.lost_slots.push(slot as u16);
        }
        self.node_mut(n).clear_slot_bit(slot);
        self.slots[slot] = NONE;
        true
    }

    /// Unassigns every slot of `n`; how many.
    pub fn del_node_slots(&mut self, n: NodeKey) -> usize {
        let mut deleted = 0;
        for slot in 0..SLOTS {
            if self.node(n).has_slot(slot) {
                self.del_slot(slot);
                deleted += 1;
            }
        }
        deleted
    }

    /// Forgets every migration and import (clusterCloseAllSlots).
    pub fn close_all_slots(&mut self) {
        self.migrating_to.clear();
        self.importing_from.clear();
    }

    fn masters_have_replicas(&self) -> bool {
        self.nodes
            .values()
            .any(|n| !n.is_replica() && !n.replicas.is_empty())
    }

    /// Makes `replica` one of `master`'s replicas (clusterNodeAddSlave).
    pub fn add_replica(&mut self, master: NodeKey, replica: NodeKey) -> bool {
        let m = self.node_mut(master);
        if m.replicas.contains(&replica) {
            return false;
        }
        m.replicas.push(replica);
        m.flags |= nf::MIGRATE_TO;
        true
    }

    /// Removes `replica` from `master`'s replicas (clusterNodeRemoveSlave).
    pub fn remove_replica(&mut self, master: NodeKey, replica: NodeKey) -> bool {
        let m = self.node_mut(master);
        let Some(i) = m.replicas.iter().position(|&r| r == replica) else {
            return false;
        };
        m.replicas.remove(i);
        if m.replicas.is_empty() {
            m.flags &= !nf::MIGRATE_TO;
        }
        true
    }

    /// Removes node `n` and every reference to it (clusterDelNode); the
    /// links it had, for the caller to close.
    pub fn del_node(&mut self, n: NodeKey) -> Vec<u64> {
        self.importing_from.retain(|_, v| *v != n);
        self.migrating_to.retain(|_, v| *v != n);
        for slot in 0..SLOTS {
            if self.slots[slot] == n {
                self.del_slot(slot);
            }
        }
        for node in self.nodes.values_mut() {
            node.fail_reports.retain(|(r, _)| *r != n);
        }
        let replicas = self.node(n).replicas.clone();
        for r in replicas {
            self.node_mut(r).master = None;
        }
        if let Some(m) = self.node(n).master {
            if self.node(n).is_replica() {
                self.remove_replica(m, n);
            }
        }
        let Some(node) = self.nodes.remove(&n) else {
            return Vec::new();
        };
        self.by_name.remove(&node.name);
        node.link.into_iter().chain(node.inbound_link).collect()
    }

    /// The greatest config epoch known, or the current epoch if greater
    /// (clusterGetMaxEpoch).
    pub fn max_epoch(&self) -> u64 {
        self.nodes
            .values()
            .map(|n| n.config_epoch)
            .max()
            .unwrap_or(0)
            .max(self.current_epoch)
    }

    /// clusterBumpConfigEpochWithoutConsensus: a new config epoch for this
    /// node unless it already has the greatest; whether it got one.
    pub fn bump_epoch_without_consensus(&mut self) -> bool {
        let max = self.max_epoch();
        let mine = self.me().config_epoch;
        if mine == 0 || mine != max {
            self.current_epoch += 1;
            let e = self.current_epoch;
            self.me_mut().config_epoch = e;
            self.todo |= todo::SAVE_CONFIG | todo::FSYNC_CONFIG;
            tracing::warn!("New configEpoch set to {e}");
            true
        } else {
            false
        }
    }

    /// The epoch this node shows as its own: its master's when a replica.
    pub fn my_epoch(&self) -> u64 {
        let me = self.me();
        match me.master {
            Some(m) if me.is_replica() => self.node(m).config_epoch,
            _ => me.config_epoch,
        }
    }

    /// Turns node `n` into a master (clusterSetNodeAsMaster).
    pub fn set_node_as_master(&mut self, n: NodeKey) {
        if self.node(n).is_master() {
            return;
        }
        if let Some(m) = self.node(n).master {
            self.remove_replica(m, n);
            if n != self.myself {
                self.node_mut(n).flags |= nf::MIGRATE_TO;
            }
        }
        let node = self.node_mut(n);
        node.flags &= !nf::SLAVE;
        node.flags |= nf::MASTER;
        node.master = None;
        self.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
    }

    /// Makes this node a replica of `master` in the table
    /// (clusterSetMaster without the replication side).
    pub fn set_my_master(&mut self, master: NodeKey) {
        let me = self.myself;
        if self.me().is_master() {
            let node = self.me_mut();
            node.flags &= !(nf::MASTER | nf::MIGRATE_TO);
            node.flags |= nf::SLAVE;
            self.close_all_slots();
        } else if let Some(old) = self.me().master {
            self.remove_replica(old, me);
        }
        self.me_mut().master = Some(master);
        self.add_replica(master, me);
    }

    /// The masters serving the same slots as `n` with their replicas,
    /// master first (clusterGetNodesServingMySlots).
    pub fn shard_of(&self, n: NodeKey) -> Vec<NodeKey> {
        let node = self.node(n);
        let master = if node.is_master() {
            Some(n)
        } else {
            node.master
        };
        let Some(m) = master else {
            return vec![n];
        };
        let mut out = vec![m];
        out.extend(self.node(m).replicas.iter().copied());
        out
    }

    /// Runs of consecutive slots served by one node, in slot order, as
    /// (first, last, node) (clusterGenNodesSlotsInfo).
    pub fn slot_ranges(&self) -> Vec<(usize, usize, NodeKey)> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < SLOTS {
            let owner = self.slots[start];
            let mut end = start;
            while end + 1 < SLOTS && self.slots[end + 1] == owner {
                end += 1;
            }
            if owner != NONE {
                out.push((start, end, owner));
            }
            start = end + 1;
        }
        out
    }

    /// Failure reports about `n` younger than twice the node timeout
    /// (clusterNodeFailureReportsCount), after dropping older ones.
    pub fn failure_reports(&mut self, n: NodeKey, now: u64, node_timeout: u64) -> usize {
        let max_age = node_timeout * 2;
        let node = self.node_mut(n);
        node.fail_reports
            .retain(|(_, t)| now.saturating_sub(*t) <= max_age);
        node.fail_reports.len()
    }

    /// Records that `sender` reports `failing` as failing; true when the
    /// report is new (clusterNodeAddFailureReport).
    pub fn add_failure_report(&mut self, failing: NodeKey, sender: NodeKey, now: u64) -> bool {
        let node = self.node_mut(failing);
        if let Some(r) = node.fail_reports.iter_mut().find(|(s, _)| *s == sender) {
            r.1 = now;
            return false;
        }
        node.fail_reports.push((sender, now));
        true
    }

    /// Drops `sender`'s report about `node`; true when there was one
    /// (clusterNodeDelFailureReport).
    pub fn del_failure_report(
        &mut self,
        node: NodeKey,
        sender: NodeKey,
        now: u64,
        node_timeout: u64,
    ) -> bool {
        let n = self.node_mut(node);
        let Some(i) = n.fail_reports.iter().position(|(s, _)| *s == sender) else {
            return false;
        };
        n.fail_reports.remove(i);
        self.failure_reports(node, now, node_timeout);
        true
    }

    /// Keeps `n`'s name from being re-added by gossip for a minute
    /// (clusterBlacklistAddNode).
    pub fn blacklist_add(&mut self, n: NodeKey, now: u64) {
        self.blacklist.retain(|_, until| *until >= now);
        let name = self.node(n).name.clone();
        self.blacklist.insert(name, now + 60_000);
    }

    /// Whether `name` is blacklisted (clusterBlacklistExists).
    pub fn blacklisted(&mut self, name: &str, now: u64) -> bool {
        self.blacklist.retain(|_, until| *until >= now);
        self.blacklist.contains_key(name)
    }

    /// CLUSTER MEET's clusterStartHandshake: adds a node in handshake at
    /// `ip`:`port` (bus `cport`) with a random name, to be learned from its
    /// first PONG. False for an invalid address; true (doing nothing) when
    /// a handshake with that address is under way already.
    pub fn start_handshake(&mut self, ip: &str, port: i64, cport: i64, now: u64) -> bool {
        let Ok(addr) = ip.parse::<std::net::IpAddr>() else {
            return false;
        };
        let ports = 1..=65535;
        if !ports.contains(&port) || !ports.contains(&cport) {
            return false;
        }
        let norm = addr.to_string();
        let busy = self.nodes.values().any(|n| {
            n.in_handshake()
                && n.ip.eq_ignore_ascii_case(&norm)
                && i64::from(n.port) == port
                && i64::from(n.cport) == cport
        });
        if !busy {
            let mut n = Node::new(random_name(), nf::HANDSHAKE | nf::MEET, now);
            n.ip = norm;
            n.port = port as u16;
            n.cport = cport as u16;
            self.add_node(n);
        }
        true
    }

    /// clusterUpdateState: the cluster is ok when every slot is served by
    /// a node not failing (with cluster-require-full-coverage) and a
    /// majority of the masters with slots is reachable. A master waits
    /// two seconds after start, and rejoin_delay after being in a
    /// minority, before it says ok.
    pub fn update_state(&mut self, now: u64, require_full_coverage: bool, node_timeout: u64) {
        const WRITABLE_DELAY: u64 = 2000;
        self.todo &= !todo::UPDATE_STATE;
        if self.first_update_ms == 0 {
            self.first_update_ms = now;
        }
        let i_am_master = self.me().is_master();
        if i_am_master
            && self.state == Health::Fail
            && now.saturating_sub(self.first_update_ms) < WRITABLE_DELAY
        {
            return;
        }
        let mut new_state = Health::Ok;
        if require_full_coverage
            && self
                .slots
                .iter()
                .any(|&k| k == NONE || self.node(k).failed())
        {
            new_state = Health::Fail;
        }
        self.size = 0;
        let mut reachable = 0;
        for n in self.nodes.values() {
            if n.is_master() && n.numslots > 0 {
                self.size += 1;
                if n.flags & (nf::FAIL | nf::PFAIL) == 0 {
                    reachable += 1;
                }
            }
        }
        if reachable < self.size / 2 + 1 {
            new_state = Health::Fail;
            self.among_minority_ms = now;
        }
        if new_state != self.state {
            let rejoin_delay = node_timeout.clamp(500, 5000);
            if new_state == Health::Ok
                && i_am_master
                && now.saturating_sub(self.among_minority_ms) < rejoin_delay
            {
                return;
            }
            tracing::warn!(
                "Cluster state changed: {}",
                if new_state == Health::Ok {
                    "ok"
                } else {
                    "fail"
                }
            );
            self.state = new_state;
        }
    }
}
