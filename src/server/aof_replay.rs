//! Loading the data set through the one command path (Redis's
//! `loadDataFromDisk` and `loadAppendOnlyFiles` with its fake client): at
//! start-up, and the AOF again for DEBUG LOADAOF. While it loads, the
//! server serves its clients between chunks of the files (every
//! `loading-process-events-interval-bytes` of an RDB image, every 1024
//! commands of an AOF), answering -LOADING to commands not flagged
//! `loading`; a shutdown then stops the load.

use super::call::{call, Caller};
use super::client::Client;
use super::{LoadProgress, ServerState};
use crate::net::request::Argv;
use crate::persist::LoadHost;
use crate::store::Store;

/// The server's side of a load: the AOF's client and the serving hook.
struct Host<'a> {
    server: &'a mut ServerState,
    client: Client,
    out: Vec<u8>,
    /// The base file's libraries are in the engine (done before the first
    /// command; FUNCTION commands keep them in step from then on).
    functions_installed: bool,
}

impl LoadHost for Host<'_> {
    fn replay(&mut self, store: &mut Store, argv: Argv<'_>) {
        // Libraries from the base file's RDB preamble exist before the
        // commands after it run.
        if !self.functions_installed {
            self.server.install_functions(store);
            self.functions_installed = true;
        }
        call(
            self.server,
            store,
            &mut self.client,
            argv,
            &mut self.out,
            Caller::Aof,
        );
        // A blocking command found nothing: it does not block here.
        self.server.blocking.pending = None;
        self.out.clear();
    }

    fn knows(&self, argv: Argv<'_>) -> bool {
        let sub = (argv.len() > 1).then(|| argv.get(1));
        self.server.table.resolve(argv.get(0), sub).is_some()
    }

    fn progress(&mut self, store: &mut Store, bytes: u64) -> bool {
        self.server.load_progress.loaded_bytes += bytes;
        (self.server.serve_while_busy)(self.server, store);
        !self.server.shutdown
    }

    fn am_master(&self) -> bool {
        self.server.repl.master.is_none()
            && self.server.config.get("replicaof").is_empty()
            && !self
                .server
                .cluster
                .as_ref()
                .is_some_and(|c| c.me().is_replica())
    }
}

/// What to load.
#[derive(Clone, Copy, PartialEq, Eq)]
enum What {
    /// Start-up: the AOF with `appendonly yes` (opening its incremental
    /// file for appending; without a manifest, the RDB file and a first
    /// base), the RDB file otherwise.
    Start,
    /// DEBUG LOADAOF: the files the manifest names (no manifest is an
    /// error).
    AofAgain,
}

/// Loads the data set at start-up. A shutdown asked for meanwhile stops
/// the load and is not an error: the server then stops, saving nothing.
pub fn load_on_start(server: &mut ServerState, store: &mut Store) -> std::io::Result<()> {
    run(server, store, What::Start)
}

/// Loads the AOF files the manifest names again (DEBUG LOADAOF).
pub fn reload_aof(server: &mut ServerState, store: &mut Store) -> std::io::Result<()> {
    run(server, store, What::AofAgain)
}

fn run(server: &mut ServerState, store: &mut Store, what: What) -> std::io::Result<()> {
    // The loader works on its own copy of what persistence owns while the
    // commands it reads run on the rest of the server.
    let config = server.config.clone();
    let mut state = std::mem::take(&mut server.persist);
    let mut aof = std::mem::take(&mut server.aof);
    let aof_files = what == What::AofAgain || config.appendonly;
    // What the load runs is the data set already on disk: nothing of it
    // is propagated again, even from inside DEBUG LOADAOF, whose own
    // invocation propagates (Redis turns the AOF off while it loads).
    let propagating = std::mem::replace(&mut server.propagation.on, false);
    server.loading = true;
    server.load_progress = LoadProgress::start(if aof_files {
        crate::persist::aof_load::files_size(&config)
    } else {
        crate::persist::rdb_size(&config)
    });
    let result = {
        let mut host = Host {
            server: &mut *server,
            client: Client::internal(),
            out: Vec::new(),
            functions_installed: false,
        };
        let mut p = crate::persist::Persistence {
            config: &config,
            state: &mut state,
            aof: &mut aof,
            repl: None,
            replica_snapshot: false,
        };
        match what {
            What::Start if aof_files => {
                crate::persist::aof_load::load_on_start(store, &mut p, &mut host)
            }
            What::Start => crate::persist::load_on_start(store, &mut p, &mut host),
            What::AofAgain => crate::persist::aof_load::reload(store, &mut p, &mut host),
        }
    };
    server.loading = false;
    server.propagation.on = propagating;
    server.persist = state;
    server.aof = aof;
    if result.is_ok() {
        server.install_functions(store);
    }
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted && server.shutdown => {
            tracing::warn!("Loading stopped by a shutdown; nothing is saved");
            Ok(())
        }
        r => r,
    }
}
