//! Sending on the cluster bus (Redis's clusterBuildMessageHdr,
//! clusterSendPing, clusterBroadcastMessage, clusterSendFail,
//! clusterSendUpdate, clusterSendPublish and the failover messages) and
//! the links' life: created when a node connects or is connected to,
//! freed on error (freeClusterLink). The sockets are the event loop's
//! (`net/bus.rs`).

use super::msg::{self, kind, mflag, Body, Gossip, Header};
use super::{node_flag as nf, ClusterState, Health, Link, NodeKey, NAME_LEN, PORT_INCR, SLOTS};
use crate::net::bus::BusEvent;
use crate::server::ServerState;
use crate::store::Store;
use crate::util::clock;

/// Who a PONG broadcast goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every node with a link.
    All,
    /// The replicas of this node's master (or of this node).
    LocalReplicas,
}

/// A link as CLUSTER LINKS shows it.
pub struct LinkInfo {
    /// Accepted from the node.
    pub inbound: bool,
    /// The node's name.
    pub node: String,
    /// Creation time (ms).
    pub ctime: u64,
    /// Output is waiting.
    pub pending_output: bool,
    /// Send buffer capacity.
    pub sndbuf_alloc: usize,
    /// Send buffer bytes queued.
    pub sndbuf_used: usize,
}

/// The port clients reach this node on: the TLS port in a TLS cluster
/// (`tls-cluster yes`), else the plain one (Redis's clusterInit).
pub fn client_port(server: &ServerState) -> u16 {
    if server.config.get_bool("tls-cluster") {
        server.config.get("tls-port").parse().unwrap_or(0)
    } else {
        server.port
    }
}

/// The ports this node announces (deriveAnnouncedPorts): client port,
/// plaintext port (a TLS cluster's plain port, for plain clients), bus
/// port.
pub fn announced_ports(server: &ServerState) -> (u16, u16, u16) {
    let cfg = &server.config;
    let tls = cfg.get_bool("tls-cluster");
    let port = client_port(server);
    let announce = cfg.get_i64("cluster-announce-port").unwrap_or(0) as u16;
    let announce_tls = cfg.get_i64("cluster-announce-tls-port").unwrap_or(0) as u16;
    let bus = cfg.get_i64("cluster-announce-bus-port").unwrap_or(0) as u16;
    let cluster_port = cfg.get_i64("cluster-port").unwrap_or(0) as u16;
    let cport = if bus != 0 {
        bus
    } else if cluster_port != 0 {
        cluster_port
    } else {
        (u32::from(port) + PORT_INCR).min(65535) as u16
    };
    let (port, pport) = if tls && announce_tls != 0 {
        (announce_tls, announce)
    } else if announce != 0 {
        (announce, if tls { server.port } else { 0 })
    } else {
        (port, if tls { server.port } else { 0 })
    };
    (port, pport, cport)
}

fn name_bytes(name: &str) -> [u8; NAME_LEN] {
    let mut n = [0u8; NAME_LEN];
    let b = name.as_bytes();
    let len = b.len().min(NAME_LEN);
    n[..len].copy_from_slice(&b[..len]);
    n
}

/// This node's replication offset as the bus reports it.
fn my_offset(server: &ServerState, c: &ClusterState) -> u64 {
    if c.me().is_replica() {
        server.repl.replica_offset()
    } else {
        server.repl.current_offset()
    }
}

/// clusterBuildMessageHdr: a header about this node (or its master's
/// slots and epoch, when a replica).
pub fn header(server: &ServerState, kind: u16) -> Header {
    // invariant: only called with the cluster on.
    let c = server.cluster.as_deref().expect("cluster mode");
    let me = c.me();
    let master = match me.master {
        Some(m) if me.is_replica() => c.node(m),
        _ => me,
    };
    let (port, pport, cport) = announced_ports(server);
    let mut mflags = [0u8; 3];
    if me.is_master() && c.election.mf_end != 0 {
        mflags[0] |= mflag::PAUSED;
    }
    Header {
        kind,
        port,
        current_epoch: c.current_epoch,
        config_epoch: master.config_epoch,
        offset: my_offset(server, c),
        sender: name_bytes(&me.name),
        myslots: master.slots.clone(),
        slaveof: me
            .master
            .map_or([0; NAME_LEN], |m| name_bytes(&c.node(m).name)),
        myip: server.config.get("cluster-announce-ip"),
        pport,
        cport,
        flags: me.flags,
        state: if c.state == Health::Ok { 0 } else { 1 },
        mflags,
    }
}

/// Sends a message on link `link` (clusterSendMessage), counting it.
pub fn send(server: &mut ServerState, link: u64, h: &Header, body: &Body) {
    let bytes = msg::encode(h, body);
    send_bytes(server, link, h.kind, &bytes);
}

fn send_bytes(server: &mut ServerState, link: u64, kind: u16, bytes: &[u8]) {
    if let Some(c) = server.cluster.as_deref_mut() {
        if let Some(n) = c.sent.get_mut(usize::from(kind)) {
            *n += 1;
        }
    }
    if let Some(net) = &server.net {
        net.borrow_mut().bus_send(link, bytes);
    }
}

/// Sends to every node with a link but this one and those in handshake
/// (clusterBroadcastMessage).
pub fn broadcast(server: &mut ServerState, h: &Header, body: &Body) {
    let bytes = msg::encode(h, body);
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    let links: Vec<u64> = c
        .nodes()
        .filter(|(_, n)| n.flags & (nf::MYSELF | nf::HANDSHAKE) == 0)
        .filter_map(|(_, n)| n.link)
        .collect();
    for l in links {
        send_bytes(server, l, h.kind, &bytes);
    }
}

fn gossip_of(c: &ClusterState, k: NodeKey) -> Gossip {
    let n = c.node(k);
    Gossip {
        name: name_bytes(&n.name),
        ping_sent: (n.ping_sent / 1000) as u32,
        pong_received: (n.pong_received / 1000) as u32,
        ip: n.ip.clone(),
        port: n.port,
        cport: n.cport,
        flags: n.flags,
        pport: n.pport,
    }
}

/// clusterSendPing: a PING, PONG or MEET on `link` with gossip about a
/// tenth of the nodes (at least three) chosen at random, then every node
/// in PFAIL.
pub fn send_ping(server: &mut ServerState, link: u64, kind: u16) {
    let now = clock::real_now_ms();
    let hostname = server.config.get("cluster-announce-hostname");
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    c.pings_sent += 1;
    let round = c.pings_sent;
    let Some(l) = c.links.get(&link).copied() else {
        return;
    };
    if !l.inbound && kind == msg::kind::PING {
        if let Some(n) = l.node {
            c.node_mut(n).ping_sent = now;
        }
    }
    let keys = c.keys();
    let mut fresh = keys.len() as i64 - 2;
    let wanted = ((keys.len() / 10).max(3) as i64).min(fresh.max(0)) as usize;
    let mut gossip = Vec::new();
    let mut tries = wanted * 3;
    while fresh > 0 && gossip.len() < wanted && tries > 0 {
        tries -= 1;
        let k = keys[(rand::random::<u64>() % keys.len() as u64) as usize];
        let n = c.node(k);
        if k == c.myself || n.timed_out() {
            continue;
        }
        if n.flags & (nf::HANDSHAKE | nf::NOADDR) != 0 || (n.link.is_none() && n.numslots == 0) {
            fresh -= 1;
            continue;
        }
        if n.last_in_ping_gossip == round {
            continue;
        }
        gossip.push(gossip_of(c, k));
        c.node_mut(k).last_in_ping_gossip = round;
        fresh -= 1;
    }
    let pfail: Vec<NodeKey> = c
        .nodes()
        .filter(|(_, n)| n.timed_out() && n.flags & (nf::HANDSHAKE | nf::NOADDR) == 0)
        .map(|(k, _)| k)
        .take(c.pfail_nodes)
        .collect();
    for k in pfail {
        gossip.push(gossip_of(c, k));
    }
    let h = header(server, kind);
    let body = Body::Ping {
        gossip,
        hostname: (!hostname.is_empty()).then_some(hostname),
    };
    send(server, link, &h, &body);
}

/// clusterBroadcastPong.
pub fn broadcast_pong(server: &mut ServerState, target: Target) {
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    let me = c.me();
    let links: Vec<u64> = c
        .nodes()
        .filter(|(k, n)| *k != c.myself && !n.in_handshake())
        .filter(|(_, n)| {
            target == Target::All
                || (n.is_replica()
                    && n.master.is_some()
                    && (n.master == Some(c.myself) || n.master == me.master))
        })
        .filter_map(|(_, n)| n.link)
        .collect();
    for l in links {
        send_ping(server, l, kind::PONG);
    }
}

/// clusterSendFail: tells every node that `name` failed.
pub fn send_fail(server: &mut ServerState, name: &str) {
    let h = header(server, kind::FAIL);
    broadcast(
        server,
        &h,
        &Body::Fail {
            name: name_bytes(name),
        },
    );
}

/// clusterSendUpdate: node `about`'s slot configuration, sent on `link`.
pub fn send_update(server: &mut ServerState, link: u64, about: NodeKey) {
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    let n = c.node(about);
    let mut slots = n.slots.clone();
    for (i, b) in slots.iter_mut().enumerate() {
        *b &= !c.owner_not_claiming[i];
    }
    let body = Body::Update {
        config_epoch: n.config_epoch,
        name: name_bytes(&n.name),
        slots,
    };
    let h = header(server, kind::UPDATE);
    send(server, link, &h, &body);
}

/// clusterPropagatePublish: PUBLISH to every node, SPUBLISH to this
/// node's shard.
pub fn propagate_publish(server: &mut ServerState, channel: &[u8], message: &[u8], sharded: bool) {
    let body = Body::Publish {
        channel: channel.to_vec(),
        message: message.to_vec(),
    };
    if !sharded {
        let h = header(server, kind::PUBLISH);
        broadcast(server, &h, &body);
        return;
    }
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    let links: Vec<u64> = c
        .shard_of(c.myself)
        .into_iter()
        .filter(|&k| c.node(k).flags & (nf::MYSELF | nf::HANDSHAKE) == 0)
        .filter_map(|k| c.node(k).link)
        .collect();
    let h = header(server, kind::PUBLISHSHARD);
    for l in links {
        send(server, l, &h, &body);
    }
}

/// Sends a message without body of `kind` to node `n`, if linked.
pub fn send_empty(server: &mut ServerState, n: NodeKey, kind: u16) {
    let Some(link) = server.cluster.as_deref().and_then(|c| c.node(n).link) else {
        return;
    };
    let h = header(server, kind);
    send(server, link, &h, &Body::Empty);
}

/// freeClusterLink: closes `link` and detaches it from its node.
pub fn free_link(server: &mut ServerState, link: u64) {
    if let Some(c) = server.cluster.as_deref_mut() {
        if let Some(l) = c.links.remove(&link) {
            if let Some(k) = l.node.filter(|k| c.contains(*k)) {
                let n = c.node_mut(k);
                if n.link == Some(link) {
                    n.link = None;
                } else if n.inbound_link == Some(link) {
                    n.inbound_link = None;
                }
            }
        }
    }
    if let Some(net) = &server.net {
        net.borrow_mut().bus_close(link);
    }
}

/// Closes the links of nodes that were removed.
pub fn close_links(server: &mut ServerState, links: &[u64]) {
    for &l in links {
        free_link(server, l);
    }
}

/// Every link, for CLUSTER LINKS.
pub fn describe_links(server: &ServerState) -> Vec<LinkInfo> {
    let Some(c) = server.cluster.as_deref() else {
        return Vec::new();
    };
    let net = server.net.as_ref().map(|n| n.borrow());
    let mut out = Vec::new();
    for (_, n) in c.nodes() {
        for (link, inbound) in [(n.link, false), (n.inbound_link, true)] {
            let Some(id) = link else {
                continue;
            };
            let Some(l) = c.links.get(&id) else {
                continue;
            };
            let (alloc, used) = net.as_ref().map_or((0, 0), |n| n.bus().send_buffer(id));
            out.push(LinkInfo {
                inbound,
                node: n.name.clone(),
                ctime: l.ctime,
                pending_output: used > 0,
                sndbuf_alloc: alloc,
                sndbuf_used: used,
            });
        }
    }
    out
}

/// Opens the outgoing link to node `k` (clusterNodeCronHandleReconnect's
/// connect): the PING (or MEET) goes once it is connected.
pub fn connect(server: &mut ServerState, k: NodeKey, now: u64) {
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    let n = c.node(k);
    let addr =
        n.ip.parse::<std::net::IpAddr>()
            .map(|ip| std::net::SocketAddr::new(ip, n.cport));
    let opened = match (addr, &server.net) {
        (Ok(a), Some(net)) => net.borrow_mut().bus_connect(a).ok(),
        _ => None,
    };
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    match opened {
        Some(id) => {
            c.links.insert(
                id,
                Link {
                    node: Some(k),
                    inbound: false,
                    ctime: now,
                    connecting: true,
                },
            );
            c.node_mut(k).link = Some(id);
        }
        None => {
            // Failure detection needs a ping time even when no PING could
            // be sent.
            let n = c.node_mut(k);
            if n.ping_sent == 0 {
                n.ping_sent = now;
            }
        }
    }
}

/// Handles what the bus sockets reported: new links, completed connects
/// (clusterLinkConnectHandler sends the first PING or MEET), messages and
/// closed links.
pub fn process_events(server: &mut ServerState, store: &mut Store) {
    let events = match &server.net {
        Some(net) => {
            let mut n = net.borrow_mut();
            if !n.bus().has_events() {
                return;
            }
            n.bus_events()
        }
        None => return,
    };
    let now = clock::real_now_ms();
    for e in events {
        match e {
            BusEvent::Accepted { link } => {
                if let Some(c) = server.cluster.as_deref_mut() {
                    c.links.insert(
                        link,
                        Link {
                            node: None,
                            inbound: true,
                            ctime: now,
                            connecting: false,
                        },
                    );
                }
            }
            BusEvent::Connected { link } => {
                let Some(c) = server.cluster.as_deref_mut() else {
                    continue;
                };
                let Some(l) = c.links.get_mut(&link) else {
                    continue;
                };
                l.connecting = false;
                let Some(k) = l.node else {
                    continue;
                };
                let old_ping_sent = c.node(k).ping_sent;
                let meet = c.node(k).flags & nf::MEET != 0;
                send_ping(server, link, if meet { kind::MEET } else { kind::PING });
                if let Some(c) = server.cluster.as_deref_mut() {
                    if c.contains(k) {
                        let n = c.node_mut(k);
                        if old_ping_sent != 0 {
                            n.ping_sent = old_ping_sent;
                        }
                        n.flags &= !nf::MEET;
                    }
                }
            }
            BusEvent::Message { link, bytes } => {
                let known = server
                    .cluster
                    .as_deref()
                    .is_some_and(|c| c.links.contains_key(&link));
                if known {
                    super::gossip::process_packet(server, store, link, &bytes, now);
                }
            }
            BusEvent::Closed { link } => free_link(server, link),
        }
    }
}

/// The bitmap of `slots` as a set.
pub fn slot_bit(slots: &[u8; SLOTS / 8], slot: usize) -> bool {
    slots[slot / 8] & (1 << (slot % 8)) != 0
}
