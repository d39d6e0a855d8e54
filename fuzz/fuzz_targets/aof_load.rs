//! Append-only files (Redis's `loadSingleAppendOnlyFile`): the bytes are
//! read as the loader reads an AOF, and every command it frames runs
//! through the one command path as the loading client runs it. So this
//! target also reaches every command's argument parsing and the store's
//! encodings with arguments no client library would send.
//!
//! Commands that leave the process's sandbox (files, forks, sockets,
//! threads) or can run forever (scripts) are skipped: the data-structure
//! commands are what this door reaches.

#![no_main]

use std::cell::RefCell;
use std::sync::Arc;

use ferrokv::config::Config;
use ferrokv::exec::Executor;
use ferrokv::net::link::Shared;
use ferrokv::net::request::Argv;
use ferrokv::persist::aof_load::replay_data;
use ferrokv::persist::LoadHost;
use ferrokv::server::call::{call, Caller};
use ferrokv::server::client::Client;
use ferrokv::store::Store;
use libfuzzer_sys::fuzz_target;

/// First arguments not run: they save, fork, connect, change the
/// configuration, or run scripts that may loop forever.
const SKIPPED: &[&[u8]] = &[
    b"acl",
    b"bgrewriteaof",
    b"bgsave",
    b"client",
    b"cluster",
    b"config",
    b"debug",
    b"eval",
    b"eval_ro",
    b"evalsha",
    b"evalsha_ro",
    b"failover",
    b"fcall",
    b"fcall_ro",
    b"function",
    b"migrate",
    b"module",
    b"monitor",
    b"psync",
    b"replconf",
    b"replicaof",
    b"save",
    b"script",
    b"shutdown",
    b"slaveof",
    b"sync",
    b"wait",
];

struct Host<'a> {
    exec: &'a mut Executor,
    client: Client,
    out: Vec<u8>,
    ran: usize,
}

impl LoadHost for Host<'_> {
    fn replay(&mut self, _: &mut Store, argv: Argv<'_>) {
        let name = argv.get(0);
        if SKIPPED.iter().any(|s| s.eq_ignore_ascii_case(name)) {
            return;
        }
        let Executor { server, store, .. } = &mut *self.exec;
        call(
            server,
            store,
            &mut self.client,
            argv,
            &mut self.out,
            Caller::Aof,
        );
        server.blocking.pending = None;
        self.out.clear();
        self.ran += 1;
    }

    fn progress(&mut self, _: &mut Store, _: u64) -> bool {
        true
    }

    fn am_master(&self) -> bool {
        true
    }
}

thread_local! {
    static EXEC: RefCell<Executor> = RefCell::new({
        let mut config = Config::default();
        let dir = std::env::temp_dir().join(format!("ferrokv-fuzz-aof-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let text = format!("save \"\"\nappendonly no\ndir {}\n", dir.display());
        ferrokv::config::file::load_str(&mut config, &text).expect("a valid configuration");
        Executor::new(config, Arc::new(Shared::default()), 0)
    });
}

fuzz_target!(|data: &[u8]| {
    EXEC.with(|exec| {
        let mut exec = exec.borrow_mut();
        // The loader hands the store to the host; the host runs commands
        // on the executor's own, so the one given here stays empty.
        let mut scratch = Store::new(1);
        let mut host = Host {
            exec: &mut exec,
            client: Client::internal(),
            out: Vec::new(),
            ran: 0,
        };
        let _ = replay_data(&mut scratch, &mut host, data, "fuzz.aof");
        let ran = host.ran;
        drop(host);
        if ran > 0 {
            let flush = ferrokv::net::request::OwnedArgv::from_slices([&b"FLUSHALL"[..]]);
            let Executor { server, store, .. } = &mut *exec;
            let mut client = Client::internal();
            let mut out = Vec::new();
            call(
                server,
                store,
                &mut client,
                flush.argv(),
                &mut out,
                Caller::Aof,
            );
        }
    });
});
