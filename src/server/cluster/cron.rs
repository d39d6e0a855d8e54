//! The cluster's timers (Redis's clusterCron, ten times a second, and
//! clusterBeforeSleep): reconnecting links, pinging, failure detection,
//! the replica's failover and migration, the state, and saving nodes.conf
//! after changes. Also the start-up of cluster mode (clusterInit).

use super::bus;
use super::msg::kind;
use super::{node_flag as nf, todo, ClusterState, Health};
use crate::server::ServerState;
use crate::store::Store;
use crate::util::clock;

/// clusterInit: locks and loads nodes.conf (or creates this node and
/// writes it) and derives the announced address; the bus port to listen on.
pub fn init(server: &mut ServerState) -> Result<u16, String> {
    let dir = server.config.get("dir");
    let file = server.config.get("cluster-config-file");
    let mut path = std::path::PathBuf::from(&file);
    if path.is_relative() && !dir.is_empty() {
        path = std::path::Path::new(&dir).join(path);
    }
    let now = clock::real_now_ms();
    let mut c = ClusterState::new(super::random_name(), path.clone(), now);
    c.lock_config()?;
    if c.load_config(&path, now)? {
        // Loaded.
    } else {
        tracing::info!("No cluster configuration found, I'm {}", c.me().name);
        c.save_config(true)
            .map_err(|e| format!("Fatal: can't update cluster config file: {e}"))?;
    }
    let port = bus::client_port(server);
    let cluster_port = server.config.get_i64("cluster-port").unwrap_or(0) as u16;
    if cluster_port == 0 && u32::from(port) > 65535 - super::PORT_INCR {
        return Err(
            "Redis port number too high. Cluster communication port is 10,000 port \
                    numbers higher than your Redis port. Your Redis port number must be 55535 \
                    or less."
                .into(),
        );
    }
    let cport = if cluster_port != 0 {
        cluster_port
    } else {
        port + super::PORT_INCR as u16
    };
    server.cluster = Some(Box::new(c));
    update_myself(server);
    Ok(cport)
}

/// clusterUpdateMyself*: the announced ports, IP, hostname and the
/// nofailover flag, and the routing directives, from the configuration;
/// run at start and by every CONFIG SET, so a change shows in the next
/// message, CLUSTER NODES and the next command.
pub fn update_myself(server: &mut ServerState) {
    let (port, pport, cport) = bus::announced_ports(server);
    let announce_ip = server.config.get("cluster-announce-ip");
    let hostname = server.config.get("cluster-announce-hostname");
    let no_failover = server.config.get_bool("cluster-replica-no-failover");
    let endpoint_type = server.config.get("cluster-preferred-endpoint-type");
    let allow_when_down = (
        server.config.get_bool("cluster-allow-reads-when-down"),
        server
            .config
            .get_bool("cluster-allow-pubsubshard-when-down"),
    );
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    c.endpoint_type = endpoint_type;
    c.allow_when_down = allow_when_down;
    let ip_changed = announce_ip != c.announced_ip;
    if ip_changed {
        c.announced_ip.clone_from(&announce_ip);
    }
    let me = c.me_mut();
    me.port = port;
    me.pport = pport;
    me.cport = cport;
    if ip_changed {
        // An empty directive leaves the IP to be learned from the next
        // MEET or PING, as Redis does.
        me.ip = announce_ip;
    }
    me.hostname = hostname;
    let old = me.flags;
    me.flags &= !nf::NOFAILOVER;
    if no_failover {
        me.flags |= nf::NOFAILOVER;
    }
    if me.flags != old {
        c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
    }
}

/// verifyClusterConfigWithData, after loading the data set: keys only in
/// database 0, and every slot with keys served (or imported) here.
pub fn verify_with_data(server: &mut ServerState, store: &Store) -> Result<(), String> {
    let Some(c) = server.cluster.as_deref_mut() else {
        return Ok(());
    };
    if c.me().is_replica() {
        return Ok(());
    }
    if store.dbs.iter().skip(1).any(|d| d.dict.len() != 0) {
        return Err(
            "You can't have keys in a DB different than DB 0 when in Cluster mode. Exiting.".into(),
        );
    }
    let mut with_keys = vec![false; super::SLOTS];
    store.dbs[0].dict.for_each(|e| {
        with_keys[usize::from(super::key_hash_slot(e.key()))] = true;
    });
    let me = c.myself;
    let mut changed = false;
    for (slot, _) in with_keys.iter().enumerate().filter(|(_, k)| **k) {
        let owner = c.slot_owner(slot);
        if owner == Some(me) || c.importing_from.contains_key(&(slot as u16)) {
            continue;
        }
        changed = true;
        match owner {
            None => {
                tracing::warn!(
                    "I have keys for unassigned slot {slot}. Taking responsibility for it."
                );
                c.add_slot(me, slot);
            }
            Some(o) => {
                tracing::warn!(
                    "I have keys for slot {slot}, but the slot is assigned to another node. \
                     Setting it to importing state."
                );
                c.importing_from.insert(slot as u16, o);
            }
        }
    }
    if changed {
        c.save_config(true)
            .map_err(|e| format!("Fatal: can't update cluster config file: {e}"))?;
    }
    Ok(())
}

/// clusterCron.
pub fn cron(server: &mut ServerState, store: &mut Store) {
    let now = clock::real_now_ms();
    let timeout = super::node_timeout(server);
    let handshake_timeout = timeout.max(1000);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    c.cron_runs += 1;
    let iteration = c.cron_runs;
    c.pfail_nodes = 0;
    tend_link_send_buffers(server);
    // Reconnect links, drop stale handshakes.
    let keys = server
        .cluster
        .as_deref()
        .map(ClusterState::keys)
        .unwrap_or_default();
    for k in keys {
        let Some(c) = server.cluster.as_deref_mut() else {
            return;
        };
        if !c.contains(k) {
            continue;
        }
        let n = c.node(k);
        if n.flags & (nf::MYSELF | nf::NOADDR) != 0 {
            continue;
        }
        let (pfail, stale, unlinked) = (
            n.timed_out(),
            n.in_handshake() && now.saturating_sub(n.ctime) > handshake_timeout,
            n.link.is_none(),
        );
        if pfail {
            c.pfail_nodes += 1;
        }
        if stale {
            let links = c.del_node(k);
            bus::close_links(server, &links);
            continue;
        }
        if unlinked {
            bus::connect(server, k, now);
        }
    }
    // Ping the node with the oldest pong of five random ones, once a
    // second.
    if iteration % 10 == 0 {
        let Some(c) = server.cluster.as_deref() else {
            return;
        };
        let keys = c.keys();
        let mut best: Option<(u64, u64)> = None;
        for _ in 0..5 {
            let k = keys[(rand::random::<u64>() % keys.len() as u64) as usize];
            let n = c.node(k);
            let Some(link) = n.link else {
                continue;
            };
            if n.ping_sent != 0 || n.flags & (nf::MYSELF | nf::HANDSHAKE) != 0 {
                continue;
            }
            if best.is_none_or(|(pong, _)| pong > n.pong_received) {
                best = Some((n.pong_received, link));
            }
        }
        if let Some((_, link)) = best {
            bus::send_ping(server, link, kind::PING);
        }
    }
    // Failure detection, orphaned masters, pings due.
    let (mut orphaned, mut max_replicas, mut my_replicas) = (0, 0, 0);
    let mut update_state = false;
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    for k in c.keys() {
        let Some(c) = server.cluster.as_deref_mut() else {
            return;
        };
        if !c.contains(k) {
            continue;
        }
        let n = c.node(k);
        if n.flags & (nf::MYSELF | nf::NOADDR | nf::HANDSHAKE) != 0 {
            continue;
        }
        if c.me().is_replica() && n.is_master() && !n.failed() {
            let ok = n.replicas.iter().filter(|&&r| !c.node(r).failed()).count();
            if ok == 0 && n.numslots > 0 && n.flags & nf::MIGRATE_TO != 0 {
                orphaned += 1;
            }
            max_replicas = max_replicas.max(ok);
            if c.me().master == Some(k) {
                my_replicas = ok;
            }
        }
        let ping_delay = now.saturating_sub(n.ping_sent);
        let data_delay = now.saturating_sub(n.data_received);
        let link = n.link.and_then(|l| c.links.get(&l).map(|m| (l, *m)));
        if let Some((l, meta)) = link {
            if now.saturating_sub(meta.ctime) > timeout
                && n.ping_sent != 0
                && ping_delay > timeout / 2
                && data_delay > timeout / 2
            {
                bus::free_link(server, l);
                continue;
            }
        }
        let Some(c) = server.cluster.as_deref_mut() else {
            return;
        };
        let n = c.node(k);
        // A link still connecting takes the PING too: it goes once
        // connected, and its time starts failure detection meanwhile.
        if let Some((l, _)) = link {
            if n.ping_sent == 0 && now.saturating_sub(n.pong_received) > timeout / 2 {
                bus::send_ping(server, l, kind::PING);
                continue;
            }
            if c.election.mf_end != 0 && c.me().is_master() && c.election.mf_replica == Some(k) {
                bus::send_ping(server, l, kind::PING);
                continue;
            }
        }
        if n.ping_sent == 0 {
            continue;
        }
        let delay = ping_delay.min(data_delay);
        if delay > timeout && n.flags & (nf::PFAIL | nf::FAIL) == 0 {
            tracing::debug!("*** NODE {} possibly failing", n.name);
            c.node_mut(k).flags |= nf::PFAIL;
            update_state = true;
        }
    }
    // A replica whose replication is off follows its master again.
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    let me = c.me();
    if me.is_replica() && server.repl.master.is_none() {
        if let Some(m) = me.master.filter(|&m| c.node(m).flags & nf::NOADDR == 0) {
            let (ip, port) = (c.node(m).ip.clone(), c.node(m).port);
            crate::server::repl::set_master(server, ip, port);
        }
    }
    super::failover::check_manual_timeout(server, now);
    let allow_migration = server.config.get_bool("cluster-allow-replica-migration");
    if server
        .cluster
        .as_deref()
        .is_some_and(|c| c.me().is_replica())
    {
        super::failover::handle_manual_failover(server);
        super::failover::handle_replica_failover(server, now);
        if orphaned > 0 && max_replicas >= 2 && my_replicas == max_replicas && allow_migration {
            super::failover::handle_migration(server, max_replicas, now);
        }
    }
    let require = server.config.get_bool("cluster-require-full-coverage");
    if let Some(c) = server.cluster.as_deref_mut() {
        if update_state || c.state == Health::Fail {
            c.update_state(now, require, timeout);
        }
    }
    let _ = store;
}

/// Send buffers mostly unused shrink (clusterNodeCronResizeBuffers), and
/// a link whose send buffer grew past cluster-link-sendbuf-limit is closed
/// (freeClusterLinkOnBufferLimitReached), to be reconnected.
fn tend_link_send_buffers(server: &mut ServerState) {
    if let Some(net) = &server.net {
        net.borrow_mut().resize_bus_send_buffers();
    }
    let limit = server
        .config
        .get_i64("cluster-link-sendbuf-limit")
        .unwrap_or(0)
        .max(0) as usize;
    if limit == 0 {
        return;
    }
    let (Some(c), Some(net)) = (server.cluster.as_deref(), server.net.as_ref()) else {
        return;
    };
    let over: Vec<(u64, bool, String)> = {
        let net = net.borrow();
        c.links
            .iter()
            .filter(|(&id, _)| net.bus().send_buffer(id).0 > limit)
            .map(|(&id, l)| {
                let name = l
                    .node
                    .filter(|&k| c.contains(k))
                    .map(|k| c.node(k).name.clone());
                (id, l.inbound, name.unwrap_or_default())
            })
            .collect()
    };
    for (id, inbound, name) in over {
        let used = server
            .net
            .as_ref()
            .map_or(0, |n| n.borrow().bus().send_buffer(id).0);
        tracing::warn!(
            "Freeing cluster link({} node {name}, used memory: {used}) due to exceeding send \
             buffer memory limit.",
            if inbound { "from" } else { "to" }
        );
        bus::free_link(server, id);
        if let Some(c) = server.cluster.as_deref_mut() {
            c.links_buffer_limit_exceeded += 1;
        }
    }
}

/// clusterBeforeSleep: the work messages and commands asked for.
pub fn before_sleep(server: &mut ServerState) {
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let flags = c.todo;
    c.todo = 0;
    let lost = std::mem::take(&mut c.lost_slots);
    let now = clock::real_now_ms();
    // Slots deleted and given back in one step (a SETSLOT or an update
    // that keeps them here) are still served.
    let gone: Vec<u16> = lost
        .into_iter()
        .filter(|&s| !c.serves_as_mine(usize::from(s)))
        .collect();
    if !gone.is_empty() {
        crate::server::pubsub::unsubscribe_shard_slots(server, &gone);
    }
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if flags & todo::HANDLE_MANUALFAILOVER != 0 {
        if c.me().is_replica() {
            super::failover::handle_manual_failover(server);
            super::failover::handle_replica_failover(server, now);
        }
    } else if flags & todo::HANDLE_FAILOVER != 0 {
        super::failover::handle_replica_failover(server, now);
    }
    let require = server.config.get_bool("cluster-require-full-coverage");
    let timeout = super::node_timeout(server);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if flags & todo::UPDATE_STATE != 0 {
        c.update_state(now, require, timeout);
    }
    if flags & todo::SAVE_CONFIG != 0 {
        if let Err(e) = c.save_config(flags & todo::FSYNC_CONFIG != 0) {
            // Redis exits here (clusterSaveConfigOrDie).
            tracing::warn!("Fatal: can't update cluster config file: {e}");
            std::process::exit(1);
        }
    }
}
