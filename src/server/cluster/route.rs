//! Which node serves a command (Redis's getNodeByQuery and
//! clusterRedirectClient): every key of the command — of each queued
//! command for EXEC — must hash to one slot; the slot's owner serves it,
//! or the client is redirected with -MOVED, -ASK (the slot is migrating
//! and a key is missing here), -TRYAGAIN, -CROSSSLOT or -CLUSTERDOWN.

use super::{key_hash_slot, ClusterState, Health, NodeKey};
use crate::error::Error;
use crate::server::keyspec::{self, Args, KeyRef};
use crate::server::table::{flag, Command};

/// Why a command is not served here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// Keys of different slots.
    CrossSlot,
    /// Several keys of a slot being migrated, not all here.
    Unstable,
    /// The slot is migrating and the key is not here: ask the target.
    Ask(u16, NodeKey),
    /// Another node serves the slot.
    Moved(u16, NodeKey),
    /// The cluster is down.
    DownState,
    /// The slot is served by no node.
    DownUnbound,
    /// The cluster is down and only reads are allowed.
    DownReadOnly,
}

impl Redirect {
    /// The error a client gets (clusterRedirectClient); `use_pport`
    /// names the node's plaintext port (a plain client of a TLS cluster).
    pub fn error(self, cluster: &ClusterState, use_pport: bool) -> Error {
        let msg = match self {
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::Unstable => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::DownState => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownReadOnly => {
                "CLUSTERDOWN The cluster is down and only accepts read commands".into()
            }
            Redirect::DownUnbound => "CLUSTERDOWN Hash slot not served".into(),
            Redirect::Ask(slot, n) | Redirect::Moved(slot, n) => {
                let kind = if matches!(self, Redirect::Ask(..)) {
                    "ASK"
                } else {
                    "MOVED"
                };
                let node = cluster.node(n);
                let port = if use_pport && node.pport != 0 {
                    node.pport
                } else {
                    node.port
                };
                format!("{kind} {slot} {}:{port}", cluster.endpoint(n))
            }
        };
        Error::Redirect(msg)
    }
}

/// What the query needs to know of the client and the configuration.
pub struct Query {
    /// The client sent READONLY.
    pub readonly: bool,
    /// The client sent ASKING before this command.
    pub asking: bool,
    /// cluster-allow-reads-when-down.
    pub allow_reads_when_down: bool,
    /// cluster-allow-pubsubshard-when-down.
    pub allow_pubsubshard_when_down: bool,
}

impl Query {
    /// What `client` and the cluster's settings say.
    pub fn of(cluster: &ClusterState, client: &crate::server::client::Client) -> Query {
        Query {
            readonly: client.cluster_readonly,
            asking: client.asking,
            allow_reads_when_down: cluster.allow_when_down.0,
            allow_pubsubshard_when_down: cluster.allow_when_down.1,
        }
    }
}

/// The key positions of `cmd` for routing (Redis's getKeysFromCommand):
/// the command's own key finder for commands with movable keys, else the
/// legacy first/last/step range.
pub fn key_positions<A: Args + ?Sized>(cmd: &Command, argv: &A, out: &mut Vec<KeyRef>) {
    out.clear();
    if cmd.has(flag::MOVABLEKEYS) || cmd.first_key <= 0 {
        if !cmd.key_specs.is_empty() {
            keyspec::find_keys_by_proc(cmd.key_finder, &cmd.key_specs, argv, out);
        }
        return;
    }
    let argc = argv.count() as i32;
    let last = if cmd.last_key < 0 {
        argc + cmd.last_key
    } else {
        cmd.last_key
    };
    let step = cmd.key_step.max(1);
    let mut i = cmd.first_key;
    while i <= last && i < argc {
        out.push(KeyRef {
            pos: i as usize,
            flags: 0,
        });
        i += step;
    }
}

/// A command whose arguments name sharded channels.
pub fn is_sharded_pubsub(cmd: &Command) -> bool {
    matches!(
        cmd.name.as_str(),
        "ssubscribe" | "sunsubscribe" | "spublish"
    )
}

/// The node that serves `cmds` (one command, or EXEC's queue) for the
/// client, as getNodeByQuery: Ok(slot) when it is this node (`None` when
/// no key is involved), else the redirection. `exists` tells whether a
/// key is in database 0 (for slots being migrated or imported).
pub fn node_for<'a, A: Args>(
    cluster: &ClusterState,
    cmds: impl Iterator<Item = (&'a Command, A)>,
    write: bool,
    q: &Query,
    mut exists: impl FnMut(&[u8]) -> bool,
) -> Result<Option<u16>, Redirect> {
    let mut first: Option<Vec<u8>> = None;
    let mut slot = 0u16;
    let mut owner = None;
    let (mut migrating, mut importing) = (false, false);
    let (mut multiple_keys, mut missing, mut existing) = (false, 0, 0);
    let (mut sharded, mut migrate, mut asking_cmd) = (false, false, false);
    let mut refs = Vec::new();
    for (cmd, argv) in cmds {
        sharded |= is_sharded_pubsub(cmd);
        migrate |= cmd.name == "migrate";
        // RESTORE-ASKING carries Redis's CMD_ASKING flag.
        asking_cmd |= cmd.name == "restore-asking";
        key_positions(cmd, &argv, &mut refs);
        for r in &refs {
            let key = argv.arg(r.pos);
            let this = key_hash_slot(key);
            match &first {
                None => {
                    first = Some(key.to_vec());
                    slot = this;
                    let Some(n) = cluster.slot_owner(usize::from(slot)) else {
                        return Err(Redirect::DownUnbound);
                    };
                    owner = Some(n);
                    if n == cluster.myself && cluster.migrating_to.contains_key(&slot) {
                        migrating = true;
                    } else if cluster.importing_from.contains_key(&slot) {
                        importing = true;
                    }
                }
                Some(f) if f.as_slice() != key => {
                    if this != slot {
                        return Err(Redirect::CrossSlot);
                    }
                    multiple_keys = true;
                }
                Some(_) => {}
            }
            if (migrating || importing) && !is_sharded_pubsub(cmd) {
                if exists(key) {
                    existing += 1;
                } else {
                    missing += 1;
                }
            }
        }
    }
    let Some(n) = owner else {
        return Ok(None);
    };
    if cluster.state != Health::Ok {
        if sharded {
            if !q.allow_pubsubshard_when_down {
                return Err(Redirect::DownState);
            }
        } else if !q.allow_reads_when_down {
            return Err(Redirect::DownState);
        } else if write {
            return Err(Redirect::DownReadOnly);
        }
    }
    // MIGRATE moves keys freely out of and into an open slot.
    if (migrating || importing) && migrate {
        return Ok(Some(slot));
    }
    if migrating && missing > 0 {
        return Err(if existing > 0 {
            Redirect::Unstable
        } else {
            // invariant: `migrating` is set only for a slot in the map.
            Redirect::Ask(slot, cluster.migrating_to[&slot])
        });
    }
    if importing && (q.asking || asking_cmd) {
        return if multiple_keys && missing > 0 {
            Err(Redirect::Unstable)
        } else {
            Ok(Some(slot))
        };
    }
    let me = cluster.me();
    if (q.readonly || sharded) && !write && me.is_replica() && me.master == Some(n) {
        return Ok(Some(slot));
    }
    if n != cluster.myself {
        return Err(Redirect::Moved(slot, n));
    }
    Ok(Some(slot))
}
