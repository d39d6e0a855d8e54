//! The server as a running script sees it (Redis's `scriptCall` and the
//! script run context): [`ScriptHost`] implements the engine's
//! [`Host`] over the server state, so `redis.call` runs through the one
//! command path as the scripts' own client.

use super::call::{call, Caller, Outcome};
use super::client::Client;
use super::ServerState;
use crate::net::request::Argv;
use crate::script::{Called, Host};
use crate::store::Store;

/// The host of one script run.
pub struct ScriptHost<'a> {
    /// The server state.
    pub server: &'a mut ServerState,
    /// The keyspace.
    pub store: &'a mut Store,
    /// The scripts' client, starting in the caller's database.
    pub client: &'a mut Client,
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, argv: Argv<'_>, out: &mut Vec<u8>, read_only: bool, resp3: bool) -> Called {
        self.client.resp3 = resp3;
        let how = Caller::Script { read_only };
        match call(self.server, self.store, self.client, argv, out, how) {
            Outcome::Done => Called::Done,
            Outcome::Failed => Called::Failed,
            Outcome::Refused => Called::Refused,
        }
    }

    fn acl_allows(&mut self, argv: Argv<'_>) -> Option<bool> {
        let id = self.server.table.resolve(argv.get(0), argv.try_get(1))?;
        Some(super::call::denial(self.server, self.client, id, argv).is_none())
    }

    fn set_replication(&mut self, targets: u8) {
        self.server.propagation.script_excluded = super::propagate::targets::ALL & !targets;
    }

    fn serve_while_busy(&mut self) {
        (self.server.serve_while_busy)(self.server, self.store);
    }
}

/// The scripts' client (Redis's lua_client): blocking commands act
/// non-blocking for it.
pub fn script_client() -> Client {
    let mut c = Client::internal();
    c.deny_blocking = true;
    c.script = true;
    c
}
