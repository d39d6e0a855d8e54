//! Loading the AOF through the one command path (Redis's
//! `loadAppendOnlyFiles` with its fake client): at start-up, and again for
//! DEBUG LOADAOF.

use super::call::{call, Caller};
use super::client::Client;
use super::ServerState;
use crate::net::request::Argv;
use crate::store::Store;

/// Loads the AOF files the manifest names, each command run by a client
/// of its own. `on_start` also opens the incremental file for appending
/// (and, without a manifest, loads the RDB file and writes a first base);
/// otherwise a missing manifest is an error, as for Redis's reload.
pub fn load(server: &mut ServerState, store: &mut Store, on_start: bool) -> std::io::Result<()> {
    // The loader works on its own copy of what persistence owns while the
    // commands it reads run on the rest of the server.
    let config = server.config.clone();
    let mut state = std::mem::take(&mut server.persist);
    let mut aof = std::mem::take(&mut server.aof);
    let mut client = Client::internal();
    let mut out = Vec::new();
    server.loading = true;
    let result = {
        let mut replay = |store: &mut Store, argv: Argv<'_>| {
            call(server, store, &mut client, argv, &mut out, Caller::Aof);
            // A blocking command found nothing: it does not block here.
            server.blocking.pending = None;
            out.clear();
        };
        let mut p = crate::persist::Persistence {
            config: &config,
            state: &mut state,
            aof: &mut aof,
            repl: None,
        };
        if on_start {
            crate::persist::aof_load::load_on_start(store, &mut p, &mut replay)
        } else {
            crate::persist::aof_load::reload(store, &mut p, &mut replay)
        }
    };
    server.loading = false;
    server.persist = state;
    server.aof = aof;
    result
}
