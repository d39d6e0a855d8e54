//! What a bus message does to this node's view (Redis's
//! clusterProcessPacket and the functions it calls: the gossip section,
//! node addresses, roles, slot ownership by config epoch, failure reports,
//! FAIL, UPDATE, PUBLISH and the failover messages).

use super::bus::{self, slot_bit};
use super::msg::{self, kind, mflag, Body, Gossip, Header};
use super::{node_flag as nf, todo, ClusterState, Node, NodeKey, NAME_LEN, SLOTS};
use crate::server::ServerState;
use crate::store::Store;

fn name_str(n: &[u8; NAME_LEN]) -> String {
    String::from_utf8_lossy(n).into_owned()
}

/// The sender of a message on `link` (getNodeFromLinkAndMsg): the link's
/// node once out of handshake, else the node the header names; an inbound
/// link learns its node here.
fn sender_of(server: &mut ServerState, link: u64, h: &Header) -> Option<NodeKey> {
    let c = server.cluster.as_deref_mut()?;
    let l = *c.links.get(&link)?;
    if let Some(k) = l
        .node
        .filter(|&k| c.contains(k) && !c.node(k).in_handshake())
    {
        return Some(k);
    }
    let k = c.lookup(&h.sender)?;
    if l.node.is_none() {
        // setClusterNodeToInboundClusterLink: one inbound link per node.
        let old = c.node(k).inbound_link.filter(|&o| o != link);
        c.node_mut(k).inbound_link = Some(link);
        if let Some(l) = c.links.get_mut(&link) {
            l.node = Some(k);
        }
        if let Some(o) = old {
            if let Some(ol) = c.links.get_mut(&o) {
                ol.node = None;
            }
            bus::free_link(server, o);
        }
    }
    Some(k)
}

/// nodeIp2String: the announced IP, else the link's peer address.
fn peer_ip(server: &ServerState, link: u64, announced: &str) -> Option<String> {
    if !announced.is_empty() {
        return Some(announced.to_string());
    }
    let net = server.net.as_ref()?;
    let addr = net.borrow().bus().peer_addr(link)?;
    Some(addr.ip().to_string())
}

/// nodeUpdateAddressIfNeeded: a node seen at another address is updated
/// and its outgoing link dropped (to reconnect there); true when it moved.
fn update_address(server: &mut ServerState, k: NodeKey, link: u64, h: &Header) -> bool {
    let Some(c) = server.cluster.as_deref() else {
        return false;
    };
    if c.node(k).link == Some(link) {
        return false;
    }
    let Some(ip) = peer_ip(server, link, &h.myip) else {
        return false;
    };
    let Some(c) = server.cluster.as_deref_mut() else {
        return false;
    };
    let n = c.node_mut(k);
    if n.port == h.port && n.cport == h.cport && n.pport == h.pport && n.ip == ip {
        return false;
    }
    n.ip = ip;
    n.port = h.port;
    n.pport = h.pport;
    n.cport = h.cport;
    n.flags &= !nf::NOADDR;
    let old = n.link.take();
    tracing::warn!(
        "Address updated for node {}, now {}:{}",
        n.name,
        n.ip,
        n.port
    );
    let (ip, port) = (n.ip.clone(), n.port);
    let my_master = c.me().is_replica() && c.me().master == Some(k);
    if let Some(o) = old {
        bus::free_link(server, o);
    }
    if my_master {
        crate::server::repl::set_master(server, ip, port);
    }
    true
}

/// Handles one message from `link`.
pub fn process_packet(
    server: &mut ServerState,
    store: &mut Store,
    link: u64,
    bytes: &[u8],
    now: u64,
) {
    let raw_kind = u16::from_be_bytes([bytes[12], bytes[13]]);
    if let Some(c) = server.cluster.as_deref_mut() {
        if let Some(n) = c.received.get_mut(usize::from(raw_kind)) {
            *n += 1;
        }
    }
    let Some((h, body)) = msg::decode(bytes) else {
        tracing::warn!(
            "Received invalid {} packet of length {}",
            super::MESSAGE_TYPES
                .get(usize::from(raw_kind))
                .copied()
                .unwrap_or("unknown"),
            bytes.len()
        );
        return;
    };
    if server.cluster_drop_packet_filter == i64::from(raw_kind) {
        tracing::warn!("Dropping packet that matches debug drop filter");
        return;
    }
    let sender = sender_of(server, link, &h);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let mut sender_config_epoch = 0;
    let mut sender_current_epoch = 0;
    if let Some(s) = sender {
        c.node_mut(s).data_received = now;
        if !c.node(s).in_handshake() {
            sender_current_epoch = h.current_epoch;
            sender_config_epoch = h.config_epoch;
            if sender_current_epoch > c.current_epoch {
                c.current_epoch = sender_current_epoch;
            }
            let n = c.node_mut(s);
            if sender_config_epoch > n.config_epoch {
                n.config_epoch = sender_config_epoch;
                c.todo |= todo::SAVE_CONFIG | todo::FSYNC_CONFIG;
            }
            let n = c.node_mut(s);
            n.repl_offset = h.offset;
            n.repl_offset_time = now;
            let me = c.me();
            if c.election.mf_end != 0
                && me.is_replica()
                && me.master == Some(s)
                && h.mflags[0] & mflag::PAUSED != 0
                && c.election.mf_master_offset.is_none()
            {
                c.election.mf_master_offset = Some(h.offset);
                c.todo |= todo::HANDLE_MANUALFAILOVER;
                tracing::warn!(
                    "Received replication offset for paused master manual failover: {}",
                    h.offset
                );
            }
        }
    }
    match (h.kind, body) {
        (kind::PING | kind::PONG | kind::MEET, Body::Ping { gossip, hostname }) => ping(
            server,
            store,
            link,
            sender,
            &h,
            sender_config_epoch,
            &gossip,
            hostname,
            now,
        ),
        (kind::FAIL, Body::Fail { name }) => {
            let Some(c) = server.cluster.as_deref_mut() else {
                return;
            };
            if sender.is_none() {
                tracing::info!(
                    "Ignoring FAIL message from unknown node {} about {}",
                    name_str(&h.sender),
                    name_str(&name)
                );
                return;
            }
            if let Some(f) = c.lookup(&name) {
                let n = c.node_mut(f);
                if n.flags & (nf::FAIL | nf::MYSELF) == 0 {
                    tracing::info!(
                        "FAIL message received from {} about {}",
                        name_str(&h.sender),
                        name_str(&name)
                    );
                    n.flags |= nf::FAIL;
                    n.fail_time = now;
                    n.flags &= !nf::PFAIL;
                    c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
                }
            }
        }
        (kind::PUBLISH | kind::PUBLISHSHARD, Body::Publish { channel, message }) => {
            if sender.is_none() {
                return;
            }
            let shard = h.kind == kind::PUBLISHSHARD;
            crate::server::pubsub::publish(
                server,
                None,
                &mut Vec::new(),
                shard,
                &channel,
                &message,
            );
        }
        (kind::AUTH_REQUEST, _) => {
            if let Some(s) = sender {
                super::failover::send_auth_if_needed(server, s, &h, now);
            }
        }
        (kind::AUTH_ACK, _) => {
            let Some(s) = sender else {
                return;
            };
            let Some(c) = server.cluster.as_deref_mut() else {
                return;
            };
            let n = c.node(s);
            if n.is_master() && n.numslots > 0 && sender_current_epoch >= c.election.auth_epoch {
                c.election.auth_count += 1;
                c.todo |= todo::HANDLE_FAILOVER;
            }
        }
        (kind::MFSTART, _) => {
            let Some(s) = sender else {
                return;
            };
            let Some(c) = server.cluster.as_deref_mut() else {
                return;
            };
            if c.node(s).master != Some(c.myself) {
                return;
            }
            let name = c.node(s).name.clone();
            super::failover::reset_manual(server);
            if let Some(c) = server.cluster.as_deref_mut() {
                c.election.mf_end = now + super::failover::MF_TIMEOUT;
                c.election.mf_replica = Some(s);
            }
            server
                .pause
                .extend(now + super::failover::MF_TIMEOUT * 2, false, now);
            tracing::warn!("Manual failover requested by replica {name}.");
            bus::send_ping(server, link, kind::PING);
        }
        (
            kind::UPDATE,
            Body::Update {
                config_epoch,
                name,
                slots,
            },
        ) => {
            if sender.is_none() {
                return;
            }
            let Some(c) = server.cluster.as_deref_mut() else {
                return;
            };
            let Some(n) = c.lookup(&name) else {
                return;
            };
            if c.node(n).config_epoch >= config_epoch {
                return;
            }
            if c.node(n).is_replica() {
                c.set_node_as_master(n);
            }
            c.node_mut(n).config_epoch = config_epoch;
            c.todo |= todo::SAVE_CONFIG | todo::FSYNC_CONFIG;
            update_slots_config_with(server, store, n, config_epoch, &slots);
        }
        (kind::PING | kind::PONG | kind::MEET | kind::FAIL | kind::PUBLISH, _) => {}
        (kind::MODULE | kind::PUBLISHSHARD | kind::UPDATE, _) => {}
        (other, _) => tracing::warn!("Received unknown packet type: {other}"),
    }
}

/// PING, PONG and MEET.
#[allow(clippy::too_many_arguments)]
fn ping(
    server: &mut ServerState,
    store: &mut Store,
    link: u64,
    sender: Option<NodeKey>,
    h: &Header,
    sender_config_epoch: u64,
    gossip: &[Gossip],
    hostname: Option<String>,
    now: u64,
) {
    let announce_ip = server.config.get("cluster-announce-ip");
    if h.kind == kind::PING || h.kind == kind::MEET {
        let Some(c) = server.cluster.as_deref() else {
            return;
        };
        // An incoming MEET tells this node its own address, as the
        // others reach it.
        if (h.kind == kind::MEET || c.me().ip.is_empty()) && announce_ip.is_empty() {
            let local = server
                .net
                .as_ref()
                .and_then(|n| n.borrow().bus().local_addr(link));
            if let (Some(a), Some(c)) = (local, server.cluster.as_deref_mut()) {
                let ip = a.ip().to_string();
                if ip != c.me().ip {
                    tracing::warn!("IP address for this node updated to {ip}");
                    c.me_mut().ip = ip;
                    c.todo |= todo::SAVE_CONFIG;
                }
            }
        }
        if sender.is_none() && h.kind == kind::MEET {
            let ip = peer_ip(server, link, &h.myip).unwrap_or_default();
            if let Some(c) = server.cluster.as_deref_mut() {
                let mut n = Node::new(super::random_name(), nf::HANDSHAKE, now);
                n.ip = ip;
                n.port = h.port;
                n.pport = h.pport;
                n.cport = h.cport;
                c.add_node(n);
                c.todo |= todo::SAVE_CONFIG;
            }
            process_gossip(server, link, None, h, gossip, now);
        }
        bus::send_ping(server, link, kind::PONG);
    }
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let Some(l) = c.links.get(&link).copied() else {
        return;
    };
    if !l.inbound {
        let Some(ln) = l.node.filter(|&k| c.contains(k)) else {
            return;
        };
        if c.node(ln).in_handshake() {
            if let Some(s) = sender {
                // Already known: update its address and drop the
                // handshake node, with this link.
                if update_address(server, s, link, h) {
                    if let Some(c) = server.cluster.as_deref_mut() {
                        c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
                    }
                }
                if let Some(c) = server.cluster.as_deref_mut() {
                    let links = c.del_node(ln);
                    bus::close_links(server, &links);
                }
                return;
            }
            c.rename(ln, name_str(&h.sender));
            let n = c.node_mut(ln);
            n.flags &= !nf::HANDSHAKE;
            n.flags |= h.flags & (nf::MASTER | nf::SLAVE);
            c.todo |= todo::SAVE_CONFIG;
        } else if c.node(ln).name.as_bytes() != h.sender {
            let n = c.node_mut(ln);
            n.flags |= nf::NOADDR;
            n.ip.clear();
            n.port = 0;
            n.pport = 0;
            n.cport = 0;
            c.todo |= todo::SAVE_CONFIG;
            bus::free_link(server, link);
            return;
        }
    }
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if let Some(s) = sender {
        let n = c.node_mut(s);
        n.flags = (n.flags & !nf::NOFAILOVER) | (h.flags & nf::NOFAILOVER);
    }
    if let Some(s) = sender {
        if h.kind == kind::PING && !c.node(s).in_handshake() && update_address(server, s, link, h) {
            if let Some(c) = server.cluster.as_deref_mut() {
                c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
            }
        }
    }
    let timeout = super::node_timeout(server);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if !l.inbound && h.kind == kind::PONG {
        if let Some(ln) = l.node.filter(|&k| c.contains(k)) {
            let n = c.node_mut(ln);
            n.pong_received = now;
            n.ping_sent = 0;
            if n.timed_out() {
                n.flags &= !nf::PFAIL;
                c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
            } else if n.failed() {
                clear_failure_if_needed(c, ln, now, timeout);
            }
        }
    }
    let Some(s) = sender else {
        return;
    };
    // Role switches.
    if h.slaveof == [0u8; NAME_LEN] {
        c.set_node_as_master(s);
    } else {
        let master = c.lookup(&h.slaveof);
        if c.node(s).is_master() {
            c.del_node_slots(s);
            let n = c.node_mut(s);
            n.flags &= !(nf::MASTER | nf::MIGRATE_TO);
            n.flags |= nf::SLAVE;
            c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
        }
        if let Some(m) = master {
            if c.node(s).master != Some(m) {
                if let Some(old) = c.node(s).master {
                    c.remove_replica(old, s);
                }
                c.add_replica(m, s);
                c.node_mut(s).master = Some(m);
                c.todo |= todo::SAVE_CONFIG;
            }
        }
    }
    // Slot ownership.
    let sender_master = if c.node(s).is_master() {
        Some(s)
    } else {
        c.node(s).master
    };
    let dirty = sender_master.is_some_and(|m| c.node(m).slots[..] != h.myslots[..]);
    if c.node(s).is_master() && dirty {
        update_slots_config_with(server, store, s, sender_config_epoch, &h.myslots);
    }
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if dirty {
        for slot in 0..SLOTS {
            if !slot_bit(&h.myslots, slot) {
                continue;
            }
            let Some(owner) = c.slot_owner(slot) else {
                continue;
            };
            if owner == s || c.slot_unclaimed(slot) {
                continue;
            }
            if c.node(owner).config_epoch > sender_config_epoch {
                tracing::debug!(
                    "Node {} has old slots configuration, sending an UPDATE message about {}",
                    c.node(s).name,
                    c.node(owner).name
                );
                if let Some(sl) = c.node(s).link {
                    bus::send_update(server, sl, owner);
                }
                break;
            }
        }
    }
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    // clusterHandleConfigEpochCollision.
    let me = c.me();
    if me.is_master()
        && c.node(s).is_master()
        && sender_config_epoch == me.config_epoch
        && c.node(s).config_epoch == me.config_epoch
        && c.node(s).name > me.name
    {
        c.current_epoch += 1;
        let e = c.current_epoch;
        c.me_mut().config_epoch = e;
        if let Err(err) = c.save_config(true) {
            tracing::warn!("Fatal: can't update cluster config file: {err}");
        }
        tracing::debug!(
            "WARNING: configEpoch collision with node {}. configEpoch set to {e}",
            c.node(s).name
        );
    }
    process_gossip(server, link, Some(s), h, gossip, now);
    if let Some(c) = server.cluster.as_deref_mut() {
        if c.contains(s) {
            c.node_mut(s).hostname = hostname.unwrap_or_default();
        }
    }
}

/// clearNodeFailureIfNeeded: a failed node reachable again loses FAIL at
/// once when a replica or a master without slots, else when nobody took
/// its slots within twice the node timeout.
fn clear_failure_if_needed(c: &mut ClusterState, k: NodeKey, now: u64, timeout: u64) {
    let n = c.node(k);
    if n.is_replica() || n.numslots == 0 {
        tracing::info!(
            "Clear FAIL state for node {}: {} is reachable again.",
            n.name,
            if n.is_replica() {
                "replica"
            } else {
                "master without slots"
            }
        );
        c.node_mut(k).flags &= !nf::FAIL;
        c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    }
    let n = c.node(k);
    if n.is_master() && n.numslots > 0 && now.saturating_sub(n.fail_time) > timeout * 2 {
        tracing::info!(
            "Clear FAIL state for node {}: is reachable again and nobody is serving its slots \
             after some time.",
            n.name
        );
        c.node_mut(k).flags &= !nf::FAIL;
        c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    }
}

/// markNodeAsFailingIfNeeded: PFAIL becomes FAIL once a majority of
/// masters (this one included, when a master) report it, and everybody
/// is told.
pub fn mark_failing_if_needed(server: &mut ServerState, k: NodeKey, now: u64) {
    let timeout = super::node_timeout(server);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let quorum = c.size / 2 + 1;
    let n = c.node(k);
    if !n.timed_out() || n.failed() {
        return;
    }
    let mut failures = c.failure_reports(k, now, timeout);
    if c.me().is_master() {
        failures += 1;
    }
    if failures < quorum {
        return;
    }
    let n = c.node_mut(k);
    tracing::info!("Marking node {} as failing (quorum reached).", n.name);
    n.flags &= !nf::PFAIL;
    n.flags |= nf::FAIL;
    n.fail_time = now;
    let name = n.name.clone();
    c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    bus::send_fail(server, &name);
}

/// clusterProcessGossipSection: failure reports from masters, fresher pong
/// times, new addresses of unreachable nodes, and nodes not known yet.
fn process_gossip(
    server: &mut ServerState,
    link: u64,
    sender: Option<NodeKey>,
    h: &Header,
    gossip: &[Gossip],
    now: u64,
) {
    let timeout = super::node_timeout(server);
    let sender = sender.or_else(|| {
        let c = server.cluster.as_deref()?;
        c.links
            .get(&link)
            .and_then(|l| l.node)
            .or_else(|| c.lookup(&h.sender))
    });
    for g in gossip {
        let Some(c) = server.cluster.as_deref_mut() else {
            return;
        };
        let failing = g.flags & (nf::FAIL | nf::PFAIL) != 0;
        if let Some(k) = c.lookup(&g.name) {
            if let Some(s) = sender.filter(|&s| c.contains(s) && c.node(s).is_master()) {
                if k != c.myself {
                    if failing {
                        if c.add_failure_report(k, s, now) {
                            tracing::debug!(
                                "Node {} reported node {} as not reachable.",
                                c.node(s).name,
                                c.node(k).name
                            );
                        }
                        mark_failing_if_needed(server, k, now);
                    } else if c.del_failure_report(k, s, now, timeout) {
                        tracing::debug!(
                            "Node {} reported node {} is back online.",
                            c.node(s).name,
                            c.node(k).name
                        );
                    }
                }
            }
            let Some(c) = server.cluster.as_deref_mut() else {
                return;
            };
            if !failing && c.node(k).ping_sent == 0 && c.failure_reports(k, now, timeout) == 0 {
                let pong = u64::from(g.pong_received) * 1000;
                let n = c.node_mut(k);
                if pong <= now + 500 && pong > n.pong_received {
                    n.pong_received = pong;
                }
            }
            let n = c.node(k);
            if n.flags & (nf::FAIL | nf::PFAIL) != 0
                && g.flags & nf::NOADDR == 0
                && !failing
                && (!n.ip.eq_ignore_ascii_case(&g.ip) || n.port != g.port || n.cport != g.cport)
            {
                let n = c.node_mut(k);
                let old = n.link.take();
                n.ip = g.ip.clone();
                n.port = g.port;
                n.pport = g.pport;
                n.cport = g.cport;
                n.flags &= !nf::NOADDR;
                if let Some(o) = old {
                    bus::free_link(server, o);
                }
            }
        } else if sender.is_some() && g.flags & nf::NOADDR == 0 {
            let name = name_str(&g.name);
            if super::valid_name(name.as_bytes()) && !c.blacklisted(&name, now) {
                let mut n = Node::new(name, g.flags, now);
                n.ip = g.ip.clone();
                n.port = g.port;
                n.pport = g.pport;
                n.cport = g.cport;
                c.add_node(n);
            }
        }
    }
}

/// clusterUpdateSlotsConfigWith: slots `sender` claims with a newer config
/// epoch (or that nobody claims) become its own. A master left without
/// slots follows the sender; slots lost with keys in them are emptied.
pub fn update_slots_config_with(
    server: &mut ServerState,
    store: &mut Store,
    sender: NodeKey,
    sender_epoch: u64,
    slots: &[u8; SLOTS / 8],
) {
    let allow_migration = server.config.get_bool("cluster-allow-replica-migration");
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if sender == c.myself {
        tracing::warn!("Discarding UPDATE message about myself.");
        return;
    }
    let me = c.myself;
    let curmaster = if c.me().is_master() {
        Some(me)
    } else {
        c.me().master
    };
    let mut dirty_slots = Vec::new();
    let (mut sender_slots, mut migrated_our_slots) = (0, 0);
    let mut new_master = None;
    for slot in 0..SLOTS {
        if slot_bit(slots, slot) {
            sender_slots += 1;
            if c.slot_owner(slot) == Some(sender) {
                c.set_not_claiming(slot, false);
                continue;
            }
            if c.importing_from.contains_key(&(slot as u16)) {
                continue;
            }
            let newer = c
                .slot_owner(slot)
                .is_none_or(|o| c.node(o).config_epoch < sender_epoch);
            if c.slot_unclaimed(slot) || newer {
                if c.slot_owner(slot) == Some(me)
                    && crate::server::cluster::has_keys_in_slot(store, slot as u16)
                {
                    dirty_slots.push(slot as u16);
                }
                if c.slot_owner(slot).is_some() && c.slot_owner(slot) == curmaster {
                    new_master = Some(sender);
                    migrated_our_slots += 1;
                }
                c.del_slot(slot);
                c.add_slot(sender, slot);
                c.set_not_claiming(slot, false);
                c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE | todo::FSYNC_CONFIG;
            }
        } else if c.slot_owner(slot) == Some(sender) {
            c.set_not_claiming(slot, true);
        }
    }
    let cur_empty = curmaster.is_some_and(|m| c.node(m).numslots == 0);
    if new_master.is_some() && cur_empty && (allow_migration || sender_slots == migrated_our_slots)
    {
        tracing::warn!(
            "Configuration change detected. Reconfiguring myself as a replica of {}",
            c.node(sender).name
        );
        c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE | todo::FSYNC_CONFIG;
        super::failover::set_master(server, sender);
        return;
    }
    let grand = c
        .me()
        .master
        .and_then(|m| c.node(m).master)
        .filter(|&g| g != me);
    if let Some(g) = grand {
        tracing::warn!(
            "I'm a sub-replica! Reconfiguring myself as a replica of grandmaster {}",
            c.node(g).name
        );
        c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE | todo::FSYNC_CONFIG;
        super::failover::set_master(server, g);
        return;
    }
    for slot in dirty_slots {
        super::del_keys_in_slot(server, store, slot);
    }
}
