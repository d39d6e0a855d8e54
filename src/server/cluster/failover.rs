//! Replicas in a cluster (Redis's clusterSetMaster, clusterReset, the
//! election of clusterHandleSlaveFailover, clusterSendFailoverAuthIfNeeded,
//! the manual failover of CLUSTER FAILOVER, and replica migration): a
//! replica whose master failed asks the masters for votes in a new epoch,
//! and with a majority takes its master's slots.

use super::bus::{self, Target};
use super::msg::{kind, mflag, Body, Header};
use super::{node_flag as nf, todo, Health, NodeKey, SLOTS};
use crate::server::ServerState;
use crate::store::Store;
use crate::util::clock;

/// How long a manual failover may take (CLUSTER_MF_TIMEOUT, ms).
pub const MF_TIMEOUT: u64 = 5000;
/// How long an orphaned master waits for a migrating replica (ms).
const MIGRATION_DELAY: u64 = 5000;
/// Seconds between two logs of the same reason not to fail over.
const RELOG_PERIOD_S: u64 = 300;

/// Why a replica is not failing over (`CLUSTER_CANT_FAILOVER_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CantFailover {
    /// It has no reason to.
    #[default]
    None,
    /// Disconnected from its master too long.
    DataAge,
    /// Waiting for its election delay.
    WaitingDelay,
    /// The election expired.
    Expired,
    /// Waiting for votes.
    WaitingVotes,
}

/// The election and manual failover state (the `failover_auth_*` and
/// `mf_*` fields of clusterState).
#[derive(Debug, Default)]
pub struct Election {
    /// When the election starts, or started (ms).
    pub auth_time: u64,
    /// Votes received.
    pub auth_count: usize,
    /// Votes were asked for.
    pub auth_sent: bool,
    /// This replica's rank among its master's replicas.
    pub auth_rank: usize,
    /// The epoch of the election.
    pub auth_epoch: u64,
    /// The last reason logged for not failing over.
    pub cant_failover: CantFailover,
    /// When that reason was logged (s).
    pub cant_logged_s: u64,
    /// When the manual failover must end (ms); 0 when none runs.
    pub mf_end: u64,
    /// On a master: the replica failing over manually.
    pub mf_replica: Option<NodeKey>,
    /// On a replica: the offset the paused master announced.
    pub mf_master_offset: Option<u64>,
    /// On a replica: the election of the manual failover may start.
    pub mf_can_start: bool,
}

/// clusterSetMaster: makes this node a replica of `master` and starts
/// replicating from it.
pub fn set_master(server: &mut ServerState, master: NodeKey) {
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    c.set_my_master(master);
    let (ip, port) = (c.node(master).ip.clone(), c.node(master).port);
    reset_manual(server);
    crate::server::repl::set_master(server, ip, port);
}

/// replicationUnsetMaster: stops following a master, keeping the data.
fn unset_master(server: &mut ServerState) {
    if server.repl.master.is_some() {
        crate::server::repl::drop_master_link(server);
        server.repl.promote();
    }
}

/// resetManualFailover: forgets a manual failover; a master that paused
/// writes for it resumes them.
pub fn reset_manual(server: &mut ServerState) {
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let paused = c.election.mf_replica.is_some();
    let e = &mut c.election;
    e.mf_end = 0;
    e.mf_can_start = false;
    e.mf_replica = None;
    e.mf_master_offset = None;
    if paused {
        server.pause.unpause_clients();
    }
}

/// CLUSTER RESET (clusterReset): a replica becomes an empty master; every
/// slot and every other node is forgotten; HARD also zeroes the epochs and
/// takes a new name.
pub fn reset(server: &mut ServerState, store: &mut Store, hard: bool) {
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if c.me().is_replica() {
        let me = c.myself;
        c.set_node_as_master(me);
        unset_master(server);
        store.flush_all();
    }
    reset_manual(server);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    c.close_all_slots();
    for slot in 0..SLOTS {
        c.del_slot(slot);
    }
    let mut links = Vec::new();
    for k in c.keys() {
        if k != c.myself {
            links.extend(c.del_node(k));
        }
    }
    if hard {
        c.current_epoch = 0;
        c.last_vote_epoch = 0;
        c.me_mut().config_epoch = 0;
        tracing::warn!("configEpoch set to 0 via CLUSTER RESET HARD");
        let me = c.myself;
        c.rename(me, super::random_name());
        tracing::info!("Node hard reset, now I'm {}", c.me().name);
    }
    c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE | todo::FSYNC_CONFIG;
    bus::close_links(server, &links);
}

/// CLUSTER FAILOVER on a replica: TAKEOVER claims the master's slots at
/// once with a new epoch; FORCE starts an election now; otherwise the
/// master is asked to pause writes (MFSTART) until this replica caught up.
pub fn request_manual(server: &mut ServerState, _store: &mut Store, force: bool, takeover: bool) {
    reset_manual(server);
    let now = clock::real_now_ms();
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    c.election.mf_end = now + MF_TIMEOUT;
    if takeover {
        tracing::warn!("Taking over the master (user request).");
        c.bump_epoch_without_consensus();
        replace_your_master(server);
    } else if force {
        tracing::warn!("Forced failover user request accepted.");
        c.election.mf_can_start = true;
    } else {
        tracing::warn!("Manual failover user request accepted.");
        if let Some(m) = c.me().master {
            bus::send_empty(server, m, kind::MFSTART);
        }
    }
}

/// clusterFailoverReplaceYourMaster: this replica becomes a master with
/// its master's slots, and tells everybody.
pub fn replace_your_master(server: &mut ServerState) {
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let Some(old) = c.me().master.filter(|_| c.me().is_replica()) else {
        return;
    };
    let me = c.myself;
    c.set_node_as_master(me);
    unset_master(server);
    let require = server.config.get_bool("cluster-require-full-coverage");
    let timeout = super::node_timeout(server);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    for slot in 0..SLOTS {
        if c.node(old).has_slot(slot) {
            c.del_slot(slot);
            c.add_slot(me, slot);
        }
    }
    c.update_state(clock::real_now_ms(), require, timeout);
    if let Err(e) = c.save_config(true) {
        tracing::warn!("Fatal: can't update cluster config file: {e}");
    }
    bus::broadcast_pong(server, Target::All);
    reset_manual(server);
}

/// clusterSendFailoverAuthIfNeeded: a master with slots votes once per
/// epoch for a replica whose master failed (or that fails over manually),
/// if no slot it claims has a newer owner, and not twice for one master
/// within two node timeouts.
pub fn send_auth_if_needed(server: &mut ServerState, node: NodeKey, req: &Header, now: u64) {
    let timeout = super::node_timeout(server);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if c.me().is_replica() || c.me().numslots == 0 {
        return;
    }
    let name = c.node(node).name.clone();
    if req.current_epoch < c.current_epoch {
        tracing::warn!(
            "Failover auth denied to {name}: reqEpoch ({}) < curEpoch({})",
            req.current_epoch,
            c.current_epoch
        );
        return;
    }
    if c.last_vote_epoch == c.current_epoch {
        tracing::warn!(
            "Failover auth denied to {name}: already voted for epoch {}",
            c.current_epoch
        );
        return;
    }
    let force_ack = req.mflags[0] & mflag::FORCEACK != 0;
    let n = c.node(node);
    let master = n.master;
    if n.is_master() {
        tracing::warn!("Failover auth denied to {name}: it is a master node");
        return;
    }
    let Some(m) = master else {
        tracing::warn!("Failover auth denied to {name}: I don't know its master");
        return;
    };
    if !c.node(m).failed() && !force_ack {
        tracing::warn!("Failover auth denied to {name}: its master is up");
        return;
    }
    let since_vote = now.saturating_sub(c.node(m).voted_time);
    if since_vote < timeout * 2 {
        tracing::warn!(
            "Failover auth denied to {name}: can't vote about this master before {} milliseconds",
            timeout * 2 - since_vote
        );
        return;
    }
    for slot in 0..SLOTS {
        if !bus::slot_bit(&req.myslots, slot) || c.slot_unclaimed(slot) {
            continue;
        }
        let Some(owner) = c.slot_owner(slot) else {
            continue;
        };
        let e = c.node(owner).config_epoch;
        if e <= req.config_epoch {
            continue;
        }
        tracing::warn!(
            "Failover auth denied to {name}: slot {slot} epoch ({e}) > reqEpoch ({})",
            req.config_epoch
        );
        return;
    }
    c.last_vote_epoch = c.current_epoch;
    c.node_mut(m).voted_time = now;
    c.todo |= todo::SAVE_CONFIG | todo::FSYNC_CONFIG;
    let epoch = c.current_epoch;
    bus::send_empty(server, node, kind::AUTH_ACK);
    tracing::warn!("Failover auth granted to {name} for epoch {epoch}");
}

/// clusterGetSlaveRank: how many of the master's other replicas (that may
/// fail over) have a greater replication offset.
fn rank(server: &ServerState) -> usize {
    let Some(c) = server.cluster.as_deref() else {
        return 0;
    };
    let Some(m) = c.me().master else {
        return 0;
    };
    let mine = server.repl.replica_offset();
    c.node(m)
        .replicas
        .iter()
        .filter(|&&r| r != c.myself)
        .map(|&r| c.node(r))
        .filter(|r| r.flags & nf::NOFAILOVER == 0 && r.repl_offset > mine)
        .count()
}

/// clusterLogCantFailover: logs why this replica does not fail over, when
/// the reason changed or five minutes passed, and not in the first
/// node-timeout-plus-five-seconds of its master's failure.
fn log_cant_failover(server: &mut ServerState, reason: CantFailover, now: u64) {
    let timeout = super::node_timeout(server);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let now_s = now / 1000;
    if reason == c.election.cant_failover
        && now_s.saturating_sub(c.election.cant_logged_s) < RELOG_PERIOD_S
    {
        return;
    }
    c.election.cant_failover = reason;
    if let Some(m) = c.me().master {
        let m = c.node(m);
        if m.failed() && now.saturating_sub(m.fail_time) < timeout + 5000 {
            return;
        }
    }
    let msg = match reason {
        CantFailover::DataAge => {
            "Disconnected from master for longer than allowed. Please check the \
             'cluster-replica-validity-factor' configuration option."
        }
        CantFailover::WaitingDelay => "Waiting the delay before I can start a new failover.",
        CantFailover::Expired => "Failover attempt expired.",
        CantFailover::WaitingVotes => "Waiting for votes, but majority still not reached.",
        CantFailover::None => "Unknown reason code.",
    };
    c.election.cant_logged_s = now_s;
    tracing::warn!("Currently unable to failover: {msg}");
}

/// How long this replica has been without its master's data (ms).
fn data_age(server: &ServerState, now: u64) -> u64 {
    use crate::server::repl::LinkState;
    let Some(m) = &server.repl.master else {
        return 0;
    };
    let now_s = now / 1000;
    if m.state == LinkState::Connected {
        now_s.saturating_sub(m.last_io_ms / 1000) * 1000
    } else {
        now_s.saturating_sub(m.down_since_ms / 1000) * 1000
    }
}

/// clusterHandleSlaveFailover.
pub fn handle_replica_failover(server: &mut ServerState, now: u64) {
    let timeout = super::node_timeout(server);
    let no_failover = server.config.get_bool("cluster-replica-no-failover");
    let validity = server
        .config
        .get_i64("cluster-replica-validity-factor")
        .unwrap_or(10)
        .max(0) as u64;
    let ping_period = server
        .config
        .get_i64("repl-ping-replica-period")
        .unwrap_or(10)
        .max(0) as u64;
    let age = data_age(server, now);
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    c.todo &= !todo::HANDLE_FAILOVER;
    let auth_age = now as i64 - c.election.auth_time as i64;
    let quorum = c.size / 2 + 1;
    let manual = c.election.mf_end != 0 && c.election.mf_can_start;
    let auth_timeout = (timeout * 2).max(2000) as i64;
    let retry = auth_timeout * 2;
    let me = c.me();
    let master = me.master.filter(|_| me.is_replica());
    let no_reason = match master {
        None => true,
        Some(m) => {
            let m = c.node(m);
            (!m.failed() && !manual) || (no_failover && !manual) || m.numslots == 0
        }
    };
    if no_reason {
        c.election.cant_failover = CantFailover::None;
        return;
    }
    let mut age = age;
    if age > timeout {
        age -= timeout;
    }
    if validity != 0 && age > ping_period * 1000 + timeout * validity && !manual {
        log_cant_failover(server, CantFailover::DataAge, now);
        return;
    }
    if auth_age > retry {
        let my_rank = rank(server);
        let Some(c) = server.cluster.as_deref_mut() else {
            return;
        };
        let e = &mut c.election;
        e.auth_time = now + 500 + rand::random::<u64>() % 500;
        e.auth_count = 0;
        e.auth_sent = false;
        e.auth_rank = my_rank;
        e.auth_time += my_rank as u64 * 1000;
        if e.mf_end != 0 {
            e.auth_time = now;
            e.auth_rank = 0;
            c.todo |= todo::HANDLE_FAILOVER;
        }
        tracing::warn!(
            "Start of election delayed for {} milliseconds (rank #{}, offset {}).",
            c.election.auth_time.saturating_sub(now),
            c.election.auth_rank,
            server.repl.replica_offset()
        );
        bus::broadcast_pong(server, Target::LocalReplicas);
        return;
    }
    if !c.election.auth_sent && c.election.mf_end == 0 {
        let new_rank = rank(server);
        let Some(c) = server.cluster.as_deref_mut() else {
            return;
        };
        if new_rank > c.election.auth_rank {
            let added = (new_rank - c.election.auth_rank) as u64 * 1000;
            c.election.auth_time += added;
            c.election.auth_rank = new_rank;
            tracing::warn!(
                "Replica rank updated to #{new_rank}, added {added} milliseconds of delay."
            );
        }
    }
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if now < c.election.auth_time {
        log_cant_failover(server, CantFailover::WaitingDelay, now);
        return;
    }
    if auth_age > auth_timeout {
        log_cant_failover(server, CantFailover::Expired, now);
        return;
    }
    if !c.election.auth_sent {
        c.current_epoch += 1;
        c.election.auth_epoch = c.current_epoch;
        tracing::warn!(
            "Starting a failover election for epoch {}.",
            c.current_epoch
        );
        let force = c.election.mf_end != 0;
        c.election.auth_sent = true;
        c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE | todo::FSYNC_CONFIG;
        let mut h = bus::header(server, kind::AUTH_REQUEST);
        if force {
            h.mflags[0] |= mflag::FORCEACK;
        }
        bus::broadcast(server, &h, &Body::Empty);
        return;
    }
    if c.election.auth_count >= quorum {
        tracing::warn!("Failover election won: I'm the new master.");
        let epoch = c.election.auth_epoch;
        if c.me().config_epoch < epoch {
            c.me_mut().config_epoch = epoch;
            tracing::warn!("configEpoch set to {epoch} after successful failover");
        }
        replace_your_master(server);
    } else {
        log_cant_failover(server, CantFailover::WaitingVotes, now);
    }
}

/// clusterHandleManualFailover: once this replica processed everything
/// its paused master announced, the election may start.
pub fn handle_manual_failover(server: &mut ServerState) {
    let offset = server.repl.replica_offset();
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    let e = &mut c.election;
    if e.mf_end == 0 || e.mf_can_start {
        return;
    }
    let Some(wanted) = e.mf_master_offset else {
        return;
    };
    if wanted == offset {
        e.mf_can_start = true;
        tracing::warn!("All master replication stream processed, manual failover can start.");
        c.todo |= todo::HANDLE_FAILOVER;
        return;
    }
    c.todo |= todo::HANDLE_MANUALFAILOVER;
}

/// manualFailoverCheckTimeout.
pub fn check_manual_timeout(server: &mut ServerState, now: u64) {
    let Some(c) = server.cluster.as_deref() else {
        return;
    };
    if c.election.mf_end != 0 && c.election.mf_end < now {
        tracing::warn!("Manual failover timed out.");
        reset_manual(server);
    }
}

/// clusterHandleSlaveMigration: a replica of a master with the most
/// working replicas (the one with the smallest name among them) moves to
/// a master left without any, once it has been so for five seconds.
pub fn handle_migration(server: &mut ServerState, max_replicas: usize, now: u64) {
    let barrier = server
        .config
        .get_i64("cluster-migration-barrier")
        .unwrap_or(1)
        .max(0) as usize;
    let Some(c) = server.cluster.as_deref_mut() else {
        return;
    };
    if c.state != Health::Ok {
        return;
    }
    let Some(my_master) = c.me().master else {
        return;
    };
    let ok = c
        .node(my_master)
        .replicas
        .iter()
        .filter(|&&r| !c.node(r).failed() && !c.node(r).timed_out())
        .count();
    if ok <= barrier {
        return;
    }
    let mut candidate = c.myself;
    let mut target = None;
    for k in c.keys() {
        let n = c.node(k);
        let mut orphaned = !(n.is_replica() || n.failed()) && n.flags & nf::MIGRATE_TO != 0;
        let ok_replicas = if n.is_master() {
            n.replicas.iter().filter(|&&r| !c.node(r).failed()).count()
        } else {
            0
        };
        if ok_replicas > 0 {
            orphaned = false;
        }
        if orphaned {
            if target.is_none() && n.numslots > 0 {
                target = Some(k);
            }
            if n.orphaned_time == 0 {
                c.node_mut(k).orphaned_time = now;
            }
        } else {
            c.node_mut(k).orphaned_time = 0;
        }
        if ok_replicas == max_replicas {
            for &r in &c.node(k).replicas {
                if c.node(r).name < c.node(candidate).name {
                    candidate = r;
                }
            }
        }
    }
    if let Some(t) = target {
        if candidate == c.myself && now.saturating_sub(c.node(t).orphaned_time) > MIGRATION_DELAY {
            tracing::warn!("Migrating to orphaned master {}", c.node(t).name);
            set_master(server, t);
        }
    }
}
