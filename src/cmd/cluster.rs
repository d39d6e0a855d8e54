//! Redis Cluster's commands as a standalone Redis 7.0 answers them
//! (`clusterCommand`, `readonlyCommand`... with `cluster-enabled no`):
//! every CLUSTER subcommand, READONLY, READWRITE and ASKING refuse with
//! the same error, so clients probing for a cluster learn there is none.

use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};

/// The handlers this family registers: Redis 7.0's CLUSTER subcommands.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("cluster|addslots", disabled),
    ("cluster|addslotsrange", disabled),
    ("cluster|bumpepoch", disabled),
    ("cluster|count-failure-reports", disabled),
    ("cluster|countkeysinslot", disabled),
    ("cluster|delslots", disabled),
    ("cluster|delslotsrange", disabled),
    ("cluster|failover", disabled),
    ("cluster|flushslots", disabled),
    ("cluster|forget", disabled),
    ("cluster|getkeysinslot", disabled),
    ("cluster|help", disabled),
    ("cluster|info", disabled),
    ("cluster|keyslot", disabled),
    ("cluster|links", disabled),
    ("cluster|meet", disabled),
    ("cluster|myid", disabled),
    ("cluster|nodes", disabled),
    ("cluster|replicas", disabled),
    ("cluster|replicate", disabled),
    ("cluster|reset", disabled),
    ("cluster|saveconfig", disabled),
    ("cluster|set-config-epoch", disabled),
    ("cluster|setslot", disabled),
    ("cluster|shards", disabled),
    ("cluster|slaves", disabled),
    ("cluster|slots", disabled),
    ("readonly", disabled),
    ("readwrite", disabled),
    ("asking", disabled),
];

/// The one reply of a standalone server.
fn disabled(_ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    Err(Error::err("This instance has cluster support disabled"))
}
