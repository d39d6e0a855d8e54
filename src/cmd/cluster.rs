//! Redis Cluster's commands (`clusterCommand`, `readonlyCommand`,
//! `readwriteCommand`, `askingCommand` in `cluster.c`): CLUSTER's
//! subcommands over the node table and slot map of `server/cluster`, and
//! the client flags READONLY, READWRITE and ASKING. With `cluster-enabled
//! no` every one of them refuses as a standalone Redis does.

use super::args;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::cluster::{
    self, key_hash_slot, node_flag as nf, todo, ClusterState, Health, NodeKey, MESSAGE_TYPES, SLOTS,
};

/// The handlers this family registers: Redis 7.0's CLUSTER subcommands.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("cluster|addslots", addslots),
    ("cluster|addslotsrange", addslotsrange),
    ("cluster|bumpepoch", bumpepoch),
    ("cluster|count-failure-reports", count_failure_reports),
    ("cluster|countkeysinslot", countkeysinslot),
    ("cluster|delslots", addslots),
    ("cluster|delslotsrange", addslotsrange),
    ("cluster|failover", failover),
    ("cluster|flushslots", flushslots),
    ("cluster|forget", forget),
    ("cluster|getkeysinslot", getkeysinslot),
    ("cluster|help", help),
    ("cluster|info", info),
    ("cluster|keyslot", keyslot),
    ("cluster|links", links),
    ("cluster|meet", meet),
    ("cluster|myid", myid),
    ("cluster|nodes", nodes),
    ("cluster|replicas", replicas),
    ("cluster|replicate", replicate),
    ("cluster|reset", reset),
    ("cluster|saveconfig", saveconfig),
    ("cluster|set-config-epoch", set_config_epoch),
    ("cluster|setslot", setslot),
    ("cluster|shards", shards),
    ("cluster|slaves", replicas),
    ("cluster|slots", slots),
    ("readonly", readonly),
    ("readwrite", readwrite),
    ("asking", asking),
];

const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
];

/// The one reply of a standalone server.
fn disabled() -> Error {
    Error::err("This instance has cluster support disabled")
}

/// The cluster, or the standalone refusal.
fn state<'a>(ctx: &'a mut Ctx<'_>) -> Result<&'a mut ClusterState, Error> {
    ctx.server.cluster.as_deref_mut().ok_or_else(disabled)
}

/// getSlotOrReply.
fn slot_arg(arg: &[u8]) -> Result<usize, Error> {
    args::int(arg)
        .ok()
        .filter(|s| (0..SLOTS as i64).contains(s))
        .map(|s| s as usize)
        .ok_or(Error::err("Invalid or out of range slot"))
}

/// The node named `arg`, or Redis's "Unknown node" error.
fn node_arg(c: &ClusterState, arg: &[u8]) -> Result<NodeKey, Error> {
    c.lookup(arg)
        .ok_or_else(|| Error::err_owned(format!("Unknown node {}", args::lossy(arg))))
}

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    super::client::write_help(ctx, HELP);
    Ok(())
}

/// CLUSTER ADDSLOTS / DELSLOTS slot...: all slots are checked before any
/// changes.
fn addslots(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let del = argv.get(1).eq_ignore_ascii_case(b"delslots");
    let slots = argv
        .iter_from(2)
        .map(slot_arg)
        .collect::<Result<Vec<_>, _>>();
    let c = state(ctx)?;
    let slots = slots?;
    let ranges: Vec<(usize, usize)> = slots.iter().map(|&s| (s, s)).collect();
    update_slots(c, &ranges, del)?;
    ctx.reply.ok();
    Ok(())
}

/// CLUSTER ADDSLOTSRANGE / DELSLOTSRANGE start end...
fn addslotsrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let del = argv.get(1).eq_ignore_ascii_case(b"delslotsrange");
    state(ctx)?;
    if argv.len() % 2 == 1 {
        return Err(Error::WrongArity(format!(
            "cluster|{}",
            String::from_utf8_lossy(argv.get(1)).to_lowercase()
        )));
    }
    let mut ranges = Vec::new();
    let mut i = 2;
    while i + 1 < argv.len() {
        let start = slot_arg(argv.get(i))?;
        let end = slot_arg(argv.get(i + 1))?;
        if start > end {
            return Err(Error::err_owned(format!(
                "start slot number {start} is greater than end slot number {end}"
            )));
        }
        ranges.push((start, end));
        i += 2;
    }
    let c = state(ctx)?;
    update_slots(c, &ranges, del)?;
    ctx.reply.ok();
    Ok(())
}

/// checkSlotAssignmentsOrReply then clusterUpdateSlots.
fn update_slots(c: &mut ClusterState, ranges: &[(usize, usize)], del: bool) -> CmdResult {
    let mut seen = vec![false; SLOTS];
    for &(start, end) in ranges {
        for slot in start..=end {
            let owner = c.slot_owner(slot);
            if del && owner.is_none() {
                return Err(Error::err_owned(format!(
                    "Slot {slot} is already unassigned"
                )));
            }
            if !del && owner.is_some() {
                return Err(Error::err_owned(format!("Slot {slot} is already busy")));
            }
            if std::mem::replace(&mut seen[slot], true) {
                return Err(Error::err_owned(format!(
                    "Slot {slot} specified multiple times"
                )));
            }
        }
    }
    let me = c.myself;
    for (slot, _) in seen.iter().enumerate().filter(|(_, s)| **s) {
        c.importing_from.remove(&(slot as u16));
        if del {
            c.del_slot(slot);
        } else {
            c.add_slot(me, slot);
        }
    }
    c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    Ok(())
}

fn bumpepoch(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let c = state(ctx)?;
    let bumped = c.bump_epoch_without_consensus();
    let line = format!(
        "{} {}",
        if bumped { "BUMPED" } else { "STILL" },
        c.me().config_epoch
    );
    ctx.reply.simple(&line);
    Ok(())
}

fn count_failure_reports(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let timeout = ctx
        .server
        .config
        .get_i64("cluster-node-timeout")
        .unwrap_or(15000) as u64;
    let now = crate::util::clock::real_now_ms();
    let c = state(ctx)?;
    let n = node_arg(c, argv.get(2))?;
    let count = c.failure_reports(n, now, timeout);
    ctx.reply.int(count as i64);
    Ok(())
}

fn countkeysinslot(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    let slot = args::int(argv.get(2))?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(Error::err("Invalid slot"));
    }
    let n = cluster::count_keys_in_slot(ctx.store, slot as u16);
    ctx.reply.int(n as i64);
    Ok(())
}

fn getkeysinslot(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    let slot = args::int(argv.get(2))?;
    let max = args::int(argv.get(3))?;
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return Err(Error::err("Invalid slot or number of keys"));
    }
    let keys = cluster::keys_in_slot(ctx.store, slot as u16, max as usize);
    ctx.reply.array(keys.len());
    for k in &keys {
        ctx.reply.bulk(k);
    }
    Ok(())
}

/// CLUSTER FAILOVER [FORCE|TAKEOVER], on a replica.
fn failover(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    let (mut force, mut takeover) = (false, false);
    if argv.len() == 3 {
        if argv.get(2).eq_ignore_ascii_case(b"force") {
            force = true;
        } else if argv.get(2).eq_ignore_ascii_case(b"takeover") {
            force = true;
            takeover = true;
        } else {
            return Err(Error::Syntax);
        }
    }
    let c = state(ctx)?;
    let me = c.me();
    if me.is_master() {
        return Err(Error::err("You should send CLUSTER FAILOVER to a replica"));
    }
    let Some(master) = me.master else {
        return Err(Error::err("I'm a replica but my master is unknown to me"));
    };
    let m = c.node(master);
    if !force && (m.failed() || m.link.is_none()) {
        return Err(Error::err(
            "Master is down or failed, please use CLUSTER FAILOVER FORCE",
        ));
    }
    cluster::failover::request_manual(ctx.server, ctx.store, force, takeover);
    ctx.reply.ok();
    Ok(())
}

fn flushslots(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    if ctx.store.dbs[0].dict.len() != 0 {
        return Err(Error::err(
            "DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    let c = state(ctx)?;
    let me = c.myself;
    c.del_node_slots(me);
    c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    ctx.reply.ok();
    Ok(())
}

fn forget(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let now = crate::util::clock::real_now_ms();
    let c = state(ctx)?;
    let n = node_arg(c, argv.get(2))?;
    if n == c.myself {
        return Err(Error::err("I tried hard but I can't forget myself..."));
    }
    if c.me().is_replica() && c.me().master == Some(n) {
        return Err(Error::err("Can't forget my master!"));
    }
    c.blacklist_add(n, now);
    let links = c.del_node(n);
    c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    cluster::bus::close_links(ctx.server, &links);
    ctx.reply.ok();
    Ok(())
}

/// CLUSTER INFO.
fn info(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let c = state(ctx)?;
    let text = info_text(c);
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}

/// CLUSTER INFO's text.
pub fn info_text(c: &ClusterState) -> String {
    use std::fmt::Write as _;
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for slot in 0..SLOTS {
        let Some(n) = c.slot_owner(slot) else {
            continue;
        };
        assigned += 1;
        let n = c.node(n);
        if n.failed() {
            fail += 1;
        } else if n.timed_out() {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\n\
         cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
        if c.state == Health::Ok { "ok" } else { "fail" },
        c.len(),
        c.size,
        c.current_epoch,
        c.my_epoch()
    );
    for (dir, counts) in [("sent", &c.sent), ("received", &c.received)] {
        let mut total = 0;
        for (i, &n) in counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            total += n;
            let _ = write!(
                s,
                "cluster_stats_messages_{}_{dir}:{n}\r\n",
                MESSAGE_TYPES[i]
            );
        }
        let _ = write!(s, "cluster_stats_messages_{dir}:{total}\r\n");
    }
    let _ = write!(
        s,
        "total_cluster_links_buffer_limit_exceeded:{}\r\n",
        c.links_buffer_limit_exceeded
    );
    s
}

fn keyslot(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    ctx.reply.int(i64::from(key_hash_slot(argv.get(2))));
    Ok(())
}

/// CLUSTER LINKS: one map per bus link.
fn links(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    let links = cluster::bus::describe_links(ctx.server);
    ctx.reply.array(links.len());
    for l in links {
        ctx.reply.map(6);
        ctx.reply.bulk(b"direction");
        ctx.reply.bulk(if l.inbound { b"from" } else { b"to" });
        ctx.reply.bulk(b"node");
        ctx.reply.bulk(l.node.as_bytes());
        ctx.reply.bulk(b"create-time");
        ctx.reply.int(l.ctime as i64);
        ctx.reply.bulk(b"events");
        ctx.reply.bulk(if l.pending_output { b"rw" } else { b"r" });
        ctx.reply.bulk(b"send-buffer-allocated");
        ctx.reply.int(l.sndbuf_alloc as i64);
        ctx.reply.bulk(b"send-buffer-used");
        ctx.reply.int(l.sndbuf_used as i64);
    }
    Ok(())
}

/// CLUSTER MEET ip port [bus-port].
fn meet(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    let port = args::int(argv.get(3)).map_err(|_| {
        Error::err_owned(format!(
            "Invalid TCP base port specified: {}",
            args::lossy(argv.get(3))
        ))
    })?;
    let cport = match argv.try_get(4) {
        Some(a) => args::int(a).map_err(|_| {
            Error::err_owned(format!(
                "Invalid TCP bus port specified: {}",
                args::lossy(a)
            ))
        })?,
        None => port + i64::from(cluster::PORT_INCR),
    };
    let now = crate::util::clock::real_now_ms();
    let c = state(ctx)?;
    let ip = args::lossy(argv.get(2));
    if !c.start_handshake(&ip, port, cport, now) {
        return Err(Error::err_owned(format!(
            "Invalid node address specified: {ip}:{}",
            args::lossy(argv.get(3))
        )));
    }
    ctx.reply.ok();
    Ok(())
}

fn myid(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let c = state(ctx)?;
    let name = c.me().name.clone();
    ctx.reply.bulk(name.as_bytes());
    Ok(())
}

fn nodes(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let use_pport = ctx.server.use_pport(ctx.client);
    let c = state(ctx)?;
    let text = c.describe_all(0, use_pport);
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}

/// CLUSTER REPLICAS / SLAVES node-id: the replicas' CLUSTER NODES lines.
fn replicas(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let use_pport = ctx.server.use_pport(ctx.client);
    let c = state(ctx)?;
    let n = node_arg(c, argv.get(2))?;
    if c.node(n).is_replica() {
        return Err(Error::err("The specified node is not a master"));
    }
    let lines: Vec<String> = c
        .node(n)
        .replicas
        .iter()
        .map(|&r| c.describe(r, use_pport))
        .collect();
    ctx.reply.array(lines.len());
    for l in lines {
        ctx.reply.bulk(l.as_bytes());
    }
    Ok(())
}

/// CLUSTER REPLICATE node-id.
fn replicate(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let empty = ctx.store.dbs[0].dict.len() == 0;
    let c = state(ctx)?;
    let n = node_arg(c, argv.get(2))?;
    if n == c.myself {
        return Err(Error::err("Can't replicate myself"));
    }
    if c.node(n).is_replica() {
        return Err(Error::err("I can only replicate a master, not a replica."));
    }
    if c.me().is_master() && (c.me().numslots != 0 || !empty) {
        return Err(Error::err(
            "To set a master the node must be empty and without assigned slots.",
        ));
    }
    cluster::failover::set_master(ctx.server, n);
    if let Some(c) = ctx.server.cluster.as_deref_mut() {
        c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    }
    ctx.reply.ok();
    Ok(())
}

/// CLUSTER RESET [HARD|SOFT].
fn reset(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    let hard = match argv.try_get(2) {
        None => false,
        Some(a) if a.eq_ignore_ascii_case(b"hard") => true,
        Some(a) if a.eq_ignore_ascii_case(b"soft") => false,
        Some(_) => return Err(Error::Syntax),
    };
    let keys = ctx.store.dbs[ctx.client.db].dict.len();
    let c = state(ctx)?;
    if c.me().is_master() && keys != 0 {
        return Err(Error::err(
            "CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    cluster::failover::reset(ctx.server, ctx.store, hard);
    ctx.reply.ok();
    Ok(())
}

fn saveconfig(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let c = state(ctx)?;
    c.save_config(true)
        .map_err(|e| Error::err_owned(format!("error saving the cluster node config: {e}")))?;
    ctx.reply.ok();
    Ok(())
}

fn set_config_epoch(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    let epoch = args::int(argv.get(2))?;
    let c = state(ctx)?;
    if epoch < 0 {
        return Err(Error::err_owned(format!(
            "Invalid config epoch specified: {epoch}"
        )));
    }
    if c.len() > 1 {
        return Err(Error::err(
            "The user can assign a config epoch only when the node does not know any other node.",
        ));
    }
    if c.me().config_epoch != 0 {
        return Err(Error::err("Node config epoch is already non-zero"));
    }
    let epoch = epoch as u64;
    c.me_mut().config_epoch = epoch;
    tracing::warn!("configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH");
    if c.current_epoch < epoch {
        c.current_epoch = epoch;
    }
    c.todo |= todo::UPDATE_STATE | todo::SAVE_CONFIG;
    ctx.reply.ok();
    Ok(())
}

/// CLUSTER SETSLOT slot IMPORTING|MIGRATING|NODE node-id | STABLE.
fn setslot(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let c = state(ctx)?;
    if c.me().is_replica() {
        return Err(Error::err("Please use SETSLOT only with masters."));
    }
    let slot = slot_arg(argv.get(2))?;
    let action = argv.get(3).to_ascii_lowercase();
    let unknown =
        |a: &[u8]| Error::err_owned(format!("I don't know about node {}", args::lossy(a)));
    let me = c.myself;
    let s16 = slot as u16;
    match (action.as_slice(), argv.len()) {
        (b"migrating", 5) => {
            if c.slot_owner(slot) != Some(me) {
                return Err(Error::err_owned(format!(
                    "I'm not the owner of hash slot {slot}"
                )));
            }
            let n = c.lookup(argv.get(4)).ok_or_else(|| unknown(argv.get(4)))?;
            if c.node(n).is_replica() {
                return Err(Error::err("Target node is not a master"));
            }
            c.migrating_to.insert(s16, n);
        }
        (b"importing", 5) => {
            if c.slot_owner(slot) == Some(me) {
                return Err(Error::err_owned(format!(
                    "I'm already the owner of hash slot {slot}"
                )));
            }
            let n = c.lookup(argv.get(4)).ok_or_else(|| unknown(argv.get(4)))?;
            if c.node(n).is_replica() {
                return Err(Error::err("Target node is not a master"));
            }
            c.importing_from.insert(s16, n);
        }
        (b"stable", 4) => {
            c.importing_from.remove(&s16);
            c.migrating_to.remove(&s16);
        }
        (b"node", 5) => {
            let n = node_arg(c, argv.get(4))?;
            if c.node(n).is_replica() {
                return Err(Error::err("Target node is not a master"));
            }
            let keys = cluster::count_keys_in_slot(ctx.store, s16);
            let allow_migration = ctx
                .server
                .config
                .get_bool("cluster-allow-replica-migration");
            let Some(c) = ctx.server.cluster.as_deref_mut() else {
                return Err(disabled());
            };
            let was_mine = c.slot_owner(slot) == Some(me);
            if was_mine && n != me && keys != 0 {
                return Err(Error::err_owned(format!(
                    "Can't assign hashslot {slot} to a different node while I still hold keys \
                     for this hash slot."
                )));
            }
            if keys == 0 {
                c.migrating_to.remove(&s16);
            }
            c.del_slot(slot);
            c.add_slot(n, slot);
            if was_mine && n != me && c.me().numslots == 0 && allow_migration {
                tracing::warn!(
                    "Configuration change detected. Reconfiguring myself as a replica of {}",
                    c.node(n).name
                );
                c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE | todo::FSYNC_CONFIG;
                cluster::failover::set_master(ctx.server, n);
            } else if n == me && c.importing_from.contains_key(&s16) {
                if c.bump_epoch_without_consensus() {
                    tracing::warn!("configEpoch updated after importing slot {slot}");
                }
                c.importing_from.remove(&s16);
                cluster::bus::broadcast_pong(ctx.server, cluster::bus::Target::All);
            }
        }
        _ => {
            return Err(Error::err(
                "Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
            ))
        }
    }
    if let Some(c) = ctx.server.cluster.as_deref_mut() {
        c.todo |= todo::SAVE_CONFIG | todo::UPDATE_STATE;
    }
    ctx.reply.ok();
    Ok(())
}

/// The fields CLUSTER SLOTS and SHARDS show for a node's address.
struct Endpoint {
    ip: String,
    hostname: String,
    port: u16,
    name: String,
}

fn endpoint(c: &ClusterState, n: NodeKey, use_pport: bool) -> Endpoint {
    let node = c.node(n);
    Endpoint {
        ip: node.ip.clone(),
        hostname: node.hostname.clone(),
        port: if use_pport && node.pport != 0 {
            node.pport
        } else {
            node.port
        },
        name: node.name.clone(),
    }
}

/// isReplicaAvailable: not failed and with some replicated data.
fn replica_available(ctx: &Ctx<'_>, c: &ClusterState, n: NodeKey) -> bool {
    let node = c.node(n);
    if node.failed() {
        return false;
    }
    let offset = if node.flags & nf::MYSELF != 0 {
        ctx.server.repl.replica_offset()
    } else {
        node.repl_offset
    };
    offset != 0
}

/// CLUSTER SLOTS.
fn slots(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let Some(c) = ctx.server.cluster.as_deref() else {
        return Err(disabled());
    };
    let endpoint_type = ctx.server.config.get("cluster-preferred-endpoint-type");
    let use_pport = ctx.server.use_pport(ctx.client);
    let mut rows = Vec::new();
    for (start, end, n) in c.slot_ranges() {
        let mut nodes = vec![endpoint(c, n, use_pport)];
        for &r in &c.node(n).replicas {
            if replica_available(ctx, c, r) {
                nodes.push(endpoint(c, r, use_pport));
            }
        }
        rows.push((start, end, nodes));
    }
    let r = &mut ctx.reply;
    r.array(rows.len());
    for (start, end, nodes) in rows {
        r.array(2 + nodes.len());
        r.int(start as i64);
        r.int(end as i64);
        for e in nodes {
            r.array(4);
            match endpoint_type.as_str() {
                "hostname" if !e.hostname.is_empty() => r.bulk(e.hostname.as_bytes()),
                "hostname" => r.bulk(b"?"),
                "unknown-endpoint" => r.null(),
                _ => r.bulk(e.ip.as_bytes()),
            }
            r.int(i64::from(e.port));
            r.bulk(e.name.as_bytes());
            let mut extra = Vec::new();
            if endpoint_type != "ip" {
                extra.push(("ip", e.ip.clone()));
            }
            if endpoint_type != "hostname" && !e.hostname.is_empty() {
                extra.push(("hostname", e.hostname.clone()));
            }
            r.map(extra.len());
            for (k, v) in extra {
                r.bulk(k.as_bytes());
                r.bulk(v.as_bytes());
            }
        }
    }
    Ok(())
}

/// CLUSTER SHARDS: per master, its slot ranges and its nodes' details.
fn shards(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let Some(c) = ctx.server.cluster.as_deref() else {
        return Err(disabled());
    };
    let ranges = c.slot_ranges();
    let tls_cluster = ctx.server.config.get_bool("tls-cluster");
    let my_offset = ctx.server.repl.replica_offset();
    let master_offset = ctx.server.repl.current_offset();
    let masters: Vec<NodeKey> = c
        .nodes()
        .filter(|(_, n)| n.is_master())
        .map(|(k, _)| k)
        .collect();
    let r = &mut ctx.reply;
    r.array(masters.len());
    for m in masters {
        r.map(2);
        r.bulk(b"slots");
        let mine: Vec<_> = ranges.iter().filter(|(_, _, n)| *n == m).collect();
        r.array(mine.len() * 2);
        for (s, e, _) in mine {
            r.int(*s as i64);
            r.int(*e as i64);
        }
        r.bulk(b"nodes");
        let shard = c.shard_of(m);
        r.array(shard.len());
        for k in shard {
            let n = c.node(k);
            let mark = r.defer();
            let mut fields = 0;
            r.bulk(b"id");
            r.bulk(n.name.as_bytes());
            fields += 1;
            // A TLS cluster shows both: the plaintext port and the TLS one.
            let (plain, tls) = if tls_cluster {
                (n.pport, n.port)
            } else {
                (n.port, 0)
            };
            if plain != 0 {
                r.bulk(b"port");
                r.int(i64::from(plain));
                fields += 1;
            }
            if tls != 0 {
                r.bulk(b"tls-port");
                r.int(i64::from(tls));
                fields += 1;
            }
            r.bulk(b"ip");
            r.bulk(n.ip.as_bytes());
            r.bulk(b"endpoint");
            r.bulk(c.endpoint(k).as_bytes());
            fields += 2;
            if !n.hostname.is_empty() {
                r.bulk(b"hostname");
                r.bulk(n.hostname.as_bytes());
                fields += 1;
            }
            let offset = if n.flags & nf::MYSELF != 0 {
                if n.is_replica() {
                    my_offset
                } else {
                    master_offset
                }
            } else {
                n.repl_offset
            };
            r.bulk(b"role");
            r.bulk(if n.is_replica() {
                b"replica"
            } else {
                b"master"
            });
            r.bulk(b"replication-offset");
            r.int(offset as i64);
            r.bulk(b"health");
            let health: &[u8] = if n.failed() {
                b"fail"
            } else if n.is_replica() && offset == 0 {
                b"loading"
            } else {
                b"online"
            };
            r.bulk(health);
            fields += 3;
            r.finish_deferred_map(mark, fields);
        }
    }
    Ok(())
}

fn readonly(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    ctx.client.cluster_readonly = true;
    ctx.reply.ok();
    Ok(())
}

fn readwrite(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    ctx.client.cluster_readonly = false;
    ctx.reply.ok();
    Ok(())
}

fn asking(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    state(ctx)?;
    ctx.client.asking = true;
    ctx.reply.ok();
    Ok(())
}
